"""One compile of a kernel at a time across processes, so that processes sharing Numba's disk cache share it safely.

Several processes often start cold on the same cache at once: the ranks of a ``torchrun`` job, a DataLoader's
workers, the test suite's pytest-xdist workers. Numba's cache is not safe for that. Saving a variant reads the
function's index file, picks the first free data-file name and writes both back; two processes saving different
variants of one function at once can both pick ``.1.nbc``, and the index can then name the other variant's machine
code for a signature (a wrong kernel, loaded by every later process). Each process also compiles what the others
are compiling, for nothing.

- ``guard(dispatcher)`` makes every save to the dispatcher's cache, and to the caches of the compiled functions it
  can call (found through its module's globals, transitively: Numba compiles and caches a callee on its own), hold
  an exclusive ``flock`` on a lock file beside the function's index.
- ``compiling(dispatcher, sig)`` holds a lock of that one variant for its whole ``dispatcher.compile``: Numba looks
  in the cache first inside it, so a second process wanting the same variant waits and loads what the first saved
  instead of compiling it again, while processes compiling other variants of the same kernel go on in parallel.
- ``load_or_compile(dispatcher, sig)`` first looks for the variant in the disk cache itself, without the set-up
  Numba makes before it looks (``BaseContext.refresh``: importing and registering every implementation Numba has,
  which only a compile needs); only a variant not found there is compiled, under the locks above. That set-up was
  most of a warm process's first training step (docs/decisions/compile-budget.md, "A warm first step").

Numba's own (re-entrant, per-process) compiler lock is always taken first, so two threads of one process never
wait on each other's file lock, and a lock this process holds is not taken again. Where there is no disk cache, no
``fcntl`` (Windows) or the lock file cannot be opened (a read-only cache), nothing is locked: one process alone
still compiles correctly. See docs/decisions/parallel-tests.md.
"""

import contextlib
import hashlib
import os
import time
from typing import Dict, Iterator, Optional, Set, Tuple

from numba.core.caching import Cache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys

try:
    import fcntl
except ImportError:  # Windows: no flock; processes there compile as Numba alone does
    fcntl = None  # type: ignore[assignment]

#: lock files this process holds (read and written under Numba's compiler lock only)
_held: Set[str] = set()


def lock_path(dispatcher, sig=None) -> Optional[str]:
    """A lock file beside ``dispatcher``'s disk cache index, or None without a disk cache: the index's own (held by
    every save) or, given a signature, that variant's (held by its compile)."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    index = getattr(cache_file, "_index_path", None)
    if not isinstance(index, str):
        return None
    if sig is None:
        return f"{index}.lock"
    return f"{index}.{hashlib.sha1(str(sig).encode()).hexdigest()[:16]}.lock"


@contextlib.contextmanager
def _file_lock(path: Optional[str]) -> Iterator[None]:
    """Hold the lock file ``path`` (the caller holds Numba's compiler lock)."""
    fd = None
    if path is not None and fcntl is not None and path not in _held:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:  # a cache this process may read but not write: nothing to protect
            fd = None
    if fd is None or path is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held.add(path)
        yield
    finally:
        _held.discard(path)
        os.close(fd)  # releases the lock


def guard(dispatcher) -> None:
    """Make every save to ``dispatcher``'s disk cache, and to those of the compiled functions it can call, hold the
    function's lock file. Idempotent."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None or getattr(cache_file, "_scatterx_guarded", False):
        return
    save, path = cache_file.save, lock_path(dispatcher)

    def locked_save(key, data):
        with global_compiler_lock, _file_lock(path):
            save(key, data)

    cache_file.save = locked_save
    cache_file._scatterx_guarded = True
    for value in compiled_globals(dispatcher):
        guard(value)


def compiled_globals(dispatcher) -> list:
    """The compiled functions in the globals of ``dispatcher``'s module: what it can call that Numba compiles and
    caches on its own (``guard`` follows them, and theirs)."""
    return [value for value in list(dispatcher.py_func.__globals__.values()) if isinstance(value, Dispatcher)]


@contextlib.contextmanager
def compiling(dispatcher, sig) -> Iterator[None]:
    """Hold the compile lock of ``dispatcher``'s variant ``sig`` (this process's compiler lock, then the variant's
    file lock) within the block."""
    guard(dispatcher)
    with global_compiler_lock, _file_lock(lock_path(dispatcher, sig)):
        yield


#: Seconds of each compile this process made, by ``(module.function, signature)`` (the time inside the variant's
#: lock: a variant another process compiled meanwhile loads in milliseconds). What a cold process pays per variant;
#: the test suite's compile budget prints the sums per kernel (tests/compile_budget.py).
compile_seconds: Dict[Tuple[str, str], float] = {}


def kernel_name(dispatcher) -> str:
    """``module.function`` of a compiled function: its name in ``compile_seconds`` and the compile budget's table."""
    return f"{dispatcher.py_func.__module__.rsplit('.', 1)[-1]}.{dispatcher.py_func.__name__}"


def load_or_compile(dispatcher, sig) -> None:
    """Make the variant ``sig`` (a tuple of Numba types) of ``dispatcher`` ready to call: loaded from the disk
    cache, else compiled (``compiling``)."""
    if not _load(dispatcher, sig):
        with compiling(dispatcher, sig):
            fresh = tuple(sig) not in dispatcher.overloads  # (without a disk cache, ``_load`` does not look)
            start = time.perf_counter()
            dispatcher.compile(sig)
            if fresh:
                compile_seconds[(kernel_name(dispatcher), str(tuple(sig)))] = time.perf_counter() - start


def _load(dispatcher, sig) -> bool:
    """Whether the variant is ready after looking in ``dispatcher``'s disk cache: what ``Dispatcher.compile`` does on
    a cache hit, without its ``target_context.refresh()`` first. A cached variant is machine code and the types of
    its arguments; rebuilding it needs the code generator and Numba's runtime (``rtsys``), not the implementations
    and typing templates that refresh imports and registers (a compile still makes that set-up: Numba's pipeline
    refreshes the contexts itself). Anything unexpected leaves the variant to ``Dispatcher.compile``."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache):  # no disk cache (``cache=False``, or a cache Numba could not set up)
        return False
    with global_compiler_lock:
        if tuple(sig) in dispatcher.overloads:
            return True
        context = dispatcher.targetctx
        try:
            rtsys.initialize(context)  # the runtime's symbols, which cached machine code links against
            result = cache._load_overload(sig, context)
        except Exception:  # a file another process is writing, a foreign payload: the usual path decides
            return False
        if result is None or result.objectmode:
            return False
        context.insert_user_function(result.entry_point, result.fndesc, [result.library])
        dispatcher.add_overload(result)
        dispatcher._cache_hits[sig] += 1
        return True
