"""scatterx.export: every op exported to ONNX (opset 18) and run in onnxruntime against scatterx's eager result --
each reduction, dim (negative too) and dtype, repeated indices and empty rows/segments; PyG models with the switch
on; a dynamic-shape export run at two sizes; mutants of the translations must fail these comparisons. And
torch.export / AOTInductor of a small GNN."""

import pytest
import torch

import scatterx

onnxscript = pytest.importorskip("onnxscript", reason="onnxscript is not installed: scatterx.export needs it")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: nothing to run the export in")

from scatterx.export import onnx_translation_table, to_onnx  # noqa: E402
from scatterx.export.onnx_ops import _graph  # noqa: E402

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin"]
nan, inf = float("nan"), float("inf")
DTYPES = [torch.float32, torch.float64, torch.int64]
TOLERANCE = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (1e-2, 1e-2),
    torch.int64: (0, 0),
}


class Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def optimized(dtype):
    """Whether a grid's export runs onnxscript's optimizer, as users' exports do: on the grid's float32 case only.
    The optimizer is most of an export's time (its pattern rewriter, ~60%); the translations' arithmetic is checked
    on every dtype, and what the optimizer makes of each op on one."""
    return dtype == torch.float32


def run_onnx(model, inputs, path, **kw):
    """Export ``model`` on ``inputs`` with scatterx's table, run it in onnxruntime: the list of outputs."""
    to_onnx(model, tuple(inputs), path, **kw)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(inputs)
    return [torch.from_numpy(o) for o in session.run(None, {n: x.numpy() for n, x in zip(names, inputs)})]


def assert_outputs(got, want):
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        atol, rtol = TOLERANCE.get(w.dtype, (1e-5, 1e-5))
        torch.testing.assert_close(g.to(w.dtype), w.detach(), atol=atol, rtol=rtol)


def values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def repeated_index(n, rows, seed):
    """``n`` entries into ``rows`` targets, repeated, the last two targets never named (empty rows)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, max(rows - 2, 1), (n,), generator=g)


# ------------------------------------------------------------------------------------------------ the core op
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_scatter_reduce_every_reduction(dtype, tmp_path):
    """Every reduction along dims 0, 1 and -1 (an index per dim); optimised, a graph per dim (the optimizer's time
    grows faster than a graph's nodes), else one graph of the three."""
    src = values((6, 5, 4), dtype, 0)
    indices = [repeated_index(src.size(dim), 7, 1) for dim in (0, 1, -1)]
    groups = [((0,), 0), ((1,), 1), ((-1,), 2)] if optimized(dtype) else [((0, 1, -1), None)]
    for dims, only in groups:
        inputs = [src] + (indices if only is None else [indices[only]])

        def every(src, *index, dims=dims):
            return tuple(
                scatterx.index_scatter_reduce(dim, i, src, r, False, dim_size=7)
                for dim, i in zip(dims, index)
                for r in REDUCTIONS
            )

        path = tmp_path / f"m{dims[0]}.onnx"
        assert_outputs(run_onnx(Wrap(every), inputs, path, optimize=optimized(dtype)), every(*inputs))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_index_scatter_reduce_into_out(include_self, dtype, tmp_path):
    """``out=`` (a base): with include_self the reduction starts from it (mean counts it), without it rows that
    receive nothing keep it."""
    src = values((6, 3), dtype, 2)
    index = repeated_index(6, 5, 3)
    base = values((5, 3), dtype, 4)

    def into_out(src, index, base):
        return tuple(
            scatterx.index_scatter_reduce(0, index, src, r, False, out=base.clone(), include_self=include_self)
            for r in REDUCTIONS
        )

    path = tmp_path / "m.onnx"
    got = run_onnx(Wrap(into_out), [src, index, base], path, optimize=optimized(dtype))
    assert_outputs(got, into_out(src, index, base))


def test_wide_rows_with_repeated_targets_are_exact_and_deterministic(tmp_path):
    """Wide rows into few targets: where onnxruntime's ScatterND, split over threads, races on repeated indices
    (the reason the translations use ScatterElements), every run must equal the eager result."""
    src = values((3000, 256), torch.float32, 20)
    index = repeated_index(3000, 300, 21)

    def both(src, index):
        return (
            scatterx.index_scatter_reduce(0, index, src, "sum", False, dim_size=300),
            scatterx.index_scatter_reduce(0, index, src, "amax", False, dim_size=300),
        )

    path = tmp_path / "m.onnx"
    to_onnx(Wrap(both), (src, index), path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), (src, index))}
    want = both(src, index)
    for _ in range(3):
        assert_outputs([torch.from_numpy(o) for o in session.run(None, feeds)], want)


