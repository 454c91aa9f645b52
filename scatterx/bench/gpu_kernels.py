"""The GPU kernel-time table of ``scatterx bench --device cuda``: each sorted and unsorted reduction, the weighted
gather, the softmax and their backward passes, beside torch's own CUDA kernels for the same result, at the bench's
graph, the arxiv-sized one and a uniform-degree graph of the bench's size.

Two times per call, for scatterx and for the fastest torch path:

- ``kernel_us``: the device time of the call's kernels (the profiler's sum over ``repeat`` back-to-back calls,
  divided by ``repeat``): what the GPU spends, with no host time in it;
- ``call_us``: the wall time of a call among back-to-back calls (the queue drained at both ends): what a training
  loop waits, host time included where the host is the slower side.

``peak_share`` is the bandwidth model's bytes (``gpu_model.py``: inputs read once, outputs written once) over the
kernel time, as a share of the GPU's peak DRAM bandwidth. The rows go to ``kernels.json`` (a list of objects:
``device``, ``case``, ``shape``, ``kernel_us``, ``call_us``, ``peak_share``, ``torch_kernel_us``,
``torch_call_us``, ``torch``), the goals to ``goals.json``'s ``gpu`` entries.

``host_cost`` is the Python a call costs between the public function and its kernels, measured on the CPU with the
launches stubbed out (so that it runs anywhere and CI prints it); on a GPU the table's ``host`` row measures the
same as call time minus kernel time at a size where the host is the slower side.

Why this module is long: every row of the table needs its torch peer beside it (the same result by torch's own
CUDA kernels, its backward included), and the peers, the timing, the sweep of tile shapes and the host-cost child
are one measurement that reads best in one place; split, each piece would import the others.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .. import ops
from .files import write_json
from .gpu_model import GPUS
from .graphs import target_index
from .text import Column, Columns

#: (name, edges, nodes, features, degrees): the shapes of the table
SHAPES = (
    ("bench", 1_000_000, 100_000, 64, "powerlaw"),
    ("bench-uniform", 1_000_000, 100_000, 64, "uniform"),
    ("arxiv", 1_166_243, 169_343, 128, "powerlaw"),
)
#: the goals each row is held to (also in goals.json, which the report reads): a share of peak DRAM bandwidth per
#: case, scatterx's kernel time against torch's fastest, its call time against torch's
PEAK_GOALS = {
    "sum sorted": 0.70,
    "mean sorted": 0.70,
    "amax sorted": 0.70,
    "sum unsorted": 0.50,
    "mean unsorted": 0.50,
    "amax unsorted": 0.40,
    "weighted gather sum": 0.60,
    "softmax": 0.60,
}
KERNEL_SPEEDUP_GOAL = 1.5
CALL_SPEEDUP_GOAL = 1.0
#: the power-law graph's kernel time within this factor of the uniform one's of the same size
POWERLAW_GOAL = 1.2


@dataclasses.dataclass
class Problem:
    """One graph on one device: sorted and shuffled targets, messages, a gather list with per-edge weights."""

    name: str
    nodes: int
    index: torch.Tensor
    shuffled: torch.Tensor
    src: torch.Tensor
    rows: torch.Tensor
    weight: torch.Tensor
    ptr: torch.Tensor
    grad: torch.Tensor


def problem(name: str, edges: int, nodes: int, features: int, degrees: str, device) -> Problem:
    g = torch.Generator().manual_seed(0)
    index = target_index(edges, nodes, degrees, g)
    order = torch.randperm(edges, generator=g)
    src = torch.randn(edges, features, generator=g)
    rows = torch.randint(0, edges, (edges,), generator=g)
    weight = torch.rand(edges, 1, generator=g)
    ptr = torch.zeros(nodes + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index, minlength=nodes).cumsum(0)
    grad = torch.randn(nodes, features, generator=g)
    return Problem(
        name,
        nodes,
        index.to(device),
        index[order].to(device),
        src.to(device),
        rows.to(device),
        weight.to(device),
        ptr.to(device),
        grad.to(device),
    )


def _expanded(index: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return index.view(-1, 1).expand_as(like)


def _torch_reduce(p: Problem, reduce: str, sorted_: bool) -> Dict[str, Callable]:
    """torch's ways to the same result as ``index_scatter_reduce`` (the fastest is the peer)."""
    index = p.index if sorted_ else p.shuffled
    shape = (p.nodes, p.src.size(1))
    ways = {
        f"scatter_reduce {reduce}": lambda: p.src.new_zeros(shape).scatter_reduce_(
            0, _expanded(index, p.src), p.src, reduce, include_self=False
        )
    }
    if reduce == "sum":
        ways["index_add_"] = lambda: p.src.new_zeros(shape).index_add_(0, index, p.src)
    if sorted_:
        lengths = p.ptr.diff()
        empty = (lengths == 0).view(-1, 1)
        torch_name = {"sum": "sum", "mean": "mean", "amax": "max"}[reduce]
        # (empty segments made 0, as index_scatter_reduce gives them)
        ways[f"segment_reduce {torch_name}"] = lambda: torch.segment_reduce(
            p.src, torch_name, lengths=lengths, unsafe=True
        ).masked_fill_(empty, 0)
    return ways


