"""torch_scatter's API -- its functions, their signatures and their semantics -- on scatterx's kernels.

Change ``import torch_scatter`` to ``import scatterx.torch_scatter as torch_scatter``, or call :func:`install` once
to make ``import torch_scatter`` (and PyG's use of it) get this module::

    import scatterx.torch_scatter as torch_scatter
    out, argmax = torch_scatter.scatter_max(src, index, dim=0, dim_size=num_nodes)

It is pure Python: there is no compiled extension to match a torch release; it runs parallel Numba kernels on
the CPU and Triton kernels on CUDA, and ``torch.compile`` and ``torch.jit.script`` work on its functions.

- The scatter reductions (:func:`scatter`, :func:`scatter_sum`, ...) reduce the entries of ``src`` that share an
  ``index`` value, given in any order and broadcast to ``src`` as torch_scatter broadcasts it.
- The CSR segment reductions (:func:`segment_csr`, ...) reduce contiguous ranges given by offsets ``indptr``, and
  the COO ones (:func:`segment_coo`, ...) the runs of a sorted ``index``; :func:`gather_csr` and
  :func:`gather_coo` send one value per segment back to its members.
- The composite functions :func:`scatter_softmax`, :func:`scatter_log_softmax`, :func:`scatter_logsumexp` and
  :func:`scatter_std` use torch_scatter's formulas (its ``eps`` terms included) and are differentiable.

Where torch_scatter's semantics differ from scatterx's own API (:func:`scatterx.index_scatter_reduce`,
:func:`scatterx.segment_reduce`), this module follows torch_scatter; the differences are listed in the guide
page *The torch_scatter drop-in*. Where torch_scatter has a bug or undefined behaviour (an index out of range, an
unsorted index for the COO functions), this module raises instead. Bad input raises before anything is written:
an ``out`` tensor is untouched after a failed call.
"""

import sys
import types

from .._dropin import DropIn

# torch_scatter's submodules, as attributes (``torch_scatter.utils``); the aliases mark them re-exported
from . import composite as composite
from . import utils as utils
from .composite import scatter_log_softmax, scatter_logsumexp, scatter_softmax, scatter_std
from .scatter import scatter, scatter_add, scatter_max, scatter_mean, scatter_min, scatter_mul, scatter_sum
from .segment_coo import (
    gather_coo,
    segment_add_coo,
    segment_coo,
    segment_max_coo,
    segment_mean_coo,
    segment_min_coo,
    segment_sum_coo,
)
from .segment_csr import (
    gather_csr,
    segment_add_csr,
    segment_csr,
    segment_max_csr,
    segment_mean_csr,
    segment_min_csr,
    segment_sum_csr,
)

#: the torch_scatter release whose API and semantics this module follows
__version__ = "2.1.2"

__all__ = [
    "__version__",
    "gather_coo",
    "gather_csr",
    "install",
    "scatter",
    "scatter_add",
    "scatter_log_softmax",
    "scatter_logsumexp",
    "scatter_max",
    "scatter_mean",
    "scatter_min",
    "scatter_mul",
    "scatter_softmax",
    "scatter_std",
    "scatter_sum",
    "segment_add_coo",
    "segment_add_csr",
    "segment_coo",
    "segment_csr",
    "segment_max_coo",
    "segment_max_csr",
    "segment_mean_coo",
    "segment_mean_csr",
    "segment_min_coo",
    "segment_min_csr",
    "segment_sum_coo",
    "segment_sum_csr",
    "uninstall",
]

# (the functions scatter, segment_csr and segment_coo hide the submodules of those names as attributes, as in
# torch_scatter itself: the modules are taken from sys.modules)
_SUBMODULES = {
    name: sys.modules[f"{__name__}.{name}"] for name in ("scatter", "segment_csr", "segment_coo", "composite", "utils")
}
# the drop-in is installed even where the real torch_scatter is (``scatterx/_dropin.py`` says why)
_DROP_IN = DropIn("torch_scatter", __name__, _SUBMODULES, real_wins=False)


def install() -> types.ModuleType:
    """Makes ``import torch_scatter`` get this module.

    Registers this module as ``torch_scatter`` in ``sys.modules``, and its submodules as
    ``torch_scatter.scatter``, ``torch_scatter.segment_csr``, ``torch_scatter.segment_coo``,
    ``torch_scatter.composite`` and ``torch_scatter.utils``. A torch_scatter already imported is set aside and
    comes back with :func:`uninstall`. Import PyG after this call: PyG looks for torch_scatter once, when it is
    first imported. Calling it again changes nothing.

    Returns:
        This module, ``scatterx.torch_scatter``.

    Raises:
        : nothing; the call only edits ``sys.modules``.

    Example:
        >>> install() is scatterx.torch_scatter
        True
        >>> import torch_scatter
        >>> torch_scatter.scatter_max is scatterx.torch_scatter.scatter_max
        True
        >>> uninstall()
    """
    return _DROP_IN.install()


def uninstall() -> None:
    """Undoes :func:`install`: ``torch_scatter`` is again what it was before (absent, or the real package).

    Nothing happens when this module is not installed. Modules that imported ``torch_scatter`` meanwhile (PyG)
    keep the drop-in they got.

    Returns:
        None.

    Raises:
        : nothing; the call only edits ``sys.modules``.

    Example:
        >>> import sys
        >>> module = install()
        >>> uninstall()
        >>> sys.modules.get("torch_scatter") is scatterx.torch_scatter
        False
    """
    _DROP_IN.uninstall()
