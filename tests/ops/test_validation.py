"""Every bad input raises a clear Python exception before anything is written; ``out`` stays exactly as it was."""

import contextlib

import numpy as np
import pytest
import torch
from conftest import _backend, assert_device_assert
from strategies import REDUCES

import scatterx
from scatterx import reference
from scatterx.ops import _checks as checks
from scatterx.ops import index_scatter_reduce_from

SRC = torch.arange(24, dtype=torch.float32).reshape(6, 4)
GOOD_INDEX = torch.tensor([0, 0, 1, 2, 2, 3])


def call(**overrides):
    """index_scatter_reduce on a valid problem with ``overrides`` applied; ``out`` is always given."""
    args = dict(dim=0, index=GOOD_INDEX, src=SRC, reduce="sum", sorted=True)
    kwargs = dict(out=torch.full((4, 4), -1.0), include_self=True)
    for key, value in overrides.items():
        (kwargs if key in ("out", "dim_size", "include_self") else args)[key] = value
    out = kwargs["out"]
    before = out.clone() if isinstance(out, torch.Tensor) else None
    with pytest.raises(Exception) as info:
        scatterx.index_scatter_reduce(args["dim"], args["index"], args["src"], args["reduce"], args["sorted"], **kwargs)
    if before is not None:
        assert torch.equal(out, before), "out was modified by a failed call"
    return info


