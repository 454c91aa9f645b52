"""``scatterx bench-dist``: PyG models trained full-graph over 1, 2, 4 ... processes (gloo) from saved shards,
against the same model trained in one process with the switch on.

For each partition method (``even``: ranges of the given ids; ``metis``: a locality partition) and process count,
the built-in graph is partitioned and saved as shard files (``scatterx.distributed.save_shards``, one file per
rank) in a temporary directory; each rank then does what a user's script does -- ``load_shard``, build the PyG
model from one seed, ``replicate`` it, train with the switch on, passing the ``ShardedGraph`` as ``edge_index``.
The reference is the same model on the whole graph in one process (``bench-gnn``'s scatterx path).

Reported per model, partition and process count: epoch time (median of epochs 2..N, the slowest rank); bytes
sent per epoch by all ranks (the halo exchanges, forward and backward), against the lower bound of that exchange
(each layer fetches one row per halo node of the width it aggregates, and pushes its gradient back where the input
needs one: ``LOWER_BOUND_WIDTHS``), and the agreement messages; the bytes of the gradient sum (parameters);
each rank's peak resident set and its resident set before it loaded its shard (torch, PyG and scatterx
imported); the largest relative difference of the losses from the single-process run.
"""

from __future__ import annotations

import os
import socket
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ... import distributed as sxd
from ...distributed.partition_graph import METHODS as PARTITION_METHODS
from ..goals import evaluate, limit
from ..harness import environment
from ..measures import DistCase, max_rel_diff
from ..text import Column, Columns, tail
from .full_graph import GnnConfig, build_model, make_arxiv_like

#: the losses on several processes agree with the single-process losses to this relative tolerance (``goals.json``)
LOSS_RTOL = limit("bench-dist", "loss_difference_from_one_process")
MODELS = ("gcn", "sage", "gin", "gat", "gatv2", "graphconv")
METHODS = PARTITION_METHODS  # (the CLI's choices)


def lower_bound_widths(model: str, config: GnnConfig) -> int:
    """Per halo node and epoch, the values a two-layer ``model`` must move at least: each layer's aggregated
    width forward, and again backward where that input needs a gradient (layer 1's input ``x`` does not)."""
    f, h, c = config.features, config.hidden, config.classes
    if model in ("gcn", "gat", "gatv2"):  # aggregate after a linear layer: hidden, then classes wide, with gradients
        return 2 * (h + c)
    return f + 2 * h  # sage, gin, graphconv: x (no gradient), then h (with)


@dataclass
class DistResult:
    model: str
    method: str  # "even", "metis", or "single" (the one-process run on the whole graph)
    procs: int
    epoch_s: List[float]
    loss: List[float]
    bytes_sent: int  # per epoch, all ranks: halo rows
    control_bytes: int  # per epoch, all ranks: agreement messages
    grad_bytes: int  # per epoch, all ranks: the gradient sum's payload
    lower_bound: int  # per epoch, all ranks
    halo: int  # halo nodes, all ranks
    edge_cut: float  # the fraction of edges between ranks
    peak_rss_mib: List[float] = field(default_factory=list)  # per process
    base_rss_mib: List[float] = field(default_factory=list)  # per process, before the data

    @property
    def median_epoch_s(self) -> float:
        return statistics.median(self.epoch_s[1:] or self.epoch_s)


