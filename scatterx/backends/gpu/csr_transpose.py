"""``csr_transpose`` on the GPU: a CSR structure read the other way, by a stable sort."""

from __future__ import annotations

from typing import Tuple

import torch

from .._common import segment_of_entries
from .segments import segments

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["csr_transpose"]


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """As ``backends.cpu.csr_transpose`` (``index`` asserted against ``num_rows`` on the device)."""
    segment_of = segment_of_entries(ptr, index.numel())
    ptr_t, perm = segments(index, num_rows, sorted=False, size_name="num_rows")
    assert perm is not None  # an unsorted index always comes back with its permutation
    return ptr_t.to(torch.int64), segment_of[perm.long()]
