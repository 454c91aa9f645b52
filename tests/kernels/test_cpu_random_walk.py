"""The random-walk kernel (``kernels/cpu/random_walk.py``) called directly: walks follow edges (or stay at a node
with no out-edge), do not depend on the threads nor on the chunks of walks, and draw their steps from the right
distributions -- uniform, and node2vec's weights, through the rejection rounds and through the exact fallback --
checked by chi-square tests at fixed keys."""

import math

import numpy as np
import pytest

from scatterx.kernels.cpu import launch
from scatterx.kernels.cpu.random_walk import TRIALS, random_walk


def csr(num_nodes, edges):
    """``(rowptr, col)`` int64, each row sorted, from ``(source, target)`` pairs (duplicates kept)."""
    edges = sorted(edges)
    rowptr = np.zeros(num_nodes + 1, np.int64)
    for s, _ in edges:
        rowptr[s + 1] += 1
    return np.cumsum(rowptr), np.array([t for _, t in edges], np.int64)


def walk(rowptr, col, seed, length, p=1.0, q=1.0, base=12345, threads=1, step=None, sorted_col=None):
    seed = np.asarray(seed, np.int64)
    out = np.full((seed.size, length + 1), -7, np.int64)
    step = max(1, seed.size) if step is None else step
    items = max(1, -(-seed.size // step))
    sorted_col = col if sorted_col is None else sorted_col
    launch(random_walk, None, items, threads, rowptr, col, sorted_col, seed, out, step=step, base=base, p=p, q=q)
    return out


def chi_square_ok(counts, probabilities, z_max=4.5):
    """Whether observed ``counts`` fit ``probabilities`` (Pearson's statistic, its upper tail by Wilson-Hilferty's
    normal approximation: ``z > 4.5`` is a p-value below ~3e-6)."""
    counts = np.asarray(counts, float)
    expected = counts.sum() * np.asarray(probabilities, float)
    assert (expected > 5).all(), "too few walks for the test"
    stat = float(((counts - expected) ** 2 / expected).sum())
    k = len(counts) - 1
    z = ((stat / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return z < z_max, stat


def random_graph(seed=0, num_nodes=40, num_edges=160):
    rng = np.random.default_rng(seed)
    sources = rng.integers(0, num_nodes - 5, num_edges)  # the last 5 nodes have no out-edge
    targets = rng.integers(0, num_nodes, num_edges)
    edges = list(zip(sources.tolist(), targets.tolist())) + [(3, 3), (4, 7), (4, 7)]  # a self-loop, a multi-edge
    return csr(num_nodes, edges)


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25), (0.5, 1.0), (1.0, 1e-3)])
def test_walks_follow_edges_and_do_not_depend_on_threads_or_chunks(p, q):
    rowptr, col = random_graph()
    n = rowptr.size - 1
    seed = np.arange(300) % n
    first = walk(rowptr, col, seed, 12, p, q)
    for threads, step in [(1, 1), (2, 1), (2, 7), (2, 300)]:
        np.testing.assert_array_equal(walk(rowptr, col, seed, 12, p, q, threads=threads, step=step), first)
    assert (first[:, 0] == seed).all()
    edges = {(int(s), int(t)) for s in range(n) for t in col[rowptr[s] : rowptr[s + 1]]}
    for row in first:
        for a, b in zip(row[:-1], row[1:]):
            assert (int(a), int(b)) in edges or (rowptr[a] == rowptr[a + 1] and a == b)
    assert (first[seed >= n - 5] == seed[seed >= n - 5, None]).all()  # a walk from a sink stays there
    assert not (walk(rowptr, col, seed, 12, p, q, base=777) == first).all()  # another key, other walks


def test_uniform_steps_are_uniform_over_a_hub():
    degree = 500
    rowptr, col = csr(degree + 1, [(0, t) for t in range(1, degree + 1)] + [(t, 0) for t in range(1, degree + 1)])
    out = walk(rowptr, col, np.zeros(100_000, np.int64), 1, base=2024)
    ok, stat = chi_square_ok(np.bincount(out[:, 1], minlength=degree + 1)[1:], np.full(degree, 1 / degree))
    assert ok, stat


# node 0 -> {1, 2, 3}; node 1 -> {0, 2, 3, 4, 4, 5, 6}; node 6 -> 0 (not 0 -> 6: 6 is no neighbour of 0)
N2V_EDGES = [(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (1, 3), (1, 4), (1, 4), (1, 5), (1, 6), (6, 0)]


def node2vec_from_1(p, q):
    """The exact distribution of the step from 1 of a walk that came from 0, over nodes 0, 2, 3, 4, 5, 6."""
    weights = np.array([1 / p, 1, 1, 2 / q, 1 / q, 1 / q])
    return weights / weights.sum()


# 1 / p > max(1, 1 / q): returns folded out of the envelope (0.25, 1), (0.3, 3), (0.2, 0.5); else inside it
@pytest.mark.parametrize(
    ("p", "q"), [(1.0, 1.0), (0.25, 1.0), (4.0, 1.0), (1.0, 0.25), (1.0, 4.0), (0.3, 3.0), (0.2, 0.5), (2.0, 0.5)]
)
def test_node2vec_steps_follow_the_weights(p, q):
    rowptr, col = csr(7, N2V_EDGES)
    out = walk(rowptr, col, np.zeros(60_000, np.int64), 2, p, q, base=99)
    came = out[out[:, 1] == 1, 2]
    counts = np.bincount(came, minlength=7)[[0, 2, 3, 4, 5, 6]]
    ok, stat = chi_square_ok(counts, node2vec_from_1(p, q))
    assert ok, (stat, counts)


# (edges, p, q, the nodes a walk 0 -> 1 may go to next, their node2vec weights): q tiny and every non-returning
# edge of 1 leads to a neighbour of 0, so rounds accept with probability ~q and nearly every step falls back to
# the exact draw -- first with returns inside the envelope, then (p tinier still, 1 / p > 1 / q) folded out of it,
# 1 having no edge back to 0 and a double edge to 2
FALLBACKS = [
    ([(0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (1, 3), (2, 0), (3, 0)], 0.5, 1e-6, [0, 2, 3], [2, 1, 1]),
    ([(0, 1), (0, 2), (0, 3), (1, 2), (1, 2), (1, 3), (2, 0), (3, 0)], 1e-7, 1e-6, [2, 3], [2, 1]),
]


@pytest.mark.parametrize(("edges", "p", "q", "nodes", "weights"), FALLBACKS, ids=["in-envelope", "folded"])
def test_a_step_that_keeps_being_rejected_is_drawn_exactly(edges, p, q, nodes, weights):
    assert TRIALS < 1000
    rowptr, col = csr(4, edges)
    out = walk(rowptr, col, np.zeros(30_000, np.int64), 2, p, q, base=5)
    came = out[out[:, 1] == 1, 2]
    weights = np.array(weights, float)
    ok, stat = chi_square_ok(np.bincount(came, minlength=4)[nodes], weights / weights.sum())
    assert ok, stat
    assert np.isin(came, nodes).all()


def test_node2vec_reads_the_sorted_rows():
    """Given a row order of ``col`` and its sorted rows, node2vec's walks are those of the sorted graph."""
    rowptr, col = random_graph(seed=3)
    shuffled = col.copy()
    rng = np.random.default_rng(0)
    for v in range(rowptr.size - 1):
        rng.shuffle(shuffled[rowptr[v] : rowptr[v + 1]])
    seed = np.arange(100) % (rowptr.size - 1)
    np.testing.assert_array_equal(
        walk(rowptr, shuffled, seed, 8, 0.5, 2.0, sorted_col=col), walk(rowptr, col, seed, 8, 0.5, 2.0)
    )


def test_no_walk_and_no_step():
    rowptr, col = csr(3, [(0, 1), (1, 2), (2, 0)])
    assert walk(rowptr, col, [], 5).shape == (0, 6)
    np.testing.assert_array_equal(walk(rowptr, col, [2, 0], 0), [[2], [0]])
