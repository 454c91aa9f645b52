"""Processes sharing Numba's disk cache (``kernels/cpu/_compile_lock.py``): a compile waits while another process
holds the kernel's lock, and a process that comes second loads the variant the first saved instead of compiling it.
Each case runs kernels in fresh processes on a fresh cache directory."""

import os
import pathlib
import subprocess
import sys
import time

import pytest

fcntl = pytest.importorskip("fcntl")

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: compiles two variants of one small kernel: the first at once, timed; the second after a line on stdin. Prints
#: the second variant's lock file, the first compile's seconds, and at the end whether the parent's marker existed
#: then.
CHILD = """
import os, sys, time
import numpy as np
from numba import typeof
from scatterx.kernels.cpu._compile_lock import lock_path
from scatterx.kernels.cpu.segments import index_bound

t = time.perf_counter()
assert index_bound(np.array([3, 1], dtype=np.int64)) == 4
second = (typeof(np.array([4, 2], dtype=np.int32)),)  # the signature Kernel.entry builds for it
print(lock_path(index_bound.dispatcher, second), time.perf_counter() - t, flush=True)
sys.stdin.readline()
assert index_bound(np.array([4, 2], dtype=np.int32)) == 5
print("marker" if os.path.exists(sys.argv[1]) else "no marker", flush=True)
print("hits", sum(index_bound.dispatcher.stats.cache_hits.values()),
      "misses", sum(index_bound.dispatcher.stats.cache_misses.values()), flush=True)
"""


def _child(cache, marker):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(marker)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        cwd=str(ROOT),
    )


def test_a_compile_waits_for_the_process_holding_its_variants_lock_then_the_next_process_loads_it(tmp_path):
    cache, marker = tmp_path / "cache", tmp_path / "released"
    first = _child(cache, marker)
    path, seconds = first.stdout.readline().split()
    assert path.startswith(str(cache)) and path.endswith(".lock") and ".nbi." in path
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        first.stdin.write("go\n")
        first.stdin.flush()
        # held for several times what a compile of this kernel took in that process: unlocked, it would be done
        time.sleep(max(3.0, 5 * float(seconds)))
        assert first.poll() is None
        marker.write_text("")
    finally:
        os.close(fd)
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0
    assert out.splitlines()[0] == "marker"  # the second variant was compiled only once the lock was released

    second = _child(cache, marker)
    second.stdout.readline()
    out, _ = second.communicate("go\n", timeout=300)
    assert second.returncode == 0
    assert out.splitlines()[1] == "hits 2 misses 0"  # both variants loaded from what the first process saved


#: runs ``index_bound`` (loaded from the cache a first run of this child filled), then says how often Numba's
#: target-context refresh (its compile set-up) ran and whether an implementation module only that set-up imports is
#: there; then, unless it is the run filling the cache (``cold``), compiles a variant the cache lacks, which must still
#: work and make the set-up.
WARM = """
import sys
import numpy as np
from numba.core.base import BaseContext

refreshes = []
refresh = BaseContext.refresh


def counted(self):
    refreshes.append(type(self).__name__)
    return refresh(self)


BaseContext.refresh = counted
from scatterx.kernels.cpu.segments import index_bound

assert index_bound(np.array([3, 1], dtype=np.int64)) == 4
print("refreshes", len(refreshes), "set up" if "numba.np.linalg" in sys.modules else "not set up", flush=True)
print("hits", sum(index_bound.dispatcher.stats.cache_hits.values()),
      "misses", sum(index_bound.dispatcher.stats.cache_misses.values()), flush=True)
if sys.argv[1] == "cold":  # the cache gets the first variant only
    sys.exit()
assert index_bound(np.array([4, 2, 7], dtype=np.int32)) == 8  # a variant not in the cache: compiled here
print("compiled", "refreshed" if refreshes else "not refreshed",
      "misses", sum(index_bound.dispatcher.stats.cache_misses.values()), flush=True)
"""


def test_a_variant_in_the_cache_loads_without_numba_s_compile_set_up(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))

    def run(which):
        done = subprocess.run(
            [sys.executable, "-c", WARM, which],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            cwd=str(ROOT),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.split("\n")

    cold = run("cold")
    _, refreshed, state = cold[0].split(" ", 2)
    assert int(refreshed) > 0 and state == "set up" and cold[1] == "hits 0 misses 1"
    warm = run("warm")
    # the first variant loaded as machine code without Numba's target-context refresh; the compile of the second
    # one made the set-up itself
    assert warm[0] == "refreshes 0 not set up" and warm[1] == "hits 1 misses 0"
    assert warm[2] == "compiled refreshed misses 1"


def test_every_kernel_s_guard_reaches_the_steps_that_save_to_a_cache_of_their_own():
    """The table's steps compiled on their own and cached on disk (``claim``, ``choose``, the bfloat16 conversions)
    save to their own cache files, whichever kernel compiles them first: ``guard`` must lock those saves too. It
    reaches them through the compiled functions in each kernel's module's globals, and theirs."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    from scatterx.kernels import cpu
    from scatterx.kernels.cpu import _codegen
    from scatterx.kernels.cpu._compile_lock import compiled_globals, lock_path

    for module in pkgutil.iter_modules(cpu.__path__):  # every kernel module, so that Kernel.all holds them all
        importlib.import_module(f"{cpu.__name__}.{module.name}")

    cached_steps = {
        name for name, value in vars(_codegen).items() if isinstance(value, Dispatcher) and lock_path(value)
    }
    assert {"claim", "choose"} <= cached_steps
    kernels = [k for k in _codegen.Kernel.all if k.dispatcher.py_func.__module__.startswith("scatterx.")]
    assert len(kernels) >= 20
    for kernel in kernels:
        reached, todo = set(), [kernel.dispatcher]
        while todo:
            for value in compiled_globals(todo.pop()):
                if value not in reached:
                    reached.add(value)
                    todo.append(value)
        names = {value.py_func.__name__ for value in reached if value.py_func.__module__ == _codegen.__name__}
        assert cached_steps <= names, f"{kernel.name}: its guard misses {cached_steps - names}"
