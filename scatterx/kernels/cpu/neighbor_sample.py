"""Numba CPU kernels of neighbour sampling (the samplers of ``scatterx.pyg_lib``).

A hop of sampling from a *frontier* (the nodes reached by the previous hop) on a graph in CSC form (``colptr``
over the frontier's node type, ``row`` the neighbour of each edge) runs in three steps:

- ``ranges``: per frontier node, the range of its edges that may be drawn (all of them, or, with times, those not
  later than its seed's time; with the "last" strategy only the latest ``count``) and how many are drawn: the
  whole range when ``count`` is -1 or, without replacement, not below its size, else ``count``. Parallel over
  chunks of frontier nodes.
- ``draw``: per frontier node, the edges drawn, written at the node's offset (a prefix sum of the counts): without
  replacement by Floyd's algorithm (or selection sampling for large counts), with replacement uniformly, with
  weights by weighted reservoir keys (without replacement) or the inverse of the cumulative weights (with).
  Parallel over chunks of frontier nodes.
- ``relabel``: walks the drawn edges in order and gives each neighbour not seen before the next local index, through
  an open-addressing hash table of node keys (``batch << 32 | node`` in disjoint mode, else the node). One
  thread: the order of first discovery is the order of the output, as in pyg-lib.

Random numbers are counter based (``_random.py``): each frontier node's draws depend only on ``(base, hop and
edge type, node position, draw number)``, where ``base`` comes from torch's generator once per call. The draws
of a node thus do not depend on which thread runs it: a batch is the same on any number of threads, and
``torch.manual_seed`` reproduces it.

``induced`` lists every edge between sampled nodes (sampling with ``directed=False``).
Everything here trusts its inputs (validated by ``scatterx.pyg_lib``); arrays are int64 (times int64, weights
float64). Work items are chunks of ``step`` frontier nodes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import Kernel, claim
from ._random import GOLDEN, below, substream, unit
from ._random import draw as bits

_EMPTY = np.int64(-1)
#: Floyd's algorithm checks each draw against the earlier ones: up to this count; above, selection sampling
FLOYD_MAX = 64

NO_TIME, NODE_TIME, EDGE_TIME = 0, 1, 2
#: what a kernel adds to its return per node or edge found out of range (its other counts stay below it)
BROKEN = 1 << 32


@njit(cache=True, nogil=True, error_model="numpy")
def ranges_kernel(
    counter, colptr, row, frontier, batch, count, replace, temporal, node_time, edge_time, seed_time, last, lo, n, step
):
    """Per frontier node i: ``lo[2i]`` the first edge that may be drawn, ``lo[2i + 1]`` how many may (the
    population), ``n[i]`` how many are drawn.

    ``temporal``: NO_TIME, NODE_TIME (``node_time[row[e]]``) or EDGE_TIME (``edge_time[e]``), compared with
    ``seed_time[batch[i]]``; ``last``: keep the latest ``count`` edges only. Returns the number of frontier
    nodes whose allowed edges are not sorted by time (their first is later than their last), plus ``BROKEN`` for
    each node whose offsets or neighbours are out of range: the graph's arrays are checked once per tensor, and a
    write torch does not see (through ``.numpy()``) could have changed them since; such a node draws nothing."""
    m = frontier.shape[0]
    nodes = colptr.shape[0] - 1
    edges = row.shape[0]
    times = node_time.shape[0]
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        for i in range(c * step, min(m, c * step + step)):
            v = frontier[i]
            lo[2 * i] = 0
            lo[2 * i + 1] = 0
            n[i] = 0
            if v < 0 or v >= nodes:
                nbad += BROKEN
                continue
            a = colptr[v]
            b = colptr[v + 1]
            if a < 0 or b < a or b > edges:
                nbad += BROKEN
                continue
            if temporal != NO_TIME and b > a:
                if temporal == NODE_TIME:
                    first_row = row[a]
                    final_row = row[b - 1]
                    if first_row < 0 or first_row >= times or final_row < 0 or final_row >= times:
                        nbad += BROKEN
                        continue
                t = seed_time[batch[i]]
                x, y = a, b
                while x < y:  # the first edge later than t
                    mid = (x + y) >> 1
                    r = row[mid]
                    if temporal == NODE_TIME and (r < 0 or r >= times):
                        break
                    tm = node_time[r] if temporal == NODE_TIME else edge_time[mid]
                    if tm <= t:
                        x = mid + 1
                    else:
                        y = mid
                if x < y:  # a neighbour out of range
                    nbad += BROKEN
                    continue
                b = x
                if last and count >= 0 and b - count > a:
                    a = b - count
                if b - a > 1:
                    first = node_time[row[a]] if temporal == NODE_TIME else edge_time[a]
                    final = node_time[row[b - 1]] if temporal == NODE_TIME else edge_time[b - 1]
                    nbad += first > final
            pop = b - a
            lo[2 * i] = a
            lo[2 * i + 1] = pop
            if count < 0 or (not replace and count >= pop):
                n[i] = pop
            else:
                n[i] = count if pop > 0 else 0
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def draw_kernel(counter, lo, offsets, replace, every, weight, weighted, base, sequence, row, out, nbr, step):
    """Per frontier node i: ``out[offsets[i]:offsets[i+1]]`` = the edges drawn from ``lo[2i] .. lo[2i] +
    lo[2i+1]`` (the population), and ``nbr`` their neighbours ``row[out]`` (read here, in parallel, rather than
    in the one-thread relabelling). ``every``: the fan-out is -1, every edge once (with replacement too);
    ``weighted``: draw by ``weight`` (float64, per edge). Returns the number of nodes that were to draw with
    replacement by weights that are all 0 (their draws are left at their first edge). The draws of frontier node
    i are the sequence ``substream(substream(base, sequence), i)`` (``_random.py``): ``sequence`` numbers the
    (hop, edge type) of the launch."""
    m = offsets.shape[0] - 1
    key = substream(base, sequence)
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        for i in range(c * step, min(m, c * step + step)):
            o = offsets[i]
            k = offsets[i + 1] - o
            if k == 0:
                continue
            a = lo[2 * i]
            pop = lo[2 * i + 1]
            h = substream(key, i)
            if k == pop and (every or not replace):  # every edge
                for j in range(k):
                    out[o + j] = a + j
            elif weighted and replace:  # the inverse of the cumulative weights, by bisection
                # (weights relative to the largest: a sum of weights near 1e308 would overflow to inf)
                scale = _largest(weight, a, pop)
                cumulative = np.empty(pop, np.float64)
                total = 0.0
                for j in range(pop):
                    total += weight[a + j] / scale
                    cumulative[j] = total
                if not total > 0:
                    nbad += 1
                    for j in range(k):
                        out[o + j] = a
                for j in range(k if total > 0 else 0):
                    target = unit(bits(h, j)) * total
                    x, y = 0, pop - 1
                    while x < y:  # the first place whose cumulative weight exceeds the target
                        mid = (x + y) >> 1
                        if cumulative[mid] > target:
                            y = mid
                        else:
                            x = mid + 1
                    while weight[a + x] <= 0 and x > 0:  # (rounding at the top: the last positive weight)
                        x -= 1
                    out[o + j] = a + x
            elif weighted:  # the k largest keys log(u) / w (weighted sampling without replacement)
                # (weights relative to the largest, so that a sum of them cannot overflow)
                scale = _largest(weight, a, pop)
                keys = np.empty(pop, np.float64)
                overflow = False
                for j in range(pop):
                    w = weight[a + j] / scale
                    keys[j] = np.log(unit(bits(h, j))) / w if w > 0 else -np.inf
                    overflow |= w > 0 and keys[j] == -np.inf
                if overflow:  # a w so small against the largest (1e-308) that log(u) / w is -inf, tied with the
                    # weights of 0: the same order from -(log(-log(u)) - log(w)), finite for every w > 0 (two logs
                    # an edge, so only here)
                    for j in range(pop):
                        w = weight[a + j]
                        keys[j] = np.log(w) - np.log(-np.log(unit(bits(h, j)))) if w > 0 else -np.inf
                order = np.argsort(-keys, kind="mergesort")
                for j in range(k):
                    out[o + j] = a + order[j]
            elif replace:
                for j in range(k):
                    out[o + j] = a + below(bits(h, j), pop)
            elif k <= FLOYD_MAX:  # Floyd: each draw t from [0, top], or top itself if t was drawn already
                for j in range(k):
                    top = pop - k + j
                    t = below(bits(h, j), top + 1)
                    for q in range(j):
                        if out[o + q] == a + t:
                            t = top
                            break
                    out[o + j] = a + t
            else:  # selection sampling: each edge in turn, with the odds of the places left
                need = k
                j = 0
                for e in range(pop):
                    if unit(bits(h, e)) * (pop - e) < need:
                        out[o + j] = a + e
                        j += 1
                        need -= 1
                        if need == 0:
                            break
            for j in range(o, o + k):
                nbr[j] = row[out[j]]
    return nbad


@njit(inline="always", cache=True)
def _slot(key, shift):
    return np.int64((np.uint64(key) * GOLDEN) >> np.uint64(shift))


# The hash tables below are one int64 array of (key, value) pairs -- ``table[2s]`` the key of slot s (-1: empty),
# ``table[2s + 1]`` its value -- so that a probe reads one cache line; ``shift`` is 64 - log2(slots).


@njit(cache=True, nogil=True, error_model="numpy")
def insert_kernel(keys, table, shift):
    """Puts ``keys[i] -> i`` into the hash table, a later equal key overwriting an earlier one's value (a seed
    given twice maps to its last place)."""
    mask = table.shape[0] // 2 - 1
    for i in range(keys.shape[0]):
        key = keys[i]
        s = _slot(key, shift)
        while True:
            held = table[2 * s]
            if held == _EMPTY or held == key:  # noqa: SIM109 (a tuple test does not compile to two compares)
                table[2 * s] = key
                table[2 * s + 1] = i
                break
            s = (s + 1) & mask
    return 0


@njit(cache=True, nogil=True, error_model="numpy")
def relabel_kernel(nbr, offsets, batch, num_nodes, limit, table, shift, nodes, count, col, status):
    """Walks the drawn edges in order: ``col[e]`` = the local index of the neighbour ``nbr[e]`` of frontier node
    i (batch ``batch[i]``), a new one -- appended to ``nodes`` as its key -- if it was not seen. ``num_nodes``: 0
    outside disjoint mode (the key is the node), else the key is ``batch * num_nodes + node`` (``num_nodes`` =
    2^32: ``batch << 32 | node``). Returns the
    number of nodes after the walk (``count`` before). A neighbour outside ``[0, limit)`` (a graph changed since it
    was checked) is counted in ``status[0]`` and not relabelled."""
    mask = table.shape[0] // 2 - 1
    m = offsets.shape[0] - 1
    for i in range(m):
        b = batch[i] if num_nodes > 0 else 0
        for e in range(offsets[i], offsets[i + 1]):
            u = nbr[e]
            if u < 0 or u >= limit:
                status[0] += 1
                col[e] = 0
                continue
            key = b * num_nodes + u
            s = _slot(key, shift)
            while True:
                held = table[2 * s]
                if held == key:
                    col[e] = table[2 * s + 1]
                    break
                if held == _EMPTY:
                    table[2 * s] = key
                    table[2 * s + 1] = count
                    nodes[count] = key
                    col[e] = count
                    count += 1
                    break
                s = (s + 1) & mask
    return count


@njit(cache=True, nogil=True, error_model="numpy")
def induced_kernel(colptr, row, nodes, count, table, shift, fill, out_row, out_col, out_edge, status):
    """Every edge between sampled nodes, grouped by target in local order: with ``fill`` 0 only counted (the
    count is returned), else written to ``out_row`` (local source), ``out_col`` (local target), ``out_edge``.
    ``nodes``/``count``: the targets' keys; ``table``: the sources' hash table. Offsets out of range (a graph
    changed since it was checked) are counted in ``status[0]``."""
    mask = table.shape[0] // 2 - 1
    k = 0
    for j in range(count):
        v = nodes[j]
        if v < 0 or v + 1 >= colptr.shape[0] or colptr[v] < 0 or colptr[v + 1] > row.shape[0]:
            status[0] += 1
            continue
        for e in range(colptr[v], colptr[v + 1]):
            key = row[e]
            s = _slot(key, shift)
            while True:
                held = table[2 * s]
                if held == key:
                    if fill:
                        out_row[k] = table[2 * s + 1]
                        out_col[k] = j
                        out_edge[k] = e
                    k += 1
                    break
                if held == _EMPTY:
                    break
                s = (s + 1) & mask
    return k


ranges = Kernel(ranges_kernel)
draw = Kernel(draw_kernel)
insert = Kernel(insert_kernel)
relabel = Kernel(relabel_kernel)
induced = Kernel(induced_kernel)


@njit(cache=True, nogil=True, error_model="numpy")
def _largest(weight, a, pop):
    """The largest of ``weight[a : a + pop]``, or 1.0 where none is positive (the weights are finite and >= 0)."""
    top = 0.0
    for j in range(pop):
        top = max(top, weight[a + j])
    return top if top > 0 else 1.0
