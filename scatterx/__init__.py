"""scatterx: fast scatter/gather-reduce operators for PyTorch, built for graph neural networks.

>>> import torch, scatterx
>>> scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 1]), torch.tensor([1.0, 2.0, 5.0]), "mean")
tensor([1.5000, 5.0000])
"""

from ._reductions import REDUCTIONS, SUPPORTED_DTYPES
from .ops import (
    csr_transpose,
    gather_segment_reduce,
    gatv2_logits,
    index_scatter_reduce,
    index_to_ptr,
    ptr_to_index,
    segment_reduce,
    sddmm,
    segment_softmax,
)
from .pytorch import gather, scatter, scatter_reduce
from . import onnx, paddle, planner, tf  # noqa: E402  (frontends: scatterx.onnx.scatter_nd, ...)

__version__ = "0.1.0"

__all__ = [
    "index_scatter_reduce",
    "segment_reduce",
    "gather_segment_reduce",
    "csr_transpose",
    "segment_softmax",
    "sddmm",
    "gatv2_logits",
    "scatter_reduce",
    "scatter",
    "gather",
    "onnx",
    "tf",
    "paddle",
    "planner",
    "index_to_ptr",
    "ptr_to_index",
    "REDUCTIONS",
    "SUPPORTED_DTYPES",
]


def __getattr__(name):
    # scatterx.pyg imports torch_geometric, scatterx.export onnxscript (optional dependencies), and
    # scatterx.distributed torch.distributed, scatterx.torch_scatter is the drop-in: loaded on first use, not with
    # scatterx
    if name in ("pyg", "export", "distributed", "torch_scatter"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scatterx' has no attribute {name!r}")
