"""scatterx.pyg_lib.partition.metis: pyg-lib's METIS partition through pymetis -- a valid assignment, METIS's
graph form made from what PyG's ClusterData passes (directed, self-loops, repeated edges), the weights, and the
checks of bad input."""

import sys

import pytest
import torch

from scatterx._metis import undirected
from scatterx.pyg_lib.partition import metis

pytest.importorskip("pymetis")


def _undirected(rowptr, col, weight, n):
    """METIS's form of a CSR graph, made by the package's METIS home as metis() makes it."""
    return undirected(torch.repeat_interleave(torch.arange(n), rowptr.diff()), col, n, weight)


def csr(edge_index, n):
    """CSR of an edge list sorted by row then column, as ClusterData builds it (sort_edge_index + index2ptr)."""
    order = (edge_index[0] * n + edge_index[1]).argsort(stable=True)
    row, col = edge_index[:, order]
    rowptr = torch.zeros(n + 1, dtype=torch.int64)
    rowptr[1:] = torch.bincount(row, minlength=n).cumsum(0)
    return rowptr, col


def both_ways(edge_index):
    return torch.cat([edge_index, edge_index.flip(0)], 1)


def random_graph(n, e, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (2, e), generator=g)


def test_metis_partitions_a_cycle_as_pyg_lib_test_does():
    ring = torch.stack([torch.arange(6), (torch.arange(6) + 1) % 6])
    for recursive in (False, True):
        out = metis(*csr(both_ways(ring), 6), 2, recursive=recursive)
        assert out.dtype == torch.int64 and out.shape == (6,)
        assert int(out.min()) == 0 and int(out.max()) == 1
        assert sorted(out.bincount().tolist()) == [3, 3]


@pytest.mark.parametrize("recursive", [False, True])
def test_metis_makes_the_graph_undirected_without_loops_or_repeats(recursive):
    n = 40
    edges = random_graph(n, 120, seed=3)
    edges = edges[:, edges[0] != edges[1]]
    clean = torch.unique(both_ways(edges), dim=1)  # what METIS wants: both ways, each once, no loops
    expected = metis(*csr(clean, n), 4, recursive=recursive)
    # one way only, with self-loops and repeated edges: ClusterData passes the dataset's edge_index as it is
    messy = torch.cat([edges, edges[:, :10], torch.stack([torch.arange(5), torch.arange(5)])], 1)
    out = metis(*csr(messy, n), 4, recursive=recursive)
    assert torch.equal(out, expected)
    assert out.shape == (n,) and int(out.min()) >= 0 and int(out.max()) < 4


def test_metis_input_is_passed_through_when_already_metis_form():
    n = 12
    clean = torch.unique(both_ways(random_graph(n, 30, seed=5)), dim=1)
    clean = clean[:, clean[0] != clean[1]]
    rowptr, col = csr(clean, n)
    new_rowptr, new_col, _ = _undirected(rowptr, col, None, n)
    assert torch.equal(new_rowptr, rowptr) and torch.equal(new_col, col)


def test_undirected_weights_take_the_largest_of_a_pair():
    rowptr, col = torch.tensor([0, 2, 3, 4]), torch.tensor([1, 1, 0, 2])  # 0->1 twice, 1->0, 2->2 (a loop)
    new_rowptr, new_col, weight = _undirected(rowptr, col, torch.tensor([3, 7, 5, 9]), 3)
    assert new_rowptr.tolist() == [0, 1, 2, 2] and new_col.tolist() == [1, 0]
    assert weight is not None and weight.tolist() == [7, 7]


@pytest.mark.parametrize("recursive", [False, True])
def test_metis_edge_weights_decide_the_cut(recursive):
    cycle = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    rowptr, col = csr(both_ways(cycle), 4)
    row = torch.repeat_interleave(torch.arange(4), rowptr.diff())
    heavy = torch.tensor([10 if {int(a), int(b)} in ({0, 1}, {2, 3}) else 1 for a, b in zip(row, col)])
    out = metis(rowptr, col, 2, edge_weight=heavy, recursive=recursive)
    assert out[0] == out[1] and out[2] == out[3] and out[0] != out[2]
    out = metis(rowptr, col, 2, edge_weight=11 - heavy, recursive=recursive)
    assert out[1] == out[2] and out[3] == out[0] and out[0] != out[1]


def test_metis_node_weights_decide_the_balance():
    path = torch.stack([torch.arange(5), torch.arange(1, 6)])
    rowptr, col = csr(both_ways(path), 6)
    out = metis(rowptr, col, 2, node_weight=torch.tensor([5, 1, 1, 1, 1, 1]), recursive=True)
    assert out.tolist().count(int(out[0])) == 1  # node 0 weighs as much as the other five


def test_metis_small_cases():
    empty = torch.tensor([], dtype=torch.int64)
    assert metis(torch.tensor([0]), empty, 3).shape == (0,)
    assert metis(torch.zeros(5, dtype=torch.int64), empty, 1).tolist() == [0, 0, 0, 0]
    out = metis(torch.zeros(7, dtype=torch.int32), empty.int(), 2)  # nodes without edges, int32
    assert out.dtype == torch.int64 and out.shape == (6,) and int(out.max()) < 2


RP, COL = csr(both_ways(torch.tensor([[0, 1, 2], [1, 2, 3]])), 4)
BAD = [
    (lambda: metis(RP.tolist(), COL, 2), TypeError, "rowptr must be a torch.Tensor"),
    (lambda: metis(RP.float(), COL, 2), TypeError, "rowptr must have dtype"),
    (lambda: metis(RP, COL.view(2, -1), 2), ValueError, "col must be 1-D"),
    (lambda: metis(RP, COL, 2.0), TypeError, "num_partitions must be an int"),
    (lambda: metis(RP, COL, 0), ValueError, "num_partitions must be >= 1"),
    (lambda: metis(RP, COL, 2, recursive=1), TypeError, "recursive must be a bool"),
    (lambda: metis(torch.tensor([], dtype=torch.int64), COL, 2), ValueError, "at least one entry"),
    (lambda: metis(RP + 1, COL, 2), ValueError, "rowptr must start at 0"),
    (lambda: metis(torch.tensor([0, 3, 2, 4, 6]), COL, 2), ValueError, "non-decreasing"),
    (lambda: metis(RP, COL[:-1], 2), ValueError, "rowptr must end at col.numel\\(\\)=5"),
    (lambda: metis(RP, COL + 1, 2), IndexError, "col holds 4, out of range for 4 nodes"),
    (lambda: metis(RP, COL, 2, node_weight=torch.ones(3, dtype=torch.int64)), ValueError, "node_weight has 3"),
    (lambda: metis(RP, COL, 2, node_weight=torch.ones(4)), TypeError, "node_weight must have an integer dtype"),
    (lambda: metis(RP, COL, 2, edge_weight=-torch.ones(6, dtype=torch.int64)), ValueError, "non-negative"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=[f"{i}-{e.__name__}" for i, (_, e, _) in enumerate(BAD)])
def test_metis_bad_input(call, error, message):
    before = (RP.clone(), COL.clone())
    with pytest.raises(error, match=message) as info:
        call()
    if error is not IndexError:
        assert isinstance(info.value, RuntimeError)  # as pyg-lib's checks raise
    assert torch.equal(before[0], RP) and torch.equal(before[1], COL)


def test_metis_without_pymetis_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)
    with pytest.raises(ImportError, match="pip install pymetis"):
        metis(RP, COL, 2)
