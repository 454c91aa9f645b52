"""How a segment program covers its segment: the program's coordinates, the tiles of rows it loads, and the tile
shape (``launch_config``). Shared by the segment kernels (``segment_reduce.py`` and the kernels built like it).

Grid: one program per ``(outer slice, segment, feature block)``, flattened into axis 0 (axes 1 and 2 stop at 65,535).
A program loads ``BLOCK_E`` rows x ``BLOCK_F`` features at a time and keeps a tile of partial results, reduced over
its rows once at the end: several rows in flight per program, and no cross-lane work inside the loop.
"""

import triton
import triton.language as tl


@triton.jit
def program_coordinates(S, inner, BLOCK_F: tl.constexpr):
    """(outer slice, segment, feature offsets, feature mask) of this program."""
    pid = tl.program_id(0).to(tl.int64)
    fblocks = tl.cdiv(inner, BLOCK_F)
    fb = pid % fblocks
    rest = pid // fblocks
    s = rest % S
    o = rest // S
    f = fb * BLOCK_F + tl.arange(0, BLOCK_F)
    return o, s, f, f < inner


@triton.jit
def rows_of(perm, e, emask, gather):
    """The src rows of positions ``e`` of the segment order: through the permutation when ``gather`` (a run-time
    flag: without it the load is masked off, and moves no data), else the positions themselves."""
    return tl.where(gather, tl.load(perm + e, mask=emask & gather, other=0).to(tl.int64), e)


@triton.jit
def load_tile(src_slice, perm, e0, end, f, fmask, inner, other, gather, BLOCK_E: tl.constexpr):
    """Rows ``e0 .. e0+BLOCK_E`` (those before ``end``) of the segment order, features ``f``: (tile, rows, mask);
    masked-off entries hold ``other``."""
    e = e0 + tl.arange(0, BLOCK_E)
    emask = e < end
    rows = rows_of(perm, e, emask, gather)
    mask = emask[:, None] & fmask[None, :]
    x = tl.load(src_slice + rows[:, None] * inner + f[None, :], mask=mask, other=other)
    return x, rows, mask


# The most rows a tile holds. Fixed rather than fitted to the average segment length: every distinct tile shape is a
# kernel variant Triton compiles at first use (a second or so on the user's GPU) and that CI compiles for every
# target, so tile shapes are a cost to justify (docs/decisions/gpu-variants.md). Rows past a segment's end are
# masked off: they cost issue slots, not memory traffic.
MAX_ROWS = 16
MAX_ELEMENTS = 2048
MAX_FEATURES = 128
# The narrowest tile: 16 rows x 8 features is one element for each of the 128 threads of a program (4 warps).
# A narrower one would not use more lanes -- its threads hold copies -- so rows of 1 to 4 features take this one.
MIN_FEATURES = 8


def launch_config(inner: int, max_elements: int = MAX_ELEMENTS):
    """(BLOCK_E, BLOCK_F) for rows of ``inner`` features: features first (8 to 128 per program, coalesced loads),
    then rows, up to 16 and at most ``max_elements`` a tile. One shape per power of two of the row width."""
    block_f = min(max(triton.next_power_of_2(max(inner, 1)), MIN_FEATURES), MAX_FEATURES)
    return min(MAX_ROWS, max_elements // block_f), block_f


def tile_shapes(max_elements: int = MAX_ELEMENTS):
    """Every tile shape ``launch_config`` returns (the variants a segment kernel is compiled in)."""
    shapes = {launch_config(1 << k, max_elements) for k in range(MAX_FEATURES.bit_length())}
    return sorted(shapes, key=lambda shape: shape[1])
