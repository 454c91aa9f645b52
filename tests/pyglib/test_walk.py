"""``scatterx.pyg_lib.random_walk``, pyg-lib's random walk: every step an edge (or a stay at a node with no
out-edge), reproducible under ``torch.manual_seed`` and the same on 1 and 2 threads, uniform first steps, node2vec's
``p`` and ``q`` pulling the walks the right way, pyg-lib's dtype rules, and every bad input refused before the
generator moves."""

import doctest
import math

import pytest
import torch

from scatterx.pyg_lib import _walk
from scatterx.pyg_lib._walk import random_walk


def graph(num_nodes=60, num_edges=300, sinks=4, seed=0):
    """``(rowptr, col)`` of a random multigraph (rows sorted) whose last ``sinks`` nodes have no out-edge."""
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(num_nodes - sinks, (num_edges,), generator=g)
    col = torch.randint(num_nodes, (num_edges,), generator=g)
    order = (row * num_nodes + col).argsort()
    row, col = row[order], col[order]
    rowptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
    rowptr[1:] = torch.bincount(row, minlength=num_nodes).cumsum(0)
    return rowptr, col


def assert_walks(rowptr, col, seed, out):
    num_nodes = rowptr.numel() - 1
    assert out.shape[0] == seed.numel() and (out[:, 0] == seed).all()
    src, dst = out[:, :-1].reshape(-1).long(), out[:, 1:].reshape(-1).long()
    row = torch.repeat_interleave(torch.arange(num_nodes), rowptr.diff())
    edges = set((row * num_nodes + col.long()).tolist())
    sink = rowptr[src + 1] == rowptr[src]
    is_edge = torch.tensor([k in edges for k in (src * num_nodes + dst).tolist()], dtype=torch.bool)
    assert (is_edge | (sink & (src == dst))).all()


def chi_square_ok(counts, probabilities, z_max=4.5):
    """Pearson's statistic against ``probabilities``, its upper tail by Wilson-Hilferty (``z > 4.5``: p < ~3e-6)."""
    counts = counts.double()
    expected = counts.sum() * probabilities.double()
    stat = float(((counts - expected) ** 2 / expected).sum())
    k = counts.numel() - 1
    return ((stat / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k)) < z_max, stat


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (2.0, 0.5)])
def test_every_step_is_an_edge_or_a_stay(p, q):
    rowptr, col = graph()
    seed = torch.arange(60).repeat(3)
    assert_walks(rowptr, col, seed, random_walk(rowptr, col, seed, 15, p, q))


def test_a_walk_at_a_node_with_no_out_edge_stays_there():
    rowptr = torch.tensor([0, 1, 1])  # 0 -> 1, and 1 has no out-edge (pyg-lib's fake self-loop)
    col = torch.tensor([1])
    torch.testing.assert_close(random_walk(rowptr, col, torch.tensor([0, 1]), 3), torch.tensor([[0, 1, 1, 1], [1] * 4]))


def test_pyg_libs_cycle_test():
    """pyg-lib's own test: on an undirected 4-cycle every step moves by one around it."""
    rowptr = torch.tensor([0, 2, 4, 6, 8])
    col = torch.tensor([1, 3, 0, 2, 1, 3, 0, 2])
    out = random_walk(rowptr, col, torch.arange(4), 5)
    assert out.shape == (4, 6) and (out[:, 0] == torch.arange(4)).all()
    dist = (out[:, 1:] - out[:, :-1]).abs()
    assert ((dist == 1) | (dist == 3)).all()


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.5, 2.0)])
def test_reproducible_under_manual_seed_and_the_same_on_one_and_two_threads(p, q):
    rowptr, col = graph(seed=1)
    seed = torch.arange(60).repeat(40)  # 2400 walks x 10 steps: over PARALLEL_MIN_STEPS, so 2 threads run
    assert seed.numel() * 10 >= _walk.PARALLEL_MIN_STEPS
    before = torch.get_num_threads()
    try:
        runs = []
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            torch.manual_seed(7)
            runs.append(random_walk(rowptr, col, seed, 10, p, q))
        again = random_walk(rowptr, col, seed, 10, p, q)  # the generator moved on: other walks
    finally:
        torch.set_num_threads(before)
    torch.testing.assert_close(runs[0], runs[1])
    torch.testing.assert_close(runs[0], runs[2])
    assert not torch.equal(runs[0], again)


