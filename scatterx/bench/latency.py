"""First-call (JIT) latency of scatterx, measured in fresh Python processes.

"cold": an empty Numba cache (a new ``NUMBA_CACHE_DIR``), so every kernel the call needs is compiled.
"cached": a second process on the cache the first one left.
The time is that of the first ``index_scatter_reduce`` call (sorted, sum, float32) alone; importing torch and
scatterx is reported separately.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Dict

_CHILD = r"""
import json, time
t0 = time.perf_counter()
import torch, scatterx
t1 = time.perf_counter()
index = torch.tensor([0, 0, 1, 3, 3, 3])
src = torch.randn(6, 16)
scatterx.index_scatter_reduce(0, index, src, "sum")
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t2 - t1}))
"""


def _child(cache_dir: str) -> Dict[str, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_call_latency() -> Dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="scatterx-numba-cache-") as cache_dir:
        cold = _child(cache_dir)
        cached = _child(cache_dir)
    return {"cold_s": cold["first_call_s"], "cached_s": cached["first_call_s"], "import_s": cached["import_s"]}
