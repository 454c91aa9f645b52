"""The planner's element plans on the CPU (``ops/element_scatter.py``): scatters and gathers whose index names a
target per element, along a dim or by coordinates (``kernels/cpu/element_scatter.py``)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..._reductions import BY_NAME
from ...kernels.cpu import element_scatter as element_kernels
from ...kernels.cpu import launch, numpy_view, storage_code
from .._common import shape3
from .._outputs import empty
from . import routes
from ._arguments import view3

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["element_gather", "element_scatter"]

_MEAN = BY_NAME["mean"].code


def element_scatter(
    src: torch.Tensor, index: torch.Tensor, base: torch.Tensor, dim: Optional[int], reduce: str, include_self: bool
) -> torch.Tensor:
    """The element plan (``ops/element_scatter.py``): a new tensor, ``base`` with ``src[u]`` reduced into the
    target the caller's ``index`` names for ``u`` -- along ``dim``, or by coordinate vectors (``dim=None``).
    ``reduce``: a name of the table or ``"assign"`` (the last write wins). IndexError for a bad entry, raised
    after the kernel counted it (the kernel writes only the new tensor, never ``base``).

    Along a dim with at least two carried lanes (``outer * inner``) work items own lanes and walk the index in
    order; otherwise (one lane, or coordinates) each thread owns a range of targets and streams the whole index
    (``kernels/cpu/element_scatter.py``)."""
    # int64 indices only: each index dtype doubles the element kernels' compiled variants, whose cold compile
    # dominated the test suite; an int32 general index is rare, and its copy costs one pass
    index = index.long()
    t = routes.tuning()
    assign = reduce == "assign"
    code = 0 if assign else BY_NAME[reduce].code
    storage = element_kernels.NATIVE if assign else storage_code(src.dtype)  # assign moves bits: no conversion
    include_self = include_self and not assign
    out = empty(base.shape, base.dtype, "cpu")
    if out.numel() == 0 and index.numel():
        # no target at all (a dim of base is 0, which an entry indexes -- every other dim has index's size): every
        # entry is bad, and no kernel would run to find it
        raise _explain_element(index, base.shape, dim)
    if dim is not None and base.numel() // max(base.size(dim), 1) > 1:
        routes.record("element_scatter.along")
        bad = _along_scatter(src, index, base, out, dim, code, storage, assign, include_self, t)
    else:
        routes.record("element_scatter.coords")
        coords, sizes, strides = _coordinates(index, base, dim)
        threads = routes.threads_for(coords.size(0), torch.get_num_threads(), t)
        size = out.numel()
        step = max(1, -(-size // threads))
        bad = launch(
            element_kernels.coords_scatter,
            None,
            -(-size // step),
            threads,
            numpy_view(coords),
            sizes,
            strides,
            _flat(src, False),
            _flat(base),
            numpy_view(out).reshape(-1),
            reduce=code,
            storage=storage,
            assign=assign,
            include_self=include_self,
            step=step,
        )
    if bad:
        raise _explain_element(index, base.shape, dim)
    return out


def element_gather(data: torch.Tensor, index: torch.Tensor, dim: Optional[int]) -> torch.Tensor:
    """``out[u] = data[t(u)]`` for the map of ``element_scatter``: a new tensor of ``index``'s shape (``dim``
    given) or ``index.shape[:-1]`` (coordinates). Parallel over positions (an int64 index along the last dim:
    torch's own gather); IndexError for a bad entry."""
    index = index.long()  # int64 only, as element_scatter
    t = routes.tuning()
    if dim is not None:
        outer, S, inner = shape3(data, dim)
        n = index.size(dim)
        if S == 0 and index.numel():  # nothing to read: every entry is bad (the kernels read row 0 for one)
            raise _explain_element(index, data.shape, dim)
        if inner == 1 and index.dtype == torch.int64:
            # along the last dim torch's gather is faster than ``row_gather`` (see
            # docs/decisions/element-scatter.md); it takes the index as it is, and checks it
            try:
                return torch.gather(data, dim, index)
            except RuntimeError:
                if not bool(((index < 0) | (index >= S)).any()):
                    raise
                raise _explain_element(index, data.shape, dim) from None
        out = empty(index.shape, data.dtype, "cpu")
        threads = routes.threads_for(outer * n * inner, torch.get_num_threads(), t)
        nchunks = max(1, min(n, -(-t.gather_items_per_thread * threads // max(outer, 1))))
        data3, index3 = _strided3(data, outer, S, inner), _strided3(index, outer, n, inner)
        routes.record("element_gather.along")
        if inner == 1:  # along the last dim: rows
            rows_out = numpy_view(out).reshape(outer, n)
            bad = launch(
                element_kernels.row_gather,
                None,
                outer * nchunks,
                threads,
                data3[:, :, 0],
                index3[:, :, 0],
                rows_out,
                nchunks,
            )
        else:
            bad = launch(
                element_kernels.along_gather,
                None,
                outer * nchunks,
                threads,
                data3,
                index3,
                numpy_view(out).reshape(outer, n, inner),
                nchunks,
            )
    else:
        coords, sizes, strides = _coordinates(index, data, None)
        out = empty(index.shape[:-1], data.dtype, "cpu")
        rows = coords.size(0)
        threads = routes.threads_for(rows, torch.get_num_threads(), t)
        step = max(1, -(-rows // threads))
        routes.record("element_gather.coords")
        bad = launch(
            element_kernels.coords_gather,
            None,
            -(-rows // step),
            threads,
            _flat(data),
            numpy_view(coords),
            sizes,
            strides,
            numpy_view(out).reshape(-1),
            step,
        )
    if bad:
        raise _explain_element(index, data.shape, dim)
    return out


def _along_scatter(src, index, base, out, dim, code, storage, assign, include_self, t) -> int:
    """The along-dim scatter kernel: work items own an outer slice and a block of columns, and update their block
    of the accumulator directly (``kernels/cpu/element_scatter.py``; measured in docs/decisions/element-scatter.md).
    ``index`` and ``src`` go C-contiguous (a copy only for a strided one: the kernel's loops need the layout known
    when compiled, and one layout keeps one variant); ``base`` through its strides (read once)."""
    outer, S, inner = shape3(base, dim)
    n = index.size(dim)
    threads = routes.threads_for(outer * n * inner, torch.get_num_threads(), t)
    nblocks = min(inner, -(-threads // outer))
    block = -(-inner // nblocks)
    if block > t.lane_block:
        block = -(-block // t.lane_block) * t.lane_block
        nblocks = -(-inner // block)
    out_np = numpy_view(out).reshape(outer, S, inner)
    acc = out_np if storage == element_kernels.NATIVE else np.empty((outer, S, inner), np.float32)
    if code == _MEAN and not assign:
        track, seen = element_kernels.TRACK_COUNT, np.empty((outer, S, inner), np.int32 if n < 2**31 else np.int64)
    elif assign or include_self:
        track, seen = element_kernels.TRACK_NONE, np.empty((outer, 0, 0), np.uint8)
    else:
        track, seen = element_kernels.TRACK_FLAG, np.empty((outer, S, inner), np.uint8)
    # the key names every argument's type (``Kernel.entry``): typing each array per call cost 3.6 us of a 25 us call
    key = ("element.along", code, storage, src.dtype, acc.dtype.num, seen.dtype.num)
    return launch(
        element_kernels.along_scatter,
        key,
        outer * nblocks,
        threads,
        view3(index, outer, n, inner),
        view3(src, outer, n, inner),
        numpy_view(base).reshape(outer, S, inner),  # (NumPy copies a strided base it cannot view so; read only)
        out_np,
        acc,
        seen,
        reduce=code,
        storage=storage,
        assign=assign,
        include_self=include_self,
        track=track,
        nblocks=nblocks,
        block=block,
    )


def _strided3(t: torch.Tensor, outer: int, rows: int, inner: int) -> np.ndarray:
    """``t`` as a 3-D NumPy array, strided as it is when its dims merge that way (else a copy)."""
    return numpy_view(t.reshape(outer, rows, inner))


def _flat(t: torch.Tensor, contiguous: bool = True) -> np.ndarray:
    """``t`` as a 1-D NumPy array in row-major order: C-contiguous (a copy if need be), or strided if allowed."""
    return numpy_view(t.contiguous().view(-1) if contiguous else t.reshape(-1))


def _coordinates(index: torch.Tensor, data: torch.Tensor, dim: Optional[int]):
    """``(coords, sizes, strides)`` of the coordinate kernels: ``index`` as ``(n, k)`` rows of coordinates, the
    sizes of the dims they index and those dims' strides in the flat (C-contiguous) data. An index along ``dim``
    with a single lane is a coordinate into the flat data."""
    if dim is not None:
        return index.reshape(-1, 1), np.array([data.numel()], np.int64), np.ones(1, np.int64)
    strides = np.cumprod([1] + list(data.shape[:0:-1]), dtype=np.int64)[::-1].copy()
    return index.reshape(-1, index.size(-1)), np.array(data.shape, np.int64), strides


def _explain_element(index: torch.Tensor, shape, dim: Optional[int]) -> IndexError:
    """The IndexError for an element-plan index a kernel rejected: the first bad entry, at its position in
    ``index`` (the failure path only)."""
    if dim is not None:
        bad, sizes = (index < 0) | (index >= shape[dim]), None
    else:
        sizes = torch.tensor(list(shape), dtype=torch.int64)
        bad = (index < 0) | (index >= sizes)
    where = tuple(int(i) for i in torch.nonzero(bad)[0])
    d = dim if dim is not None else where[-1]
    return IndexError(
        f"index{list(where)} = {int(index[where])} is out of bounds for dimension {d} with size {shape[d]}"
    )
