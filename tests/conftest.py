"""Shared test set-up: the Numba cache, Triton's interpreter, hypothesis' profile, tolerances, and the ``backend``
and ``route`` fixtures that run one test body on every backend (and every strategy of it)."""

import contextlib
import hashlib
import importlib.metadata as _metadata
import os
import pathlib
import sys

# Numba's disk cache is keyed on the source file of each kernel: an edit to a kernel file recompiles that file's
# variants, and no others. But a kernel also compiles in what it imports from the files it is generated from -- the
# reduction table, the codegen steps, the memory intrinsics, the samplers' random numbers -- and Numba does not
# track those. Tests therefore cache
# in a directory named after the contents of exactly those files (``tests/test_layering.py`` checks that kernel
# modules import nothing compiled from anywhere else). Set before scatterx, hence numba, is imported.
_ROOT = pathlib.Path(__file__).resolve().parent.parent
_SOURCES = [
    _ROOT / "scatterx" / "_reductions.py",
    _ROOT / "scatterx" / "kernels" / "cpu" / "_codegen.py",
    _ROOT / "scatterx" / "kernels" / "cpu" / "_exp.py",
    _ROOT / "scatterx" / "kernels" / "cpu" / "_memory.py",
    _ROOT / "scatterx" / "kernels" / "cpu" / "_random.py",
    _ROOT / "scatterx" / "kernels" / "cpu" / "_runs.py",
]
# One directory per Numba version too: the oldest supported one (tools/oldest-smoke.sh) may run beside the newest.
_KEY = hashlib.sha256(b"".join(p.read_bytes() for p in _SOURCES)).hexdigest()[:16]
os.environ.setdefault("NUMBA_CACHE_DIR", str(_ROOT / ".numba-cache" / f"{_KEY}-numba-{_metadata.version('numba')}"))

import torch  # noqa: E402

# Without a GPU, the Triton kernels are tested on CPU tensors through Triton's interpreter (the "gpu" backend
# below). The variable is read when a kernel is defined, so it is set before scatterx's Triton kernels are imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    if os.environ["TRITON_INTERPRET"] == "1":
        # its scans and reductions a tile row at a time, not an element at a time (tests/triton_interpreter.py)
        import triton_interpreter

        triton_interpreter.install()

import compile_budget  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from scatterx import backends  # noqa: E402
from scatterx.kernels.cpu._codegen import Kernel  # noqa: E402

# Every CPU kernel call the suite makes is held against the types its key's variant was compiled for: a caller's
# key that misses what tells two signatures apart fails the test that reaches it.
Kernel.check_keys = True
from scatterx.kernels.gpu import available as triton_available  # noqa: E402

