"""How a CPU kernel runs on several threads.

**How a kernel runs in parallel.** Every kernel is a plain ``@njit(nogil=True)`` function over *work items*: it
takes a shared counter, claims the next item with an atomic add (``_codegen.claim``) until none is left, and
returns a count (of bad entries, or 0). ``launch`` runs one such function on several threads at once, each calling
the compiled function with the same arguments: threads of torch's own OpenMP team, entered from compiled code with
no Python on any thread but the caller's (``openmp.py``: a launch in microseconds), or -- where that runtime is
missing, and in a forked child -- the caller's own thread and workers of a small pool of Python threads (below;
``nogil`` lets them run side by side, and each launch hands the GIL to every worker in turn).

Numba's ``prange`` is not used: its parallel machinery (parfor passes and a second compile of the loop body as a
gufunc) made every compiled variant 2-3x dearer to compile, and the first call of a user -- and the test suite -- is
mostly compile time (``docs/decisions/cpu-parallelism.md``).

Claiming items one by one also balances the load: a thread that drew a hub (a huge segment) takes fewer items.
Each item is processed by exactly one thread, and what an item computes does not depend on which thread runs it, so
results do not depend on the thread count.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import List

import numpy as np

from . import openmp
from ._codegen import Kernel


class _Pool:
    """Worker threads that each run one call of a compiled kernel when told to. Started lazily, grown to the
    largest thread count asked for; idle workers block on their inbox (no spinning: they cost nothing while torch
    runs). One launch at a time (``_lock``): two Python threads launching at once take turns.

    **Interrupts.** A KeyboardInterrupt may land between any two bytecodes of the launching thread -- while it hands
    out the calls, or while it waits for them. So each step is one C call that has happened or not: a call is
    handed over by one ``put`` into a worker's inbox, and every call of a launch answers into that launch's own
    replies queue. A launch cut short leaves at most its workers still finishing their calls (each claims items of
    that launch only, from its counter); the next launch's calls queue up behind them and its answers come back
    on a queue of its own, so nothing of one launch is read as another's."""

    def __init__(self):
        self._lock = threading.Lock()
        self._inboxes: List[queue.SimpleQueue] = []

    def _grow(self, n: int) -> None:
        while len(self._inboxes) < n:
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="scatterx-cpu", daemon=True).start()
            self._inboxes.append(inbox)

    @staticmethod
    def _serve(inbox: queue.SimpleQueue) -> None:
        while True:
            entry, args, replies = inbox.get()
            try:
                replies.put(entry(*args))
            except BaseException as error:  # handed to the launching thread, which raises it
                replies.put(error)

    def run(self, entry, threads: int, args) -> int:
        """``entry(*args)`` on ``threads`` threads (the caller's and ``threads - 1`` workers); the sum of their
        returns. Raises what a call raised, after every call has returned."""
        if threads <= 1:
            return entry(*args)
        with self._lock:
            self._grow(threads - 1)
            replies: queue.SimpleQueue = queue.SimpleQueue()
            handed = 0
            try:
                for inbox in self._inboxes[: threads - 1]:
                    inbox.put((entry, args, replies))
                    handed += 1
                total = entry(*args)
            finally:
                results = [replies.get() for _ in range(handed)]
            for result in results:
                if isinstance(result, BaseException):
                    raise result
                total += result
            return total

    def forget_workers(self) -> None:
        """In a forked child: the parent's worker threads do not exist there, and the lock may have been held by
        a thread that did not come along. Start afresh."""
        self._lock = threading.Lock()
        self._inboxes = []


_POOL = _Pool()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.forget_workers)


_COUNTER = np.zeros(2, np.int64)  # stands for a launch's counter where only its type matters


def launch(kernel: Kernel, key, items: int, threads: int, *args, **named) -> int:
    """Run ``kernel`` over work items ``0 .. items - 1`` on up to ``threads`` threads: every thread calls it with
    ``(counter, *args, *named)`` and claims items from ``counter`` until none is left. Returns the sum of the
    calls' returns. ``key``: as ``Kernel.entry``'s (None: computed from the arguments). ``args``: the kernel's
    arrays, in its order, and at most ``Kernel.POSITIONAL_SCALARS`` scalars; ``named``: the rest of its parameters
    by name -- the flags and codes, which in a row by position would be a swapped-argument bug waiting.

    On several threads, the kernel runs on torch's OpenMP team where there is one (``openmp.py``), else on the
    pool of Python threads above."""
    if Kernel.check_keys:
        kernel.check_positional(args)
    if named:
        args = kernel.bind(args, named, skip=1)  # (the counter is the kernel's first parameter)
    threads = max(1, min(threads, items))
    if threads > 1 and openmp.runtime() is not None:
        native = _native(kernel, kernel.key_of((_COUNTER, *args)) if key is None else key, args)
        if native is not None:
            address, trampoline, packs = native
            return openmp.run(openmp.runtime(), address, trampoline, packs, items, threads, args)
    counter = np.array([0, items], np.int64)
    args = (counter, *args)
    return _POOL.run(kernel.entry(key, args), threads, args)


def _native(kernel: Kernel, key, args):
    """(the variant's native address, its trampoline, how its arguments are packed), or None if the variant has
    no trampoline (it then runs on the pool)."""
    try:
        return kernel.native[key]
    except KeyError:
        pass
    compiled = kernel.compiled(key, (_COUNTER, *args))
    argtypes, restype = compiled.signature.args, compiled.signature.return_type
    trampoline = openmp.trampoline(argtypes, restype)
    found = None
    if trampoline is not None:
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        found = (address, trampoline, openmp.packing(argtypes))
    kernel.native[key] = found
    return found
