"""The planner and its engine against the reference executor of the x-transformer model, on random maps; and the
plan chosen for the shapes the frontends produce (sliceable cases must be recognised)."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from scatterx import planner, reference
from scatterx.planner import XMap
from conftest import assert_matches

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
        st.lists(st.integers(0, 4), min_size=extra, max_size=extra))
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


@given(m=xmaps(), reduce=st.sampled_from(planner.SCATTER_REDUCTIONS), include_self=st.booleans(),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 1000))
def test_scatter_matches_the_reference_executor(m, reduce, include_self, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(-5, 6, m.data_shape, generator=g).to(dtype)
    updates = torch.randint(-5, 6, m.shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        data, updates = data + torch.rand(m.data_shape, generator=g, dtype=dtype), updates / 4
    got = planner.scatter(m, data, updates, reduce, include_self)
    want = reference.x_scatter(m, data, updates, reduce, include_self)
    assert_matches(got, want, reduce)


@given(m=xmaps())
def test_gather_matches_the_reference_executor(m):
    data = torch.randn(m.data_shape)
    assert torch.equal(planner.gather(m, data), reference.x_gather(m, data))


@given(m=xmaps())
def test_plan_rows_name_the_reference_targets(m):
    """Whatever the plan, (outer, row, inner) of every u position lands where the definition says."""
    p = planner.plan(m)
    assert p.outer * p.n * p.inner == torch.Size(m.shape).numel()
    assert p.rows.numel() == p.n
    assert (p.rows >= 0).all() and (p.rows < p.S).all()


# ------------------------------------------------------------------------------------------ recognised plans
def along_dim(index, data_shape, dim):
    nd = index.dim()
    return XMap(tuple(index.shape), data_shape, index, tuple(range(nd)), (dim,),
                tuple((d, d) for d in range(nd) if d != dim))


def test_index_expanded_from_1d_is_a_slice_plan_on_the_1d_index():
    idx = torch.tensor([3, 0, 3, 1])
    p = planner.plan(along_dim(idx.view(-1, 1).expand(4, 5), (4, 5), 0))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("slice", 1, 4, 4, 5)
    assert torch.equal(p.rows, idx) and not p.checked  # the kernel validates it


def test_materialised_expanded_index_is_recognised_by_value():
    idx = torch.tensor([2, 2, 0])
    full = idx.view(1, -1, 1).expand(2, 3, 4).contiguous()  # equal values along dims 0 and 2, real strides
    p = planner.plan(along_dim(full, (2, 5, 4), 1))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("slice", 2, 3, 5, 4)
    assert torch.equal(p.rows, idx)


def test_index_varying_along_every_dim_is_an_element_plan():
    index = torch.tensor([[0, 1], [1, 0], [2, 2]])
    p = planner.plan(along_dim(index, (3, 2), 0))
    assert (p.kind, p.outer, p.n, p.S, p.inner) == ("element", 1, 6, 6, 1)
    assert p.rows.tolist() == [0, 3, 2, 1, 4, 5]  # flat offsets: index * 2 + column


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
    assert (p.kind, p.rows.tolist()) == ("element", [5, 1])


def test_gather_nd_with_batch_dims_folds_the_batch_into_the_rows():
    # data (B=2, 3, 4); indices (2, 5, 1) with batch_dims=1: out[b, i, :] = data[b, indices[b, i, 0], :]
    indices = torch.tensor([[0, 2, 1, 1, 0], [2, 2, 0, 1, 1]]).view(2, 5, 1)  # differs between batches
    m = XMap((2, 5, 4), (2, 3, 4), indices, (0, 1), (1,), ((0, 0), (2, 2)), vector=True)
    p = planner.plan(m)
    assert (p.kind, p.n, p.S, p.inner) == ("slice", 10, 6, 4)
    assert torch.equal(p.rows, (indices[..., 0] + 3 * torch.arange(2).view(2, 1)).view(-1))


def test_out_of_range_coordinate_is_reported_where_it_is():
    m = XMap((2,), (2, 3), torch.tensor([[1, 2], [0, 3]]), (0,), (0, 1), (), vector=True)
    with pytest.raises(IndexError, match=r"index\[1, 1\] = 3 is out of bounds for dimension 1 with size 3"):
        planner.plan(m)


def test_map_shapes_are_checked():
    with pytest.raises(ValueError, match="index has shape"):
        XMap((3,), (4,), torch.zeros(2, dtype=torch.long), (0,), (0,), ())
    with pytest.raises(ValueError, match="filled"):
        XMap((3, 2), (4, 2), torch.zeros(3, dtype=torch.long), (0,), (0,), ())
