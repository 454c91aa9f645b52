"""The Triton kernels called directly (CUDA, else Triton's interpreter): they stay inside their buffers whatever
the index holds (the device-side checks run separately)."""

import pytest
import torch

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_atomic_kernel_skips_targets_out_of_range():
    from scatterx.kernels.gpu import scatter

    acc = torch.zeros(6, 2, device=DEVICE)
    counts = torch.zeros(6, dtype=torch.int32, device=DEVICE)
    src = torch.ones(4, 2, device=DEVICE)
    index = torch.tensor([0, 3, -1, 1], device=DEVICE)  # 3 is out of range for the first 3 rows of acc
    scatter.atomic_scatter_kernel[(1,)](src, index, acc, counts, 4, 4, 3, 2, COUNT=True, BLOCK_E=4, BLOCK_F=2)
    assert acc.cpu().tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    assert counts.cpu().tolist() == [1, 1, 0, 0, 0, 0]
