"""kernels/cpu/element_scatter.py called directly: the element plans' kernels against plain loops, on any split into
work items (column blocks for the along-dim scatter, chunks for the others), so that every boundary is exercised on
small inputs; half-precision storage bit for bit against a float32 loop in the same
order; bit-identical results whatever the split; bad entries counted and never written (guard cells)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scatterx._reductions import BY_NAME, REDUCTIONS
from scatterx.kernels.cpu import BF16, F16, NATIVE, launch
from scatterx.kernels.cpu import element_scatter as kernels
from scatterx.kernels.cpu.element_scatter import TRACK_COUNT, TRACK_FLAG, TRACK_NONE


# The kernels on two threads, over the work items the backend gives them (``backends/cpu/element_scatter.py``).
def along_scatter(index, src, base, out, acc, seen, reduce, storage, assign, include_self, track, nblocks, block):
    return launch(
        kernels.along_scatter,
        None,
        index.shape[0] * nblocks,
        2,
        index,
        src,
        base,
        out,
        acc,
        seen,
        reduce=reduce,
        storage=storage,
        assign=assign,
        include_self=include_self,
        track=track,
        nblocks=nblocks,
        block=block,
    )


def along_gather(data, index, out, nchunks):
    return launch(kernels.along_gather, None, index.shape[0] * nchunks, 2, data, index, out, nchunks)


def row_gather(data, index, out, nchunks):
    return launch(kernels.row_gather, None, index.shape[0] * nchunks, 2, data, index, out, nchunks)


def coords_scatter(coords, sizes, strides, src, base, out, reduce, storage, assign, include_self, nchunks):
    step = max(1, -(-out.shape[0] // nchunks))
    return launch(
        kernels.coords_scatter,
        None,
        -(-out.shape[0] // step),
        2,
        coords,
        sizes,
        strides,
        src,
        base,
        out,
        reduce=reduce,
        storage=storage,
        assign=assign,
        include_self=include_self,
        step=step,
    )


def coords_gather(data, coords, sizes, strides, out, nchunks):
    step = max(1, -(-coords.shape[0] // nchunks))
    return launch(kernels.coords_gather, None, -(-coords.shape[0] // step), 2, data, coords, sizes, strides, out, step)


NAMES = [r.name for r in REDUCTIONS]
IDENTITY = {"sum": -0.0, "mean": -0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}


def _combine(name, acc, x):
    if name == "prod":
        return acc * x
    if name in ("amax", "amin"):
        return max(acc, x) if name == "amax" else min(acc, x)
    return acc + x


def _loop(index, src, base, name, include_self, assign, wide=np.float64):
    """out[o, t, j] from the members src[o, i, j] with index[o, i, j] == t, in order of i, accumulated in ``wide``
    from base (include_self) or the identity; targets that receive nothing keep base."""
    outer, n, inner = index.shape
    out = base.astype(wide)
    for o in range(outer):
        for j in range(inner):
            for t in range(base.shape[1]):
                members = [wide(src[o, i, j]) for i in range(n) if index[o, i, j] == t]
                if not members:
                    continue
                if assign:
                    out[o, t, j] = members[-1]
                    continue
                acc = wide(base[o, t, j]) if include_self else wide(IDENTITY[name])
                for x in members:
                    acc = wide(_combine(name, acc, x))
                if name == "mean":
                    acc = wide(acc / wide(len(members) + include_self))
                out[o, t, j] = acc
    return out


def _split(draw, inner):
    """(nblocks, block): any split of the columns."""
    block = draw(st.integers(1, inner))
    return -(-inner // block), block


def _run_along(index, src, base, name, include_self, assign, split, storage=NATIVE, acc=None):
    out = np.empty(base.shape, base.dtype)
    acc = out if acc is None else acc
    mean = name == "mean" and not assign
    track = TRACK_COUNT if mean else TRACK_NONE if assign or include_self else TRACK_FLAG
    # the arrays the backend passes: counts of int32, flags of uint8 (each array type is a compiled variant)
    seen = np.empty(
        base.shape if track != TRACK_NONE else (base.shape[0], 0, 0), np.int32 if track == TRACK_COUNT else np.uint8
    )
    bad = along_scatter(
        index,
        src,
        base,
        out,
        acc,
        seen,
        0 if assign else BY_NAME[name].code,
        storage,
        assign,
        include_self and not assign,
        track,
        *split,
    )
    return bad, out


@st.composite
def along_cases(draw):
    outer, n, inner, size = (
        draw(st.integers(1, 3)),
        draw(st.integers(0, 8)),
        draw(st.integers(1, 5)),
        draw(st.integers(1, 7)),
    )
    g = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    index = g.integers(0, size, (outer, n, inner)).astype(np.int64)  # (the backend passes int64 indices)
    src = g.integers(-4, 5, (outer, n, inner)).astype(np.float64)
    base = g.integers(-4, 5, (outer, size, inner)).astype(np.float64)
    if draw(st.booleans()):  # a strided base (a view every other element); index and src come C-contiguous
        base = np.repeat(base, 2, axis=2)[:, :, ::2]
    return index, src, base, _split(draw, inner)


@given(along_cases(), st.sampled_from(NAMES), st.booleans(), st.booleans())
def test_along_scatter_matches_a_loop(case, name, include_self, assign):
    index, src, base, split = case
    bad, out = _run_along(index, src, base, name, include_self, assign, split)
    assert bad == 0
    np.testing.assert_array_equal(out, _loop(index, src, base, name, include_self and not assign, assign))


@pytest.mark.parametrize("storage", [F16, BF16])
@given(case=along_cases(), name=st.sampled_from(NAMES), include_self=st.booleans())
def test_along_scatter_of_half_types_accumulates_in_float32_and_rounds_once(storage, case, name, include_self):
    import torch

    index, src, base, split = case
    half = torch.float16 if storage == F16 else torch.bfloat16
    src_h, base_h = torch.from_numpy(src / 3).to(half), torch.from_numpy(base / 3).to(half)  # inexact values
    acc = np.empty(base.shape, np.float32)
    bad, out = _run_along(
        index,
        src_h.view(torch.int16).numpy(),
        base_h.view(torch.int16).numpy(),
        name,
        include_self,
        False,
        split,
        storage,
        acc,
    )
    want = _loop(index, src_h.float().numpy(), base_h.float().numpy(), name, include_self, False, np.float32)
    got = torch.from_numpy(out).view(half)
    assert bad == 0 and torch.equal(got, torch.from_numpy(want).to(half))


@given(st.integers(0, 2**31 - 1), st.data())
def test_along_scatter_is_bit_identical_whatever_the_split(seed, data):
    g = np.random.default_rng(seed)
    index = g.integers(0, 9, (2, 40, 6))
    src = g.standard_normal((2, 40, 6)).astype(np.float32) * 1e3  # sums that depend on their order
    base = g.standard_normal((2, 9, 6)).astype(np.float32)
    first = _run_along(index, src, base, "sum", True, False, (1, 6))[1]
    for _ in range(3):
        split = _split(data.draw, 6)
        assert np.array_equal(
            _run_along(index, src, base, "sum", True, False, split)[1].view(np.int32), first.view(np.int32)
        )


@given(st.lists(st.integers(-3, 9), min_size=1, max_size=24), st.data())
def test_along_scatter_counts_bad_entries_and_never_writes_them(entries, data):
    index = np.array(entries, dtype=np.int64).reshape(1, -1, 1).repeat(2, axis=2)
    size = 6
    for name, include_self, assign in [
        ("sum", False, False),
        ("mean", True, False),
        ("amax", True, False),
        ("sum", True, True),
    ]:
        buffer = np.full(2 * size + 3, -7.0)  # three guard cells after the output
        out = buffer[: 2 * size].reshape(1, size, 2)
        track = TRACK_COUNT if name == "mean" else TRACK_NONE if include_self else TRACK_FLAG
        seen_buffer = np.full(2 * size + 3, 9, np.int32 if track == TRACK_COUNT else np.uint8)
        seen = seen_buffer[: 2 * size].reshape(1, size, 2) if track else np.empty((1, 0, 0), np.uint8)
        bad = along_scatter(
            index,
            np.ones(index.shape),
            np.zeros((1, size, 2)),
            out,
            out,
            seen,
            BY_NAME[name].code,
            NATIVE,
            assign,
            include_self,
            track,
            *_split(data.draw, 2),
        )
        assert bad == 2 * sum(not 0 <= e < size for e in entries)
        assert (buffer[2 * size :] == -7.0).all() and (seen_buffer[2 * size :] == 9).all()


@given(st.integers(0, 2**31 - 1), st.integers(1, 3 * kernels.ROW_CHUNK), st.integers(0, 3), st.sampled_from([1, 3]))
def test_along_scatter_checks_long_rows_chunk_by_chunk(seed, n, nbad, inner):
    """Rows longer than a checked chunk (``ROW_CHUNK``, rows of one element; a row of columns otherwise): the
    chunks or rows with a bad entry are redone entry by entry, the others go unchecked."""
    g = np.random.default_rng(seed)
    size = 50
    index = g.integers(0, size, (2, n, inner))
    bad_at = g.integers(0, index.size, nbad)
    index.reshape(-1)[bad_at] = g.choice([-1, size, 10**12], nbad)
    src = g.integers(-4, 5, index.shape).astype(np.float32)
    base = g.integers(-4, 5, (2, size, inner)).astype(np.float32)
    ok = (index >= 0) & (index < size)
    for name, include_self, assign in [("sum", True, False), ("amax", False, False), ("sum", False, True)]:
        bad, out = _run_along(index, src, base, name, include_self, assign, (1, inner))
        want = base.copy()
        hit = np.zeros(base.shape, bool)
        for o, i, j in zip(*np.nonzero(ok)):  # in position order (exact: small integers)
            t = index[o, i, j]
            start = want[o, t, j] if include_self or hit[o, t, j] else IDENTITY[name]
            want[o, t, j] = src[o, i, j] if assign else _combine(name, start, src[o, i, j])
            hit[o, t, j] = True
        assert bad == int((~ok).sum()) and np.array_equal(out, want)


@given(along_cases(), st.integers(1, 4))
def test_along_gather_matches_take_along_axis(case, nchunks):
    index, _, data, _ = case
    out = np.empty(index.shape)
    assert along_gather(data, index, out, nchunks) == 0
    np.testing.assert_array_equal(out, np.take_along_axis(data, index.astype(np.int64), 1))


@given(along_cases(), st.integers(1, 4))
def test_row_gather_matches_take_along_axis(case, nchunks):
    index, _, data, _ = case
    index, data = index[:, :, 0], data[:, :, 0]  # rows: the gather along the last dim
    out = np.empty(index.shape)
    assert row_gather(data, index, out, nchunks) == 0
    np.testing.assert_array_equal(out, np.take_along_axis(data, index.astype(np.int64), 1))


@given(st.lists(st.integers(-3, 9), min_size=1, max_size=24), st.integers(1, 4))
def test_along_gathers_write_zero_for_bad_entries_and_count_them(entries, nchunks):
    index = np.array(entries, dtype=np.int64).reshape(1, -1, 1)
    data = np.arange(1.0, 7.0).reshape(1, 6, 1)
    want = [e + 1.0 if 0 <= e < 6 else 0.0 for e in entries]
    nbad = sum(not 0 <= e < 6 for e in entries)
    out = np.empty(index.shape)
    assert along_gather(data, index, out, nchunks) == nbad
    np.testing.assert_array_equal(out.reshape(-1), want)
    out = np.empty(index.shape[:2])
    assert row_gather(data[:, :, 0], index[:, :, 0], out, nchunks) == nbad
    np.testing.assert_array_equal(out.reshape(-1), want)


def _flat_targets(coords, shape):
    """Flat offset of each coordinate row, -1 for a row with a coordinate outside its dim."""
    strides = np.cumprod([1] + list(shape[:0:-1]))[::-1]
    good = ((coords >= 0) & (coords < np.array(shape))).all(1)
    return np.where(good, (coords * strides).sum(1), -1)


@st.composite
def coordinate_cases(draw, low=0):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    n = draw(st.integers(0, 20))
    g = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    coords = np.stack([g.integers(low, s + (1 if low else 0), n) for s in shape], 1).astype(np.int64)
    if draw(st.booleans()):
        coords = np.asfortranarray(coords)  # column-major rows of coordinates
    return coords, shape


def _strides(shape):
    return np.cumprod([1] + list(shape[:0:-1]))[::-1].astype(np.int64).copy()


@given(
    coordinate_cases(),
    st.integers(1, 5),
    st.sampled_from(NAMES),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_coords_scatter_matches_a_loop(case, nchunks, name, include_self, assign, seed):
    coords, shape = case
    g = np.random.default_rng(seed)
    src = g.integers(-4, 5, coords.shape[0]).astype(np.float64)
    base = g.integers(-4, 5, int(np.prod(shape))).astype(np.float64)
    out = np.empty_like(base)
    include_self = include_self and not assign
    bad = coords_scatter(
        coords,
        np.array(shape, np.int64),
        _strides(shape),
        src,
        base,
        out,
        0 if assign else BY_NAME[name].code,
        NATIVE,
        assign,
        include_self,
        nchunks,
    )
    targets = _flat_targets(coords, shape).reshape(1, -1, 1)
    want = _loop(targets, src.reshape(1, -1, 1), base.reshape(1, -1, 1), name, include_self, assign)
    assert bad == 0
    np.testing.assert_array_equal(out, want.reshape(-1))


@given(coordinate_cases(low=-1), st.integers(1, 5))
def test_coordinate_kernels_count_bad_rows_and_never_touch_them(case, nchunks):
    coords, shape = case
    size = int(np.prod(shape))
    targets = _flat_targets(coords, shape)
    buffer = np.full(size + 3, -7.0)
    out = buffer[:size]
    bad = coords_scatter(
        coords,
        np.array(shape, np.int64),
        _strides(shape),
        np.ones(coords.shape[0]),
        np.zeros(size),
        out,
        0,
        NATIVE,
        False,
        False,
        nchunks,
    )
    assert bad == (targets < 0).sum() and (buffer[size:] == -7.0).all()
    np.testing.assert_array_equal(out, np.bincount(targets[targets >= 0], minlength=size))
    gathered = np.empty(coords.shape[0])
    data = np.arange(1.0, size + 1)
    assert coords_gather(data, coords, np.array(shape, np.int64), _strides(shape), gathered, nchunks) == bad
    np.testing.assert_array_equal(gathered, np.where(targets >= 0, targets + 1.0, 0.0))