def test_first_steps_are_uniform():
    """From a node with 50 out-edges, 50 000 walks: the first steps fit the uniform distribution."""
    rowptr = torch.tensor([0] + [50] * 51)
    col = torch.arange(1, 51)
    torch.manual_seed(0)
    out = random_walk(rowptr, col, torch.zeros(50_000, dtype=torch.int64), 1)
    ok, stat = chi_square_ok(torch.bincount(out[:, 1], minlength=51)[1:], torch.full((50,), 1 / 50))
    assert ok, stat


def two_step_frequencies(p, q, walks=20_000):
    """On a star of triangles: how often the second step returns (to the seed), moves to a neighbour of the seed,
    or moves further out."""
    # 0 -> 1; 1 -> {0, 2, 3}; 0 -> 2 (so 2 is a neighbour of 0), 3 is not; 2, 3 -> 1
    rowptr = torch.tensor([0, 2, 5, 6, 7])
    col = torch.tensor([1, 2, 0, 2, 3, 1, 1])
    torch.manual_seed(3)
    out = random_walk(rowptr, col, torch.zeros(walks, dtype=torch.int64), 2, p, q)
    second = out[out[:, 1] == 1, 2]
    n = second.numel()
    return (second == 0).sum() / n, (second == 2).sum() / n, (second == 3).sum() / n


def test_small_p_returns_more_and_small_q_moves_out_more():
    back_low_p, _, _ = two_step_frequencies(0.2, 1.0)
    back, near, out = two_step_frequencies(1.0, 1.0)
    back_high_p, _, _ = two_step_frequencies(5.0, 1.0)
    assert back_low_p > back + 0.2 and back > back_high_p + 0.15
    assert abs(back - 1 / 3) < 0.03 and abs(near - 1 / 3) < 0.03 and abs(out - 1 / 3) < 0.03
    _, near_low_q, out_low_q = two_step_frequencies(1.0, 0.2)
    _, near_high_q, out_high_q = two_step_frequencies(1.0, 5.0)
    assert out_low_q > out + 0.2 and out_high_q < out - 0.15
    assert near_high_q > near_low_q


def test_node2vec_does_not_depend_on_the_order_within_rows():
    rowptr, col = graph(seed=2)
    shuffled = col.clone()
    for v in range(rowptr.numel() - 1):
        a, b = int(rowptr[v]), int(rowptr[v + 1])
        shuffled[a:b] = col[a:b].flip(0)
    seed = torch.arange(60)
    torch.manual_seed(4)
    expected = random_walk(rowptr, col, seed, 8, 0.5, 2.0)
    torch.manual_seed(4)
    torch.testing.assert_close(random_walk(rowptr, shuffled, seed, 8, 0.5, 2.0), expected)


def test_the_kept_rows_follow_in_place_writes_and_do_not_keep_the_graph_alive():
    """node2vec keeps the last graph's sorted rows (``_walk._SortedRows``): a write into ``col`` is seen, and the
    entry goes with the graph."""
    rowptr, col = graph(seed=2)
    seed = torch.arange(60)
    random_walk(rowptr, col, seed, 8, 0.5, 2.0)  # kept: col's rows are sorted
    for v in range(rowptr.numel() - 1):  # in place: col's rows now descend
        a, b = int(rowptr[v]), int(rowptr[v + 1])
        col[a:b] = col[a:b].flip(0).clone()
    torch.manual_seed(4)
    got = random_walk(rowptr, col, seed, 8, 0.5, 2.0)
    torch.manual_seed(4)
    torch.testing.assert_close(got, random_walk(rowptr.clone(), col.clone(), seed, 8, 0.5, 2.0))
    random_walk(rowptr, col, seed, 8, 0.5, 2.0)
    assert _walk._SORTED_ROWS._entry is not None
    del rowptr, col
    assert _walk._SORTED_ROWS._entry is None


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_other_index_dtypes_walk_alike_and_keep_their_dtype(dtype):
    rowptr, col = graph(num_nodes=30, num_edges=100, seed=5)
    seed = torch.arange(30)
    torch.manual_seed(9)
    expected = random_walk(rowptr, col, seed, 6)
    torch.manual_seed(9)
    got = random_walk(rowptr.to(dtype), col.to(dtype), seed.to(dtype), 6)
    assert got.dtype == dtype
    torch.testing.assert_close(got.long(), expected)


