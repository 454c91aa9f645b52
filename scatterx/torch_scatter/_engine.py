"""What the drop-in's functions share: torch_scatter's arguments turned into scatterx's plans and ops.

- ``scatter_plan``: torch_scatter's broadcast index becomes a planner map (``scatterx.planner``); an index expanded
  from 1-D runs on slices along ``dim``, any other index element by element (flat rows).
- ``select``: amax/amin with the row of the selected member (``ops.segment_arg_reduce``), rows grouped by a sorted
  pass (``index_to_ptr``) or a stable counting sort (``csr_order``).
- ``leading_batch``: torch_scatter's segment functions take an index/indptr with leading batch dims; when those
  are broadcast (stride 0 or size 1) the batch is ``outer`` of a plain 1-D call, else it is flattened.
- ``SMALL_INT``: dtypes scatterx's kernels lack (int8, uint8, int16) are computed in int64 and cast back.
"""

from typing import List, Optional, Tuple

import torch

from .. import planner
from ..backends._common import explain_bad_index
from ..backends._outputs import empty
from ..ops import csr_order, index_to_ptr, needs_op, segment_arg_reduce
from ..ops._checks import check_tensor, traced_size
from ..planner import XMap
from .utils import broadcast

SMALL_INT = (torch.int8, torch.uint8, torch.int16)


def check_index(index, name: str = "index") -> None:
    check_tensor(index, name)
    if index.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name} must have dtype int64 (or int32), got {index.dtype}")


def check_out(out: Optional[torch.Tensor], src: torch.Tensor, shape: List[int], dim: int) -> None:
    """``out`` must be ``src``'s dtype and device, with ``src``'s shape in every dim but ``dim``."""
    if out is None:
        return
    check_tensor(out, "out")
    if out.dtype != src.dtype:
        raise TypeError(f"out has dtype {out.dtype} but src has dtype {src.dtype}; they must match")
    if out.device != src.device:
        raise ValueError(f"out is on {out.device} but src is on {src.device}")
    if out.dim() != len(shape) or any(out.size(d) != shape[d] for d in range(len(shape)) if d != dim):
        raise ValueError(
            f"out has shape {tuple(out.shape)}; it must match {tuple(shape)} in every dimension but dim={dim}"
        )


def size_from_index(index: torch.Tensor, dim: int = 0) -> int:
    """``index.max() + 1`` (0 for an empty index): torch_scatter's output size when none is given. The same pass
    finds the minimum (``aminmax``): a negative entry raises IndexError naming it (``out_of_range``), where the
    size alone would hide it (``index.max() + 1`` is 0 when every entry is negative, and an empty output
    validates nothing). ``index``: 1-D, or of ``src``'s shape, indexing along ``dim``. An expanded index is read
    once per distinct value (its stride-0 dims dropped: an index expanded from 1-D to 1M x 64 costs a pass over
    1M entries, not 64M)."""
    if index.numel() == 0:
        return 0
    distinct = index[tuple(0 if index.stride(d) == 0 else slice(None) for d in range(index.dim()))]
    if torch.compiler.is_compiling():  # a data-dependent size; the kernels check every entry against it
        return traced_size(distinct.max())
    low, high = torch.aminmax(distinct)
    size = int(high) + 1
    if int(low) < 0:
        raise out_of_range(index, size, dim)
    return size


def out_of_range(index: torch.Tensor, size: int, dim: int = 0) -> Exception:
    """The IndexError for the first entry of ``index`` outside ``[0, size)`` (the failure path only: it looks
    for the entry), worded as the checks that run with a given size word it, so that a call names its bad entry
    alike with or without ``dim_size``: the backends' ``explain_bad_index`` for a 1-D index, the planner's
    ``check_coordinates`` for one of several dims indexing along ``dim``."""
    size = max(size, 0)
    if index.dim() <= 1:
        return explain_bad_index(index, size, False, "index", "dim_size")
    shape = list(index.shape)
    shape[dim] = size
    try:
        planner.check_coordinates(XMap.along_dim(index, shape, dim, op="torch_scatter"))
    except IndexError as error:
        return error
    raise AssertionError("index was rejected but no entry is out of range")


