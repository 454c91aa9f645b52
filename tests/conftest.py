"""Shared test set-up: the Numba cache, Triton's interpreter, hypothesis' profile, tolerances, and the ``backend``
and ``route`` fixtures that run one test body on every backend (and every strategy of it)."""

import contextlib
import hashlib
import os
import pathlib

# Numba's disk cache is keyed on the source file of each kernel only: a change to the reduction table or to
# _codegen.py (which the kernels compile in) would not invalidate it, and tests would run stale kernels. Tests
# therefore cache in a directory named after the contents of every file the kernels are generated from.
# (Set before scatterx, hence numba, is imported.)
_ROOT = pathlib.Path(__file__).resolve().parent.parent
_SOURCES = sorted([_ROOT / "scatterx" / "_reductions.py", *(_ROOT / "scatterx" / "kernels").rglob("*.py")])
_KEY = hashlib.sha256(b"".join(p.read_bytes() for p in _SOURCES)).hexdigest()[:16]
os.environ.setdefault("NUMBA_CACHE_DIR", str(_ROOT / ".numba-cache" / _KEY))

import torch  # noqa: E402

# Without a GPU, the Triton kernels are tested on CPU tensors through Triton's interpreter (the "gpu" backend
# below). The variable is read when a kernel is defined, so it is set before scatterx's Triton kernels are imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from scatterx import backends  # noqa: E402
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
        """How many hypothesis examples to run where the CPU backend runs ``n``."""
        return max(2, n // 4) if self.interpreted else n

    def put(self, x):
        if isinstance(x, torch.Tensor):
            return x.to(self.device)
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


def _backend(name: str) -> Backend:
    if name == "gpu" and not triton_available():
        pytest.skip("triton is not installed: the GPU backend cannot run")
    return Backend(name)


@pytest.fixture(params=["cpu", "gpu"])
def backend(request):
    """Each backend in turn (the GPU one on CUDA, or through Triton's interpreter)."""
    return _backend(request.param)


#: every strategy of every backend: (backend, strategy); "sorted" is the sorted path of either, the others force
#: the unsorted strategy of that backend; "serial" and "serial-sorted" are the CPU's path for small calls (the
#: other CPU routes switch it off, so that the tests' small problems reach the general kernels, and the unsorted
#: ones its use for narrow unsorted rows of any size)
ROUTES = [
    ("cpu", "sorted"), ("cpu", "gather"), ("cpu", "slices"), ("cpu", "serial"), ("cpu", "serial-sorted"),
    ("gpu", "sorted"), ("gpu", "atomic"), ("gpu", "sort"),
]


@pytest.fixture(params=ROUTES, ids=[f"{b}-{s}" for b, s in ROUTES])
def route(request, monkeypatch):
    """A backend with one strategy forced: ``route.sorted`` says whether the test must pass a sorted index."""
    name, strategy = request.param
    b = _backend(name)
    b.strategy, b.sorted = strategy, strategy in ("sorted", "serial-sorted")
    if name == "cpu":
        serial = strategy.startswith("serial")
        monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", 1 << 20 if serial else -1)
        if serial:
            return b
    if not b.sorted:
        if name == "cpu":
            monkeypatch.setattr(backends.cpu, "UNSORTED_STRATEGY", strategy)
            monkeypatch.setattr(backends.cpu, "SERIAL_UNSORTED_MAX_WORK", 0)  # the strategy, not the serial kernel
        else:
            from scatterx.backends import gpu

            monkeypatch.setattr(gpu, "UNSORTED_STRATEGY", strategy)
    return b
