"""pyg-lib's API -- what PyG calls of it -- on scatterx's kernels, in pure Python.

PyG's mini-batch loaders (``NeighborLoader``, ``LinkNeighborLoader``, on ``Data`` and ``HeteroData``) need pyg-lib
or torch-sparse, compiled packages with no wheel for many torch releases and platforms. Call :func:`install` once,
before PyG is first imported, and PyG finds this module as ``pyg_lib``::

    import scatterx.pyg_lib
    scatterx.pyg_lib.install()
    from torch_geometric.loader import NeighborLoader  # now runs on scatterx's samplers

What it covers:

- :mod:`~scatterx.pyg_lib.sampler`: ``neighbor_sample``, ``hetero_neighbor_sample`` (uniform, weighted, temporal;
  with or without replacement; disjoint), ``random_walk``; and the operators PyG calls directly:
  ``torch.ops.pyg.neighbor_sample``, ``hetero_neighbor_sample``, ``random_walk``, ``relabel_neighborhood``,
  ``hetero_relabel_neighborhood``, ``merge_sampler_outputs``.
- :mod:`~scatterx.pyg_lib.ops`: ``segment_matmul``, ``grouped_matmul`` (``HeteroLinear``, ``RGCNConv``),
  ``softmax_csr``, ``index_sort``, ``sampled_add/sub/mul/div``.
- :mod:`~scatterx.pyg_lib.partition`: ``metis`` (``ClusterLoader``), through ``pymetis``.

What it leaves out, PyG reports as it does without pyg-lib (its ``WITH_*`` flags stay off): the point-cloud
operators (``knn``, ``radius``, ``fps``, ``nearest``, ``grid_cluster``, ``graclus_cluster``), ``spline_basis``,
the hash maps (``torch.classes.pyg.CPUHashMap``), ``dist_neighbor_sample`` and ``subgraph``. The guide page
*The pyg-lib drop-in* lists where semantics depart from pyg-lib.
"""

from __future__ import annotations

import copyreg
import functools
import sys
import types
from typing import Any, Dict, List, Tuple

import torch
from torch import Tensor

from .._dropin import DropIn
from ..backends._outputs import empty
from . import ops as ops
from . import partition as partition
from . import sampler as sampler
from ._library import define

#: the pyg-lib release whose API and semantics this module follows
__version__ = "0.5.0"

__all__ = ["__version__", "install", "is_installed", "ops", "partition", "sampler", "uninstall"]

# a real pyg-lib, where installed, is never replaced (``scatterx/_dropin.py`` says why)
_DROP_IN = DropIn("pyg_lib", __name__, {"ops": ops, "partition": partition, "sampler": sampler}, real_wins=True)
#: (module, attribute, value before) for every change install() made to an already imported PyG
_patched: List[Tuple[Any, str, Any]] = []
#: the PyG sampler classes whose pickling ``install`` took over (``_follow_samplers_into_workers``)
_pickled: List[type] = []


def is_installed() -> bool:
    """Whether ``import pyg_lib`` gets this module.

    Returns:
        ``True`` after :func:`install` (and before :func:`uninstall`), else ``False``.

    Raises:
        : nothing.

    Example:
        >>> is_installed()
        False
    """
    return _DROP_IN.is_installed()


def install() -> types.ModuleType:
    """Makes ``import pyg_lib`` get this module, and defines the ``torch.ops.pyg`` operators PyG calls.

    Registers this module as ``pyg_lib`` (and ``pyg_lib.ops``, ``pyg_lib.sampler``, ``pyg_lib.partition``) in
    ``sys.modules``. Call it before PyG is imported: PyG looks for pyg-lib once, when it is first imported. If PyG
    was imported already, its flags (``torch_geometric.typing.WITH_PYG_LIB``, ...) and its modules' ``pyg_lib``
    are set as PyG would have set them. Where a real pyg-lib is installed, nothing changes and that package is
    returned. Calling it again changes nothing.

    Returns:
        The module ``import pyg_lib`` gets now: this one, or a real pyg-lib.

    Raises:
        : nothing of its own; importing a real pyg-lib may raise its own errors.

    Example:
        >>> install() is scatterx.pyg_lib
        True
        >>> import pyg_lib
        >>> pyg_lib.sampler.neighbor_sample is scatterx.pyg_lib.sampler.neighbor_sample
        True
        >>> uninstall()
    """
    me = _DROP_IN.install()
    if me is not sys.modules[__name__]:  # a real pyg-lib
        return me
    define()
    if "torch_geometric.typing" in sys.modules and not _patched:
        _patch_imported_pyg(me)
    _follow_samplers_into_workers()
    _gather_features_onto_huge_pages()
    return me


