"""``index_scatter_reduce``'s rows: what a user would call instead of scatterx, each as ``(graph, reduce, sorted) ->
zero-argument callable``, forward alone and forward + backward.

Each produces the result of ``index_scatter_reduce`` with a new output (``include_self=False`` on zeros) on every
row that receives something; what peers put in empty rows differs (``torch.segment_reduce`` and ``torch_scatter``'s
mul use the identity), so the correctness check masks those.
"""

from __future__ import annotations

from typing import Optional

import torch

import scatterx

from ..dropin import real_torch_scatter
from . import Peer
from . import inputs as _inputs


def _scatterx(graph, reduce, sorted):
    index, src = _inputs(graph, sorted)
    n = graph.num_nodes
    return lambda: scatterx.index_scatter_reduce(0, index, src, reduce, sorted, dim_size=n)


def _scatterx_segment(graph, reduce, sorted):
    if not sorted:
        return None
    return lambda: scatterx.segment_reduce(graph.src, graph.ptr, reduce)


def _scatterx_scatter_reduce(graph, reduce, sorted):
    """scatterx's PyTorch-compatible scatter_reduce on PyG's expanded index: the planner must find the slice
    plan, and then does the work of ``index_scatter_reduce`` (goal: within 1.2x of it). The zeros it reduces
    into are an input of the functional call, made once."""
    index, src = _inputs(graph, sorted)
    expanded = index.view(-1, 1).expand_as(src)
    zeros = torch.zeros((graph.num_nodes, src.size(1)), dtype=src.dtype, device=src.device)
    return lambda: scatterx.scatter_reduce(zeros, 0, expanded, src, reduce, include_self=False)


def _scatter_reduce(graph, reduce, sorted):
    """PyG's path: the 1-D index expanded (a stride-0 view) to src's shape."""
    index, src = _inputs(graph, sorted)
    expanded = index.view(-1, 1).expand_as(src)
    shape = (graph.num_nodes, src.size(1))
    return lambda: torch.zeros(shape, dtype=src.dtype, device=src.device).scatter_reduce_(
        0, expanded, src, reduce, include_self=False
    )


def _index_add(graph, reduce, sorted):
    if reduce != "sum":
        return None
    index, src = _inputs(graph, sorted)
    shape = (graph.num_nodes, src.size(1))
    return lambda: torch.zeros(shape, dtype=src.dtype, device=src.device).index_add_(0, index, src)


def _index_reduce(graph, reduce, sorted):
    if reduce == "sum":
        return None
    index, src = _inputs(graph, sorted)
    shape = (graph.num_nodes, src.size(1))
    return lambda: torch.zeros(shape, dtype=src.dtype, device=src.device).index_reduce_(
        0, index, src, reduce, include_self=False
    )


_SEGMENT_NAMES = {"sum": "sum", "mean": "mean", "prod": "prod", "amax": "max", "amin": "min"}


def _torch_segment_reduce(graph, reduce, sorted):
    if not sorted:
        return None
    lengths = graph.ptr[1:] - graph.ptr[:-1]
    name = _SEGMENT_NAMES[reduce]
    return lambda: torch.segment_reduce(graph.src, name, lengths=lengths, axis=0, unsafe=True)


def _torch_scatter_module():
    """The real torch_scatter (not installed, built against another torch, or scatterx's drop-in registered in
    its place: None)."""
    return real_torch_scatter()


_TS_NAMES = {"sum": "sum", "mean": "mean", "prod": "mul", "amax": "max", "amin": "min"}


def _ts_scatter(graph, reduce, sorted):
    ts = _torch_scatter_module()
    if ts is None:
        return None
    index, src = _inputs(graph, sorted)
    name, n = _TS_NAMES[reduce], graph.num_nodes
    return lambda: ts.scatter(src, index, 0, dim_size=n, reduce=name)


def _ts_segment_csr(graph, reduce, sorted):
    ts = _torch_scatter_module()
    if ts is None or not sorted or reduce == "prod":
        return None
    name = _TS_NAMES[reduce]
    return lambda: ts.segment_csr(graph.src, graph.ptr, reduce=name)


