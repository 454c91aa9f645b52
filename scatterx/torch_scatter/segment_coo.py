"""torch_scatter's ``segment_coo`` / ``gather_coo`` family on scatterx's sorted kernels, with torch_scatter's
semantics:

- ``index`` is sorted along its last dim, which is the reduced dim; its leading dims are batch dims (broadcast
  against ``src``'s). A batch whose index does not vary runs as ``outer`` slices of one call; a varying one is
  flattened (batch ``b``'s targets offset by ``b * dim_size``, which keeps the index sorted).
- An unsorted index raises ValueError (torch_scatter's CPU kernel silently reduces runs instead).
- Without ``out`` or ``dim_size``: ``index[..., -1].max() + 1`` rows.
- ``out=``'s values take part (sum adds to them; min/max compare with them; mean is ``(out + sum) / members``),
  it is written in place and returned.
- mean: integers truncate toward zero (torch_scatter's C++ division); min/max: strict selection from the dtype's
  finite extreme, first tie wins, NaN never selected, unselected rows 0 (``out``'s value with ``out``) with
  argindex ``src.size(dim)``.


Why this module is long: seven public functions, each with a TorchScript-visible signature, an implementation and a
full docstring; most of the length is their reference documentation."""

from typing import Optional, Tuple

import torch

from .. import planner
from ..ops import index_scatter_reduce_from
from ..ops._checks import check_tensor, traced_size
from . import _engine


@torch.jit.ignore
def _structure(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int]):
    """Checks -> ``(src2, idx, dim, size, rdim, flat, shape)``: a 1-D sorted index ``idx`` over ``src2``'s dim
    ``rdim`` into ``size`` rows (flattened batches: ``B * dim_size`` rows along dim 0)."""
    check_tensor(src, "src")
    _engine.check_index(index)
    if index.dim() == 0:
        index = index.view(1)
    if src.dim() < index.dim():
        raise ValueError(f"index has {index.dim()} dimensions but src only {src.dim()}")
    if index.device != src.device:
        raise ValueError(f"index is on {index.device} but src is on {src.device}")
    dim = index.dim() - 1
    lead = list(src.shape[:dim])
    try:
        index = index.expand(lead + [src.size(dim)])
    except RuntimeError as e:
        raise ValueError(
            f"index of shape {tuple(index.shape)} does not match src's sizes {list(src.shape)}: {e}"
        ) from None
    one = _engine.leading_batch(index, lead) if dim > 0 else index
    rows = index if one is None else one  # each distinct row of the index once
    if out is not None:
        check_tensor(out, "out")
        size = out.size(dim) if out.dim() == src.dim() else -1
    elif dim_size is not None:
        size = dim_size
    elif rows.numel() == 0:
        size = 0
    else:
        # a sorted row's extremes are its ends: the size is read from the last entries, and a negative entry is
        # found among the first ones (or the last, where it breaks the order: the size would hide it) -- two
        # reads per row, not a pass over the index. With a size given, the kernels' pass checks every entry.
        low, high = torch.aminmax(rows[..., [0, -1]])
        if torch.compiler.is_compiling():  # a data-dependent size; the kernels check every entry against it
            size = traced_size(high)
        else:
            size = int(high) + 1
            if int(low) < 0:
                raise _negative(rows, None)
    if size < 0 and out is None:
        raise ValueError(f"dim_size must be >= 0, got {dim_size}")
    shape = list(src.shape)
    shape[dim] = max(size, 0)
    _engine.check_out(out, src, shape, dim)
    if one is not None:
        return src, one, dim, size, dim, False, shape
    if index.numel() and not torch.compiler.is_compiling():  # an entry out of range would land in another batch
        low, high = torch.aminmax(index)
        if int(low) < 0 or int(high) >= size:
            raise _engine.out_of_range(index, size, dim)
    B = 1
    for s in lead:
        B *= s
    starts = torch.arange(B, device=src.device, dtype=torch.int64).mul_(size).view(B, 1)
    flat = (index.reshape(B, src.size(dim)).to(torch.int64) + starts).reshape(-1)
    src2 = src.reshape([B * src.size(dim)] + list(src.shape[dim + 1 :]))
    return src2, flat, dim, size, 0, True, shape


