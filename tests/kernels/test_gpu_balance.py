"""How the balanced segment kernels share out their work (``kernels/gpu/_balance.py``): the vector search for a
share's first segment against a walk over the events one by one, the shares' rows and segment ends covering every
event once -- and the host's twin of the search (``_grid.shares``) agreeing with it."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")

if available():
    import triton
    import triton.language as tl

    from scatterx.kernels.gpu import _balance

    @triton.jit
    def _shares_kernel(ptr, out, S, E, K, WIDTH: tl.constexpr):
        p = tl.program_id(0).to(tl.int64)
        s_begin, s_end, r_begin, r_end = _balance.program_share(ptr, S, E, K, p, WIDTH)
        tl.store(out + 4 * p, s_begin)
        tl.store(out + 4 * p + 1, s_end)
        tl.store(out + 4 * p + 2, r_begin)
        tl.store(out + 4 * p + 3, r_end)


def _shares_by_definition(sizes, share):
    """Walk the events one by one: each share's (first segment, segment after its last end, first row, row end)."""
    events = []
    for s, size in enumerate(sizes):
        events += [("row", s)] * size + [("end", s)]
    total, shares = len(events), []
    for d0 in range(0, max(total, 1), share):
        ends_before = sum(1 for kind, _ in events[:d0] if kind == "end")
        ends_through = sum(1 for kind, _ in events[: d0 + share] if kind == "end")
        rows_before = d0 - ends_before
        rows_through = min(d0 + share, total) - ends_through
        shares.append((ends_before, ends_through, rows_before, rows_through))
    return shares


@settings(max_examples=40)
@given(st.lists(st.integers(0, 9), max_size=40), st.integers(1, 12), st.sampled_from([2, 4, 128]))
def test_shares_are_the_walk_over_the_events(sizes, share, width):
    """Every share's segments and rows, from the vector search with candidates 2, 4 or 128 wide, against the
    one-by-one walk; together the shares cover every row and every segment end exactly once."""
    ptr = torch.tensor([0] + sizes, dtype=torch.int64).cumsum(0)
    rows, segments = int(ptr[-1]), len(sizes)
    want = _shares_by_definition(sizes, share)
    with on_gpu_backend() as (_, device):
        out = torch.full((len(want), 4), -1, dtype=torch.int64, device=device)
        _shares_kernel[(len(want),)](ptr.to(device), out, segments, rows, share, WIDTH=width)
    assert [tuple(r) for r in out.cpu().tolist()] == want
    assert want[0][0] == want[0][2] == 0 and want[-1][1] == segments and want[-1][3] == rows
    # the host's twin, which the reports use, computes the same
    from scatterx.kernels.gpu._grid import shares

    assert [tuple(r) for r in shares(ptr, len(want), share).tolist()] == want