BAD_INPUTS = {
    # name: (overrides, exception type, words the message must contain)
    "index_out_of_range": (dict(index=torch.tensor([0, 0, 1, 2, 2, 4])), IndexError, ["index[5]=4", "dim_size=4"]),
    "index_out_of_range_unsorted": (
        dict(index=torch.tensor([9, 0, 1, 2, 2, 0]), sorted=False),
        IndexError,
        ["index[0]=9"],
    ),
    "index_negative": (dict(index=torch.tensor([-1, 0, 1, 2, 2, 3])), IndexError, ["index[0]=-1", "negative"]),
    "index_negative_unsorted": (
        dict(index=torch.tensor([0, 3, 1, -2, 2, 3]), sorted=False),
        IndexError,
        ["index[3]=-2", "negative"],
    ),
    "index_float": (dict(index=GOOD_INDEX.float()), TypeError, ["index", "float32"]),
    "index_bool": (dict(index=GOOD_INDEX.bool()), TypeError, ["index", "bool"]),
    "index_2d": (dict(index=GOOD_INDEX.view(2, 3)), ValueError, ["index", "1-D", "(2, 3)"]),
    "index_longer_than_src": (dict(index=torch.zeros(7, dtype=torch.long)), ValueError, ["7", "src.size(0)"]),
    "index_not_sorted": (
        dict(index=torch.tensor([0, 2, 1, 2, 2, 3])),
        ValueError,
        ["not sorted", "index[2]=1", "sorted=False"],
    ),
    # without dim_size the size is the last entry + 1, which an earlier entry of an unsorted index may exceed:
    # the broken promise is the error, not the range
    "index_not_sorted_no_size": (
        dict(index=torch.tensor([2, 0, 0, 0, 0, 0]), out=None),
        ValueError,
        ["not sorted", "index[1]=0", "sorted=False"],
    ),
    "index_not_tensor": (dict(index=[0, 1]), TypeError, ["index", "list"]),
    "dim_too_large": (dict(dim=2), IndexError, ["dim 2"]),
    "dim_too_small": (dict(dim=-3), IndexError, ["dim -3"]),
    "reduce_unknown": (dict(reduce="median"), ValueError, ["reduce", "'median'"]),
    "out_wrong_dtype": (dict(out=torch.zeros(4, 4, dtype=torch.float64)), TypeError, ["out", "float64", "float32"]),
    "out_wrong_shape": (dict(out=torch.zeros(4, 5)), ValueError, ["out", "(4, 5)"]),
    "out_wrong_ndim": (dict(out=torch.zeros(4)), ValueError, ["out", "(4,)"]),
    "dim_size_negative": (dict(out=None, dim_size=-1), ValueError, ["dim_size", "-1"]),
    "dim_size_disagrees_with_out": (dict(dim_size=5), ValueError, ["dim_size=5", "out.size(0)=4"]),
    "dim_size_too_small": (dict(out=None, dim_size=3), IndexError, ["index[5]=3", "dim_size=3"]),
    "src_bool": (dict(src=SRC.bool(), out=None), TypeError, ["src", "bool"]),
    "src_complex": (dict(src=SRC.to(torch.complex64), out=None), TypeError, ["src", "complex64"]),
    # a 0-d src is one slice along dim 0 (torch's index_add takes it), so only dims 0 and -1 exist for it
    "src_scalar_dim_out_of_range": (dict(src=torch.tensor(1.0), dim=1, out=None), IndexError, ["dim 1"]),
    "src_not_tensor": (dict(src=[[1.0]] * 6, out=None), TypeError, ["src", "list"]),
    "src_numpy": (dict(src=SRC.numpy(), out=None), TypeError, ["src", "ndarray"]),
    "index_numpy": (dict(index=GOOD_INDEX.numpy()), TypeError, ["index", "ndarray"]),
    "out_not_tensor": (dict(out=[[0.0] * 4] * 4), TypeError, ["out", "list"]),
    "out_numpy": (dict(out=torch.zeros(4, 4).numpy()), TypeError, ["out", "ndarray"]),
    "sorted_not_bool": (dict(sorted="yes"), TypeError, ["sorted"]),
    "include_self_not_bool": (dict(include_self="no"), TypeError, ["include_self", "str"]),
    "dim_size_huge": (dict(out=None, dim_size=2**40), MemoryError, ["dim_size=1099511627776", "bytes"]),
    "dim_size_beyond_int64": (
        dict(out=None, dim_size=2**63),
        ValueError,
        ["dim_size=9223372036854775808", "too large"],
    ),
    "dim_size_float": (dict(out=None, dim_size=4.0), TypeError, ["dim_size", "float"]),
    "dim_size_bool": (dict(out=None, dim_size=True), TypeError, ["dim_size", "bool"]),
    "dim_size_bool_tensor": (dict(out=None, dim_size=torch.tensor(True)), TypeError, ["dim_size", "torch.bool"]),
    # an empty output runs no kernel, and still every entry is checked against its size
    "dim_size_zero": (dict(out=None, dim_size=0), IndexError, ["index[0]=0", "dim_size=0"]),
    "out_empty_along_dim": (dict(out=torch.zeros(0, 4)), IndexError, ["index[0]=0", "dim_size=0"]),
    "dim_size_zero_unsorted": (
        dict(index=torch.tensor([3, 0, 1, 2, 2, 0]), sorted=False, out=None, dim_size=0),
        IndexError,
        ["index[0]=3", "dim_size=0"],
    ),
    "empty_feature_dim": (
        dict(src=SRC[:, :0], index=torch.tensor([0, 0, 1, 2, 2, 4]), out=torch.zeros(4, 0)),
        IndexError,
        ["index[5]=4", "dim_size=4"],
    ),
    "empty_feature_dim_new": (
        dict(src=SRC[:, :0], index=torch.tensor([-1, 0, 1, 2, 2, 3]), out=None, dim_size=4),
        IndexError,
        ["index[0]=-1", "negative"],
    ),
    "empty_feature_dim_unsorted": (
        dict(src=SRC[:, :0], index=torch.tensor([0, 3, 1, 9, 2, 3]), sorted=False, out=None, dim_size=4),
        IndexError,
        ["index[3]=9", "dim_size=4"],
    ),
    "empty_feature_dim_not_sorted": (
        dict(src=SRC[:, :0], index=torch.tensor([0, 2, 1, 2, 2, 3]), out=None, dim_size=4),
        ValueError,
        ["not sorted", "index[2]=1", "sorted=False"],
    ),
    # without dim_size the size is index.max() + 1, here 0: the negative entries are the error
    "negative_index_no_size": (
        dict(index=torch.tensor([-1, -2, -1, -3, -1, -1]), sorted=False, out=None),
        IndexError,
        ["index[0]=-1", "negative"],
    ),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_raises_clear_error_and_leaves_out_untouched(name):
    overrides, exc_type, words = BAD_INPUTS[name]
    info = call(**overrides)
    assert info.type is exc_type, f"{name}: got {info.type.__name__}: {info.value}"
    for word in words:
        assert word in str(info.value), f"{name}: {word!r} not in {str(info.value)!r}"


def test_out_untouched_when_out_of_range_value_hides_behind_a_sorted_prefix():
    """Every element of a large sorted index is checked (on every thread's chunk), not only its ends."""
    index = torch.arange(100_000) // 10  # 0..9999, sorted; first and last values are valid
    index[70_000] = 5_000_000
    src = torch.randn(100_000, 2)
    out = torch.zeros(10_000, 2)
    with pytest.raises((IndexError, ValueError)):
        scatterx.index_scatter_reduce(0, index, src, out=out)
    assert not out.any()


# --------------------------------------------------------------------------------------------- empty outputs
#: (src shape, dim, dim_size, sorted index, unsorted index, the words of the CPU's message for each): calls whose
#: output has no element, so that no kernel runs -- every index entry is still checked against the output size
EMPTY_OUTPUTS = {
    "dim_size_zero": ((3, 2), 0, 0, [0, 1, 5], [5, 0, 1], ["index[0]=0", "dim_size=0"], ["index[0]=5", "dim_size=0"]),
    "empty_feature_dim": ((3, 0), 0, 3, [0, 1, 5], [1, -1, 0], ["index[2]=5", "dim_size=3"], ["index[1]=-1"]),
    "empty_outer_dim": ((0, 3), 1, 3, [-1, 0, 1], [0, 3, 1], ["index[0]=-1"], ["index[1]=3", "dim_size=3"]),
}


@pytest.mark.parametrize("with_out", [False, True], ids=["new", "out"])
@pytest.mark.parametrize("sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("case", list(EMPTY_OUTPUTS))
def test_an_empty_output_still_checks_every_index_entry_on_every_route(route, case, sorted, with_out):
    """Whatever the other dims, an entry outside ``[0, dim_size)`` raises before anything is written, on every
    route: IndexError on the CPU, the device-side assert (RuntimeError) on the GPU backend."""
    if with_out and route.into_new:
        pytest.skip("the route writes new tensors only")
    if route.sorted and not sorted:
        pytest.skip("the route needs a sorted index")
    if route.name == "gpu" and not route.interpreted:
        pytest.skip("on CUDA the check is a device-side assert, which ends the process's CUDA context")
    shape, dim, dim_size, sorted_index, unsorted_index, sorted_words, unsorted_words = EMPTY_OUTPUTS[case]
    index = torch.tensor(sorted_index if sorted else unsorted_index)
    out_shape = list(shape)
    out_shape[dim] = dim_size
    out = torch.zeros(out_shape) if with_out else None
    size = dict(out=out) if with_out else dict(dim_size=dim_size)
    error = IndexError if route.name == "cpu" else RuntimeError
    with route, pytest.raises(error) as info:
        scatterx.index_scatter_reduce(dim, index, torch.ones(shape), "amax", sorted, **size)
    if route.name == "cpu":
        for word in sorted_words if sorted else unsorted_words:
            assert word in str(info.value)
    if with_out:
        assert torch.equal(out, torch.zeros(out_shape))


@pytest.mark.parametrize("case", list(EMPTY_OUTPUTS))
def test_an_empty_output_checks_the_index_on_every_entry_point(backend, case):
    """The autograd path, and the functional form with a base, without one and with the order not known."""
    if backend.name == "gpu" and not backend.interpreted:
        pytest.skip("on CUDA the check is a device-side assert, which ends the process's CUDA context")
    shape, dim, dim_size, _, index, _, words = EMPTY_OUTPUTS[case]
    index = torch.tensor(index)
    out_shape = list(shape)
    out_shape[dim] = dim_size
    base = torch.zeros(out_shape)
    error = IndexError if backend.name == "cpu" else RuntimeError
    calls = [
        lambda: scatterx.index_scatter_reduce(
            dim, index, torch.ones(shape, requires_grad=True), "sum", False, dim_size=dim_size
        ),
        lambda: index_scatter_reduce_from(dim, index, torch.ones(shape), "mean", None, None, dim_size=dim_size),
        lambda: index_scatter_reduce_from(dim, index, torch.ones(shape), "prod", False, None, dim_size=dim_size),
        lambda: index_scatter_reduce_from(dim, index, torch.ones(shape), "amin", None, base),
        lambda: index_scatter_reduce_from(dim, index, torch.ones(shape, requires_grad=True), "sum", False, base),
    ]
    for run in calls:
        with backend, pytest.raises(error) as info:
            run()
        if backend.name == "cpu":
            for word in words:
                assert word in str(info.value)
    assert torch.equal(base, torch.zeros(out_shape))


def test_an_empty_output_with_a_good_index_is_still_computed(route):
    """The check on empty outputs rejects nothing valid: an index in range (any order where the call allows it)."""
    index = torch.tensor([0, 2, 2] if route.sorted else [2, 0, 2])
    with route:
        got = scatterx.index_scatter_reduce(0, index, torch.ones(3, 0), "sum", route.sorted, dim_size=3)
        assert got.shape == (3, 0)
        got = scatterx.index_scatter_reduce(1, index, torch.ones(0, 3), "sum", route.sorted, dim_size=4)
        assert got.shape == (0, 4)
        got = scatterx.index_scatter_reduce(0, index[:0], torch.ones(3, 2), "sum", route.sorted, dim_size=0)
        assert got.shape == (0, 2)
        if not route.into_new:
            out = torch.zeros(3, 0)
            assert scatterx.index_scatter_reduce(0, index, torch.ones(3, 0), "sum", route.sorted, out=out) is out
        if not route.sorted:  # the order not known: a decreasing index in range takes an unsorted path
            got = index_scatter_reduce_from(0, torch.tensor([2, 1, 0]), torch.ones(3, 0), "sum", None, None, dim_size=3)
            assert got.shape == (3, 0)


# ----------------------------------------------------------------------------------------------- segment ops
SEG_SRC = torch.arange(10.0)


@pytest.mark.parametrize(
    "ptr, exc_type, words",
    [
        (torch.tensor([1, 4, 10]), ValueError, ["ptr[0]=1"]),
        (torch.tensor([0, 4, 9]), ValueError, ["ptr[-1]=9", "src.size(0)=10"]),
        (torch.tensor([0, 6, 4, 10]), ValueError, ["non-decreasing", "ptr[2]=4"]),
        (torch.tensor([0.0, 10.0]), TypeError, ["ptr", "float32"]),
        (torch.tensor([[0, 10]]), ValueError, ["ptr", "1-D"]),
        (torch.tensor([], dtype=torch.long), ValueError, ["ptr"]),
    ],
)
def test_segment_reduce_rejects_bad_ptr(ptr, exc_type, words):
    with pytest.raises(exc_type) as info:
        scatterx.segment_reduce(SEG_SRC, ptr)
    for word in words:
        assert word in str(info.value)


def test_segment_reduce_rejects_bad_reduce_and_dim():
    with pytest.raises(ValueError, match="reduce"):
        scatterx.segment_reduce(SEG_SRC, torch.tensor([0, 10]), "std")
    with pytest.raises(IndexError, match="dim 1"):
        scatterx.segment_reduce(SEG_SRC, torch.tensor([0, 10]), dim=1)


def test_a_dim_is_any_integer_torch_takes_and_not_a_bool():
    """As torch's own ``dim`` arguments: a NumPy integer and a 0-d integer tensor are dims (a PyG or NumPy caller's
    ``dim`` is often one), a bool, a float, a float tensor or a tensor with a dim is not -- through the fast small
    path's fallback and the general path alike, and in the torch_scatter drop-in."""
    import scatterx.torch_scatter as ts

    index, src = torch.tensor([0, 1, 1]), torch.arange(6.0).view(3, 2)
    want = scatterx.index_scatter_reduce(0, index, src, "amax")
    for dim in (np.int64(0), np.int32(-2), torch.tensor(0)):
        assert torch.equal(scatterx.index_scatter_reduce(dim, index, src, "amax"), want), dim
        assert torch.equal(scatterx.segment_reduce(src, torch.tensor([0, 1, 3]), "amax", dim=dim), want), dim
        assert torch.equal(ts.scatter(src, index, dim, reduce="max"), want), dim
    for dim in (True, np.bool_(False), 0.0, torch.tensor(0.0), torch.tensor([0])):
        with pytest.raises(TypeError, match="dim must be an int"):
            scatterx.index_scatter_reduce(dim, index, src, "amax")
        with pytest.raises(TypeError, match="dim must be an int"):
            scatterx.segment_reduce(src, torch.tensor([0, 1, 3]), dim=dim)
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        scatterx.index_scatter_reduce(np.int64(2), index, src)
    # the frameworks' frontends too (torch.scatter takes a NumPy dim)
    pos = torch.tensor([[0, 1], [1, 0]])
    got = scatterx.pytorch.scatter(torch.zeros(3, 2), np.int64(0), pos, torch.ones(2, 2))
    assert torch.equal(got, torch.scatter(torch.zeros(3, 2), 0, pos, torch.ones(2, 2)))
    with pytest.raises(TypeError, match="dim must be an int"):
        scatterx.pytorch.scatter(torch.zeros(3, 2), True, pos, torch.ones(2, 2))


def test_index_to_ptr_rejects_unsorted_and_out_of_range():
    with pytest.raises(ValueError, match="not sorted") as info:
        scatterx.index_to_ptr(torch.tensor([0, 2, 1]), 3)
    assert "sorted=False" not in str(info.value)  # index_to_ptr has no such argument
    assert "index_to_ptr needs a sorted" in str(info.value)
    with pytest.raises(IndexError, match="index\\[2\\]=3"):
        scatterx.index_to_ptr(torch.tensor([0, 1, 3]), 3)
    with pytest.raises(ValueError, match="dim_size"):
        scatterx.index_to_ptr(torch.tensor([0, 1]), -2)


def test_ptr_to_index_rejects_decreasing():
    with pytest.raises(ValueError, match="non-decreasing"):
        scatterx.ptr_to_index(torch.tensor([0, 3, 2]))


def test_bad_input_raises_the_same_through_the_autograd_path():
    """With gradients wanted, calls go through the custom op: the same checks, before anything is written."""
    src = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(IndexError, match="index\\[5\\]=4"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 1, 2, 2, 4]), src, dim_size=4)
    with pytest.raises(ValueError, match="not sorted"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 2, 1, 2, 2, 3]), src)
    with pytest.raises(ValueError, match="ptr\\[0\\]=1"):
        scatterx.segment_reduce(src, torch.tensor([1, 6]))


