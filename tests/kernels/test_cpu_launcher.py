"""``launch`` (``kernels/cpu/launcher.py``), on both ways it runs a kernel on several threads -- torch's OpenMP team
(``openmp.py``) and the fallback pool of Python threads: every work item claimed exactly once, whatever the thread
count; launches from several Python threads at once; an exception raised where the launcher sees it, once, as on one
thread; a forked child that launches (its parent's threads did not come along)."""

import os
import subprocess
import sys
import textwrap
import threading
from typing import Optional

import numpy as np
import pytest
from numba import njit

from scatterx.kernels.cpu import launch, openmp
from scatterx.kernels.cpu._codegen import Kernel, claim


@pytest.fixture(params=["openmp", "pool"], autouse=True)
def launcher(request, monkeypatch):
    """Every test here runs on each launcher: ``pool`` with the OpenMP runtime switched off."""
    if request.param == "pool":
        monkeypatch.setitem(openmp._state, "runtime", None)
        monkeypatch.setitem(openmp._state, "why_not", "switched off by the test")
    elif openmp.runtime() is None:
        pytest.skip(f"no OpenMP launch here: {openmp.why_not()}")
    return request.param


@njit(nogil=True)
def _mark_items(counter, seen, spin):
    """seen[item] += 1 for every item this call claims; returns how many it claimed."""
    claimed = 0
    while True:
        item = claim(counter)
        if item < 0:
            break
        for _ in range(spin):  # some work, so that threads overlap
            seen[item] += 0
        seen[item] += 1
        claimed += 1
    return claimed


_MARK = Kernel(_mark_items)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("items", [0, 1, 5, 1000])
def test_every_item_is_claimed_exactly_once(threads, items):
    seen = np.zeros(max(items, 1), np.int64)
    total = launch(_MARK, None, items, threads, seen[:items], 100)
    assert total == items
    assert (seen[:items] == 1).all()


def test_launches_from_several_python_threads_at_once():
    failures = []

    def work():
        for _ in range(50):
            seen = np.zeros(300, np.int64)
            if launch(_MARK, None, 300, 3, seen, 10) != 300 or not (seen == 1).all():
                failures.append(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not failures


@njit(nogil=True)
def _raise_at(counter, at):
    """Claims items; raises on item ``at`` (as a failed allocation inside a kernel would)."""
    claimed = 0
    while True:
        item = claim(counter)
        if item < 0:
            break
        if item == at:
            raise MemoryError("boom at an item")
        claimed += 1
    return claimed


_RAISE = Kernel(_raise_at)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_an_exception_on_any_thread_reaches_the_launcher_once_with_its_message(threads):
    with pytest.raises(MemoryError, match=r"^boom at an item$"):
        launch(_RAISE, None, 10, threads, 7)
    assert launch(_RAISE, None, 10, threads, 10) == 10  # and the next launch works
    seen = np.zeros(10, np.int64)
    assert launch(_MARK, None, 10, threads, seen, 1) == 10


def _last_line(script: str, launcher: str, stderr: Optional[list] = None) -> str:
    """The last line ``script`` prints, run in a child process (this folder importable) with ``launcher``'s way of
    launching; the child must exit cleanly."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    env["SCATTERX_CPU_LAUNCH"] = launcher
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if stderr is not None:
        stderr.append(done.stderr[-2000:])
    return done.stdout.strip().splitlines()[-1]


_FORK = """
    import os, numpy as np, torch, scatterx
    import test_cpu_launcher as launcher_test
    from scatterx.kernels.cpu import launch, openmp
    index, src = torch.arange(100_000) // 3, torch.randn(100_000, 4)
    expected = scatterx.index_scatter_reduce(0, index, src, "sum")
    launch(launcher_test._MARK, None, 100, 3, np.zeros(100, np.int64), 1)  # the parent's workers exist
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        torch.set_num_threads(1)  # as a DataLoader worker does: torch's own OpenMP is not fork-safe
        seen = np.zeros(100, np.int64)
        said = [launch(launcher_test._MARK, None, 100, 3, seen, 1) == 100 and bool((seen == 1).all()),
                torch.equal(scatterx.index_scatter_reduce(0, index, src, "sum"), expected),
                openmp.runtime() is None]  # GNU OpenMP's team did not come along either
        os.write(write, str(said).encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    print(os.read(read, 1000).decode(), "| exit", status)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_launches_on_threads_of_its_own(launcher):
    """A child forked after a parallel launch (as a DataLoader worker): the parent's workers and lock did not come
    along; the child starts its own, and computes the parent's result."""
    assert _last_line(_FORK, launcher) == "[True, True, True] | exit 0"


_INTERRUPTED = """
import os, signal, threading, time
import numpy as np
from scatterx.kernels.cpu import launch, openmp
import test_cpu_launcher as launcher_test

seen = np.zeros(64, np.int64)
# the kernel loaded first: an interrupt that lands in the load's native callbacks is ignored by Python
launch(launcher_test._MARK, None, 64, 2, seen, 1)
handled = [0]
def count_then_interrupt(signum, frame):  # Python's own handler, counting the interrupts that reached Python
    handled[0] += 1
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, count_then_interrupt)
stop = threading.Event()
def pester():  # an interrupt every 0.2 s until one is caught: on a busy machine one may land where Python drops it
    while not stop.wait(0.2):
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=pester, daemon=True).start()
start, interrupted = time.perf_counter(), False
try:
    while time.perf_counter() - start < 60:  # launches until an interrupt lands in one (or between two)
        seen[:] = 0
        launch(launcher_test._MARK, None, 64, 2, seen, 200_000)
except KeyboardInterrupt:
    interrupted = True
stop.set()
settle = time.perf_counter() + 0.5
while time.perf_counter() < settle:  # an interrupt sent just before the stop is absorbed here
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        pass
seen = np.zeros(64, np.int64)
works = launch(launcher_test._MARK, None, 64, 2, seen, 1) == 64 and bool((seen == 1).all())
print(f"handled {handled[0]}:", interrupted, works, openmp.runtime() is not None)
"""


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform == "win32", reason="needs SIGINT")
def test_a_launch_interrupted_by_keyboardinterrupt_leaves_the_next_launch_working(launcher):
    """Ctrl-C during launches (in a child process: pytest would take a KeyboardInterrupt for the user's): it
    reaches the caller, and the next launch claims every item exactly once."""
    stderr: list = []
    said = _last_line(_INTERRUPTED, launcher, stderr)
    # "handled N" says how many interrupts reached Python's handler: 0 with no catch means the machine never ran it
    # in the minute (a starved child, not a launcher that swallows interrupts); the line says which on a failure
    assert said.split(":", 1)[1].strip() == f"True True {launcher == 'openmp'}", (said, stderr)
