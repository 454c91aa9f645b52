"""scatterx.export across ops: the table covers every op, the message-passing ops and the frameworks' frontends
exported together, PyG models with the switch on, a dynamic-shape export run at two sizes, torch.export and
AOTInductor of a small GNN, and ``to_onnx``'s argument checks. Each op's own grid is in ``test_onnx_<op>.py``."""

import pytest
import torch
from onnx_run import PTR, Wrap, assert_outputs, ort, repeated_index, run_onnx, values

import scatterx
from scatterx.export import onnx_translation_table, to_onnx


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


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_message_passing_ops_in_half_types(dtype, tmp_path):
    """sddmm, gatv2_logits and the weighted reduction of half types compute in float32 and round once, as eagerly
    (onnxruntime has no bfloat16 Add or Mul: the model did not load)."""
    # float32 in and out of the graph (NumPy, which feeds onnxruntime, has no bfloat16), half types inside it
    x, y = values((6, 2, 3), dtype, 50).float(), values((5, 2, 3), dtype, 51).float()
    index = repeated_index(7, 8, 52)  # sources 0..5
    w_head, att = values((7, 2), dtype, 53).float(), values((2, 3), dtype, 54).float()

    def every(x, y, ptr, index, w_head, att):
        x, y, w_head, att = (t.to(dtype) for t in (x, y, w_head, att))
        outs = [scatterx.sddmm(ptr, index, x, y, o) for o in ("add", "mul", "dot")]
        outs.append(scatterx.gatv2_logits(ptr, index, x, y, att, 0.2))
        outs += [scatterx.gather_segment_reduce(x, ptr, index, r, weight=w_head) for r in ("sum", "amax")]
        return tuple(out.float() for out in outs)

    inputs = [x, y, PTR, index, w_head, att]
    got = run_onnx(Wrap(every), inputs, tmp_path / "m.onnx", optimize=False)
    want = every(*inputs)
    tolerance = 1e-2 if dtype == torch.float16 else 2e-2  # a unit in the last place: float32 sums in another order
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=tolerance, rtol=tolerance)


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


@pytest.mark.parametrize("strict", [False, True])
def test_torch_export_with_a_size_read_from_the_index(strict):
    """No ``dim_size`` / ``num_segments``: the size is data-dependent, in torch.export's non-strict tracing (its
    default) too, and the program run on an index with another largest entry gives eager's result."""

    class Both(torch.nn.Module):
        def forward(self, index, src):
            summed = scatterx.index_scatter_reduce(0, index, src, "sum", sorted=False)
            return summed, scatterx.segment_softmax(src, index)

    dims = ({0: torch.export.Dim.AUTO}, {0: torch.export.Dim.AUTO})
    program = torch.export.export(
        Both(), (torch.tensor([0, 3, 3, 1]), torch.rand(4)), strict=strict, dynamic_shapes=dims
    )
    other = (torch.tensor([0, 1, 1, 0, 5]), torch.rand(5))
    for got, want in zip(program.module()(*other), Both()(*other)):
        torch.testing.assert_close(got, want)


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