# -------------------------------------------------------------------------------- arguments that are not tensors
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: scatterx.segment_reduce([1.0, 2.0], torch.tensor([0, 2])), "src"),
        (lambda: scatterx.segment_reduce(torch.ones(2), [0, 2]), "ptr"),
        (lambda: scatterx.segment_reduce(torch.ones(2).numpy(), torch.tensor([0, 2])), "src"),
        (lambda: scatterx.gather_segment_reduce(torch.ones(2), [0, 1], torch.tensor([0])), "ptr"),
        (lambda: scatterx.gather_segment_reduce(torch.ones(2), torch.tensor([0, 1]), [0]), "index"),
        (
            lambda: scatterx.gather_segment_reduce(
                torch.ones(2), torch.tensor([0, 1]), torch.tensor([0]), transpose=([0, 1, 1], torch.tensor([0]))
            ),
            "transpose[0]",
        ),
        (lambda: scatterx.csr_transpose([0, 1], torch.tensor([0]), 2), "ptr"),
        (lambda: scatterx.csr_transpose(torch.tensor([0, 1]), torch.tensor([0]).numpy(), 2), "index"),
        (lambda: scatterx.index_to_ptr([0, 1], 2), "index"),
        (lambda: scatterx.ptr_to_index(torch.tensor([0, 1]).numpy()), "ptr"),
        (lambda: scatterx.segment_softmax([1.0], torch.tensor([0])), "src"),
        (lambda: scatterx.segment_softmax(torch.ones(1), [0]), "index"),
    ],
)
def test_arguments_that_are_not_tensors_raise_type_error_naming_them(call, name):
    with pytest.raises(TypeError, match=name.replace("[", r"\[").replace("]", r"\]")):
        call()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: scatterx.index_scatter_reduce(0, torch.tensor([0, 1, 1]), torch.ones(3).to_sparse()), "src"),
        (lambda: scatterx.index_scatter_reduce(0, torch.tensor([0, 1, 1]).to_sparse(), torch.ones(3)), "index"),
        (
            lambda: scatterx.index_scatter_reduce(
                0, torch.tensor([0, 1]), torch.ones(2), out=torch.ones(2).to_sparse()
            ),
            "out",
        ),
        (lambda: scatterx.segment_reduce(torch.ones(2, 2).to_sparse_csr(), torch.tensor([0, 2])), "src"),
        (lambda: scatterx.gather_segment_reduce(torch.ones(2), torch.tensor([0, 1]), torch.tensor([0]).to_sparse()),
         "index"),
    ],
)  # fmt: skip
def test_sparse_tensors_raise_type_error_naming_them(call, name):
    """The kernels read a dense tensor's memory: a sparse one is refused by name, not by torch's words inside."""
    with pytest.raises(TypeError, match=f"{name} must be a dense"):
        call()