def _pyg_softmax(p: Problem) -> torch.Tensor:
    """PyG's softmax formula (``torch_geometric.utils.softmax`` without torch_scatter), in torch ops."""
    shape = (p.nodes, p.src.size(1))
    top = p.src.new_zeros(shape).scatter_reduce_(0, _expanded(p.index, p.src), p.src, "amax", include_self=False)
    e = (p.src - top.index_select(0, p.index)).exp()
    total = p.src.new_zeros(shape).index_add_(0, p.index, e)
    return e / (total.index_select(0, p.index) + 1e-16)


def cases(p: Problem) -> List[Tuple[str, Callable, Dict[str, Callable], int]]:
    """``(case, scatterx call, torch's calls, bytes moved)`` at problem ``p`` (bytes: the bandwidth model's)."""
    e, n, f = p.src.size(0), p.nodes, p.src.size(1)
    rows_bytes, index_bytes = e * f * 4, e * 8
    out_bytes = n * f * 4
    out = []
    for reduce in ("sum", "mean", "amax"):
        for sorted_ in (True, False):
            index = p.index if sorted_ else p.shuffled
            call = _reduce_call(index, p.src, reduce, sorted_, n)
            moved = rows_bytes + index_bytes + out_bytes * (1 if sorted_ or reduce == "amax" else 2)
            out.append(
                (f"{reduce} {'sorted' if sorted_ else 'unsorted'}", call, _torch_reduce(p, reduce, sorted_), moved)
            )
    out.append(
        (
            "weighted gather sum",
            lambda: ops.gather_segment_reduce(p.src.view(e, 1, f), p.ptr, p.rows, "sum", weight=p.weight),
            {
                "index_select * weight, index_add_": lambda: p.src.new_zeros((n, f)).index_add_(
                    0, p.index, p.src.index_select(0, p.rows) * p.weight
                )
            },
            rows_bytes + 2 * index_bytes + e * 4 + out_bytes,
        )
    )
    out.append(
        (
            "softmax",
            lambda: ops.segment_softmax(p.src, p.index, num_segments=n, sorted=True),
            {"PyG's formula": lambda: _pyg_softmax(p)},
            2 * rows_bytes + index_bytes,
        )
    )
    # the backward passes, as a training step runs them (autograd, from the saved forward): amax's gradient split
    # among ties, and softmax's
    out.append(
        (
            "amax sorted backward",
            _backward(lambda s: ops.index_scatter_reduce(0, p.index, s, "amax", True, dim_size=n), p.src, p.grad),
            {"torch autograd of scatter_reduce amax": _torch_amax_backward(p)},
            2 * rows_bytes + index_bytes + 2 * out_bytes,
        )
    )
    out.append(
        (
            "softmax backward",
            _backward(lambda s: ops.segment_softmax(s, p.index, num_segments=n, sorted=True), p.src, p.src),
            {"PyG's formula, autograd": _torch_softmax_backward(p)},
            3 * rows_bytes + index_bytes,
        )
    )
    return out


