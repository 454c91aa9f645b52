"""The op layer: one module per public op family -- its argument checks, its ``torch.library`` op (``_library``),
fake implementation and autograd. Backward formulas several ops share are in ``_backward.py``."""

from .element_scatter import element_gather, element_scatter
from .csr_transpose import csr_order, csr_transpose
from .gather_segment_reduce import gather_segment_reduce
from .index_scatter_reduce import index_scatter_reduce, index_scatter_reduce_from
from .segment_reduce import index_to_ptr, ptr_to_index, segment_reduce
from .segment_softmax import segment_softmax
from .segment_arg_reduce import segment_arg_reduce
from .segment_logsumexp import segment_logsumexp
from .sddmm import sddmm
from .gatv2_logits import gatv2_logits
from ._library import needs_op

__all__ = [
    "index_scatter_reduce",
    "index_scatter_reduce_from",
    "segment_reduce",
    "gather_segment_reduce",
    "csr_transpose",
    "csr_order",
    "segment_softmax",
    "segment_arg_reduce",
    "segment_logsumexp",
    "sddmm",
    "gatv2_logits",
    "element_scatter",
    "element_gather",
    "index_to_ptr",
    "ptr_to_index",
    "needs_op",
]