@pytest.mark.parametrize("reduce", REDUCES)
def test_negated_views_are_read_and_written_as_their_values(reduce):
    """``x.conj().imag`` is a view with torch's negative bit: its memory holds the values' negatives. As ``src``
    it is read as its values, as ``out`` written through (the kernels read memory, so the op resolves the view)."""
    src = torch.tensor([1 + 2j]).conj().imag  # [-2.], a contiguous negated view
    assert src.is_neg()
    want = scatterx.index_scatter_reduce(0, torch.tensor([0]), src.resolve_neg(), reduce)
    assert torch.equal(scatterx.index_scatter_reduce(0, torch.tensor([0]), src, reduce), want)
    out = torch.tensor([5 + 7j]).conj().imag  # [-7.]
    want = scatterx.index_scatter_reduce(0, torch.tensor([0]), torch.tensor([2.0]), reduce, out=out.resolve_neg())
    assert scatterx.index_scatter_reduce(0, torch.tensor([0]), torch.tensor([2.0]), reduce, out=out) is out
    assert torch.equal(out, want)
    base = torch.tensor([5 + 7j]).conj().imag
    got = scatterx.scatter_reduce(base, 0, torch.tensor([0]), torch.tensor([2.0]), reduce)
    assert torch.equal(
        got, scatterx.scatter_reduce(base.resolve_neg(), 0, torch.tensor([0]), torch.tensor([2.0]), reduce)
    )


