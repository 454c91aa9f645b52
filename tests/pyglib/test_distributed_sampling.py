"""``scatterx.pyg_lib``'s distributed-sampler helpers: pyg-lib's own C++ cases (test_dist_relabel.cpp,
test_dist_merge_outputs.cpp), random cases against a loop that follows pyg-lib's kernels step by step (a mapper
that numbers nodes as it meets them), and the refusals of bad input."""

import doctest
import random

import pytest
import torch

from scatterx.pyg_lib._distributed_sampling import (
    hetero_relabel_neighborhood,
    merge_sampler_outputs,
    relabel_neighborhood,
)

T = torch.tensor
REL = "paper__to__paper"
PAPER = ("paper", "to", "paper")


# ------------------------------------------------------------------------------------------ pyg-lib's cases
def test_relabel():
    row, col = relabel_neighborhood(torch.arange(2, 4), T([1, 3, 2, 4]), [2, 2], 6)
    assert torch.equal(row, T([0, 0, 1, 1])) and torch.equal(col, T([2, 1, 0, 3]))


def test_relabel_disjoint():
    row, col = relabel_neighborhood(torch.arange(2, 4), T([1, 3, 2, 4]), [2, 2], 6, T([0, 0, 1, 1]), False, True)
    assert torch.equal(row, T([0, 0, 1, 1])) and torch.equal(col, T([2, 3, 4, 5]))


@pytest.mark.parametrize("csc", [False, True])
def test_hetero_relabel(csc):
    rows, cols = hetero_relabel_neighborhood(
        ["paper"], [PAPER], {"paper": torch.arange(2, 4)}, {"paper": T([1, 3, 2, 4])}, {REL: [[2], [2]]}, {"paper": 6},
        None, csc,
    )  # fmt: skip
    row, col = (T([0, 0, 1, 1]), T([2, 1, 0, 3]))
    if csc:
        row, col = col, row
    assert torch.equal(rows[REL], row) and torch.equal(cols[REL], col)


def test_hetero_relabel_disjoint():
    rows, cols = hetero_relabel_neighborhood(
        ["paper"], [PAPER], {"paper": torch.arange(2, 4)}, {"paper": T([1, 3, 2, 4])}, {REL: [[2], [2]]}, {"paper": 6},
        {"paper": T([0, 0, 1, 1])}, False, True,
    )  # fmt: skip
    assert torch.equal(rows[REL], T([0, 0, 1, 1])) and torch.equal(cols[REL], T([2, 3, 4, 5]))


NODE_IDS = [T([2, 7, 8]), T([0, 1, 4, 5, 6]), T([3, 9, 10])]
EDGE_IDS = [T([17, 18]), T([14, 15, 16]), T([19, 20])]
CUMSUM = [[1, 3], [2, 4, 5], [1, 3]]


def test_merge():
    nodes, edges, batch, counts = merge_sampler_outputs(NODE_IDS, EDGE_IDS, CUMSUM, [1, 1, 0, 2], [0, 1, 0, 0], 3, 2)
    assert torch.equal(nodes, T([4, 5, 6, 7, 8, 9, 10])) and torch.equal(edges, T([14, 15, 16, 17, 18, 19, 20]))
    assert batch is None and counts == [2, 1, 2, 2]


def test_merge_all_neighbors():
    node_ids = [*NODE_IDS[:2], T([3, 9, 10, 11])]
    edge_ids = [*EDGE_IDS[:2], T([19, 20, 21])]
    cumsum = [[1, 3], [2, 4, 5], [1, 4]]
    nodes, edges, _, counts = merge_sampler_outputs(node_ids, edge_ids, cumsum, [1, 1, 0, 2], [0, 1, 0, 0], 3, -1)
    assert torch.equal(nodes, T([4, 5, 6, 7, 8, 9, 10, 11]))
    assert torch.equal(edges, T([14, 15, 16, 17, 18, 19, 20, 21])) and counts == [2, 1, 2, 3]


def test_merge_disjoint():
    nodes, _, batch, counts = merge_sampler_outputs(
        NODE_IDS, EDGE_IDS, CUMSUM, [1, 1, 0, 2], [0, 1, 0, 0], 3, 2, T([0, 1, 2, 3]), True
    )
    assert torch.equal(nodes, T([4, 5, 6, 7, 8, 9, 10])) and torch.equal(batch, T([0, 0, 1, 2, 2, 3, 3]))
    assert counts == [2, 1, 2, 2]


