"""The one way the benchmarks time a call: the median wall time of back-to-back calls after a warm-up (on CUDA,
between events around each call)."""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch


def median_seconds(fn: Callable, warmup: int, repeat: int, device: str = "cpu") -> float:
    """Median wall time of ``fn()``; on CUDA, between events around the call (the queue drained first)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
            start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start_event.record()
            fn()
            end_event.record()
            end_event.synchronize()
            samples.append(start_event.elapsed_time(end_event) / 1e3)
        else:
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)