def _negated(t):
    """``t``'s values as a contiguous view with torch's negative bit (its memory holds their negatives; ``.imag``
    of a conjugate has one too, but a strided one, which the ops' ``contiguous()`` resolves by copying)."""
    view = torch._neg_view(-t)
    assert view.is_neg() and view.is_contiguous() and torch.equal(view.resolve_neg(), t)
    return view


NEGATED_CALLS = {
    "segment_reduce": lambda x, p, i: scatterx.segment_reduce(x, p, "amax"),
    "gather_segment_reduce": lambda x, p, i: scatterx.gather_segment_reduce(x, p, i, "sum", weight=x[:, 0]),
    "segment_softmax": lambda x, p, i: scatterx.segment_softmax(x, i),
    "sddmm": lambda x, p, i: scatterx.sddmm(p, i, x.view(6, 1, 3), x.view(6, 1, 3)[:2], "dot"),
    "gatv2_logits": lambda x, p, i: scatterx.gatv2_logits(p, i, x.view(6, 1, 3), x.view(6, 1, 3)[:2], x[:1], 0.2),
    "scatter_reduce": lambda x, p, i: scatterx.scatter_reduce(x, 0, i.view(-1, 1).expand(6, 3), x.flip(0), "prod"),
    "torch_scatter.scatter_max": lambda x, p, i: scatterx.torch_scatter.scatter_max(x, i, 0)[0],
    "torch_scatter.scatter(out=)": lambda x, p, i: scatterx.torch_scatter.scatter(x.flip(0), i, 0, out=x[:3].clone()),
}


