"""Numba's thread pool (``kernels/cpu/__init__.py``): launches from several Python threads, launches in a forked
child, and the launch lock's invariant. The pool runs in subprocesses here: a bad launch aborts its process."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from scatterx.kernels.cpu import use_torch_threads

_TWO_THREADS = """
    import threading, torch, scatterx
    g = torch.Generator().manual_seed(0)
    cases = []
    for reduce in ("sum", "amax"):
        index = torch.randint(0, 5000, (100_000,), generator=g)
        src = torch.randn(100_000, 8, generator=g)
        cases.append((index, src, reduce, scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False,
                                                                         dim_size=5000)))
    failures = []
    def work():
        for _ in range(40):
            for index, src, reduce, expected in cases:
                got = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False, dim_size=5000)
                if not torch.equal(got, expected):
                    failures.append(reduce)
    threads = [threading.Thread(target=work) for _ in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    import numba
    print(numba.threading_layer(), "failures", len(failures))
"""

_FORK = """
    import os, torch, scatterx
    index, src = torch.arange(100_000) // 3, torch.randn(100_000, 4)
    expected = scatterx.index_scatter_reduce(0, index, src, "sum")
    small = scatterx.index_scatter_reduce(0, index[:10], src[:10], "sum")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        torch.set_num_threads(1)  # as a DataLoader worker does: torch's own OpenMP is not fork-safe either
        try:
            ok = torch.equal(scatterx.index_scatter_reduce(0, index, src, "sum"), expected)
            said = "computed" if ok else "wrong"
        except RuntimeError as e:
            said = "raised " + str(e).split(":")[0]
        said += " small " + str(torch.equal(scatterx.index_scatter_reduce(0, index[:10], src[:10], "sum"), small))
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    import numba
    print(numba.threading_layer(), "|", os.read(read, 1000).decode(), "| exit", status)
"""


def _run(code: str, layer=None) -> str:
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if layer:
        env["NUMBA_THREADING_LAYER"] = layer
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("layer", [None, "workqueue"])
def test_launches_from_several_threads(layer):
    """Three Python threads launching at once: under ``workqueue`` (not thread-safe) the process would abort
    without the launch lock; under any layer every result equals the single-threaded one."""
    line = _run(_TWO_THREADS, layer)
    assert line.endswith("failures 0"), line
    if layer:
        assert line.startswith(layer)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child():
    """A child forked after a parallel launch (one thread, as a DataLoader worker): under OpenMP a clear
    RuntimeError instead of Numba terminating the child, the serial small-call kernel still working; under
    ``workqueue`` the child computes."""
    line = _run(_FORK)
    layer, said, status = (part.strip() for part in line.split("|"))
    assert status == "exit 0", line
    assert said.endswith("small True"), line
    if layer == "omp":
        assert said.startswith("raised scatterx cannot launch its parallel CPU kernels"), line
    else:
        assert said.startswith("computed"), line
    line = _run(_FORK, "workqueue")
    assert line.startswith("workqueue") and "computed small True" in line, line


def test_launch_outside_the_lock_is_an_error():
    with pytest.raises(RuntimeError, match="outside the launch lock"):
        use_torch_threads(1 << 20)
