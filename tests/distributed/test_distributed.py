"""scatterx.distributed in 1-4 real processes (gloo, torch.multiprocessing), against the single-process ops.

Every rank builds the same random problem from one seed (all ranks' edges), runs its own share through the
sharded op, and compares with the single-process result restricted to its rows (and, for gradients, to its
edges). A worker collects its mismatches and raises them at the end, so a failure names every wrong case."""

import pytest
import torch
from ranks import expect_raises, run_ranks

import scatterx
from scatterx import distributed as sxd

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin"]
TOLERANCE = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (5e-2, 3e-2),
    torch.int64: (0, 0),
}


# ---------------------------------------------------------------------------------------------------- problems
def problem(seed: int, world: int, dtype, features, reduce):
    """(partition, per-rank index list, per-rank src list): random sizes, empty partitions (random bounds, or more
    ranks than nodes), ranks with no edges, hubs (a few nodes with most edges) and isolated nodes. Small integers
    in the values make ties (amax/amin) and zeros (prod) across ranks common."""
    g = torch.Generator().manual_seed(seed)
    num_nodes = int(torch.randint(1, 12, (1,), generator=g))
    if seed % 3 == 0:
        cuts = torch.randint(0, num_nodes + 1, (world - 1,), generator=g).sort().values.tolist()
        part = sxd.NodePartition([0, *cuts, num_nodes])
    else:
        part = sxd.NodePartition.even(num_nodes, world)
    hubs = torch.randint(0, num_nodes, (2,), generator=g)
    indices, sources = [], []
    for _ in range(world):
        edges = int(torch.randint(0, 9, (1,), generator=g))
        index = torch.randint(0, num_nodes, (edges,), generator=g)
        index = torch.where(
            torch.rand(edges, generator=g) < 0.4, hubs[torch.randint(0, 2, (edges,), generator=g)], index
        )
        if seed % 2:
            index = index.sort().values
        small = torch.randint(-2, 3, (edges, *features), generator=g)
        # fractions only where the dtype sums them exactly enough; bfloat16 gets integers (exact in any order)
        if dtype in (torch.float32, torch.float64) and reduce not in ("amax", "amin", "prod"):
            src = (small + torch.rand((edges, *features), generator=g, dtype=torch.float64)).to(dtype)
        else:
            src = small.to(dtype)
        indices.append(index)
        sources.append(src)
    return part, indices, sources


def _close(got, want, dtype):
    atol, rtol = TOLERANCE[dtype]
    try:
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol, equal_nan=True)
        return None
    except AssertionError as error:
        return str(error).splitlines()[0]


# ------------------------------------------------------------------------------------------------ the workers
def check_index_scatter_reduce(rank, world, seeds):
    failures = []
    for seed in seeds:
        for reduce in REDUCTIONS:
            for dtype, features in (
                (torch.float64, (3,)),
                (torch.float32, ()),
                (torch.bfloat16, (2, 2)),
                (torch.int64, (2,)),
            ):
                part, indices, sources = problem(seed, world, dtype, features, reduce)
                start, stop = part.range(rank)
                all_index, all_src = torch.cat(indices), torch.cat(sources)
                want = scatterx.index_scatter_reduce(0, all_index, all_src, reduce, False, dim_size=part.num_nodes)[
                    start:stop
                ]
                got = sxd.index_scatter_reduce(
                    indices[rank], sources[rank], reduce, partition=part, sorted=bool(seed % 2)
                )
                again = sxd.index_scatter_reduce(sxd.plan(indices[rank], part), sources[rank], reduce, partition=part)
                case = f"seed {seed} {reduce} {dtype} {features}"
                if (problem_ := _close(got, want, dtype)) is not None:
                    failures.append(f"{case}: forward: {problem_}")
                if not torch.equal(got.view(-1).view(torch.uint8), again.view(-1).view(torch.uint8)):
                    failures.append(f"{case}: not bitwise deterministic (with a plan)")
                if dtype is torch.float64:
                    failures += _gradient_failures(case, rank, part, indices, sources, reduce, seed)
    failures += _half_partial_failures(rank, world)
    assert not failures, f"rank {rank} of {world}:\n" + "\n".join(failures)