# Kernels compile on first use (seconds); hypothesis' per-example deadline would count that against an example.
# Function-scoped fixtures here only pin a setting for the whole test (e.g. the unsorted strategy), which is
# meant to hold for every generated example.
settings.register_profile(
    "scatterx",
    deadline=None,
    max_examples=int(os.environ.get("SCATTERX_HYPOTHESIS_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("scatterx")

ON_GPU = torch.cuda.is_available()

# (atol, rtol) per dtype for results that involve arithmetic (sum, mean, prod). amax/amin and integers are exact.
TOLERANCES = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 2e-2),
    torch.int32: (0, 0),
    torch.int64: (0, 0),
}


def assert_matches(actual, expected, reduce="sum"):
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if reduce in ("amax", "max", "amin", "min") or not expected.dtype.is_floating_point:
        torch.testing.assert_close(actual, expected.cpu(), atol=0, rtol=0, equal_nan=True)
    else:
        atol, rtol = TOLERANCES[expected.dtype]
        torch.testing.assert_close(actual, expected.cpu(), atol=atol, rtol=rtol, equal_nan=True)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def torch_threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


# ------------------------------------------------------------------------------------------------- backends
class Backend:
    """One backend for a test body: ``with backend: ...`` runs the ops there, ``backend.put(x)`` moves tensors
    (also inside dicts, lists, tuples) to its device.

    "cpu": the Numba kernels. "gpu": the Triton kernels -- on CUDA tensors when a GPU is present, else on CPU
    tensors through Triton's interpreter (``backends.gpu_backend_on_cpu``), which runs every program in Python
    (~5 ms each), so tests keep its shapes small and ask ``examples(n)`` for fewer random cases."""

    def __init__(self, name: str):
        self.name = name
        self.device = "cuda" if name == "gpu" and ON_GPU else "cpu"
        self.interpreted = name == "gpu" and not ON_GPU
        self._stack = None

    def __repr__(self):
        return f"Backend({self.name!r})"

    def examples(self, n: int) -> int:
        """How many hypothesis examples to run where the CPU backend runs ``n``: an eighth through the interpreter
        (every test's cross-product of reductions, dtypes and routes is kept; each example costs ~100x)."""
        return max(2, n // 8) if self.interpreted else n

    def put(self, x):
        """``x`` on the backend's device: always a copy, so that a test's tensors never alias its inputs on one
        device and not on the other (``put(src).requires_grad_()`` on the CPU would otherwise mark ``src`` itself)."""
        if isinstance(x, torch.Tensor):
            return x.to(self.device, copy=True)
        if isinstance(x, dict):
            return {k: self.put(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(self.put(v) for v in x)
        return x

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        if self.interpreted:
            self._stack.enter_context(backends.gpu_backend_on_cpu())
        return self

    def __exit__(self, *exc):
        if self.device == "cuda" and exc[0] is None:
            torch.cuda.synchronize()
        self._stack.close()


def assert_device_assert(code: str, words: str) -> None:
    """On CUDA a failed device-side assert ends the process's CUDA context -- every later test of the process would
    fail -- so a test that expects one runs ``code`` in a process of its own: the process must fail, and say
    ``words`` (the assert's message, which CUDA prints from the kernel). ``code`` runs the GPU backend on its tensors
    wherever they are (``DEVICE`` holds "cuda", or "cpu" with Triton's interpreter, where the assert raises at
    once: how this helper itself is tested on a CPU)."""
    import subprocess
    import textwrap

    prologue = (
        "import torch, scatterx, contextlib\n"
        "from scatterx import backends\n"
        f"DEVICE = {'cuda' if ON_GPU else 'cpu'!r}\n"
        "GPU = contextlib.nullcontext() if DEVICE == 'cuda' else backends.gpu_backend_on_cpu()\n"
    )
    env = dict(os.environ)
    if not ON_GPU:
        env["TRITON_INTERPRET"] = "1"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            prologue + textwrap.dedent(code) + "\ntorch.cuda.synchronize() if DEVICE == 'cuda' else None\n",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=str(_ROOT),
        check=False,
    )
    assert run.returncode != 0, f"no assert fired:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    assert words in run.stdout + run.stderr, run.stderr[-3000:]


def _backend(name: str) -> Backend:
    if name == "gpu" and not triton_available():
        pytest.skip("triton is not installed: the GPU backend cannot run")
    if name == "gpu" and not ON_GPU:
        import interpreter_probe

        if interpreter_probe.problem():
            pytest.skip(interpreter_probe.problem())
    return Backend(name)


@pytest.fixture(params=["cpu", "gpu"])
def backend(request):
    """Each backend in turn (the GPU one on CUDA, or through Triton's interpreter)."""
    return _backend(request.param)


#: every route of every backend: (backend, route). The CPU's are ``backends/cpu/routes.py``'s (``serial-sorted`` is
#: the serial route checking a promised order); the GPU's, ``backends/gpu/routes.py``'s.
ROUTES = [
    ("cpu", "serial"),
    ("cpu", "serial-sorted"),
    ("cpu", "runs"),
    ("cpu", "segments"),
    ("cpu", "gather"),
    ("cpu", "slices"),
    ("gpu", "segments"),
    ("gpu", "atomic"),
    ("gpu", "sort"),
]
#: the routes that need a sorted index, and those that write new tensors only (no ``out=``, no base; the serial
#: route serves ``out=`` through a new tensor that it then copies in)
SORTED_ROUTES = {"serial-sorted", "runs", "segments"}
INTO_NEW_ROUTES = {"runs"}


def route_id(param) -> str:
    return "-".join(param)


@pytest.fixture(params=ROUTES, ids=route_id)
def route(request):
    """A backend with one route forced: ``route.sorted`` says whether the test must pass a sorted index,
    ``route.into_new`` whether it may only ask for new tensors."""
    name, strategy = request.param
    b = _backend(name)
    b.strategy, b.sorted, b.into_new = strategy, strategy in SORTED_ROUTES, strategy in INTO_NEW_ROUTES
    if name == "cpu":
        forced = backends.cpu.routes.Route(strategy.split("-")[0])
        with backends.cpu.routes.force(forced):
            yield b
    else:
        from scatterx.backends import gpu

        with gpu.routes.force(gpu.routes.Route(strategy)):
            yield b


# ----------------------------------------------------------------------------------------------- compile budget
def pytest_configure(config):
    """Record the variant of every GPU kernel launch the tests make (``backends/gpu/_launch.py``)."""
    if triton_available():
        from scatterx.backends.gpu import _launch

        config._gpu_launches = contextlib.ExitStack()
        config._gpu_launched = config._gpu_launches.enter_context(_launch.recording())


def unlisted_gpu_launches(config):
    """The launches of this run whose variant ``backends/gpu/variants.py`` does not list (by name): each would be a
    kernel that ``scatterx gpu-report`` -- and CI -- never compiled for a real GPU."""
    launched = getattr(config, "_gpu_launched", None)
    if not launched:
        return []
    from scatterx.backends.gpu._launch import Variant
    from scatterx.backends.gpu.variants import all_variants

    listed = {v.key for v in all_variants()}
    return sorted(Variant(*key).name for key in launched - listed)


# ------------------------------------------------------------------------------------- GPU kernels compiled
#: the test that compiles every GPU kernel variant for real GPUs (``tests/bench/test_gpu_static.py``)
GPU_COMPILE_TEST = "test_every_variant_compiles_for_sm80_and_sm90_without_spills_or_misplaced_atomics"


def gpu_report_is_recorded() -> bool:
    """Whether ``tests/bench/gpu_report_record.json`` is the report of the kernels, variants and Triton at hand."""
    sys.path.insert(0, str(_ROOT / "tests" / "bench"))
    try:
        import gpu_report_record
    finally:
        sys.path.pop(0)
    recorded = gpu_report_record.load()
    return recorded is not None and recorded["key"] == gpu_report_record.key(gpu_report_record.variants())


def gpu_compiling_env():
    """The environment of a process that compiles the Triton kernels (never interprets them)."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), str(_ROOT / "tests" / "bench"), env.get("PYTHONPATH", "")])
    return env


#: the tests that build the docs site (``tests/test_docs_build.py``): their builds start at collection too
DOCS_BUILD_TEST = "test_docs_build_without_warnings"
DOCS_BROKEN_TEST = "test_a_broken_cross_reference_fails_the_build"
#: tests whose work runs in a process started at collection; each runs last and waits for its process
BACKGROUND_TESTS = (GPU_COMPILE_TEST, DOCS_BUILD_TEST, DOCS_BROKEN_TEST)


def sphinx_command(source, out):
    """The docs build of the README (warnings as errors), from ``source`` into ``out``/html."""
    return [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-b",
        "html",
        "-d",
        os.path.join(out, "doctrees"),
        str(source),
        os.path.join(out, "html"),
    ]


def broken_docs_source(directory):
    """A docs source with the project's configuration and one broken cross-reference."""
    import shutil

    source = pathlib.Path(directory, "src")
    source.mkdir(parents=True, exist_ok=True)
    shutil.copy(_ROOT / "docs" / "conf.py", source / "conf.py")
    (source / "index.rst").write_text(
        "Broken\n======\n\n.. autofunction:: scatterx.ptr_to_index\n\nSee :func:`scatterx.no_such_function`.\n"
    )
    return source


def xdist_workers() -> int:
    """How many processes run the tests: pytest-xdist's workers (``-n``), or 1."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def _in_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _is_controller(config) -> bool:
    """pytest-xdist's controller: it runs no test, and gathers what its workers report."""
    return getattr(config.option, "dist", "no") != "no" and not _in_worker(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core, but no more than one per 1.5 GiB of the machine's memory (a worker holds
    torch, Numba, PyG and the compiled kernels: ~1 GiB at its peak)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): cores alone
        return cores
    return max(1, min(cores, int(memory // (1.5 * 2**30))))


def pytest_collection_modifyitems(config, items):
    """The tests whose work runs in a process of its own (``BACKGROUND_TESTS``). In one process, they run last:
    their processes, started at collection, overlap the whole run. Under pytest-xdist, where the workers already
    keep every core busy, each runs its process when it runs, first: xdist hands the first tests out one per
    worker, so the long ones start at once and the others are scheduled around them."""
    first = _in_worker(config)
    items.sort(key=lambda item: (item.name in BACKGROUND_TESTS) != first)


def _background_command(config, name, many_tests):
    """``(command, out_dir, env)`` of the process behind the test ``name``."""
    import tempfile

    if name == GPU_COMPILE_TEST:
        cores = os.cpu_count() or 1
        # alone: every core; beside other tests: a core for them (one process), or its share (xdist's workers)
        jobs = max(1, cores // xdist_workers()) if _in_worker(config) else (max(1, cores - 1) if many_tests else cores)
        out = tempfile.mkdtemp(prefix="scatterx-gpu-report-")
        if gpu_report_is_recorded():  # the recorded report holds: a sample checks it (tests/bench/gpu_report_record.py)
            command = [sys.executable, str(_ROOT / "tests" / "bench" / "gpu_report_record.py"), "--sample"]
        else:
            command = [sys.executable, "-m", "scatterx", "gpu-report", "--targets", "80,90"]
        return [*command, "--jobs", str(jobs), "--out-dir", out], out, gpu_compiling_env()
    if name == DOCS_BUILD_TEST:
        out = tempfile.mkdtemp(prefix="scatterx-docs-")
        return sphinx_command(_ROOT / "docs", out), out, None
    out = tempfile.mkdtemp(prefix="scatterx-docs-broken-")
    return sphinx_command(broken_docs_source(out), out), out, None


def _start(config, name, many_tests=True):
    import subprocess

    command, out, env = _background_command(config, name, many_tests)
    log = open(os.path.join(out, "log.txt"), "w")  # noqa: SIM115  # the process's; closed once it is waited for
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(_ROOT))
    config._background[name] = (process, out, log)


def background(request, name, timeout=1800):
    """``(returncode, output, out_dir)`` of the process for the test ``name``: started at collection in a run of
    one process, or now under pytest-xdist."""
    if name not in request.config._background:
        _start(request.config, name)
    process, out, log = request.config._background[name]
    returncode = process.wait(timeout=timeout)
    log.close()
    return returncode, pathlib.Path(out, "log.txt").read_text(), out


def pytest_collection_finish(session):
    """In a run of one process, start the slow work of a few tests in processes of their own as soon as the tests
    are collected, so that it runs while the other tests do: most of them keep one core busy, and this work takes
    the other. The tests run last and wait for their process. Run alone, such a test gets every core. (Under
    pytest-xdist each of these tests starts its process itself: ``background``.)

    - ``scatterx gpu-report`` for sm_80 and sm_90 (~15 core-minutes from an empty Triton cache), or the sample
      that checks its recorded result (``tests/bench/gpu_report_record.py``);
    - the docs site's build, and a build that must fail on a broken cross-reference (~15 core-seconds)."""
    session.config._background = {}
    if session.config.option.collectonly or _in_worker(session.config):
        return
    names = {item.name for item in session.items}
    for name in BACKGROUND_TESTS:
        if name in names and (name != GPU_COMPILE_TEST or triton_available()):
            _start(session.config, name, many_tests=len(session.items) > 1)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller: keep what a worker reports at its end (``pytest_sessionfinish``)."""
    reported = getattr(node, "workeroutput", {}).get("scatterx")
    if reported:
        node.config._from_workers = [*getattr(node.config, "_from_workers", []), reported]


def pytest_sessionfinish(session, exitstatus):
    """Count the CPU kernels' compiled variants (``compile_budget.py``); over the budget, the run fails. Likewise
    a GPU launch whose variant the backend does not list. Under pytest-xdist each worker reports its own, and the
    controller counts the variants compiled anywhere (a variant two workers compiled counts once)."""
    import shutil

    config = session.config
    for process, out, log in getattr(config, "_background", {}).values():
        if process.poll() is None:  # its test did not run to its end
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(out, ignore_errors=True)
    compiled = compile_budget.compiled()
    unlisted = unlisted_gpu_launches(config)
    if _in_worker(config):
        config.workeroutput["scatterx"] = {"compiled": [list(row) for row in compiled], "unlisted": unlisted}
        return
    if _is_controller(config):
        reports = getattr(config, "_from_workers", [])
        compiled = [tuple(row) for report in reports for row in report["compiled"]]
        unlisted = sorted({name for report in reports for name in report["unlisted"]})
    rows = compile_budget.count(compiled)
    config._compile_budget = rows
    total = sum(n for _, n, _ in rows)
    config._unlisted = unlisted
    if (total > compile_budget.BUDGET or unlisted) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    ran = [r for reports in terminalreporter.stats.values() for r in reports if hasattr(r, "nodeid")]
    if any(r.nodeid.endswith(GPU_COMPILE_TEST) for r in ran) and triton_available() and not gpu_report_is_recorded():
        terminalreporter.section("the recorded GPU report")
        terminalreporter.write_line(
            "tests/bench/gpu_report_record.json is not the report of these GPU kernels, variants, checks and Triton: "
            "this run compiled every variant (~15 core-minutes), and so will every run, CI's too, until it is "
            "recorded again: python tests/bench/gpu_report_record.py",
            yellow=True,
            bold=True,
        )
    unlisted = getattr(config, "_unlisted", None)
    if unlisted:
        terminalreporter.section("GPU launches missing from backends/gpu/variants.py")
        for name in unlisted:
            terminalreporter.write_line(f"FAILED: launched but not listed: {name}", red=True, bold=True)
    rows = getattr(config, "_compile_budget", None)
    if not rows:
        return
    terminalreporter.section("compiled variants of the CPU kernels")
    for line in compile_budget.report(rows):
        terminalreporter.write_line(line)
    total = sum(n for _, n, _ in rows)
    if total > compile_budget.BUDGET:
        terminalreporter.write_line(
            f"FAILED: {total} compiled variants, over the budget of {compile_budget.BUDGET}", red=True, bold=True
        )
