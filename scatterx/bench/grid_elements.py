"""The element-plan rows of ``scatterx bench --grid``: an index that differs per feature, so that the
planner cannot take the slice kernel, for ``scatterx.scatter_reduce``/``scatter``/``gather`` and the ONNX
frontend (ScatterElements, GatherElements, ScatterND, GatherND), each against torch's equivalent and, for the
ONNX ops, onnxruntime's CPU kernels when ``onnxruntime`` is installed (a one-node model per op, made with
``onnx``'s helpers; ``intra_op_num_threads`` = the bench's threads; its thread pool does not spin between
calls, which on a shared machine would steal the other implementations' time).

Goals (``goals.json``, section grid-elements): the ops against torch's, the ONNX ops against onnxruntime; the
ONNX ops against torch are shown without a goal.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

import scatterx

from .goals import evaluate
from .harness import check

#: size name -> (rows of the index and updates E, rows of the data N, features F)
SHAPES = {"small": (2_000, 500, 16), "large": (200_000, 50_000, 64)}
SIZES = tuple(SHAPES)
ORT = "onnxruntime"


@dataclass
class ElementRow:
    op: str
    size: str
    peer: str
    scatterx_s: float
    peer_s: float
    goal: Optional[float]
    calls: int

    @property
    def speedup(self) -> float:
        return self.peer_s / self.scatterx_s

    @property
    def ok(self) -> Optional[bool]:
        return None if self.goal is None else self.speedup >= self.goal

    def to_dict(self) -> dict:
        return dict(asdict(self), speedup=self.speedup, ok=self.ok)


@dataclass
class _Case:
    op: str
    ours: Callable
    peer: str
    theirs: Callable
    ort: Optional[Tuple[str, Dict[str, torch.Tensor], Dict[str, Any]]] = None  # (ONNX op type, inputs, attributes)
    written_once: Optional[torch.Tensor] = None  # compare there only (assign: duplicates are undefined in torch)


def _cases(size: str, seed: int) -> List[_Case]:
    e, n, f = SHAPES[size]
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, n, (e, f), generator=g)  # a different target per feature: the element plan
    src = torch.empty(e, f).uniform_(-1.0, 1.0, generator=g)
    data = torch.empty(n, f).uniform_(-1.0, 1.0, generator=g)
    zeros = torch.zeros(n, f)
    rows = torch.randint(0, n, (e, 1), generator=g)  # ScatterND/GatherND: whole rows of data
    once = zeros.scatter_add(0, index, torch.ones_like(src)) <= 1
    onx = scatterx.onnx
    return [
        _Case(
            "scatter_reduce sum",
            lambda: scatterx.scatter_reduce(zeros, 0, index, src, "sum"),
            "torch.scatter_reduce",
            lambda: torch.scatter_reduce(zeros, 0, index, src, "sum"),
        ),
        _Case(
            "scatter_reduce amax",
            lambda: scatterx.scatter_reduce(zeros, 0, index, src, "amax"),
            "torch.scatter_reduce",
            lambda: torch.scatter_reduce(zeros, 0, index, src, "amax"),
        ),
        _Case(
            "scatter (assign)",
            lambda: scatterx.scatter(zeros, 0, index, src),
            "torch.scatter",
            lambda: torch.scatter(zeros, 0, index, src),
            written_once=once,
        ),
        _Case("gather", lambda: scatterx.gather(data, 0, index), "torch.gather", lambda: torch.gather(data, 0, index)),
        _Case(
            "onnx ScatterElements add",
            lambda: onx.scatter_elements(data, index, src, 0, "add"),
            "torch.scatter_add",
            lambda: data.scatter_add(0, index, src),
            ("ScatterElements", dict(data=data, indices=index, updates=src), dict(axis=0, reduction="add")),
        ),
        _Case(
            "onnx GatherElements",
            lambda: onx.gather_elements(data, index, 0),
            "torch.gather",
            lambda: torch.gather(data, 0, index),
            ("GatherElements", dict(data=data, indices=index), dict(axis=0)),
        ),
        _Case(
            "onnx ScatterND add",
            lambda: onx.scatter_nd(data, rows, src, "add"),
            "torch.index_add",
            lambda: data.index_add(0, rows[:, 0], src),
            ("ScatterND", dict(data=data, indices=rows, updates=src), dict(reduction="add")),
        ),
        _Case(
            "onnx GatherND",
            lambda: onx.gather_nd(data, rows),
            "torch.index_select",
            lambda: data.index_select(0, rows[:, 0]),
            ("GatherND", dict(data=data, indices=rows), {}),
        ),
    ]


def goal(row: ElementRow) -> Optional[float]:
    """The least speedup the row must reach (``goals.json``, section grid-elements), None where it has no goal."""
    results = evaluate("grid-elements", row)
    return results[0].limit if results else None


def ort_session(op: str, inputs: dict, attributes: dict, threads: int) -> Optional[Callable]:
    """A callable running a one-node ONNX model of ``op`` on onnxruntime's CPU provider, or None where
    onnxruntime (or onnx) is not installed."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return None
    arrays = {name: t.numpy() for name, t in inputs.items()}
    info = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for name, a in arrays.items()
    ]
    node = helper.make_node(op, list(arrays), ["out"], **attributes)
    graph = helper.make_graph([node], op, info, [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: torch.from_numpy(session.run(None, arrays)[0])


def ort_version() -> Optional[str]:
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.__version__


def _ort_checked(case: _Case, ort: Callable, label: str, note: Callable) -> str:
    """The peer's name: onnxruntime, flagged where its result differs from torch's (scatterx was checked against
    torch already). Measured: ScatterND with reduction="add", duplicate indices and 2 intra-op threads loses an
    update now and then (exact on 1 thread) -- a race in its kernel; it is still timed, as a user would run it."""
    try:
        check(f"onnxruntime {case.op} ({label})", ort(), case.theirs(), case.written_once)
    except AssertionError as e:
        lines = [line for line in str(e).splitlines() if line.startswith(("Mismatched", "Greatest absolute"))]
        note(f"onnxruntime's {case.op} ({label}) differs from torch's: " + "; ".join(lines))
        return ORT + " (wrong result)"
    return ORT


def rows(spec, measure: Callable, progress: Callable, note: Callable) -> List[ElementRow]:
    """Every element-plan case at the sizes of ``spec.elements``, each checked against torch (and onnxruntime)
    before it is timed; ``measure`` is the grid's timing function, ``note`` records remarks for the report."""
    version = ort_version()
    note(
        f"onnxruntime {version} (CPUExecutionProvider)"
        if version
        else "onnxruntime not installed: the ONNX rows are compared with torch only"
    )
    out: List[ElementRow] = []
    tasks = [(size, k) for size in spec.elements for k in range(len(_cases("small", 0)))]
    cases: Dict[str, List[_Case]] = {}
    for size, k in progress(tasks, desc="grid element plans", unit="case"):
        if size not in cases:
            cases = {size: _cases(size, spec.seed)}
        case: _Case = cases[size][k]  # (progress() is untyped: size and k come out as Any)
        e, n, f = SHAPES[size]
        label = f"{e:,}x{f} -> {n:,}x{f}"
        mask = case.written_once
        check(f"scatterx {case.op} ({label})", case.ours(), case.theirs(), mask)
        fns = {"scatterx": case.ours, case.peer: case.theirs}
        ort = ort_session(*case.ort, spec.threads) if case.ort and version else None
        if ort is not None:
            fns[_ort_checked(case, ort, label, note)] = ort
        times, counts, _ = measure(fns, spec.seconds, spec.min_calls)
        for peer in list(fns)[1:]:
            row = ElementRow(case.op, label, peer, times["scatterx"], times[peer], None, counts["scatterx"])
            row.goal = goal(row)
            out.append(row)
    return out
