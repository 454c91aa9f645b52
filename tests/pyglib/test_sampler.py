"""The samplers of ``scatterx.pyg_lib`` on their own: hand-written graphs, the promises of neighbour sampling
(every edge exists, exact counts, no repeats without replacement), choice frequencies against uniform and the
weights by a chi-square test at a fixed seed, temporal constraints, reproducibility, heterogeneous graphs, the
``torch.ops.pyg`` operators, and bad input raising before anything is sampled."""

import math

import pytest
import torch

from scatterx.pyg_lib import _library
from scatterx.pyg_lib.sampler import hetero_neighbor_sample, neighbor_sample

# node 0 <- 1, 2, 3; node 1 <- 0, 2; node 2 <- (none); node 3 <- 0, 1, 2, 4; node 4 <- 3 (CSC: in-neighbours)
COLPTR = torch.tensor([0, 3, 5, 5, 9, 10])
ROW = torch.tensor([1, 2, 3, 0, 2, 0, 1, 2, 4, 3])


def _edges(colptr, row):
    return {(int(row[e]), v) for v in range(colptr.numel() - 1) for e in range(int(colptr[v]), int(colptr[v + 1]))}


def _chi2_ok(counts, expected):
    """Pearson's statistic below the 0.999 quantile of its chi-square (Wilson-Hilferty), at a fixed seed."""
    stat = sum((c - e) ** 2 / e for c, e in zip(counts, expected))
    dof = len(counts) - 1
    z = 3.09  # the 0.999 normal quantile
    bound = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    return stat < bound, stat, bound


def test_every_neighbour_in_pyg_libs_order():
    row, col, node, edge, nodes_per_hop, edges_per_hop = neighbor_sample(
        COLPTR, ROW, torch.tensor([0]), [-1, -1], csc=True
    )
    # seed 0; hop 1: its in-neighbours 1, 2, 3 in edge order; hop 2: 1 <- 0, 2 (known), 2 <- none, 3 <- 0, 1, 2, 4
    assert node.tolist() == [0, 1, 2, 3, 4]
    assert nodes_per_hop == [1, 3, 1] and edges_per_hop == [3, 6]
    assert col.tolist() == [0, 0, 0, 1, 1, 3, 3, 3, 3]  # grouped by the node drawn for, in local order
    assert row.tolist() == [1, 2, 3, 0, 2, 0, 1, 2, 4]
    assert edge.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    # the same graph read as CSR: row and col swap roles
    r2, c2, n2, e2, _, _ = neighbor_sample(COLPTR, ROW, torch.tensor([0]), [-1, -1], csc=False)
    assert torch.equal(r2, col) and torch.equal(c2, row) and torch.equal(n2, node) and torch.equal(e2, edge)


def test_outputs_keep_the_index_dtype_and_an_empty_seed_set_gives_empty_outputs():
    row, col, node, edge, nodes_per_hop, edges_per_hop = neighbor_sample(
        COLPTR.int(), ROW.int(), torch.tensor([], dtype=torch.int32), [2, 2], csc=True
    )
    assert row.dtype == col.dtype == node.dtype == edge.dtype == torch.int32
    assert row.numel() == col.numel() == node.numel() == edge.numel() == 0
    assert nodes_per_hop == [0, 0, 0] and edges_per_hop == [0, 0]


@pytest.mark.parametrize("replace", [False, True])
def test_every_edge_exists_and_counts_are_exact(replace):
    g = torch.Generator().manual_seed(0)
    n = 300
    degrees = torch.randint(0, 30, (n,), generator=g)
    colptr = torch.cat([torch.zeros(1, dtype=torch.long), degrees.cumsum(0)])
    row = torch.randint(0, n, (int(colptr[-1]),), generator=g)
    torch.manual_seed(0)
    out_row, out_col, node, edge, nodes_per_hop, edges_per_hop = neighbor_sample(
        colptr, row, torch.arange(0, n, 3), [7, 4], csc=True, replace=replace
    )
    assert node.unique().numel() == node.numel()  # each node once
    assert torch.equal(row[edge], node[out_row]) and bool((colptr[node[out_col]] <= edge).all())
    assert bool((edge < colptr[node[out_col] + 1]).all())  # edge e is an in-edge of the node it was drawn for
    assert bool((out_col[1:] >= out_col[:-1]).all())  # grouped by target
    per_target = torch.bincount(out_col, minlength=node.numel())
    frontier = torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor(nodes_per_hop).cumsum(0)])
    for hop, count in enumerate([7, 4]):
        targets = torch.arange(int(frontier[hop]), int(frontier[hop + 1]))
        degree = degrees[node[targets]]
        want = torch.where(degree > 0, torch.full_like(degree, count), 0) if replace else degree.clamp(max=count)
        assert torch.equal(per_target[targets], want)
        assert edges_per_hop[hop] == int(want.sum())
    if not replace:  # no edge twice for one node
        assert torch.unique(torch.stack([out_col, edge]), dim=1).size(1) == edge.numel()