def _negative(index: torch.Tensor, size: Optional[int]) -> Exception:
    """The IndexError naming the first negative entry of ``index`` (or an entry not below a given ``size`` before
    it), for the failure path: without ``size``, the range named is torch_scatter's, ``[0, index.max() + 1)``."""
    if size is None:
        size = int(index.max()) + 1
    return _engine.out_of_range(index, size, index.dim() - 1)


def _segment(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int], reduce: str):
    check_tensor(src, "src")
    src2, idx, dim, size, rdim, flat, shape = _structure(src, index, out, dim_size)
    try:
        return _run(src, out, reduce, src2, idx, dim, size, rdim, flat, shape)
    except ValueError as error:
        # the kernels' pass names an unsorted index first: a negative entry (which breaks the order unless it
        # leads) is named instead, as it is wrong in any order (the failure path only; a flattened batch's
        # entries were all checked in _structure)
        if not (flat or torch.compiler.is_compiling()) and bool((idx < 0).any()):
            raise _negative(idx, None if out is None and dim_size is None else size) from None
        found = str(error).split("; ")[0]
        if " is not sorted: " not in found:
            raise
        # (the core's advice names arguments this family does not have: sorted=False, index_to_ptr)
        raise ValueError(f"{found}; segment_coo takes a sorted index (scatter takes one in any order)") from None


def _run(src, out: Optional[torch.Tensor], reduce: str, src2, idx, dim: int, size: int, rdim: int, flat: bool, shape):
    """The reduction of ``_structure``'s checked arguments."""
    dtype = src.dtype
    work = _engine.widened(src2)
    E = src.size(dim)
    base_shape = list(work.shape)
    if flat:  # batch b's rows at b * size
        batches = 1
        for d in range(dim):
            batches *= src.size(d)
        base_shape[0] = batches * size
    else:
        base_shape[rdim] = size
    S = base_shape[rdim]
    base = None if out is None else _engine.base_of(out, src).reshape(base_shape)
    if reduce in ("amax", "amin"):
        outer = 1
        for d in range(rdim):
            outer *= work.size(d)
        inner = 1
        for d in range(rdim + 1, work.dim()):
            inner *= work.size(d)
        n = work.size(rdim)
        base3 = None if base is None else base.reshape(outer, S, inner)
        values, arg = _engine.select(
            work.reshape(outer, n, inner),
            idx,
            S,
            reduce,
            base3,
            "unselected" if out is None else "none",
            sorted_rows=True,
            dtype=dtype,
        )
        arg = arg.reshape(base_shape)
        if flat:  # flat rows -> positions in the batch's own rows
            arg = torch.where(arg == n, torch.full_like(arg, E), arg.remainder(max(E, 1)))
        return _engine.finish(values.reshape(shape), out, dtype), arg.reshape(shape)
    if base is None and (reduce == "sum" or work.is_floating_point()):
        # the core's sum, and its mean (sum / members), in one pass into a new tensor
        total = index_scatter_reduce_from(rdim, idx, work, reduce, True, None, dim_size=S)
        return _engine.finish(total.reshape(shape), None, dtype)
    total = index_scatter_reduce_from(rdim, idx, work, "sum", True, base, include_self=out is not None, dim_size=S)
    if reduce == "mean":
        ones = torch.ones(idx.numel(), dtype=total.dtype, device=src.device)
        count = index_scatter_reduce_from(
            0, idx, ones, "sum", True, torch.zeros(S, dtype=total.dtype, device=src.device)
        )
        count = count.clamp_(min=1).view([S] + [1] * (work.dim() - rdim - 1))
        total = torch.div(total, count, rounding_mode=None if total.is_floating_point() else "trunc")
    return _engine.finish(total.reshape(shape), out, dtype)


@torch.jit.ignore
def _reduced(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int], reduce: str
) -> torch.Tensor:
    return _segment(src, index, out, dim_size, reduce)


@torch.jit.ignore
def _selected(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int], reduce: str
) -> Tuple[torch.Tensor, torch.Tensor]:
    return _segment(src, index, out, dim_size, reduce)


