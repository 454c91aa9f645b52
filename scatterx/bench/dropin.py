"""The torch_scatter drop-in section of ``scatterx bench``: every function of
``scatterx.torch_scatter`` against the real torch_scatter when it is installed, else against a torch-native
equivalent, on the bench graph (``E x F`` edge rows into ``N`` nodes along dim 0; node rows ``N x F`` for the
gathers). Each pair is checked against each other before it is timed.

The segment functions and the gathers take the sorted index only (torch_scatter's ``segment_coo``/``gather_coo``
require it); the scatter functions and the composites run on the sorted and the shuffled edges.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, List, Optional

import torch

import scatterx.torch_scatter as drop_in

from .graphs import Graph

SCATTER = ("scatter_sum", "scatter_mean", "scatter_mul", "scatter_min", "scatter_max")
SEGMENT = tuple(f"segment_{r}_{kind}" for kind in ("csr", "coo") for r in ("sum", "mean", "min", "max"))
GATHER = ("gather_csr", "gather_coo")
COMPOSITE = ("scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_std")
FUNCTIONS = SCATTER + SEGMENT + GATHER + COMPOSITE
SORTED_ONLY = SEGMENT + GATHER
DROP_IN = "scatterx.torch_scatter"


def real_torch_scatter():
    """The installed torch_scatter, or None (absent, broken, or scatterx's drop-in registered under its name)."""
    try:
        # by name at run time: an optional peer, untyped, absent from most installs (and from the type check's)
        torch_scatter = importlib.import_module("torch_scatter")
    except Exception:
        return None
    if getattr(torch_scatter, "__name__", "") != "torch_scatter" or not hasattr(torch_scatter, "segment_csr"):
        return None
    return torch_scatter


@dataclass
class Call:
    function: str
    order: str
    run: Callable  # () -> result (a tensor, or (values, argindex))


def _args(graph: Graph, function: str, sorted: bool):
    index, src = (graph.index, graph.src) if sorted else (graph.shuffled_index, graph.shuffled_src)
    n = graph.num_nodes
    if function.endswith("_csr") and function.startswith("segment"):
        return (graph.src, graph.ptr), {}
    if function.endswith("_coo") and function.startswith("segment"):
        return (graph.src, graph.index), {"dim_size": n}
    if function == "gather_csr":
        return (graph.grad_out, graph.ptr), {}
    if function == "gather_coo":
        return (graph.grad_out, graph.index), {}
    return (src, index, 0), {"dim_size": n}


def module_calls(module, graph: Graph, function: str, sorted: bool) -> Callable:
    args, kwargs = _args(graph, function, sorted)
    fn = getattr(module, function)
    return lambda: fn(*args, **kwargs)


# ------------------------------------------------------------------------------------- torch-native equivalents
def _arg(src, index, values, n):
    """torch-native argmax/argmin: the first position in each group holding the group's value."""
    positions = torch.arange(src.size(0), device=src.device).view(-1, 1).expand_as(src)
    hit = src == values.index_select(0, index)
    candidate = torch.where(hit, positions, torch.full_like(positions, src.size(0)))
    start = torch.full(values.shape, src.size(0), dtype=torch.int64, device=src.device)
    return start.scatter_reduce_(0, index.view(-1, 1).expand_as(src), candidate, "amin")


def native_calls(graph: Graph, function: str, sorted: bool) -> Callable:
    """What a user without torch_scatter writes with torch's own ops, with torch_scatter's results on every row
    that receives something."""
    (a, b, *_rest), _kwargs = _args(graph, function, sorted)
    n = graph.num_nodes
    if function == "gather_csr":
        return lambda: a.repeat_interleave(b[1:] - b[:-1], dim=0)
    if function == "gather_coo":
        return lambda: a.index_select(0, b)
    src = a
    index = graph.index if function.startswith("segment") else b
    expanded = index.view(-1, 1).expand_as(src)
    shape = (n, src.size(1))
    reduce = function.split("_")[1]

    def reduced(name, include_self=False, fill=0.0):
        return torch.full(shape, fill, dtype=src.dtype, device=src.device).scatter_reduce_(
            0, expanded, src, name, include_self=include_self
        )

    if reduce in ("sum", "mean", "mul"):
        name = {"sum": "sum", "mean": "mean", "mul": "prod"}[reduce]
        return lambda: reduced(name, include_self=reduce == "mul", fill=1.0 if reduce == "mul" else 0.0)
    if reduce in ("min", "max"):

        def run():
            values = reduced("a" + reduce)
            return values, _arg(src, index, values, n)

        return run
    if function == "scatter_softmax" or function == "scatter_log_softmax":

        def run():
            shifted = src - reduced("amax").index_select(0, index)
            total = torch.zeros(shape, dtype=src.dtype, device=src.device).index_add_(0, index, shifted.exp())
            if function == "scatter_softmax":
                return shifted.exp() / total.index_select(0, index)
            return shifted - (total + 1e-12).log().index_select(0, index)

        return run
    if function == "scatter_logsumexp":

        def run():
            top = reduced("amax")
            total = torch.zeros(shape, dtype=src.dtype, device=src.device).index_add_(
                0, index, (src - top.index_select(0, index)).exp()
            )
            return (total + 1e-12).log() + top

        return run
    if function == "scatter_std":

        def run():
            count = torch.bincount(index, minlength=n).to(src.dtype).clamp(min=1).view(-1, 1)
            mean = torch.zeros(shape, dtype=src.dtype, device=src.device).index_add_(0, index, src) / count
            var = (src - mean.index_select(0, index)) ** 2
            total = torch.zeros(shape, dtype=src.dtype, device=src.device).index_add_(0, index, var)
            return (total / ((count - 1).clamp(min=1) + 1e-6)).sqrt()

        return run
    raise ValueError(function)


# ------------------------------------------------------------------------------------------------------ checking
def check_pair(check: Callable, function: str, order: str, ours, theirs, graph: Graph) -> None:
    """Values on every row that receives something; argindex on those rows too."""
    received = None
    if function.startswith(("scatter_", "segment_")) and function not in ("scatter_softmax", "scatter_log_softmax"):
        received = graph.ptr[1:] > graph.ptr[:-1]
    if isinstance(ours, tuple):
        check(f"{DROP_IN}.{function} argindex ({order})", ours[1], theirs[1], received)
        ours, theirs = ours[0], theirs[0]
    check(f"{DROP_IN}.{function} ({order})", ours, theirs, received)


def calls(graph: Graph, peer_module: Optional[object]) -> List[tuple]:
    """``(function, order, ours, theirs, peer name)`` for every case."""
    out = []
    for function in FUNCTIONS:
        for order in ("sorted",) if function in SORTED_ONLY else ("sorted", "shuffled"):
            sorted = order == "sorted"
            ours = module_calls(drop_in, graph, function, sorted)
            if peer_module is not None:
                theirs, name = module_calls(peer_module, graph, function, sorted), f"torch_scatter.{function}"
            else:
                theirs, name = native_calls(graph, function, sorted), "torch-native equivalent"
            out.append((function, order, ours, theirs, name))
    return out
