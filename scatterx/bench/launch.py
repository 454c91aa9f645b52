"""What a CPU kernel launch costs: an empty kernel, and one adding 1 to 1k, 30k and 1M float32 elements, on 1 and 2
threads (and every other count asked for), on each way a launch can run (torch's OpenMP team, the pool of Python
threads). Timed back to back in one process, median of many launches; the figures behind the launch thresholds
(``Tuning.parallel_min_elements``) and docs/decisions/cpu-parallelism.md."""

from __future__ import annotations

import contextlib
from typing import Callable, Dict, List, Sequence

import numpy as np
import torch

from ..kernels.cpu import launch, openmp
from ..kernels.cpu.launch_probe import add_one, empty
from .text import Column, Columns
from .timing import median_seconds

#: the work sizes timed (elements; 0: the empty kernel)
SIZES = (0, 1_000, 30_000, 1_000_000)
#: the adding kernel's work items: this many a thread, of at least ``MIN_STEP`` positions each
ITEMS_PER_THREAD, MIN_STEP = 16, 256


#: keys for the probe kernels' entry points, as every backend passes one (``Kernel.entry``: the arguments' types are
#: fixed -- a counter; a C-contiguous float32 array and an int): a launch without one computes it per call (~1 us)
_EMPTY_KEY, _ADD_ONE_KEY = ("launch_probe.empty",), ("launch_probe.add_one", "float32")


def _empty_launch(threads: int) -> Callable[[], int]:
    return lambda: launch(empty, _EMPTY_KEY, 64, threads)


def _add_one_launch(size: int, threads: int) -> Callable[[], int]:
    values = np.zeros(size, np.float32)
    step = max(MIN_STEP, -(-size // (ITEMS_PER_THREAD * threads)))
    items = -(-size // step)
    return lambda: launch(add_one, _ADD_ONE_KEY, items, threads, values, step)


def launchers() -> List[str]:
    """The launchers this process can use: ``openmp`` where ``openmp.runtime()`` is found, and ``pool``."""
    return (["openmp"] if openmp.runtime() is not None else []) + ["pool"]


def measure(threads: Sequence[int] = (1, 2), sizes: Sequence[int] = SIZES, repeat: int = 2000) -> List[Dict]:
    """One row per (launcher, threads, size): ``{"launcher", "threads", "elements", "us"}``. One thread is the
    caller alone (the same for both launchers: timed once, as ``serial``)."""
    rows = []
    parallel = launchers()
    for count in threads:
        for name in ["serial"] if count == 1 else parallel:
            with contextlib.nullcontext() if name == "openmp" else openmp.switched_off("the bench times the pool"):
                for size in sizes:
                    fn = _empty_launch(count) if size == 0 else _add_one_launch(size, count)
                    reps = max(20, repeat // max(1, size // 30_000))
                    rows.append(
                        {"launcher": name, "threads": count, "elements": size, "us": median_seconds(fn, 1, reps) * 1e6}
                    )
    return rows


def table(rows: List[Dict]) -> List[str]:
    """The launch rows as a table: one line per (launcher, threads), a column per size."""
    sizes = sorted({r["elements"] for r in rows})
    cols = Columns(
        Column("launcher", 8, left=True),
        Column("threads", 7),
        *(Column("empty" if s == 0 else f"{s:,}", 10) for s in sizes),
    )
    lines = [
        "CPU kernel launch, us per launch (median): an empty kernel, and +1 on float32 elements "
        f"(torch threads {torch.get_num_threads()}; OpenMP launch: "
        f"{'yes' if openmp.runtime() is not None else 'no, ' + openmp.why_not()})",
        *cols.head(),
    ]
    keys = sorted({(r["threads"], r["launcher"]) for r in rows})
    for count, name in keys:
        us = {r["elements"]: r["us"] for r in rows if (r["threads"], r["launcher"]) == (count, name)}
        lines.append(cols.row(name, count, *(f"{us.get(s, float('nan')):.1f}" for s in sizes)))
    return lines
