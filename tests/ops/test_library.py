"""``ops/_library.py``: the eager autograd twin of each differentiable op computes the op's own values and
gradients (one formula drives both), and the public functions take it in eager mode; the GPU body of each op runs
under torch's tracers, and launches without the tracing wrapper in eager mode."""

import importlib

import pytest
import torch
from conftest import _backend

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


# ------------------------------------------------------------------------- the GPU body under torch's tracers
def test_an_index_of_a_tracer_passes_as_it_is():
    """``plain_index`` unwraps PyG's subclasses, never a tracer's tensors: a ``FunctionalTensor`` or ``FakeTensor``
    refuses ``as_subclass`` outside its mode, and AOTAutograd runs the op's body with them after Dynamo is done."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode

    from scatterx.ops._checks import plain_index

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.tensor([0, 1]))
        assert plain_index(fake) is fake
    with FunctionalTensorMode():
        functional = FunctionalTensor.to_functional(torch.tensor([0, 1]))
        assert plain_index(functional) is functional


GPU_CASES = [c for c in CASES if c[0].endswith(("sum-new", "amax-base", "mean")) or "softmax" in c[0]]


@pytest.mark.parametrize("name, module, op, args", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_the_gpu_body_traces_with_fake_and_functional_tensors(name, module, op, args):
    """What ``torch.compile`` does to a ``triton_op`` on CUDA -- its body run on FakeTensors, then on
    FunctionalTensors by AOTAutograd -- here on the GPU backend of this machine (its kernels are Triton's
    interpreter's, which no tracer records: this holds the Python around them, not the graph's values)."""
    from torch._functorch.aot_autograd import aot_export_module
    from torch._subclasses.functional_tensor import FunctionalTensor

    gpu = _backend("gpu")
    custom_op = getattr(module, f"{op}_op")
    seen = []

    class Body(torch.nn.Module):
        def forward(self, *a):
            out = custom_op(*a)
            seen.append(type(out))
            return (out,)

    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    class Tensors(torch.nn.Module):  # aot_export_module takes tensors only: the rest are constants
        def forward(self, *t):
            full = list(args)
            for i, value in zip(tensors, t):
                full[i] = value
            return Body()(*full)

    with gpu:
        torch.library.opcheck(custom_op, args, test_utils=("test_faketensor",))
        graph, _ = aot_export_module(Tensors(), [args[i] for i in tensors], trace_joint=False)
    assert FunctionalTensor in seen and len(graph.graph.nodes) > len(tensors)


def test_an_eager_launch_takes_no_tracing_wrapper():
    """In eager mode the GPU backend launches its kernels itself: ``wrap_triton``'s higher-order op is for tracers
    only (its dispatch costs tens of microseconds a launch). A stand-in kernel that ``wrap_triton`` would refuse
    (it takes ``triton.jit`` functions only) is launched as it is on plain tensors, and a traced launch of it
    does go through ``wrap_triton``."""
    pytest.importorskip("triton")
    from scatterx.backends.gpu import _launch

    launched = []

    class StandIn:
        __name__ = "stand_in"

        def __getitem__(self, grid):
            return lambda *args, **constexprs: launched.append((grid, args, constexprs))

    x = torch.zeros(4)
    with _launch.recording():  # the stand-in is no variant of the backend's: kept out of the suite's record
        _launch.launch(StandIn(), (1,), {"x": x, "n": 4}, BLOCK=8)
    assert len(launched) == 1 and launched[0][0] == (1,) and launched[0][1][0] is x
    try:
        _launch.wrap_triton(StandIn())
    except RuntimeError:  # a torch whose wrap_triton checks what it wraps (>= 2.6): a traced launch reaches it
        from torch._subclasses.fake_tensor import FakeTensorMode

        with _launch.recording(), FakeTensorMode() as mode, pytest.raises(RuntimeError, match="wrap_triton"):
            _launch.launch(StandIn(), (1,), {"x": mode.from_tensor(x), "n": 4}, BLOCK=8)
        assert len(launched) == 1


def test_a_traced_size_stays_symbolic_across_sizes():
    """``dynamic=True`` with ``dim_size=src.size(0)`` (as the export guide recommends) or with no size at all (read
    from the index): one graph for every size, none specialised on its first one -- formatting a traced size into
    an error message, even one never raised, would install a guard on its value."""
    from torch._dynamo.utils import counters

    import scatterx.torch_scatter as ts

    calls = {
        "dim_size": lambda s, i: scatterx.index_scatter_reduce(0, i, s, "sum", False, dim_size=s.size(0)),
        "drop-in dim_size": lambda s, i: ts.scatter_max(s, i, 0, dim_size=s.size(0))[0],
        "softmax, no size": scatterx.segment_softmax,
    }
    for name, fn in calls.items():
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(fn, dynamic=True, fullgraph=True, backend="aot_eager")
        for n in (17, 33, 50):
            g = torch.Generator().manual_seed(n)
            src, index = torch.randn(n, 4, generator=g), torch.randint(0, n, (n,), generator=g)
            torch.testing.assert_close(compiled(src, index), fn(src, index))
        assert counters["stats"]["unique_graphs"] == 1, name