def test_uniform_choice_by_chi_square():
    # one node with 10 in-neighbours, drawn 3 at a time for 4000 copies of the seed
    colptr = torch.tensor([0, 10] + [10] * 10)
    row = torch.arange(1, 11)
    torch.manual_seed(1)
    _, _, _, edge, _, _ = neighbor_sample(colptr, row, torch.zeros(4000, dtype=torch.long), [3], csc=True)
    counts = torch.bincount(edge, minlength=10).tolist()
    ok, stat, bound = _chi2_ok(counts, [4000 * 3 / 10] * 10)
    assert ok, (counts, stat, bound)


# the scales: weights whose sum overflows float64, and subnormal ones (whose keys log(u) / w were all -inf)
@pytest.mark.parametrize("scale", [1.0, 1e307, 1e-311])
@pytest.mark.parametrize("replace", [False, True])
def test_weighted_choice_by_chi_square(replace, scale):
    relative = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0, 10.0], dtype=torch.float64)
    weights = relative * scale
    colptr = torch.tensor([0, 6] + [6] * 6)
    row = torch.arange(1, 7)
    torch.manual_seed(2)
    _, _, _, edge, _, _ = neighbor_sample(
        colptr, row, torch.zeros(5000, dtype=torch.long), [1], edge_weight=weights, csc=True, replace=replace
    )
    counts = torch.bincount(edge, minlength=6).tolist()
    assert counts[4] == 0  # weight 0: never drawn
    nonzero = [i for i in range(6) if weights[i] > 0]
    ok, stat, bound = _chi2_ok(
        [counts[i] for i in nonzero], [5000 * float(relative[i] / relative.sum()) for i in nonzero]
    )
    assert ok, (counts, stat, bound)


@pytest.mark.parametrize("weights", [[0.0, 1e-310, 1.0], [0.0, 1e-10, 1e300], [1e-300, 0.0, 1e300, 0.0]])
def test_weights_far_apart_are_drawn_before_the_weights_of_0(weights):
    """Without replacement every positive weight comes before any weight of 0, however small it is against the
    others (its key ``log(u) / w`` alone would be -inf, tied with theirs)."""
    weights = torch.tensor(weights, dtype=torch.float64)
    positive = int((weights > 0).sum())
    colptr = torch.tensor([0, len(weights)] + [len(weights)] * len(weights))
    row = torch.arange(1, len(weights) + 1)
    torch.manual_seed(4)
    _, out_col, _, edge, _, _ = neighbor_sample(
        colptr, row, torch.zeros(200, dtype=torch.long), [positive], edge_weight=weights, csc=True
    )
    for s in range(200):
        assert sorted(edge[out_col == s].tolist()) == [i for i in range(len(weights)) if weights[i] > 0]


def test_weighted_sampling_without_replacement_never_repeats():
    weights = torch.rand(40, generator=torch.Generator().manual_seed(3)) + 0.01
    colptr = torch.tensor([0, 40] + [40] * 40)
    row = torch.arange(1, 41)
    _, out_col, _, edge, _, _ = neighbor_sample(
        colptr, row, torch.zeros(50, dtype=torch.long), [12], edge_weight=weights, csc=True
    )
    for s in range(50):
        assert edge[out_col == s].unique().numel() == 12


def _timed_graph():
    # node 0 <- 1, 2, 3, 4 (times 1, 2, 3, 4: sorted within the neighbourhood); node 5 <- 0
    colptr = torch.tensor([0, 4, 4, 4, 4, 4, 5])
    row = torch.tensor([1, 2, 3, 4, 0])
    time = torch.tensor([0, 1, 2, 3, 4, 9])
    return colptr, row, time