def test_float16(tmp_path):
    """onnxruntime's ScatterND reduces no float16: the translation reduces in float32 and rounds once, as the eager
    kernels do."""
    src = values((6, 3), torch.float16, 5)
    index = repeated_index(6, 5, 6)

    def every(src, index):
        return tuple(scatterx.index_scatter_reduce(0, index, src, r, False, dim_size=5) for r in REDUCTIONS)

    assert_outputs(run_onnx(Wrap(every), [src, index], tmp_path / "m.onnx"), every(src, index))


@pytest.mark.parametrize("sorted", [True, False])
def test_runs_of_every_length_sorted_and_shuffled(sorted, tmp_path):
    """Runs of 1 to 17 entries (odd ones, and 2**k + 1 that need one more level of the tree) and empty targets,
    the index sorted (the graph takes it as it is) or shuffled (the graph sorts it): every reduction, exactly."""
    lengths = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17]
    index = torch.repeat_interleave(torch.arange(0, 2 * len(lengths), 2), torch.tensor(lengths))
    if not sorted:
        index = index[torch.randperm(index.numel(), generator=torch.Generator().manual_seed(3))]
    src = values((index.numel(), 3), torch.float64, 22)
    size = 2 * len(lengths) + 1

    def every(src, index):
        return tuple(scatterx.index_scatter_reduce(0, index, src, r, sorted, dim_size=size) for r in REDUCTIONS)

    assert_outputs(run_onnx(Wrap(every), [src, index], tmp_path / "m.onnx"), every(src, index))


def test_torch_scatter_add_of_broadcast_rows(tmp_path):
    """torch's own ``scatter_add`` with a row index broadcast over the rows (PyG's aggregation) takes the row
    reduction (no ScatterElements in the graph); with any other index, ScatterElements as torch translates it."""
    import onnx

    src = values((30, 4), torch.float32, 23)
    index = repeated_index(30, 9, 24)
    elements = torch.randint(0, 9, (30, 4), generator=torch.Generator().manual_seed(25))

    def rows(src, index):
        return torch.ones(9, 4).scatter_add(0, index.view(-1, 1).expand_as(src), src)

    def per_element(src, elements):
        return torch.zeros(9, 4).scatter_add(0, elements, src)

    for fn, inputs in ((rows, [src, index]), (per_element, [src, elements])):
        path = tmp_path / f"{fn.__name__}.onnx"
        assert_outputs(run_onnx(Wrap(fn), inputs, path), fn(*inputs))
        op_types = {node.op_type for node in onnx.load(str(path)).graph.node}
        assert ("ScatterElements" in op_types) == (fn is per_element), op_types


# --------------------------------------------------------------------------------------------- the segment ops
PTR = torch.tensor([0, 2, 2, 5, 5, 7])  # empty segments 1 and 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_segment_and_gather_segment_reduce(dtype, tmp_path):
    src = values((7, 3), dtype, 7)
    wide = values((3, 7), dtype, 8)
    gather = repeated_index(7, 7, 9)

    # optimised, a graph per reduction (onnxscript's optimizer takes time superlinear in a graph's nodes -- the five
    # in one graph took 31-41 s a dtype, these five 17-22 s); without the optimizer, one graph of the five
    groups = [(r,) for r in REDUCTIONS] if optimized(dtype) else [tuple(REDUCTIONS)]
    for group in groups:

        def three(src, wide, ptr, gather, group=group):
            return tuple(
                out
                for r in group
                for out in (
                    scatterx.segment_reduce(src, ptr, r),
                    scatterx.segment_reduce(wide, ptr, r, dim=-1),
                    scatterx.gather_segment_reduce(src, ptr, gather, r),
                )
            )

        inputs = [src, wide, PTR, gather]
        path = tmp_path / f"{group[0]}.onnx"
        assert_outputs(run_onnx(Wrap(three), inputs, path, optimize=optimized(dtype)), three(*inputs))


