"""The TensorFlow and Paddle frontends replay golden vectors recorded by running the real frameworks
(``tools/make_golden.py``; neither framework is needed here). Each case is an input, the framework's call, and
either its result or the fact that it raised -- in which case scatterx must raise too (IndexError, ValueError or
TypeError), before writing anything."""

import json
import pathlib

import numpy as np
import pytest
import torch

import scatterx.paddle
import scatterx.tf

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
MODULES = {"tensorflow": scatterx.tf, "paddle": scatterx.paddle}


def decode(a):
    if not isinstance(a, dict):
        return a
    return torch.from_numpy(np.array(a["data"], dtype=a["dtype"]).reshape(a["shape"]))


def load(framework):
    doc = json.loads((GOLDEN / f"{framework}.json").read_text())
    return [pytest.param(framework, c, id=c["name"]) for c in doc["cases"]]


@pytest.mark.parametrize("framework, case", load("tensorflow") + load("paddle"))
def test_frontend_matches_the_framework(framework, case):
    fn = getattr(MODULES[framework], case["fn"])
    args = [decode(a) for a in case["args"]]
    snapshot = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    if "error" in case:
        with pytest.raises((IndexError, ValueError, TypeError)):
            fn(*args, **case["kwargs"])
    else:
        got = fn(*args, **case["kwargs"])
        want = decode(case["expect"])
        assert got.dtype == want.dtype
        if want.dtype.is_floating_point:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        else:
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    for before, after in zip(snapshot, args):  # inputs are never written, failed call or not
        if isinstance(before, torch.Tensor):
            assert torch.equal(before, after) or (
                before.is_floating_point() and torch.allclose(before, after, equal_nan=True)
            )


def test_golden_files_cover_every_frontend_function():
    for framework, names in {
        "tensorflow": [
            "tensor_scatter_nd_update",
            "tensor_scatter_nd_add",
            "tensor_scatter_nd_sub",
            "tensor_scatter_nd_max",
            "tensor_scatter_nd_min",
            "gather_nd",
            "unsorted_segment_sum",
            "unsorted_segment_prod",
            "unsorted_segment_max",
            "unsorted_segment_min",
            "unsorted_segment_mean",
        ],
        "paddle": ["scatter", "put_along_axis"],
    }.items():
        doc = json.loads((GOLDEN / f"{framework}.json").read_text())
        assert {c["fn"] for c in doc["cases"]} == set(names)