def test_node_time_never_draws_a_later_neighbour():
    colptr, row, time = _timed_graph()
    seeds = torch.tensor([0, 0, 0])
    seed_time = torch.tensor([2, 3, 0])
    _, _, node, _, _, _ = neighbor_sample(
        colptr, row, seeds, [-1], node_time=time, seed_time=seed_time, csc=True, disjoint=True
    )
    batch, ids = node[:, 0], node[:, 1]
    for b, t in enumerate(seed_time.tolist()):
        got = sorted(ids[(batch == b)].tolist()[1:])
        assert got == [v for v in (1, 2, 3, 4) if time[v] <= t]


def test_the_last_strategy_takes_the_latest_and_edge_time_filters_edges():
    colptr, row, time = _timed_graph()
    _, _, node, _, _, _ = neighbor_sample(
        colptr, row, torch.tensor([0]), [2], node_time=time, seed_time=torch.tensor([3]), csc=True, disjoint=True,
        temporal_strategy="last",
    )  # fmt: skip
    assert sorted(node[1:, 1].tolist()) == [2, 3]
    edge_time = torch.tensor([5, 6, 7, 8, 0])
    _, _, node, edge, _, _ = neighbor_sample(
        colptr, row, torch.tensor([0]), [-1], edge_time=edge_time, seed_time=torch.tensor([6]), csc=True,
        disjoint=True,
    )  # fmt: skip
    assert sorted(edge.tolist()) == [0, 1]


def test_unsorted_times_raise():
    colptr, row, _ = _timed_graph()
    unsorted = torch.tensor([0, 4, 3, 2, 1, 9])  # node 0's neighbours 1, 2, 3, 4 from the latest to the earliest
    with pytest.raises(ValueError, match="sorted by time"):
        neighbor_sample(
            colptr, row, torch.tensor([0]), [-1], node_time=unsorted, seed_time=torch.tensor([9]), csc=True,
            disjoint=True,
        )  # fmt: skip


def test_disjoint_trees_are_separate():
    row, col, node, _, nodes_per_hop, _ = neighbor_sample(
        COLPTR, ROW, torch.tensor([0, 0]), [-1], csc=True, disjoint=True
    )
    assert node.tolist() == [[0, 0], [1, 0], [0, 1], [0, 2], [0, 3], [1, 1], [1, 2], [1, 3]]
    assert nodes_per_hop == [2, 6]
    assert bool((node[row, 0] == node[col, 0]).all())  # every edge within one tree


def test_reproducible_under_torch_manual_seed():
    g = torch.Generator().manual_seed(4)
    colptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.randint(0, 20, (500,), generator=g).cumsum(0)])
    row = torch.randint(0, 500, (int(colptr[-1]),), generator=g)
    runs = []
    for s in (5, 5, 6):
        torch.manual_seed(s)
        runs.append(neighbor_sample(colptr, row, torch.arange(64), [5, 5], csc=True))
    assert all(torch.equal(a, b) for a, b in zip(runs[0][:4], runs[1][:4]))
    assert not torch.equal(runs[0][3], runs[2][3])


def test_directed_false_gives_the_induced_subgraph():
    row, col, node, _, _, edges_per_hop = neighbor_sample(
        COLPTR, ROW, torch.tensor([4]), [1, 1], csc=True, directed=False
    )
    sampled = set(node.tolist())
    want = {(u, v) for u, v in _edges(COLPTR, ROW) if u in sampled and v in sampled}
    got = {(int(node[r]), int(node[c])) for r, c in zip(row, col)}
    assert got == want and len(got) == row.numel()
    assert sum(edges_per_hop) == row.numel() and len(edges_per_hop) == 2


def test_hetero_follows_each_edge_type():
    writes = ("author", "writes", "paper")
    cites = ("paper", "cites", "paper")
    # CSC by target: paper 0 <- author 0, 1; paper 1 <- author 1; paper 0 <- paper 1; paper 1 <- (none)
    colptr = {writes: torch.tensor([0, 2, 3]), cites: torch.tensor([0, 1, 1])}
    row = {writes: torch.tensor([0, 1, 1]), cites: torch.tensor([1])}
    out_row, out_col, node, edge, nodes_per_hop, edges_per_hop = hetero_neighbor_sample(
        colptr, row, {"paper": torch.tensor([0])}, {writes: [-1, -1], cites: [-1, -1]}, csc=True
    )
    assert node["paper"].tolist() == [0, 1] and node["author"].tolist() == [0, 1]
    assert out_row[writes].tolist() == [0, 1, 1] and out_col[writes].tolist() == [0, 0, 1]
    assert out_row[cites].tolist() == [1] and out_col[cites].tolist() == [0]
    assert nodes_per_hop == {"paper": [1, 1, 0], "author": [0, 2, 0]}
    assert edges_per_hop == {writes: [2, 1], cites: [1, 0]}
    assert edge[writes].tolist() == [0, 1, 2]


