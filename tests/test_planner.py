"""The planner and its engine against the reference executor of the x-transformer model, on random maps; and the
plan chosen for the shapes the frontends produce (sliceable cases must be recognised)."""

import itertools

import pytest
import torch
from conftest import assert_matches
from hypothesis import given
from hypothesis import strategies as st

from scatterx import planner, reference
from scatterx.planner import XMap

DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]


@st.composite
def xmaps(draw):
    """Any map the model allows: random coords/carried data dims, lookup-only u dims, carried dims shared with
    the lookup (sometimes with an index constant along them), u dims in random order."""
    rd = draw(st.integers(1, 3))
    data_shape = draw(st.lists(st.integers(1, 4), min_size=rd, max_size=rd))
    perm = draw(st.permutations(range(rd)))
    k = draw(st.integers(1, rd))
    coords, carried_t = list(perm[:k]), sorted(perm[k:])
    extra = draw(st.integers(0 if carried_t else 1, 2))  # lookup-only u dims (at least one u dim overall)
    u_sizes = [draw(st.integers(1, data_shape[t])) for t in carried_t] + draw(
        st.lists(st.integers(0, 4), min_size=extra, max_size=extra)
    )
    order = draw(st.permutations(range(len(u_sizes))))  # u dim of each entry above
    shape = [0] * len(u_sizes)
    for i, d in enumerate(order):
        shape[d] = u_sizes[i]
    carry = tuple((order[i], t) for i, t in enumerate(carried_t))
    shared = [order[i] for i in range(len(carried_t)) if draw(st.booleans())]
    lookup = sorted(shared + [order[len(carried_t) + j] for j in range(extra)])
    if draw(st.booleans()):
        lookup = draw(st.permutations(lookup))
    vector = k > 1 or draw(st.booleans())
    lshape = [shape[d] for d in lookup]
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    cols = [torch.randint(0, data_shape[t], lshape, generator=g) for t in coords]
    index = torch.stack(cols, -1) if vector else cols[0]
    for pos, d in enumerate(lookup):  # an index constant along a shared dim: the planner should drop it
        if d in shared and draw(st.booleans()):
            index = index.narrow(pos, 0, 1).expand(index.shape) if index.size(pos) else index
    return XMap(tuple(shape), tuple(data_shape), index, tuple(lookup), tuple(coords), carry, vector)


