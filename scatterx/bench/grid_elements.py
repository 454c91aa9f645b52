"""The element-plan rows of ``scatterx bench --grid``: an index that differs per feature, so that the
planner cannot take the slice kernel, for ``scatterx.scatter_reduce``/``scatter``/``gather`` and the ONNX
frontend (ScatterElements, GatherElements, ScatterND, GatherND), each against torch's equivalent and, for the
ONNX ops, onnxruntime's CPU kernels when ``onnxruntime`` is installed (a one-node model per op, made with
``onnx``'s helpers; ``intra_op_num_threads`` = the bench's threads; its thread pool does not spin between
calls, which on a shared machine would steal the other implementations' time). Then the sums along the last dim
of an ``(F, E)`` tensor with a shuffled index, from 1k to 1M elements (``LAST_DIM``): a 1-D index against
``index_add`` and a per-feature one against ``scatter_reduce``.

Goals (``goals.json``, section grid-elements): the ops against torch's, the ONNX ops against onnxruntime; the
ONNX ops against torch are shown without a goal.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

import scatterx
from scatterx import planner

from .goals import evaluate
from .harness import check

#: size name -> (rows of the index and updates E, rows of the data N, features F)
SHAPES = {"small": (2_000, 500, 16), "large": (200_000, 50_000, 64)}
SIZES = tuple(SHAPES)
ORT = "onnxruntime"


@dataclass
class ElementRow:
    op: str
    size: str  # the shapes, as the report prints them
    peer: str
    scatterx_s: float
    peer_s: float
    goal: Optional[float]
    calls: int
    scale: str = ""  # "small" or "large" (SHAPES)

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
            "scatter_reduce mean",
            lambda: scatterx.scatter_reduce(zeros, 0, index, src, "mean"),
            "torch.scatter_reduce",
            lambda: torch.scatter_reduce(zeros, 0, index, src, "mean"),
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


#: The sums along the last dim of an ``(F, E)`` tensor with a shuffled index, by ``E x F``: a 1-D index
#: (``index_scatter_reduce`` against ``index_add``) and one that differs per feature (``scatter_reduce``).
LAST_DIM = {"1k": (64, 16), "32k": (2_000, 16), "1M": (62_500, 16)}


def _last_dim_cases(size: str, seed: int) -> List[_Case]:
    e, f = LAST_DIM[size]
    n = max(1, e // 4)
    g = torch.Generator().manual_seed(seed)
    src = torch.empty(f, e).uniform_(-1.0, 1.0, generator=g)
    zeros = torch.zeros(f, n)
    index = torch.randint(0, n, (e,), generator=g)
    per_feature = torch.randint(0, n, (f, e), generator=g)
    return [
        _Case(
            "index_scatter_reduce sum, last dim",
            lambda: scatterx.index_scatter_reduce(1, index, src, "sum", sorted=False, dim_size=n),
            "torch.index_add",
            lambda: zeros.index_add(1, index, src),
        ),
        _Case(
            "scatter_reduce sum, last dim",
            lambda: scatterx.scatter_reduce(zeros, 1, per_feature, src, "sum"),
            "torch.scatter_reduce",
            lambda: torch.scatter_reduce(zeros, 1, per_feature, src, "sum"),
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


#: The planner's per-call Python (frontend checks, map, plan, dispatch) must stay under this at the small size.
PLANNER_GOAL_US = 25.0


def planner_cost(seed: int = 0, calls: int = 3000) -> Dict[str, float]:
    """Median microseconds of the frontends' calls at the small size with the element ops replaced by functions
    that return at once: what the frontend and the planner cost per call, the kernels left out."""
    e, n, f = SHAPES["small"]
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, n, (e, f), generator=g)
    src, data = torch.rand(e, f, generator=g), torch.rand(n, f, generator=g)
    calls_of = {
        "scatter_reduce": lambda: scatterx.scatter_reduce(data, 0, index, src, "sum"),
        "scatter": lambda: scatterx.scatter(data, 0, index, src),
        "gather": lambda: scatterx.gather(data, 0, index),
        "onnx ScatterElements": lambda: scatterx.onnx.scatter_elements(data, index, src, 0, "add"),
        "onnx GatherElements": lambda: scatterx.onnx.gather_elements(data, index, 0),
    }
    kept = planner.element_scatter, planner.element_gather
    planner.element_scatter = lambda index, src, base, *args: base
    planner.element_gather = lambda data, index, dim=None: index
    try:
        out = {}
        for name, fn in calls_of.items():
            for _ in range(200):
                fn()
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            out[name] = statistics.median(times) * 1e6
        return out
    finally:
        planner.element_scatter, planner.element_gather = kept


def rows(spec, measure: Callable, progress: Callable, note: Callable) -> List[ElementRow]:
    """Every element-plan case at the sizes of ``spec.elements``, each checked against torch (and onnxruntime)
    before it is timed; ``measure`` is the grid's timing function, ``note`` records remarks for the report."""
    cost = planner_cost(spec.seed)
    verdict = "ok" if max(cost.values()) <= PLANNER_GOAL_US else "MISSED"
    note(
        f"the planner's per-call Python at {SHAPES['small'][0]:,}x{SHAPES['small'][2]} (frontend, map, plan; the "
        "element ops stubbed out): "
        + ", ".join(f"{name} {us:.1f} us" for name, us in cost.items())
        + f" (goal <= {PLANNER_GOAL_US:.0f} us: {verdict})"
    )
    version = ort_version()
    note(
        f"onnxruntime {version} (CPUExecutionProvider)"
        if version
        else "onnxruntime not installed: the ONNX rows are compared with torch only"
    )
    out: List[ElementRow] = []
    tasks = [(size, k) for size in spec.elements for k in range(len(_cases("small", 0)))]
    if spec.elements:
        tasks += [(size, k) for size in LAST_DIM for k in range(len(_last_dim_cases("1k", 0)))]
    cases: Dict[str, List[_Case]] = {}
    for size, k in progress(tasks, desc="grid element plans", unit="case"):
        if size not in cases:
            cases = {size: _cases(size, spec.seed) if size in SHAPES else _last_dim_cases(size, spec.seed)}
        case: _Case = cases[size][k]  # (progress() is untyped: size and k come out as Any)
        if size in SHAPES:
            e, n, f = SHAPES[size]
            label = f"{e:,}x{f} -> {n:,}x{f}"
        else:
            e, f = LAST_DIM[size]
            label = f"{f}x{e:,} -> {f}x{max(1, e // 4):,}"
        mask = case.written_once
        check(f"scatterx {case.op} ({label})", case.ours(), case.theirs(), mask)
        fns = {"scatterx": case.ours, case.peer: case.theirs}
        ort = ort_session(*case.ort, spec.threads) if case.ort and version else None
        if ort is not None:
            fns[_ort_checked(case, ort, label, note)] = ort
        times, counts, _ = measure(fns, spec.seconds, spec.min_calls)
        for peer in list(fns)[1:]:
            row = ElementRow(case.op, label, peer, times["scatterx"], times[peer], None, counts["scatterx"], size)
            row.goal = goal(row)
            out.append(row)
    return out
