"""The op layer: one module per public op family -- its argument checks, its ``torch.library`` op (``_library``),
fake implementation and autograd. Backward formulas several ops share are in ``_backward.py``."""

from ._library import needs_op
from .csr_transpose import csr_order, csr_transpose
from .element_scatter import element_gather, element_scatter
from .gather_segment_reduce import gather_segment_reduce
from .gatv2_logits import gatv2_logits
from .index_scatter_reduce import index_scatter_reduce, index_scatter_reduce_from
from .sddmm import sddmm
from .segment_arg_reduce import segment_arg_reduce
from .segment_logsumexp import segment_logsumexp
from .segment_reduce import index_to_ptr, ptr_to_index, segment_reduce
from .segment_softmax import segment_softmax

__all__ = [
    "csr_order",
    "csr_transpose",
    "element_gather",
    "element_scatter",
    "gather_segment_reduce",
    "gatv2_logits",
    "index_scatter_reduce",
    "index_scatter_reduce_from",
    "index_to_ptr",
    "needs_op",
    "ptr_to_index",
    "sddmm",
    "segment_arg_reduce",
    "segment_logsumexp",
    "segment_reduce",
    "segment_softmax",
]