def segment_sum_coo(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None
) -> torch.Tensor:
    """Sums the runs of equal values of a sorted ``index`` along dimension ``index.dim() - 1``.

    ``index`` is sorted (non-decreasing) along its last dimension, the reduced dimension
    ``dim = index.dim() - 1`` of ``src``: the entries of ``src`` whose index is ``i`` are summed into row ``i`` of
    the result, and a row that receives nothing is 0 (with ``out``: the sums are added to its values). The
    leading dimensions of ``index`` are batch dimensions, broadcast against ``src``'s (each batch may have its
    own index). An unsorted index raises ValueError (torch_scatter's CPU kernel reduces its runs instead).

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, sorted along its last dimension, which has
            ``src.size(dim)`` entries (or 1, broadcast).
        out: a tensor of ``src``'s dtype and device, with ``src``'s shape in every dimension but ``dim``: its
            values are the start of each sum, and it is written in place.
        dim_size: the size of the result along ``dim`` when ``out`` is not given; by default
            ``index[..., -1].max() + 1`` (0 for an empty index).

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index[..., -1].max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported (e.g. bool), ``out``'s dtype is not ``src``'s, or ``dim_size`` is not an int.
        ValueError: when ``index`` is not sorted, has more dimensions than ``src``, does not match ``src``'s
            sizes, or is on another device; when ``out``'s shape or device does not match; or when ``dim_size``
            is negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> segment_sum_coo(src, torch.tensor([0, 0, 1, 1, 1]))
        tensor([ 3., 12.])
        >>> segment_sum_coo(src, torch.tensor([0, 0, 2, 2, 2]), dim_size=4)
        tensor([ 3.,  0., 12.,  0.])
    """
    return _reduced(src, index, out, dim_size, "sum")


def segment_add_coo(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None
) -> torch.Tensor:
    """The same as :func:`segment_sum_coo` (torch_scatter's other name for it).

    Args:
        src: the values (see :func:`segment_sum_coo`).
        index: the target row of each entry, int64 or int32, sorted along its last dimension (the reduced one).
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``; the sums are added to its values, in
            place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index[..., -1].max() + 1``.

    Returns:
        The sums, as :func:`segment_sum_coo` returns them (``out`` itself when it is given, else a new tensor).

    Raises:
        TypeError: when an argument has the wrong type or dtype, as for :func:`segment_sum_coo`.
        ValueError: when ``index`` is not sorted, ``index`` or ``out`` does not match ``src``, or ``dim_size`` is
            negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> segment_add_coo(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 0, 1, 1, 1]))
        tensor([ 3., 12.])
    """
    return _reduced(src, index, out, dim_size, "sum")


def segment_mean_coo(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None
) -> torch.Tensor:
    """Averages the runs of equal values of a sorted ``index`` along dimension ``index.dim() - 1``.

    The rows are those of :func:`segment_sum_coo`; each is the sum of its members divided by their number, and a
    row that receives nothing is 0. With ``out``, a row is ``(out + sum) / members`` (``out``'s value does not
    count as a member). Integer means truncate toward zero (torch_scatter's C++ division), unlike
    :func:`scatter_mean`, which rounds down.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, sorted along its last dimension (the reduced one);
            leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, added to each sum as above and
            written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index[..., -1].max() + 1``
            (0 for an empty index).

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index[..., -1].max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim_size`` is not an int.
        ValueError: when ``index`` is not sorted, has more dimensions than ``src``, does not match ``src``'s
            sizes, or is on another device; when ``out``'s shape or device does not match; or when ``dim_size``
            is negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> segment_mean_coo(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 0, 1, 1, 1]))
        tensor([1.5000, 4.0000])
        >>> segment_mean_coo(torch.tensor([-1, -2, 4]), torch.tensor([0, 0, 1]))  # -3 / 2 truncates
        tensor([-1,  4])
    """
    return _reduced(src, index, out, dim_size, "mean")