def _backward(forward: Callable, src: torch.Tensor, grad: torch.Tensor) -> Callable:
    leaf = src.detach().requires_grad_()
    result = forward(leaf)
    return lambda: torch.autograd.grad(result, leaf, grad, retain_graph=True)


def _reduce_call(index, src, reduce, sorted_, n):
    return lambda: ops.index_scatter_reduce(0, index, src, reduce, sorted_, dim_size=n)


def _torch_amax_backward(p: Problem) -> Callable:
    src = p.src.detach().requires_grad_()
    shape = (p.nodes, p.src.size(1))
    out = src.new_zeros(shape).scatter_reduce(0, _expanded(p.index, src), src, "amax", include_self=False)
    return lambda: torch.autograd.grad(out, src, p.grad, retain_graph=True)


def _torch_softmax_backward(p: Problem) -> Callable:
    src = p.src.detach().requires_grad_()
    q = dataclasses.replace(p, src=src)
    out = _pyg_softmax(q)
    return lambda: torch.autograd.grad(out, src, p.src, retain_graph=True)


# ----------------------------------------------------------------------------------------------------- timing
def kernel_seconds(fn: Callable, repeat: int, device: str) -> float:
    """The device time of one call: the profiler's sum of the kernels of ``repeat`` back-to-back calls, over
    ``repeat`` (on the CPU, where there is no device, the wall time)."""
    if device != "cuda":
        return call_seconds(fn, repeat, device)
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeat):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA"):
            took = getattr(event, "self_device_time_total", None)  # (self_cuda_time_total before torch 2.4)
            total_us += float(took if took is not None else getattr(event, "self_cuda_time_total", 0))
    return total_us / repeat / 1e6


def call_seconds(fn: Callable, repeat: int, device: str) -> float:
    """The wall time of one call among ``repeat`` back-to-back ones, the queue drained before and after."""
    fn()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - start) / repeat


def peak_bandwidth(device: str) -> Optional[float]:
    """The peak DRAM bandwidth (bytes/s) of the GPU, where ``gpu_model.GPUS`` knows it by name."""
    if device != "cuda":
        return None
    name = torch.cuda.get_device_name()
    return next((b for gpu, b in GPUS.items() if gpu in name), None)


def run(device: str = "cuda", repeat: int = 20, shapes=SHAPES, log=print) -> List[dict]:
    """Every case at every shape: the table's rows (``kernels.json``)."""
    peak = peak_bandwidth(device)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    rows = []
    for shape in shapes:
        name_, edges, nodes, features, degrees = shape
        p = problem(name_, edges, nodes, features, degrees, device)
        for case, call, peers, moved in cases(p):
            log(f"  {shape[0]}: {case}")
            kernel, wall = kernel_seconds(call, repeat, device), call_seconds(call, repeat, device)
            timed = {
                way: (kernel_seconds(fn, repeat, device), call_seconds(fn, repeat, device)) for way, fn in peers.items()
            }
            fastest = min(timed, key=lambda way: timed[way][0])
            rows.append(
                dict(
                    device=name,
                    case=case,
                    shape=f"{shape[0]}: {shape[1]:,} x {shape[3]} -> {shape[2]:,}",
                    kernel_us=round(kernel * 1e6, 1),
                    call_us=round(wall * 1e6, 1),
                    peak_share=round(moved / kernel / peak, 3) if peak and kernel > 0 else None,
                    torch=fastest,
                    torch_kernel_us=round(timed[fastest][0] * 1e6, 1),
                    torch_call_us=round(min(t[1] for t in timed.values()) * 1e6, 1),
                )
            )
        del p
    rows.append(host_row(device, repeat))
    return rows


