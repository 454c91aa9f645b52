"""Counter-based random numbers for the sampling kernels (``neighbor_sample``, ``random_walk``).

A call draws one ``base`` from torch's default generator; every independent sequence of the call -- a walk, the
draws of one frontier node -- has a *key* derived from the base and the sequence's number (``substream``), and its
``k``-th 64 random bits are ``draw(key, k)``: splitmix64's output function of ``key + (k + 1) * GOLDEN``. The
numbers depend on nothing but ``(base, sequence, k)``, so results do not depend on the thread count or on how the
work was chunked, and ``torch.manual_seed`` makes a call reproducible. ``below`` and ``unit`` turn bits into a
uniform integer or float. (``reference/neighbor_sample.py`` restates these steps in plain Python for the oracle.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: splitmix64's increment (2^64 / golden ratio) and its output mix's multipliers
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_U32 = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)
_TWO_53 = 1.0 / 9007199254740992.0  # 2^-53


@njit(inline="always", cache=True)
def mix(z):
    """splitmix64's output function: a bijection of uint64 whose outputs look independent for nearby inputs."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(inline="always", cache=True)
def substream(key, number):
    """The key of sequence ``number`` (any integer >= 0) under ``key`` (a call's base, or another key)."""
    return mix(np.uint64(key) ^ mix(np.uint64(number)))


@njit(inline="always", cache=True)
def draw(key, k):
    """The ``k``-th 64 random bits of the sequence whose key is ``key``."""
    return mix(np.uint64(key) + (np.uint64(k) + np.uint64(1)) * GOLDEN)


@njit(inline="always", cache=True)
def below(bits, n):
    """A uniform integer in ``[0, n)`` (int64 ``n >= 1``) from 64 random bits: the high word of ``bits * n``
    (Lemire's multiply-shift; bias below ``n / 2^64``), from 32-bit halves for ``n < 2^32``."""
    un = np.uint64(n)
    if un <= _LOW:
        high = (bits >> _U32) * un + (((bits & _LOW) * un) >> _U32)
        return np.int64(high >> _U32)
    return np.int64(bits % un)


@njit(inline="always", cache=True)
def unit(bits):
    """A uniform float64 in ``[0, 1)`` from 64 random bits."""
    return np.float64(bits >> np.uint64(11)) * _TWO_53