def _status_mib(field: str) -> float:
    """A ``/proc/self/status`` size in MiB (Linux), NaN elsewhere. ``VmHWM``, the peak resident set of this
    process's memory, unlike ``getrusage``'s ``ru_maxrss``, which keeps the parent's peak across a spawn's exec."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _rss_mib() -> float:
    return _status_mib("VmRSS")


def _peak_mib() -> float:
    return _status_mib("VmHWM")


def _train(model, optimizer, x, edge_index, y, mask, share, epochs, sharded):
    import scatterx.pyg as sxpyg

    epoch_s, losses, sent, control = [], [], [], []
    with sxpyg.enabled():
        for _ in range(epochs):
            sxd.STATS.reset()
            began = time.perf_counter()
            optimizer.zero_grad()
            out = model(x, edge_index)
            loss = F.cross_entropy(out[mask], y[mask])
            loss.backward()
            optimizer.step()
            epoch_s.append(time.perf_counter() - began)
            total = loss.detach() * share
            if sharded and dist.is_initialized():
                dist.all_reduce(total)
            losses.append(float(total))
            sent.append(sxd.STATS.bytes_sent)
            control.append(sxd.STATS.control_bytes)
    grads = sum(p.numel() * p.element_size() for p in model.parameters()) if sharded and dist.is_initialized() else 0
    return epoch_s, losses, sent[-1], control[-1], grads


def train_rank(
    rank: int, procs: int, shard_dir: Optional[str], config: GnnConfig, epochs: int, model_name: str
) -> Dict:
    """One rank's run from its shard (what a user's training script does); ``shard_dir`` None: the one-process
    reference on the whole graph."""
    base = _rss_mib()
    edge_index: Union[torch.Tensor, sxd.ShardedGraph]  # the whole graph's, or this rank's share
    if shard_dir is None:
        data = make_arxiv_like(config)
        x, edge_index, y, mask, share = data.x, data.edge_index, data.y, data.train_mask, 1.0
    else:
        shard = sxd.load_shard(shard_dir)
        assert shard.y is not None  # (the shards are saved with the labels, below)
        x, edge_index, y, mask, share = shard.x, shard.edge_index, shard.y, shard.masks["train_mask"], shard.train_share
    torch.manual_seed(config.seed)
    model = build_model(model_name, config)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if shard_dir is not None:
        sxd.replicate(model, optimizer, weight=share)
    epoch_s, losses, sent, control, grads = _train(
        model, optimizer, x, edge_index, y, mask, share, epochs, shard_dir is not None
    )
    return dict(
        epoch_s=epoch_s, loss=losses, sent=sent, control=control, grads=grads, peak_mib=_peak_mib(), base_mib=base
    )


def _worker(rank, procs, port, shard_dir, config, epochs, model_name, queue):
    torch.set_num_threads(max(1, config.threads // procs))
    if shard_dir is not None:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=procs)
    try:
        queue.put((rank, train_rank(rank, procs, shard_dir, config, epochs, model_name)))
    finally:
        if shard_dir is not None:
            dist.destroy_process_group()


def run_procs(procs: int, shard_dir, meta, config: GnnConfig, epochs: int, model_name: str) -> DistResult:
    """Train on ``procs`` processes (gloo) from the shards in ``shard_dir`` (None: the one-process run on the
    whole graph); the slowest rank's time per epoch. The processes are forked from a forkserver that imported
    torch and scatterx once (a process with no threads of its own, so forking it is safe): each starts quickly,
    with no memory of the parent's graph."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        # not PyG: with torch 2.4 and PyG 2.5, processes forked from a server that had imported it hung in their
        # first collectives; each rank imports it itself
        ctx.set_forkserver_preload(["torch", "torch.distributed", "scatterx", "scatterx.distributed"])
    queue = ctx.SimpleQueue()
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, config.threads // procs)))
    mp.start_processes(
        _worker,
        args=(procs, port, shard_dir, config, epochs, model_name, queue),
        nprocs=procs,
        join=True,
        start_method=method,
    )
    results = dict(queue.get() for _ in range(procs))
    ranks = [results[r] for r in range(procs)]
    halo = sum(meta["halo"]) if meta else 0
    row_bytes = torch.finfo(torch.float32).bits // 8
    return DistResult(
        model=model_name,
        method=meta["method"] if meta else "single",
        procs=procs,
        epoch_s=[max(r["epoch_s"][e] for r in ranks) for e in range(epochs)],
        loss=ranks[0]["loss"],
        bytes_sent=sum(r["sent"] for r in ranks),
        control_bytes=sum(r["control"] for r in ranks),
        grad_bytes=sum(r["grads"] for r in ranks),
        lower_bound=halo * row_bytes * lower_bound_widths(model_name, config),
        halo=halo,
        edge_cut=meta["edge_cut"] / meta["num_edges"] if meta and meta["num_edges"] else 0.0,
        peak_rss_mib=[r["peak_mib"] for r in ranks],
        base_rss_mib=[r["base_mib"] for r in ranks],
    )


