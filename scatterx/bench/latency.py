"""First-call (JIT) latency of scatterx, measured in fresh Python processes: what a user waits before the first
result, for the calls users make.

Three first calls, each in a process of its own: a small one (6 x 16, the serial route), and a graph-sized one at
the bench shape, sorted and shuffled (the parallel routes a GNN's first call compiles). Each is timed twice:
"cold", on an empty Numba cache (a new ``NUMBA_CACHE_DIR``: every kernel the call needs is compiled), and "cached",
in a second process on the cache the first one left. Both times are of the first ``index_scatter_reduce`` call
alone (sum, float32); "call" is that call again in the same process, the part of the first that is not JIT.
Importing torch and scatterx is reported separately.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Dict

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, scatterx
t1 = time.perf_counter()
kind, edges, nodes, features = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
g = torch.Generator().manual_seed(0)
index = torch.randint(0, nodes, (edges,), generator=g)
if kind != "shuffled":
    index = index.sort().values
src = torch.randn(edges, features, generator=g)
sorted_ = kind != "shuffled"
t2 = time.perf_counter()
scatterx.index_scatter_reduce(0, index, src, "sum", sorted_, dim_size=nodes)
t3 = time.perf_counter()
scatterx.index_scatter_reduce(0, index, src, "sum", sorted_, dim_size=nodes)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t3 - t2, "call_s": t4 - t3}))
"""

#: (edges, nodes, features) of the small first call; the graph-sized ones take the bench's shape
SMALL = (6, 4, 16)


def _child(cache_dir: str, kind: str, edges: int, nodes: int, features: int) -> Dict[str, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(edges), str(nodes), str(features)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_call_latency(graph=(1_000_000, 100_000, 64)) -> Dict[str, float]:
    """``{"<call>_cold_s", "<call>_cached_s", "<call>_call_s"}`` for the calls ``small``, ``sorted`` and
    ``shuffled`` (the last two of ``graph = (edges, nodes, features)``), and ``import_s``; the small call's are
    also ``cold_s`` and ``cached_s``."""
    result: Dict[str, float] = {}
    for kind, (edges, nodes, features) in (("small", SMALL), ("sorted", graph), ("shuffled", graph)):
        with tempfile.TemporaryDirectory(prefix="scatterx-numba-cache-") as cache_dir:
            cold = _child(cache_dir, kind, edges, nodes, features)
            cached = _child(cache_dir, kind, edges, nodes, features)
        result[f"{kind}_cold_s"] = cold["first_call_s"]
        result[f"{kind}_cached_s"] = cached["first_call_s"]
        result[f"{kind}_call_s"] = cached["call_s"]
        result["import_s"] = cached["import_s"]
    if "small_cold_s" in result:
        result["cold_s"], result["cached_s"] = result["small_cold_s"], result["small_cached_s"]
    return result
