"""The TensorFlow and Paddle frontends replay golden vectors recorded by running the real frameworks
(``tools/make_golden.py``; neither framework is needed here). Each case is an input, the framework's call, and
either its result or the fact that it raised -- in which case scatterx must raise too (IndexError, ValueError or
TypeError), before writing anything."""

import json
import pathlib

import numpy as np
import pytest
import torch

import scatterx.paddle
import scatterx.tf

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
MODULES = {"tensorflow": scatterx.tf, "paddle": scatterx.paddle}


def decode(a):
    if not isinstance(a, dict):
        return a
    return torch.from_numpy(np.array(a["data"], dtype=a["dtype"]).reshape(a["shape"]))


def load(framework):
    doc = json.loads((GOLDEN / f"{framework}.json").read_text())
    return [pytest.param(framework, c, id=c["name"]) for c in doc["cases"]]


@pytest.mark.parametrize("framework, case", load("tensorflow") + load("paddle"))
def test_frontend_matches_the_framework(framework, case):
    fn = getattr(MODULES[framework], case["fn"])
    args = [decode(a) for a in case["args"]]
    snapshot = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    if "error" in case:
        with pytest.raises((IndexError, ValueError, TypeError)):
            fn(*args, **case["kwargs"])
    else:
        got = fn(*args, **case["kwargs"])
        want = decode(case["expect"])
        assert got.dtype == want.dtype
        if want.dtype.is_floating_point:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        else:
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    for before, after in zip(snapshot, args):  # inputs are never written, failed call or not
        if isinstance(before, torch.Tensor):
            assert torch.equal(before, after) or (before.is_floating_point() and torch.allclose(before, after, equal_nan=True))


def test_golden_files_cover_every_frontend_function():
    for framework, names in {
        "tensorflow": ["tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
                       "tensor_scatter_nd_max", "tensor_scatter_nd_min", "gather_nd", "unsorted_segment_sum",
                       "unsorted_segment_prod", "unsorted_segment_max", "unsorted_segment_min",
                       "unsorted_segment_mean"],
        "paddle": ["scatter", "put_along_axis"],
    }.items():
        doc = json.loads((GOLDEN / f"{framework}.json").read_text())
        assert {c["fn"] for c in doc["cases"]} == set(names)