def host_row(device: str, repeat: int) -> dict:
    """The host's share of a small sorted sum (1,000 x 16 -> 100): call time minus kernel time."""
    p = problem("small", 1_000, 100, 16, "powerlaw", device)
    call = _reduce_call(p.index, p.src, "sum", True, p.nodes)
    kernel, wall = kernel_seconds(call, repeat * 5, device), call_seconds(call, repeat * 5, device)
    return dict(
        device=torch.cuda.get_device_name() if device == "cuda" else "cpu",
        case="host: sorted sum, call minus kernel",
        shape="small: 1,000 x 16 -> 100",
        kernel_us=round(kernel * 1e6, 1),
        call_us=round(wall * 1e6, 1),
        peak_share=None,
        torch=None,
        torch_kernel_us=None,
        torch_call_us=None,
        host_us=round(max(wall - kernel, 0.0) * 1e6, 1),
    )


def goals(rows: List[dict]) -> List[Tuple[str, float, str, bool]]:
    """``(what, measured, goal, met)`` for every goal the rows can be held to."""
    out = []
    for r in rows:
        if r.get("torch") is None:
            continue
        label = f"{r['case']} at {r['shape'].split(':')[0]}"
        if r["case"] in PEAK_GOALS and r["peak_share"] is not None and "uniform" not in r["shape"]:
            goal = PEAK_GOALS[r["case"]]
            out.append(
                (f"{label}: share of peak bandwidth", r["peak_share"], f">= {goal:.2f}", r["peak_share"] >= goal)
            )
        speedup = r["torch_kernel_us"] / r["kernel_us"] if r["kernel_us"] else 0.0
        out.append(
            (
                f"{label}: torch's kernel time / ours",
                round(speedup, 2),
                f">= {KERNEL_SPEEDUP_GOAL}",
                speedup >= KERNEL_SPEEDUP_GOAL,
            )
        )
        speedup = r["torch_call_us"] / r["call_us"] if r["call_us"] else 0.0
        out.append(
            (
                f"{label}: torch's call time / ours",
                round(speedup, 2),
                f">= {CALL_SPEEDUP_GOAL}",
                speedup >= CALL_SPEEDUP_GOAL,
            )
        )
    by = {(r["case"], r["shape"].split(":")[0]): r for r in rows}
    for (case, shape), r in by.items():
        uniform = by.get((case, f"{shape}-uniform"))
        if uniform and uniform["kernel_us"]:
            ratio = r["kernel_us"] / uniform["kernel_us"]
            out.append(
                (
                    f"{case}: power-law / uniform kernel time",
                    round(ratio, 2),
                    f"<= {POWERLAW_GOAL}",
                    ratio <= POWERLAW_GOAL,
                )
            )
    return out


def table(rows: List[dict]) -> str:
    lines = [
        f"GPU kernels ({rows[0]['device'] if rows else '-'}): device time of the kernels (profiler) and call time, "
        "against torch's fastest path for the same result",
        _COLUMNS.header(),
    ]
    for r in rows:
        peak = f"{r['peak_share']:.0%}" if r.get("peak_share") is not None else "-"
        torch_us = ["-" if r[k] is None else r[k] for k in ("torch_kernel_us", "torch_call_us")]
        torch_name = (r.get("torch") or "") + (f" (host {r['host_us']} µs)" if "host_us" in r else "")
        lines.append(
            _COLUMNS.row(r["case"][:24], r["shape"][:34], r["kernel_us"], r["call_us"], peak, *torch_us, torch_name)
        )
    lines.append("goals:")
    for what, value, goal, met in goals(rows):
        lines.append(f"  {what:70} {value:>8} ({goal})  {'ok' if met else 'MISSED'}")
    return "\n".join(lines)


_COLUMNS = Columns(
    Column("case", 24, left=True),
    Column("shape", 34, left=True),
    Column("kernel µs", 10),
    Column("call µs", 9),
    Column("peak", 6),
    Column("torch kernel", 13),
    Column("torch call", 11),
    Column("torch", 0, left=True),
)


def write(rows: List[dict], out_dir: str, name: str = "kernels.json") -> pathlib.Path:
    return write_json(out_dir, name, rows)


# ------------------------------------------------------------------------------------ the launch shape, swept
#: the tiles (elements) and programs per multiprocessor the sweep tries (``routes.Tuning``'s two fields)
SWEEP_ELEMENTS = (512, 1024, 2048)
SWEEP_PROGRAMS = (2, 4, 8, 16, 32)


