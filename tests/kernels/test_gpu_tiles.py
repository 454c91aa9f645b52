"""The segment programs' tile shape (``kernels/gpu/_tiles.py``): powers of two, at most 2,048 elements and 16 rows a
tile, features covered first (8 to 128, coalesced), and one shape per power of two of the row width -- the few
variants ``tile_shapes()`` lists, which every launch must come from."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@given(st.integers(0, 5000))
def test_tiles_are_powers_of_two_within_2048_elements(inner):
    from scatterx.kernels.gpu._tiles import launch_config, tile_shapes

    block_e, block_f = launch_config(inner)
    assert block_e & (block_e - 1) == 0 and block_f & (block_f - 1) == 0
    assert 1 <= block_e * block_f <= 2048 and block_e <= 16
    assert block_f >= min(max(inner, 1), 128)  # the features first
    assert block_f < 2 * max(inner, 1) or block_f == 8  # the row rounded up to a power of two, or the narrowest
    assert block_e * block_f >= 128  # a tile holds an element for each of a program's 128 threads
    assert (block_e, block_f) in tile_shapes()


def test_one_tile_shape_per_power_of_two_of_the_row_width():
    from scatterx.kernels.gpu._tiles import tile_shapes

    shapes = tile_shapes()
    assert [f for _, f in shapes] == [8, 16, 32, 64, 128]
    assert [e for e, _ in shapes] == [16, 16, 16, 16, 16]