def _half_partial_failures(rank, world):
    """float16 rows whose partial sum on rank 0 (40000 + 30000) is above float16's largest value, the whole sum
    (with -60000 from each other rank) within it: accumulated in float32 as the single-process op does."""
    part = sxd.NodePartition.even(2, world)
    indices = [torch.tensor([1, 1, 0]) for _ in range(world)]
    sources = [torch.tensor([40000.0, 30000.0, 1.0] if r == 0 else [-30000.0, -30000.0, 2.0]) for r in range(world)]
    failures = []
    for reduce in ("sum", "mean"):
        half = [s.half() for s in sources]
        want = scatterx.index_scatter_reduce(0, torch.cat(indices), torch.cat(half), reduce, False, dim_size=2)
        mine = half[rank].clone().requires_grad_()
        got = sxd.index_scatter_reduce(indices[rank], mine, reduce, partition=part)
        start, stop = part.range(rank)
        if not torch.equal(got, want[start:stop]):
            failures.append(f"float16 {reduce} with a partial sum above float16's range: {got} != {want[start:stop]}")
        got.backward(torch.ones_like(got))
        if not torch.isfinite(mine.grad).all():
            failures.append(f"float16 {reduce}: gradient {mine.grad}")
    return failures


def _gradient_failures(case, rank, part, indices, sources, reduce, seed):
    start, stop = part.range(rank)
    grad_out = torch.randn(
        (part.num_nodes, *sources[0].shape[1:]), dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1)
    )
    leaves = [s.clone().requires_grad_() for s in sources]
    full = scatterx.index_scatter_reduce(
        0, torch.cat(indices), torch.cat(leaves), reduce, False, dim_size=part.num_nodes
    )
    full.backward(grad_out)
    mine = sources[rank].clone().requires_grad_()
    sxd.index_scatter_reduce(indices[rank], mine, reduce, partition=part).backward(grad_out[start:stop])
    found = _close(mine.grad, leaves[rank].grad, torch.float64)
    return [] if found is None else [f"{case}: gradient: {found}"]


def check_halo_gather(rank, world, seeds):
    failures = []
    for seed in seeds:
        for dtype in (torch.float64, torch.bfloat16, torch.int64):
            part, indices, _ = problem(seed, world, dtype, (), "sum")
            g = torch.Generator().manual_seed(seed)
            x = (torch.randn(part.num_nodes, 3, generator=g, dtype=torch.float64) * 10).to(dtype)
            start, stop = part.range(rank)
            requests = [i.flip(0) for i in indices]  # any order, repeats
            got = sxd.halo_gather(x[start:stop], requests[rank], partition=part)
            if not torch.equal(got, x[requests[rank]]):
                failures.append(f"seed {seed} {dtype}: forward differs from x[index]")
            if dtype is not torch.float64:
                continue
            grads = [torch.randn(len(r), 3, generator=g, dtype=torch.float64) for r in requests]
            want = torch.zeros_like(x).index_add_(0, torch.cat(requests), torch.cat(grads))[start:stop]
            x_local = x[start:stop].clone().requires_grad_()
            sxd.halo_gather(x_local, sxd.plan(requests[rank], part), partition=part).backward(grads[rank])
            if (found := _close(x_local.grad, want, dtype)) is not None:
                failures.append(f"seed {seed}: gradient: {found}")
    assert not failures, f"rank {rank} of {world}:\n" + "\n".join(failures)


def check_bad_input_raises_everywhere(rank, world):
    """Each bad input is on one rank only (the last); every rank must raise the same exception, not hang."""
    part = sxd.NodePartition.even(6, world)
    last = rank == world - 1
    index = torch.tensor([0, 5, 2])
    src = torch.ones(3, 2)
    cases = [
        (
            "id out of range",
            IndexError,
            rf"rank {world - 1}: index holds 6",
            lambda: sxd.index_scatter_reduce(torch.tensor([0, 6, 2]) if last else index, src, partition=part),
        ),
        (
            "negative id",
            IndexError,
            rf"rank {world - 1}: index holds -1",
            lambda: sxd.halo_gather(
                torch.ones(part.size(rank), 2), torch.tensor([-1]) if last else index, partition=part
            ),
        ),
        (
            "rows do not match the partition",
            ValueError,
            rf"rank {world - 1}: x_local has",
            lambda: sxd.halo_gather(torch.ones(part.size(rank) + last, 2), index, partition=part),
        ),
        (
            "src rows do not match index",
            ValueError,
            rf"rank {world - 1}: src has 2 rows",
            lambda: sxd.index_scatter_reduce(index, src[:2] if last else src, partition=part),
        ),
        (
            "partition of another world size",
            ValueError,
            "the partition has",
            lambda: sxd.index_scatter_reduce(index, src, partition=sxd.NodePartition.even(6, world + 1)),
        ),
        (
            "unknown reduction",
            ValueError,
            "reduce",
            lambda: sxd.index_scatter_reduce(index, src, "median", partition=part),
        ),
        (
            "not sorted",
            ValueError,
            "non-decreasing",
            lambda: sxd.index_scatter_reduce(index, src, partition=part, sorted=True),
        ),
        (
            # (the order check read it first, raising torch's error on that rank alone: the others waited)
            "a complex index, sorted=True",
            TypeError,
            rf"rank {world - 1}: index must be int32 or int64",
            lambda: sxd.index_scatter_reduce(
                index.sort().values.to(torch.complex64 if last else torch.int64), src, partition=part, sorted=True
            ),
        ),
    ]
    if world > 1:
        cases.append(
            (
                "dtypes differ between ranks",
                ValueError,
                "the ranks disagree",
                lambda: sxd.index_scatter_reduce(index, src.double() if last else src, partition=part),
            )
        )
    failures = []
    for name, error, match, call in cases:
        expect_raises(failures, name, error, match, call)
    # after all that, the group still works
    ones = sxd.index_scatter_reduce(torch.tensor([rank % 6]), torch.ones(1), partition=part)
    assert ones.sum().item() == sum(1 for r in range(world) if part.range(rank)[0] <= r % 6 < part.range(rank)[1])
    assert not failures, f"rank {rank} of {world}:\n" + "\n".join(failures)


