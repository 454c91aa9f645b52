"""torch_scatter's ``segment_csr`` / ``gather_csr`` family on scatterx's segment kernels, with torch_scatter's
semantics:

- ``indptr`` has leading batch dims (broadcast against ``src``'s) and reduces along ``indptr.dim() - 1``; its
  entries need not start at 0 nor end at ``src.size(dim)`` (positions outside are in no segment). A batch whose
  ``indptr`` does not vary is one call with ``outer`` slices; a varying one is flattened into one CSR (with
  spacer segments between the batches, dropped afterwards).
- ``out=`` is only written (its values do not take part), in place, and returned.
- mean: integers truncate toward zero (torch_scatter's C++ division), floats divide; an empty segment is 0.
- min/max: strict selection from the dtype's finite extreme (first tie wins, NaN never selected); an empty segment
  is 0 with argindex ``src.size(dim)``; a non-empty segment where nothing was selected (only NaN, or only the
  infinity at the wrong end) keeps the finite extreme, as torch_scatter's kernel writes it (argindex
  ``src.size(dim)`` there, where torch_scatter leaves a stale value). Half types compare in float32 from
  float32's extreme, as torch_scatter's CSR kernel does: half's own extreme can be selected, and the unselected
  value rounds to an infinity.
- ``src`` with no elements: ``out`` is returned untouched (zeros without ``out``).


Why this module is long: seven public functions, each with a TorchScript-visible signature, an implementation and a
full docstring; most of the length is their reference documentation."""

from typing import Optional, Tuple

import torch

from ..ops import segment_arg_reduce, segment_reduce
from ..ops._checks import check_tensor
from . import _engine


def _offset_error(name: str, indptr: torch.Tensor, bad: torch.Tensor, bounds: str) -> IndexError:
    """The IndexError naming the first offset of ``indptr`` where ``bad`` holds, by its position and value, as the
    planner names a bad coordinate (the failure path only)."""
    where = [int(i) for i in torch.nonzero(bad)[0]]
    return IndexError(f"{name}: indptr{where} = {int(indptr[tuple(where)])} is outside {bounds}")


@torch.jit.ignore
def _structure(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], name: str):
    """Checks (values too, unless traced) -> ``(src, dim, M, ptr, flat, lead)``: CSR offsets ``ptr`` from 0 to
    the positions' count, with segment ``i`` of the caller at ``i + 1`` (1-D) or at ``1 + b * (M + 1) + i``
    (``flat``: the batch folded into dim 0, of ``lead`` batch sizes)."""
    check_tensor(src, "src")
    _engine.check_index(indptr, "indptr")
    if indptr.dim() == 0:
        raise ValueError("indptr must have at least one dimension")
    if src.dim() < indptr.dim():
        raise ValueError(f"indptr has {indptr.dim()} dimensions but src only {src.dim()}")
    if indptr.device != src.device:
        raise ValueError(f"indptr is on {indptr.device} but src is on {src.device}")
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    try:
        indptr = indptr.expand(lead + [indptr.size(-1)])
    except RuntimeError as e:
        raise ValueError(
            f"indptr of shape {tuple(indptr.shape)} does not match src's leading sizes {lead}: {e}"
        ) from None
    M = max(indptr.size(-1) - 1, 0)
    N = src.size(dim)
    if indptr.numel() and not torch.compiler.is_compiling():
        low, high = torch.aminmax(indptr)
        if int(low) < 0 or int(high) > N:
            raise _offset_error(name, indptr, (indptr < 0) | (indptr > N), f"[0, src.size({dim})={N}]")
        if indptr.size(-1) > 1 and bool((indptr[..., 1:] < indptr[..., :-1]).any()):
            raise ValueError(f"{name}: indptr must be non-decreasing along its last dimension")
    one = _engine.leading_batch(indptr, lead) if dim > 0 else indptr
    zero = torch.zeros(1, dtype=torch.int64, device=src.device)
    if one is not None:
        if one.numel() == 0:
            one = zero
        ptr = torch.cat([zero, one.to(torch.int64), zero + N])
        return src, dim, M, ptr, False, lead
    B = 1
    for s in lead:
        B *= s
    starts = torch.arange(B, device=src.device, dtype=torch.int64).mul_(N).view(B, 1)
    flat = (indptr.reshape(B, M + 1).to(torch.int64) + starts).reshape(-1)
    ptr = torch.cat([zero, flat, zero + B * N])
    return src.reshape([B * N] + list(src.shape[dim + 1 :])), dim, M, ptr, True, lead


