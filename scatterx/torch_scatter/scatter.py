"""torch_scatter's ``scatter`` family on scatterx's engine, with torch_scatter's semantics (not scatterx's core
ones, where they differ -- the guide page *The torch_scatter drop-in* lists where and why):

- ``index`` is broadcast as torch_scatter broadcasts it (``utils.broadcast``); an index expanded from 1-D runs on
  the slice kernels, any other one element by element (the planner decides).
- Without ``dim_size`` and ``out``, the output has ``index.max() + 1`` rows along ``dim`` (0 for an empty index).
- ``out=`` is written in place and returned; its values take part (sum adds to them, min/max compare with them);
  ``scatter_mean`` divides by the number of members only (``out``'s value does not count); integer mean floors.
- ``scatter_mul``: a row that receives nothing is 1 (with ``out``: keeps its value).
- ``scatter_min``/``scatter_max`` return ``(values, argindex)``: a member is selected only if it strictly beats
  the best so far, starting from the dtype's finite extreme (or ``out``'s value): the first of tied members
  wins, NaN and +-inf at the wrong end are never selected, and a row where nothing was selected is 0 (``out``'s
  value with ``out``) with argindex ``src.size(dim)``. The gradient goes to the selected member.

Each public function is a TorchScript-compilable shell (``torch.jit.script`` works on it, as on torch_scatter's)
around a ``torch.jit.ignore``d implementation that runs in Python.


Why this module is long: torch_scatter's seven ``scatter*`` functions each need a TorchScript-visible signature, a
``torch.jit.ignore``d body and a full docstring; most of the length is their reference documentation."""

from typing import Optional, Tuple

import torch

from .. import planner
from ..ops import index_scatter_reduce_from
from ..ops._checks import check_tensor, normalize_dim
from . import _engine


@torch.jit.ignore
def _prepare(
    src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int]
) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], int, int]:
    """``(src, broadcast index, its 1-D form or None (_engine.vector_along), dim >= 0, rows out)`` after the
    checks that read no values."""
    check_tensor(src, "src")
    _engine.check_index(index)
    if src.dim() == 0:
        src = src.view(1)
    dim = normalize_dim(dim, src.dim(), zero_d_as_1d=True)
    index = _engine.broadcast_index(index, src, dim)
    vector = _engine.vector_along(index, src, dim)
    if out is not None:
        _engine.check_out(out, src, list(src.shape), dim)
        size = out.size(dim)
    elif dim_size is not None:
        if dim_size < 0:
            raise ValueError(f"dim_size must be >= 0, got {dim_size}")
        size = dim_size
    else:
        size = _engine.size_from_index(index if vector is None else vector, dim)  # IndexError for a negative entry
    return src, index, vector, dim, size


@torch.jit.ignore
def _reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int], reduce: str
) -> torch.Tensor:
    """sum, mul and mean (torch_scatter's rules above): sum and mean of a 1-D index (or one expanded from it)
    into a new tensor on the core op, the rest on the planner's scatter."""
    if (
        out is None
        and reduce != "mul"
        and type(dim_size) is int
        and type(dim) is int
        and type(src) is torch.Tensor
        and type(index) is torch.Tensor
        and index.dim() == 1
        and src.dim() > 0
        and -src.dim() <= dim < src.dim()
        and 0 < index.numel() == src.size(dim)
        and src.dtype not in _engine.SMALL_INT
    ):
        # what the general path comes to for PyG's call, a 1-D index along dim into dim_size rows, without its
        # broadcasting and checks (~12 us of a 2,000 x 16 call of 31): the core op checks the rest
        return index_scatter_reduce_from(dim % src.dim(), index, src, reduce, None, None, dim_size=dim_size)
    check_tensor(src, "src")
    dtype = src.dtype
    given = index
    src, index, vector, dim, size = _prepare(src, index, dim, out, dim_size)
    work = _engine.widened(src)
    shape = list(src.shape)
    shape[dim] = size
    if src.numel() == 0:  # nothing to reduce: torch_scatter's zeros (mul too), or out as it is
        _engine.check_unread(given, src, dim, None if out is None and dim_size is None else size)
        return _engine.untouched(out, src) if out is not None else _engine.nothing(src, shape)
    if vector is not None and out is None and reduce != "mul":  # the core op's form: its sum, its mean
        return _engine.finish(
            index_scatter_reduce_from(dim, vector, work, reduce, None, None, dim_size=size), None, dtype
        )
    m = planner.XMap.along_dim(index, shape, dim, op=f"scatter_{reduce}")
    if reduce == "mean" and out is not None:  # out + sum, divided by the members only
        total = planner.scatter(m, _engine.base_of(out, src), work, "sum", include_self=True)
        ones = torch.ones((), dtype=total.dtype, device=src.device).expand(index.shape)
        count = planner.scatter(m, torch.zeros(shape, dtype=total.dtype, device=src.device), ones, "sum")
        count = count.clamp_(min=1)
        result = total / count if total.is_floating_point() else torch.div(total, count, rounding_mode="floor")
        return _engine.finish(result, out, dtype)
    if out is not None:
        result = planner.scatter(
            m, _engine.base_of(out, src), work, "prod" if reduce == "mul" else reduce, include_self=True
        )
        return _engine.finish(result, out, dtype)
    if reduce != "mul":  # the core's sum, and its mean (sum / members, integer floor), are torch_scatter's
        return _engine.finish(planner.reduced(m, work, reduce), None, dtype)
    base = torch.ones(shape, dtype=work.dtype, device=src.device)  # a product of nothing is 1 here
    return _engine.finish(planner.scatter(m, base, work, "prod", include_self=False), None, dtype)


