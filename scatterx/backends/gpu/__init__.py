"""The GPU backend: checked arguments in, Triton kernel launches (``kernels/gpu``) out.

The same functions with the same signatures as ``backends/cpu``, one module per op family with the same names.
Everything here is made of torch ops and ``wrap_triton`` launches, with no host sync, so that the ops can be
``triton_op``s that ``torch.compile`` traces into. That shapes two choices:

- **Validation on the device.** Index and offset values are checked by reductions and ``torch._assert_async``:
  a bad value raises when the device reaches the check (on CUDA a device-side assert, reported at the next sync,
  like torch's own index ops), and every kernel masks its addresses, so nothing outside its buffers is touched
  whatever the index holds. Where the index must be read on the host anyway (no ``dim_size``: its maximum is the
  output size), ``output_size`` checks everything in that one read and raises a plain Python exception.
- **Segments from torch.** CSR offsets of a sorted index are ``searchsorted``; an unsorted index is grouped by
  ``torch.sort(stable=True)``, and rows are gathered through the permutation.

``routes.py`` chooses among the routes of ``index_scatter_reduce``.
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

NAME = "gpu"

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
