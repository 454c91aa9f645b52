"""element_scatter (the planner's element plans) on every backend, against the x-transformer reference."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx.ops import element_scatter
from conftest import assert_matches

MODES = ["assign", "sum", "mean", "prod", "amax", "amin"]


def _loop(rows, src, base, reduce, include_self):
    out = base.clone()
    for t in range(base.numel()):
        members = src[rows == t].double()
        if members.numel() == 0:
            continue
        if reduce == "assign":
            out[t] = members[-1]
            continue
        if include_self:
            members = torch.cat([base[t : t + 1].double(), members])
        value = {"sum": members.sum, "mean": members.mean, "prod": members.prod, "amax": members.max,
                 "amin": members.min}[reduce]()
        out[t] = value
    return out


def test_matches_a_loop(backend):
    @settings(max_examples=backend.examples(100))
    @given(st.lists(st.integers(0, 7), max_size=20), st.sampled_from(MODES), st.booleans(), st.integers(0, 2**31))
    def check(rows, reduce, include_self, seed):
        g = torch.Generator().manual_seed(seed)
        rows = torch.tensor(rows, dtype=torch.int64)
        src = torch.randint(-3, 4, (rows.numel(),), generator=g).double()
        base = torch.randint(-3, 4, (8,), generator=g).double()
        with backend:
            got = element_scatter(backend.put(rows), backend.put(src), backend.put(base), reduce, include_self)
        assert_matches(got, _loop(rows, src, base, reduce, include_self and reduce != "assign"))

    check()


def test_bad_rows_raise_before_anything_is_written():
    base = torch.zeros(4)
    with pytest.raises(IndexError, match=r"rows\[1\]=4"):
        element_scatter(torch.tensor([0, 4]), torch.ones(2), base, "sum", True)
    assert not base.any()


@pytest.mark.parametrize(
    "args, error",
    [
        ((torch.tensor([0]), torch.ones(1), torch.zeros(2), "median", True), ValueError),
        ((torch.tensor([0, 1]), torch.ones(1), torch.zeros(2), "sum", True), ValueError),
        ((torch.tensor([0]), torch.ones(1), torch.zeros(2, dtype=torch.float64), "sum", True), ValueError),
        ((torch.tensor([0.0]), torch.ones(1), torch.zeros(2), "sum", True), TypeError),
        (([0], torch.ones(1), torch.zeros(2), "sum", True), TypeError),
    ],
)
def test_bad_arguments(args, error):
    with pytest.raises(error):
        element_scatter(*args)
