"""pyg-lib's ``random_walk`` on scatterx's Numba kernel (``kernels/cpu/random_walk.py``).

Semantics are pyg-lib's: ``out[i, 0] = seed[i]``, each step follows an out-edge of the current node, and a node
with no out-edge keeps the walk there (the rest of the row repeats it). Beyond pyg-lib, whose kernels take only
``p == q == 1``, any ``p, q > 0`` runs node2vec's second-order walk (the kernel's docstring says how it is drawn).

Every input is checked before the kernel runs (pyg-lib checks little, and a bad ``col`` entry would read memory
out of bounds): the checks cost one serial pass over ``rowptr``, ``col`` and ``seed`` (the index kernels of
``kernels/cpu/segments.py``, compiled for the CPU backend anyway), small beside the walks PyG asks for. node2vec
also needs each row of ``col`` sorted (its neighbour tests are binary searches): whether they are is checked, and
a sorted copy made where not, once per graph (``_SortedRows`` keeps the last graph's answer: ``Node2Vec`` walks
the same graph batch after batch).

Index dtypes other than int64 are converted to it (a copy of ``rowptr``, ``col``, ``seed`` and the output per call):
the kernel is compiled once, for int64, which is what PyG passes.
"""

from __future__ import annotations

import math
import numbers
import weakref
from typing import Optional, Tuple

import torch

from ..kernels.cpu import launch
from ..kernels.cpu.random_walk import random_walk as walk_kernel
from ..kernels.cpu.segments import first_decrease, index_extremes
from ..ops._checks import check_tensor

#: Walk steps below which the walks run on the calling thread alone: a step costs a few dependent loads (tens of
#: nanoseconds on a graph out of cache), and waking a second thread costs microseconds.
PARALLEL_MIN_STEPS = 4096
#: Chunks of walks per thread, claimed one by one (a thread whose walks wander through hubs takes fewer).
CHUNKS_PER_THREAD = 16

