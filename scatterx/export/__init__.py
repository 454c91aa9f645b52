"""Deploy: models that call scatterx ops, exported to ONNX (and through ``torch.export``).

``torch.export`` sees scatterx's ops as the custom ops they are (``torch.ops.scatterx.*``, with exact fake
implementations), so an exported program keeps them as nodes and runs them. For ONNX, each op needs a translation
into ONNX operators: ``onnx_translation_table()`` gives them all (``onnx_ops.py``, opset 18, written with
onnxscript) for ``torch.onnx.export(model, args, dynamo=True, custom_translation_table=...)``, and
``to_onnx(model, args, path)`` does that export and writes the file.

onnx and onnxscript are needed here only (``pip install onnx onnxscript``; onnxruntime to run the result).
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from .. import ops  # noqa: F401  (registers torch.ops.scatterx.*)


def onnx_translation_table() -> Dict[Any, Callable]:
    """``{torch.ops.scatterx.<op>.default: its onnxscript translation}`` for every scatterx op, for
    ``torch.onnx.export(..., dynamo=True, custom_translation_table=onnx_translation_table())``."""
    from .onnx_ops import TRANSLATIONS  # needs onnxscript, an optional dependency

    return {getattr(torch.ops.scatterx, name).default: fn for name, fn in TRANSLATIONS.items()}


def to_onnx(model, args, path, **kw):
    """Export ``model`` called on ``args`` (a tuple) to the ONNX file ``path`` with scatterx's translations (and
    any ``custom_translation_table`` of the caller's, which wins), opset 18 unless ``opset_version`` says
    otherwise; other keywords go to ``torch.onnx.export`` (``dynamic_shapes``, ``input_names``, ...). The model's
    inputs keep their order in the ONNX graph. Returns the ``torch.onnx.ONNXProgram``."""
    table = onnx_translation_table()
    table.update(kw.pop("custom_translation_table", None) or {})
    kw.setdefault("opset_version", 18)
    kw.setdefault("verbose", False)
    args = args if isinstance(args, tuple) else (args,)
    program = torch.onnx.export(model, args, dynamo=True, custom_translation_table=table, **kw)
    program.save(str(path))
    return program


__all__ = ["onnx_translation_table", "to_onnx"]