def test_no_walks_and_no_steps():
    rowptr, col = graph(num_nodes=10, num_edges=20)
    assert random_walk(rowptr, col, torch.empty(0, dtype=torch.int64), 4).shape == (0, 5)
    torch.testing.assert_close(random_walk(rowptr, col, torch.tensor([3, 1]), 0), torch.tensor([[3], [1]]))
    empty = random_walk(torch.zeros(1, dtype=torch.int64), torch.empty(0, dtype=torch.int64), torch.empty(0).long(), 2)
    assert empty.shape == (0, 3)


def test_strided_inputs():
    rowptr, col = graph(seed=6)
    seed = torch.arange(60).repeat_interleave(2)[::2]  # every node, strided
    torch.manual_seed(1)
    expected = random_walk(rowptr, col, seed.contiguous(), 5)
    torch.manual_seed(1)
    col_strided = torch.stack([col, col], 1)[:, 0]
    torch.testing.assert_close(random_walk(rowptr, col_strided, seed, 5), expected)


GOOD = {"rowptr": torch.tensor([0, 2, 3, 3]), "col": torch.tensor([1, 2, 0]), "seed": torch.tensor([0, 1])}

BAD = [
    ({"rowptr": [0, 2, 3, 3]}, TypeError, "rowptr must be a tensor"),
    ({"col": torch.tensor([1.0, 2.0, 0.0])}, TypeError, "col must have an integral dtype"),
    ({"seed": torch.tensor([True, False])}, TypeError, "seed must have an integral dtype"),
    ({"seed": torch.tensor([0, 1], dtype=torch.int32)}, TypeError, "share one dtype"),
    ({"col": torch.tensor([[1, 2, 0]])}, ValueError, "col must be 1-D"),
    ({"rowptr": torch.empty(0, dtype=torch.int64)}, ValueError, "rowptr must have"),
    ({"rowptr": torch.tensor([1, 2, 3, 3])}, ValueError, "rowptr must start at 0"),
    ({"rowptr": torch.tensor([0, 2, 3, 4])}, ValueError, "end at col.numel"),
    ({"rowptr": torch.tensor([0, 2, 1, 3])}, ValueError, "non-decreasing"),
    ({"col": torch.tensor([1, 3, 0])}, IndexError, "col holds 3"),
    ({"col": torch.tensor([1, -1, 0])}, IndexError, "col holds -1"),
    ({"seed": torch.tensor([0, 5])}, IndexError, "seed holds 5"),
    ({"walk_length": -1}, ValueError, "walk_length must be >= 0"),
    ({"walk_length": 2.0}, TypeError, "walk_length must be an int"),
    ({"p": 0.0}, ValueError, "p must be finite and > 0"),
    ({"q": -1.0}, ValueError, "q must be finite and > 0"),
    ({"q": float("inf")}, ValueError, "q must be finite"),
    ({"p": float("nan")}, ValueError, "p must be finite"),
    ({"p": "1"}, TypeError, "p must be a real number"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_input_raises_before_the_generator_moves(change, error, message):
    args = {**GOOD, "walk_length": 3, "p": 1.0, "q": 1.0, **change}
    state = torch.get_rng_state()
    with pytest.raises(error, match=message):
        random_walk(**args)
    assert torch.equal(torch.get_rng_state(), state)


def test_the_docstring_example_runs():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(random_walk, "random_walk", globs={"torch": torch, "random_walk": random_walk}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_cuda_tensors_are_walked_on_the_cpu_and_moved_back():
    rowptr, col = graph(seed=8)
    seed = torch.arange(60)
    torch.manual_seed(2)
    expected = random_walk(rowptr, col, seed, 5)
    torch.manual_seed(2)
    got = random_walk(rowptr.cuda(), col.cuda(), seed.cuda(), 5)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), expected)
