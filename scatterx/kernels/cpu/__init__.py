"""CPU kernels (Numba, parallel). Everything here trusts its inputs: validation happens in ``scatterx.ops``."""

from __future__ import annotations

import functools
import os
import threading

import numba
import torch

from ._codegen import BF16, F16, NATIVE

_STORAGE = {torch.float16: F16, torch.bfloat16: BF16}


def numpy_view(t: torch.Tensor):
    """Zero-copy NumPy view of a contiguous CPU tensor; half types are viewed as int16 bits."""
    if t.dtype in _STORAGE:
        t = t.view(torch.int16)
    return t.detach().numpy()


def storage_code(dtype: torch.dtype) -> int:
    return _STORAGE.get(dtype, NATIVE)


# Below this many elements a kernel runs on one thread: waking the pool costs more than it saves.
PARALLEL_MIN_ELEMENTS = 1 << 15

_pool_started = False

# Every parallel launch holds this lock (``launches``). Reentrant: backend entries call each
# other. ``_holding.depth`` says whether the calling thread holds it (``use_torch_threads`` insists).
_LAUNCH_LOCK = threading.RLock()
_holding = threading.local()


def launches(fn):
    """Decorator for a backend entry that launches parallel kernels: the call holds the process-wide launch lock,
    so that two Python threads never launch into Numba's thread pool at once. OpenMP would not mind, but Numba's
    ``workqueue`` layer (the one Numba falls back to, or a user's ``NUMBA_THREADING_LAYER=workqueue``) aborts the
    process on a concurrent launch; each launch uses every thread anyway, so holding the lock costs nothing."""

    @functools.wraps(fn)
    def locked(*args, **kwargs):
        if _forked_from_openmp:
            raise RuntimeError(_FORK_MESSAGE)
        with _LAUNCH_LOCK:
            _holding.depth = getattr(_holding, "depth", 0) + 1
            try:
                return fn(*args, **kwargs)
            finally:
                _holding.depth -= 1

    return locked


# GNU OpenMP cannot run in a process forked from one that used it: Numba terminates such a child at its first
# parallel launch. A child of a process whose pool runs on OpenMP gets this error instead (the serial kernel of
# small calls still runs there).
_forked_from_openmp = False
_FORK_MESSAGE = (
    "scatterx cannot launch its parallel CPU kernels in a process forked after its parent used them: Numba's "
    "OpenMP threading layer is not fork-safe. Start worker processes with 'spawn' or 'forkserver' (e.g. "
    "DataLoader(..., multiprocessing_context='spawn')), or set NUMBA_THREADING_LAYER=workqueue (fork-safe, "
    "slower to launch) before importing scatterx."
)


def _after_fork_in_child() -> None:
    global _forked_from_openmp
    if _pool_started and numba.threading_layer() == "omp":
        _forked_from_openmp = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _start_pool() -> None:
    """Start Numba's thread pool with a passive wait policy (unless the user chose one).

    torch ships its own libgomp and Numba's OpenMP layer (its default where TBB is absent, as on a plain pip
    install) loads the system's, so two OpenMP runtimes share the cores. An OpenMP worker spins for a while after
    each parallel region; Numba's spinning workers would then slow down the torch op that follows a scatterx call.
    ``OMP_WAIT_POLICY`` is read once, when a runtime starts, and torch's has long started: setting it around the
    start of Numba's pool affects that pool only. (Measured: alternating a 50k-edge scatterx call with a matmul,
    the interference fell from 0.26 to 0.15 ms.) The threading layer is left to Numba (and the user's
    ``NUMBA_THREADING_LAYER``): ``workqueue`` would be fork-safe where GNU OpenMP is not, but a launch costs
    ~135 us there against 3-17 us under OpenMP (2 vCPUs; DESIGN.md, "Threading layer").
    """
    global _pool_started
    _pool_started = True
    if "OMP_WAIT_POLICY" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.set_num_threads(numba.get_num_threads())  # launches the pool
    finally:
        del os.environ["OMP_WAIT_POLICY"]


def use_torch_threads(work: int) -> int:
    """Set Numba's thread count for a kernel over ``work`` elements: torch's thread count (never more, so no
    oversubscription), or 1 for small work. Returns it. Only inside a ``launches`` call."""
    if not getattr(_holding, "depth", 0):
        raise RuntimeError("scatterx internal error: a parallel kernel launch outside the launch lock")
    if not _pool_started:
        _start_pool()
    n = 1 if work < PARALLEL_MIN_ELEMENTS else max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return n
