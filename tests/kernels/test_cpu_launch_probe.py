"""The kernels that time a launch (``kernels/cpu/launch_probe.py``) do the work they claim, on any thread count."""

import numpy as np
import pytest

from scatterx.kernels.cpu import launch
from scatterx.kernels.cpu.launch_probe import add_one, empty


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_probe_kernels_do_their_work(threads):
    assert launch(empty, None, 64, threads) == 64
    values = np.arange(1000, dtype=np.float32)
    assert launch(add_one, None, 4, threads, values, 256) == 0
    assert np.array_equal(values, np.arange(1000, dtype=np.float32) + 1)