def check_unread(index: torch.Tensor, src: torch.Tensor, dim: int, size: Optional[int]) -> None:
    """Check the caller's ``index`` (as given, not broadcast) of a call whose ``src`` has no element. Broadcast to
    ``src`` it has no entry and nothing reads it, yet each entry names a row as it would with elements to move, and
    must be in ``[0, size)``; with ``size`` None (inferred from the index) only a negative entry is wrong. The
    culprit is named as the other paths name it (``out_of_range``): at its position in a 1-D index (or one that
    varies along ``dim`` only), else in ``index`` seen with ``src``'s rank. One pass over ``index``, on this path
    only."""
    if index.numel() == 0 or torch.compiler.is_compiling():
        return
    low, high = torch.aminmax(index)
    if int(low) >= 0 and (size is None or int(high) < size):
        return
    lifted = index.reshape([1] * dim + [index.numel()]) if index.dim() == 1 else index  # as ``broadcast``, unexpanded
    lifted = lifted.reshape(list(lifted.shape) + [1] * (src.dim() - lifted.dim()))
    bound = size if size is not None else int(high) + 1
    if all(lifted.size(d) == 1 for d in range(lifted.dim()) if d != dim):
        raise out_of_range(lifted.reshape(-1), bound)
    raise out_of_range(lifted, bound, dim)


def broadcast_index(index: torch.Tensor, src: torch.Tensor, dim: int) -> torch.Tensor:
    """torch_scatter's broadcast of ``index`` to ``src``'s shape (``dim >= 0``), with ValueError where it cannot
    be (torch_scatter lets ``expand`` raise RuntimeError) or the devices differ."""
    if index.dim() > src.dim():
        raise ValueError(f"index has {index.dim()} dimensions but src has {src.dim()}; index may not have more")
    try:
        full = broadcast(index, src, dim)
    except RuntimeError as e:
        raise ValueError(
            f"index of shape {tuple(index.shape)} cannot be broadcast to src's {tuple(src.shape)} along dim={dim}: {e}"
        ) from None
    if full.device != src.device:
        raise ValueError(f"index is on {index.device} but src is on {src.device}")
    return full


def vector_along(full: torch.Tensor, src: torch.Tensor, dim: int) -> Optional[torch.Tensor]:
    """The 1-D index along ``dim`` when torch_scatter's broadcast index ``full`` (``src``'s shape) does not vary
    along the other dims -- an index given 1-D or expanded from it, the usual case -- else None. That is the core
    op's own form: the drop-in then calls it without building a plan."""
    if full.dim() == 1:
        return full
    if full.numel() == 0:
        return None
    if all(full.stride(d) == 0 or full.size(d) == 1 for d in range(full.dim()) if d != dim):
        return full[tuple(slice(None) if d == dim else 0 for d in range(full.dim()))]
    m = planner.simplify(XMap.along_dim(full, list(src.shape), dim, op="torch_scatter"))
    return m.index if m.index.dim() == 1 and tuple(m.lookup) == (dim,) else None


def widened(src: torch.Tensor) -> torch.Tensor:
    return src.to(torch.int64) if src.dtype in SMALL_INT else src


