"""The Triton backend (``kernels/gpu``, ``ops/gpu.py``) against the reference and against the CPU backend.

On a machine with a GPU the kernels run on CUDA tensors. Without one (CI), conftest sets ``TRITON_INTERPRET=1``
and the same kernels run on CPU tensors through Triton's interpreter: ``triton_backend()`` then forces the ops onto
the Triton path for CPU tensors. The interpreter runs each program in Python, so shapes stay small here.
"""

import contextlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx
from scatterx import reference
from scatterx.kernels.gpu import available, interpreting
from conftest import assert_matches
from strategies import REDUCES, random_values, scatter_problems

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")

ON_GPU = torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"
EXAMPLES = 6  # per parametrized case: the interpreter runs ~5 ms per program

if available():
    from scatterx.ops import gpu


@contextlib.contextmanager
def triton_backend():
    """Run the ops on the Triton kernels: CUDA tensors on a GPU, else CPU tensors through the interpreter."""
    if ON_GPU:
        yield
        torch.cuda.synchronize()
    else:
        assert interpreting(), "conftest sets TRITON_INTERPRET=1 on machines without a GPU"
        with gpu.use_triton_on_cpu():
            yield


def on_device(p):
    return {k: (v.to(DEVICE) if isinstance(v, torch.Tensor) else v) for k, v in p.items()}


def run_triton(p):
    q = on_device(p)
    out = q["out"]
    with triton_backend():
        got = scatterx.index_scatter_reduce(
            q["dim"], q["index"], q["src"], q["reduce"], q["sorted"], dim_size=q["dim_size"],
            out=None if out is None else out.clone(), include_self=q["include_self"],
        )
    return got.cpu()


def run_cpu(p):
    out = p["out"]
    return scatterx.index_scatter_reduce(
        p["dim"], p["index"], p["src"], p["reduce"], p["sorted"], dim_size=p["dim_size"],
        out=None if out is None else out.clone(), include_self=p["include_self"],
    )


def run_reference(p):
    return reference.index_scatter_reduce(
        p["dim"], p["index"], p["src"], p["reduce"], dim_size=p["dim_size"], out=p["out"],
        include_self=p["include_self"],
    )


# The GPU paths: sorted (segment kernel), and the two unsorted strategies of sum/mean (atomics, stable sort +
# segment kernel); prod/amax/amin always sort when unsorted.
PATHS = ["sorted", "unsorted-atomic", "unsorted-sort"]


@pytest.fixture
def path(request, monkeypatch):
    name = request.param
    if name.startswith("unsorted-"):
        monkeypatch.setattr(gpu, "UNSORTED_STRATEGY", name.split("-")[1])
    return name


# --------------------------------------------------------------------------------- the reduction table in Triton
def test_kernel_codes_follow_the_reduction_table():
    from scatterx._reductions import REDUCTIONS
    from scatterx.kernels.gpu import _codegen

    for red in REDUCTIONS:
        assert getattr(_codegen, red.name.upper()).value == red.code


@pytest.mark.parametrize(
    "reduce, sorted, expected",
    [
        ("sum", True, "segments"), ("amax", True, "segments"), ("sum", False, "atomic"), ("mean", False, "atomic"),
        ("prod", False, "sort"), ("amax", False, "sort"), ("amin", False, "sort"),
    ],
)
def test_strategy_per_reduction_and_order(reduce, sorted, expected):
    assert gpu.strategy(scatterx.ops.library.resolve(reduce), sorted) == expected


def test_deterministic_algorithms_make_unsorted_sum_sort():
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert gpu.strategy(scatterx.ops.library.resolve("sum"), False) == "sort"
    finally:
        torch.use_deterministic_algorithms(before)


