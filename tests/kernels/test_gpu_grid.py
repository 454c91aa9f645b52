"""The host's side of the balanced segment kernels (``kernels/gpu/_grid.py``): the grid picked from sizes alone
fills the GPU and gives every program work, and the tiles -- one per power of two of the row width. (Its
``shares``, the host's twin of the kernels' search, is held against them in ``test_gpu_balance.py``.)"""

from hypothesis import given
from hypothesis import strategies as st

from scatterx.kernels.gpu import _grid


@given(st.integers(0, 10**8), st.integers(1, 5000), st.integers(1, 200))
def test_the_grid_fills_the_gpu_and_gives_every_share_work(events, slices, sms):
    programs, share = _grid.balanced_grid(events, slices, sms, programs_per_sm=8, min_events=256)
    assert programs >= 1 and programs * share >= events  # every event has a program
    assert (programs - 1) * share < max(events, 1)  # and every program an event (one when there are none)
    assert (programs - 1) * slices < 8 * sms  # about as many programs as the GPU holds at once, no more
    assert programs == 1 or share >= 256  # enough work for a share's fixed cost


def test_one_tile_per_power_of_two_of_the_row_width():
    assert _grid.tiles() == [(128, 8), (64, 16), (32, 32), (16, 64), (8, 128)]
    for inner in range(300):
        rows, features = _grid.tile(inner)
        assert (rows, features) in _grid.tiles()
        assert features >= min(max(inner, 1), 128) and rows * features <= 1024
