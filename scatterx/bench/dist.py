"""``scatterx bench-dist``: full-graph GraphSAGE and GCN over 1, 2, 4 ... processes (gloo), split by node ranges.

The arxiv-shaped graph of ``bench-gnn`` (built in code, the same seed on every rank) is split by contiguous node
ranges (``NodePartition.even``). A rank owns its nodes' features, labels and training mask, and the edges whose
*source* it owns, so a message ``x[source]`` is always local: each layer reduces the rank's messages by target
with ``scatterx.distributed.index_scatter_reduce`` (mean), which pre-aggregates here and pushes one row per
(rank, distinct remote target) to the owner. The exchange pattern is planned once (``sxd.plan``) and reused every
epoch. Parameters are replicated: the loss is the global mean over training nodes (each rank's sum over the
global count), gradients are summed over ranks (``all_reduce``), and every rank takes the same Adam step, so the
run is the single-process run computed in pieces, and its losses must equal the 1-process losses within 1e-4.

Reported per process count: epoch time (median of epochs 2..N, the slowest rank), bytes sent per epoch (all ranks,
data rows and control messages), the pre-aggregation lower bound for that partition (every rank's distinct remote
targets x features x bytes, per exchange), and the peak resident set per process.
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from dataclasses import dataclass, field
from typing import Dict, List

import torch
import torch.distributed as dist
import torch.nn.functional as F

try:
    import resource  # Unix only: each process's peak resident set
except ImportError:  # pragma: no cover
    resource = None

from .. import distributed as sxd
from .gnn import GnnConfig, make_arxiv_like
from .goals import evaluate, limit
from .goals import lines as goal_lines
from .harness import environment
from .measures import DistCase, max_rel_diff

#: the losses on several processes agree with the 1-process losses to this relative tolerance (``goals.json``)
LOSS_RTOL = limit("bench-dist", "loss_difference_from_one_process")


@dataclass
class DistResult:
    model: str
    procs: int
    epoch_s: List[float]
    loss: List[float]
    bytes_sent: int  # per epoch, all ranks
    control_bytes: int  # per epoch, all ranks (agreement messages)
    lower_bound: int  # per epoch, all ranks
    peak_rss_mib: List[float] = field(default_factory=list)  # per process

    @property
    def median_epoch_s(self) -> float:
        return statistics.median(self.epoch_s[1:] or self.epoch_s)


class DistSage(torch.nn.Module):
    """Two GraphSAGE (mean) layers, ``lin_l(mean of neighbours) + lin_r(self)``, as PyG's ``SAGEConv``."""

    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.l1, self.r1 = torch.nn.Linear(features, hidden), torch.nn.Linear(features, hidden, bias=False)
        self.l2, self.r2 = torch.nn.Linear(hidden, classes), torch.nn.Linear(hidden, classes, bias=False)

    def forward(self, x_local, source_local, plan, part):
        h = self._layer(x_local, source_local, plan, part, self.l1, self.r1).relu()
        return self._layer(h, source_local, plan, part, self.l2, self.r2)

    @staticmethod
    def _layer(x_local, source_local, plan, part, lin_l, lin_r):
        aggregated = sxd.index_scatter_reduce(plan, x_local.index_select(0, source_local), "mean", partition=part)
        return lin_l(aggregated) + lin_r(x_local)


class DistGcn(torch.nn.Module):
    """Two GCN layers as PyG's ``GCNConv`` (self-loops, symmetric normalisation ``d_i^-1/2 d_j^-1/2`` with
    in-degrees counted with the self-loop), the normalisation factorised into node scalings: a source scales its
    row by its own ``d^-1/2`` before the sum is pushed, the owner scales the sum (plus its self-loop) by its own --
    so no rank needs another's degree."""

    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.lin1, self.lin2 = torch.nn.Linear(features, hidden, bias=False), torch.nn.Linear(hidden, classes,
                                                                                          bias=False)
        self.bias1, self.bias2 = torch.nn.Parameter(torch.zeros(hidden)), torch.nn.Parameter(torch.zeros(classes))

    def forward(self, x_local, source_local, plan, part):
        scale = (plan.degree + 1).to(x_local.dtype).rsqrt().unsqueeze(1)  # owned nodes' d^-1/2
        h = self._layer(x_local, source_local, plan, part, scale, self.lin1, self.bias1).relu()
        return self._layer(h, source_local, plan, part, scale, self.lin2, self.bias2)

    @staticmethod
    def _layer(x_local, source_local, plan, part, scale, lin, bias):
        h = lin(x_local) * scale
        summed = sxd.index_scatter_reduce(plan, h.index_select(0, source_local), "sum", partition=part)
        return (summed + h) * scale + bias


MODELS = {"sage": DistSage, "gcn": DistGcn}