# ---------------------------------------------------------------------------------- pyg-lib's loops, in Python
class Mapper:
    def __init__(self):
        self.ids = {}

    def insert(self, node):
        return self.ids.setdefault(node, len(self.ids))


def loop_relabel(seed, nodes, counts, batch, csc, disjoint):
    mapper = Mapper()
    for i, s in enumerate(seed.tolist()):
        mapper.insert((i, s) if disjoint else s)
    rows, cols, j = [], [], 0
    for i, c in enumerate(counts):
        for _ in range(c):
            rows.append(i)
            cols.append(mapper.insert((int(batch[j]), int(nodes[j])) if disjoint else int(nodes[j])))
            j += 1
    row, col = T(rows, dtype=seed.dtype), T(cols, dtype=seed.dtype)
    return (col, row) if csc else (row, col)


def loop_hetero_relabel(node_types, edge_types, seeds, nodes, counts, batch, csc, disjoint):
    def src_of(k):
        return k[2] if csc else k[0]

    def dst_of(k):
        return k[0] if csc else k[2]

    mappers = {t: Mapper() for t in node_types}
    b = 0
    for t, s in seeds.items():
        for v in s.tolist():
            mappers[t].insert((b, v) if disjoint else v)
            b += 1
    rel = {k: "__".join(k) for k in edge_types}
    rows = {k: [] for k in edge_types}
    cols = {k: [] for k in edge_types}
    src_slice = {k: (0, len(counts[rel[k]][0])) for k in edge_types}
    taken = dict.fromkeys(node_types, 0)
    layers = len(counts[rel[edge_types[0]]])
    for ell in range(layers):
        for k in edge_types:
            dst = dst_of(k)
            begin, end = src_slice[k]
            for i in range(begin, end):
                for _ in range(counts[rel[k]][ell][i - begin]):
                    j = taken[dst]
                    node = int(nodes[dst][j])
                    rows[k].append(i)
                    cols[k].append(mappers[dst].insert((int(batch[dst][j]), node) if disjoint else node))
                    taken[dst] += 1
        if ell < layers - 1:
            offset = dict.fromkeys(node_types, 0)
            for k in edge_types:
                offset[src_of(k)] = max(offset[src_of(k)], src_slice[k][1])
            for k in edge_types:
                start = offset[src_of(k)]
                src_slice[k] = (start, start + len(counts[rel[k]][ell + 1]))
    out_rows, out_cols = {}, {}
    for k in edge_types:
        row, col = T(rows[k], dtype=torch.int64), T(cols[k], dtype=torch.int64)
        out_rows[rel[k]], out_cols[rel[k]] = (col, row) if csc else (row, col)
    return out_rows, out_cols


@pytest.mark.parametrize("case", range(12))
def test_relabel_matches_pyg_libs_loop(case):
    rng = random.Random(case)
    disjoint, csc = case % 2 == 1, case % 4 >= 2
    seed = T([rng.randrange(20) for _ in range(rng.randrange(1, 6))])
    counts = [rng.randrange(4) for _ in range(rng.randrange(1, 12))]
    extra = rng.randrange(3)  # entries past the counted ones are ignored
    nodes = T([rng.randrange(20) for _ in range(sum(counts) + extra)], dtype=torch.int64)
    batch = T([rng.randrange(len(seed)) for _ in range(nodes.numel())]) if disjoint else None
    got = relabel_neighborhood(seed, nodes, counts, 20, batch, csc, disjoint)
    expected = loop_relabel(seed, nodes, counts, batch, csc, disjoint)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


