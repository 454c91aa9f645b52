"""scatterx.onnx against the ``onnx`` package's reference implementation (opset 18), on random inputs with
negative indices, every reduction and batch_dims; and its errors."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper  # a test dependency (pyproject's [test] extra): its reference is the oracle here
from onnx.reference import ReferenceEvaluator

import scatterx.onnx as sxo

OPSET = [helper.make_opsetid("", 18)]
DTYPES = [np.float32, np.float64, np.int32, np.int64]
REDUCTIONS = ["none", "add", "mul", "max", "min"]


def run_onnx(op, inputs, **attrs):
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    return ReferenceEvaluator(node).run(None, dict(zip(names, inputs)))[0]


def check(got: torch.Tensor, want: np.ndarray):
    want = torch.from_numpy(np.array(want))  # (not ascontiguousarray: it makes a 0-d array 1-d)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3)


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return np.asarray((rng.integers(-8, 9, shape) / 4).astype(dtype))
    return np.asarray(rng.integers(-4, 5, shape).astype(dtype))


def indices_for(rng, size, shape, itype=np.int64):
    return rng.integers(-size, size, shape).astype(itype)  # negative indices on purpose


@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31))
def test_gather_elements(shape, data, dtype, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    # ONNX's reference requires the index to match data in every dim but axis (scatterx also takes smaller ones)
    ishape = [s if d != axis % len(shape) else data.draw(st.integers(1, 5)) for d, s in enumerate(shape)]
    x = values(rng, shape, dtype)
    idx = indices_for(rng, shape[axis], ishape, data.draw(st.sampled_from([np.int32, np.int64])))
    # (the reference mishandles a negative axis in GatherElements: give it the normalised one)
    want = run_onnx("GatherElements", [x, idx], axis=axis % len(shape))
    check(sxo.gather_elements(torch.from_numpy(x), torch.from_numpy(idx), axis), want)


@given(
    shape=shapes,
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    reduction=st.sampled_from(REDUCTIONS),
    seed=st.integers(0, 2**31),
)
def test_scatter_elements(shape, data, dtype, reduction, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = [
        data.draw(st.integers(1, s)) if d != axis % len(shape) else data.draw(st.integers(1, 6))
        for d, s in enumerate(shape)
    ]
    x, upd = values(rng, shape, dtype), values(rng, ishape, dtype)
    idx = indices_for(rng, shape[axis], ishape)
    if data.draw(st.booleans()):  # an index expanded along every dim but axis: the slice path
        sel = [slice(0, 1) if d != axis % len(shape) else slice(None) for d in range(len(shape))]
        idx = np.broadcast_to(idx[tuple(sel)], ishape).copy()
    want = run_onnx("ScatterElements", [x, idx, upd], axis=axis, reduction=reduction)
    check(
        sxo.scatter_elements(torch.from_numpy(x), torch.from_numpy(idx), torch.from_numpy(upd), axis, reduction), want
    )


@given(
    shape=shapes,
    ishape=st.lists(st.integers(0, 3), max_size=2),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31),
)
def test_gather(shape, ishape, data, dtype, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = values(rng, shape, dtype)
    idx = indices_for(rng, shape[axis], ishape)
    want = run_onnx("Gather", [x, idx], axis=axis)
    check(sxo.gather(torch.from_numpy(x), torch.from_numpy(idx), axis), want)


@st.composite
def nd_problems(draw, with_batch):
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    b = draw(st.integers(0, len(shape) - 1)) if with_batch else 0
    k = draw(st.integers(1, len(shape) - b))  # (the reference cannot do k = 0; TensorFlow's golden vectors do)
    inner_idx = draw(st.lists(st.integers(1, 3), max_size=2))
    idx = np.stack([rng.integers(-s, s, shape[:b] + inner_idx) for s in shape[b : b + k]], -1)
    return shape, b, idx.astype(np.int64), rng


@given(p=nd_problems(with_batch=True), dtype=st.sampled_from(DTYPES))
def test_gather_nd(p, dtype):
    shape, b, idx, rng = p
    x = values(rng, shape, dtype)
    want = run_onnx("GatherND", [x, idx], batch_dims=b)
    check(sxo.gather_nd(torch.from_numpy(x), torch.from_numpy(idx), b), want)


@given(p=nd_problems(with_batch=False), dtype=st.sampled_from(DTYPES), reduction=st.sampled_from(REDUCTIONS))
def test_scatter_nd(p, dtype, reduction):
    shape, _, idx, rng = p
    x = values(rng, shape, dtype)
    upd = values(rng, list(idx.shape[:-1]) + shape[idx.shape[-1] :], dtype)
    want = run_onnx("ScatterND", [x, idx, upd], reduction=reduction)
    check(sxo.scatter_nd(torch.from_numpy(x), torch.from_numpy(idx), torch.from_numpy(upd), reduction), want)


# ------------------------------------------------------------------------------------------------ hand cases
def test_scatter_elements_spec_example_with_negative_index():
    data = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]])
    got = sxo.scatter_elements(data, torch.tensor([[1, -2]]), torch.tensor([[1.1, 2.1]]), axis=1)
    assert torch.equal(got, torch.tensor([[1.0, 1.1, 3.0, 2.1, 5.0]]))


def test_narrow_negative_indices_count_from_the_end_of_a_dim_past_int32():
    """An int32 index into a dim of 2^31 elements or more (ONNX and Paddle both wrap through ``wrap_negative``):
    -1 is the last element, not an error, and the size is not truncated to 32 bits."""
    from scatterx._frontend import wrap_negative

    big = 2**31 + 10
    got = wrap_negative(torch.tensor([-1, -2, 3], dtype=torch.int32), big, "indices")
    assert got.dtype == torch.int64 and got.tolist() == [big - 1, big - 2, 3]
    got = wrap_negative(torch.tensor([[0, -1], [-1, 2]], dtype=torch.int32), [2, big], "indices")
    assert got.tolist() == [[0, big - 1], [1, 2]]
    with pytest.raises(IndexError, match="out of range"):
        wrap_negative(torch.tensor([-3, 0], dtype=torch.int32), [2, big], "indices")
    small = wrap_negative(torch.tensor([-1, 1], dtype=torch.int32), 5, "indices")
    assert small.dtype == torch.int32 and small.tolist() == [4, 1]  # narrow sizes keep the index's type


def test_scatter_nd_duplicates_last_write_wins():
    got = sxo.scatter_nd(torch.zeros(3), torch.tensor([[1], [1], [2], [1]]), torch.tensor([5.0, 6.0, 7.0, 8.0]))
    assert got.tolist() == [0.0, 8.0, 7.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda: sxo.gather_elements(torch.zeros(2, 3), torch.tensor([[0, 3]]), axis=1),
        lambda: sxo.gather_elements(torch.zeros(2, 3), torch.tensor([[0, -4]]), axis=1),
        lambda: sxo.gather(torch.zeros(2, 3), torch.tensor([2]), axis=0),
        lambda: sxo.gather_nd(torch.zeros(2, 3), torch.tensor([[1, 3]])),
        lambda: sxo.scatter_nd(torch.zeros(2, 3), torch.tensor([[1, -4]]), torch.zeros(1)),
        lambda: sxo.scatter_elements(torch.zeros(2, 3), torch.tensor([[5]]), torch.zeros(1, 1), reduction="add"),
        # updates with no element (an empty trailing dim of data): the indices are checked all the same
        lambda: sxo.scatter_nd(torch.zeros(3, 0), torch.tensor([[0], [5]]), torch.zeros(2, 0)),
        lambda: sxo.scatter_nd(torch.zeros(3, 0), torch.tensor([[0], [-4]]), torch.zeros(2, 0), reduction="max"),
        lambda: sxo.scatter_elements(torch.zeros(0, 3), torch.tensor([[0, 1, 2]]), torch.zeros(1, 3)),
        lambda: sxo.gather_nd(torch.zeros(3, 0), torch.tensor([[3]])),
    ],
)
def test_out_of_range_indices_raise_index_error(call):
    with pytest.raises(IndexError, match="out of range"):
        call()


def test_bad_arguments():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="reduction"):
        sxo.scatter_elements(x, torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1), reduction="mean")
    with pytest.raises(ValueError, match="updates has shape"):
        sxo.scatter_nd(x, torch.tensor([[1]]), torch.zeros(2))
    with pytest.raises(ValueError, match="exceeds the rank"):
        sxo.gather_nd(x, torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="int32 or int64"):
        sxo.gather(x, torch.zeros(1))
    with pytest.raises(TypeError, match="dtype"):
        sxo.scatter_elements(x, torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.float64))


def test_wrong_argument_types_and_0d_data_raise_documented_errors():
    x = torch.zeros(2, 3)
    i = torch.zeros(1, 1, dtype=torch.long)
    for reduction in (None, ["add"]):  # a TypeError of its own, not ValueError / "unhashable type"
        with pytest.raises(TypeError, match="reduction must be a str"):
            sxo.scatter_elements(x, i, torch.zeros(1, 1), reduction=reduction)
        with pytest.raises(TypeError, match="reduction must be a str"):
            sxo.scatter_nd(x, torch.tensor([[1]]), torch.zeros(1, 3), reduction=reduction)
    with pytest.raises(TypeError, match="batch_dims must be an int"):
        sxo.gather_nd(x, torch.zeros(2, 1, dtype=torch.long), batch_dims="1")
    with pytest.raises(ValueError, match="GatherElements: data must have rank >= 1"):
        sxo.gather_elements(torch.tensor(1.0), torch.tensor(0))
    with pytest.raises(ValueError, match="ScatterElements: data must have rank >= 1"):
        sxo.scatter_elements(torch.tensor(1.0), torch.tensor(0), torch.tensor(2.0))
    with pytest.raises(ValueError, match="ScatterND: data must have rank >= 1"):
        sxo.scatter_nd(torch.tensor(1.0), torch.zeros(1, 0, dtype=torch.long), torch.ones(1))


def test_elements_of_data_empty_after_the_axis_or_a_carried_dim():
    """A data dim of size 0 after a carried dim makes that dim's stride 0: empty results of the index's shape (the
    gathers) and the data unchanged (the scatters), as ONNX's reference and torch.gather give."""
    long = torch.long
    assert sxo.gather_elements(torch.zeros(1, 0), torch.zeros(0, 0, dtype=long), axis=1).shape == (0, 0)
    assert sxo.gather_elements(torch.zeros(2, 0), torch.zeros(0, 3, dtype=long), axis=1).shape == (0, 3)
    assert sxo.gather_elements(torch.zeros(2, 0, 3), torch.zeros(2, 0, 5, dtype=long), axis=2).shape == (2, 0, 5)
    data = torch.zeros(1, 0)
    for reduction in ("none", "add", "max"):
        out = sxo.scatter_elements(data, torch.zeros(0, 0, dtype=long), torch.zeros(0, 0), axis=1, reduction=reduction)
        assert out.shape == (1, 0) and out is not data


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_calls_match_eager_with_static_and_dynamic_shapes(dynamic):
    """``torch.compile(fullgraph=True)``, shapes static and symbolic (the ND ops' per-coordinate sizes were a list
    of symbolic ints, which the size check read with a builtin ``max`` that Dynamo does not trace): eager's results,
    at two sizes through one compiled function."""
    torch._dynamo.reset()
    calls = [
        lambda d, i, u: sxo.gather_nd(d, i[:, :1]),
        lambda d, i, u: sxo.scatter_nd(d, i[:, :1], u, "add"),
        lambda d, i, u: sxo.gather_elements(d, i.expand(-1, d.size(1)), axis=0),
        lambda d, i, u: sxo.scatter_elements(d, i.expand(-1, d.size(1)), u, axis=0, reduction="max"),
    ]
    for call in calls:
        compiled = torch.compile(call, fullgraph=True, dynamic=dynamic, backend="aot_eager")
        for rows in (5, 8):
            data = torch.randn(rows, 3, generator=torch.Generator().manual_seed(rows))
            index = torch.tensor([[0], [rows - 1], [-1]])
            updates = torch.randn(3, 3, generator=torch.Generator().manual_seed(rows + 1))
            torch.testing.assert_close(compiled(data, index, updates), call(data, index, updates))


