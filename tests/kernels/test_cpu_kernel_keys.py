"""A caller's key for ``Kernel.entry`` must determine the types of the arguments (the suite checks every call it
makes: ``Kernel.check_keys``, set in conftest); here, that the check catches a key shared by two signatures."""

import numpy as np
import pytest

from scatterx.kernels.cpu import segments as kernels
from scatterx.kernels.cpu._codegen import Kernel


def test_a_key_shared_by_two_signatures_is_caught():
    assert Kernel.check_keys
    kernel = kernels.sorted_index_to_ptr
    index, ptr = np.array([0, 0, 1], np.int64), np.zeros(3, np.int64)
    counter = np.array([0, 1], np.int64)
    key = ("test: a key without the dtypes",)
    kernel.keyed(key, counter, index, ptr, 3)
    counter[:] = (0, 1)
    with pytest.raises(AssertionError, match="misses what tells them apart"):
        kernel.keyed(key, counter, index.astype(np.int32), ptr, 3)