@pytest.mark.parametrize("case", range(16))
def test_hetero_relabel_matches_pyg_libs_loop(case):
    rng = random.Random(100 + case)
    disjoint, csc = case % 2 == 1, case % 4 >= 2
    node_types = ["a", "b", "c"]
    edge_types = [("a", "to", "b"), ("b", "to", "a"), ("a", "cites", "a"), ("b", "to", "c"), ("c", "in", "a")]
    edge_types = rng.sample(edge_types, rng.randrange(1, 6))
    seeds = {
        t: T([rng.randrange(9) for _ in range(rng.randrange(0, 4))], dtype=torch.int64)
        for t in rng.sample(node_types, 2)
    }
    layers = rng.randrange(1, 4)
    counts = {"__".join(k): [] for k in edge_types}
    for _ in range(layers):  # any number of source nodes per layer: pyg-lib reads only the lists' lengths
        for k in edge_types:
            counts["__".join(k)].append([rng.randrange(3) for _ in range(rng.randrange(0, 5))])
    taken = dict.fromkeys(node_types, 0)
    for k in edge_types:
        taken[k[0] if csc else k[2]] += sum(sum(c) for c in counts["__".join(k)])
    nodes = {
        t: T([rng.randrange(9) for _ in range(taken[t] + rng.randrange(2))], dtype=torch.int64) for t in node_types
    }
    batch = (
        {t: T([rng.randrange(6) for _ in range(nodes[t].numel())], dtype=torch.int64) for t in node_types}
        if disjoint
        else None
    )
    args = (node_types, edge_types, seeds, nodes, counts, dict.fromkeys(node_types, 9), batch, csc, disjoint)
    got_rows, got_cols = hetero_relabel_neighborhood(*args)
    want_rows, want_cols = loop_hetero_relabel(node_types, edge_types, seeds, nodes, counts, batch, csc, disjoint)
    assert got_rows.keys() == want_rows.keys()
    for key in want_rows:
        assert torch.equal(got_rows[key], want_rows[key]), key
        assert torch.equal(got_cols[key], want_cols[key]), key


def test_relabel_keeps_the_seeds_dtype_and_numbers_duplicate_seeds_once():
    row, col = relabel_neighborhood(T([5, 5, 3], dtype=torch.int32), T([3, 7, 5], dtype=torch.int32), [1, 0, 2], 8)
    assert row.dtype == col.dtype == torch.int32
    assert row.tolist() == [0, 2, 2] and col.tolist() == [1, 2, 0]


@pytest.mark.parametrize("case", range(8))
def test_merge_matches_pyg_libs_loop(case):
    rng = random.Random(200 + case)
    parts = rng.randrange(1, 4)
    seeds_on = [rng.randrange(0, 4) for _ in range(parts)]
    node_ids, edge_ids, cumsums, where = [], [], [], []
    for p, seeds in enumerate(seeds_on):
        sampled = [rng.randrange(4) for _ in range(seeds)]
        cumsum = [seeds] + [seeds + sum(sampled[: i + 1]) for i in range(seeds)]
        node_ids.append(T([rng.randrange(100) for _ in range(cumsum[-1])], dtype=torch.int64))
        edge_ids.append(T([rng.randrange(100) for _ in range(cumsum[-1] - seeds)], dtype=torch.int64))
        cumsums.append(cumsum if seeds else [])
        where += [(p, o) for o in range(seeds)]
    rng.shuffle(where)
    ids, orders = [p for p, _ in where], [o for _, o in where]
    batch = T([rng.randrange(10) for _ in where], dtype=torch.int64)
    nodes, edges, out_batch, counts = merge_sampler_outputs(
        node_ids, edge_ids, cumsums, ids, orders, parts, 3, batch, True
    )
    want_nodes, want_edges, want_batch, want_counts = [], [], [], []
    for j, (p, o) in enumerate(where):  # pyg-lib's copy per seed
        begin, end = cumsums[p][o], cumsums[p][o + 1]
        want_nodes += node_ids[p][begin:end].tolist()
        want_edges += edge_ids[p][begin - cumsums[p][0] : end - cumsums[p][0]].tolist()
        want_batch += [int(batch[j])] * (end - begin)
        want_counts.append(end - begin)
    assert nodes.tolist() == want_nodes and edges.tolist() == want_edges
    assert out_batch.tolist() == want_batch and counts == want_counts


def test_merge_of_no_seed():
    nodes, edges, batch, counts = merge_sampler_outputs(
        [T([], dtype=torch.int32)], [T([], dtype=torch.int32)], [[]], [], [], 1, 2
    )
    assert nodes.dtype == edges.dtype == torch.int32 and nodes.numel() == edges.numel() == 0
    assert batch is None and counts == []


