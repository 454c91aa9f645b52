"""Two kernels that exist to time a launch (``scatterx bench``'s launch table): one that claims its work items
and does nothing, and one that adds 1 to a block of an array per item -- the cost of starting threads, against a
little memory-bound work."""

from numba import njit

from ._codegen import Kernel, claim


@njit(cache=True, nogil=True, error_model="numpy")
def empty_kernel(counter):
    """Claims items until none is left; returns how many this call claimed."""
    claimed = 0
    while claim(counter) >= 0:
        claimed += 1
    return claimed


@njit(cache=True, nogil=True, error_model="numpy")
def add_one_kernel(counter, values, step):
    """``values[i] += 1`` for the positions of each claimed item (``step`` positions an item); returns 0."""
    n = values.shape[0]
    while True:
        item = claim(counter)
        if item < 0:
            break
        for i in range(item * step, min(n, (item + 1) * step)):
            values[i] += 1
    return 0


empty = Kernel(empty_kernel)
add_one = Kernel(add_one_kernel)
