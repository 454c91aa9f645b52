"""tests/triton_interpreter.py: the scans and reductions that the test suite's Triton interpreter runs a tile row
at a time give, bit for bit, what Triton's own interpreter gives element by element -- for every combine the
kernels use (the segmented scans of ``kernels/gpu/_balance.py``, ``reduce_rows`` of ``kernels/gpu/_codegen.py``),
on values whose sums and products are exact in any grouping, with NaNs (of two signs), infinities and signed
zeros, where max and min must keep the first of equals: bit for bit, but for which NaN a sum or product of NaNs is.
And its language patch once per launch: each function's modules patched once, the same results.
"""

import functools

import numpy as np
import pytest
import torch
import triton_interpreter

from scatterx.kernels.gpu import available, interpreting

pytestmark = [
    pytest.mark.skipif(not available(), reason="triton is not installed"),
    pytest.mark.skipif(not interpreting(), reason="tests Triton's interpreter (TRITON_INTERPRET=1)"),
]

if available():
    import triton
    import triton.language as tl

    from scatterx.kernels.gpu._balance import scan_segments
    from scatterx.kernels.gpu._codegen import reduce_rows

    @triton.jit
    def _tile_kernel(x_ptr, starts_ptr, scan_ptr, rows_ptr, REDUCE: tl.constexpr, E: tl.constexpr, F: tl.constexpr):
        at = tl.arange(0, E)[:, None] * F + tl.arange(0, F)[None, :]
        x = tl.load(x_ptr + at)
        starts = tl.load(starts_ptr + at) != 0
        tl.store(scan_ptr + at, scan_segments(starts, x, REDUCE))
        tl.store(rows_ptr + tl.arange(0, F), reduce_rows(x, REDUCE))


def _run(x, starts, code):
    scan, rows = torch.empty_like(x), torch.empty_like(x[0])
    _tile_kernel[(1,)](x, starts, scan, rows, code, x.shape[0], x.shape[1])
    return scan, rows


def _bits(t, any_nan=False):
    """``t``'s bits, every NaN one NaN where ``any_nan``."""
    if t.dtype != torch.float32:
        return t
    return (torch.where(t.isnan(), float("nan"), t) if any_nan else t).view(torch.int32)


def _tile(rng, dtype, e, f):
    values = rng.integers(-2, 3, size=(e, f))
    if not dtype.is_floating_point:
        return torch.from_numpy(values).to(dtype)
    x = torch.from_numpy(values).to(dtype)
    special = torch.tensor([float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0], dtype=dtype)
    spots = torch.from_numpy(rng.random((e, f)) < 0.3)
    x[spots] = special[torch.from_numpy(rng.integers(0, len(special), size=int(spots.sum())))]
    return x


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_row_at_a_time_scans_and_reductions_equal_tritons_element_by_element(reduce, dtype, monkeypatch):
    from triton.runtime import interpreter

    from scatterx._reductions import BY_NAME

    assert triton_interpreter.install(), "this Triton's interpreter has no generic scan/reduce to replace"
    code = BY_NAME[reduce].code
    rng = np.random.default_rng(7)
    for e, f in [(16, 8), (8, 2), (2, 4)]:
        x = _tile(rng, dtype, e, f)
        starts = torch.from_numpy(rng.random((e, f)) < 0.3).to(torch.int8)
        starts[0] = 1
        fast = _run(x, starts, code)
        with monkeypatch.context() as m:
            m.setattr(interpreter.ScanOps, "generic_scan", interpreter.ScanOps.element_by_element_scan)
            m.setattr(interpreter.ReduceOps, "generic_reduce", interpreter.ReduceOps.element_by_element_reduce)
            slow = _run(x, starts, code)
        # (which NaN an arithmetic result of NaNs is depends on the grouping, and on NumPy's version)
        any_nan = reduce in ("sum", "prod")
        for a, b in zip(fast, slow):
            assert torch.equal(_bits(a, any_nan), _bits(b, any_nan)), (reduce, e, f, a, b)


def test_a_launch_patches_the_language_once_for_all_its_device_function_calls(monkeypatch):
    from triton.runtime import interpreter

    triton_interpreter.install()
    if not isinstance(interpreter._patch_lang, functools.partial):
        pytest.skip("this Triton's interpreter patches the language for good, once is all it costs")
    tritons = interpreter._patch_lang.args[0]
    calls: list[str] = []

    def counted(fn):
        calls.append(fn.__name__)
        return tritons(fn)

    x = _tile(np.random.default_rng(3), torch.float32, 16, 8)
    starts = (torch.arange(16 * 8).reshape(16, 8) % 5 == 0).to(torch.int8)
    results = {}
    once = functools.partial(triton_interpreter._patch_lang, counted, (tl, tl.core))
    for name, patch in [("per call", counted), ("per launch", once)]:
        calls.clear()
        with monkeypatch.context() as m:
            m.setattr(interpreter, "_patch_lang", patch)
            results[name] = _run(x, starts, 0)
            _run(x, starts, 0)  # (a second launch patches again: the first restored everything at its end)
        results[name + " calls"] = list(calls)
    per_launch = results["per launch calls"]
    assert per_launch[0] == "_tile_kernel" and per_launch.count("_tile_kernel") == 2
    first = per_launch[: per_launch.index("_tile_kernel", 1)]
    assert len(first) == len(set(first)), "a function's modules were patched twice in one launch"
    assert len(results["per call calls"]) > len(per_launch)  # (Triton's own: the device functions' calls as well)
    for a, b in zip(results["per call"], results["per launch"]):
        assert torch.equal(_bits(a), _bits(b))