_INTEGRAL = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def random_walk(
    rowptr: torch.Tensor,
    col: torch.Tensor,
    seed: torch.Tensor,
    walk_length: int,
    p: float = 1.0,
    q: float = 1.0,
) -> torch.Tensor:
    """Samples a random walk of ``walk_length`` steps from each node of ``seed`` in the graph ``(rowptr, col)``:
    uniform over a node's out-edges, or node2vec's biased walk (`"node2vec: Scalable Feature Learning for
    Networks" <https://arxiv.org/abs/1607.00653>`_) when ``p`` or ``q`` is not 1.

    A walk at a node with no out-edge stays there (the rest of its row repeats the node), as in pyg-lib. With
    ``p``, ``q``: after its first (uniform) step, a walk that came from ``t`` to ``v`` takes the edge ``v -> x``
    with a weight of ``1 / p`` if ``x == t``, ``1`` if ``t -> x`` is an edge, and ``1 / q`` otherwise; an edge
    listed twice counts twice. pyg-lib itself runs only ``p == q == 1``.

    The random numbers come from torch's default generator (one draw per call: ``torch.manual_seed`` makes the
    walks reproducible), and the walks are the same on any number of threads. CUDA tensors are walked on the CPU
    (a copy there and back; the numbers still come from the CPU generator).

    Args:
        rowptr: CSR offsets, 1-D, ``num_nodes + 1`` entries: non-decreasing, from 0 to ``col.numel()``.
        col: the target of each edge, 1-D, sorted by source (node ``v``'s out-edges are
            ``col[rowptr[v]:rowptr[v + 1]]``), each in ``[0, num_nodes)``.
        seed: the start node of each walk, 1-D, each in ``[0, num_nodes)``.
        walk_length: the steps of each walk, ``>= 0``.
        p: node2vec's return parameter (a small ``p`` returns to the previous node more often), finite and > 0.
        q: node2vec's in-out parameter (a small ``q`` moves away, a large one stays near the previous node),
            finite and > 0.

    ``rowptr``, ``col`` and ``seed`` share one integral dtype (pyg-lib's rule) and one device.

    Returns:
        A ``[seed.numel(), walk_length + 1]`` tensor of ``rowptr``'s dtype and device: row ``i`` is the walk from
        ``seed[i]``, its first entry ``seed[i]`` itself.

    Raises:
        TypeError: when ``rowptr``, ``col`` or ``seed`` is not a tensor, their dtypes differ or are not integral,
            ``walk_length`` is not an int, or ``p`` or ``q`` is not a real number.
        ValueError: when a tensor is not 1-D, the tensors are on different devices, ``rowptr`` does not start at
            0, decreases or does not end at ``col.numel()``, ``walk_length`` is negative, or ``p`` or ``q`` is not
            finite and positive.
        IndexError: when an entry of ``col`` or ``seed`` is not a node (negative, or ``>= num_nodes``).

    Example:
        >>> rowptr = torch.tensor([0, 1, 2, 3, 3])  # 0 -> 1 -> 2 -> 0 (a cycle), and node 3 has no out-edge
        >>> col = torch.tensor([1, 2, 0])
        >>> random_walk(rowptr, col, torch.tensor([0, 2, 3]), walk_length=4)
        tensor([[0, 1, 2, 0, 1],
                [2, 0, 1, 2, 0],
                [3, 3, 3, 3, 3]])
        >>> torch.manual_seed(0)
        <torch._C.Generator object at ...>
        >>> rowptr = torch.tensor([0, 2, 4, 6])  # a triangle, both ways
        >>> col = torch.tensor([1, 2, 0, 2, 0, 1])
        >>> random_walk(rowptr, col, torch.tensor([0, 0]), walk_length=5, p=0.25, q=4.0).shape
        torch.Size([2, 6])
    """
    num_nodes = _check(rowptr, col, seed, walk_length, p, q)
    device = rowptr.device
    if device.type != "cpu":  # walked on the CPU, and moved back
        rowptr, col, seed = rowptr.cpu(), col.cpu(), seed.cpu()
    dtype = rowptr.dtype
    rowptr64 = _int64(rowptr)
    col64 = _int64(col)
    seed64 = _int64(seed)
    _check_values(rowptr64, col64, seed64, num_nodes)

    walks = seed64.numel()
    out = torch.empty((walks, int(walk_length) + 1), dtype=torch.int64)
    base = int(torch.randint(2**62, (1,)))  # drawn on every call, even an empty one: the generator moves alike
    if walks:
        uniform = p == 1 and q == 1
        sorted_col = col64 if uniform else _SORTED_ROWS.get(rowptr, col, rowptr64, col64)
        threads = torch.get_num_threads() if walks * walk_length >= PARALLEL_MIN_STEPS else 1
        chunks = min(walks, threads * CHUNKS_PER_THREAD) if threads > 1 else 1
        step = -(-walks // chunks)
        launch(
            walk_kernel,
            None,
            -(-walks // step),
            threads,
            rowptr64.numpy(),
            col64.numpy(),
            sorted_col.numpy(),
            seed64.numpy(),
            out.numpy(),
            step=step,
            base=base,
            p=float(p),
            q=float(q),
        )
    if dtype != torch.int64:
        out = out.to(dtype)
    return out if device.type == "cpu" else out.to(device)


def _check(rowptr, col, seed, walk_length, p, q) -> int:
    """The checks that read no values; returns ``num_nodes``."""
    for name, t in (("rowptr", rowptr), ("col", col), ("seed", seed)):
        check_tensor(t, f"random_walk: {name}", what="a tensor")
    for name, t in (("rowptr", rowptr), ("col", col), ("seed", seed)):
        if t.dtype not in _INTEGRAL:
            raise TypeError(f"random_walk: {name} must have an integral dtype, got {t.dtype}")
    if not (rowptr.dtype == col.dtype == seed.dtype):
        raise TypeError(
            f"random_walk: rowptr, col and seed must share one dtype, got {rowptr.dtype}, {col.dtype} and {seed.dtype}"
        )
    for name, t in (("rowptr", rowptr), ("col", col), ("seed", seed)):
        if t.dim() != 1:
            raise ValueError(f"random_walk: {name} must be 1-D, got shape {tuple(t.shape)}")
    if not (rowptr.device == col.device == seed.device):
        raise ValueError(
            f"random_walk: rowptr, col and seed must be on one device, got {rowptr.device}, {col.device} and "
            f"{seed.device}"
        )
    if rowptr.numel() == 0:
        raise ValueError("random_walk: rowptr must have num_nodes + 1 >= 1 entries, got none")
    if isinstance(walk_length, bool) or not isinstance(walk_length, numbers.Integral):
        raise TypeError(f"random_walk: walk_length must be an int, got {type(walk_length).__name__}")
    if walk_length < 0:
        raise ValueError(f"random_walk: walk_length must be >= 0, got {walk_length}")
    for name, value in (("p", p), ("q", q)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"random_walk: {name} must be a real number, got {type(value).__name__}")
        if not (math.isfinite(float(value)) and float(value) > 0):
            raise ValueError(f"random_walk: {name} must be finite and > 0, got {value}")
    return rowptr.numel() - 1


def _int64(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a C-contiguous int64 tensor, the kernel's one index type (a copy for another dtype or layout)."""
    if t.dtype != torch.int64:
        t = t.to(torch.int64)
    return t.contiguous()


def _check_values(rowptr: torch.Tensor, col: torch.Tensor, seed: torch.Tensor, num_nodes: int) -> None:
    """The checks that read the values (int64, contiguous CPU tensors)."""
    edges = col.numel()
    first, last = int(rowptr[0]), int(rowptr[-1])
    if first != 0:
        raise ValueError(f"random_walk: rowptr must start at 0, got {first}")
    if last != edges:
        raise ValueError(f"random_walk: rowptr must end at col.numel() = {edges}, got {last}")
    i = int(first_decrease(rowptr.numpy()))
    if i >= 0:
        raise ValueError(
            f"random_walk: rowptr must be non-decreasing, but rowptr[{i}] = {int(rowptr[i])} < "
            f"rowptr[{i - 1}] = {int(rowptr[i - 1])}"
        )
    for name, t in (("col", col), ("seed", seed)):
        if t.numel():
            low, high = (int(v) for v in index_extremes(t.numpy()))
            if low < 0 or high >= num_nodes:
                bad = low if low < 0 else high
                raise IndexError(f"random_walk: {name} holds {bad}, not a node of the graph's {num_nodes}")


class _SortedRows:
    """The last graph's ``_rows_sorted``, kept for the next call on the same tensors: ``Node2Vec`` walks the same
    ``(rowptr, col)`` batch after batch, and the check (a pass over ``col`` in torch, a sort where rows are not
    sorted) would cost about as much as a batch's walks on a large graph.

    The entry is the caller's tensors (weakly: it does not keep them alive) and their version counters, data
    pointers and sizes; an in-place write through torch bumps the version. A write that bypasses it (through a
    NumPy view, ``.data``) can leave a stale entry, which is still safe to read: ``rowptr`` and ``col`` are
    validated on every call, and the kept rows hold ``col.numel()`` nodes validated when they were made -- a
    stale entry can only bias a step, never read out of bounds."""

    def __init__(self) -> None:
        #: (key, weak references to rowptr and col, the sorted rows or None for col itself), or None; replaced
        #: whole, in one assignment, so that two threads calling at once never mix two graphs' parts
        self._entry: Optional[Tuple[tuple, Tuple[weakref.ref, weakref.ref], Optional[torch.Tensor]]] = None

    @staticmethod
    def _key_of(rowptr: torch.Tensor, col: torch.Tensor) -> Optional[tuple]:
        try:
            return tuple((t._version, t.data_ptr(), t.numel(), t.dtype, t.stride()) for t in (rowptr, col))
        except RuntimeError:  # an inference tensor has no version counter: not kept
            return None

    def get(self, rowptr: torch.Tensor, col: torch.Tensor, rowptr64: torch.Tensor, col64: torch.Tensor):
        key = self._key_of(rowptr, col)
        entry = self._entry
        if key is not None and entry is not None:
            kept, (rowptr_ref, col_ref), rows = entry
            if kept == key and rowptr_ref() is rowptr and col_ref() is col:
                return col64 if rows is None else rows
        rows = _rows_sorted(rowptr64, col64, rowptr64.numel() - 1)
        if key is not None:
            refs = (weakref.ref(rowptr, self._forget), weakref.ref(col, self._forget))
            self._entry = (key, refs, None if rows is col64 else rows)  # None: col's rows are sorted (not kept)
        return rows

    def _forget(self, dead: weakref.ref) -> None:
        """A weakref callback: drop the entry if the tensor freed was one of its own."""
        entry = self._entry
        if entry is not None and any(ref is dead for ref in entry[1]):
            self._entry = None


def _rows_sorted(rowptr: torch.Tensor, col: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``col`` with each node's out-edges sorted (``col`` itself when they are): node2vec's neighbour tests
    search it."""
    edges = col.numel()
    if edges < 2:
        return col
    descends = col[1:] < col[:-1]
    starts = rowptr[1:-1]
    starts = starts[(starts > 0) & (starts < edges)]
    descends[starts - 1] = False  # a row may start below where the previous one ended
    if not bool(descends.any()):
        return col
    row = torch.repeat_interleave(torch.arange(num_nodes), rowptr.diff())
    order = torch.sort(col, stable=True).indices
    order = order[torch.sort(row[order], stable=True).indices]
    return col[order]


_SORTED_ROWS = _SortedRows()