@given(
    m=xmaps(),
    reduce=st.sampled_from(planner.SCATTER_REDUCTIONS),
    include_self=st.booleans(),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 1000),
)
def test_scatter_matches_the_reference_executor(m, reduce, include_self, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(-5, 6, m.data_shape, generator=g).to(dtype)
    updates = torch.randint(-5, 6, m.shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        data, updates = data + torch.rand(m.data_shape, generator=g, dtype=dtype), updates / 4
    got = planner.scatter(m, data, updates, reduce, include_self)
    want = reference.x_scatter(m, data, updates, reduce, include_self)
    assert_matches(got, want, reduce)


@given(
    m=xmaps(),
    reduce=st.sampled_from([r for r in planner.SCATTER_REDUCTIONS if r != "assign"]),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 1000),
)
def test_reduced_is_a_scatter_into_zeros(m, reduce, dtype, seed):
    """``reduced`` (no zeros allocated on a slice plan) against the reference executor on zeros."""
    g = torch.Generator().manual_seed(seed)
    updates = torch.randint(-5, 6, m.shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        updates = updates / 4
    zeros = torch.zeros(m.data_shape, dtype=dtype)
    assert_matches(planner.reduced(m, updates, reduce), reference.x_scatter(m, zeros, updates, reduce, False), reduce)


@given(m=xmaps())
def test_gather_matches_the_reference_executor(m):
    data = torch.randn(m.data_shape)
    assert torch.equal(planner.gather(m, data), reference.x_gather(m, data))


@given(m=xmaps())
def test_plan_rows_name_the_reference_targets(m):
    """Whatever the plan, (outer, row, inner) of every u position lands where the definition says; element plans
    that the kernels run from the caller's index have no rows, and ``element_rows`` gives their flat offsets."""
    p = planner.plan(m)
    assert p.outer * p.n * p.inner == torch.Size(m.shape).numel()
    assert (p.rows is None) == (p.route in ("along", "coords"))
    rows = p.rows if p.rows is not None else planner.element_rows(m)
    assert rows.numel() == p.n
    assert (rows >= 0).all() and (rows < p.S).all()
    if p.kind == "element":  # flat offsets of the reference's targets, in u's row-major order
        strides = torch.ones(len(m.data_shape), dtype=torch.int64)
        for d in range(len(m.data_shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * m.data_shape[d + 1]
        want = [
            sum(c * int(s) for c, s in zip(reference.x_target(m, u), strides))
            for u in itertools.product(*map(range, m.shape))
        ]
        assert rows.tolist() == want


@given(
    m=xmaps(),
    reduce=st.sampled_from(planner.SCATTER_REDUCTIONS),
    include_self=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.int32]),
    seed=st.integers(0, 1000),
)
def test_element_kernels_equal_the_differentiable_path_bit_for_bit(m, reduce, include_self, dtype, seed):
    """Without a gradient element plans run on the element kernels, with one on the slice path's op over flat
    offsets: both reduce each target's values in u's order from the same start, so they agree bit for bit."""
    g = torch.Generator().manual_seed(seed)
    data = (torch.randn(m.data_shape, generator=g) * 100).to(dtype)
    updates = (torch.randn(m.shape, generator=g) * 100).to(dtype)
    got = planner.scatter(m, data, updates, reduce, include_self)
    if dtype.is_floating_point:
        with_grad = planner.scatter(m, data, updates.requires_grad_(), reduce, include_self).detach()
        assert torch.equal(got, with_grad)
        assert torch.equal(planner.gather(m, data), planner.gather(m, data.requires_grad_()).detach())
    else:
        assert_matches(got, reference.x_scatter(m, data, updates, reduce, include_self), reduce)


# ------------------------------------------------------------------------------------------ recognised plans
def along_dim(index, data_shape, dim):
    nd = index.dim()
    return XMap(
        tuple(index.shape), data_shape, index, tuple(range(nd)), (dim,), tuple((d, d) for d in range(nd) if d != dim)
    )


def test_index_expanded_from_1d_is_a_slice_plan_on_the_1d_index():
    idx = torch.tensor([3, 0, 3, 1])
    p = planner.plan(along_dim(idx.view(-1, 1).expand(4, 5), (4, 5), 0))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("slice", 1, 4, 4, 5)
    assert torch.equal(p.rows, idx) and not p.checked  # the kernel validates it


def test_one_coordinate_into_a_vector_is_a_slice_plan_of_single_elements():
    """A 1-D scatter (and any index into 1-D data) has no carried block, but its rows are the index itself: the
    core op runs it with ``inner = 1`` (its one-element-row kernels), not the element kernels."""
    idx = torch.tensor([3, 0, 3, 1])
    m = along_dim(idx, (5,), 0)
    p = planner.plan(m)
    assert (p.kind, p.outer, p.n, p.S, p.inner, p.route) == ("slice", 1, 4, 5, 1, "slice")
    assert torch.equal(p.rows, idx) and not p.checked
    updates = torch.tensor([1.0, 2.0, 4.0, 8.0])
    for reduce in ("sum", "amax", "assign"):
        assert torch.equal(
            planner.scatter(m, torch.zeros(5), updates, reduce), reference.x_scatter(m, torch.zeros(5), updates, reduce)
        )
    grid = XMap((2, 2), (5,), idx.view(2, 2), (0, 1), (0,), ())  # a 2-D index into a vector
    p = planner.plan(grid)
    assert (p.kind, p.n, p.S, p.inner) == ("slice", 4, 5, 1) and torch.equal(p.rows, idx)
    assert torch.equal(planner.gather(grid, torch.arange(5.0)), reference.x_gather(grid, torch.arange(5.0)))


def test_materialised_expanded_index_is_recognised_by_value():
    idx = torch.tensor([2, 2, 0])
    full = idx.view(1, -1, 1).expand(2, 3, 4).contiguous()  # equal values along dims 0 and 2, real strides
    p = planner.plan(along_dim(full, (2, 5, 4), 1))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("slice", 2, 3, 5, 4)
    assert torch.equal(p.rows, idx)


def test_index_varying_along_every_dim_is_an_element_plan():
    index = torch.tensor([[0, 1], [1, 0], [2, 2]])
    m = along_dim(index, (3, 2), 0)
    p = planner.plan(m)
    assert (p.kind, p.route, p.outer, p.n, p.S, p.inner) == ("element", "along", 1, 6, 6, 1)
    assert p.rows is None and not p.checked  # the kernel reads and validates the index itself
    assert planner.element_rows(m).tolist() == [0, 3, 2, 1, 4, 5]  # flat offsets: index * 2 + column


def test_index_constant_along_trailing_dims_only_keeps_them_as_the_slice():
    index = torch.tensor([[0, 1], [1, 0]]).view(2, 2, 1).expand(2, 2, 3)  # varies along dims 0 and 1
    p = planner.plan(along_dim(index, (2, 2, 3), 1))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("slice", 1, 4, 4, 3)
    assert p.rows.tolist() == [0, 1, 3, 2]  # batch * 2 + index


def test_scatter_nd_of_rows_is_a_slice_plan():
    indices = torch.tensor([[1, 2], [0, 0], [1, 2]])
    m = XMap((3, 5), (2, 3, 5), indices, (0,), (0, 1), ((1, 2),), vector=True)
    p = planner.plan(m)
    assert (p.kind, p.n, p.S, p.inner) == ("slice", 3, 6, 5)
    assert p.rows.tolist() == [5, 0, 5]


def test_scatter_nd_of_elements_is_an_element_plan():
    m = XMap((2,), (2, 3), torch.tensor([[1, 2], [0, 1]]), (0,), (0, 1), (), vector=True)
    p = planner.plan(m)
    assert (p.kind, p.route, p.rows) == ("element", "coords", None)
    assert planner.element_rows(m).tolist() == [5, 1]


def test_other_element_maps_build_flat_offsets():
    # gather_nd with a batch dim and whole coordinates: the batch is both looked up and carried
    m = XMap((2, 3), (2, 4), torch.tensor([[[1], [3], [0]], [[2], [2], [1]]]), (0, 1), (1,), ((0, 0),), vector=True)
    p = planner.plan(m)
    assert (p.kind, p.route, p.rows.tolist()) == ("element", "rows", [1, 3, 0, 6, 6, 5])
    data = torch.arange(8.0).view(2, 4)
    assert torch.equal(planner.gather(m, data), reference.x_gather(m, data))
    updates = torch.ones(2, 3)
    assert torch.equal(planner.scatter(m, data, updates, "sum"), reference.x_scatter(m, data, updates, "sum"))


def test_element_plans_never_build_offsets_without_autograd(monkeypatch):
    """The along-dim and coordinate routes read the caller's index (int32 here, transposed) as it is."""
    built = []
    real = planner._flat_rows
    monkeypatch.setattr(planner, "_flat_rows", lambda *a: built.append(1) or real(*a))
    index = torch.tensor([[0, 1, 2], [2, 0, 1]], dtype=torch.int32).t()  # (3, 2), strided
    data, updates = torch.zeros(3, 2), torch.arange(6.0).view(3, 2)
    m = along_dim(index, (3, 2), 0)
    assert torch.equal(planner.scatter(m, data, updates, "sum"), reference.x_scatter(m, data, updates, "sum"))
    assert torch.equal(planner.gather(m, updates), reference.x_gather(m, updates))
    nd = XMap((2,), (3, 2), torch.tensor([[2, 1], [0, 0]], dtype=torch.int32), (0,), (0, 1), (), vector=True)
    assert torch.equal(
        planner.scatter(nd, data, torch.ones(2), "assign"), reference.x_scatter(nd, data, torch.ones(2), "assign")
    )
    assert not built
    planner.scatter(m, data, updates.requires_grad_(), "sum")  # autograd: the slice path's op on flat offsets
    assert built


def test_index_smaller_than_the_data_scatters_into_a_leading_box():
    index = torch.tensor([[1, 0], [1, 1], [0, 1]])  # (3, 2) into (2, 4) along dim 0: columns 2 and 3 untouched
    data, src = torch.arange(8.0).view(2, 4), torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    m = XMap.along_dim(index, (2, 4), 0)
    for reduce in planner.SCATTER_REDUCTIONS:
        assert_matches(planner.scatter(m, data, src, reduce, False), reference.x_scatter(m, data, src, reduce, False))
    assert torch.equal(planner.gather(m, data), reference.x_gather(m, data))


def test_gather_nd_with_batch_dims_folds_the_batch_into_the_rows():
    # data (B=2, 3, 4); indices (2, 5, 1) with batch_dims=1: out[b, i, :] = data[b, indices[b, i, 0], :]
    indices = torch.tensor([[0, 2, 1, 1, 0], [2, 2, 0, 1, 1]]).view(2, 5, 1)  # differs between batches
    m = XMap((2, 5, 4), (2, 3, 4), indices, (0, 1), (1,), ((0, 0), (2, 2)), vector=True)
    p = planner.plan(m)
    assert (p.kind, p.n, p.S, p.inner) == ("slice", 10, 6, 4)
    assert torch.equal(p.rows, (indices[..., 0] + 3 * torch.arange(2).view(2, 1)).view(-1))


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_out_of_range_coordinate_is_reported_where_it_is(index_dtype):
    """Before anything is written (the data is untouched), on every route, with or without autograd."""
    data = torch.arange(6.0).view(2, 3)
    before = data.clone()
    message = r"index\[1, 1\] = 3 is out of bounds for dimension 1 with size 3"
    nd = XMap((2,), (2, 3), torch.tensor([[1, 2], [0, 3]], dtype=index_dtype), (0,), (0, 1), (), vector=True)
    along = along_dim(torch.tensor([[0, 1, 2], [0, 3, 1]], dtype=index_dtype), (2, 3), 1)
    for m, updates in [(nd, torch.ones(2)), (along, torch.ones(2, 3))]:
        for grad in (False, True):
            for reduce in ("assign", "sum", "amax"):
                with pytest.raises(IndexError, match=message):
                    planner.scatter(m, data, updates.clone().requires_grad_(grad), reduce)
            with pytest.raises(IndexError, match=message):
                planner.gather(m, data.clone().requires_grad_(grad))
        with pytest.raises(IndexError, match=message):
            planner.element_rows(m)
    assert torch.equal(data, before)


def test_element_plans_are_differentiable():
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 3, (4, 3), generator=g)
    m = along_dim(index, (3, 3), 0)
    nd = XMap((4,), (3, 3), torch.randint(0, 3, (4, 2), generator=g), (0,), (0, 1), (), vector=True)
    data = torch.randn(3, 3, dtype=torch.float64, generator=g, requires_grad=True)
    for mm, shape in [(m, (4, 3)), (nd, (4,))]:
        updates = torch.randn(shape, dtype=torch.float64, generator=g, requires_grad=True)
        for reduce in ("sum", "mean", "prod", "assign"):
            torch.autograd.gradcheck(
                lambda d, u, mm=mm, reduce=reduce: planner.scatter(mm, d, u, reduce), (data, updates)
            )
        torch.autograd.gradcheck(lambda d, mm=mm: planner.gather(mm, d), (data,))


def test_map_shapes_are_checked():
    with pytest.raises(ValueError, match="index has shape"):
        XMap((3,), (4,), torch.zeros(2, dtype=torch.long), (0,), (0,), ())
    with pytest.raises(ValueError, match="filled"):
        XMap((3, 2), (4, 2), torch.zeros(3, dtype=torch.long), (0,), (0,), ())


def test_bad_arguments_raise_documented_errors():
    index, data = torch.tensor([0, 1]), torch.zeros(2, 2)
    m = XMap.slices(index, (2, 2), 0)
    with pytest.raises(TypeError, match=r"index must be a torch\.Tensor"):
        XMap((2,), (2,), [0, 1], (0,), (0,), ())
    with pytest.raises(TypeError, match="int32 or int64"):
        XMap((2,), (2,), torch.tensor([0.0, 1.0]), (0,), (0,), ())
    with pytest.raises(IndexError, match="lookup names dim 3"):  # was "tuple index out of range"
        XMap((2,), (2,), index, (3,), (0,), ())
    with pytest.raises(IndexError, match="dim=5 is out of range"):
        XMap.slices(index, (2, 2), 5)
    with pytest.raises(IndexError, match="dim=-1 is out of range"):
        XMap.along_dim(index.view(2, 1), (2, 2), -1)
    with pytest.raises(TypeError, match="batch_dims must be an int"):
        XMap.nd(index.view(2, 1), (2, 2), batch_dims="0")
    with pytest.raises(ValueError, match="data must have rank >= 1"):
        XMap.nd(torch.zeros(1, 0, dtype=torch.long), ())
    for fn in (planner.plan, planner.simplify, planner.element_rows, planner.check_coordinates):
        with pytest.raises(TypeError, match="m must be an XMap"):
            fn("m")
    with pytest.raises(TypeError, match=r"data must be a torch\.Tensor"):
        planner.scatter(m, [[0.0, 0.0]] * 2, torch.ones(2, 2), "sum")
    with pytest.raises(TypeError, match=r"updates must be a torch\.Tensor"):
        planner.scatter(m, data, 1.0, "sum")
    with pytest.raises(ValueError, match="data has shape"):
        planner.gather(m, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="updates has shape"):
        planner.scatter(m, data, torch.ones(3, 2), "sum")
    with pytest.raises(TypeError, match="updates has dtype"):  # was the op's ValueError
        planner.scatter(m, data, torch.ones(2, 2, dtype=torch.float64), "sum")
    with pytest.raises(TypeError, match="reduce must be a str"):
        planner.scatter(m, data, torch.ones(2, 2), ["sum"])
    element = along_dim(torch.tensor([[1, 0], [0, 1]]), (2, 2), 0)
    with pytest.raises(ValueError, match="reduce must be one of"):  # "assign" ran on an element plan
        planner.reduced(element, torch.ones(2, 2), "assign")
    with pytest.raises(ValueError, match="kind must be one of"):
        planner.Plan("rows", 1, 1, 1, 1, None, False, None)
    assert torch.equal(data, torch.zeros(2, 2))


# ------------------------------------------------------------------------------ rows with no element to move
#: maps whose updates have no element though the index has entries (an empty inner or outer dim), with a bad
#: entry: a row index into a (3, 0) or (0, 3) data tensor, and one coordinate of a (3, 0) one (ONNX/TF ND)
EMPTY_UPDATES = {
    "inner": (XMap.slices(torch.tensor([0, 1, 5]), (3, 0), 0), (3, 0), r"index\[2\]=5 is out of range"),
    "outer": (XMap.slices(torch.tensor([-1, 0, 2]), (0, 3), 1), (0, 3), r"index\[0\]=-1 is negative"),
    "nd": (XMap.nd(torch.tensor([[0], [5]]), (3, 0)), (2, 0), r"index\[1\]=5 is out of range"),
}


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "grad"])
@pytest.mark.parametrize("case", list(EMPTY_UPDATES))
def test_rows_with_no_element_to_move_are_still_checked(case, grad):
    """Updates with no element but an index with entries: each entry is checked as it would be with elements to
    move (the engine returned a copy of the data before any check), in every reduction and in ``reduced``."""
    m, shape, message = EMPTY_UPDATES[case]
    data = torch.zeros(m.data_shape)
    updates = torch.ones(shape, requires_grad=grad)
    for reduce in ("assign", "sum", "mean", "prod", "amax", "amin"):
        with pytest.raises(IndexError, match=message):
            planner.scatter(m, data, updates, reduce)
        with pytest.raises(IndexError, match=message):
            planner.scatter(m, data, updates, reduce, include_self=False, torch_ties=True)
        if reduce != "assign":
            with pytest.raises(IndexError, match=message):
                planner.reduced(m, updates, reduce)