def test_message_passing_ops(tmp_path):
    """weighted gather_segment_reduce (per edge, per head), sddmm (add, mul, dot), gatv2_logits, segment_softmax by
    index and by ptr (dim -1 too), csr_order and csr_transpose, ptr_to_index and index_to_ptr."""
    x = values((6, 2, 3), torch.float32, 10)
    y = values((5, 2, 3), torch.float32, 11)
    index = repeated_index(7, 8, 12)  # sources 0..5
    w_edge, w_head = values((7,), torch.float32, 13), values((7, 2), torch.float32, 14)
    att = values((2, 3), torch.float32, 15)
    logits = values((7, 2), torch.float32, 16)

    def every(x, y, ptr, index, w_edge, w_head, att, logits):
        outs = [scatterx.gather_segment_reduce(x, ptr, index, r, weight=w_head) for r in ("sum", "mean", "amax")]
        outs.append(scatterx.gather_segment_reduce(x.flatten(1), ptr, index, "mean", weight=w_edge))
        outs += [scatterx.sddmm(ptr, index, x, y, o) for o in ("add", "mul", "dot")]
        outs.append(scatterx.gatv2_logits(ptr, index, x, y, att, 0.3))
        outs.append(scatterx.segment_softmax(logits, ptr=ptr))
        outs.append(scatterx.segment_softmax(logits, index, num_segments=8))
        outs.append(scatterx.segment_softmax(logits.t(), index, dim=-1, num_segments=8))
        outs += list(scatterx.csr_transpose(ptr, index, 6))
        outs += [scatterx.ptr_to_index(ptr), scatterx.index_to_ptr(index.sort().values, 9)]
        return tuple(outs)

    inputs = [x, y, PTR, index, w_edge, w_head, att, logits]
    assert_outputs(run_onnx(Wrap(every), inputs, tmp_path / "m.onnx"), every(*inputs))


def test_the_frameworks_frontends_export(tmp_path):
    """The planner's slice and element scatters and gathers, through the PyTorch, ONNX, TensorFlow and Paddle
    frontends (traced, they read no index value: the element plan and the ops' own range checks)."""
    data, src = values((4, 5), torch.float32, 30), values((3, 5), torch.float32, 31)
    index = torch.randint(0, 4, (3, 5), generator=torch.Generator().manual_seed(32))
    columns = torch.tensor([[0, 4], [-1, 2], [3, 3], [-5, 1]])
    coords = torch.tensor([[0, 1], [2, 3]])
    segment_ids = torch.tensor([0, -1, 2, 2])

    def every(data, src, index, columns, coords, segment_ids):
        return (
            scatterx.scatter_reduce(data, 0, index, src, "mean"),
            scatterx.scatter(data, 0, index, src),  # assign: the last write wins
            scatterx.gather(data, 1, columns.clamp(min=0)),
            scatterx.onnx.scatter_elements(data, index, src, axis=0, reduction="mul"),
            scatterx.onnx.gather_elements(data, columns, axis=1),
            scatterx.onnx.scatter_nd(data, coords, src[0, :2], reduction="max"),
            scatterx.onnx.gather_nd(data, coords),
            scatterx.tf.tensor_scatter_nd_add(data, coords, src[1, :2]),
            scatterx.tf.unsorted_segment_mean(data, segment_ids, 6),
            scatterx.paddle.scatter(data, torch.tensor([0, 2]), src[:2]),
        )

    inputs = [data, src, index, columns, coords, segment_ids]
    assert_outputs(run_onnx(Wrap(every), inputs, tmp_path / "m.onnx"), every(*inputs))


