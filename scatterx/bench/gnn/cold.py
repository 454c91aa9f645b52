"""``scatterx bench-gnn --cold``: the first training step of each model, each in a fresh process -- what a user
waits for before the first step is done.

Per model, three processes: with ``scatterx.pyg`` switched on and an empty Numba cache (every kernel the step needs
is compiled: the JIT cost), again on the cache that process left (loading it), and with PyG's default path. Each
builds the graph and the model first (not timed; nor are the imports), then times one training step (forward,
loss, backward, optimizer step) and a second one (the step without anything first-time in it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List

from ..text import Column, Columns

_CHILD = r"""
import json, sys, time
import torch
from scatterx.bench.gnn import full_graph as gnn
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
config = gnn.GnnConfig.for_graph(args["graph"], nodes=args["nodes"], edges=args["edges"],
                                 features=args["features"], hidden=args["hidden"], seed=args["seed"])
data = gnn.make_arxiv_like(config)
torch.manual_seed(config.seed)
model = gnn.build_model(args["model"], config)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
if args["path"] == "scatterx":
    import scatterx.pyg
    scatterx.pyg.enable()
times = []
for _ in range(2):
    start = time.perf_counter()
    gnn._step(model, optimizer, data)
    times.append(time.perf_counter() - start)
print(json.dumps({"first_s": times[0], "second_s": times[1]}))
"""


@dataclass
class FirstStep:
    model: str
    scatterx_cold_s: float  # first step, scatterx, empty Numba cache
    scatterx_cached_s: float  # first step, scatterx, the cache the cold process left
    pyg_s: float  # first step, PyG's default path
    scatterx_step_s: float  # second step, scatterx (nothing first-time in it)
    pyg_step_s: float


def _child(args: Dict, cache_dir: str) -> Dict[str, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(args)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(f"the first-step process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_steps(config, log: Callable = print) -> List[FirstStep]:
    """The first training step of each model of ``config`` (a ``gnn.GnnConfig``), in fresh processes."""
    rows = []
    for model in config.models:
        args = dict(
            graph=config.graph,
            nodes=config.nodes,
            edges=config.edges,
            features=config.features,
            hidden=config.hidden,
            seed=config.seed,
            threads=config.threads,
            model=model,
        )
        with tempfile.TemporaryDirectory(prefix="scatterx-numba-cache-") as cache_dir:
            cold = _child(dict(args, path="scatterx"), cache_dir)
            cached = _child(dict(args, path="scatterx"), cache_dir)
            pyg = _child(dict(args, path="pyg"), cache_dir)
        rows.append(
            FirstStep(model, cold["first_s"], cached["first_s"], pyg["first_s"], cached["second_s"], pyg["second_s"])
        )
        log(
            f"{model} first step: scatterx {cold['first_s']:.2f} s (empty cache), {cached['first_s']:.3f} s (cached); "
            f"PyG {pyg['first_s']:.3f} s"
        )
    return rows


def table(rows: List[FirstStep]) -> List[str]:
    lines = [
        "first training step, each in a fresh process (imports and model construction not included):",
        *_COLUMNS.head(rule=False),
    ]
    for r in rows:
        steps = f"{r.scatterx_step_s * 1e3:.1f}/{r.pyg_step_s * 1e3:.1f}"
        times = (f"{r.scatterx_cold_s:.2f}", f"{r.scatterx_cached_s:.3f}", f"{r.pyg_s:.3f}")
        lines.append(_COLUMNS.row(r.model, *times, steps))
    if len(rows) > 1:
        fields = ("scatterx_cold_s", "scatterx_cached_s", "pyg_s")
        cold, cached, pyg = (sum(getattr(r, f) for r in rows) for f in fields)
        lines.append(_COLUMNS.row("all", f"{cold:.2f}", f"{cached:.3f}", f"{pyg:.3f}", "").rstrip())
    return lines


_COLUMNS = Columns(
    Column("model", 9, left=True),
    Column("scatterx, empty cache s", 24),
    Column("scatterx, cached s", 19),
    Column("PyG s", 8),
    Column("2nd step sx/PyG ms", 19),
)


def as_dicts(rows: List[FirstStep]) -> List[Dict]:
    return [asdict(r) for r in rows]