def test_compiled_nd_calls_picking_slices_trace_with_dynamic_shapes():
    """``batch_dims`` and the index's last size name dims: traced with dynamic shapes both were symbolic, and the
    map's dims could not be sorted (a failure to trace whenever the index picks slices, not elements)."""
    torch._dynamo.reset()
    gather = torch.compile(sxo.gather_nd, fullgraph=True, dynamic=True, backend="aot_eager")
    scatter = torch.compile(sxo.scatter_nd, fullgraph=True, dynamic=True, backend="aot_eager")
    batched = torch.compile(
        lambda d, i: sxo.gather_nd(d, i, batch_dims=1), fullgraph=True, dynamic=True, backend="aot_eager"
    )
    for rows in (4, 6):
        data = torch.randn(rows, 2, 3, generator=torch.Generator().manual_seed(rows))
        index = torch.tensor([[1], [rows - 1], [-1]])
        torch.testing.assert_close(gather(data, index), sxo.gather_nd(data, index))
        pairs, updates = torch.tensor([[1, 0], [2, 1], [0, 1]]), torch.randn(3, 3)
        torch.testing.assert_close(scatter(data, pairs, updates), sxo.scatter_nd(data, pairs, updates))
        per_row = torch.arange(rows).remainder(2).view(rows, 1)
        torch.testing.assert_close(batched(data, per_row), sxo.gather_nd(data, per_row, batch_dims=1))