def base_of(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """``out``'s values as the start of a reduction (widened). A copy when autograd may save it: ``finish``
    overwrites ``out`` afterwards, which would invalidate a saved ``out`` itself."""
    work = widened(out)
    if work is out and (src.requires_grad or out.requires_grad) and torch.is_grad_enabled():
        return out.clone()
    return work


def nothing(src: torch.Tensor, shape: List[int], fill: float = 0) -> torch.Tensor:
    """The result of reducing an empty ``src``: ``fill`` everywhere, still connected to ``src``'s graph (so that
    a backward through it runs, with a zero gradient, as torch_scatter's does)."""
    result = torch.full(shape, fill, dtype=src.dtype, device=src.device)
    if src.requires_grad:
        result = result + src.sum().to(src.dtype) * 0
    return result


def untouched(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """``out`` as it is, for a call with nothing to reduce or gather. When ``src`` requires grad, ``out`` is
    attached to its graph in place, as torch_scatter's in-place ops on ``out`` attach it (a backward through it
    runs, with a zero gradient for ``src``): ``out - 0`` keeps every value, signed zeros and NaN included."""
    if src.requires_grad and torch.is_grad_enabled():
        out.sub_(src.sum().to(out.dtype) * 0)
    return out


def finish(result: torch.Tensor, out: Optional[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """The result in ``dtype``, written into ``out`` when one was given (only now: a failed call leaves it)."""
    result = result.to(dtype)
    if out is None:
        return result
    return out.copy_(result)


def select_rows(src: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """``src.index_select(dim, index)``, on the CPU into a buffer on huge pages (``backends._outputs.empty``:
    the page faults of a fresh ``E x F`` output cost more than the copy) when no gradient is wanted."""
    if src.device.type == "cpu" and not needs_op(src):
        shape = list(src.shape)
        shape[dim] = index.numel()
        return torch.index_select(src, dim, index, out=empty(shape, src.dtype, src.device))
    return src.index_select(dim, index)


# ------------------------------------------------------------------------------------------------ scatter plans
class ScatterPlan:
    """A torch_scatter scatter (``src``, a broadcast ``index``, ``dim``, ``S`` rows out) as a planner plan:
    ``src3`` ``(outer, n, inner)``, ``rows`` (``n`` target rows in ``[0, S)``), and how a row of ``n`` maps back
    to a position along ``dim`` (``along``). ``vector``: the index as 1-D along ``dim`` (``vector_along``), whose
    plan is known without the planner: the rows are the index, ``(outer, n, inner)`` split at ``dim``."""

    def __init__(
        self, src: torch.Tensor, index: torch.Tensor, dim: int, size: int, vector: Optional[torch.Tensor] = None
    ):
        shape = list(src.shape)
        shape[dim] = size
        self.out_shape = shape
        self.length = src.size(dim)
        if vector is not None:
            outer, inner = 1, 1
            for d in range(dim):
                outer *= src.size(d)
            for d in range(dim + 1, src.dim()):
                inner *= src.size(d)
            self.outer, self.n, self.S, self.inner, self.rows = outer, self.length, size, inner, vector
        else:
            m = XMap.along_dim(index, shape, dim, op="torch_scatter")
            p = planner.plan(m)
            self.outer, self.n, self.S, self.inner = p.outer, p.n, p.S, p.inner
            self.rows = p.rows if p.rows is not None else planner.element_rows(m)
        self.src3 = src.reshape(self.outer, self.n, self.inner)
        after = 1
        for d in range(dim + 1, src.dim()):
            after *= src.size(d)
        self.after = after // max(self.inner, 1)  # rows of n per step along dim

    def along(self, arg: torch.Tensor) -> torch.Tensor:
        """Rows of ``n`` (``n`` = none) -> positions along ``dim`` (``src.size(dim)`` = none)."""
        if self.n == self.length and self.after == 1:
            return arg  # the rows are the positions along dim (a 1-D index)
        position = torch.div(arg, self.after, rounding_mode="floor").remainder_(max(self.length, 1))
        return torch.where(arg == self.n, torch.full_like(arg, self.length), position)


def segments(rows: torch.Tensor, size: int) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(ptr, perm)`` of target rows: CSR offsets of a sorted index (perm None), else a stable counting sort.
    Both validate every row against ``size``."""
    if not torch.compiler.is_compiling() and (rows.numel() < 2 or bool((rows[1:] >= rows[:-1]).all())):
        return index_to_ptr(rows, size), None
    try:
        return csr_order(rows, size)
    except IndexError:
        if torch.compiler.is_compiling() or rows.dim() != 1:
            raise
        raise out_of_range(rows, size) from None  # (csr_order names its own argument, num_rows: the caller's)


def select(
    src3: torch.Tensor,
    rows: torch.Tensor,
    size: int,
    reduce: str,
    base: Optional[torch.Tensor],
    fill: str,
    sorted_rows: bool = False,
    dtype: Optional[torch.dtype] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch_scatter's min/max of ``src3`` (outer, n, inner) into ``size`` rows: ``(values, arg)`` with ``arg``
    a row of ``n`` (``n`` where nothing was selected). ``base``: out's values as the start values. ``dtype``:
    the caller's dtype when ``src3`` was widened from a small integer one (whose extreme is then the start)."""
    if sorted_rows and not torch.compiler.is_compiling():
        ptr, perm = index_to_ptr(rows, size), None
    else:  # (traced: the counting sort, an op, where index_to_ptr's checks read the index on the host)
        ptr, perm = segments(rows, size)
    if base is None and dtype in SMALL_INT:  # torch_scatter starts from the small dtype's own extreme
        info = torch.iinfo(dtype)
        start = torch.full(
            (src3.size(0), size, src3.size(2)),
            info.min if reduce == "amax" else info.max,
            dtype=src3.dtype,
            device=src3.device,
        )
        values, arg = segment_arg_reduce(src3, ptr, reduce, 1, perm=perm, base=start, finite_start=True, fill="none")
        if fill == "unselected":
            values = values.masked_fill(arg == src3.size(1), 0)
        return values, arg
    return segment_arg_reduce(src3, ptr, reduce, 1, perm=perm, base=base, finite_start=True, fill=fill)


# ------------------------------------------------------------------------------------------------ batched
def leading_batch(t: torch.Tensor, lead: List[int]) -> Optional[torch.Tensor]:
    """``t``'s last dim as a 1-D tensor when ``t`` does not vary along its leading dims (expanded, or sizes 1)
    against the batch sizes ``lead``; else None (the batch must be flattened, as an empty one is: it has no first
    row to read)."""
    if t.numel() > 0 and all(t.size(d) == 1 or t.stride(d) == 0 or lead[d] == 1 for d in range(t.dim() - 1)):
        return t[(0,) * (t.dim() - 1)]
    return None