# --------------------------------------------------------------------------- random problems: reference and CPU
@pytest.mark.parametrize("path", PATHS, indirect=True)
@pytest.mark.parametrize("dtype", scatterx.SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_matches_reference_and_cpu_backend(reduce, dtype, path, data):
    p = data.draw(scatter_problems(dtype=dtype, reduce=reduce, sorted=path == "sorted"))
    got = run_triton(p)
    assert_matches(got, run_reference(p), reduce)
    assert_matches(got, run_cpu(p), reduce)


@pytest.mark.parametrize("path", PATHS, indirect=True)
@settings(max_examples=4 * EXAMPLES)
@given(p=scatter_problems())
def test_matches_reference_any_combination(path, p):
    if path != "sorted":
        p = dict(p, sorted=False)
    assert_matches(run_triton(p), run_reference(p), p["reduce"])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("reduce", REDUCES)
def test_every_dim_of_a_3d_tensor(dim, reduce):
    g = torch.Generator().manual_seed(dim + 7)
    src = random_values((3, 5, 4), torch.float32, g, reduce)
    index = torch.randint(0, 3, (src.size(dim),), generator=g)
    p = dict(dim=dim, index=index, src=src, reduce=reduce, sorted=False, dim_size=3, out=None, include_self=True)
    assert_matches(run_triton(p), run_reference(p), reduce)


def test_long_segments_and_wide_rows_cover_several_tiles():
    """Segments longer than a program's rows tile and rows wider than its feature block (128)."""
    g = torch.Generator().manual_seed(3)
    src = random_values((150, 130), torch.float32, g, "sum")
    index = torch.tensor([0] * 100 + [2] * 50)
    for reduce in ("sum", "amax"):
        for sorted in (True, False):
            p = dict(dim=0, index=index, src=src, reduce=reduce, sorted=sorted, dim_size=3, out=None,
                     include_self=True)
            assert_matches(run_triton(p), run_reference(p), reduce)


# ------------------------------------------------------------------------------------------- hand-written cases
def triton_call(*args, **kwargs):
    args = [a.to(DEVICE) if isinstance(a, torch.Tensor) else a for a in args]
    kwargs = {k: (v.to(DEVICE) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    with triton_backend():
        return scatterx.index_scatter_reduce(*args, **kwargs)


@pytest.mark.parametrize("sorted", [True, False])
def test_hand_written_every_reduction(sorted):
    index = torch.tensor([0, 0, 2, 2, 2]) if sorted else torch.tensor([2, 0, 2, 0, 2])
    src = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]) if sorted else torch.tensor([3.0, 1.0, 4.0, 2.0, 5.0])
    expected = {
        "sum": [3.0, 0.0, 12.0], "mean": [1.5, 0.0, 4.0], "prod": [2.0, 0.0, 60.0],
        "amax": [2.0, 0.0, 5.0], "amin": [1.0, 0.0, 3.0],
    }
    for reduce, values in expected.items():
        got = triton_call(0, index, src, reduce, sorted, dim_size=3).cpu()
        assert got.tolist() == values, reduce


def test_hand_written_out_with_and_without_self():
    out = torch.tensor([10.0, 20.0, 30.0])
    index, src = torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0])
    assert triton_call(0, index, src, "sum", out=out.clone()).cpu().tolist() == [13.0, 20.0, 33.0]
    assert triton_call(0, index, src, "mean", out=out.clone()).cpu().tolist() == torch.tensor([13.0 / 3, 20.0, 16.5]).tolist()
    assert triton_call(0, index, src, "amax", out=out.clone(), include_self=False).cpu().tolist() == [2.0, 20.0, 3.0]
    assert triton_call(0, index, src, "sum", False, out=out.clone(), include_self=False).cpu().tolist() == [
        3.0, 20.0, 3.0,
    ]


def test_integer_mean_rounds_down_like_torch():
    got = triton_call(0, torch.tensor([0, 0, 1, 1]), torch.tensor([-3, 0, 3, 4]), "mean", dim_size=2).cpu()
    assert got.tolist() == [-2, 3]


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("sorted", [True, False])
def test_amax_amin_propagate_nan(reduce, sorted):
    """A NaN anywhere in a segment (first, inside a rows tile, last; short and long segments) makes it NaN."""
    nan = float("nan")
    for length in (2, 5, 40):
        for at in sorted_positions(length):
            src = torch.arange(length + 2, dtype=torch.float32)
            src[at] = nan
            index = torch.tensor([0] * length + [1, 1])
            got = triton_call(0, index, src, reduce, sorted, dim_size=2).cpu()
            assert got[0].isnan(), (length, at)
            assert got[1] == (length + 1 if reduce == "amax" else length)


