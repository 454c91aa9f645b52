"""torch_scatter's composite functions: ``scatter_softmax``, ``scatter_log_softmax``, ``scatter_logsumexp`` and
``scatter_std``, with torch_scatter's formulas (its ``eps`` terms included) and differentiable.

``scatter_softmax`` with an index expanded from 1-D runs on scatterx's fused segment softmax (three passes over
each group, no temporaries of ``src``'s size but the result), ``scatter_logsumexp`` on ``segment_logsumexp`` (one
kernel) and ``scatter_log_softmax`` on ``scatter_max`` and ``segment_logsumexp`` of the shifted values (so that the
result is ``(x - max) - log(sum + eps)`` as torch_scatter rounds it, exact for large values); the others, and every
function with a general index, are made of the drop-in's own kernels (``scatter_max``'s selection, the core sums)
and elementwise torch ops, as torch_scatter composes them -- never a Python loop over groups. A general index is
used as int64: torch's CPU ``gather`` misreads an expanded (stride-0) int32 index.

Why this module is long: four public functions, each with a TorchScript-visible signature, an implementation with a
fast path and a general one, and a full docstring; most of the length is their reference documentation.
"""

from typing import Optional, cast

import torch

from ..ops import needs_op, segment_arg_reduce, segment_logsumexp, segment_softmax
from ..ops._checks import check_size, check_tensor, normalize_dim
from . import _engine
from .scatter import scatter_max, scatter_sum


def _floating(src: torch.Tensor, name: str) -> None:
    check_tensor(src, "src")
    if not torch.is_floating_point(src):
        raise ValueError(f"`{name}` can only be computed over tensors with floating point data types.")


@torch.jit.ignore
def _one_dim_index(index: torch.Tensor, src: torch.Tensor, dim: int) -> Optional[torch.Tensor]:
    """The 1-D index along ``dim`` when torch_scatter's broadcast index does not vary along the other dims."""
    return _engine.vector_along(_engine.broadcast_index(index, src, dim), src, dim)


@torch.jit.ignore
def _segments_along(src: torch.Tensor, index: torch.Tensor, dim: int, dim_size: Optional[int], segments: bool = True):
    """``(dim, 1-D index, ptr, perm)`` when the index runs along ``dim`` only (the kernels' case), else None
    (``segments=False``: ptr and perm are not built, None)."""
    if src.dim() == 0 or index.dim() > src.dim() or src.numel() == 0:
        return None
    d = normalize_dim(dim, src.dim(), zero_d_as_1d=True)
    one = _one_dim_index(index, src, d)
    if one is None:
        return None
    if not segments:
        return d, one, None, None
    size = dim_size if dim_size is not None else _engine.size_from_index(one)
    ptr, perm = _engine.segments(one, size)
    return d, one, ptr, perm


def _minus_gathered(
    src: torch.Tensor, per_group: torch.Tensor, dim: int, index: torch.Tensor, in_place: bool = False
) -> torch.Tensor:
    """``src - per_group[index]`` along ``dim`` (when no gradient is wanted: in place in the gathered buffer, or
    in ``src`` itself with ``in_place``)."""
    gathered = _engine.select_rows(per_group, dim, index)
    if needs_op(src, per_group):
        return src - gathered
    return torch.sub(src, gathered, out=src if in_place else gathered)


def _general_index(index: torch.Tensor, src: torch.Tensor, dim: int, size: Optional[int]) -> torch.Tensor:
    """torch_scatter's broadcast of ``index`` to ``src``'s shape, as int64 (torch's CPU ``gather`` misreads an
    expanded int32 index). For an empty ``src`` the broadcast has no entry: the caller's entries are checked
    against ``size`` (the output's, None when inferred) here, as the scatters would check them with elements."""
    full = _engine.broadcast_index(index.to(torch.int64), src, dim)
    if src.numel() == 0:
        _engine.check_unread(index, src, dim, size)
    return full


@torch.jit.ignore
def _softmax(src: torch.Tensor, index: torch.Tensor, dim: int, dim_size: Optional[int]) -> torch.Tensor:
    _floating(src, "scatter_softmax")
    _engine.check_index(index)
    src1 = src.view(1) if src.dim() == 0 else src
    d = normalize_dim(dim, src1.dim(), zero_d_as_1d=True)
    one = _one_dim_index(index, src1, d) if index.dim() <= src1.dim() else None
    if one is not None:
        size = cast(int, check_size(dim_size, "dim_size")) if dim_size is not None else _engine.size_from_index(one)
        try:
            result = segment_softmax(src1, one, dim=d, num_segments=size)
        except IndexError:  # named with this function's own argument, as the drop-in's other functions name it
            if one.numel() and (int(one.min()) < 0 or int(one.max()) >= size):
                raise _engine.out_of_range(one, size) from None
            raise
        return result.view(src.shape)
    full = _general_index(index, src1, d, dim_size)
    top = scatter_max(src1, full, d, dim_size=dim_size)[0]
    shifted = (src1 - top.gather(d, full)).exp()
    total = scatter_sum(shifted, full, d, dim_size=dim_size)
    return (shifted / total.gather(d, full)).view(src.shape)