def run(
    config: GnnConfig,
    procs_list: Sequence[int],
    epochs: int,
    models: Sequence[str] = ("sage",),
    methods: Sequence[str] = ("even", "metis"),
    log=print,
) -> List[DistResult]:
    """Partition and save the shards once per method and process count, then train every model on them."""
    data = make_arxiv_like(config)
    results = []
    with tempfile.TemporaryDirectory(prefix="scatterx-shards-") as tmp:
        shards = {}
        for method in methods:
            for procs in procs_list:
                began = time.perf_counter()
                gp = sxd.partition_graph(data.edge_index, config.nodes, procs, method, seed=config.seed)
                path = os.path.join(tmp, f"{method}-{procs}")
                meta = sxd.save_shards(
                    path,
                    gp,
                    data.edge_index,
                    x=data.x,
                    y=data.y,
                    masks={"train_mask": data.train_mask},
                    name=config.graph,
                )
                log(
                    f"bench-dist: {method} partition for {procs} process(es): edge cut "
                    f"{meta['edge_cut'] / max(meta['num_edges'], 1):.1%}, halo {sum(meta['halo']):,} nodes "
                    f"({time.perf_counter() - began:.1f} s)"
                )
                shards[method, procs] = (path, meta)
        del data
        for model_name in models:
            log(f"bench-dist: {model_name}, one process on the whole graph...")
            results.append(run_procs(1, None, None, config, epochs, model_name))
            for method in methods:
                for procs in procs_list:
                    log(f"bench-dist: {model_name}, {method}, {procs} process(es)...")
                    path, meta = shards[method, procs]
                    results.append(run_procs(procs, path, meta, config, epochs, model_name))
    return results


def table(config: GnnConfig, results: List[DistResult]) -> str:
    lines = [
        f"scatterx bench-dist ({config.graph}): {config.nodes:,} nodes, {config.edges:,} edges, {config.features} "
        f"features, hidden {config.hidden}; PyG models (2 layers, switch on), full batch, from saved shards; "
        f"{config.threads} thread(s) in all",
        "epoch: median of epochs 2..N (slowest rank); sent: halo rows, all ranks, per epoch; bound: halo nodes x "
        "the widths each layer aggregates (and their gradients) x 4 B; peak: the largest rank's peak resident set, "
        "and above what it held before loading its data",
        *_COLUMNS.head(rule=False),
    ]
    goals = []
    for r in results:
        single = next((b for b in results if b.model == r.model and b.method == "single"), None)
        ratio = (r.bytes_sent + r.control_bytes) / r.lower_bound if r.lower_bound else float("nan")
        rel = max_rel_diff(r.loss, single.loss) if single else float("nan")
        slow = r.median_epoch_s / single.median_epoch_s if single else float("nan")
        peak = max(r.peak_rss_mib)
        above = max(p - b for p, b in zip(r.peak_rss_mib, r.base_rss_mib))
        lines.append(
            _COLUMNS.row(
                r.model,
                r.method,
                r.procs,
                f"{r.median_epoch_s * 1e3:.1f}",
                f"{slow:.2f}x",
                f"{r.edge_cut:.1%}",
                f"{r.halo:,}",
                f"{r.bytes_sent / 1e6:.2f}",
                f"{r.lower_bound / 1e6:.2f}",
                f"{ratio:.3f}",
                f"{r.control_bytes / 1e3:.1f}",
                f"{r.grad_bytes / 1e6:.2f}",
                f"{peak:.0f}",
                f"{above:.0f}",
                f"{rel:.1e}",
            )
        )
        if r.method != "single" and single is not None:
            one = next((b for b in results if b.model == r.model and b.method == r.method and b.procs == 1), None)
            even = next((b for b in results if b.model == r.model and b.method == "even" and b.procs == r.procs), None)
            goals += evaluate(
                "bench-dist",
                DistCase(r, single, one, even, config.graph),
                model=r.model,
                method=r.method,
                procs=r.procs,
            )
    return "\n".join(lines + tail(goals, environment()))


_COLUMNS = Columns(
    Column("model", 9, left=True),
    Column("partition", 9, left=True),
    Column("procs", 5),
    Column("epoch ms", 10),
    Column("vs 1 proc", 10),
    Column("cut", 7),
    Column("halo", 10),
    Column("sent MB", 10),
    Column("bound MB", 10),
    Column("sent/bound", 11),
    Column("control KB", 11),
    Column("grads MB", 9),
    Column("peak MiB", 9),
    Column("above base", 11),
    Column("max rel diff", 13),
)
