"""The CPU backend: checked arguments in, Numba kernel launches (``kernels/cpu``) out.

One module per op family, named after the op as in ``ops/`` and ``kernels/cpu/``, each naming in ``__all__`` the
functions it offers; the package exports them (``backends/_interface.py``). ``backends/gpu`` has the same functions
with the same signatures, and ``backends.backend_for(tensor)`` picks one. ``routes.py`` holds the route choice of
``index_scatter_reduce`` and every threshold of this backend.
"""

from .._interface import export_op_functions
from . import routes as routes  # the route choice and thresholds, read as ``backend.routes``

NAME = "cpu"

#: the interface: every function the op modules name in their ``__all__``, bound here by name
INTERFACE = export_op_functions(globals())
