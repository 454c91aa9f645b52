"""Fused message passing: the ``propagate`` of the layers whose message is the neighbour's features unchanged
(``FUSED_CONVS``: ``SAGEConv``, ``GINConv``) runs the layer's own ``message_and_aggregate`` on a CSR adjacency, so
the messages are reduced by ``gather_segment_reduce`` without being materialized.

PyG compiles a per-class ``propagate`` from a jinja template on first instantiation, unless the class's
``propagate.__module__`` already carries the template's name; the wrapper takes that name, so PyG keeps it.
Anything the fused path does not cover -- hooks, explain mode, decomposed layers, ``torch.compile``, other
flows, TorchScript -- runs PyG's own ``propagate``.
"""

from __future__ import annotations

import copy
from typing import Dict, Optional

import torch
from torch import Tensor
from torch_geometric.nn import GINConv, SAGEConv

from ._common import ABSENT, is_enabled, message_passing, runs_here
from .adjacency import adjacency

#: Layers whose ``message(x_j)`` returns ``x_j`` and whose ``message_and_aggregate`` is ``spmm(adj_t, x[0], aggr)``:
#: their propagate may run fused. Only the exact methods of these classes qualify (a subclass that overrides
#: either runs PyG's propagate).
FUSED_CONVS = (SAGEConv, GINConv)

_HOOKS = (
    "_propagate_forward_pre_hooks",
    "_propagate_forward_hooks",
    "_message_forward_pre_hooks",
    "_message_forward_hooks",
    "_aggregate_forward_pre_hooks",
    "_aggregate_forward_hooks",
    "_message_and_aggregate_forward_pre_hooks",
    "_message_and_aggregate_forward_hooks",
)

#: the propagate wrappers enable() installed, and per layer class a subclass with PyG's propagate (for scripting)
WRAPPERS: set = set()
_SCRIPTABLE: Dict[type, type] = {}


def fusable(conv) -> bool:
    cls = type(conv)
    if not any(
        cls.message is base.message and cls.message_and_aggregate is base.message_and_aggregate
        for base in FUSED_CONVS
    ):
        return False
    return (
        conv.fuse
        and not conv.explain
        and conv.decomposed_layers == 1
        and conv.flow == "source_to_target"
        and not torch.compiler.is_compiling()
        and not torch.jit.is_scripting()
        and not any(getattr(conv, hooks, None) for hooks in _HOOKS)
    )


def fused_propagate(conv, edge_index, size, kwargs) -> Optional[Tensor]:
    """PyG's fused branch of ``propagate`` on a plain edge list, or None when it does not apply."""
    if not (fusable(conv) and isinstance(edge_index, Tensor) and edge_index.layout == torch.strided):
        return None
    x = kwargs.get("x")
    if not (isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], Tensor)):
        return None
    x_j, x_i = x
    if not runs_here(x_j, edge_index if edge_index.dim() == 2 else None) or x_j.dim() == 0:
        return None
    mutable_size = conv._check_input(edge_index, size)  # PyG's own checks of edge_index and size
    conv._set_size(mutable_size, 0, x_j)
    if isinstance(x_i, Tensor):
        conv._set_size(mutable_size, 1, x_i)
    num_sources = mutable_size[0]
    num_targets = mutable_size[1] if mutable_size[1] is not None else mutable_size[0]
    adj = adjacency(edge_index, num_sources, num_targets, conv.node_dim)
    coll = conv._collect(conv._fused_user_args, edge_index, mutable_size, kwargs)
    out = conv.message_and_aggregate(adj, **conv.inspector.collect_param_data("message_and_aggregate", coll))
    return conv.update(out, **conv.inspector.collect_param_data("update", coll))


def routed_propagate(cls):
    """``(what cls had, a propagate that tries the fused path first)`` for ``enable()`` to install."""
    had = cls.__dict__.get("propagate", ABSENT)
    pyg_propagate = message_passing.MessagePassing.propagate if had is ABSENT else had

    def propagate(self, edge_index, size=None, **kwargs):
        out = fused_propagate(self, edge_index, size, kwargs) if is_enabled() else None
        if out is not None:
            return out
        return pyg_propagate(self, edge_index, size=size, **kwargs)

    propagate.__module__ = f"{cls.__module__}_{cls.__name__}_propagate" if had is ABSENT else had.__module__
    propagate.__doc__ = pyg_propagate.__doc__
    return had, propagate


def prepare_scriptable(self):
    """``torch.jit.script(conv)`` calls this first: TorchScript cannot compile the wrapper (``**kwargs``, Numba),
    so it scripts a copy whose class has PyG's own template-made ``propagate``; the eager layer stays fused."""
    cls = type(self)
    if cls.__dict__.get("propagate") not in WRAPPERS and getattr(cls, "propagate", None) not in WRAPPERS:
        return self
    if cls not in _SCRIPTABLE:
        _SCRIPTABLE[cls] = type(
            cls.__name__, (cls,), {"propagate": message_passing.MessagePassing.propagate, "__module__": cls.__module__}
        )
    clone = copy.copy(self)
    clone.__class__ = _SCRIPTABLE[cls]
    clone._set_jittable_templates(raise_on_error=True)
    return clone