def test_the_operators_pyg_calls():
    _library.define()
    want = neighbor_sample(COLPTR, ROW, torch.tensor([0]), [-1, -1], csc=True)
    got = torch.ops.pyg.neighbor_sample(COLPTR, ROW, torch.tensor([0]), [-1, -1], None, None, None, None, True)
    assert all(torch.equal(a, b) for a, b in zip(got[:4], want[:4])) and list(got[4:]) == list(want[4:])
    rel = "author__writes__paper"
    out = torch.ops.pyg.hetero_neighbor_sample(
        ["author", "paper"], [("author", "writes", "paper")], {rel: torch.tensor([0, 2, 3])},
        {rel: torch.tensor([0, 1, 1])}, {"paper": torch.tensor([1])}, {rel: [-1]}, None, None, None, None, True,
    )  # fmt: skip
    assert out[2]["author"].tolist() == [1] and out[0][rel].tolist() == [0] and out[1][rel].tolist() == [0]


BAD = [
    (dict(rowptr=torch.tensor([0, 2, 1, 5, 5, 10])), ValueError, "non-decreasing"),
    (dict(rowptr=torch.tensor([1, 3, 5, 5, 9, 10])), ValueError, "start at 0"),
    (dict(rowptr=torch.tensor([0, 3, 5, 5, 9, 9])), ValueError, "end at the number of edges"),
    (dict(col=torch.tensor([1, 2, 3, 0, 2, 0, 1, 2, 5, 3])), IndexError, "col"),
    (dict(col=torch.tensor([1, 2, 3, 0, 2, 0, 1, 2, -1, 3])), IndexError, "col"),
    (dict(seed=torch.tensor([5])), IndexError, "seed"),
    (dict(seed=torch.tensor([-1])), IndexError, "seed"),
    (dict(num_neighbors=[2, -2]), ValueError, "fan-out"),
    (dict(num_neighbors=[2.5]), TypeError, "num_neighbors"),
    (dict(seed=torch.tensor([0], dtype=torch.int32)), TypeError, "seed"),
    (dict(col=ROW.float()), TypeError, "col"),
    (dict(node_time=torch.arange(4), disjoint=True), ValueError, "node_time"),
    (dict(node_time=torch.arange(5.0), disjoint=True), TypeError, "node_time"),
    (dict(node_time=torch.arange(5)), ValueError, "disjoint"),
    (dict(edge_time=torch.arange(10), disjoint=True), ValueError, "seed_time"),
    (dict(edge_weight=torch.ones(9)), ValueError, "edge_weight"),
    (dict(edge_weight=-torch.ones(10)), ValueError, "edge_weight"),
    (dict(temporal_strategy="first"), ValueError, "temporal_strategy"),
    (dict(csc="no"), TypeError, "'csc' must be a bool"),
    (dict(replace=1), TypeError, "'replace' must be a bool"),
]


@pytest.mark.parametrize("change,error,match", BAD)
def test_bad_input_raises_naming_the_argument_and_writes_nothing(change, error, match):
    args = dict(rowptr=COLPTR.clone(), col=ROW.clone(), seed=torch.tensor([0]), num_neighbors=[2, 2], csc=True)
    args.update({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in change.items()})
    before = {k: v.clone() for k, v in args.items() if isinstance(v, torch.Tensor)}
    with pytest.raises(error, match=match):
        neighbor_sample(**args)
    assert all(torch.equal(args[k], v) for k, v in before.items())


def test_replacement_with_fan_out_minus_one_takes_every_edge_once():
    colptr, row = torch.tensor([0, 4, 4, 4, 4, 4]), torch.tensor([1, 2, 3, 4])
    for weight in (None, torch.ones(4)):
        got = neighbor_sample(colptr, row, torch.tensor([0]), [-1], csc=True, replace=True, edge_weight=weight)
        assert got[3].tolist() == [0, 1, 2, 3]


