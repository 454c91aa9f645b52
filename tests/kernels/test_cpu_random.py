"""The counter-based random numbers of the sampling kernels (``kernels/cpu/_random.py``): ``below`` is the exact
high word of ``bits * n`` (Lemire's multiply-shift), ``unit`` lies in [0, 1), draws are a function of (key, k)
only, and nearby keys and counters give unrelated, uniform numbers."""

import numpy as np

from scatterx.kernels.cpu import _random


def test_below_is_the_high_word_of_the_product_and_unit_is_in_zero_one():
    rng = np.random.default_rng(0)
    for _ in range(200):
        word = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
        n = int(rng.integers(1, 2**32))
        assert _random.below(np.uint64(word), n) == (word * n) >> 64
        big = int(rng.integers(2**32, 2**62))
        assert 0 <= _random.below(np.uint64(word), big) < big
        assert 0.0 <= _random.unit(np.uint64(word)) < 1.0
    assert _random.unit(np.uint64(2**64 - 1)) < 1.0


def _u64(f, *args):
    """A kernel helper called from Python: its uint64 comes back as a Python int, and goes back in as uint64."""
    return np.uint64(f(*args))


def test_draws_depend_on_key_and_counter_only_and_are_uniform():
    key = _u64(_random.substream, 12345, 7)
    assert _random.draw(key, 3) == _random.draw(key, 3)
    assert _random.substream(12345, 7) != _random.substream(12345, 8)
    # 10 buckets over 20,000 draws of neighbouring counters and of neighbouring keys: Pearson's statistic well
    # below the 0.999 quantile of chi-square with 9 degrees of freedom (27.9)
    for draws in (
        [_random.below(_u64(_random.draw, key, k), 10) for k in range(20_000)],
        [_random.below(_u64(_random.draw, _u64(_random.substream, key, i), 0), 10) for i in range(20_000)],
    ):
        counts = np.bincount(draws, minlength=10)
        assert ((counts - 2000.0) ** 2 / 2000.0).sum() < 27.9
