"""The reduction table itself: names and aliases resolve, codes are distinct, identities are neutral bit for bit
in every dtype, and the flags the backends and the op layer act on say what the reductions do."""

import math

import pytest
import torch

from scatterx._reductions import BY_CODE, BY_NAME, NAMES, REDUCTIONS, SUPPORTED_DTYPES, accumulator_dtype, resolve

VALUES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e-40, 3.0e38]


def test_names_codes_and_aliases():
    assert NAMES == ("sum", "mean", "prod", "amax", "amin")
    assert sorted(BY_CODE) == list(range(len(REDUCTIONS)))
    for red in REDUCTIONS:
        assert BY_NAME[red.name] is red and red.name in red.aliases
        for alias in red.aliases:
            assert resolve(alias) is red
        assert resolve(red) is red
    assert {a: resolve(a).name for a in ("add", "mul", "max", "min")} == {
        "add": "sum",
        "mul": "prod",
        "max": "amax",
        "min": "amin",
    }


@pytest.mark.parametrize("bad", ["median", "", None, 3, "SUM"])
def test_unknown_reduce_is_a_value_error(bad):
    with pytest.raises(ValueError, match="reduce must be one of"):
        resolve(bad)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_identity_is_neutral_bit_for_bit(red, dtype):
    acc = accumulator_dtype(dtype)
    identity = torch.tensor(red.identity(acc), dtype=acc)
    if acc.is_floating_point:
        values = torch.tensor(VALUES, dtype=acc)
    else:
        info = torch.iinfo(acc)
        values = torch.tensor([info.min, info.max, -1, 0, 1, 7], dtype=acc)
    for x in values:
        got = red.combine(identity, x)
        assert (got.isnan() and x.isnan()) or (got == x and got.signbit() == x.signbit()), (red.name, x)


def test_sum_identity_is_negative_zero():
    """-0.0 + x == x for every x; +0.0 + -0.0 would give +0.0."""
    assert math.copysign(1.0, BY_NAME["sum"].identity(torch.float32)) == -1.0


def _reduce(red, values):
    acc = values[0]
    for v in values[1:]:
        acc = red.combine(acc, v)
    return acc / values.numel() if red.divide_by_count else acc


def test_flags_say_what_each_reduction_does():
    a = torch.tensor([1.5, -2.0, 4.0], dtype=torch.float64)
    b = torch.tensor([0.5, 3.0, -1.0], dtype=torch.float64)
    for red in REDUCTIONS:
        additive = torch.allclose(_reduce(red, a + b), _reduce(red, a) + _reduce(red, b))
        homogeneous = torch.allclose(_reduce(red, -3.0 * a), -3.0 * _reduce(red, a))
        assert red.linear == (additive and homogeneous), red.name
        assert red.selects == all(bool((_reduce(red, v) == v).any()) for v in (a, b, a * b)), red.name
        assert red.atomic == red.linear, red.name  # hardware atomics exist for additions only
    assert [r.name for r in REDUCTIONS if r.divide_by_count] == ["mean"]


def test_accumulator_dtype():
    assert accumulator_dtype(torch.float16) == accumulator_dtype(torch.bfloat16) == torch.float32
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        assert accumulator_dtype(dtype) == dtype


def test_prefers_is_a_strict_order_consistent_with_combine():
    """``prefers`` (the arg-reductions' selection) exists exactly for the selecting rows; wherever it says x
    beats best, the row's combine picks x; it never prefers NaN and never prefers a tie."""
    values = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.0]
    for red in REDUCTIONS:
        assert (red.prefers is not None) == red.selects, red.name
        if red.prefers is None:
            continue
        for x in values:
            assert not red.prefers(x, x) and not red.prefers(math.nan, x) and not red.prefers(x, math.nan)
            for best in values:
                if red.prefers(x, best):
                    assert red.combine(best, x) == x, (red.name, x, best)
