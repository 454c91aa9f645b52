"""``scatterx.torch_scatter``: torch_scatter's API (its signatures and its semantics) on scatterx's kernels.

Change ``import torch_scatter`` to ``import scatterx.torch_scatter as torch_scatter``, or call
:func:`install` once to make ``import torch_scatter`` (and PyG's use of it) get this module. Pure Python: no
compiled extension to match a torch release, parallel Numba kernels on the CPU, Triton on CUDA,
``torch.compile`` and ``torch.jit.script`` of the functions work.

Where torch_scatter's semantics differ from scatterx's own API (``scatterx.index_scatter_reduce`` and kin), this
module follows torch_scatter; the README's table lists the differences and why the core API chose otherwise.
"""

import sys
import types

from .composite import scatter_log_softmax, scatter_logsumexp, scatter_softmax, scatter_std
from .scatter import scatter, scatter_add, scatter_max, scatter_mean, scatter_min, scatter_mul, scatter_sum
from .segment_coo import (gather_coo, segment_add_coo, segment_coo, segment_max_coo, segment_mean_coo,
                          segment_min_coo, segment_sum_coo)
from .segment_csr import (gather_csr, segment_add_csr, segment_csr, segment_max_csr, segment_mean_csr,
                          segment_min_csr, segment_sum_csr)
from . import composite, utils

#: the torch_scatter release whose API and semantics this module follows
__version__ = "2.1.2"

__all__ = [
    "scatter_sum", "scatter_add", "scatter_mul", "scatter_mean", "scatter_min", "scatter_max", "scatter",
    "segment_sum_csr", "segment_add_csr", "segment_mean_csr", "segment_min_csr", "segment_max_csr",
    "segment_csr", "gather_csr",
    "segment_sum_coo", "segment_add_coo", "segment_mean_coo", "segment_min_coo", "segment_max_coo",
    "segment_coo", "gather_coo",
    "scatter_std", "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax",
    "install", "uninstall", "__version__",
]

# (the functions scatter, segment_csr and segment_coo hide the submodules of those names as attributes, as in
# torch_scatter itself: the modules are taken from sys.modules)
_SUBMODULES = {name: sys.modules[f"{__name__}.{name}"]
               for name in ("scatter", "segment_csr", "segment_coo", "composite", "utils")}
_saved = {}


def install() -> types.ModuleType:
    """Register this module as ``torch_scatter`` (and its submodules as ``torch_scatter.scatter``, ...,
    ``torch_scatter.utils``) in ``sys.modules``, so that ``import torch_scatter`` gets it. Any torch_scatter
    already imported is set aside and comes back with :func:`uninstall`. Import PyG after this call: PyG looks for
    torch_scatter when it is first imported. Returns this module."""
    me = sys.modules[__name__]
    names = ["torch_scatter"] + [f"torch_scatter.{s}" for s in _SUBMODULES]
    if sys.modules.get("torch_scatter") is not me:
        for name in names:
            _saved[name] = sys.modules.get(name)
    sys.modules["torch_scatter"] = me
    for sub, module in _SUBMODULES.items():
        sys.modules[f"torch_scatter.{sub}"] = module
    return me


def uninstall() -> None:
    """Undo :func:`install`: ``torch_scatter`` is again what it was before (absent, or the real package)."""
    if sys.modules.get("torch_scatter") is not sys.modules[__name__]:
        return
    for name in ["torch_scatter"] + [f"torch_scatter.{s}" for s in _SUBMODULES]:
        previous = _saved.pop(name, None)
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