def scatter_softmax(
    src: torch.Tensor, index: torch.Tensor, dim: int = -1, dim_size: Optional[int] = None
) -> torch.Tensor:
    """The softmax of ``src`` within each group of entries that share an ``index`` value along ``dim``.

    Each entry ``x`` of a group becomes ``exp(x - max) / sum(exp(x - max))`` over its group, torch_scatter's
    formula; the result is differentiable.

    Args:
        src: the values, a floating-point tensor.
        index: the group of each entry, int64 or int32, in any order; broadcast to ``src`` as in
            :func:`scatter_sum`.
        dim: the dimension of ``src`` to group along; a negative one counts from the end.
        dim_size: the number of groups; by default ``index.max() + 1``.

    Returns:
        A new tensor of ``src``'s shape, dtype and device.

    Raises:
        TypeError: when ``src`` or ``index`` is not a tensor, ``index`` is not int64 or int32, or ``dim`` or
            ``dim_size`` is not an int.
        ValueError: when ``src`` is not floating-point (torch_scatter's error), ``index`` cannot be broadcast to
            ``src`` or is on another device, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the number of groups.

    Example:
        >>> scatter_softmax(torch.tensor([1., 2., 3., 4.]), torch.tensor([0, 0, 1, 1]))
        tensor([0.2689, 0.7311, 0.2689, 0.7311])
    """
    return _softmax(src, index, dim, dim_size)


@torch.jit.ignore
def _log_softmax(src: torch.Tensor, index: torch.Tensor, dim: int, eps: float, dim_size: Optional[int]) -> torch.Tensor:
    _floating(src, "scatter_log_softmax")
    _engine.check_index(index)
    dim = normalize_dim(dim, src.dim(), zero_d_as_1d=True)
    fast = _segments_along(src, index, dim, dim_size)
    if fast is not None:  # (x - top) - log(sum exp(x - top) + eps): two kernels, two gathers
        d, one, ptr, perm = fast
        # scatter_max's values, on the segments already built (no second sort of a shuffled index)
        top = segment_arg_reduce(src, ptr, "amax", d, perm=perm, finite_start=True, fill="unselected")[0]
        shifted = _minus_gathered(src, top, d, one)
        # the shifted values' own top is 0 (or nothing is selected: also 0), so this is log(sum + eps) alone
        norm = segment_logsumexp(shifted, ptr, d, perm=perm, eps=eps, flavour="log_softmax")
        return _minus_gathered(shifted, norm, d, one, in_place=True)
    full = _general_index(index, src, dim, dim_size)
    top = scatter_max(src, full, dim, dim_size=dim_size)[0]
    shifted = src - top.gather(dim, full)
    total = scatter_sum(shifted.exp(), full, dim, dim_size=dim_size)
    return shifted - total.add(eps).log().gather(dim, full)


def scatter_log_softmax(
    src: torch.Tensor, index: torch.Tensor, dim: int = -1, eps: float = 1e-12, dim_size: Optional[int] = None
) -> torch.Tensor:
    """The log of the softmax of ``src`` within each group of entries that share an ``index`` value along ``dim``.

    Each entry ``x`` becomes ``(x - max) - log(sum(exp(x - max)) + eps)`` over its group, as torch_scatter
    computes and rounds it (exact for large values); the result is differentiable, ``eps`` included.

    Args:
        src: the values, a floating-point tensor.
        index: the group of each entry, int64 or int32, in any order; broadcast to ``src`` as in
            :func:`scatter_sum`.
        dim: the dimension of ``src`` to group along; a negative one counts from the end.
        eps: added to each group's sum before the log.
        dim_size: the number of groups; by default ``index.max() + 1``.

    Returns:
        A new tensor of ``src``'s shape, dtype and device.

    Raises:
        TypeError: when ``src`` or ``index`` is not a tensor, ``index`` is not int64 or int32, or ``dim`` or
            ``dim_size`` is not an int.
        ValueError: when ``src`` is not floating-point (torch_scatter's error), ``index`` cannot be broadcast to
            ``src`` or is on another device, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the number of groups.

    Example:
        >>> scatter_log_softmax(torch.tensor([0., 0., 5., 5.]), torch.tensor([0, 0, 1, 1]))
        tensor([-0.6931, -0.6931, -0.6931, -0.6931])
    """
    return _log_softmax(src, index, dim, eps, dim_size)