def test_rows_with_no_element_to_move_and_a_good_index_give_the_data():
    for index, data_shape, dim in [([0, 2, 2], (3, 0), 0), ([2, 0, 1], (0, 3), 1)]:
        m = XMap.slices(torch.tensor(index), data_shape, dim)
        for reduce in ("assign", "sum", "amax"):
            got = planner.scatter(m, torch.zeros(data_shape), torch.ones(m.shape), reduce)
            assert got.shape == data_shape
        assert planner.reduced(m, torch.ones(m.shape), "mean").shape == data_shape
    m = XMap.slices(torch.tensor([0, 2, 2]), (3, 0), 0)
    updates = torch.ones(m.shape, requires_grad=True)
    planner.scatter(m, torch.zeros(3, 0), updates, "sum").sum().backward()
    assert updates.grad is not None and updates.grad.shape == (3, 0)


# ------------------------------------------------------------------------------------- plans remembered per signature
def _scatter_both(m, data, updates, reduce="sum"):
    """The engine's result and the reference executor's, for one map."""
    return planner.scatter(m, data, updates, reduce), reference.x_scatter(m, data, updates, reduce)


@pytest.mark.parametrize("first", ["expanded", "general"])
def test_a_plan_is_not_reused_for_an_index_that_differs_only_in_a_stride(first):
    """An index expanded from 1-D (stride 0 along the features) and a general one have one shape: the first is a
    slice plan, the second an element plan, in either order."""
    g = torch.Generator().manual_seed(0)
    general = torch.randint(0, 5, (6, 3), generator=g)
    expanded = torch.randint(0, 5, (6, 1), generator=g).expand(6, 3)
    order = [expanded, general] if first == "expanded" else [general, expanded]
    data, updates = torch.randn(5, 3, generator=g), torch.randn(6, 3, generator=g)
    for index in order + order:
        m = XMap.along_dim(index, (5, 3), 0)
        assert planner.plan(m).kind == ("slice" if index is expanded else "element")
        ours, theirs = _scatter_both(m, data, updates)
        assert_matches(ours, theirs)


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_a_plan_is_not_reused_for_another_index_dtype(index_dtype):
    g = torch.Generator().manual_seed(1)
    data, updates = torch.randn(4, 2, generator=g), torch.randn(5, 2, generator=g)
    for dtype in (index_dtype, torch.int32 if index_dtype == torch.int64 else torch.int64):
        index = torch.randint(0, 4, (5, 2), generator=g).to(dtype)
        m = XMap.along_dim(index, (4, 2), 0)
        ours, theirs = _scatter_both(m, data, updates)
        assert_matches(ours, theirs)
        assert_matches(planner.gather(m, data), reference.x_gather(m, data))


