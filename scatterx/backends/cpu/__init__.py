"""The CPU backend: checked arguments in, Numba kernel launches (``kernels/cpu``) out.

One module per op family, named after the op as in ``ops/`` and ``kernels/cpu/``; ``backends/gpu`` has the same
functions with the same signatures, and ``backends.backend_for(tensor)`` picks one. ``routes.py`` holds the route
choice of ``index_scatter_reduce`` and every threshold of this backend.
"""

from . import routes
from .csr_transpose import csr_transpose
from .element_scatter import element_gather, element_scatter
from .gather_segment_reduce import gather_segment_reduce, weighted_gather_segment_reduce
from .gatv2_logits import gatv2_grad, gatv2_logits
from .index_scatter_reduce import index_scatter_reduce, small_index_scatter_reduce, tie_backward
from .sddmm import sddmm
from .segment_arg_reduce import segment_arg_reduce
from .segment_logsumexp import segment_logsumexp
from .segment_reduce import segment_reduce
from .segment_softmax import segment_softmax, segment_softmax_backward
from .segments import check_index, check_ptr, index_to_ptr, output_size, segments

NAME = "cpu"

__all__ = [
    "check_index",
    "check_ptr",
    "csr_transpose",
    "element_gather",
    "element_scatter",
    "gather_segment_reduce",
    "gatv2_grad",
    "gatv2_logits",
    "index_scatter_reduce",
    "index_to_ptr",
    "output_size",
    "routes",
    "sddmm",
    "segment_arg_reduce",
    "segment_logsumexp",
    "segment_reduce",
    "segment_softmax",
    "segment_softmax_backward",
    "segments",
    "small_index_scatter_reduce",
    "tie_backward",
    "weighted_gather_segment_reduce",
]