def _take(result: torch.Tensor, dim: int, M: int, flat: bool, lead, rest) -> torch.Tensor:
    """The caller's segments out of the result over ``_structure``'s ``ptr``."""
    if not flat:
        return result.narrow(dim, 1, M)
    B = 1
    for s in lead:
        B *= s
    inner = result.narrow(0, 1, B * (M + 1)).reshape([B, M + 1] + rest)
    return inner.narrow(1, 0, M).reshape(list(lead) + [M] + rest)


def _segment(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str):
    if (
        out is None
        and reduce in ("sum", "mean")
        and type(src) is torch.Tensor
        and type(indptr) is torch.Tensor
        and indptr.dim() == 1
        and indptr.numel() > 1
        and src.dim() > 0
        and src.numel() > 0
        and indptr.device == src.device
        and (src.is_floating_point() or (reduce == "sum" and src.dtype not in _engine.SMALL_INT))
        and not torch.compiler.is_compiling()
        and int(indptr[0]) == 0
        and int(indptr[-1]) == src.size(0)
    ):
        # PyG's call: offsets over all of dim 0, scatterx's own CSR form -- the core op without the batch
        # broadcasting, the spacer segments and the checks of the general path (~30 us of a 10,000-row call of 65;
        # torch-scatter-dropin.md). A bad indptr (one that decreases) takes the general path, for its message.
        try:
            return segment_reduce(src, indptr, reduce, 0)
        except (ValueError, IndexError):
            pass
    check_tensor(src, "src")
    dtype = src.dtype
    name = {"amax": "max", "amin": "min"}.get(reduce, reduce)  # (torch_scatter's names: segment_max_csr)
    src_, dim, M, ptr, flat, lead = _structure(src, indptr, out, f"segment_{name}_csr")
    shape = list(src.shape)
    shape[dim] = M
    _engine.check_out(out, src, shape, dim)
    if out is not None and out.size(dim) != M and src.numel():
        raise ValueError(f"out.size({dim}) = {out.size(dim)} but indptr describes {M} segments")
    rest = list(src.shape[dim + 1 :])
    if src.numel() == 0 and out is not None:  # torch_scatter returns out untouched
        out = _engine.untouched(out, src)
        if reduce in ("amax", "amin"):
            return out, torch.full(out.shape, src.size(dim), dtype=torch.int64, device=src.device)
        return out
    work = _engine.widened(src_)
    if reduce in ("amax", "amin") and work.dtype in (torch.float16, torch.bfloat16):
        work = work.float()  # torch_scatter's CSR compares half types in float32, from float32's extreme
    rdim = 0 if flat else dim
    arg = None
    if reduce in ("amax", "amin"):
        start = None
        if dtype in _engine.SMALL_INT:  # widened to int64, compared from the small dtype's extreme
            shape_ = list(work.shape)
            shape_[rdim] = ptr.numel() - 1
            info = torch.iinfo(dtype)
            start = torch.full(shape_, info.min if reduce == "amax" else info.max, dtype=work.dtype, device=work.device)
        values, arg = segment_arg_reduce(work, ptr, reduce, rdim, base=start, finite_start=True, fill="empty")
        values = _take(values, dim, M, flat, lead, rest)
        arg = _take(arg, dim, M, flat, lead, rest)
        N = src.size(dim)
        if flat:  # flat rows -> positions in the batch's own rows
            Bn = work.size(0)
            arg = torch.where(arg == Bn, torch.full_like(arg, N), arg.remainder(max(N, 1)))
    elif reduce == "mean" and not work.is_floating_point():  # torch_scatter truncates
        total = _take(segment_reduce(work, ptr, "sum", rdim), dim, M, flat, lead, rest)
        count = (ptr[1:] - ptr[:-1]).clamp(min=1)
        count = count.narrow(0, 1, count.numel() - 1).view(-1, M + 1).narrow(1, 0, M) if flat else count.narrow(0, 1, M)
        values = torch.div(
            total, count.reshape(lead[: dim if flat else 0] + [M] + [1] * len(rest)), rounding_mode="trunc"
        )
    else:
        values = _take(segment_reduce(work, ptr, reduce, rdim), dim, M, flat, lead, rest)
    values = _engine.finish(values.contiguous(), out, dtype)
    return values if arg is None else (values, arg.contiguous())