def uninstall() -> None:
    """Undoes :func:`install`: ``import pyg_lib`` fails again, and the flags :func:`install` set in an already
    imported PyG are put back. A PyG imported while the drop-in was installed keeps using it (it looked for pyg-lib
    when it was imported); the ``torch.ops.pyg`` operators stay defined, as torch cannot take an operator back.

    Returns:
        None.

    Raises:
        : nothing.

    Example:
        >>> module = install()
        >>> uninstall()
        >>> is_installed()
        False
    """
    if not is_installed():
        return
    for owner, attribute, value in reversed(_patched):
        setattr(owner, attribute, value)
    _patched.clear()
    for cls in _pickled:  # a sampler copied or pickled from now on must not install the drop-in again
        copyreg.dispatch_table.pop(cls, None)
    _pickled.clear()
    _DROP_IN.uninstall()


def _follow_samplers_into_workers() -> None:
    """A ``DataLoader`` worker started by *spawn* (or forkserver) unpickles its loader's sampler in a fresh
    interpreter, where ``install()`` never ran and PyG would find no pyg-lib. PyG's samplers are pickled here with a
    constructor that installs the drop-in first (``copyreg``: this process's pickling only)."""
    try:
        import torch_geometric.sampler as pyg_sampler  # PyG, imported now, finds this module as pyg_lib
    except ImportError:  # no PyG: nothing to follow
        return
    for cls in vars(pyg_sampler).values():
        if isinstance(cls, type) and issubclass(cls, pyg_sampler.BaseSampler):
            copyreg.pickle(cls, _reduce_sampler)
            _pickled.append(cls)


def _gather_features_onto_huge_pages() -> None:
    """A loader's batch gathers the sampled nodes' features (``torch_geometric.loader.utils.index_select``): on a
    large graph tens of MB of fresh memory per batch, whose page faults cost more than the copy. In the main
    process the output is allocated as scatterx's large outputs are, advised onto huge pages
    (docs/decisions/huge-pages.md); in a worker PyG's own shared-memory output is kept."""
    try:
        import torch_geometric.loader.utils as loader_utils
    except ImportError:  # no PyG
        return
    original = loader_utils.index_select
    if getattr(original, "__wrapped__", None) is not None:  # ours already
        return

    @functools.wraps(original)
    def index_select(value: Any, index: Tensor, dim: int = 0) -> Any:
        if (
            isinstance(value, Tensor)
            and value.device.type == "cpu"
            and value.layout == torch.strided
            and value.dim() > 0
            and not (value.requires_grad and torch.is_grad_enabled())  # (no ``out=`` under autograd)
            and torch.utils.data.get_worker_info() is None
        ):
            index = index.to(torch.int64)
            dim = dim % value.dim()
            size = list(value.shape)
            size[dim] = index.numel()
            return torch.index_select(value, dim, index, out=empty(size, value.dtype, value.device))
        return original(value, index, dim)

    _patched.append((loader_utils, "index_select", original))
    loader_utils.index_select = index_select


def _reduce_sampler(sampler: Any):
    reduced = object.__reduce_ex__(sampler, 4)
    return (_rebuild_sampler, (reduced[0], reduced[1]), *reduced[2:])


def _rebuild_sampler(func: Any, args: tuple) -> Any:
    """Unpickling a PyG sampler in a worker: the drop-in first, then the sampler as pickle would rebuild it."""
    install()
    return func(*args)


def pyg_flags(module: Any) -> Dict[str, bool]:
    """The ``torch_geometric.typing`` flags PyG derives from a pyg-lib ``module`` (as its import does)."""
    has = module.ops.__dict__.__contains__
    return {
        "WITH_PYG_LIB": True,
        "WITH_GMM": has("grouped_matmul"),
        "WITH_SEGMM": has("segment_matmul"),
        "WITH_SAMPLED_OP": has("sampled_add"),
        "WITH_SOFTMAX": has("softmax_csr"),
        "WITH_INDEX_SORT": has("index_sort"),
        "WITH_METIS": hasattr(module, "partition"),
        "WITH_EDGE_TIME_NEIGHBOR_SAMPLE": True,
        "WITH_WEIGHTED_NEIGHBOR_SAMPLE": True,
    }


def _patch_imported_pyg(me: types.ModuleType) -> None:
    """PyG was imported before :func:`install`: its flags -- in ``torch_geometric.typing`` and where a module
    imported them by name -- and its modules' ``pyg_lib`` name get what PyG's import would have given them."""
    flags = pyg_flags(me)
    for name, module in list(sys.modules.items()):
        if not name.startswith("torch_geometric") or module is None:
            continue
        held = module.__dict__
        if held.get("pyg_lib") is object:
            _patched.append((module, "pyg_lib", object))
            module.pyg_lib = me  # type: ignore[attr-defined]
        for flag, value in flags.items():
            if held.get(flag) is False and value:
                _patched.append((module, flag, False))
                setattr(module, flag, value)
