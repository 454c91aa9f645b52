"""The segment of each entry of CSR offsets (``backends._common.segment_of_entries``), as the ops' Python runs it:
directly in eager calls, and as one op, ``scatterx::segment_of_entries``, when ``torch.compile`` traces it.

Traced, torch's ``repeat_interleave`` -- what the helper is -- is decomposed by inductor into a binary search of
the offsets for each entry (``searchsorted``), several times slower on the CPU than the one pass torch's own kernel
makes; the op keeps that pass (docs/decisions/pyg-integration.md). Its fake is the ``entries`` int64 ids."""

from __future__ import annotations

import torch
from torch import Tensor

from ..backends._common import segment_of_entries as _segment_of_entries
from ._library import define_op


def _fake(ptr: Tensor, entries: int) -> Tensor:
    return ptr.new_empty(entries, dtype=torch.int64)


segment_of_entries_op = define_op("segment_of_entries", _segment_of_entries, _fake)


def segment_of_entries(ptr: Tensor, entries: int) -> Tensor:
    """The segment of each of the ``entries`` positions of the CSR offsets ``ptr`` (int64)."""
    if torch.compiler.is_compiling():
        return segment_of_entries_op(ptr, entries)
    return _segment_of_entries(ptr, entries)
