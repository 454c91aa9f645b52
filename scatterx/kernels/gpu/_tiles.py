"""How a segment program covers its segment: the program's coordinates, the tiles of rows it loads, and the tile
shape (``launch_config``). Shared by the segment kernels (``segment_reduce.py`` and the kernels built like it).

Grid: one program per ``(outer slice, segment, feature block)``, flattened into axis 0 (axes 1 and 2 stop at 65,535).
A program loads ``BLOCK_E`` rows x ``BLOCK_F`` features at a time and keeps a tile of partial results, reduced over
its rows once at the end: several rows in flight per program, and no cross-lane work inside the loop.
"""

from __future__ import annotations

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
def rows_of(perm, e, emask, GATHER: tl.constexpr):
    """The src rows of positions ``e`` of the segment order: through the permutation, or the positions."""
    if GATHER:
        return tl.load(perm + e, mask=emask, other=0).to(tl.int64)
    else:
        return e


@triton.jit
def load_tile(src_slice, perm, e0, end, f, fmask, inner, other, GATHER: tl.constexpr, BLOCK_E: tl.constexpr):
    """Rows ``e0 .. e0+BLOCK_E`` (those before ``end``) of the segment order, features ``f``: (tile, rows, mask);
    masked-off entries hold ``other``."""
    e = e0 + tl.arange(0, BLOCK_E)
    emask = e < end
    rows = rows_of(perm, e, emask, GATHER)
    mask = emask[:, None] & fmask[None, :]
    x = tl.load(src_slice + rows[:, None] * inner + f[None, :], mask=mask, other=other)
    return x, rows, mask



def launch_config(rows: int, segments: int, inner: int):
    """(BLOCK_E, BLOCK_F) for segments of ``rows / segments`` rows on average, ``inner`` features each.

    A program's tile holds at most 2,048 elements; features are covered first (up to 128 per program, coalesced
    loads), then rows up to the average segment length rounded up to a power of two, so that short segments do
    not leave most of the tile masked off. A starting point, not measured on a GPU (none was lent while it was
    written): see ``scatterx bench --device cuda``."""
    block_f = min(triton.next_power_of_2(max(inner, 1)), 128)
    average = -(-rows // max(segments, 1))
    block_e = max(1, min(triton.next_power_of_2(max(average, 1)), 2048 // block_f, 64))
    return block_e, block_f
