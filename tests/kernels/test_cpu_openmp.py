"""The OpenMP launch (``kernels/cpu/openmp.py``): its trampolines pass every kind of argument a kernel takes
(arrays of 1-3 dimensions, contiguous or strided, of every item size; integers of every width, booleans, floats) as
the kernel's own Python entry point does; where the runtime is looked up and what switches it off."""

import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from scatterx.kernels.cpu import launch, openmp
from scatterx.kernels.cpu._codegen import Kernel, claim

pytestmark = pytest.mark.skipif(openmp.runtime() is None, reason=f"no OpenMP launch here: {openmp.why_not()}")


@njit(nogil=True)
def _every_kind(counter, out, table, row, x32, x64, flag, small, n):
    """out[i] = a value that depends on every argument, for each claimed item i; returns the items claimed."""
    claimed = 0
    while True:
        i = claim(counter)
        if i < 0:
            break
        t = table[i % table.shape[0], i % table.shape[1], i % table.shape[2]]
        out[i] = t * x32 + x64 + row[i % row.shape[0]] + (1.5 if flag else -1.5) + small * 1000 + n * 10000
        claimed += 1
    return claimed


_EVERY_KIND = Kernel(_every_kind, strided=("table", "row"))


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("table_dtype", [np.int8, np.int16, np.float32, np.float64])
def test_every_kind_of_argument_reaches_the_kernel_as_on_one_thread(threads, table_dtype):
    rng = np.random.default_rng(0)
    table = (rng.random((4, 6, 10)) * 100).astype(table_dtype)[:, ::2, 1:]  # strided, 3-D
    row = np.arange(20, dtype=np.float32)[::3]  # strided, read-only
    row.flags.writeable = False
    args = dict(table=table, row=row, x32=np.float32(0.25), x64=-3.125, flag=True, small=np.int32(-7), n=123456789012)
    expected = np.zeros(500)
    assert launch(_EVERY_KIND, None, 500, 1, expected, **args) == 500
    out = np.zeros(500)
    assert launch(_EVERY_KIND, None, 500, threads, out, **args) == 500
    assert np.array_equal(out, expected)
    flipped = np.zeros(500)
    launch(_EVERY_KIND, None, 500, threads, flipped, **dict(args, flag=False))
    assert np.array_equal(flipped, expected - 3.0)


def test_variants_that_differ_only_in_dtype_or_literals_share_a_trampoline():
    float32 = openmp.trampoline(_EVERY_KIND.compiled(None, _args(np.float32)).signature.args, _int64())
    int32 = openmp.trampoline(_EVERY_KIND.compiled(None, _args(np.int32)).signature.args, _int64())
    float64 = openmp.trampoline(_EVERY_KIND.compiled(None, _args(np.float64)).signature.args, _int64())
    assert float32 == int32 != float64


def _args(table_dtype):
    table = np.zeros((2, 2, 2), table_dtype)
    return (
        np.zeros(2, np.int64),
        np.zeros(2),
        table,
        np.zeros(2, np.float32),
        np.float32(1),
        1.0,
        True,
        np.int32(1),
        1,
    )


def _int64():
    from numba import types

    return types.int64


def test_a_kernel_argument_without_a_trampoline_runs_on_the_pool():
    @njit(nogil=True)
    def with_tuple(counter, out, pair):
        while claim(counter) >= 0:
            out[0] += 0
        return 0

    kernel = Kernel(with_tuple)
    out = np.zeros(1)
    assert launch(kernel, None, 4, 2, out, (1, 2)) == 0
    assert kernel.native == {kernel.key_of((np.zeros(2, np.int64), out, (1, 2))): None}


def test_scatterx_cpu_launch_picks_the_pool(monkeypatch):
    monkeypatch.setenv("SCATTERX_CPU_LAUNCH", "pool")
    assert openmp._find_runtime() == "SCATTERX_CPU_LAUNCH=pool"
    monkeypatch.setenv("SCATTERX_CPU_LAUNCH", "threads")
    with pytest.warns(RuntimeWarning, match="'threads' is neither 'openmp' nor 'pool'"):
        assert "neither 'openmp' nor 'pool'" in openmp._find_runtime()
    monkeypatch.setenv("SCATTERX_CPU_LAUNCH", "openmp")
    assert not isinstance(openmp._find_runtime(), str)
    monkeypatch.setattr(sys, "platform", "win32")  # torch's runtime there has no GOMP_parallel: the pool
    assert "vcomp" in openmp._find_runtime()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the runtime torch's Linux wheels ship")
def test_the_runtime_is_the_one_torch_loaded():
    with open("/proc/self/maps") as maps:
        loaded = {os.path.realpath(line.split()[-1]) for line in maps if "libgomp" in line or "libomp" in line}
    assert loaded, "torch loaded no OpenMP runtime"
    assert openmp.runtime() is not None
    assert openmp._array_layout_reads_back()


_TWICE = """
import numpy as np
from scatterx.kernels.cpu import launch, openmp
from scatterx.kernels.cpu.launch_probe import add_one
built = []
build = openmp._build
openmp._build = lambda *args: built.append(1) or build(*args)
values = np.zeros(5000, np.float32)
launch(add_one, None, 10, 2, values, 500)
print(len(built), bool((values == 1).all()))
"""


def test_a_trampoline_built_once_is_loaded_from_disk_by_the_next_process(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [
        subprocess.run(
            [sys.executable, "-c", _TWICE], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert [r.stdout.split()[-2:] for r in runs] == [["1", "True"], ["0", "True"]]
    assert list((tmp_path / "scatterx-openmp").glob("*.nbt"))