@pytest.mark.parametrize("name", NEGATED_CALLS)
def test_every_op_reads_negated_views_as_their_values(name, backend):
    """As the core op (above): the other ops' kernels read memory too, so a negated view is read resolved."""
    import scatterx.torch_scatter  # noqa: F401  (binds scatterx.torch_scatter for the calls)

    x = backend.put(torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5)))
    ptr, index = backend.put(torch.tensor([0, 2, 6])), backend.put(torch.tensor([0, 0, 1, 1, 2, 2]))
    call = NEGATED_CALLS[name]
    with backend:
        torch.testing.assert_close(call(_negated(x), ptr, index), call(x, ptr, index))


# ----------------------------------------------------------------------------------------------- huge sizes
@pytest.mark.parametrize("value", [2**31, 2**40])
@pytest.mark.parametrize("sorted", [True, False])
def test_an_index_value_too_large_for_memory_names_the_output_size(value, sorted):
    """Without dim_size the output size is index.max() + 1: too large to allocate is a clear MemoryError."""
    src = torch.ones(2, 64)
    out_before = torch.zeros(1)
    with pytest.raises(MemoryError, match=rf"index.max\(\) \+ 1 = {value + 1}"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, value]), src, sorted=sorted)
    assert torch.equal(out_before, torch.zeros(1))