def test_a_plan_is_not_reused_for_shapes_that_differ_in_a_size_one_dim():
    """ScatterND with rows of a (4, 1) data tensor, then of a (4, 3) one, then of a (4,) one."""
    g = torch.Generator().manual_seed(2)
    for data_shape in [(4, 1), (4, 3), (4,), (4, 1), (1, 4)]:
        index = torch.randint(0, data_shape[0], (6, 1), generator=g)
        m = XMap.nd(index, data_shape)
        data, updates = torch.randn(data_shape, generator=g), torch.randn(m.shape, generator=g)
        ours, theirs = _scatter_both(m, data, updates)
        assert_matches(ours, theirs)


@pytest.mark.parametrize(
    "make",
    [
        lambda i: XMap.along_dim(i, (5, 3), 0),  # element plan, "along": the kernel's own check
        lambda i: XMap.slices(i[:, 0], (5, 3), 0),  # slice plan, the rows are the index: the kernel's check
        lambda i: XMap.nd(torch.stack([i[:, 0], i[:, 1] % 3], -1), (5, 3)),  # "coords"
        lambda i: XMap((6, 3), (3, 5), i, (0, 1), (1,), ((1, 0),)),  # flat offsets: the planner's check
    ],
    ids=["along", "slice", "coords", "rows"],
)
def test_a_remembered_plan_still_checks_every_index(make):
    """The second call of a signature takes the remembered plan; an entry out of range must still raise, with
    nothing written."""
    g = torch.Generator().manual_seed(3)
    good = torch.randint(0, 3, (6, 3), generator=g)
    m = make(good)
    data, updates = torch.randn(m.data_shape, generator=g), torch.randn(m.shape, generator=g)
    before = data.clone()
    for reduce in ("sum", "assign"):
        planner.scatter(m, data, updates, reduce)
        bad = good.clone()
        bad[4, 0] = 7  # out of range in every map above
        with pytest.raises(IndexError):
            planner.scatter(make(bad), data, updates, reduce)
        with pytest.raises(IndexError):
            planner.gather(make(bad), data)
        assert torch.equal(data, before)