# ------------------------------------------------------------------------------------------------ refusals
SEED, NODES = T([2, 3]), T([1, 3, 2, 4])


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((SEED, NODES.int(), [2, 2], 6), TypeError, "share one dtype"),
        ((SEED.float(), NODES, [2, 2], 6), TypeError, "integral dtype"),
        ((SEED, [1, 3, 2, 4], [2, 2], 6), TypeError, "must be a tensor"),
        ((SEED, NODES.view(2, 2), [2, 2], 6), ValueError, "1-D"),
        ((SEED, NODES, [2, -1], 6), ValueError, "negative count"),
        ((SEED, NODES, [2, 3], 6), IndexError, "take 5 entries"),
        ((SEED, NODES, [2, 2], -1), ValueError, "num_nodes must be >= 0"),
        ((SEED, NODES, [2, 2], 6, None, False, True), ValueError, "needs batch"),
        ((SEED, NODES, [2, 2], 6, T([0, 1]), False, True), ValueError, "one per sampled node"),
        ((SEED, NODES, [2, 2], 6, T([0, 0, 1, 1]).int(), False, True), TypeError, "seeds' dtype"),
    ],
)
def test_relabel_refuses(args, error, message):
    with pytest.raises(error, match=message):
        relabel_neighborhood(*args)


HETERO = (["paper"], [PAPER], {"paper": SEED}, {"paper": NODES}, {REL: [[2], [2]]}, {"paper": 6})


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({2: {}}, ValueError, "seed_dict is empty"),
        ({2: {"author": SEED}}, ValueError, "node type 'author'"),
        ({1: [("paper", "to", "author")]}, ValueError, "node type 'author'"),
        ({4: {}}, ValueError, "no entry 'paper__to__paper'"),
        ({4: {REL: [[2], [3]]}}, IndexError, "take 5 entries"),
        ({3: {}}, IndexError, "is missing"),
        ({3: {"paper": NODES.int()}}, TypeError, "share one dtype"),
        ({6: None, 8: True}, ValueError, "needs batch_dict"),
    ],
)
def test_hetero_relabel_refuses(change, error, message):
    args = list(HETERO) + [None, False, False]
    for i, value in change.items():
        args[i] = value
    with pytest.raises(error, match=message):
        hetero_relabel_neighborhood(*args)


def test_hetero_relabel_refuses_layers_that_differ_in_number():
    cites = ("paper", "cites", "paper")
    counts = {REL: [[2], [2]], "paper__cites__paper": [[1]]}
    with pytest.raises(ValueError, match="layers"):
        hetero_relabel_neighborhood(["paper"], [PAPER, cites], {"paper": SEED}, {"paper": NODES}, counts, {"paper": 6})


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({3: [1, 3, 0, 2]}, IndexError, "partition_ids\\[1\\] = 3"),
        ({4: [0, 2, 0, 0]}, IndexError, "partition_orders\\[1\\] = 2"),
        ({4: [0, 1, 0]}, ValueError, "partition_orders"),
        ({6: 1}, ValueError, "over num_neighbors = 1"),
        ({5: 4}, ValueError, "num_partitions = 4"),
        ({1: [T([17, 18]), T([14, 15]), T([19, 20])]}, IndexError, "runs past"),
        ({1: [e.int() for e in EDGE_IDS]}, TypeError, "share one dtype"),
        ({8: True}, ValueError, "needs batch"),
        ({7: T([0, 1]), 8: True}, ValueError, "at least 4 entries"),
        ({2: [[1, 3], [2, 4, 3], [1, 3]]}, ValueError, "decreases"),
    ],
)
def test_merge_refuses(change, error, message):
    args = [NODE_IDS, EDGE_IDS, CUMSUM, [1, 1, 0, 2], [0, 1, 0, 0], 3, 2, None, False]
    for i, value in change.items():
        args[i] = value
    with pytest.raises(error, match=message):
        merge_sampler_outputs(*args)


def test_docstring_examples_run():
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for f in (relabel_neighborhood, hetero_relabel_neighborhood, merge_sampler_outputs):
        for test in doctest.DocTestFinder().find(f, f.__name__, globs={"torch": torch, f.__name__: f}):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= 3