def test_traced_negative_indices_below_minus_the_size_go_past_the_end():
    """Traced, the wrap adds the size to a negative index once; one below ``-size`` stayed negative, and an
    Inductor-compiled ``onnx.gather`` counted it from the end again (column 2 for -4 into 3 columns, where eager
    raises). It goes past the end now, where every backend's range check refuses it. (Checked on the traced wrap
    itself: an Inductor compile with an empty cache costs this suite ~30 s.)"""
    from scatterx._frontend import wrap_negative

    torch._dynamo.reset()
    wrap = torch.compile(lambda i: wrap_negative(i, 3, "indices"), fullgraph=True, backend="aot_eager")
    wrap_nd = torch.compile(lambda i: wrap_negative(i, [4, 3], "indices"), fullgraph=True, backend="aot_eager")
    index = torch.tensor([-4, -3, -1, 0, 2, 3, -7])
    assert wrap(index).tolist() == [3, 0, 2, 0, 2, 3, 3]
    assert wrap(index.to(torch.int32)).tolist() == [3, 0, 2, 0, 2, 3, 3]
    assert wrap_nd(torch.tensor([[-5, -4], [-4, -3], [3, -1]])).tolist() == [[4, 3], [0, 0], [3, 2]]
    data = torch.arange(12.0).reshape(4, 3)
    with pytest.raises(IndexError):
        sxo.gather(data, torch.tensor([-4]), axis=1)
    gather = torch.compile(sxo.gather, fullgraph=True, backend="aot_eager")
    with pytest.raises((IndexError, RuntimeError)):  # (traced, torch's index_select's own error)
        gather(data, torch.tensor([0, -4]), axis=1)
    torch.testing.assert_close(
        gather(data, torch.tensor([-3, 2]), axis=1), sxo.gather(data, torch.tensor([-3, 2]), axis=1)
    )
