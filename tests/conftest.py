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

# Without a GPU, the Triton kernels are tested on CPU tensors through Triton's interpreter (test_triton.py). The
# variable is read when a kernel is defined, so it is set before scatterx's Triton kernels are imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

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
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if reduce in ("amax", "max", "amin", "min") or not expected.dtype.is_floating_point:
        torch.testing.assert_close(actual, expected, atol=0, rtol=0, equal_nan=True)
    else:
        atol, rtol = TOLERANCES[expected.dtype]
        torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def torch_threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)