def sweep(device: str = "cuda", repeat: int = 20, log=print) -> List[dict]:
    """The sorted sum, mean and amax at the bench's two shapes (power-law and uniform degrees) for every tile size
    and programs per multiprocessor of ``SWEEP_*``: kernel time and share of peak (what ``Tuning``'s defaults
    should be read from; each new tile compiles once)."""
    from ..backends.gpu import routes

    peak = peak_bandwidth(device)
    rows = []
    for shape in SHAPES[:2]:
        name, edges, nodes, features, degrees = shape
        p = problem(name, edges, nodes, features, degrees, device)
        for reduce in ("sum", "mean", "amax"):
            moved = p.src.numel() * 4 + p.index.numel() * 8 + p.nodes * p.src.size(1) * 4
            for elements in SWEEP_ELEMENTS:
                for programs in SWEEP_PROGRAMS:
                    with routes.tuned(max_elements=elements, programs_per_sm=programs):
                        kernel = kernel_seconds(_reduce_call(p.index, p.src, reduce, True, p.nodes), repeat, device)
                    rows.append(
                        dict(
                            shape=shape[0],
                            case=f"{reduce} sorted",
                            max_elements=elements,
                            programs_per_sm=programs,
                            kernel_us=round(kernel * 1e6, 1),
                            peak_share=round(moved / kernel / peak, 3) if peak and kernel > 0 else None,
                        )
                    )
                    log(f"  sweep {rows[-1]}")
        del p
    return rows


def sweep_table(rows: List[dict]) -> str:
    lines = ["sweep of the balanced segment kernels (kernel µs, share of peak):"]
    cols = Columns(
        Column("shape", 14, left=True),
        Column("case", 12, left=True),
        Column("elements", 8),
        Column("programs/SM", 11),
        Column("kernel µs", 10),
        Column("peak", 6),
    )
    lines.append(cols.header())
    for r in rows:
        peak = f"{r['peak_share']:.0%}" if r["peak_share"] is not None else "-"
        cells = (r["max_elements"], r["programs_per_sm"], r["kernel_us"], peak)
        lines.append(cols.row(r["shape"], r["case"], *cells))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the host's share, on the CPU
HOST_CHILD = """
import json, statistics, sys, time, torch, scatterx
from scatterx import backends
from scatterx.backends.gpu import _launch
launches = []
def stub(kernel, grid, args, **constexprs):  # no kernel: only the flag the caller asserts on, set as it would be
    launches.append(kernel)
    if "meta" in args and kernel.__name__ == "segment_fixup_kernel":
        args["meta"][0] = 1
_launch.launch = stub
for mod in list(sys.modules.values()):
    if getattr(mod, "launch", None) is not None and getattr(mod, "__name__", "").startswith("scatterx.backends.gpu."):
        mod.launch = _launch.launch
g = torch.Generator().manual_seed(0)
index = torch.randint(0, 500, (2000,), generator=g).sort().values
src = torch.randn(2000, 16, generator=g)
samples = []
with backends.gpu_backend_on_cpu():
    for _ in range(200):
        scatterx.index_scatter_reduce(0, index, src, "sum", dim_size=500)
    launches.clear()
    for _ in range(5):
        start = time.perf_counter()
        for _ in range({calls}):
            scatterx.index_scatter_reduce(0, index, src, "sum", dim_size=500)
        samples.append((time.perf_counter() - start) / {calls})
print(json.dumps(dict(us=statistics.median(samples) * 1e6, launches=len(launches) / (5 * {calls}))))
"""


def host_cost(calls: int = 2000) -> dict:
    """The Python of one sorted-sum call on the GPU backend, launches stubbed: ``{"us", "launches"}`` per call.
    Measured in a child process on CPU tensors (the GPU backend runs there under ``TRITON_INTERPRET=1``; its
    launches do nothing, so the torch ops around them are the CPU's: a few microseconds cheaper each than on
    CUDA, where each is a launch of its own)."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    run = subprocess.run(
        [sys.executable, "-c", HOST_CHILD.replace("{calls}", str(calls))],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"the host-cost child failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])