def test_an_index_constant_by_value_is_planned_each_call():
    """A slice plan found by comparing the index's values is not remembered: the next index of the same
    signature that varies is an element plan (and the reverse order stays right)."""
    g = torch.Generator().manual_seed(4)
    constant = torch.randint(0, 5, (6, 1), generator=g).repeat(1, 3)  # materialised: equal values, not stride 0
    varying = torch.randint(0, 5, (6, 3), generator=g)
    data, updates = torch.randn(5, 3, generator=g), torch.randn(6, 3, generator=g)
    for index in (constant, varying, constant, varying):
        m = XMap.along_dim(index, (5, 3), 0)
        ours, theirs = _scatter_both(m, data, updates)
        assert_matches(ours, theirs)
    assert planner.plan(XMap.along_dim(varying, (5, 3), 0)).kind == "element"


def test_a_remembered_form_still_refuses_a_dim_that_is_not_an_int():
    index = torch.zeros(2, 2, dtype=torch.int64)
    XMap((2, 2), (2, 2), index, (0, 1), (1,), ((0, 0),))
    for bad in (True, 1.0):
        with pytest.raises(IndexError):
            XMap((2, 2), (2, 2), index, (0, bad), (1,), ((0, 0),))


def test_a_plan_evicted_by_another_thread_meanwhile_is_no_error(monkeypatch):
    """Threads share the planner's caches: a recipe found, then evicted by another thread before it is marked as
    recently used, must still be applied (here the eviction happens inside the lookup itself)."""
    from collections import OrderedDict

    class Evicting(OrderedDict):
        def get(self, key, default=None):
            value = super().get(key, default)
            self.pop(key, None)  # another thread's eviction, between the lookup and the move to the end
            return value

    monkeypatch.setattr(planner._RECIPES, "_entries", Evicting())
    g = torch.Generator().manual_seed(6)
    data, updates = torch.randn(5, 3, generator=g), torch.randn(4, 3, generator=g)
    for _ in range(3):
        m = XMap.along_dim(torch.randint(0, 5, (4, 3), generator=g), (5, 3), 0)
        assert_matches(planner.scatter(m, data, updates, "sum"), reference.x_scatter(m, data, updates, "sum"))
    monkeypatch.setattr(planner._RECIPES, "_entries", OrderedDict())
    monkeypatch.setattr(planner._RECIPES, "size", 2)
    for key in range(5):
        planner._RECIPES.put(key, key)
    assert list(planner._RECIPES) == [3, 4]


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_assign_sorts_the_updates_in_eager_calls_and_gives_the_traced_path_s_rows(monkeypatch, index_dtype):
    """The last write of each row, from a stable sort of the updates' rows (nothing of the data's size allocated),
    equals the traced path's amax of positions into a table of one entry per data row, bit for bit."""
    g = torch.Generator().manual_seed(3)
    rows = torch.randint(0, 50, (200, 1), generator=g, dtype=index_dtype)  # many rows written several times
    m = XMap.nd(rows, (50, 3))
    data = torch.randn(50, 3, generator=g, dtype=torch.float64)
    updates = torch.randn(200, 3, generator=g, dtype=torch.float64, requires_grad=True)
    kernel_calls = []
    real = planner.index_scatter_reduce_from
    monkeypatch.setattr(planner, "index_scatter_reduce_from", lambda *a, **k: kernel_calls.append(a) or real(*a, **k))
    eager = planner.scatter(m, data, updates, "assign")
    assert not kernel_calls
    with monkeypatch.context() as traced:
        traced.setattr(torch.compiler, "is_compiling", lambda: True)
        through_table = planner.scatter(m, data, updates, "assign")
    assert kernel_calls and torch.equal(eager, through_table)
    assert torch.equal(eager, reference.x_scatter(m, data, updates.detach(), "assign"))
    (grad,) = torch.autograd.grad(eager.sum(), updates)
    last = {int(r): u for u, r in enumerate(rows.view(-1))}  # a row's gradient goes to its last write only
    assert grad.sum(1).tolist() == [3.0 if last[int(r)] == u else 0.0 for u, r in enumerate(rows.view(-1))]
    with pytest.raises(IndexError):  # a row out of range: the kernel's path and its check
        planner.scatter(XMap.nd(torch.tensor([[0], [50]]), (50, 3)), data, data[:2], "assign")
