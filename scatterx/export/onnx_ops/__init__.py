"""ONNX translations of scatterx's ops (opset 18), written with onnxscript, for ``torch.onnx.export(...,
dynamo=True, custom_translation_table=...)``.

Every reduction comes down to one building block, ``_graph._reduce_rows`` (its docstring and the module's say how):
the rows of a tensor reduced into their targets by a pairwise tree, with no scatter that combines repeated indices.

**Why no scatter with a reduction.** ``ScatterND`` with a reduction would be the natural row scatter, but
onnxruntime's CPU kernel splits its updates over threads with no guard for repeated indices: with reduction add
it returns different sums run to run (onnxruntime's GitHub issues 18048 and 23396). ``ScatterElements`` (the
index expanded to the rows' shape) is exact and deterministic but runs 17-44 ns an element: 35-63x eager scatterx
at the bench shape. The tree is exact (a fixed order of sums, the same on every run and thread count) and 7-28x
eager; the measurements, and what was rejected: ``docs/decisions/export-onnx.md``.

PyTorch's own translation of ``scatter_reduce`` maps mean to a plain overwrite, which is wrong with repeated
indices; here every reduction is exact. Other dims are transposed to the front and back. CSR offsets become an
index inside the graph (``_ptr_to_index``: a 1 at each segment start, then a running sum), so the segment ops are
the same reduction. The softmax, arg-select and logsumexp ops still scatter with ``ScatterElements`` (exact, slow).
``aten_scatter_add`` translates torch's own ``scatter_add`` the same way where its index is a row index broadcast
over the rows (PyG's aggregation, which the ``scatterx.pyg`` switch leaves to PyG under export). Half types are
reduced in float32 and rounded once, as the eager kernels do (onnxruntime has no half kernel for these
reductions). The ops' checks (index range, ptr shape) are not in the graph: onnxruntime's
scatters and gathers raise on an index out of range, as the eager ops do.

**Layout.** One module per op, named after it (``segment_reduce.py`` translates ``scatterx::segment_reduce``, and
the conversions ``index_to_ptr``/``ptr_to_index`` that live beside it in ``scatterx/ops/``), each function marked
``@translation`` (``@aten_translation`` for torch's own ops); ``_graph.py`` holds the registry and what they share
(``_reduce_rows``, ``_ptr_to_index``). Importing this package imports every module here, so a new op's translation
is a new module and no list (``tests/export/test_onnx_export.py::test_the_table_covers_every_op`` wants every
forward op in ``TRANSLATIONS``); its cases run in onnxruntime in ``tests/export/test_onnx_<op>.py``.
"""

from __future__ import annotations

from ..._modules import import_modules
from ._graph import ATEN_TRANSLATIONS, TRANSLATIONS

import_modules(globals())  # each registers its translations

__all__ = ["ATEN_TRANSLATIONS", "TRANSLATIONS"]