def train_rank(rank: int, procs: int, config: GnnConfig, epochs: int, model_name: str = "sage") -> Dict:
    """One rank's training run; returns its epoch times, the global losses and its counters."""
    torch.manual_seed(config.seed)
    data = make_arxiv_like(config)
    part = sxd.NodePartition.even(config.nodes, procs)
    start, stop = part.range(rank)
    source, target = data.edge_index
    mine = (source >= start) & (source < stop)
    source_local, target_ids = source[mine] - start, target[mine]
    x_local, y_local, train_local = data.x[start:stop], data.y[start:stop], data.train_mask[start:stop]
    train_count = int(data.train_mask.sum())
    plan = sxd.plan(target_ids, part)
    # the lower bound, from the edges themselves: one row per distinct target owned elsewhere, per exchange --
    # layer 1's and layer 2's pushes forward (features, hidden wide) and layer 2's pull backward (its input h
    # needs a gradient; layer 1's input x does not)
    remote = target_ids[part.owner_unchecked(target_ids) != rank].unique().numel()
    row_bytes = data.x.element_size()
    if model_name == "sage":  # aggregates before its linear layers: features, then hidden wide
        widths = config.features + config.hidden + config.hidden
    else:  # GCN aggregates after them: hidden, then classes wide; both need gradients back
        widths = 2 * (config.hidden + config.classes)
    lower_bound = remote * row_bytes * widths
    model = MODELS[model_name](config.features, config.hidden, config.classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    epoch_s, losses, sent, control = [], [], [], []
    for _ in range(epochs):
        sxd.STATS.reset()
        began = time.perf_counter()
        optimizer.zero_grad()
        out = model(x_local, source_local, plan, part)
        loss = F.cross_entropy(out[train_local], y_local[train_local], reduction="sum") / train_count
        loss.backward()
        total = loss.detach().clone()
        if procs > 1:
            for p in model.parameters():
                dist.all_reduce(p.grad)
            dist.all_reduce(total)
        optimizer.step()
        epoch_s.append(time.perf_counter() - began)
        losses.append(float(total))
        sent.append(sxd.STATS.bytes_sent)
        control.append(sxd.STATS.control_bytes)
    return dict(epoch_s=epoch_s, loss=losses, sent=sent[-1], control=control[-1], bound=lower_bound,
                peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if resource else float("nan"))


def _worker(rank, procs, port, config, epochs, model_name, queue):
    torch.set_num_threads(max(1, config.threads // procs))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=procs)
    try:
        result = train_rank(rank, procs, config, epochs, model_name)
        queue.put((rank, result))
    finally:
        dist.destroy_process_group()


def run_procs(procs: int, config: GnnConfig, epochs: int, model_name: str = "sage") -> DistResult:
    """Train on ``procs`` processes (spawned, gloo); the slowest rank's time per epoch."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, config.threads // procs)))
    mp.start_processes(_worker, args=(procs, port, config, epochs, model_name, queue), nprocs=procs, join=True,
                       start_method="spawn")
    results = dict(queue.get() for _ in range(procs))
    ranks = [results[r] for r in range(procs)]
    return DistResult(
        model=model_name,
        procs=procs,
        epoch_s=[max(r["epoch_s"][e] for r in ranks) for e in range(epochs)],
        loss=ranks[0]["loss"],
        bytes_sent=sum(r["sent"] for r in ranks),
        control_bytes=sum(r["control"] for r in ranks),
        lower_bound=sum(r["bound"] for r in ranks),
        peak_rss_mib=[r["peak_mib"] for r in ranks],
    )


def run(config: GnnConfig, procs_list: List[int], epochs: int, models=("sage",), log=print) -> List[DistResult]:
    results = []
    for model_name in models:
        for procs in procs_list:
            log(f"bench-dist: {model_name}, {procs} process(es)...")
            results.append(run_procs(procs, config, epochs, model_name))
    return results


def table(config: GnnConfig, results: List[DistResult]) -> str:
    lines = [
        f"scatterx bench-dist ({config.graph}): {config.nodes:,} nodes, {config.edges:,} edges, {config.features} "
        f"features, hidden {config.hidden}; 2 layers, full batch, split by node ranges; {config.threads} "
        "thread(s) in all",
        "epoch: median of epochs 2..N (slowest rank); bytes per epoch, all ranks: data rows + control messages; "
        "lower bound: distinct remote targets x width x bytes, per exchange",
        f"{'model':<6} {'procs':>5}  {'epoch ms':>9}  {'vs 1 proc':>9}  {'sent MB':>9}  {'control KB':>10}  "
        f"{'bound MB':>9}  {'sent/bound':>10}  {'peak MiB/proc':>14}  {'final loss':>10}  {'max rel diff':>12}",
    ]
    goals = []
    for r in results:
        base = next((b for b in results if b.model == r.model and b.procs == 1), None)
        ratio = (r.bytes_sent + r.control_bytes) / r.lower_bound if r.lower_bound else float("nan")
        rel = max_rel_diff(r.loss, base.loss) if base else float("nan")
        slow = r.median_epoch_s / base.median_epoch_s if base else float("nan")
        lines.append(
            f"{r.model:<6} {r.procs:>5}  {r.median_epoch_s * 1e3:>9.1f}  {slow:>8.2f}x  {r.bytes_sent / 1e6:>9.2f}  "
            f"{r.control_bytes / 1e3:>10.1f}  {r.lower_bound / 1e6:>9.2f}  {ratio:>10.3f}  "
            f"{max(r.peak_rss_mib):>14.0f}  {r.loss[-1]:>10.6f}  {rel:>12.1e}"
        )
        if r.procs > 1:
            goals += evaluate("bench-dist", DistCase(r, base), model=r.model, procs=r.procs)
    env = environment()
    return "\n".join(lines + ["goals:"] + goal_lines(goals) + ["environment: " + ", ".join(
        f"{k} {v}" for k, v in env.items())])


