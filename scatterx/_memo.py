"""The package's caches: one memo helper, one eviction policy, one registry, one way to clear them all.

A repeated call skips work it did before -- the planner's checked map forms and plans, an element op's checked
argument forms, the samplers' checks of a graph's arrays -- by looking its signature up in a :class:`Memo`. Every
memo is:

- **bounded, least recently used out first**: a hit moves its entry to the end, an insertion past ``size`` drops
  the oldest ones;
- **shared by threads without a lock**: a memo is only ever a shortcut, so an entry that another thread evicted
  between a lookup and its move to the end is no error, and the value in hand is still right (a lost insertion
  costs one recomputation);
- **registered** by its ``name``: :func:`clear_caches` empties every one, and ``tests/test_memo.py`` checks that
  each memo of the package is listed in ``docs/ARCHITECTURE.md``'s table.

:class:`TensorMemo` keys results on a tensor: kept while the tensor lives and is not changed in place (torch's
version counter), gone when the tensor goes. A memo never holds a tensor alive.

This module is at the bottom of the layers (beside the reduction table), so that any layer may keep a memo here.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, Iterator

import torch

#: every memo of the process, by name (``clear_caches`` empties them)
_REGISTRY: Dict[str, Memo] = {}


class Memo:
    """A bounded map from a call's signature to what was worked out for it, least recently used out first.

    ``get`` marks an entry as recently used, ``put`` inserts one and evicts past ``size``. Threads may share a
    memo with no lock (see the module's docstring); values must be immutable, or never changed once stored.
    """

    __slots__ = ("_entries", "name", "size")

    def __init__(self, name: str, size: int):
        """``name``: unique in the process, as :func:`memos` lists it (``"planner.plans"``); ``size``: at most
        this many entries are kept."""
        if name in _REGISTRY:
            raise ValueError(f"a memo named {name!r} exists already")
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.name = name
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        _REGISTRY[name] = self

    def get(self, key: Hashable) -> Any:
        """The value stored under ``key`` (now the most recently used), or None; None while torch.compile traces
        (a key may hold a symbolic size there, which has no hash: the traced call works it out)."""
        if torch.compiler.is_compiling():
            return None
        entries = self._entries
        value = entries.get(key)
        if value is not None:
            try:  # noqa: SIM105  (contextlib.suppress would cost a context manager per hit, on every call's path)
                entries.move_to_end(key)
            except KeyError:  # evicted by another thread since the lookup: the value in hand is still right
                pass
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` (not None) under ``key``, the least recently used entries out past ``size`` (nothing
        while torch.compile traces)."""
        if torch.compiler.is_compiling():
            return
        entries = self._entries
        entries[key] = value
        try:
            entries.move_to_end(key)
            while len(entries) > self.size:
                entries.popitem(last=False)
        except KeyError:  # moved or evicted by another thread meanwhile
            pass

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Hashable]:
        """The keys, least recently used first."""
        return iter(list(self._entries))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, size={self.size}, entries={len(self)})"


class TensorMemo(Memo):
    """A :class:`Memo` of results computed from one tensor each, kept while the tensor lives and is unchanged.

    ``once(t, what, compute)`` returns ``compute(t)``, computed on the first call for ``(t, what)`` and again only
    after ``t`` was changed in place (its version counter moved). The entry goes when ``t`` does (a weak
    reference). A write that bypasses the version counter -- through ``.data`` or a NumPy view -- is not seen:
    :func:`clear_caches` (or the memo's ``clear``) forgets every entry. Inference tensors have no version counter:
    their results are not kept.
    """

    __slots__ = ()

    def once(self, t: torch.Tensor, what: str, compute: Callable[[torch.Tensor], Any]) -> Any:
        """``compute(t)``, remembered while ``t`` lives unchanged (``what`` names the computation)."""
        key = (id(t), what)
        hit = self._entries.get(key)
        if hit is not None and hit[0]() is t and hit[1] == t._version:
            try:  # noqa: SIM105  (as in Memo.get)
                self._entries.move_to_end(key)
            except KeyError:  # evicted by another thread since the lookup
                pass
            return hit[2]
        result = compute(t)
        if t.is_inference():  # no version counter: not kept
            return result
        entries = self._entries

        def forget(_: object) -> None:
            entries.pop(key, None)

        self.put(key, (weakref.ref(t, forget), t._version, result))
        return result

    def forget(self, t: torch.Tensor, what: str) -> None:
        """Drop what ``once(t, what, ...)`` kept, if anything."""
        self._entries.pop((id(t), what), None)


def memos() -> Dict[str, Memo]:
    """Every memo made so far in this process, by name (a copy)."""
    return dict(_REGISTRY)


def clear_caches() -> None:
    """Forget everything scatterx remembers between calls; each result is worked out again on its next use.

    scatterx keeps, in bounded caches, what a repeated call would otherwise work out again: the planner's plans and
    checked index maps, the checked argument forms of the element ops, the checks and int64 copies of the graph
    arrays the pyg-lib drop-in's samplers read. Each entry depends only on what its key holds (shapes, dtypes,
    strides -- or a tensor, while it lives unchanged), so clearing is never needed for correct results, with one
    exception: a tensor written through a path torch's version counter does not see (``.data``, a NumPy view) while
    a sampler keeps its checks. Call this then, to free the memory, or to time a first call again. Compiled kernels
    are not caches in this sense and stay compiled.

    Returns:
        None.

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> import torch, scatterx
        >>> index = torch.tensor([0, 0, 1]).view(3, 1).expand(3, 2)
        >>> src = torch.ones(3, 2)
        >>> scatterx.scatter_reduce(torch.zeros(2, 2), 0, index, src, "sum")  # its plan is remembered
        tensor([[2., 2.],
                [1., 1.]])
        >>> scatterx.clear_caches()
        >>> scatterx.scatter_reduce(torch.zeros(2, 2), 0, index, src, "sum")  # planned again: the same result
        tensor([[2., 2.],
                [1., 1.]])
    """
    for memo in list(_REGISTRY.values()):
        memo.clear()