@torch.jit.ignore
def _logsumexp(
    src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int], eps: float
) -> torch.Tensor:
    _floating(src, "scatter_logsumexp")
    _engine.check_index(index)
    dim = normalize_dim(dim, src.dim(), zero_d_as_1d=True)
    if src.dim() == 0:  # one entry: a 1-D src of one slice, as the drop-in's other reductions take it
        src = src.view(1)
    if out is not None:
        _engine.check_out(out, src, list(src.shape), dim)
    fast = _segments_along(src, index, dim, out.size(dim) if out is not None else dim_size)
    if fast is not None and out is None:  # one kernel, no temporary of src's size
        d, _, ptr, perm = fast
        return segment_logsumexp(src, ptr, d, perm=perm, eps=eps).nan_to_num(neginf=0.0)
    full = _general_index(index, src, dim, out.size(dim) if out is not None else dim_size)
    if out is not None:
        dim_size = out.size(dim)
    elif dim_size is None:
        dim_size = _engine.size_from_index(full, dim)
    size = list(src.shape)
    size[dim] = dim_size
    start = torch.full(size, float("-inf"), dtype=src.dtype, device=src.device)
    top = scatter_max(src, full, dim, start, dim_size=dim_size)[0]
    shifted = src - top.gather(dim, full)
    shifted = shifted.masked_fill(torch.isnan(shifted), float("-inf"))
    # out's share: none where no member is finite (top -inf: such a row keeps out's value), masked before the exp,
    # whose gradient there would be 0 * inf
    base = None if out is None else torch.where(top.isfinite(), out - top, float("-inf")).exp()
    total = scatter_sum(shifted.exp(), full, dim, None, dim_size)
    if base is not None:
        total = total + base
    # a row with no member above -inf (an empty one) is -inf: its log is of a constant 1, for a gradient of the
    # gradient that stays 0 there (the log of eps = 0 was -inf, and its derivative inf times a zero)
    nothing = top == float("-inf")
    result = torch.where(nothing, float("-inf"), torch.where(nothing, 1.0, total.add(eps)).log().add(top))
    if out is None:
        return result.nan_to_num(neginf=0.0)
    return out.copy_(torch.where(result.isfinite(), result, out))  # non-finite rows keep out's value


def scatter_logsumexp(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
    eps: float = 1e-12,
) -> torch.Tensor:
    """The log of the sum of the exponentials of the entries of ``src`` that share an ``index`` value along
    ``dim``.

    Each row is ``log(sum(exp(x)) + eps)`` over its members, computed stably (from the row's maximum). Without
    ``out``, a row that receives nothing (or only -inf) is 0. With ``out``, its values join each row as one more
    member, and a row whose result is not finite keeps ``out``'s value, as torch_scatter's master branch does.
    The result is differentiable.

    Args:
        src: the values, a floating-point tensor.
        index: the target row of each entry, int64 or int32, in any order; broadcast to ``src`` as in
            :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of ``src``'s dtype and device, with ``src``'s shape in every dimension but ``dim``, whose
            values join each row as above; written in place.
        dim_size: the size of the result along ``dim`` when ``out`` is not given; by default
            ``index.max() + 1`` (0 for an empty index).
        eps: added to each row's sum before the log.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``: ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``out``'s
            dtype is not ``src``'s, or ``dim`` or ``dim_size`` is not an int.
        ValueError: when ``src`` is not floating-point (torch_scatter's error), ``index`` cannot be broadcast to
            ``src``, ``index`` or ``out`` is on another device, ``out``'s shape does not match, or ``dim_size`` is
            negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> scatter_logsumexp(torch.tensor([0., 0., 1., 1.]), torch.tensor([0, 0, 1, 1]), dim_size=3)
        tensor([0.6931, 1.6931, 0.0000])
    """
    return _logsumexp(src, index, dim, out, dim_size, eps)


