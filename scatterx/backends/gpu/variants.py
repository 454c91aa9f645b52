"""Every kernel variant the GPU backend can launch, collected from its modules' ``variants()``.

Each module builds its variants with the helpers its launches use (``_launch.Variant``); the test suite records the
variant of every launch it makes and fails if one is missing here (``tests/conftest.py``), and
``scatterx gpu-report`` compiles them all for real GPUs (``scatterx/bench/gpu_static.py``).
"""

from __future__ import annotations

import importlib
from typing import List

from ._launch import Variant

#: the modules that launch kernels (by name: the package's ``__init__`` rebinds most names to their functions)
MODULES = (
    "segments",
    "segment_reduce",
    "gather_segment_reduce",
    "index_scatter_reduce",
    "segment_arg_reduce",
    "segment_logsumexp",
    "segment_softmax",
    "sddmm",
    "gatv2_logits",
)


def all_variants() -> List[Variant]:
    """Every variant, each once, in a stable order."""
    seen, out = set(), []
    for name in MODULES:
        for variant in importlib.import_module(f"{__package__}.{name}").variants():
            if variant.key not in seen:
                seen.add(variant.key)
                out.append(variant)
    return out
