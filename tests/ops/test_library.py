"""``ops/_library.py``: the eager autograd twin of each differentiable op computes the op's own values and
gradients (one formula drives both), and the public functions take it in eager mode."""

import importlib

import pytest
import torch

import scatterx

# the op modules (``scatterx.ops`` re-exports functions of the same names, hence import_module)
gsr_module = importlib.import_module("scatterx.ops.gather_segment_reduce")
isr_module = importlib.import_module("scatterx.ops.index_scatter_reduce")
sr_module = importlib.import_module("scatterx.ops.segment_reduce")
softmax_module = importlib.import_module("scatterx.ops.segment_softmax")


def _graph(seed, n=40, segments=9):
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, segments, (n,), generator=g)
    src = torch.randn(n, 3, generator=g, dtype=torch.float64)
    src[5] = src[7]  # ties for amax/amin
    src[11, 0] = 0.0  # a zero for prod
    return index, src


def _cases():
    index, src = _graph(0)
    sorted_index = index.sort().values
    ptr = scatterx.index_to_ptr(sorted_index, 9)
    rows = torch.randint(0, 40, (55,), generator=torch.Generator().manual_seed(1))
    ptr_rows = torch.tensor([0, 10, 10, 30, 55])
    base = torch.randn(9, 3, dtype=torch.float64)
    for reduce in ("sum", "mean", "prod", "amax", "amin"):
        for b in (None, base):
            yield (
                f"index_scatter_reduce-{reduce}-{'base' if b is not None else 'new'}",
                isr_module,
                "index_scatter_reduce",
                (src, index, 0, reduce, False, 9, b, True, False),
            )
        yield f"segment_reduce-{reduce}", sr_module, "segment_reduce", (src[: len(sorted_index)], ptr, reduce, 0)
    for reduce in ("sum", "mean"):
        yield (
            f"gather_segment_reduce-{reduce}",
            gsr_module,
            "gather_segment_reduce",
            (src, ptr_rows, rows, reduce, 0, None, None),
        )
    yield "segment_softmax", softmax_module, "segment_softmax", (src, index, None, 0, 9, False)


CASES = list(_cases())


@pytest.mark.parametrize("name, module, op, args", CASES, ids=[c[0] for c in CASES])
def test_eager_twin_equals_the_op(name, module, op, args):
    differentiable, custom_op = getattr(module, f"{op}_differentiable"), getattr(module, f"{op}_op")
    results = []
    for call in (custom_op, differentiable.eager):
        leaves = [
            a.detach().clone().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args
        ]
        out = call(*leaves)
        weights = torch.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)
        inputs = [a for a in leaves if isinstance(a, torch.Tensor) and a.requires_grad]
        grads = torch.autograd.grad((out * weights).sum(), inputs)
        results.append((out.detach(), grads))
    (out_op, grads_op), (out_eager, grads_eager) = results
    assert torch.equal(out_op, out_eager)
    assert len(grads_op) == len(grads_eager)
    for a, b in zip(grads_op, grads_eager):
        assert torch.equal(a, b)


def test_public_function_takes_the_twin_in_eager_mode(monkeypatch):
    """With a gradient wanted and no tracing, ``index_scatter_reduce`` calls the twin, never the custom op."""
    index, src = _graph(2)
    src.requires_grad_(True)

    def forbidden(*args):
        raise AssertionError("the custom op was called in eager mode")

    monkeypatch.setattr(isr_module, "index_scatter_reduce_op", forbidden)
    out = scatterx.index_scatter_reduce(0, index, src, "amax", sorted=False, dim_size=9)
    out.sum().backward()
    assert src.grad is not None and src.grad.shape == src.shape