@torch.jit.ignore
def _std(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int,
    out: Optional[torch.Tensor],
    dim_size: Optional[int],
    unbiased: bool,
) -> torch.Tensor:
    check_tensor(src, "src")
    _engine.check_index(index)
    dim = normalize_dim(dim, src.dim(), zero_d_as_1d=True)  # IndexError naming the caller's dim, before it is used
    if out is not None:  # out holds the sum of squares (src's dtype, or the float one of an integer src)
        check_tensor(out, "out")
        if out.dim() != max(src.dim(), 1):
            raise ValueError(
                f"out has shape {tuple(out.shape)}; it must match {tuple(src.shape)} in every dimension but dim={dim}"
            )
        dim_size = out.size(dim)
    fast = _segments_along(src, index, dim, dim_size, segments=False)
    # in place, into buffers on huge pages
    if fast is not None and out is None and src.is_floating_point() and not needs_op(src):
        d, one, _, _ = fast
        total = scatter_sum(src, one, d, dim_size=dim_size)
        size = total.size(d)
        count = torch.bincount(one, minlength=size).to(src.dtype).clamp_(min=1)
        view = [1] * src.dim()
        view[d] = size
        count = count.view(view)
        mean = total.div_(count)
        diff = _engine.select_rows(mean, d, one)
        torch.sub(src, diff, out=diff)
        result = scatter_sum(diff.mul_(diff), one, d, dim_size=size)
        if unbiased:
            count = count.sub(1).clamp_(min=1)
        return result.div_(count + 1e-6).sqrt_()
    full = _general_index(index, src, dim, dim_size)  # (dim_size: out's, when out is given)
    total = scatter_sum(src, full, dim, dim_size=dim_size)
    # the members of each group, counted on the broadcast index (torch_scatter counts on the index's own shape,
    # which miscounts an index that broadcasts along ``dim``: the guide page *The torch_scatter drop-in*)
    ones = torch.ones((), dtype=src.dtype, device=src.device).expand(full.shape)
    count = scatter_sum(ones, full, dim, dim_size=total.size(dim) if src.dim() else dim_size).clamp(min=1)
    mean = total / count
    var = src - mean.gather(dim, full)
    var = var * var
    result = scatter_sum(var, full, dim, out, dim_size)
    if unbiased:
        count = count.sub(1).clamp_(min=1)
    return result.div(count + 1e-6).sqrt()


def scatter_std(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int = -1,
    out: Optional[torch.Tensor] = None,
    dim_size: Optional[int] = None,
    unbiased: bool = True,
) -> torch.Tensor:
    """The standard deviation of the entries of ``src`` that share an ``index`` value along ``dim``.

    torch_scatter's formula: ``sqrt(sum((x - mean) ** 2) / (n - 1 + 1e-6))`` over the ``n`` members of each row
    (``n + 1e-6`` with ``unbiased=False``), the counts (and ``n - 1``) clamped to at least 1; a row that
    receives nothing is 0. The members are counted on the broadcast index (torch_scatter counts on the index's
    own shape, which is wrong for an index that broadcasts along ``dim``). The result is differentiable.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (an integer ``src`` gives a
            floating-point result).
        index: the target row of each entry, int64 or int32, in any order; broadcast to ``src`` as in
            :func:`scatter_sum`.
        dim: the dimension of ``src`` to reduce along; a negative one counts from the end.
        out: a tensor of the result's dtype and device, with ``src``'s shape in every dimension but ``dim``; as in
            torch_scatter, it receives the sums of squared deviations (added to its values), in place, and the
            result is a new tensor.
        dim_size: the size of the result along ``dim`` when ``out`` is not given; by default
            ``index.max() + 1`` (0 for an empty index).
        unbiased: divide by ``n - 1`` (True) or by ``n`` (False).

    Returns:
        A new tensor of ``src``'s shape and device but with ``out.size(dim)``, ``dim_size`` or
        ``index.max() + 1`` rows along ``dim``; ``src``'s dtype if it is floating-point, else the default
        floating-point dtype.

    Raises:
        TypeError: when ``src``, ``index`` or ``out`` is not a tensor, ``index`` is not int64 or int32, ``src``'s
            dtype is not supported (e.g. bool), ``out``'s dtype is not the result's, or ``dim`` or ``dim_size`` is
            not an int.
        ValueError: when ``index`` cannot be broadcast to ``src``, ``index`` or ``out`` is on another device,
            ``out``'s shape does not match, or ``dim_size`` is negative.
        IndexError: when ``dim`` is out of range, or an index is negative or not below the size of the result.

    Example:
        >>> src = torch.tensor([1., 3., 2., 4., 6.])
        >>> scatter_std(src, torch.tensor([0, 0, 1, 1, 1]))
        tensor([1.4142, 2.0000])
        >>> scatter_std(src, torch.tensor([0, 0, 1, 1, 1]), unbiased=False)
        tensor([1.0000, 1.6330])
    """
    return _std(src, index, dim, out, dim_size, unbiased)