@torch.jit.ignore
def _reduced(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str) -> torch.Tensor:
    return _segment(src, indptr, out, reduce)


@torch.jit.ignore
def _selected(
    src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str
) -> Tuple[torch.Tensor, torch.Tensor]:
    return _segment(src, indptr, out, reduce)


def segment_sum_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Sums ``src`` over the ranges ``indptr[i]:indptr[i + 1]`` along dimension ``indptr.dim() - 1``.

    ``indptr`` holds CSR offsets: segment ``i`` is positions ``indptr[..., i]`` (included) to
    ``indptr[..., i + 1]`` (excluded) of ``src`` along ``dim = indptr.dim() - 1``. Its leading dimensions are
    batch dimensions, broadcast against ``src``'s first ``dim`` ones (each batch may have its own offsets). The
    offsets need not start at 0 nor end at ``src.size(dim)``: positions outside every range are in no segment.
    An empty segment is 0.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        indptr: ``M + 1`` offsets describing ``M`` segments, int64 or int32, non-decreasing along the last
            dimension and within ``[0, src.size(dim)]``.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``M`` along ``dim``. It is only
            written (its values do not take part), in place.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``M = indptr.size(-1) - 1`` along ``dim``:
        ``out`` itself when it is given (returned untouched when ``src`` is empty), else a new tensor.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32,
            ``src``'s dtype is not supported (e.g. bool), or ``out``'s dtype is not ``src``'s.
        ValueError: when ``indptr`` is 0-d, has more dimensions than ``src``, does not match ``src``'s leading
            sizes, decreases, or is on another device, or when ``out``'s shape or device does not match.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> segment_sum_csr(src, torch.tensor([0, 2, 5]))
        tensor([ 3., 12.])
        >>> segment_sum_csr(torch.tensor([[1., 2.], [3., 4.], [5., 6.]]), torch.tensor([0, 1, 3]))
        tensor([[ 1.,  2.],
                [ 8., 10.]])
    """
    return _reduced(src, indptr, out, "sum")


def segment_add_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The same as :func:`segment_sum_csr` (torch_scatter's other name for it).

    Args:
        src: the values (see :func:`segment_sum_csr`).
        indptr: ``M + 1`` offsets describing ``M`` segments along ``indptr.dim() - 1``, int64 or int32,
            non-decreasing and within ``[0, src.size(dim)]``.
        out: a tensor of ``src``'s dtype, device and shape but ``M`` along ``dim``; only written, in place.

    Returns:
        The sums, as :func:`segment_sum_csr` returns them (``out`` itself when it is given, else a new tensor).

    Raises:
        TypeError: when an argument has the wrong type or dtype, as for :func:`segment_sum_csr`.
        ValueError: when ``indptr`` or ``out`` does not match ``src`` or ``indptr`` decreases.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> segment_add_csr(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 2, 5]))
        tensor([ 3., 12.])
    """
    return _reduced(src, indptr, out, "sum")