# ------------------------------------------------------------------------------------------------------ tests
# 3 ranks already split unevenly and outnumber the cores; 4 ranks run in the halo test and in bench-dist's
@pytest.mark.parametrize("world", [1, 2, 3])
def test_index_scatter_reduce_matches_single_process(world):
    run_ranks(check_index_scatter_reduce, world, list(range(6)))


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_halo_gather_matches_indexing(world):
    run_ranks(check_halo_gather, world, list(range(4)))


@pytest.mark.parametrize("world", [1, 3])
def test_bad_input_raises_on_every_rank(world):
    run_ranks(check_bad_input_raises_everywhere, world)


def test_node_partition():
    part = sxd.NodePartition.even(10, 4)
    assert part.bounds == (0, 3, 6, 8, 10) and part.world_size == 4 and part.num_nodes == 10
    assert [part.range(r) for r in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert part.owner(torch.arange(10)).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    empty = sxd.NodePartition([0, 0, 4, 4, 6])  # ranks 0 and 2 own nothing
    assert empty.owner(torch.tensor([0, 3, 4, 5])).tolist() == [1, 1, 3, 3] and empty.owner(4) == 3
    assert sxd.NodePartition.even(2, 4).bounds == (0, 1, 2, 2, 2)
    for bad, error in (([1, 3], ValueError), ([0, 3, 2], ValueError), ([0], ValueError), ([0, 1.5], TypeError)):
        with pytest.raises(error):
            sxd.NodePartition(bad)
    with pytest.raises(IndexError, match="out of range"):
        part.owner(torch.tensor([10]))
    with pytest.raises(IndexError):
        part.range(4)


def test_one_process_without_init_is_the_core_op():
    """Without torch.distributed initialised the ops run as one rank owning every node."""
    part = sxd.NodePartition.even(5, 1)
    index, src = torch.tensor([4, 0, 4]), torch.tensor([[1.0], [2.0], [3.0]])
    for reduce in REDUCTIONS:
        torch.testing.assert_close(
            sxd.index_scatter_reduce(index, src, reduce, partition=part),
            scatterx.index_scatter_reduce(0, index, src, reduce, False, dim_size=5),
        )
        ints = torch.tensor([[-3], [2], [4]], dtype=torch.int32)  # int32 mean: floor division, int32 kept
        torch.testing.assert_close(
            sxd.index_scatter_reduce(index, ints, reduce, partition=part),
            scatterx.index_scatter_reduce(0, index, ints, reduce, False, dim_size=5),
        )
    assert sxd.halo_gather(torch.arange(5.0), torch.tensor([4, 4, 1]), partition=part).tolist() == [4.0, 4.0, 1.0]


def test_argument_types_are_type_errors():
    """A wrong type is a TypeError, a bad value a ValueError (NodePartition.even used to raise ValueError for both,
    string bounds were read as ints, and plan() with no partition leaked an AttributeError)."""
    for num_nodes, world_size in ((10.0, 2), ("10", 2), (True, 2), (10, 2.0), (10, None), (10, True)):
        with pytest.raises(TypeError, match="must be an int"):
            sxd.NodePartition.even(num_nodes, world_size)
    for num_nodes, world_size in ((-1, 2), (10, 0)):
        with pytest.raises(ValueError):
            sxd.NodePartition.even(num_nodes, world_size)
    assert sxd.NodePartition.even(torch.tensor(4), 2).bounds == (0, 2, 4)  # an integer scalar is an int
    for bounds in (["0", "3"], [0, True], "03"):
        with pytest.raises(TypeError, match="bounds must be a sequence of ints"):
            sxd.NodePartition(bounds)
    with pytest.raises(TypeError, match=r"partition must be a scatterx\.distributed\.NodePartition"):
        sxd.plan(torch.tensor([0, 1]), None)