def segment_min_coo(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The minimum of each run of equal values of a sorted ``index`` along ``index.dim() - 1``, and where it is.

    The rows are those of :func:`segment_sum_coo`. torch_scatter's selection: an entry is selected only if it is
    strictly below the best so far, starting from the dtype's largest finite value (or ``out``'s value). So the
    first of tied entries wins, NaN and +inf are never selected, and a row where nothing was selected is 0 (with
    ``out``: keeps its value) with argmin ``src.size(dim)``. The gradient goes to the selected entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back, from their own largest value).
        index: the target row of each entry, int64 or int32, sorted along its last dimension (the reduced one);
            leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values the entries are
            compared with; written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index[..., -1].max() + 1``
            (0 for an empty index).

    Returns:
        A tuple ``(values, argmin)`` of ``src``'s shape but with ``out.size(dim)``, ``dim_size`` or
        ``index[..., -1].max() + 1`` rows along ``dim``: ``values`` in ``src``'s dtype (``out`` itself when it is
        given, else a new tensor) and ``argmin`` int64, the position along ``dim`` in ``src`` of each selected
        entry (``src.size(dim)`` where none was). Both on ``src``'s device.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim_size`` is not an int.
        ValueError: when ``index`` is not sorted, has more dimensions than ``src``, does not match ``src``'s
            sizes, or is on another device; when ``out``'s shape or device does not match; or when ``dim_size``
            is negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> values, argmin = segment_min_coo(torch.tensor([4., 2., 3., 1., 5.]), torch.tensor([0, 0, 2, 2, 2]))
        >>> values
        tensor([2., 0., 1.])
        >>> argmin
        tensor([1, 5, 3])
    """
    return _selected(src, index, out, dim_size, "amin")


def segment_max_coo(
    src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The maximum of each run of equal values of a sorted ``index`` along ``index.dim() - 1``, and where it is.

    The rows are those of :func:`segment_sum_coo`. torch_scatter's selection: an entry is selected only if it is
    strictly above the best so far, starting from the dtype's lowest finite value (or ``out``'s value). So the
    first of tied entries wins, NaN and -inf are never selected, and a row where nothing was selected is 0 (with
    ``out``: keeps its value) with argmax ``src.size(dim)``. The gradient goes to the selected entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back, from their own lowest value).
        index: the target row of each entry, int64 or int32, sorted along its last dimension (the reduced one);
            leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values the entries are
            compared with; written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index[..., -1].max() + 1``
            (0 for an empty index).

    Returns:
        A tuple ``(values, argmax)`` of ``src``'s shape but with ``out.size(dim)``, ``dim_size`` or
        ``index[..., -1].max() + 1`` rows along ``dim``: ``values`` in ``src``'s dtype (``out`` itself when it is
        given, else a new tensor) and ``argmax`` int64, the position along ``dim`` in ``src`` of each selected
        entry (``src.size(dim)`` where none was). Both on ``src``'s device.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim_size`` is not an int.
        ValueError: when ``index`` is not sorted, has more dimensions than ``src``, does not match ``src``'s
            sizes, or is on another device; when ``out``'s shape or device does not match; or when ``dim_size``
            is negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> values, argmax = segment_max_coo(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 0, 1, 1, 1]),
        ...                                  dim_size=3)
        >>> values
        tensor([2., 5., 0.])
        >>> argmax
        tensor([1, 4, 5])
    """
    return _selected(src, index, out, dim_size, "amax")


