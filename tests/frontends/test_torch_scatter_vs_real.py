"""The drop-in against the real torch_scatter, where it is installed (skipped otherwise: it is built from its
sdist for measurements only, see README "torch_scatter drop-in"). Random calls of every function, compared
value for value (the composites to a tolerance); argindex where torch_scatter's is defined (its segment kernels
leave a stale one where nothing was selected in a non-empty segment)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_torch_scatter import check, problems
from test_torch_scatter_composite import close, groups
from test_torch_scatter_segment import segment_problems

import scatterx.torch_scatter as drop_in

real = pytest.importorskip("torch_scatter", reason="torch_scatter is not installed (the drop-in's own tests run)")
if real is drop_in or not hasattr(real, "segment_csr"):  # pragma: no cover - install() here, or not the package
    pytest.skip("torch_scatter here is not the real package", allow_module_level=True)

HALF = (torch.float16, torch.bfloat16)


def same(ours, theirs, p, arg_where=None):
    if p["reduce"] in ("min", "max"):
        (ours, arg), (theirs, their_arg) = ours, theirs
        keep = torch.ones_like(arg, dtype=torch.bool) if arg_where is None else arg_where(arg, ours)
        assert torch.equal(arg[keep], their_arg[keep])
    elif ours.dtype in HALF:  # torch_scatter's scatter sums half types in half: compare loosely
        torch.testing.assert_close(ours.float(), theirs.float(), atol=0.25, rtol=0.05, equal_nan=True)
        return
    check(ours, theirs, p["src"].dtype, p["reduce"])


@settings(max_examples=300)
@given(p=problems())
def test_scatter_family(p):
    name = f"scatter_{p['reduce']}"
    args = (p["src"], p["index"], p["dim"])
    ours = getattr(drop_in, name)(*args, None if p["out"] is None else p["out"].clone(), p["dim_size"])
    theirs = getattr(real, name)(*args, None if p["out"] is None else p["out"].clone(), p["dim_size"])
    same(ours, theirs, p)


@settings(max_examples=300)
@given(p=segment_problems())
def test_segment_families(p):
    name = {"add": "sum"}.get(p["reduce"], p["reduce"])
    dim = p["index"].dim() - 1
    n = p["src"].size(dim)

    def defined(arg, values):  # torch_scatter's arg is stale where nothing was selected in a non-empty segment
        return arg != n

    ours = getattr(drop_in, f"segment_{name}_csr")(p["src"], p["indptr"])
    theirs = getattr(real, f"segment_{name}_csr")(p["src"], p["indptr"])
    same(ours, theirs, p, defined)
    out = None if p["out"] is None else p["out"]
    if out is not None and p["index"].numel() and bool((p["index"][..., 0] != 0).any()):
        # torch_scatter's kernel starts a batch's first run from out's row 0 instead of the run's own row (a bug
        # the drop-in does not copy: README, "torch_scatter drop-in")
        return
    ours = getattr(drop_in, f"segment_{name}_coo")(p["src"], p["index"], None if out is None else out.clone())
    theirs = getattr(real, f"segment_{name}_coo")(p["src"], p["index"], None if out is None else out.clone())
    same(ours, theirs, p, defined)


@settings(max_examples=200)
@given(p=groups(), unbiased=st.booleans())
def test_composites(p, unbiased):
    """softmax, log_softmax and logsumexp with infinities and NaN among the values; std on finite ones."""
    src, index, dim, size = p
    for name, kwargs in (
        ("scatter_softmax", {}),
        ("scatter_log_softmax", {}),
        ("scatter_logsumexp", {"dim_size": size}),
    ):
        ours = getattr(drop_in, name)(src, index, dim, **kwargs)
        theirs = getattr(real, name)(src, index, dim, **kwargs)
        close(ours, theirs)
    finite = torch.nan_to_num(src, nan=0.5, posinf=3.0, neginf=-3.0)
    close(
        drop_in.scatter_std(finite, index, dim, dim_size=size, unbiased=unbiased),
        real.scatter_std(finite, index, dim, dim_size=size, unbiased=unbiased),
    )


def exact(ours, theirs):
    torch.testing.assert_close(ours, theirs, atol=0, rtol=0, equal_nan=True)


@settings(max_examples=200)
@given(p=segment_problems())
def test_gathers(p):
    """Where torch_scatter's result is defined: its gather_coo crashes the process (SIGFPE) on an empty index, its
    gather_csr leaves positions before ``indptr[..., 0]`` uninitialised."""
    src, dim = p["src"], p["index"].dim() - 1
    M = max(p["indptr"].size(-1) - 1, 0)
    rows = src.narrow(dim, 0, min(M, src.size(dim)))
    if rows.size(dim) == M and bool((p["indptr"][..., 0] == 0).all()):
        exact(drop_in.gather_csr(rows, p["indptr"]), real.gather_csr(rows, p["indptr"]))
    if p["index"].numel():
        index = p["index"].expand(list(src.shape[:dim]) + [p["index"].size(-1)])
        table = torch.randn(list(src.shape[:dim]) + [5] + list(src.shape[dim + 1 :]), dtype=torch.float64)
        exact(drop_in.gather_coo(table, index), real.gather_coo(table, index))