def sorted_positions(length):
    return sorted({0, 1, length // 2, length - 1})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_accumulates_in_float32(dtype):
    # 4096 ones: a half accumulator would stop at 2048 (float16) or 256 (bfloat16)
    src = torch.ones(4096, 1, dtype=dtype)
    for sorted in (True, False):
        got = triton_call(0, torch.zeros(4096, dtype=torch.long), src, "sum", sorted, dim_size=1).cpu()
        assert got.item() == 4096


def test_empty_index_and_empty_src():
    src = torch.randn(0, 3)
    assert triton_call(0, torch.zeros(0, dtype=torch.long), src, "sum", dim_size=2).cpu().tolist() == [[0.0] * 3] * 2
    out = torch.randn(2, 3)
    assert torch.equal(triton_call(0, torch.zeros(0, dtype=torch.long), src, "amax", out=out.clone()).cpu(), out)
    assert triton_call(0, torch.zeros(0, dtype=torch.long), src, "sum").shape == (0, 3)


def test_segment_reduce_matches_reference():
    g = torch.Generator().manual_seed(5)
    src = random_values((2, 9, 3), torch.float32, g, "sum")
    ptr = torch.tensor([0, 2, 2, 7, 9])
    for reduce in REDUCES:
        with triton_backend():
            got = scatterx.segment_reduce(src.to(DEVICE), ptr.to(DEVICE), reduce, dim=1).cpu()
        assert_matches(got, reference.segment_reduce(src, ptr, reduce, dim=1), reduce)


# ------------------------------------------------------------------------------------------------- determinism
def test_deterministic_unsorted_sum_equals_sorted_path_on_stably_sorted_input(monkeypatch):
    monkeypatch.setattr(gpu, "UNSORTED_STRATEGY", "sort")
    g = torch.Generator().manual_seed(11)
    src = torch.randn(40, 3, generator=g)
    index = torch.randint(0, 6, (40,), generator=g)
    order = torch.sort(index, stable=True).indices
    unsorted = triton_call(0, index, src, "sum", False, dim_size=6)
    sorted_ = triton_call(0, index[order], src[order], "sum", True, dim_size=6)
    assert torch.equal(unsorted, sorted_)


# ---------------------------------------------------------------------------------------------------- gradients
def _grads(backend_triton: bool, reduce, sorted, with_out, include_self):
    g = torch.Generator().manual_seed(2)
    src = torch.randint(-2, 3, (12, 3), generator=g).double()  # small integers: ties and zeros
    index = torch.randint(0, 4, (10,), generator=g)
    if sorted:
        index = index.sort().values
    base = torch.randint(-2, 3, (5, 3), generator=g).double() if with_out else None
    weights = torch.randn(5, 3, generator=g, dtype=torch.float64)
    device = DEVICE if backend_triton else "cpu"
    s = src.to(device).requires_grad_()
    b = None if base is None else base.to(device).requires_grad_()
    ctx = triton_backend() if backend_triton else contextlib.nullcontext()
    with ctx:
        out = scatterx.index_scatter_reduce(
            0, index.to(device), s, reduce, sorted, dim_size=5, out=None if b is None else b.clone(),
            include_self=include_self,
        )
        (out * weights.to(device)).sum().backward()
    return [t.detach().cpu() for t in (out, s.grad, *(() if b is None else (b.grad,)))]


@pytest.mark.parametrize("with_out, include_self", [(False, True), (True, True), (True, False)],
                         ids=["no-out", "out-self", "out-noself"])
@pytest.mark.parametrize("sorted", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradients_match_the_cpu_backend(reduce, sorted, with_out, include_self):
    """Planted ties and zeros: amax/amin split among ties, prod with one and with several zeros."""
    for got, want in zip(_grads(True, reduce, sorted, with_out, include_self),
                         _grads(False, reduce, sorted, with_out, include_self)):
        torch.testing.assert_close(got, want)


def test_segment_reduce_gradient_matches_the_cpu_backend():
    ptr = torch.tensor([0, 3, 3, 8])
    for reduce in ("mean", "amax", "prod"):
        grads = []
        for use_triton in (True, False):
            src = torch.tensor([[1.0], [3.0], [3.0], [0.0], [2.0], [2.0], [-1.0], [0.5]], dtype=torch.float64)
            device = DEVICE if use_triton else "cpu"
            s = src.to(device).requires_grad_()
            with triton_backend() if use_triton else contextlib.nullcontext():
                scatterx.segment_reduce(s, ptr.to(device), reduce).sum().backward()
            grads.append(s.grad.cpu())
        torch.testing.assert_close(*grads)


# ---------------------------------------------------------------------------------------------------- bad input
def test_bad_index_without_dim_size_raises_before_anything_runs():
    """Without dim_size the index is read on the host anyway: a Python exception, out untouched."""
    src = torch.randn(3, 2)
    with pytest.raises(IndexError, match=r"index\[1\]=-1 is negative"):
        triton_call(0, torch.tensor([0, -1, 2]), src, "sum", False)
    with pytest.raises(ValueError, match="not sorted"):
        triton_call(0, torch.tensor([2, 1, 2]), src, "sum", True)


@pytest.mark.skipif(ON_GPU, reason="on CUDA the check is a device-side assert, which ends the process's CUDA context")
@pytest.mark.parametrize("index", [[0, 5, 1], [0, -1, 1], [2, 1, 0]], ids=["too-large", "negative", "unsorted"])
def test_bad_index_with_dim_size_is_checked_on_the_device_and_out_is_untouched(index):
    src = torch.randn(3, 2)
    out = torch.randn(3, 2)
    before = out.clone()
    with pytest.raises(RuntimeError, match="index"):
        triton_call(0, torch.tensor(index), src, "sum", True, out=out)
    assert torch.equal(out, before)
    with pytest.raises(RuntimeError, match="index"):
        triton_call(0, torch.tensor(index), src, "sum", True, dim_size=3)


def test_atomic_kernel_skips_targets_out_of_range():
    """The kernels stay inside their buffers whatever the index holds (the device-side check runs separately)."""
    acc = torch.zeros(6, 2)
    counts = torch.zeros(6, dtype=torch.int32)
    src = torch.ones(4, 2)
    index = torch.tensor([0, 3, -1, 1])  # 3 is out of range for the first 3 rows of acc
    from scatterx.kernels.gpu import scatter

    acc, counts = acc.to(DEVICE), counts.to(DEVICE)
    with triton_backend():
        scatter.atomic_scatter_kernel[(1,)](
            src.to(DEVICE), index.to(DEVICE), acc, counts, 4, 4, 3, 2, COUNT=True, BLOCK_E=4, BLOCK_F=2
        )
    assert acc.cpu().tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    assert counts.cpu().tolist() == [1, 1, 0, 0, 0, 0]


# ------------------------------------------------------------------------------------------- torch.compile (GPU)
@pytest.mark.skipif(not ON_GPU, reason="torch.compile traces Triton kernels on CUDA only")
def test_ops_pass_opcheck_on_cuda():
    src = torch.randn(7, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 3, 3, 3, 4], device="cuda")
    for reduce in REDUCES:
        torch.library.opcheck(
            torch.ops.scatterx.index_scatter_reduce.default, (src, index, 0, reduce, True, 5, None, False)
        )


@pytest.mark.skipif(not ON_GPU, reason="torch.compile traces Triton kernels on CUDA only")
def test_compiled_message_passing_step_on_cuda():
    x = torch.randn(5, 8, device="cuda", requires_grad=True)
    edge_src = torch.tensor([0, 1, 2, 3, 4, 0], device="cuda")
    edge_dst = torch.tensor([0, 0, 1, 2, 2, 4], device="cuda")

    def step(x):
        return scatterx.index_scatter_reduce(0, edge_dst, x[edge_src], "mean", True, dim_size=5).relu().sum()

    compiled = torch.compile(step, fullgraph=True)
    torch.testing.assert_close(compiled(x), step(x))


# ----------------------------------------------------------------------------------- frontends and the benchmark
@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_frontends_run_on_the_triton_kernels(reduce):
    """The planner's slice plans (PyG's expanded index) and element plans (a general index) on the Triton path."""
    g = torch.Generator().manual_seed(9)
    src = torch.randn(8, 3, generator=g)
    expanded = torch.randint(0, 4, (8,), generator=g).view(-1, 1).expand(8, 3)
    general = torch.randint(0, 4, (8, 3), generator=g)
    data = torch.randn(4, 3, generator=g)
    for index in (expanded, general):
        want = scatterx.scatter_reduce(data, 0, index, src, reduce, include_self=False)
        with triton_backend():
            got = scatterx.scatter_reduce(data.to(DEVICE), 0, index.to(DEVICE), src.to(DEVICE), reduce,
                                          include_self=False).cpu()
        assert_matches(got, want, reduce)


@pytest.mark.skipif(ON_GPU, reason="on a GPU, run `scatterx bench --device cuda` itself")
def test_bench_cuda_path_checks_every_case_on_the_triton_kernels():
    """The benchmark's device path (peers on the graph's device, correctness checks, GPU goals), run on CPU
    tensors through the interpreter: every scatterx row is checked against torch before it is timed."""
    from scatterx.bench import harness, report

    config = harness.Config(edges=120, nodes=16, features=32, repeat=1, warmup=0, latency=False, peers=True)
    with triton_backend():
        result = harness.run(config)
    cases = {(r.reduce, r.order, r.mode) for r in result.rows if r.implementation == harness.SCATTERX.name}
    assert len(cases) == 2 * len(harness.REDUCTIONS) + 2 * 3  # forward: all; forward+backward: sum, mean, amax
    result.config.device = "cuda"
    text = report.table(result)
    assert "goals of issue #5" in text and "sorted sum: bandwidth / probe bandwidth" in text