def _ts_segment_coo(graph, reduce, sorted):
    """torch_scatter's sorted-index kernel (no ptr needed)."""
    ts = _torch_scatter_module()
    if ts is None or not sorted or reduce == "prod":
        return None
    name, n = _TS_NAMES[reduce], graph.num_nodes
    return lambda: ts.segment_coo(graph.src, graph.index, dim_size=n, reduce=name)


SCATTERX = Peer("scatterx.index_scatter_reduce", False, _scatterx)
SCATTERX_SEGMENT = Peer("scatterx.segment_reduce (ptr)", False, _scatterx_segment)
SCATTERX_SCATTER_REDUCE = Peer("scatterx.scatter_reduce (expanded index)", False, _scatterx_scatter_reduce)
PEERS = (
    Peer("torch.scatter_reduce (expanded index)", True, _scatter_reduce),
    Peer("torch.index_add_", True, _index_add),
    Peer("torch.index_reduce_", True, _index_reduce),
    Peer("torch.segment_reduce", True, _torch_segment_reduce),
    Peer("torch_scatter.scatter", False, _ts_scatter),
    Peer("torch_scatter.segment_csr", False, _ts_segment_csr),
    Peer("torch_scatter.segment_coo", False, _ts_segment_coo),
)


def torch_scatter_version() -> Optional[str]:
    ts = _torch_scatter_module()
    return None if ts is None else getattr(ts, "__version__", "?")


# ------------------------------------------------------------------------------------------- forward + backward
# Each builder returns a callable that runs forward and backward (upstream gradient ``graph.grad_out``) and
# returns the gradient w.r.t. src, or None where the peer cannot do it.
BACKWARD_REDUCTIONS = ("sum", "mean", "amax")


def _leaf(graph, sorted):
    index, src = _inputs(graph, sorted)
    return index, src.detach().clone().requires_grad_()


def _backward_call(leaf, forward, grad_out):
    def run():
        leaf.grad = None
        forward(leaf).backward(grad_out)
        return leaf.grad

    return run


def _scatterx_backward(graph, reduce, sorted):
    index, leaf = _leaf(graph, sorted)
    n = graph.num_nodes
    return _backward_call(
        leaf, lambda s: scatterx.index_scatter_reduce(0, index, s, reduce, sorted, dim_size=n), graph.grad_out
    )


def _pyg_backward(graph, reduce, sorted):
    index, leaf = _leaf(graph, sorted)
    expanded = index.view(-1, 1).expand_as(leaf)
    shape = (graph.num_nodes, leaf.size(1))
    return _backward_call(
        leaf,
        lambda s: torch.zeros(shape, dtype=s.dtype, device=s.device).scatter_reduce(
            0, expanded, s, reduce, include_self=False
        ),
        graph.grad_out,
    )


def _ts_scatter_backward(graph, reduce, sorted):
    ts = _torch_scatter_module()
    if ts is None:
        return None
    index, leaf = _leaf(graph, sorted)
    name, n = _TS_NAMES[reduce], graph.num_nodes
    return _backward_call(leaf, lambda s: ts.scatter(s, index, 0, dim_size=n, reduce=name), graph.grad_out)


def _ts_segment_csr_backward(graph, reduce, sorted):
    ts = _torch_scatter_module()
    if ts is None or not sorted:
        return None
    _, leaf = _leaf(graph, sorted)
    name = _TS_NAMES[reduce]
    return _backward_call(leaf, lambda s: ts.segment_csr(s, graph.ptr, reduce=name), graph.grad_out)


SCATTERX_BACKWARD = Peer("scatterx.index_scatter_reduce", False, _scatterx_backward)
PYG_BACKWARD = Peer("torch.scatter_reduce (expanded index)", True, _pyg_backward)
BACKWARD_PEERS = (
    PYG_BACKWARD,
    Peer("torch_scatter.scatter", False, _ts_scatter_backward),
    Peer("torch_scatter.segment_csr", False, _ts_segment_csr_backward),
)
