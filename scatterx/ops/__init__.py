"""The op layer: argument checks, then the kernels. One file per op family."""

from . import library  # registers torch.ops.scatterx.*
from .index_scatter import index_scatter_reduce
from .gather_segment import csr_transpose, gather_segment_reduce
from .segment import index_to_ptr, ptr_to_index, segment_reduce

__all__ = [
    "index_scatter_reduce",
    "segment_reduce",
    "gather_segment_reduce",
    "csr_transpose",
    "index_to_ptr",
    "ptr_to_index",
]
