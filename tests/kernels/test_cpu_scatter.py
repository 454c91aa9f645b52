"""kernels/cpu/scatter.py called directly: the slice-owner kernel against plain loops (the element plans' kernels
are in ``test_cpu_element.py``)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scatterx._reductions import REDUCTIONS
from scatterx.kernels.cpu import NATIVE
from scatterx.kernels.cpu.scatter import slice_scatter

NAMES = [r.name for r in REDUCTIONS]


def _reduce(values, name):
    values = np.asarray(values, dtype=np.float64)
    return {"sum": values.sum, "mean": values.mean, "prod": values.prod, "amax": values.max,
            "amin": values.min}[name]()


def _loop(src, rows, base, name, include_self, assign=False):
    """out[t] = reduce(base[t] (include_self), src[i] for rows[i] == t, in order); untouched targets keep base."""
    out = base.copy()
    for t in range(base.size):
        members = [src[i] for i in range(rows.size) if rows[i] == t]
        if not members:
            continue
        out[t] = members[-1] if assign else _reduce(([base[t]] if include_self else []) + members, name)
    return out


@given(st.lists(st.integers(0, 4), max_size=12), st.integers(1, 3), st.integers(1, 3), st.sampled_from(NAMES),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_slice_owner_kernel_matches_a_loop(index, outer, inner, name, with_out, seed):
    g = np.random.default_rng(seed)
    index = np.array(index, dtype=np.int64)
    n, num_segments = index.size + 1, 5  # one more row than the index: it takes no part
    src = g.integers(-4, 5, (outer, n, inner)).astype(np.float64)
    out = g.integers(-4, 5, (outer, num_segments, inner)).astype(np.float64)
    counts = np.bincount(index, minlength=num_segments).astype(np.int64)
    want = out.copy()
    for o in range(outer):
        for j in range(inner):
            base = out[o, :, j] if with_out else np.zeros(num_segments)
            want[o, :, j] = _loop(src[o, : index.size, j], index, base, name, with_out)
    code = next(r.code for r in REDUCTIONS if r.name == name)
    slice_scatter(src, index, counts, out, code, NATIVE, with_out, not with_out)
    np.testing.assert_allclose(out, want)