@torch.jit.ignore
def _select(
    src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int], reduce: str
) -> Tuple[torch.Tensor, torch.Tensor]:
    check_tensor(src, "src")
    dtype = src.dtype
    given = index
    src, index, vector, dim, size = _prepare(src, index, dim, out, dim_size)
    work = _engine.widened(src)
    if src.numel() == 0:  # nothing to select: zeros (or out as it is), argindex src.size(dim)
        _engine.check_unread(given, src, dim, None if out is None and dim_size is None else size)
        shape = list(src.shape)
        shape[dim] = size
        arg = torch.full(shape, src.size(dim), dtype=torch.int64, device=src.device)
        return (_engine.untouched(out, src) if out is not None else _engine.nothing(src, shape)), arg
    plan = _engine.ScatterPlan(work, index, dim, size, vector)
    base = None if out is None else _engine.base_of(out, src).reshape(plan.outer, plan.S, plan.inner)
    values, arg = _engine.select(
        plan.src3, plan.rows, plan.S, reduce, base, "unselected" if out is None else "none", dtype=dtype
    )
    values = values.reshape(plan.out_shape)
    arg = plan.along(arg).reshape(plan.out_shape)
    return _engine.finish(values, out, dtype), arg


def scatter_sum(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> torch.Tensor:
    """Sums the entries of ``src`` that share an ``index`` value along ``dim``.

    Row ``i`` of the result (along ``dim``) is the sum of the entries of ``src`` whose index is ``i``; a row that
    receives nothing is 0. With ``out``, the sums are added to its values.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back). A 0-d ``src`` counts as one entry.
        index: the target row (along ``dim``) of each entry of ``src``, int64 or int32, in any order. Of
            ``src``'s shape, or broadcast to it as torch_scatter does: a 1-D index runs along ``dim``, an index
            of fewer dimensions gets trailing dimensions of size 1, and it is then expanded to ``src``'s shape.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype and device, with ``src``'s shape in every dimension but ``dim``: its
            values are the start of each sum, and it is written in place.
        dim_size: the size of the result along ``dim`` when ``out`` is not given; by default
            ``index.max() + 1`` (0 for an empty index).

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported (e.g. bool), ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is
            not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range for ``src``, or an index is negative or not below the size of
            the result.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> index = torch.tensor([0, 1, 0, 1, 1])
        >>> scatter_sum(src, index)
        tensor([ 4., 11.])
        >>> scatter_sum(src, index, dim_size=3)
        tensor([ 4., 11.,  0.])
        >>> out = torch.tensor([10., 20.])
        >>> scatter_sum(src, index, out=out) is out
        True
        >>> out
        tensor([14., 31.])
        >>> scatter_sum(torch.tensor([[1., 2.], [3., 4.], [5., 6.]]), torch.tensor([0, 1, 0]), dim=0)
        tensor([[6., 8.],
                [3., 4.]])
    """
    return _reduce(src, index, dim, out, dim_size, "sum")


def scatter_add(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> torch.Tensor:
    """The same as :func:`scatter_sum` (torch_scatter's other name for it).

    Args:
        src: the values (see :func:`scatter_sum`).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``; the sums are added to its values, in
            place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1``.

    Returns:
        The sums, as :func:`scatter_sum` returns them (``out`` itself when it is given, else a new tensor).

    Raises:
        TypeError: when an argument has the wrong type or dtype, as for :func:`scatter_sum`.
        ValueError: when ``index`` or ``out`` does not match ``src`` (shape or device) or ``dim_size`` is
            negative.
        IndexError: when ``dim`` is out of range, or an index is out of range for the result.

    Example:
        >>> scatter_add(torch.tensor([1., 2., 3.]), torch.tensor([0, 0, 1]))
        tensor([3., 3.])
    """
    return _reduce(src, index, dim, out, dim_size, "sum")


def scatter_mul(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> torch.Tensor:
    """Multiplies the entries of ``src`` that share an ``index`` value along ``dim``.

    A row that receives nothing is 1 (with ``out``: keeps its value), as in torch_scatter; but the result of an
    empty ``src`` is zeros, as torch_scatter's kernel returns at once. The gradient is exact, zeros in ``src``
    included.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``: each product is multiplied into its
            value, in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1`` (0 for an
            empty index).

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> scatter_mul(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 1, 0, 1, 1]), dim_size=3)
        tensor([ 3., 40.,  1.])
    """
    return _reduce(src, index, dim, out, dim_size, "mul")


def scatter_mean(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> torch.Tensor:
    """Averages the entries of ``src`` that share an ``index`` value along ``dim``.

    Each row is the sum of its members divided by their number; a row that receives nothing is 0. With ``out``,
    a row is ``(out + sum) / members``: ``out``'s value is added but does not count as a member (a row with no
    member keeps ``out``'s value). Integer means round down (toward minus infinity).

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, added to each sum as above and
            written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1`` (0 for an
            empty index).

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> index = torch.tensor([0, 1, 0, 1, 1])
        >>> scatter_mean(src, index)
        tensor([2.0000, 3.6667])
        >>> scatter_mean(src, index, out=torch.tensor([10., 20.]))
        tensor([ 7.0000, 10.3333])
        >>> scatter_mean(torch.tensor([-1, -2, 4]), torch.tensor([0, 0, 1]))  # -3 / 2 rounds down
        tensor([-2,  4])
    """
    return _reduce(src, index, dim, out, dim_size, "mean")


def scatter_min(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The minimum of the entries of ``src`` that share an ``index`` value along ``dim``, and where it is.

    torch_scatter's selection: an entry is selected only if it is strictly below the best so far, starting from
    the dtype's largest finite value (or ``out``'s value). So the first of tied entries wins, NaN and +inf are
    never selected, and a row where nothing was selected is 0 (with ``out``: keeps its value) with argmin
    ``src.size(dim)``. int8, uint8 and int16 start from their own largest value. The gradient goes to the
    selected entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values the entries are
            compared with; written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1`` (0 for an
            empty index).

    Returns:
        A tuple ``(values, argmin)`` of ``src``'s shape but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``values`` in ``src``'s dtype (``out`` itself when it is given,
        else a new tensor), and ``argmin`` int64, the position along ``dim`` in ``src`` of each selected entry
        (``src.size(dim)`` where none was). Both on ``src``'s device.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> values, argmin = scatter_min(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 1, 0, 1, 1]),
        ...                              dim_size=3)
        >>> values
        tensor([1., 2., 0.])
        >>> argmin
        tensor([0, 1, 5])
    """
    return _select(src, index, dim, out, dim_size, "amin")


def scatter_max(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The maximum of the entries of ``src`` that share an ``index`` value along ``dim``, and where it is.

    torch_scatter's selection: an entry is selected only if it is strictly above the best so far, starting from
    the dtype's lowest finite value (or ``out``'s value). So the first of tied entries wins, NaN and -inf are
    never selected, and a row where nothing was selected is 0 (with ``out``: keeps its value) with argmax
    ``src.size(dim)``. int8, uint8 and int16 start from their own lowest value. The gradient goes to the
    selected entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values the entries are
            compared with; written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1`` (0 for an
            empty index).

    Returns:
        A tuple ``(values, argmax)`` of ``src``'s shape but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``values`` in ``src``'s dtype (``out`` itself when it is given,
        else a new tensor), and ``argmax`` int64, the position along ``dim`` in ``src`` of each selected entry
        (``src.size(dim)`` where none was). Both on ``src``'s device.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> values, argmax = scatter_max(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 1, 0, 1, 1]),
        ...                              dim_size=3)
        >>> values
        tensor([3., 5., 0.])
        >>> argmax
        tensor([2, 4, 5])
    """
    return _select(src, index, dim, out, dim_size, "amax")


def scatter(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
    reduce: str = "sum",
) -> torch.Tensor:
    """Reduces the entries of ``src`` that share an ``index`` value along ``dim``, by the reduction ``reduce``.

    torch_scatter's ``scatter``: :func:`scatter_sum`, :func:`scatter_mul`, :func:`scatter_mean`, or the values
    (without the arg-indices) of :func:`scatter_min` or :func:`scatter_max`; see those for the rules of each.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, broadcast to ``src`` as in :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values take part in the
            reduction (see each function); written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index.max() + 1`` (0 for an
            empty index).
        reduce: ``"sum"`` (or ``"add"``), ``"mul"``, ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``reduce`` is not one of the above, ``index`` cannot be broadcast to ``src``, ``index``
            or ``out`` is on another device, ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> index = torch.tensor([0, 1, 0, 1, 1])
        >>> scatter(src, index, reduce="sum")
        tensor([ 4., 11.])
        >>> scatter(src, index, dim_size=3, reduce="max")
        tensor([3., 5., 0.])
    """
    if reduce == "sum" or reduce == "add":
        return scatter_sum(src, index, dim, out, dim_size)
    if reduce == "mul":
        return scatter_mul(src, index, dim, out, dim_size)
    elif reduce == "mean":
        return scatter_mean(src, index, dim, out, dim_size)
    elif reduce == "min":
        return scatter_min(src, index, dim, out, dim_size)[0]
    elif reduce == "max":
        return scatter_max(src, index, dim, out, dim_size)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mul', 'mean', 'min' or 'max', got '{reduce}'")
