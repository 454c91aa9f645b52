"""Every bad input raises a clear Python exception before anything is written; ``out`` stays exactly as it was."""

import pytest
import torch

import scatterx

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
    "index_out_of_range_unsorted": (dict(index=torch.tensor([9, 0, 1, 2, 2, 0]), sorted=False), IndexError, ["index[0]=9"]),
    "index_negative": (dict(index=torch.tensor([-1, 0, 1, 2, 2, 3])), IndexError, ["index[0]=-1", "negative"]),
    "index_negative_unsorted": (dict(index=torch.tensor([0, 3, 1, -2, 2, 3]), sorted=False), IndexError, ["index[3]=-2", "negative"]),
    "index_float": (dict(index=GOOD_INDEX.float()), TypeError, ["index", "float32"]),
    "index_bool": (dict(index=GOOD_INDEX.bool()), TypeError, ["index", "bool"]),
    "index_2d": (dict(index=GOOD_INDEX.view(2, 3)), ValueError, ["index", "1-D", "(2, 3)"]),
    "index_longer_than_src": (dict(index=torch.zeros(7, dtype=torch.long)), ValueError, ["7", "src.size(0)"]),
    "index_not_sorted": (dict(index=torch.tensor([0, 2, 1, 2, 2, 3])), ValueError, ["not sorted", "index[2]=1", "sorted=False"]),
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
    "src_scalar": (dict(src=torch.tensor(1.0), out=None), ValueError, ["src", "0-d"]),
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


def test_index_to_ptr_rejects_unsorted_and_out_of_range():
    with pytest.raises(ValueError, match="not sorted"):
        scatterx.index_to_ptr(torch.tensor([0, 2, 1]), 3)
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
