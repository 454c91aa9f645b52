"""``csr_transpose`` on the CPU: a CSR structure read the other way, by a stable counting sort."""

from __future__ import annotations

from typing import Tuple

import torch

from .._common import segment_of_entries
from .segments import segments

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["csr_transpose"]


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ptr_t, index_t)``: the entries grouped by the row they read (a stable counting sort of ``index``, which
    validates it against ``num_rows``), each naming its segment. ``ptr`` was checked."""
    segment_of = segment_of_entries(ptr, index.numel())
    ptr_t, perm = segments(index, num_rows, sorted=False, size_name="num_rows")
    return ptr_t, segment_of[perm]