def segment_coo(
    src: torch.Tensor,
    index: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
    reduce: str = "sum",
) -> torch.Tensor:
    """Reduces the runs of equal values of a sorted ``index`` along ``index.dim() - 1``, by ``reduce``.

    torch_scatter's ``segment_coo``: :func:`segment_sum_coo`, :func:`segment_mean_coo`, or the values (without
    the arg-indices) of :func:`segment_min_coo` or :func:`segment_max_coo`; see those for the rules of each.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        index: the target row of each entry, int64 or int32, sorted along its last dimension (the reduced one);
            leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype, device and shape but along ``dim``, whose values take part in the
            reduction (see each function); written in place.
        dim_size: the size of the result along ``dim`` without ``out``; by default ``index[..., -1].max() + 1``
            (0 for an empty index).
        reduce: ``"sum"`` (or ``"add"``), ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index[..., -1].max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported, ``out``'s dtype is not ``src``'s, or ``dim_size`` is not an int.
        ValueError: when ``reduce`` is not one of the above; when ``index`` is not sorted, has more dimensions
            than ``src``, does not match ``src``'s sizes, or is on another device; when ``out``'s shape or device
            does not match; or when ``dim_size`` is negative.
        IndexError: when an index is negative or not below the size of the result.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> segment_coo(src, torch.tensor([0, 0, 1, 1, 1]))
        tensor([ 3., 12.])
        >>> segment_coo(src, torch.tensor([0, 0, 1, 1, 1]), reduce="max")
        tensor([2., 5.])
    """
    if reduce == "sum" or reduce == "add":
        return segment_sum_coo(src, index, out, dim_size)
    elif reduce == "mean":
        return segment_mean_coo(src, index, out, dim_size)
    elif reduce == "min":
        return segment_min_coo(src, index, out, dim_size)[0]
    elif reduce == "max":
        return segment_max_coo(src, index, out, dim_size)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mean', 'min' or 'max', got '{reduce}'")


@torch.jit.ignore
def _gather(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    """out[..., e, ...] = src[..., index[..., e], ...] along ``index.dim() - 1`` (any order accepted)."""
    check_tensor(src, "src")
    _engine.check_index(index)
    if index.dim() == 0:
        index = index.view(1)
    if src.dim() < index.dim():
        raise ValueError(f"index has {index.dim()} dimensions but src only {src.dim()}")
    if index.device != src.device:
        raise ValueError(f"index is on {index.device} but src is on {src.device}")
    dim = index.dim() - 1
    for d in range(dim):
        if index.size(d) != src.size(d):
            raise ValueError(f"index.size({d}) = {index.size(d)} but src.size({d}) = {src.size(d)}")
    shape = list(src.shape)
    shape[dim] = index.size(dim)
    _engine.check_out(out, src, shape, dim)
    if out is not None and out.size(dim) != index.size(dim):
        raise ValueError(f"out.size({dim}) = {out.size(dim)} but index has {index.size(dim)} entries")
    # the index looks up dims 0..dim of the result (its batch dims and dim), the others are carried: a bad entry
    # is named at its position in the caller's index
    carry = tuple((d, d) for d in range(src.dim()) if d != dim)
    m = planner.XMap(tuple(shape), tuple(src.shape), index, tuple(range(dim + 1)), (dim,), carry)
    if index.numel() == 0 or src.numel() == 0:
        if index.numel() and src.size(dim) == 0:
            raise IndexError(f"gather_coo: index names rows of src, which has none along dim {dim}")
        planner.check_coordinates(m)  # nothing is read (an empty trailing dim), yet every entry names a row
        return _engine.untouched(out, src) if out is not None else _engine.nothing(src, shape)
    result = planner.gather(m, src)
    return result if out is None else out.copy_(result)


def gather_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Picks the slices of ``src`` that ``index`` names along ``index.dim() - 1``.

    The inverse of :func:`segment_coo`'s layout: ``out[..., e, ...] = src[..., index[..., e], ...]`` along
    ``dim = index.dim() - 1``, for instance to send a value per row back to the members of the row. ``index``
    may be in any order; its leading dimensions must be ``src``'s (batch dimensions).

    Args:
        src: the values, one slice per row along ``dim``, any dtype.
        index: the row of ``src`` to pick for each position of the result, int64 or int32; its leading sizes
            are ``src``'s.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``index.size(-1)`` along ``dim``;
            written in place.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``index.size(-1)`` along ``dim``: ``out`` itself
        when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, or
            ``out``'s dtype is not ``src``'s.
        ValueError: when ``index`` has more dimensions than ``src``, leading sizes other than ``src``'s, or is on
            another device, or when ``out``'s shape or device does not match.
        IndexError: when an index is negative or not below ``src.size(dim)``.

    Example:
        >>> gather_coo(torch.tensor([10., 20.]), torch.tensor([0, 0, 1, 1, 1]))
        tensor([10., 10., 20., 20., 20.])
    """
    return _gather(src, index, out)
