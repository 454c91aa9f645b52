"""The segment programs' tile shape (``kernels/gpu/_tiles.py``): powers of two, at most 2,048 elements a tile,
features covered first (up to 128, coalesced), rows up to the average segment length (no mostly-masked tiles for
short segments)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@given(st.integers(0, 10**7), st.integers(0, 10**6), st.integers(0, 5000))
def test_tiles_are_powers_of_two_within_2048_elements(rows, segments, inner):
    from scatterx.kernels.gpu._tiles import launch_config

    block_e, block_f = launch_config(rows, segments, inner)
    assert block_e & (block_e - 1) == 0 and block_f & (block_f - 1) == 0
    assert 1 <= block_e * block_f <= 2048
    assert block_f >= min(max(inner, 1), 128)  # the features first
    average = -(-rows // max(segments, 1))
    assert block_e <= max(1, 2 * average)  # no more rows than the average segment (rounded up to a power of 2)
