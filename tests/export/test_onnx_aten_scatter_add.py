"""ONNX export of torch's own ``scatter_add`` (``scatterx/export/onnx_ops/aten_scatter_add.py``): a row index broadcast
over the rows takes the row reduction, any other index ScatterElements."""

import torch
from onnx_run import Wrap, assert_outputs, repeated_index, run_onnx, values


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


def test_torch_scatter_add_into_wider_rows_and_a_broadcast_single_target(tmp_path):
    """torch's ``scatter_add`` with a row index broadcast over ``src`` where the rows of ``self`` are wider than
    ``src``'s (torch adds into their leading part), and where one ``(1, 1)`` target is broadcast down every row."""

    def both(src, index, one):
        wide = torch.zeros(4, 3).scatter_add(0, index.view(-1, 1).expand_as(src), src)
        single = torch.zeros(3, 2).scatter_add(0, one.view(1, 1).expand_as(src), src)
        return wide, single

    inputs = (torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), torch.tensor([0, 2, 2]), torch.tensor([1]))
    assert_outputs(run_onnx(Wrap(both), inputs, tmp_path / "m.onnx", optimize=False), both(*inputs))