@pytest.mark.parametrize(
    "call",
    [
        lambda S: scatterx.segment_softmax(torch.ones(2, 3), torch.tensor([0, S - 1]), num_segments=S),
        lambda S: scatterx.segment_softmax(torch.ones(2, 3), torch.tensor([S - 1, 0]), sorted=False),
        lambda S: scatterx.csr_transpose(torch.tensor([0, 1]), torch.tensor([0]), S),
        lambda S: scatterx.index_scatter_reduce(0, torch.tensor([S - 1, 0]), torch.ones(2), sorted=False),
    ],
    ids=["softmax_sorted", "softmax_unsorted", "csr_transpose", "index_scatter_reduce"],
)
def test_the_memory_check_counts_what_the_segments_cost(call, monkeypatch):
    """Building a group's offsets from an unsorted index also counts its entries: 16 bytes a group, not the 8 of
    the offsets alone (an estimate of 8 let a call through that the OOM killer then ended). Free memory between
    the two estimates: a MemoryError, before anything is allocated."""
    groups = 2**27  # (offsets alone: just over the 1 GiB from which the check asks)
    monkeypatch.setattr(checks, "_free_bytes", lambda device: 12 * groups)
    with pytest.raises(MemoryError, match="would need"):
        call(groups)


def test_huge_sizes_of_the_structure_helpers_name_their_argument():
    with pytest.raises(MemoryError, match="dim_size=1099511627776"):
        scatterx.index_to_ptr(torch.tensor([0, 1]), 2**40)
    with pytest.raises(MemoryError, match="num_rows=1099511627776"):
        scatterx.csr_transpose(torch.tensor([0, 1]), torch.tensor([0]), 2**40)
    with pytest.raises(ValueError, match=r"num_rows=.* too large"):
        scatterx.csr_transpose(torch.tensor([0, 1]), torch.tensor([0]), 2**63)


# ------------------------------------------------------------------------------------ the caller's names
def test_messages_use_the_caller_s_names():
    with pytest.raises(IndexError, match=r"index\[1\]=5 is out of range for num_rows=3"):
        scatterx.csr_transpose(torch.tensor([0, 1, 2]), torch.tensor([0, 5]), 3)
    src = torch.ones(3, 2, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2])
    bad_transpose = (torch.tensor([0, 1, 1, 3]), torch.tensor([0, 7, 1]))  # index_t names segment 7 of 2
    with pytest.raises(IndexError, match=r"transpose\[1\] \(index_t\)\[1\]=7"):
        scatterx.gather_segment_reduce(src, ptr, index, transpose=bad_transpose)  # at the call, not in backward


# ------------------------------------------------------------------------------------ memory shared with out
@pytest.mark.parametrize(
    "sorted, route",
    [
        (True, None),
        (True, "segments"),
        (True, "gather"),
        (True, "slices"),
        (False, None),
        (False, "gather"),
        (False, "slices"),
    ],
)
def test_out_sharing_memory_with_index_is_computed_from_the_original_index(sorted, route):
    """Found by fuzzing: out viewing the index's memory (a segfault on the slice-owner path)."""
    from scatterx.backends.cpu import routes

    with contextlib.ExitStack() as stack:
        if route:
            stack.enter_context(routes.force(route))
        _check_out_sharing_memory_with_index(sorted)


def _check_out_sharing_memory_with_index(sorted):
    buf = torch.zeros(16, dtype=torch.int64)
    out = buf.view(4, 4)
    index = buf[4:12]
    index.copy_(torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]) if sorted else torch.tensor([3, 0, 2, 1, 1, 0, 2, 3]))
    src = torch.arange(32, dtype=torch.int64).view(4, 8)
    want = reference.index_scatter_reduce(1, index.clone(), src, "sum", out=out.clone())
    got = scatterx.index_scatter_reduce(1, index, src, "sum", sorted=sorted, out=out)
    assert got is out
    assert torch.equal(out, want)


def test_out_sharing_memory_with_src_through_another_storage():
    """Two torch.from_numpy views of one array are different storages over the same memory."""
    array = np.arange(12, dtype=np.float64)
    src = torch.from_numpy(array).view(6, 2)
    out = torch.from_numpy(array[:6]).view(3, 2)  # overlaps src's first three rows
    index = torch.tensor([2, 1, 0, 2, 1, 0])
    for sorted_index, sorted_flag in ((index, False), (index.sort().values, True)):
        array[:] = np.arange(12, dtype=np.float64)
        want = reference.index_scatter_reduce(0, sorted_index, src.clone(), "sum", out=out.clone())
        scatterx.index_scatter_reduce(0, sorted_index, src, "sum", sorted=sorted_flag, out=out)
        assert torch.equal(out, want)


