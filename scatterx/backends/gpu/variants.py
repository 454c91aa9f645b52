"""Every kernel variant the GPU backend can launch, collected from its op modules' ``variants()``.

Each op module that launches kernels builds its variants with the helpers its launches use (``_launch.Variant``);
the test suite records the variant of every launch it makes and fails if one is missing here (``tests/conftest.py``),
and ``scatterx gpu-report`` compiles them all for real GPUs (``scatterx/bench/gpu_static.py``).
"""

from __future__ import annotations

import importlib
from typing import List

from .._interface import op_modules
from ._launch import Variant


def all_variants() -> List[Variant]:
    """Every variant, each once, in a stable order."""
    seen, out = set(), []
    for name in op_modules(importlib.import_module(__package__).__path__):
        module = importlib.import_module(f"{__package__}.{name}")
        for variant in getattr(module, "variants", list)():
            if variant.key not in seen:
                seen.add(variant.key)
                out.append(variant)
    return out
