"""What the parts of ``scatterx.pyg`` share: PyG's modules and original functions, the switch's state (the undo
log, which ``switch.py`` writes and everything else reads), the test of which calls scatterx's kernels take, and
how a call handed back to PyG's code explains a failure in scatterx's words."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import torch
from torch import Tensor

try:
    import torch_geometric  # noqa: F401
    import torch_geometric.nn.aggr.base as aggr_base
    import torch_geometric.utils._scatter as pyg_scatter
    import torch_geometric.utils._segment as pyg_segment
    import torch_geometric.utils._softmax as pyg_softmax
    import torch_geometric.utils._spmm as pyg_spmm
    from torch_geometric.nn.conv import message_passing as message_passing  # (re-exported to the other parts)
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError("scatterx.pyg needs PyTorch Geometric: pip install 'scatterx[pyg]' (or torch_geometric)") from e

from .._reductions import SUPPORTED_DTYPES
from ..kernels.gpu import available as triton_available
from ..ops._checks import INDEX_DTYPES

#: PyG reduce names -> scatterx's. "mul" is handled apart (PyG starts its products from 1).
REDUCE = {"sum": "sum", "add": "sum", "mean": "mean", "min": "amin", "max": "amax", "amin": "amin", "amax": "amax"}

#: PyG's own functions, as they were before any patching: what the routed functions fall back to.
ORIGINAL = {
    "scatter": pyg_scatter.scatter,
    "segment": pyg_segment.segment,
    "softmax": pyg_softmax.softmax,
    "spmm": pyg_spmm.spmm,
    "Aggregation.reduce": aggr_base.Aggregation.reduce,
}

#: an attribute a class did not have before enable(): disable() deletes it
ABSENT = object()
#: what enable() changed: (owner, attribute, original or ABSENT), undone by disable() in reverse order
PATCHED: List[Tuple[Any, str, Any]] = []


def is_enabled() -> bool:
    """Whether the switch is on (:func:`enable` was called, and :func:`disable` not since).

    Returns:
        ``True`` while PyG is routed through scatterx, else ``False``.

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> scatterx.pyg.is_enabled()
        False
        >>> with scatterx.pyg.enabled():
        ...     scatterx.pyg.is_enabled()
        True
    """
    return bool(PATCHED)


def runs_here(src: Tensor, *indices: Optional[Tensor]) -> bool:
    """Whether scatterx's kernels take these tensors (else the caller falls back to PyG's function)."""
    if not isinstance(src, Tensor) or src.layout != torch.strided or src.dtype not in SUPPORTED_DTYPES:
        return False
    if src.device.type != "cpu" and not (src.device.type == "cuda" and triton_available()):
        return False
    return all(
        isinstance(i, Tensor) and i.layout == torch.strided and i.dtype in INDEX_DTYPES and i.device == src.device
        for i in indices
        if i is not None
    )


def is_sorted(index: Tensor) -> bool:
    """One pass over the index picks the sorted kernel (CPU). Not asked under torch.compile (the answer would be a
    graph break) nor on a GPU (a host sync per call, where the unsorted strategy needs none): the unsorted path
    is correct for any order."""
    if torch.compiler.is_compiling() or index.device.type != "cpu":
        return False
    return index.numel() < 2 or bool((index[1:] >= index[:-1]).all())


def explained(call: Callable[[], Tensor], check: Callable[[], None]) -> Tensor:
    """``call()``, PyG's function on a call the rule handed back; where it fails on an index torch checked
    (torch's ``RuntimeError``, the ``IndexError`` of a routed call inside it, or the ``ValueError`` PyG's
    aggregations turn them into), ``check()`` raises scatterx's exception for it instead, the one the same call
    above the rule raises (and the failure's own exception, where the check finds nothing). Free where nothing
    fails; traced by ``torch.compile``, ``call()`` alone (no value is read in a graph)."""
    if torch.compiler.is_compiling():
        return call()
    try:
        return call()
    except (RuntimeError, IndexError, ValueError) as error:
        try:
            check()
        except (IndexError, ValueError) as clear:
            raise clear from error
        raise
