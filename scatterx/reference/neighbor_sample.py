"""Reference for the neighbour sampler (``scatterx.pyg_lib.sampler.neighbor_sample``): one node at a time,
with the kernels' random sequences."""

from __future__ import annotations

import torch

__all__ = ["neighbor_sample"]

_M64 = (1 << 64) - 1


def _splitmix(x: int) -> int:
    x &= _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _stream_bits(key: int, k: int) -> int:
    return _splitmix(key + (k + 1) * 0x9E3779B97F4A7C15)


def _substream(key: int, number: int) -> int:
    return _splitmix(key ^ _splitmix(number))


def _stream_below(bits: int, n: int) -> int:
    """Uniform in [0, n): the high word of ``bits * n`` below 2^32, ``bits % n`` above."""
    return (bits * n) >> 64 if n < (1 << 32) else bits % n


def _stream_unit(bits: int) -> float:
    return (bits >> 11) * (1.0 / 9007199254740992.0)


def neighbor_sample(colptr, row, seed, num_neighbors, replace=False, floyd_max=64):
    """Uniform neighbour sampling on a CSC graph, one node at a time, with the random sequences of the kernels:
    torch's generator gives one base per call; the draws of frontier node i in a hop have the key
    ``substream(substream(base, hop), i)``, and draw j is splitmix64 of ``key + (j + 1) * golden``. Returns
    (neighbour local, frontier local, edge position, node ids, nodes per hop, edges per hop), as
    ``scatterx.pyg_lib.sampler.neighbor_sample(..., csc=True)``."""
    colptr, row, seed = colptr.tolist(), row.tolist(), seed.tolist()
    base = int(torch.randint(0, 1 << 62, (1,)).item())
    nodes = list(seed)
    local = {v: i for i, v in enumerate(seed)}  # a seed given twice maps to its last place
    rows, cols, edges, nodes_per_hop, edges_per_hop = [], [], [], [len(seed)], []
    begin = 0
    for hop, count in enumerate(num_neighbors):
        hop_key = _substream(base, hop)
        end = len(nodes)
        drawn_this_hop = 0
        for i in range(begin, end):
            a, b = colptr[nodes[i]], colptr[nodes[i] + 1]
            pop = b - a
            k = pop if count < 0 or (not replace and count >= pop) else (count if pop > 0 else 0)
            h = _substream(hop_key, i - begin)

            def below(j, m, h=h):
                return _stream_below(_stream_bits(h, j), m)

            if k == pop and (count < 0 or not replace):
                picks = list(range(pop))
            elif replace:
                picks = [below(j, pop) for j in range(k)]
            elif k <= floyd_max:
                picks = []
                for j in range(k):
                    t = below(j, pop - k + j + 1)
                    picks.append(pop - k + j if t in picks else t)
            else:
                chosen, need = [], k
                for e in range(pop):
                    if need and _stream_unit(_stream_bits(h, e)) * (pop - e) < need:
                        chosen.append(e)
                        need -= 1
                picks = chosen
            for p in picks:
                u = row[a + p]
                if u not in local:
                    local[u] = len(nodes)
                    nodes.append(u)
                rows.append(local[u])
                cols.append(i)
                edges.append(a + p)
            drawn_this_hop += len(picks)
        begin = end
        nodes_per_hop.append(len(nodes) - end)
        edges_per_hop.append(drawn_this_hop)
    as_t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return as_t(rows), as_t(cols), as_t(edges), as_t(nodes), nodes_per_hop, edges_per_hop