def test_the_table_covers_every_op():
    table = onnx_translation_table()
    ops = {
        n
        for n in dir(torch.ops.scatterx)
        if isinstance(getattr(torch.ops.scatterx, n), torch._ops.OpOverloadPacket) and not n.endswith("_cpu")
    }
    # the ops a forward graph holds; gradients' own ops are not exported
    forward_ops = {n for n in ops if not n.endswith(("_grad", "_backward"))}
    assert {"index_scatter_reduce", "gatv2_logits", "segment_softmax"} <= forward_ops
    covered = {op.name().split("::")[1] for op in table}
    assert forward_ops - covered == set(), f"no ONNX translation for {sorted(forward_ops - covered)}"


def test_start_values_in_the_op_s_own_type(tmp_path):
    """The finite starts of the arg-reductions and the log-softmax's lowest value are the op's dtype's, exactly:
    int64's largest (2^63 - 1, not a float rounded past it), float64's (not a float32 inf), float16's (not float32's,
    which the half type's float32 arithmetic would otherwise take); and float64's eps is a float64."""
    from scatterx.ops import segment_arg_reduce, segment_logsumexp

    def every(i64, f64, f16, ptr):
        return (
            *segment_arg_reduce(i64, ptr, "amin", finite_start=True),
            *segment_arg_reduce(f64, ptr, "amax", finite_start=True, fill="none"),
            *segment_arg_reduce(f16, ptr, "amax", finite_start=True),
            segment_logsumexp(f16, ptr, flavour="log_softmax"),
            segment_logsumexp(f64, ptr, flavour="log_softmax"),
        )

    ptr = torch.tensor([0, 2, 3, 3])  # the last segment empty
    inputs = (
        torch.tensor([5, 1, 3]),
        torch.tensor([-inf, -inf, 2.0], dtype=torch.float64),  # nothing beats the start in segment 0
        torch.tensor([-65504.0, -inf, 1.0], dtype=torch.float16),  # float16's lowest does not beat its own start
        ptr,
    )
    got = run_onnx(Wrap(every), inputs, tmp_path / "m.onnx", optimize=False)
    for g, w in zip(got, every(*inputs)):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)


def test_torch_scatter_add_into_wider_rows_and_a_broadcast_single_target(tmp_path):
    """torch's ``scatter_add`` with a row index broadcast over ``src`` where the rows of ``self`` are wider than
    ``src``'s (torch adds into their leading part), and where one ``(1, 1)`` target is broadcast down every row."""

    def both(src, index, one):
        wide = torch.zeros(4, 3).scatter_add(0, index.view(-1, 1).expand_as(src), src)
        single = torch.zeros(3, 2).scatter_add(0, one.view(1, 1).expand_as(src), src)
        return wide, single

    inputs = (torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), torch.tensor([0, 2, 2]), torch.tensor([1]))
    assert_outputs(run_onnx(Wrap(both), inputs, tmp_path / "m.onnx", optimize=False), both(*inputs))


# ------------------------------------------------------------------------------------------------ mutants
class _Mutant:
    """onnxscript's opset with some operators replaced."""

    def __init__(self, real, **replaced):
        self._real, self._replaced = real, replaced

    def __getattr__(self, name):
        return self._replaced.get(name) or getattr(self._real, name)


MUTANTS = ["unpaired rows doubled", "one level short", "empty rows not zero", "amax combines by Add"]


@pytest.mark.parametrize("mutant", MUTANTS)
def test_mutants_of_the_translation_fail(mutant, tmp_path, monkeypatch):
    """One piece of the row reduction replaced (``onnx_ops/_graph.py``'s helpers): eager's result must differ."""
    reduce = "sum" if mutant == "unpaired rows doubled" else "amax"
    if mutant == "unpaired rows doubled":  # a run's odd row out stays combined with itself
        monkeypatch.setattr(_graph, "_write_back_unpaired", lambda combined, *_: combined)
    elif mutant == "one level short":  # the longest run is not finished: its target stays empty
        real_levels = _graph._levels
        monkeypatch.setattr(_graph, "_levels", lambda entries: real_levels(entries) - 1)
    elif mutant == "empty rows not zero":
        real_scalar = _graph._scalar_like
        monkeypatch.setattr(_graph, "_scalar_like", lambda v, like: real_scalar(1.0 if v == 0.0 else v, like))
    else:
        monkeypatch.setitem(_graph._COMBINE, "amax", "Add")
    src = -torch.rand(24, 3) - 1  # negative values
    # odd runs, empty targets, and a run of 17 of the 24 entries: it needs the tree's last level
    index = torch.tensor([0] * 17 + [1] * 3 + [3] * 1 + [5] * 3)

    def fn(src, index):
        return scatterx.index_scatter_reduce(0, index, src, reduce, True, dim_size=7)

    with pytest.raises(AssertionError):  # (the optimizer is beside the point: the translation itself is wrong)
        assert_outputs(run_onnx(Wrap(fn), [src, index], tmp_path / "m.onnx", optimize=False), fn(src, index))


