"""The switch itself: ``enable()`` patches PyG and logs every change in ``_common.PATCHED``; ``disable()`` undoes
the log in reverse order."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Iterator

from . import fused, routed, sharded
from ._common import ABSENT, ORIGINAL, PATCHED, aggr_base, is_enabled, message_passing

__all__ = ["disable", "enable", "enabled", "is_enabled"]

#: methods enable() replaces: name in ORIGINAL -> (owner, attribute, replacement)
_METHODS = {"Aggregation.reduce": (aggr_base.Aggregation, "reduce", routed.aggregation_reduce)}


def _renamed(fn, name):
    """A copy of function ``fn`` named ``name`` (TorchScript compiles a method under its function's __name__)."""
    renamed = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    renamed.__kwdefaults__ = fn.__kwdefaults__
    renamed.__annotations__ = dict(fn.__annotations__)
    renamed.__module__ = fn.__module__
    renamed.__qualname__ = fn.__qualname__.rsplit(".", 1)[0] + "." + name
    return renamed


def _patch(owner, attr: str, value) -> None:
    PATCHED.append((owner, attr, vars(owner).get(attr, ABSENT)))
    setattr(owner, attr, value)


def enable() -> None:
    """Turn the switch on: route PyG's scatter, segment, softmax and spmm, its aggregations and the layers of
    :data:`FUSED_CONVS` through scatterx.

    PyG is patched in place: ``torch_geometric.utils.scatter`` and the others become :func:`scatter`,
    :func:`segment`, :func:`softmax` and :func:`spmm` in the package namespaces and in every loaded
    ``torch_geometric`` module that bound the name at import time (``from torch_geometric.utils import scatter``);
    modules loaded later import them from the patched package. ``Aggregation.reduce`` and the ``propagate`` of the
    fused layers are replaced too. Calling it while the switch is on does nothing. :func:`disable` undoes it all.

    Returns:
        None.

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> import torch_geometric.utils
        >>> scatterx.pyg.enable()
        >>> torch_geometric.utils.scatter is scatterx.pyg.scatter
        True
        >>> torch_geometric.utils.scatter(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 2]))
        tensor([3., 0., 3.])
        >>> scatterx.pyg.disable()
        >>> torch_geometric.utils.scatter is scatterx.pyg.scatter
        False
    """
    if PATCHED:
        return
    originals = {id(fn): name for name, fn in ORIGINAL.items() if name in routed.REPLACEMENT}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "torch_geometric" or module_name.startswith("torch_geometric.")):
            continue
        for attr, value in list(vars(module).items()):
            name = originals.get(id(value))
            if name is not None and value is ORIGINAL[name]:
                _patch(module, attr, routed.REPLACEMENT[name])
    _patch(aggr_base.Aggregation, "_pyg_reduce", _renamed(ORIGINAL["Aggregation.reduce"], "_pyg_reduce"))
    for owner, attr, replacement in _METHODS.values():
        _patch(owner, attr, replacement)
    for cls in fused.FUSED_CONVS:
        had, wrapper = fused.routed_propagate(cls)
        if had is ABSENT:
            # a class PyG has not compiled yet: it will take the wrapper for its compiled propagate and skip
            # compiling, so it never records the generic propagate that decomposed layers and explain mode
            # switch an instance to (and the fused one to switch back to): record them as PyG would
            for attr, value in (
                ("_orig_propagate", message_passing.MessagePassing.propagate),
                ("_jinja_propagate", wrapper),
            ):
                if attr not in vars(cls):
                    _patch(cls, attr, value)
        _patch(cls, "propagate", wrapper)
        fused.WRAPPERS.add(wrapper)
        _patch(cls, "__prepare_scriptable__", fused.prepare_scriptable)
    for cls in fused.EDGE_UPDATERS:
        _, wrapper = fused.routed_edge_updater(cls)
        _patch(cls, "edge_updater", wrapper)
        fused.WRAPPERS.add(wrapper)
    # a ShardedGraph: the supported layers run sharded, the others say they do not
    for cls in sharded.SHARDED_CONVS:
        _, forward = sharded.routed_forward(cls)
        _patch(cls, "forward", forward)
    _patch(message_passing.MessagePassing, "_check_input", sharded.check_input)
    _patch(message_passing.MessagePassing, "__prepare_scriptable__", fused.prepare_scriptable)


def disable() -> None:
    """Turn the switch off: undo :func:`enable`, every patched name gets PyG's own function back.

    Calling it while the switch is off does nothing. The CSR adjacencies cached for the fused layers are kept, to
    be reused when the switch is turned on again (:func:`clear_cache` forgets them).

    Returns:
        None.

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> scatterx.pyg.enable()
        >>> scatterx.pyg.disable()
        >>> scatterx.pyg.is_enabled()
        False
    """
    while PATCHED:
        owner, attr, original = PATCHED.pop()
        if original is ABSENT:
            delattr(owner, attr)
        else:
            setattr(owner, attr, original)


@contextlib.contextmanager
def enabled() -> Iterator[None]:
    """The switch on inside a ``with`` block, and as it was before after it.

    An :func:`enable` called inside a block that found the switch off is undone at its end too; a block entered
    with the switch on leaves it on. The block's exceptions propagate.

    Returns:
        A context manager (``with scatterx.pyg.enabled():``; it binds nothing to ``as``).

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> from torch_geometric.nn import SAGEConv
        >>> _ = torch.manual_seed(0)
        >>> conv = SAGEConv(2, 3)
        >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
        >>> with scatterx.pyg.enabled():  # SAGEConv is fused: no edges x features messages
        ...     out = conv(x, edge_index)
        >>> scatterx.pyg.is_enabled()
        False
        >>> torch.allclose(out, conv(x, edge_index))  # PyG's own result
        True
    """
    was_on = is_enabled()
    enable()
    try:
        yield
    finally:
        if not was_on:
            disable()