def segment_mean_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Averages ``src`` over the ranges ``indptr[i]:indptr[i + 1]`` along dimension ``indptr.dim() - 1``.

    The segments are those of :func:`segment_sum_csr`. An empty segment is 0; integer means truncate toward zero
    (torch_scatter's C++ division), unlike :func:`scatter_mean`, which rounds down.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        indptr: ``M + 1`` offsets describing ``M`` segments, int64 or int32, non-decreasing along the last
            dimension and within ``[0, src.size(dim)]``; leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``M`` along ``dim``; only written (its
            values do not take part), in place.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``M = indptr.size(-1) - 1`` along ``dim``:
        ``out`` itself when it is given (returned untouched when ``src`` is empty), else a new tensor.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32,
            ``src``'s dtype is not supported, or ``out``'s dtype is not ``src``'s.
        ValueError: when ``indptr`` is 0-d, has more dimensions than ``src``, does not match ``src``'s leading
            sizes, decreases, or is on another device, or when ``out``'s shape or device does not match.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> segment_mean_csr(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 2, 2, 5]))
        tensor([1.5000, 0.0000, 4.0000])
        >>> segment_mean_csr(torch.tensor([-1, -2, 4]), torch.tensor([0, 2, 3]))  # -3 / 2 truncates
        tensor([-1,  4])
    """
    return _reduced(src, indptr, out, "mean")


def segment_min_csr(
    src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The minimum of ``src`` over each range ``indptr[i]:indptr[i + 1]`` along ``indptr.dim() - 1``, and where
    it is.

    The segments are those of :func:`segment_sum_csr`. torch_scatter's selection: an entry is selected only if
    it is strictly below the best so far, starting from the dtype's largest finite value, so the first of tied
    entries wins and NaN is never selected. An empty segment is 0 with argmin ``src.size(dim)``; a non-empty
    one where nothing was selected (only NaN or +inf) keeps that largest finite value, as torch_scatter's kernel
    writes it, with argmin ``src.size(dim)``. float16 and bfloat16 compare in float32, from float32's largest
    value, as torch_scatter's kernel does (so that value, rounded, is +inf). The gradient goes to the selected
    entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back, from their own largest value).
        indptr: ``M + 1`` offsets describing ``M`` segments, int64 or int32, non-decreasing along the last
            dimension and within ``[0, src.size(dim)]``; leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``M`` along ``dim``; only written (its
            values do not take part), in place.

    Returns:
        A tuple ``(values, argmin)`` of ``src``'s shape but with ``M = indptr.size(-1) - 1`` along ``dim``:
        ``values`` in ``src``'s dtype (``out`` itself when it is given, else a new tensor) and ``argmin`` int64,
        the position along ``dim`` in ``src`` of each selected entry (``src.size(dim)`` where none was). Both on
        ``src``'s device.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32,
            ``src``'s dtype is not supported, or ``out``'s dtype is not ``src``'s.
        ValueError: when ``indptr`` is 0-d, has more dimensions than ``src``, does not match ``src``'s leading
            sizes, decreases, or is on another device, or when ``out``'s shape or device does not match.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> values, argmin = segment_min_csr(torch.tensor([4., 2., 3., 1., 5.]), torch.tensor([0, 2, 2, 5]))
        >>> values
        tensor([2., 0., 1.])
        >>> argmin
        tensor([1, 5, 3])
    """
    return _selected(src, indptr, out, "amin")


def segment_max_csr(
    src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The maximum of ``src`` over each range ``indptr[i]:indptr[i + 1]`` along ``indptr.dim() - 1``, and where
    it is.

    The segments are those of :func:`segment_sum_csr`. torch_scatter's selection: an entry is selected only if
    it is strictly above the best so far, starting from the dtype's lowest finite value, so the first of tied
    entries wins and NaN is never selected. An empty segment is 0 with argmax ``src.size(dim)``; a non-empty
    one where nothing was selected (only NaN or -inf) keeps that lowest finite value, as torch_scatter's kernel
    writes it, with argmax ``src.size(dim)``. float16 and bfloat16 compare in float32, from float32's lowest
    value, as torch_scatter's kernel does (so that value, rounded, is -inf). The gradient goes to the selected
    entry alone.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back, from their own lowest value).
        indptr: ``M + 1`` offsets describing ``M`` segments, int64 or int32, non-decreasing along the last
            dimension and within ``[0, src.size(dim)]``; leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``M`` along ``dim``; only written (its
            values do not take part), in place.

    Returns:
        A tuple ``(values, argmax)`` of ``src``'s shape but with ``M = indptr.size(-1) - 1`` along ``dim``:
        ``values`` in ``src``'s dtype (``out`` itself when it is given, else a new tensor) and ``argmax`` int64,
        the position along ``dim`` in ``src`` of each selected entry (``src.size(dim)`` where none was). Both on
        ``src``'s device.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32,
            ``src``'s dtype is not supported, or ``out``'s dtype is not ``src``'s.
        ValueError: when ``indptr`` is 0-d, has more dimensions than ``src``, does not match ``src``'s leading
            sizes, decreases, or is on another device, or when ``out``'s shape or device does not match.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> values, argmax = segment_max_csr(torch.tensor([1., 2., 3., 4., 5.]), torch.tensor([0, 2, 2, 5]))
        >>> values
        tensor([2., 0., 5.])
        >>> argmax
        tensor([1, 5, 4])
    """
    return _selected(src, indptr, out, "amax")


def segment_csr(
    src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None, reduce: str = "sum"
) -> torch.Tensor:
    """Reduces ``src`` over the ranges ``indptr[i]:indptr[i + 1]`` along ``indptr.dim() - 1``, by ``reduce``.

    torch_scatter's ``segment_csr``: :func:`segment_sum_csr`, :func:`segment_mean_csr`, or the values (without
    the arg-indices) of :func:`segment_min_csr` or :func:`segment_max_csr`; see those for the rules of each.

    Args:
        src: the values: float32, float64, float16, bfloat16, int32 or int64 (int8, uint8 and int16 are computed
            in int64 and cast back).
        indptr: ``M + 1`` offsets describing ``M`` segments, int64 or int32, non-decreasing along the last
            dimension and within ``[0, src.size(dim)]``; leading dimensions are batch dimensions.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``M`` along ``dim``; only written (its
            values do not take part), in place.
        reduce: ``"sum"`` (or ``"add"``), ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``M = indptr.size(-1) - 1`` along ``dim``:
        ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32,
            ``src``'s dtype is not supported, or ``out``'s dtype is not ``src``'s.
        ValueError: when ``reduce`` is not one of the above; when ``indptr`` is 0-d, has more dimensions than
            ``src``, does not match ``src``'s leading sizes, decreases, or is on another device; or when ``out``'s
            shape or device does not match.
        IndexError: when an offset is negative or above ``src.size(dim)``.

    Example:
        >>> src = torch.tensor([1., 2., 3., 4., 5.])
        >>> segment_csr(src, torch.tensor([0, 2, 5]))
        tensor([ 3., 12.])
        >>> segment_csr(src, torch.tensor([0, 2, 5]), reduce="max")
        tensor([2., 5.])
    """
    if reduce == "sum" or reduce == "add":
        return segment_sum_csr(src, indptr, out)
    elif reduce == "mean":
        return segment_mean_csr(src, indptr, out)
    elif reduce == "min":
        return segment_min_csr(src, indptr, out)[0]
    elif reduce == "max":
        return segment_max_csr(src, indptr, out)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mean', 'min' or 'max', got '{reduce}'")


@torch.jit.ignore
def _gather(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    """out[..., indptr[i]:indptr[i+1], ...] = src[..., i, ...] along ``indptr.dim() - 1``."""
    check_tensor(src, "src")
    _engine.check_index(indptr, "indptr")
    if indptr.dim() == 0 or src.dim() < indptr.dim():
        raise ValueError(f"indptr must have between 1 and src.dim()={src.dim()} dimensions, got {indptr.dim()}")
    if indptr.device != src.device:
        raise ValueError(f"indptr is on {indptr.device} but src is on {src.device}")
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    try:
        indptr = indptr.expand(lead + [indptr.size(-1)])
    except RuntimeError as e:
        raise ValueError(
            f"indptr of shape {tuple(indptr.shape)} does not match src's leading sizes {lead}: {e}"
        ) from None
    M = max(indptr.size(-1) - 1, 0)
    if out is not None:
        check_tensor(out, "out")
    if src.size(dim) != 0 and src.size(dim) != M:
        raise ValueError(f"src.size({dim}) = {src.size(dim)} but indptr describes {M} segments")
    if out is not None:
        E = out.size(dim) if out.dim() == src.dim() else -1
    else:
        E = int(indptr.reshape(-1)[-1]) if src.numel() > 0 and indptr.numel() else 0
    shape = list(src.shape)
    shape[dim] = max(E, 0)
    _engine.check_out(out, src, shape, dim)
    checked = indptr.numel() > 0 and not torch.compiler.is_compiling()
    if checked:  # a negative offset is named first (without out, E was read from the last one)
        low, high = torch.aminmax(indptr)
        if int(low) < 0:
            raise _offset_error("gather_csr", indptr, indptr < 0, f"[0, {E}] (the output's size)")
        # an empty src too: it reads nothing, but the offsets are still the caller's
        steps = indptr[..., 1:] < indptr[..., :-1]
        bounded = out is not None or src.numel() > 0  # (else E is torch_scatter's 0, not indptr's last offset)
        if (bounded and int(high) > E) or bool(steps.any()):
            within = f" within [0, {E}] (the output's size)" if bounded else ""
            raise ValueError(f"gather_csr: indptr must be non-decreasing{within}")
    if src.numel() == 0 or indptr.numel() == 0:
        return _engine.untouched(out, src) if out is not None else _engine.nothing(src, shape)
    one = _engine.leading_batch(indptr, lead) if dim > 0 else indptr
    if one is not None:  # one set of offsets: each slice repeated, by index_select
        first, last = (int(one[0]), int(one[-1])) if not torch.compiler.is_compiling() else (0, E)
        counts = (one[1:] - one[:-1]).to(torch.int64)
        seg = torch.repeat_interleave(torch.arange(M, device=src.device), counts, output_size=last - first)
        picked = _engine.select_rows(src, dim, seg)
        if first == 0 and last == E and out is None:
            return picked
        result = src.new_zeros(shape) if out is None else out.clone()
        result.narrow(dim, first, last - first).copy_(picked)
        return result if out is None else out.copy_(result)
    positions = torch.arange(E, device=src.device, dtype=torch.int64)
    # the segment of every output position: searchsorted in each batch's offsets
    seg = (
        torch.searchsorted(indptr.contiguous().to(torch.int64), positions.expand(lead + [E]).contiguous(), right=True)
        - 1
    )
    inside = (seg >= 0) & (seg < M)
    picked = torch.gather(
        src, dim, seg.clamp(0, max(M - 1, 0)).view(lead + [E] + [1] * (src.dim() - dim - 1)).expand(shape)
    )
    keep = inside.view(lead + [E] + [1] * (src.dim() - dim - 1))
    if out is None:
        return torch.where(keep, picked, torch.zeros((), dtype=src.dtype, device=src.device))
    return out.copy_(torch.where(keep, picked, out))


def gather_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Repeats each slice ``i`` of ``src`` over the range ``indptr[i]:indptr[i + 1]`` along ``indptr.dim() - 1``.

    The inverse of :func:`segment_csr`'s layout: ``out[..., indptr[i]:indptr[i + 1], ...] = src[..., i, ...]``
    along ``dim = indptr.dim() - 1``, for instance to send a value per segment back to its members. Leading
    dimensions of ``indptr`` are batch dimensions, as in :func:`segment_csr`. Positions that no range covers are
    0 (with ``out``: keep its value).

    Args:
        src: the values, one slice per segment along ``dim`` (``M`` of them, or none), any dtype.
        indptr: ``M + 1`` offsets, int64 or int32, non-decreasing along the last dimension and within
            ``[0, E]``, ``E`` the size of the result along ``dim``.
        out: a tensor of ``src``'s dtype and device, of ``src``'s shape but ``E`` along ``dim``; written in place.

    Returns:
        A tensor of ``src``'s shape, dtype and device but with ``E`` along ``dim``: ``out.size(dim)``, else the
        last offset. ``out`` itself when it is given, else a new tensor.

    Raises:
        TypeError: when ``src``, ``indptr`` or ``out`` is not a tensor, ``indptr`` is not int64 or int32, or
            ``out``'s dtype is not ``src``'s.
        ValueError: when ``indptr`` is 0-d, has more dimensions than ``src``, does not match ``src``'s leading
            sizes, is on another device, decreases, or holds an offset above ``E``; when ``src.size(dim)`` is not
            the number of segments (nor 0); or when ``out``'s shape or device does not match.
        IndexError: when an offset is negative.

    Example:
        >>> gather_csr(torch.tensor([10., 20.]), torch.tensor([0, 2, 5]))
        tensor([10., 10., 20., 20., 20.])
    """
    return _gather(src, indptr, out)
