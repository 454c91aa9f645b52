"""The GPU backend: checked arguments in, Triton kernel launches (``kernels/gpu``) out.

The same functions with the same signatures as ``backends/cpu``, one module per op family with the same names, each
naming in ``__all__`` the functions it offers (the package exports them: ``backends/_interface.py``).
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

from .._interface import export_op_functions
from . import routes as routes  # the route choice and thresholds, read as ``backend.routes``

NAME = "gpu"

#: the interface: every function the op modules name in their ``__all__``, bound here by name
INTERFACE = export_op_functions(globals())
