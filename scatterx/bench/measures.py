"""How each goal's value is computed from a run: one function per ``measure`` key of ``goals.json`` (the limits
and names are in the file, not here).

A measure takes the subject its section evaluates -- a bench ``Report``; a grid cell (``GridRow``) or element
row (``ElementRow``); a ``GnnCase`` (the graph and one model's result); a ``MiniBatchCase`` (the mini-batch
run's config and one model's batches); a ``DistCase`` (a run on several
processes and the run on one) -- and the goal's args; it returns the value, None where the run did not measure
it, or ``SKIP`` where the goal does not concern this subject."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, NamedTuple, Optional

from .dropin import DROP_IN
from .harness import DROP_IN_MODE, find
from .harness import best as _best
from .ops.gather_segment_reduce import WEIGHTED, WEIGHTED_IMPLEMENTATIONS
from .ops.gatv2_logits import GATV2, GATV2_IMPLEMENTATIONS
from .ops.index_scatter_reduce import PYG_BACKWARD, SCATTERX, SCATTERX_SCATTER_REDUCE

#: a measure's answer where its goal does not concern the subject: no goal line
SKIP = object()
MEASURES: Dict[str, Callable[..., Any]] = {}
TORCH_SCATTER_REDUCE = "torch.scatter_reduce (expanded index)"


def measure(fn: Callable) -> Callable:
    """Register ``fn`` under its name, the ``measure`` key of the goals that use it."""
    MEASURES[fn.__name__] = fn
    return fn


def _ratio(slow, fast) -> Optional[float]:
    """``slow.ms / fast.ms`` of two rows, None where either is missing."""
    return None if slow is None or fast is None else slow.ms / fast.ms


# ------------------------------------------------------------------------------------- scatterx bench (a Report)
@measure
def time_per_probe(report, order: str, reduce: str):
    """index_scatter_reduce's time over the read probe's (``torch.sum(src)``, which reads src once)."""
    row = find(report.rows, reduce, order, SCATTERX.name)
    return None if row is None else row.probe_ratio


@measure
def speedup_over_fastest_torch(report, order: str, reduce: str):
    """The fastest torch-native path's time over index_scatter_reduce's, forward."""
    return _ratio(
        _best(report.rows, reduce, order, torch_native_only=True), find(report.rows, reduce, order, SCATTERX.name)
    )


@measure
def forward_backward_speedup_over_pyg(report, reduce: str, order: str):
    """PyG's path's forward+backward time (torch.scatter_reduce with an expanded index) over scatterx's."""
    rows = report.rows
    return _ratio(
        find(rows, reduce, order, PYG_BACKWARD.name, "forward+backward"),
        find(rows, reduce, order, SCATTERX.name, "forward+backward"),
    )


@measure
def scatter_reduce_time_over_index_scatter_reduce(report, reduce: str, order: str):
    """scatterx.scatter_reduce (the torch-compatible signature, expanded index) over index_scatter_reduce: the
    price of the compatible call."""
    return _ratio(
        find(report.rows, reduce, order, SCATTERX_SCATTER_REDUCE.name), find(report.rows, reduce, order, SCATTERX.name)
    )


@measure
def scatter_reduce_speedup_over_torch(report, reduce: str, order: str):
    """torch.scatter_reduce's time over scatterx.scatter_reduce's, same call."""
    return _ratio(
        find(report.rows, reduce, order, TORCH_SCATTER_REDUCE),
        find(report.rows, reduce, order, SCATTERX_SCATTER_REDUCE.name),
    )


@measure
def message_passing_speedup_over_pyg(report, op: str):
    """PyG's unfused path over scatterx's fused op, forward+backward (``op``: the weighted sum or GATv2's
    logits)."""
    ours, pyg = {WEIGHTED: WEIGHTED_IMPLEMENTATIONS, GATV2: GATV2_IMPLEMENTATIONS}[op]
    return _ratio(
        find(report.rows, op, "sorted", pyg.name, "forward+backward"),
        find(report.rows, op, "sorted", ours.name, "forward+backward"),
    )


@measure
def first_call_seconds(report, cache: str):
    """Seconds of the first small index_scatter_reduce call in a fresh process, on an empty or a filled Numba
    cache (``latency.py``)."""
    return report.latency.get({"empty": "cold_s", "filled": "cached_s"}[cache])


@measure
def bandwidth_over_probe(report, order: str, reduce: str, min_features: int):
    """index_scatter_reduce's bandwidth as a fraction of the read probe's (GPU; stated from ``min_features``)."""
    if report.config.features < min_features:
        return SKIP
    row = find(report.rows, reduce, order, SCATTERX.name)
    return None if row is None else 1.0 / row.probe_ratio


@measure
def speedup_over_fastest_peer(report, order: str, reduce: str):
    """The fastest peer's time (torch or torch_scatter) over index_scatter_reduce's, forward."""
    return _ratio(
        _best(report.rows, reduce, order, torch_native_only=False), find(report.rows, reduce, order, SCATTERX.name)
    )


@measure
def drop_in_speedup(report, function: str, order: str):
    """torch_scatter's time (or its torch-native equivalent's) over scatterx.torch_scatter's, same function."""
    ours = find(report.rows, function, order, DROP_IN, DROP_IN_MODE)
    if ours is None:
        return SKIP
    theirs = next(
        (
            r
            for r in report.rows
            if (r.reduce, r.order, r.mode) == (function, order, DROP_IN_MODE) and r.implementation != DROP_IN
        ),
        None,
    )
    return _ratio(theirs, ours)


