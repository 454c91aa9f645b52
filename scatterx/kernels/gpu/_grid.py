"""The host's side of the balanced segment kernels (``_balance.py``): the grid and the tile of a launch, picked from
sizes alone (no sync), and each program's share of a CSR layout computed on the host -- what the kernels compute
for themselves, for reports and tests. Plain Python: importing it needs no Triton."""

from typing import List, Tuple

import torch

#: programs per streaming multiprocessor of the grid (several resident at once hide each other's memory latency)
PROGRAMS_PER_SM = 8
#: the least events a program takes: below this a program's fixed cost (its two searches) outweighs its work
MIN_EVENTS = 256

# The tile: BLOCK_F features (the row width rounded up to a power of two, 8 to 128) by as many rows as make
# MAX_ELEMENTS, at most MAX_ROWS. One shape per power of two of the row width: every shape is a variant Triton
# compiles on first use and CI compiles for every target (docs/decisions/gpu-variants.md); the size is the one
# whose registers leave room for several programs per multiprocessor (docs/decisions/gpu-segment-kernel.md).
MAX_ELEMENTS = 1024
MAX_ROWS = 128
MIN_FEATURES = 8
MAX_FEATURES = 128


def balanced_grid(events: int, slices: int, sms: int, programs_per_sm: int, min_events: int) -> Tuple[int, int]:
    """``(P, K)``: how many programs share the ``events`` of one (outer slice, feature block) -- ``slices`` such
    pairs run side by side -- and how many events each takes: about ``programs_per_sm`` programs per multiprocessor
    in all, each with at least ``min_events`` events (one program where there are fewer)."""
    want = max(1, -(-sms * programs_per_sm // max(slices, 1)))
    programs = max(1, min(want, events // max(min_events, 1)))
    share = max(1, -(-events // programs))
    return max(1, -(-events // share)), share  # (no program past the last event)


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def tile(inner: int, max_elements: int = MAX_ELEMENTS) -> Tuple[int, int]:
    """``(BLOCK_E, BLOCK_F)`` of the balanced kernels for rows of ``inner`` features."""
    block_f = min(max(_power_of_two_at_least(max(inner, 1)), MIN_FEATURES), MAX_FEATURES)
    return min(MAX_ROWS, max_elements // block_f), block_f


def tiles(max_elements: int = MAX_ELEMENTS) -> List[Tuple[int, int]]:
    """Every tile ``tile`` returns (the variants a balanced kernel is compiled in)."""
    shapes = {tile(1 << k, max_elements) for k in range(MAX_FEATURES.bit_length())}
    return sorted(shapes, key=lambda shape: shape[1])


def shares(ptr: torch.Tensor, programs: int, share: int) -> torch.Tensor:
    """Each program's ``(s_begin, s_end, r_begin, r_end)`` (a ``programs x 4`` int64 tensor): what
    ``_balance.program_share`` computes in the kernel, here with ``torch.searchsorted`` over the segment ends."""
    segments = ptr.numel() - 1
    rows = int(ptr[-1]) if segments >= 0 else 0
    total = rows + segments
    ends = ptr[1:].to(torch.int64) + torch.arange(segments, dtype=torch.int64)  # the event of each segment's end
    d0 = torch.clamp(torch.arange(programs, dtype=torch.int64) * share, max=total)
    d1 = torch.clamp(d0 + share, max=total)
    s_begin, s_end = torch.searchsorted(ends, d0), torch.searchsorted(ends, d1)
    return torch.stack([s_begin, s_end, d0 - s_begin, d1 - s_end], 1)
