"""Deploy models that call scatterx: export them to ONNX, or through ``torch.export``.

``torch.export`` needs nothing from this module: it sees scatterx's ops as the custom operators they are
(``torch.ops.scatterx.*``, with exact shape functions), so an exported program -- dynamic sizes included -- keeps
them as nodes and runs them, and AOTInductor compiles it (the package runs in a Python process that imported
scatterx).

ONNX has no such operators: each op needs a translation into ONNX's. :func:`onnx_translation_table` gives the
translations of every scatterx op (opset 18, written with onnxscript) for ``torch.onnx.export(model, args,
dynamo=True, custom_translation_table=...)``, and :func:`to_onnx` does that export and writes the file::

    from scatterx.export import to_onnx

    to_onnx(model.eval(), (x, edge_index), "model.onnx")

Models that use PyG with the :mod:`scatterx.pyg` switch on export the same way. In the exported graph:

- every reduction is exact, and deterministic in onnxruntime also with repeated indices (a pairwise tree over the
  index's runs, no scatter that combines repeated indices; at the bench shape 13-16x slower than eager scatterx,
  the ScatterElements graph it replaces 35-63x: docs/decisions/export-onnx.md);
- torch's own ``scatter_add`` of a broadcast row index (PyG's aggregation) is translated the same way;
- float16 and bfloat16 are reduced in float32 and rounded once, as the eager kernels do;
- the ops' argument checks (index range, ``ptr``'s shape) are not part of the graph; onnxruntime raises on an
  index out of range.

This module needs onnx and onnxscript (``pip install 'scatterx[export]'``, which adds onnxruntime to run the
result).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Union

import torch

from .. import ops  # noqa: F401  (registers torch.ops.scatterx.*)


def onnx_translation_table() -> Dict[Any, Callable]:
    """The ONNX translation of every scatterx op (and of torch's ``scatter_add``), as ``torch.onnx.export``'s
    ``custom_translation_table``.

    Pass it as ``torch.onnx.export(model, args, dynamo=True, custom_translation_table=onnx_translation_table())``
    (:func:`to_onnx` does so), merged with a table of your own where the model has other custom ops. Each
    translation is an onnxscript function of opset 18 ops that computes the op's whole semantics: its reductions,
    empty rows, ``out=`` base and CSR offsets.

    Returns:
        A new dict ``{torch.ops.scatterx.<op>.default: its onnxscript translation}`` with an entry for every
        scatterx op (``adjacency_matmul``, which the PyG switch puts into compiled layers, once
        :mod:`scatterx.pyg` is imported), and one for ``torch.ops.aten.scatter_add.default`` (a row index
        broadcast over the rows takes the same row reduction; any other index, ``ScatterElements`` as torch
        translates it).

    Raises:
        ImportError: onnxscript is not installed.

    Example:
        >>> table = onnx_translation_table()
        >>> torch.ops.scatterx.index_scatter_reduce.default in table
        True
        >>> torch.ops.aten.scatter_add.default in table
        True
    """
    from .onnx_ops import ATEN_TRANSLATIONS, TRANSLATIONS  # needs onnxscript, an optional dependency

    # (``adjacency_matmul`` is registered by scatterx.pyg, which needs PyG: listed once that is imported)
    table: Dict[Any, Callable] = {
        getattr(torch.ops.scatterx, name).default: fn
        for name, fn in TRANSLATIONS.items()
        if hasattr(torch.ops.scatterx, name)
    }
    table.update({getattr(torch.ops.aten, name).default: fn for name, fn in ATEN_TRANSLATIONS.items()})
    return table


def to_onnx(
    model: Union[torch.nn.Module, torch.export.ExportedProgram, torch.jit.ScriptFunction],
    args: Any,
    path: Union[str, os.PathLike[str]],
    **kw: Any,
) -> torch.onnx.ONNXProgram:
    """Export ``model`` called on ``args`` to the ONNX file ``path``, scatterx's ops translated.

    It runs ``torch.onnx.export(model, args, dynamo=True, custom_translation_table=...)`` with
    :func:`onnx_translation_table` (merged with the caller's ``custom_translation_table``, whose entries win), at
    opset 18 unless ``opset_version`` says otherwise, and saves the result. The model's inputs keep their names and
    order in the ONNX graph. Put the model in eval mode first (``model.eval()``), as for any export.

    Args:
        model: the ``torch.nn.Module`` to export (or a ``torch.export.ExportedProgram`` or a TorchScript function,
            as ``torch.onnx.export`` takes).
        args: the model's positional inputs: a tuple, or a single input.
        path: the file to write (``str`` or ``os.PathLike``); its directory must exist. Where the model's
            weights are large, ``torch.onnx`` may write them to a data file beside it.
        **kw: passed to ``torch.onnx.export``: ``dynamic_shapes``, ``input_names``, ``output_names``,
            ``opset_version``, ``custom_translation_table``, ``verbose`` (default ``False``), ...

    Returns:
        The ``torch.onnx.ONNXProgram`` of the export (already saved to ``path``).

    Raises:
        TypeError: ``model`` is not a module, exported program or TorchScript function; ``path`` is not a string
            or path; ``custom_translation_table`` is not a dict; or a keyword is not one of ``torch.onnx.export``'s.
        ImportError: onnxscript is not installed.
        RuntimeError: the export fails (``torch.onnx.OnnxExporterError``, e.g. ``args`` do not fit the model's
            ``forward``).
        OSError: ``path`` cannot be written (e.g. its directory does not exist).

    Example:
        >>> import os, tempfile
        >>> import onnxruntime
        >>> class Sum(torch.nn.Module):
        ...     def forward(self, index, src):
        ...         return scatterx.index_scatter_reduce(0, index, src, "sum", dim_size=3)
        >>> index, src = torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "sum.onnx")
        ...     program = to_onnx(Sum().eval(), (index, src), path)
        ...     session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        ...     session.run(None, {"index": index.numpy(), "src": src.numpy()})
        [array([3., 0., 3.], dtype=float32)]
    """
    exportable = (torch.nn.Module, torch.export.ExportedProgram, torch.jit.ScriptFunction)
    if not isinstance(model, exportable):
        raise TypeError(
            f"to_onnx: model must be a torch.nn.Module (or an ExportedProgram or a TorchScript "
            f"function), got {type(model).__name__}"
        )
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_onnx: path must be a str or an os.PathLike, got {type(path).__name__}")
    table = onnx_translation_table()
    table.update(kw.pop("custom_translation_table", None) or {})
    kw.setdefault("opset_version", 18)
    kw.setdefault("verbose", False)
    args = args if isinstance(args, tuple) else (args,)
    program = torch.onnx.export(model, args, dynamo=True, custom_translation_table=table, **kw)
    assert program is not None  # None only from the TorchScript exporter (dynamo=False)
    program.save(os.fspath(path))
    return program


__all__ = ["onnx_translation_table", "to_onnx"]
