"""The neighbour-sampling kernels (``kernels/cpu/neighbor_sample.py``), through the sampler, against the plain
reference (``reference.neighbor_sample``) that draws from the same random streams: the sampled nodes, edges and
their order must be identical, on one and two threads, with the frontier split into small work items."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx import reference
from scatterx.kernels.cpu import neighbor_sample as kernels
from scatterx.pyg_lib import _engine
from scatterx.pyg_lib.sampler import neighbor_sample


def _graph(degrees, g):
    colptr = torch.tensor([0] + degrees).cumsum(0)
    row = torch.randint(0, len(degrees), (int(colptr[-1]),), generator=g)
    return colptr, row


def _both(colptr, row, seed, counts, replace, threads, step, monkeypatch, rng_seed=0):
    monkeypatch.setattr(_engine, "STEP", step)
    monkeypatch.setattr(_engine, "PARALLEL_MIN_NODES", 0)  # small inputs on several threads, too
    monkeypatch.setattr(_engine, "PARALLEL_MIN_DRAWS", 0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(rng_seed)
        got = neighbor_sample(colptr, row, seed, counts, csc=True, replace=replace)
    finally:
        torch.set_num_threads(before)
    torch.manual_seed(rng_seed)
    want = reference.neighbor_sample(colptr, row, seed, counts, replace=replace)
    return got, want


def _assert_same(got, want):
    row, col, node, edge, nodes_per_hop, edges_per_hop = got
    w_row, w_col, w_edge, w_node, w_nodes_per_hop, w_edges_per_hop = want
    assert torch.equal(node, w_node)
    assert torch.equal(row, w_row) and torch.equal(col, w_col) and torch.equal(edge, w_edge)
    assert nodes_per_hop == w_nodes_per_hop and edges_per_hop == w_edges_per_hop


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=30),
    st.lists(st.integers(-1, 8), min_size=1, max_size=3),
    st.booleans(),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 3, 64]),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(degrees, counts, replace, threads, step, seed):
    g = torch.Generator().manual_seed(seed)
    colptr, row = _graph(degrees, g)
    seeds = torch.randint(0, len(degrees), (int(torch.randint(1, 6, (1,), generator=g)),), generator=g)
    with pytest.MonkeyPatch.context() as mp:
        got, want = _both(colptr, row, seeds, counts, replace, threads, step, mp, rng_seed=seed)
    _assert_same(got, want)


@pytest.mark.parametrize("replace", [False, True])
def test_large_fan_outs_take_selection_sampling_and_match(replace, monkeypatch):
    # fan-outs above Floyd's limit on hubs, 300 seeds split over two threads in chunks of 7
    g = torch.Generator().manual_seed(1)
    degrees = [int(d) for d in torch.randint(0, 200, (400,), generator=g)]
    colptr, row = _graph(degrees, g)
    seeds = torch.randperm(400, generator=g)[:300]
    got, want = _both(colptr, row, seeds, [kernels.FLOYD_MAX + 30, 3], replace, 2, 7, monkeypatch)
    _assert_same(got, want)
    assert got[5][0] > 300 * kernels.FLOYD_MAX // 2  # the large draws did run


def test_the_same_batch_on_one_and_two_threads(monkeypatch):
    g = torch.Generator().manual_seed(2)
    colptr, row = _graph([int(d) for d in torch.randint(0, 40, (2000,), generator=g)], g)
    seeds = torch.randperm(2000, generator=g)[:512]
    outs = []
    for threads in (1, 2):
        got, _ = _both(colptr, row, seeds, [10, 5], False, threads, 16, monkeypatch, rng_seed=7)
        outs.append(got)
    for a, b in zip(outs[0][:4], outs[1][:4]):
        assert torch.equal(a, b)
