"""``backends/_outputs.py``: new outputs on huge pages, and the arena of ``reusing_outputs`` that makes a large
output in the memory of an earlier one nothing references."""

import warnings

import pytest
import torch

from scatterx.backends import _outputs

LARGE = (_outputs.HUGE_PAGES_FROM_BYTES // 4 + 1024,)  # float32 elements: just over the threshold


def _large(dtype=torch.float32):
    return _outputs.empty(LARGE, dtype, "cpu")


def test_a_dropped_output_is_reused_only_within_the_block():
    _outputs.release_outputs()
    with _outputs.reusing_outputs():
        a = _large()
        where = a.data_ptr()
        del a
        b = _large()
        assert b.data_ptr() == where and b.shape == LARGE and b.is_contiguous() and b._base is None
        del b
        c = _large(torch.int32)  # same bytes, another dtype: the same size class
        assert c.data_ptr() == where and c.dtype == torch.int32
        del c
    d = _large()  # outside the block: fresh memory
    assert d.data_ptr() != where
    _outputs.release_outputs()


@pytest.mark.parametrize("holder", ["tensor", "view", "numpy", "saved for backward", "storage", "typed storage"])
def test_an_output_still_referenced_is_never_reused(holder):
    _outputs.release_outputs()
    with _outputs.reusing_outputs():
        a = _large().fill_(1.0)
        where = a.data_ptr()
        x = torch.ones(LARGE, requires_grad=True)
        if holder == "tensor":
            kept = a
        elif holder == "view":
            kept = a[10:20]
        elif holder == "numpy":
            kept = a.numpy()
        elif holder == "storage":  # (torch keeps one storage object per storage: the buffer's look sees this one)
            kept = a.untyped_storage()
        elif holder == "typed storage":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # (TypedStorage is deprecated)
                kept = a.storage()
        else:
            kept = x * a  # saves a for x's gradient
        del a
        b = _large().fill_(2.0)
        assert b.data_ptr() != where
        if holder == "saved for backward":
            kept.sum().backward()
            assert torch.equal(x.grad, torch.ones(LARGE))  # the saved a still holds its ones
        elif holder in ("storage", "typed storage"):
            assert float(torch.empty(0).set_(kept, 0, LARGE).min()) == 1.0
        else:
            assert float(torch.as_tensor(kept).min()) == 1.0
    _outputs.release_outputs()


def test_what_is_kept_is_bounded_and_released():
    _outputs.release_outputs()
    with _outputs.reusing_outputs():
        live = [_large() for _ in range(6)]  # all alive: no reuse, at most ``count`` kept
        assert len(_outputs._SPARES._buffers) <= _outputs._SPARES.count
        del live
    _outputs.release_outputs()
    assert _outputs._SPARES._buffers == []


def test_onnx_results_in_reused_memory_are_right_and_never_overwrite_a_live_one():
    from scatterx import onnx

    g = torch.Generator().manual_seed(0)
    data = torch.randn(1000, 64, generator=g)
    index = torch.randint(-1000, 1000, (150_000, 1), generator=g)  # a 38 MB result
    first = onnx.gather_nd(data, index)
    expected = data[index[:, 0]]
    other = onnx.gather_nd(data, index.flip(0))  # ``first`` is alive: not its memory
    assert torch.equal(first, expected) and torch.equal(other, expected.flip(0))
    del first, other
    again = onnx.gather_nd(data, index)
    assert torch.equal(again, expected)
    _outputs.release_outputs()