# ------------------------------------------------------------------------------ scatterx bench --grid (its rows)
@measure
def grid_cell_speedup(row, edges_from: int = 0, edges_below: Optional[int] = None):
    """A grid cell's fastest torch path over index_scatter_reduce, for cells of ``edges_from`` edges up to
    ``edges_below``."""
    edges = row.cell.edges
    if edges < edges_from or (edges_below is not None and edges >= edges_below):
        return SKIP
    return row.speedup


@measure
def element_plan_speedup(row, op: str, peer: str, size: Optional[str] = None):
    """An element-plan row's peer time over scatterx's, for ``op`` against torch or onnxruntime (at the size
    named ``size``, "small" or "large"; every size when None)."""
    if row.op != op or (peer == "onnxruntime") != row.peer.startswith("onnxruntime"):
        return SKIP
    if size is not None and row.scale != size:
        return SKIP
    return row.speedup


# ------------------------------------------------------------------------------------------------ bench-export
@measure
def export_time_over_eager(row, case: str):
    """An exported case's onnxruntime time over eager scatterx's (``bench/export_onnx.py``)."""
    return row.ratio if row.case == case else SKIP


# --------------------------------------------------------------------------------------------------- bench-gnn
class GnnCase(NamedTuple):
    graph: str  # the built-in graph shape's name
    result: Any  # gnn.ModelResult


@measure
def epoch_speedup_over_pyg(case: GnnCase, graph: str, model: str):
    """PyG's default path's median epoch over scatterx.pyg's."""
    return case.result.speedup if (case.graph, case.result.model) == (graph, model) else SKIP


@measure
def peak_step_memory_over_pyg(case: GnnCase, graph: str, model: str):
    """scatterx's peak step memory over PyG's (where measured)."""
    ratio = case.result.memory_ratio()
    return ratio if (case.graph, case.result.model) == (graph, model) and ratio is not None else SKIP


@measure
def loss_difference_from_pyg(case: GnnCase):
    """The largest relative difference of the two paths' losses over the epochs."""
    return case.result.max_loss_rel_diff


# -------------------------------------------------------------------------------------- bench-gnn --mini-batch
class MiniBatchCase(NamedTuple):
    config: Any  # gnn.minibatch.MiniBatchConfig
    row: Any  # gnn.minibatch.MiniBatchRow: one model's batches


@measure
def minibatch_sampling_ms(case: MiniBatchCase, graph: str, model: str, batch_size: int):
    """The loader's median time per batch (ms) in ``model``'s run, for batches of ``batch_size`` seeds."""
    c = case.config
    return case.row.sample_ms if (c.graph, case.row.model, c.batch_size) == (graph, model, batch_size) else SKIP


@measure
def minibatch_sampling_share(case: MiniBatchCase, graph: str, model: str):
    """Sampling's share of a training step with the switch on."""
    return case.row.sample_share if (case.config.graph, case.row.model) == (graph, model) else SKIP


@measure
def minibatch_epoch_speedup(case: MiniBatchCase, graph: str, model: str):
    """A batch of PyG's default path over one with the switch on, sampling included in both."""
    return case.row.speedup if (case.config.graph, case.row.model) == (graph, model) else SKIP


@measure
def minibatch_loss_difference(case: MiniBatchCase):
    """The largest relative difference of the two paths' losses over the batches."""
    return case.row.max_loss_rel_diff


# -------------------------------------------------------------------------------------------------- bench-dist
class DistCase(NamedTuple):
    run: Any  # dist.DistResult from shards
    single: Any  # the same model in one process on the whole graph (switch on), or None
    one: Any  # the same model and partition method on 1 process from shards, or None
    even: Any  # the same model and process count on the even partition, or None
    graph: str = ""


@measure
def bytes_sent_over_lower_bound(case: DistCase):
    """All ranks' bytes sent (halo rows and agreement messages) over the lower bound of the halo exchange."""
    r = case.run
    if r.procs == 1:
        return SKIP
    return (r.bytes_sent + r.control_bytes) / r.lower_bound if r.lower_bound else math.nan


def max_rel_diff(a, b) -> float:
    """The largest relative difference of the values ``a`` from ``b`` (element by element)."""
    return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))


@measure
def loss_difference_from_one_process(case: DistCase):
    """The largest relative difference of the losses from the one-process run's on the whole graph."""
    return SKIP if case.single is None else max_rel_diff(case.run.loss, case.single.loss)


@measure
def epoch_time_over_single_process(case: DistCase, procs: int):
    """The median epoch (slowest rank) on ``procs`` processes over the one-process run's on the whole graph."""
    if case.single is None or case.run.procs != procs:
        return SKIP
    return case.run.median_epoch_s / case.single.median_epoch_s


@measure
def halo_bytes_over_even_partition(case: DistCase, procs: int, graph: str):
    """The halo exchange's lower bound of a METIS partition over the even partition's, at ``procs`` processes, on
    ``graph``."""
    r = case.run
    if r.method != "metis" or r.procs != procs or case.graph != graph or case.even is None:
        return SKIP
    return r.lower_bound / case.even.lower_bound if case.even.lower_bound else math.nan


@measure
def peak_memory_over_one_process(case: DistCase, procs: int):
    """The largest rank's peak resident set on ``procs`` processes over the 1-process run's (same partition
    method, both from shards)."""
    if case.one is None or case.run.procs != procs:
        return SKIP
    return max(case.run.peak_rss_mib) / max(case.one.peak_rss_mib)