def test_weights_all_zero_with_replacement_raise():
    colptr, row = torch.tensor([0, 4, 4, 4, 4, 4]), torch.tensor([1, 2, 3, 4])
    with pytest.raises(ValueError, match="all 0"):
        neighbor_sample(colptr, row, torch.tensor([0]), [3], csc=True, replace=True, edge_weight=torch.zeros(4))


def test_a_write_torch_does_not_see_is_caught_before_any_out_of_range_read():
    colptr, row = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 0])
    neighbor_sample(colptr, row, torch.tensor([0]), [2], csc=True)  # checked, and the check kept
    row.numpy()[1] = 10**6  # torch's version counter does not see this
    with pytest.raises(IndexError, match="col"):
        neighbor_sample(colptr, row, torch.tensor([0]), [2, 2], csc=True)


def test_a_failed_check_is_not_kept():
    """The extremes of a graph's array are kept after a check that passes; one that fails is made again on the next
    call, so an array repaired by a write torch does not see is taken (its kept extremes were the bad ones)."""
    colptr, row = torch.tensor([0, 2, 2]), torch.tensor([1, 1])
    row.numpy()[0] = 7
    with pytest.raises(IndexError, match="col"):
        neighbor_sample(colptr, row, torch.tensor([0]), [-1], csc=True)
    row.numpy()[0] = 1
    edge = neighbor_sample(colptr, row, torch.tensor([0]), [-1], csc=True)[3]
    assert edge.tolist() == [0, 1]


KEY = ("a", "r", "b")


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        # a node type's size must agree between the edge types that run over it
        (
            dict(
                rowptr_dict={KEY: torch.tensor([0, 1]), ("a", "s", "c"): torch.arange(0, 5)},
                col_dict={KEY: torch.tensor([0]), ("a", "s", "c"): torch.zeros(4, dtype=torch.long)},
                num_neighbors_dict={KEY: [-1], ("a", "s", "c"): [-1]},
            ),
            ValueError,
            "agree",
        ),
        # edge times need a time for every seed
        (dict(edge_time_dict={KEY: torch.tensor([1, 2, 3])}, seed_time_dict={}, disjoint=True), ValueError, "seed"),
        # disjoint trees key nodes by batch << 32 | node: a neighbour id from 2^32 on is refused
        (dict(col_dict={KEY: torch.tensor([2**32 + 5, 5, 0])}, disjoint=True), IndexError, "col_dict"),
        # ... and so is a seed id from 2^32 on of a node type no offsets run over (no size to check it against)
        (
            dict(seed_dict={"a": torch.tensor([0]), "b": torch.tensor([2**32 + 5, 1])}, disjoint=True),
            IndexError,
            "seed_dict.*32 bits",
        ),
        (dict(seed_dict={"a": torch.tensor([0], dtype=torch.int32)}), TypeError, "seed_dict"),
        # ... and one past its node times, where those give the seeds' times
        (
            dict(
                seed_dict={"a": torch.tensor([0]), "b": torch.tensor([5])},
                node_time_dict={"a": torch.tensor([0, 0]), "b": torch.tensor([0, 0])},
                disjoint=True,
            ),
            IndexError,
            "seed_dict.*times of node type 'b'",
        ),
    ],
)
def test_hetero_bad_input_raises(kwargs, error, match):
    args = dict(
        rowptr_dict={KEY: torch.tensor([0, 2, 3])},
        col_dict={KEY: torch.tensor([0, 1, 0])},
        seed_dict={"a": torch.tensor([0, 1])},
        num_neighbors_dict={KEY: [2]},
    )
    args.update(kwargs)
    with pytest.raises(error, match=match):
        hetero_neighbor_sample(**args)


def test_hetero_temporal_and_disjoint():
    # CSR by source: a0 -> b0 (t=1), b1 (t=5); a1 -> b1 (t=5); node times of b: [1, 5]
    rowptr, col = {KEY: torch.tensor([0, 2, 3])}, {KEY: torch.tensor([0, 1, 1])}
    out = hetero_neighbor_sample(
        rowptr, col, {"a": torch.tensor([0, 1])}, {KEY: [-1]}, node_time_dict={"b": torch.tensor([1, 5])},
        seed_time_dict={"a": torch.tensor([3, 9])}, disjoint=True,
    )  # fmt: skip
    assert out[2]["b"].tolist() == [[0, 0], [1, 1]]  # tree 0 (time 3) reaches b0 only; tree 1 (time 9) b1
    assert out[2]["a"].tolist() == [[0, 0], [1, 1]]