# ------------------------------------------------------------------------- argument errors (no golden vector)
def test_tensorflow_argument_errors():
    tf = scatterx.tf
    flags = torch.zeros(2, dtype=torch.bool)
    with pytest.raises(TypeError, match=r"reducing torch\.bool"):  # checked before negating (no RuntimeError)
        tf.tensor_scatter_nd_sub(flags, torch.tensor([[0]]), torch.ones(1, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"tensor must be a torch\.Tensor"):
        tf.tensor_scatter_nd_add([0.0, 0.0], torch.tensor([[0]]), torch.ones(1))
    data, ids = torch.tensor([1.0, 2.0]), torch.tensor([0, 1])
    for bad in (2.0, "2", None, torch.tensor(2.7), True):  # a float tensor was truncated to 2
        with pytest.raises(TypeError, match="num_segments"):
            tf.unsorted_segment_sum(data, ids, bad)
    with pytest.raises(ValueError, match="num_segments must be a scalar"):
        tf.unsorted_segment_sum(data, ids, torch.tensor([2, 3]))
    with pytest.raises(ValueError, match="non-negative"):
        tf.unsorted_segment_sum(data, ids, -1)
    assert tf.unsorted_segment_sum(data, ids, torch.tensor(3)).tolist() == [1.0, 2.0, 0.0]
    assert tf.unsorted_segment_sum(data, ids, np.int64(3)).tolist() == [1.0, 2.0, 0.0]  # as TensorFlow takes it


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_tensorflow_unsorted_segments_compiled_drop_negative_ids_and_refuse_ids_past_the_segments(reduce):
    """Compiled, negative ids go to an extra segment cut off after: an id equal to ``num_segments`` must not land
    there too (it was dropped, the result returned without an error)."""
    fn = getattr(scatterx.tf, f"unsorted_segment_{reduce}")
    compiled = torch.compile(lambda d, i: fn(d, i, 2), fullgraph=True, backend="aot_eager")
    data = torch.tensor([1.0, 2.0, 3.0, 4.0])
    good = torch.tensor([0, -1, 1, 0])
    torch.testing.assert_close(compiled(data, good), fn(data, good, 2))
    for bad in (torch.tensor([0, 1, 2, 0]), torch.tensor([0, 1, 5, -3])):
        with pytest.raises(IndexError, match="out of range"):
            fn(data, bad, 2)
        with pytest.raises(IndexError, match="out of range"):
            compiled(data, bad)


_COMPILED_OUT_OF_DIM = {
    # (the call, a bad index, a good one): a coordinate past its own dim but inside the data (row 1, column 3 of a
    # 4 x 3 tensor is flat offset 6); the traced path checked flat offsets only, and these read or wrote the next
    # row's element, or counted a negative coordinate from the end
    "tf.tensor_scatter_nd_add": (
        lambda x, i: scatterx.tf.tensor_scatter_nd_add(x, i, torch.ones(1)),
        [[1, 3]],
        [[1, 2]],
    ),
    "tf.tensor_scatter_nd_update": (
        lambda x, i: scatterx.tf.tensor_scatter_nd_update(x, i, torch.ones(1)),
        [[1, 3]],
        [[3, 0]],
    ),
    "tf.gather_nd": (scatterx.tf.gather_nd, [[1, 3]], [[1, 2]]),
    "tf.gather_nd, a negative coordinate": (scatterx.tf.gather_nd, [[1, -1]], [[0, 2]]),
    "tf.gather_nd, batch_dims=1": (
        lambda x, i: scatterx.tf.gather_nd(x, i, batch_dims=1),
        [[0], [3], [1], [2]],
        [[0], [2], [1], [2]],
    ),
    "paddle.put_along_axis": (
        lambda x, i: scatterx.paddle.put_along_axis(x, i, 1.0, 1),
        [[0], [3], [1], [2]],
        [[0], [2], [1], [2]],
    ),
}


@pytest.mark.parametrize("call", list(_COMPILED_OUT_OF_DIM))
@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_nd_calls_refuse_a_coordinate_outside_its_dim(call, dynamic):
    fn, bad, good = _COMPILED_OUT_OF_DIM[call]
    compiled = torch.compile(fn, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    x = torch.arange(12.0).reshape(4, 3)
    before = x.clone()
    with pytest.raises(IndexError):
        fn(x, torch.tensor(bad))
    with pytest.raises(IndexError):
        compiled(x, torch.tensor(bad))
    assert torch.equal(x, before)
    torch.testing.assert_close(compiled(x, torch.tensor(good)), fn(x, torch.tensor(good)))


@pytest.mark.parametrize("overwrite", [True, False])
def test_paddle_compiles_with_dynamic_shapes_and_an_axis_argument(overwrite):
    """With ``dynamic=True`` an int argument is symbolic: the axis is made a constant of the graph (it failed to
    trace, sorting dims by a symbolic key), and another axis compiles again."""
    pd = scatterx.paddle
    scatter = torch.compile(pd.scatter, fullgraph=True, dynamic=True, backend="aot_eager")
    put = torch.compile(pd.put_along_axis, fullgraph=True, dynamic=True, backend="aot_eager")
    for rows in (5, 7):
        x = torch.randn(rows, 3, generator=torch.Generator().manual_seed(rows))
        index, updates = torch.tensor([1, 2, 1]), torch.randn(3, 3)
        for axis in (0, -2):
            want = pd.scatter(x, index, updates, overwrite=overwrite, axis=axis)
            torch.testing.assert_close(scatter(x, index, updates, overwrite=overwrite, axis=axis), want)
        across = torch.randn(rows, 3, generator=torch.Generator().manual_seed(rows + 1))  # (len(index) along axis 1)
        want = pd.scatter(x, index, across, overwrite=overwrite, axis=1)
        torch.testing.assert_close(scatter(x, index, across, overwrite=overwrite, axis=1), want)
        indices = torch.tensor([[1], [2], [0], [1], [2], [0], [1]])[:rows]
        torch.testing.assert_close(put(x, indices, 1.0, 1), pd.put_along_axis(x, indices, 1.0, 1))
    with pytest.raises(ValueError, match="without overflow"):  # a number the dtype cannot hold: refused both ways
        pd.put_along_axis(x, indices, 1e300, 1)
    with pytest.raises(RuntimeError, match="without overflow"):  # (traced: torch's own conversion's check)
        put(x, indices, 1e300, 1)


@pytest.mark.parametrize("reduce", ["sum", "prod", "max", "min", "mean"])
def test_tensorflow_unsorted_segments_keep_the_graph_when_no_row_is_kept(reduce):
    """Every id negative, or no row at all: the result is still in ``data``'s graph (its gradient zeros, as
    TensorFlow's), not a tensor without one that a ``backward`` through it refuses."""
    fn = getattr(scatterx.tf, f"unsorted_segment_{reduce}")
    for data, ids in [
        (torch.ones(3, 2, dtype=torch.float64), torch.tensor([-1, -1, -2])),
        (torch.zeros(0, 2, dtype=torch.float64), torch.zeros(0, dtype=torch.long)),
    ]:
        leaf = data.clone().requires_grad_()
        out = fn(leaf, ids, 3)
        assert out.requires_grad
        torch.testing.assert_close(out.detach(), fn(data, ids, 3), rtol=0, atol=0)
        out.sum().backward()
        assert torch.equal(leaf.grad, torch.zeros_like(data))


def test_paddle_argument_errors():
    pd = scatterx.paddle
    x, index, updates = torch.zeros(3, 2), torch.tensor([2, 0]), torch.ones(2, 2)
    for flag in ("overwrite", "include_self"):  # were silently taken for their truth value
        with pytest.raises(TypeError, match=f"{flag} must be a bool"):
            pd.scatter(x, index, updates, **{flag: "no"})
    with pytest.raises(TypeError, match="reduce must be a str"):
        pd.scatter(x, index, updates, overwrite=False, reduce=["add"])
    arr, indices = torch.zeros(2, 3), torch.tensor([[1], [0]])
    with pytest.raises(TypeError, match="broadcast must be a bool"):
        pd.put_along_axis(arr, indices, 1.0, 1, broadcast=None)
    with pytest.raises(TypeError, match="reduce must be a str"):
        pd.put_along_axis(arr, indices, 1.0, 1, reduce=None)
    with pytest.raises(ValueError, match="cannot be broadcast"):  # was torch's RuntimeError from expand
        pd.put_along_axis(arr, indices, torch.ones(2, 3), 1)
    with pytest.raises(ValueError, match="at least one dimension"):  # was an IndexError from torch
        pd.put_along_axis(torch.tensor(1.0), torch.tensor(0), 5.0, 0)
    # indices that fit in arr but do not broadcast to its shape: Paddle's broadcast_to refuses them (they were
    # written at their own positions, the third row left untouched); without broadcasting they are written so
    arr, indices = torch.zeros(3, 4), torch.tensor([[0, 1], [2, 3]])
    before = arr.clone()
    with pytest.raises(ValueError, match=r"indices of shape \(2, 2\) cannot be broadcast to \(3, 2\)"):
        pd.put_along_axis(arr, indices, 1.0, 1)
    assert torch.equal(arr, before)
    got = pd.put_along_axis(arr, indices, 1.0, 1, broadcast=False)
    assert got.tolist() == [[1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]]


def test_tensorflow_mean_of_integers_is_the_sum_true_divided_by_the_count():
    """TensorFlow's ``unsorted_segment_mean`` is ``summed / N``, and ``/`` of integer tensors is ``tf.truediv``:
    float64 (the golden files hold no integer mean: ``tools/make_golden.py`` skips it, TF documenting float data).
    Not a floor of the mean; negative ids dropped, empty segments 0, the sum wrapping as TF's integer sum does."""
    tf = scatterx.tf
    for dtype in (torch.int32, torch.int64):
        data = torch.tensor([[1, -2], [2, -3], [4, 9], [7, 7]], dtype=dtype)
        got = tf.unsorted_segment_mean(data, torch.tensor([0, 0, -1, 2]), 4)
        assert got.dtype == torch.float64
        assert got.tolist() == [[1.5, -2.5], [0.0, 0.0], [7.0, 7.0], [0.0, 0.0]]
    big = torch.tensor([2**62, 2**62], dtype=torch.int64)  # the int64 sum wraps to -2**63, then is divided
    assert tf.unsorted_segment_mean(big, torch.tensor([0, 0]), 1).tolist() == [-(2.0**62)]
    with pytest.raises(IndexError):
        tf.unsorted_segment_mean(torch.tensor([1, 2]), torch.tensor([0, 5]), 3)


def test_tensorflow_mean_of_half_types_divides_the_half_sum():
    """On float16 and bfloat16, TensorFlow's ``summed / N`` divides a sum already rounded to the half type:
    a segment whose sum overflows float16 has the mean ``inf``, as its sum does; otherwise the divide of the
    rounded sum, with the mean's gradient."""
    tf = scatterx.tf
    big = torch.full((3,), 30000.0, dtype=torch.float16)  # sums to 90,000, past float16's 65,504
    assert tf.unsorted_segment_mean(big, torch.zeros(3, dtype=torch.long), 2).tolist() == [float("inf"), 0.0]
    for dtype in (torch.float16, torch.bfloat16):
        data = torch.tensor([[0.1, 3.0], [0.2, 5.0], [0.7, -1.0]], dtype=dtype, requires_grad=True)
        ids = torch.tensor([1, 1, -1])
        got = tf.unsorted_segment_mean(data, ids, 3)
        summed = tf.unsorted_segment_sum(data, ids, 3)
        assert got.dtype == dtype and torch.equal(got, summed / torch.tensor([1.0, 2.0, 1.0], dtype=dtype)[:, None])
        got.sum().backward()
        assert data.grad.tolist() == [[0.5, 0.5], [0.5, 0.5], [0.0, 0.0]]


def test_tensorflow_checks_every_index_when_the_data_has_no_element():
    """Slices of no element (an empty trailing dim) still name segments and rows: an id or index out of range
    raises as it does with elements (it passed silently); negative segment ids are still dropped."""
    tf = scatterx.tf
    data = torch.ones(3, 0)
    for fn in (tf.unsorted_segment_sum, tf.unsorted_segment_mean, tf.unsorted_segment_max, tf.unsorted_segment_prod):
        with pytest.raises(IndexError, match=r"index\[2\]=5 is out of range for dim_size=3"):
            fn(data, torch.tensor([0, 1, 5]), 3)
        assert fn(data, torch.tensor([0, -1, 2]), 3).shape == (3, 0)
    with pytest.raises(IndexError, match=r"index\[3\]=7 is out of range for dim_size=3"):
        tf.unsorted_segment_min(torch.ones(2, 2, 0), torch.tensor([[0, 1], [2, 7]]), 3)
    tensor = torch.zeros(3, 0)
    for fn in (
        tf.tensor_scatter_nd_update,
        tf.tensor_scatter_nd_add,
        tf.tensor_scatter_nd_sub,
        tf.tensor_scatter_nd_max,
        tf.tensor_scatter_nd_min,
    ):
        with pytest.raises(IndexError, match=r"index\[1\]=5 is out of range for dim_size=3"):
            fn(tensor, torch.tensor([[0], [5]]), torch.ones(2, 0))
        with pytest.raises(IndexError, match=r"index\[0\]=-1 is negative"):
            fn(tensor, torch.tensor([[-1], [0]]), torch.ones(2, 0))
        assert fn(tensor, torch.tensor([[0], [2]]), torch.ones(2, 0)).shape == (3, 0)
    with pytest.raises(IndexError, match=r"index\[1, 0\] = 5 is out of bounds"):
        tf.gather_nd(tensor, torch.tensor([[0], [5]]))


def test_paddle_checks_every_index_when_the_data_has_no_element():
    pd = scatterx.paddle
    for x, axis in ((torch.zeros(3, 0), 0), (torch.zeros(0, 3), 1)):
        updates = torch.ones(x.shape[:axis] + (3,) + x.shape[axis + 1 :])
        for overwrite in (True, False):
            with pytest.raises(IndexError, match=r"index\[2\] = 5 is out of range"):
                pd.scatter(x, torch.tensor([0, 1, 5]), updates, overwrite=overwrite, axis=axis)
        assert pd.scatter(x, torch.tensor([0, -1, 2]), updates, overwrite=False, axis=axis).shape == x.shape
