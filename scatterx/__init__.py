"""scatterx: fast scatter/gather-reduce operators for PyTorch, built for graph neural networks.

The operators reduce slices of a tensor into the rows that an index or CSR offsets name -- sum, mean, prod, amax,
amin -- on Numba kernels for CPU tensors and Triton kernels for CUDA tensors. Every one is differentiable (double
backward included), runs under ``torch.compile`` and ``torch.export`` as a PyTorch custom op, and checks its
arguments before anything runs: a bad argument raises ``TypeError``, ``ValueError`` or ``IndexError`` naming it.

- Scatter-reduce along an index: :func:`scatterx.index_scatter_reduce` (sorted or any order, into a new tensor or
  into ``out``).
- Segments given by CSR offsets: :func:`scatterx.segment_reduce`; :func:`scatterx.index_to_ptr` and
  :func:`scatterx.ptr_to_index` convert between a sorted index and offsets.
- Message passing on a graph in CSR form, without materialising the messages: :func:`scatterx.gather_segment_reduce`,
  :func:`scatterx.sddmm`, :func:`scatterx.gatv2_logits`, :func:`scatterx.segment_softmax` and
  :func:`scatterx.csr_transpose`.
- Drop-ins for ``torch.scatter_reduce``, ``torch.scatter`` and ``torch.gather``: :mod:`scatterx.pytorch`.
- What repeated calls remember (plans, checked argument forms): :func:`scatterx.clear_caches` forgets all of it.

More lives in submodules: the frontends ``scatterx.torch_scatter`` (the torch_scatter drop-in), ``scatterx.pyg``
(PyTorch Geometric on scatterx), ``scatterx.onnx``, ``scatterx.tf`` and ``scatterx.paddle``; ``scatterx.planner``,
which lowers any scatter or gather to these kernels; ``scatterx.export`` (ONNX export) and ``scatterx.distributed``
(sharded scatter-reduce over ``torch.distributed``).

>>> import torch, scatterx
>>> scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 1]), torch.tensor([1.0, 2.0, 5.0]), "mean")
tensor([1.5000, 5.0000])
"""

from . import _reductions, onnx, paddle, planner, tf
from ._memo import clear_caches
from .ops import (
    csr_transpose,
    gather_segment_reduce,
    gatv2_logits,
    index_scatter_reduce,
    index_to_ptr,
    ptr_to_index,
    sddmm,
    segment_reduce,
    segment_softmax,
)
from .pytorch import gather, scatter, scatter_reduce

#: The reductions every op takes, one row each, in code order (``sum``, ``mean``, ``prod``, ``amax``, ``amin``).
#: A row's ``name`` is the reduction's name as ``torch.scatter_reduce`` spells it and ``aliases`` every string a
#: ``reduce`` argument may pass for it (``"add"``, ``"mul"``, ``"max"`` and ``"min"`` besides the names).
#: Rows that receive nothing are 0 in a new result and keep their value in ``out=``, whatever the reduction.
REDUCTIONS = _reductions.REDUCTIONS

#: The dtypes the kernels take for the values (``src``, ``out``), namely float32, float64, float16, bfloat16, int32
#: and int64. Half types are accumulated in float32; integer sums wrap as torch's do. Indices and offsets are int32 or
#: int64.
SUPPORTED_DTYPES = _reductions.SUPPORTED_DTYPES

__version__ = "0.1.0"

__all__ = [
    "REDUCTIONS",
    "SUPPORTED_DTYPES",
    "clear_caches",
    "csr_transpose",
    "gather",
    "gather_segment_reduce",
    "gatv2_logits",
    "index_scatter_reduce",
    "index_to_ptr",
    "onnx",
    "paddle",
    "planner",
    "ptr_to_index",
    "scatter",
    "scatter_reduce",
    "sddmm",
    "segment_reduce",
    "segment_softmax",
    "tf",
]


def __getattr__(name):
    # scatterx.pyg imports torch_geometric, scatterx.export onnxscript (optional dependencies), and
    # scatterx.distributed torch.distributed, scatterx.torch_scatter is the drop-in: loaded on first use, not with
    # scatterx
    if name in ("pyg", "export", "distributed", "torch_scatter"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scatterx' has no attribute {name!r}")