# ------------------------------------------------------------------------------------------ PyG models, dynamic
class TwoLayers(torch.nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x, edge_index):
        return self.second(self.first(x, edge_index).relu(), edge_index)


def _two_layers(name):
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

    mlp = torch.nn.Sequential(torch.nn.Linear(8, 5), torch.nn.ReLU(), torch.nn.Linear(5, 5))
    return {
        "gcn": lambda: TwoLayers(GCNConv(8, 5), GCNConv(5, 5)),
        "sage": lambda: TwoLayers(SAGEConv(8, 5), SAGEConv(5, 5)),
        "gin": lambda: TwoLayers(GINConv(mlp), GINConv(torch.nn.Linear(5, 5))),
        "gat": lambda: TwoLayers(GATConv(8, 5, heads=2), GATConv(10, 5, heads=1)),
    }[name]()


@pytest.mark.parametrize("name", ["gcn", "sage", "gin", "gat"])
def test_pyg_models_with_the_switch_on(name, tmp_path):
    pytest.importorskip("torch_geometric")
    import scatterx.pyg as sxpyg

    torch.manual_seed(0)
    model = _two_layers(name).eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(12, 8, generator=g)
    edge_index = torch.randint(0, 12, (2, 40), generator=g)
    want = model(x, edge_index)  # PyG's default path
    with sxpyg.enabled():
        got = run_onnx(model, [x, edge_index], tmp_path / "m.onnx")
    assert_outputs(got, want)


@pytest.mark.parametrize("name", ["sage", "gat"])
def test_pyg_layers_traced_onto_scatterx_ops(name, tmp_path):
    """Every call the switch can take on scatterx (its rule lowered to nothing): the exported graph holds its ops
    (SAGE: the edge list's ``adjacency_matmul``; GAT: the weighted reduction, ``csr_order``, the softmax)."""
    pytest.importorskip("torch_geometric")
    import scatterx.pyg as sxpyg
    from scatterx.pyg import pays

    torch.manual_seed(0)
    model = _two_layers(name).eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(12, 8, generator=g)
    edge_index = torch.randint(0, 12, (2, 40), generator=g)
    want = model(x, edge_index)  # PyG's default path
    with sxpyg.enabled(), pays.tuned(pays.ALWAYS):
        program = torch.export.export(model, (x, edge_index))
        got = run_onnx(program, [x, edge_index], tmp_path / "m.onnx")
    targets = {str(node.target) for node in program.graph.nodes if node.op == "call_function"}
    op = "adjacency_matmul" if name == "sage" else "weighted_gather_segment_reduce"
    assert f"scatterx.{op}.default" in targets
    assert_outputs(got, want)