# ----------------------------------------------------------------------------------------- the GPU backend
def test_gpu_bad_index_without_dim_size_raises_before_anything_runs():
    """Without dim_size the index is read on the host anyway: a Python exception, before any kernel."""
    gpu = _backend("gpu")
    src = gpu.put(torch.randn(3, 2))
    with gpu:
        with pytest.raises(IndexError, match=r"index\[1\]=-1 is negative"):
            scatterx.index_scatter_reduce(0, gpu.put(torch.tensor([0, -1, 2])), src, "sum", False)
        with pytest.raises(ValueError, match="not sorted"):
            scatterx.index_scatter_reduce(0, gpu.put(torch.tensor([2, 1, 2])), src, "sum", True)


@pytest.mark.parametrize("index", [[0, 5, 1], [0, -1, 1], [2, 1, 0]], ids=["too-large", "negative", "unsorted"])
def test_gpu_bad_index_with_dim_size_is_checked_on_the_device_and_out_is_untouched(index):
    gpu = _backend("gpu")
    if not gpu.interpreted:  # a device-side assert ends the CUDA context: each call in a process of its own
        for size in ("out=torch.randn(3, 2, device=DEVICE)", "dim_size=3"):
            assert_device_assert(
                f"""
                with GPU:
                    scatterx.index_scatter_reduce(
                        0, torch.tensor({index}, device=DEVICE), torch.randn(3, 2, device=DEVICE), "sum", True, {size}
                    )
                """,
                "index",
            )
        return
    src = torch.randn(3, 2)
    out = torch.randn(3, 2)
    before = out.clone()
    with gpu:
        with pytest.raises(RuntimeError, match="index"):
            scatterx.index_scatter_reduce(0, torch.tensor(index), src, "sum", True, out=out)
        assert torch.equal(out, before)
        with pytest.raises(RuntimeError, match="index"):
            scatterx.index_scatter_reduce(0, torch.tensor(index), src, "sum", True, dim_size=3)


def test_a_device_side_assert_is_caught_in_a_process_of_its_own():
    """The helper the CUDA runs of these tests use (``conftest.assert_device_assert``), here on this machine's GPU
    backend: a bad index fails the child process with the check's words, a good one does not."""
    _backend("gpu")
    assert_device_assert(
        """
        with GPU:
            scatterx.index_scatter_reduce(0, torch.tensor([0, 3], device=DEVICE), torch.ones(2, 1, device=DEVICE),
                                          "amax", True, dim_size=2)
        """,
        "dim_size=2",
    )
    with pytest.raises(AssertionError, match="no assert fired"):
        assert_device_assert("scatterx.index_scatter_reduce(0, torch.tensor([0, 1]), torch.ones(2, 1), 'amax')", "")


# --------------------------------------------------------------------------------- autodiff modes not supported
_INDEX = torch.tensor([0, 0, 1, 2])
AUTODIFF_CALLS = {
    "index_scatter_reduce": lambda s: scatterx.index_scatter_reduce(0, _INDEX, s, "sum", dim_size=3),
    "index_scatter_reduce_large": lambda s: scatterx.index_scatter_reduce(
        0, _INDEX.repeat(20_000), s.repeat(20_000, 1), "amax", sorted=False, dim_size=3
    ),
    "segment_softmax": lambda s: scatterx.segment_softmax(s, _INDEX),
    "segment_reduce": lambda s: scatterx.segment_reduce(s, torch.tensor([0, 2, 4]), "mean"),
    "torch_scatter": lambda s: scatterx.torch_scatter.scatter_max(s, _INDEX, 0)[0],
}


@pytest.mark.parametrize("name", list(AUTODIFF_CALLS))
def test_forward_mode_ad_raises_instead_of_dropping_the_tangent(name):
    """A dual tensor does not ask for a gradient, so the kernels ran on its primal and returned no tangent; now a
    NotImplementedError names the mode. Tensors without a tangent inside a dual level still compute."""
    import torch.autograd.forward_ad as fwAD

    call = AUTODIFF_CALLS[name]
    with fwAD.dual_level():
        dual = fwAD.make_dual(torch.randn(4, 2), torch.ones(4, 2))
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            call(dual)
        assert call(torch.randn(4, 2)).shape[1] == 2


@pytest.mark.parametrize("name", list(AUTODIFF_CALLS))
@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_torch_func_transforms_raise_by_name(name, transform):
    call = AUTODIFF_CALLS[name]
    with pytest.raises(NotImplementedError, match=r"torch\.func transforms"):
        if transform == "grad":
            torch.func.grad(lambda s: call(s).sum())(torch.randn(4, 2))
        else:
            torch.vmap(call)(torch.randn(3, 4, 2))