def test_dynamic_numbers_of_nodes_and_edges(tmp_path):
    """One export with Dim for nodes and edges, run at two graph sizes."""
    from torch.export import Dim

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, source, target):
            mean = scatterx.index_scatter_reduce(
                0, target, x.index_select(0, source), "mean", False, dim_size=x.size(0)
            )
            return self.lin(mean) + x

    model = Sage().eval()
    nodes, edges = Dim("nodes", min=2), Dim("edges", min=2)
    x, source, target = torch.randn(10, 4), torch.randint(0, 10, (30,)), torch.randint(0, 10, (30,))
    path = tmp_path / "m.onnx"
    to_onnx(
        model, (x, source, target), path, dynamic_shapes={"x": {0: nodes}, "source": {0: edges}, "target": {0: edges}}
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for n, e in ((10, 30), (23, 71)):
        g = torch.Generator().manual_seed(n)
        x, source, target = (
            torch.randn(n, 4, generator=g),
            torch.randint(0, n, (e,), generator=g),
            torch.randint(0, n, (e,), generator=g),
        )
        names = [i.name for i in session.get_inputs()]
        assert names == ["x", "source", "target"]  # the model's inputs, in order
        (got,) = session.run(None, dict(zip(names, (x.numpy(), source.numpy(), target.numpy()))))
        torch.testing.assert_close(torch.from_numpy(got), model(x, source, target).detach(), atol=1e-5, rtol=1e-5)


def test_an_index_shorter_than_src_with_dynamic_lengths(tmp_path):
    """An index shorter than src's dim reads its first ``len(index)`` rows (the op's contract), also where the
    export leaves both lengths dynamic (the ScatterElements path): run at lengths equal, shorter by several rows,
    and of one entry, for a sum, a selection and a mean."""
    from torch.export import Dim

    class Every(torch.nn.Module):
        def forward(self, index, src):
            return tuple(scatterx.index_scatter_reduce(0, index, src, r, False, dim_size=4) for r in REDUCTIONS)

    index, src = torch.tensor([0, 2, 2]), values((5, 2), torch.float32, 40)
    path = tmp_path / "m.onnx"
    dynamic = ({0: Dim("entries", min=1, max=100)}, {0: Dim("rows", min=2, max=100)})
    to_onnx(Every(), (index, src), path, dynamic_shapes=dynamic, optimize=False)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for entries, rows in ((5, 5), (3, 7), (1, 5)):
        index, src = repeated_index(entries, 6, entries), values((rows, 2), torch.float32, rows)
        got = session.run(None, dict(zip(names, (index.numpy(), src.numpy()))))
        assert_outputs([torch.from_numpy(g) for g in got], Every()(index, src))
    # a NaN member before others of its target: amax/amin give NaN (onnxruntime's max scatter alone drops it)
    index, src = torch.tensor([0, 0, 2, 2, 2]), torch.tensor([[nan, 1.0], [1.0, 2.0], [3.0, nan], [4.0, 5.0], [nan, 0]])
    got = session.run(None, dict(zip(names, (index.numpy(), src.numpy()))))
    for g, w in zip(got, Every()(index, src)):
        torch.testing.assert_close(torch.from_numpy(g), w, equal_nan=True)


@pytest.mark.parametrize(
    "name",
    ["segment_softmax", "scatter_softmax", "scatter_max", "scatter_logsumexp", "scatter_log_softmax"],
)
def test_softmax_and_selections_of_float16(name, tmp_path):
    """The translations that reduce with ScatterElements (softmax, the arg-reductions, logsumexp) take half types
    in float32, as eagerly: onnxruntime reduces no float16 there, and a cast value's rank is not known to the graph
    builder. (Compared at float16's tolerance: onnxruntime's exp is not torch's; scatter_max's argument
    exactly.)"""
    import scatterx.torch_scatter as ts

    calls = {
        "segment_softmax": lambda index, x: scatterx.segment_softmax(x, index, num_segments=4),
        "scatter_softmax": lambda index, x: ts.scatter_softmax(x, index, 0, dim_size=4),
        "scatter_max": lambda index, x: ts.scatter_max(x, index, 0, dim_size=4),
        "scatter_logsumexp": lambda index, x: ts.scatter_logsumexp(x, index, 0, dim_size=4),
        "scatter_log_softmax": lambda index, x: ts.scatter_log_softmax(x, index, 0, dim_size=4),
    }
    index, x = torch.tensor([0, 0, 2, 1, 2, 0]), values((6, 3), torch.float16, 41)
    model = Wrap(calls[name])
    assert_outputs(run_onnx(model, [index, x], tmp_path / "m.onnx", optimize=False), model(index, x))


def test_torch_export_and_aoti(tmp_path):
    """torch.export with dynamic sizes keeps the ops (exact fakes, no graph break); the exported program runs at
    another size; AOTInductor compiles it on the CPU (the custom ops run through the dispatcher, so the package
    needs a Python process that imported scatterx)."""
    from torch.export import Dim

    class Gnn(torch.nn.Module):
        def forward(self, x, ptr, source, weight):
            h = scatterx.gather_segment_reduce(x, ptr, source, "sum", weight=weight)
            return scatterx.segment_softmax(h, ptr=ptr.clamp(max=h.size(0))) + scatterx.segment_reduce(
                x.index_select(0, source), ptr, "amax"
            )

    def graph(n, e, seed):
        g = torch.Generator().manual_seed(seed)
        ptr = torch.cat(
            [
                torch.zeros(1, dtype=torch.long),
                torch.randint(0, e + 1, (n - 1,), generator=g).sort().values,
                torch.tensor([e]),
            ]
        )
        return torch.randn(n, 3, generator=g), ptr, torch.randint(0, n, (e,), generator=g), torch.rand(e, generator=g)

    model = Gnn()
    nodes, edges = Dim("nodes", min=2), Dim("edges", min=2)
    dims = {"x": {0: nodes}, "ptr": {0: nodes + 1}, "source": {0: edges}, "weight": {0: edges}}
    program = torch.export.export(model, graph(6, 20, 0), dynamic_shapes=dims)
    targets = {str(node.target) for node in program.graph.nodes if node.op == "call_function"}
    assert {"scatterx.gather_segment_reduce.default", "scatterx.weighted_gather_segment_reduce.default"} & targets
    other = graph(9, 31, 1)
    torch.testing.assert_close(program.module()(*other), model(*other))
    package = torch._inductor.aoti_compile_and_package(program, package_path=str(tmp_path / "gnn.pt2"))
    runner = torch._inductor.aoti_load_package(package)
    torch.testing.assert_close(runner(*other), model(*other))


# ------------------------------------------------------------------------------- the torch_scatter drop-in's ops
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_segment_arg_reduce_and_logsumexp(dtype, tmp_path):
    """The selection (ties, start values, fills, a gathered order) and the log-sum-exp normalisers, in
    onnxruntime against eager."""
    from scatterx.ops import segment_arg_reduce, segment_logsumexp

    src = values((9, 3), dtype, 5).round() if dtype.is_floating_point else values((9, 3), dtype, 5)
    if dtype.is_floating_point:
        src[1, 0] = float("nan")
        src[4, 1] = float("-inf")
    ptr = torch.tensor([0, 3, 3, 7, 9])
    perm = torch.tensor([8, 0, 3, 3, 1, 2, 6, 5, 4])
    base = values((4, 3), dtype, 6)

    def every(x, p, q, b):
        out = [
            *segment_arg_reduce(x, p, "amax", finite_start=True),
            *segment_arg_reduce(x, p, "amin", fill="empty", perm=q),
            *segment_arg_reduce(x, p, "amax", base=b, fill="none"),
        ]
        if x.dtype.is_floating_point:
            out += [
                segment_logsumexp(x, p, perm=q),
                segment_logsumexp(x, p, flavour="log_softmax"),
                segment_logsumexp(x.t(), p, 1),
            ]
        return tuple(out)

    inputs = [src, ptr, perm, base]
    got = run_onnx(Wrap(every), inputs, tmp_path / "m.onnx", optimize=optimized(dtype))
    want = every(*inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.to(w.dtype), w, atol=1e-5, rtol=1e-5, equal_nan=True)


# ------------------------------------------------------------------------------------------------- bad arguments
def test_to_onnx_refuses_a_model_or_path_of_the_wrong_type_before_exporting(tmp_path):
    """A plain function or a non-path is a TypeError at once (it used to be a long failed export, or a file named
    after the int in the working directory)."""
    inputs = (torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0]))
    model = Wrap(lambda index, src: scatterx.index_scatter_reduce(0, index, src, "sum", dim_size=3)).eval()
    with pytest.raises(TypeError, match=r"model must be a torch\.nn\.Module"):
        to_onnx(lambda index, src: src, inputs, tmp_path / "a.onnx")
    with pytest.raises(TypeError, match=r"path must be a str or an os\.PathLike"):
        to_onnx(model, inputs, 5)
    assert not list(tmp_path.iterdir())
    to_onnx(model, inputs, tmp_path / "b.onnx")  # a pathlib.Path is a path
    assert [p.name for p in tmp_path.iterdir()] == ["b.onnx"]
