"""The ``scatterx bench`` harness: build the graph, probe the bandwidth, check every implementation, time them.

Results are reported as ratios taken in this one run (to the probe, to the best peer): the machines are shared and
noisy, bare times alone mean little.

Why this module is long: it is the whole run of the default bench -- the core op's forward and forward+backward
rows, the op modules' sections (softmax, message passing), each row checked against a trusted result before it is
timed -- with the records (environment, other load) that make one run's ratios readable. The rows'
implementations, scatterx's and its peers', are in ``ops/``, a module per op; a module's ``SECTIONS`` are found
there (``ops.sections``).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional

import numba
import torch

try:
    import resource  # Unix only: OtherLoad's own CPU time
except ImportError:  # pragma: no cover
    _HAS_RESOURCE = False
else:
    _HAS_RESOURCE = True

import scatterx
from scatterx._reductions import NAMES
from scatterx.kernels.gpu import available as triton_available

from . import dropin
from .gpu_kernels import host_cost
from .graphs import Graph, make_graph
from .latency import first_call_latency
from .launch import measure as launch_costs
from .ops import Section, section_flags, sections
from .ops.index_scatter_reduce import (
    BACKWARD_PEERS,
    BACKWARD_REDUCTIONS,
    PEERS,
    PYG_BACKWARD,
    SCATTERX,
    SCATTERX_BACKWARD,
    SCATTERX_SCATTER_REDUCE,
    SCATTERX_SEGMENT,
    torch_scatter_version,
)
from .targets import numba_cpu
from .timing import median_seconds

REDUCTIONS = NAMES
ORDERS = ("sorted", "shuffled")


@dataclass
class Config:
    edges: int = 1_000_000
    nodes: int = 100_000
    features: int = 64
    dtype: str = "float32"
    degrees: str = "powerlaw"
    reductions: tuple = REDUCTIONS
    orders: tuple = ORDERS
    threads: int = 2
    repeat: int = 9
    warmup: int = 2
    seed: int = 0
    peers: bool = True
    latency: bool = True
    launch: bool = True
    backward: bool = True  # forward+backward rows for sum, mean, amax (floating dtypes)
    skip: tuple = ()  # flags of the op modules' sections left out (ops.section_flags(); each floating dtypes only)
    device: str = "cpu"  # or "cuda": the Triton kernels, timed with CUDA events
    dropin: bool = True  # the torch_scatter drop-in rows: against torch_scatter, or torch-native without it

    def is_default_shape(self) -> bool:
        d = Config()
        return (self.edges, self.nodes, self.features, self.dtype, self.degrees, self.threads, self.device) == (
            d.edges,
            d.nodes,
            d.features,
            d.dtype,
            d.degrees,
            d.threads,
            d.device,
        )


@dataclass
class Row:
    reduce: str
    order: str
    implementation: str
    torch_native: bool
    ms: float
    gbps: float
    probe_ratio: float
    scatterx_speedup: Optional[float] = None  # this row's time / scatterx's time (peer rows)
    mode: str = "forward"  # or "forward+backward"


@dataclass
class Report:
    config: Config
    graph: str
    probe_ms: float
    probe_gbps: float
    rows: List[Row]
    latency: Dict[str, float] = field(default_factory=dict)
    launch: List[Dict] = field(default_factory=list)
    environment: Dict[str, str] = field(default_factory=dict)
    #: the GPU backend's Python per call, its launches stubbed (``gpu_kernels.host_cost``): ``{"us", "launches"}``
    gpu_host: Dict[str, float] = field(default_factory=dict)

    def to_dict(self):
        d = asdict(self)
        d["config"]["reductions"] = list(self.config.reductions)
        d["config"]["orders"] = list(self.config.orders)
        return d


def _tolerance(dtype: torch.dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return dict(atol=0.1, rtol=2e-2)
    if dtype == torch.float32:
        return dict(atol=1e-2, rtol=1e-3)
    return dict(atol=1e-6, rtol=1e-6) if dtype == torch.float64 else dict(atol=0, rtol=0)


def check(name: str, got: torch.Tensor, expected: torch.Tensor, rows: Optional[torch.Tensor] = None) -> None:
    """Assert that ``got`` equals ``expected`` (on ``rows`` only, when given)."""
    if rows is not None:
        got, expected = got[rows], expected[rows]
    try:
        torch.testing.assert_close(got.float(), expected.float(), equal_nan=True, **_tolerance(expected.dtype))
    except AssertionError as e:
        raise AssertionError(f"{name} gives a wrong result, benchmark aborted:\n{e}") from None


def environment(device: str = "cpu") -> Dict[str, str]:
    gpu = {}
    if device == "cuda":
        import triton

        gpu = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "cuda": str(torch.version.cuda)}
    return {
        **gpu,
        "scatterx": scatterx.__version__,
        "commit": source_commit(),
        "torch": torch.__version__,
        "numba": numba.__version__,
        "torch_scatter": torch_scatter_version() or "not installed",
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "numba_cpu_target": numba_cpu_target(),
        "torch_threads": str(torch.get_num_threads()),
    }


def source_commit() -> str:
    """The commit of the scatterx source that ran (``git rev-parse --short HEAD`` in its checkout), "unknown"
    where it is not a git checkout of its own (an installed wheel, even inside someone's repository) or git is
    missing."""
    here = os.path.realpath(os.path.dirname(scatterx.__file__))
    try:
        done = subprocess.run(
            ["git", "-C", here, "rev-parse", "--show-toplevel", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,  # a failure is read from the return code below
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    out = done.stdout.split()
    if done.returncode != 0 or len(out) != 2 or os.path.join(os.path.realpath(out[0]), "scatterx") != here:
        return "unknown"
    return out[1]


class OtherLoad:
    """What else took the CPUs while a benchmark ran (Linux ``/proc/stat``), as shares of one core: other
    processes, and the hypervisor's steal (time a virtual CPU was runnable but not running). On a machine with few
    cores either makes a parallel region wait at its barrier for a descheduled thread, ~8 ms at a time here
    (docs/decisions/cpu-parallelism.md); the ratios then measure the neighbours, not the kernels. A serial torch op
    does not wait for a second thread, so this bias is against the parallel side."""

    def __init__(self):
        self._start = (self._sample(), time.perf_counter())

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        if not _HAS_RESOURCE:
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = fields + [0] * (8 - len(fields))
        tick = os.sysconf("SC_CLK_TCK")
        own = resource.getrusage(resource.RUSAGE_SELF)
        others = (user + nice + system + irq + softirq) / tick - own.ru_utime - own.ru_stime
        return others, steal / tick

    def describe(self) -> str:
        (start, t0), now = self._start, self._sample()
        if start is None or now is None:
            return "not measured (no /proc/stat)"
        wall = max(time.perf_counter() - t0, 1e-9)
        others, steal = (max(b - a, 0.0) / wall for a, b in zip(start, now))
        verdict = "ratios may include scheduler stalls" if others + steal > 0.1 else "otherwise idle"
        return f"{others:.0%} of a core, hypervisor steal {steal:.0%} of a core ({verdict})"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows: a figure holds for the CPU
    it was measured on."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numba_cpu_target() -> str:
    """The CPU Numba compiles the kernels for (``NUMBA_CPU_NAME``, else the host's), and its vector extensions."""
    import llvmlite.binding as llvm

    cpu_name, cpu_features = numba_cpu()
    name = cpu_name or llvm.get_host_cpu_name()
    features = cpu_features or llvm.get_host_cpu_features().flatten()
    vector = [f for f in ("avx512f", "avx2", "avx", "sse4.2", "neon", "sve") if f"+{f}" in features.split(",")]
    return f"{name} ({', '.join(vector) or 'no vector extensions found'})"


def run(config: Config, progress: Callable = lambda iterable, **kw: iterable, log: Callable = print) -> Report:
    """Run the benchmark on ``config.threads`` threads (the caller's torch thread count is restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="index_reduce\\(\\) is in beta")
            return _run(config, progress, log)
    finally:
        torch.set_num_threads(before)


def _run(config: Config, progress: Callable, log: Callable) -> Report:
    unknown = sorted(set(config.skip) - set(section_flags()))
    if unknown:
        raise ValueError(f"Config.skip names no section: {unknown}; the sections' flags are {sorted(section_flags())}")
    dtype = getattr(torch, config.dtype)
    graph = make_graph(config.edges, config.nodes, config.features, dtype, config.degrees, config.seed)
    graph = graph.to(config.device)
    device = config.device
    others = OtherLoad()
    log(f"graph: {graph.describe()}")
    src_bytes = graph.src.numel() * graph.src.element_size()
    probe = lambda: torch.sum(graph.src)  # noqa: E731  (the bandwidth probe: read src once)
    probe_samples = []

    our_impls = [SCATTERX, SCATTERX_SEGMENT, SCATTERX_SCATTER_REDUCE]
    impls = our_impls + (list(PEERS) if config.peers else [])
    tasks = [(r, o, impl) for r in config.reductions for o in config.orders for impl in impls]
    received = graph.ptr[1:] > graph.ptr[:-1]
    expected: Dict[str, torch.Tensor] = {}
    rows: List[Row] = []
    for reduce, order, impl in progress(tasks, desc="bench", unit="case"):
        fn = impl.build(graph, reduce, order == "sorted")
        if fn is None:
            continue
        if reduce not in expected:
            expected[reduce] = _expected(graph, reduce)
        is_scatterx = impl in our_impls
        check(f"{impl.name} ({reduce}, {order})", fn(), expected[reduce], None if is_scatterx else received)
        probe_samples.append(median_seconds(probe, 1, 3, device))
        seconds = median_seconds(fn, config.warmup, config.repeat, device)
        rows.append(Row(reduce, order, impl.name, impl.torch_native, seconds * 1e3, src_bytes / seconds / 1e9, 0.0))

    if config.backward and graph.src.dtype.is_floating_point:
        rows += _backward_rows(graph, config, progress, src_bytes)
    for section in sections():
        if section.flag not in config.skip and graph.src.dtype.is_floating_point:
            rows += _section_rows(section, graph, config, progress, src_bytes)
    if config.dropin and graph.src.dtype.is_floating_point:
        rows += _dropin_rows(graph, config, progress, src_bytes)
    probe_s = statistics.median(probe_samples) if probe_samples else median_seconds(probe, 1, 5, device)
    ours = {section.label: section.implementations[0].name for section in sections()}
    for row in rows:
        row.probe_ratio = row.ms / (probe_s * 1e3)
        mine = ours.get(row.reduce, SCATTERX.name)
        if row.mode == DROP_IN_MODE:
            mine = dropin.DROP_IN
        our_row = find(rows, row.reduce, row.order, mine, row.mode)
        if row.implementation != mine and our_row is not None:
            row.scatterx_speedup = row.ms / our_row.ms
    env = {**environment(device), "other processes": others.describe()}
    report = Report(config, graph.describe(), probe_s * 1e3, src_bytes / probe_s / 1e9, rows, environment=env)
    if config.latency and device == "cpu":  # Numba's JIT and disk cache; Triton's are not measured
        log("measuring first-call latency in fresh processes (cold and cached Numba cache)...")
        report.latency = first_call_latency(graph=(config.edges, config.nodes, config.features))
    if config.launch and device == "cpu":
        log("measuring the CPU kernel launch...")
        report.launch = launch_costs(threads=sorted({1, 2, config.threads}))
        if triton_available():
            log("measuring the GPU backend's Python per call (its launches stubbed, on CPU tensors)...")
            report.gpu_host = host_cost()
    return report


def _backward_rows(graph: Graph, config: Config, progress: Callable, src_bytes: int) -> List[Row]:
    """forward+backward: scatterx against PyG's path (and torch_scatter); gradients checked against PyG's."""
    grad_out = graph.grad_out
    if grad_out is None:
        raise ValueError(f"forward+backward rows need a floating-point graph, got {graph.src.dtype}")
    impls = [SCATTERX_BACKWARD] + (list(BACKWARD_PEERS) if config.peers else [])
    reductions = [r for r in config.reductions if r in BACKWARD_REDUCTIONS]
    tasks = [(r, o, impl) for r in reductions for o in config.orders for impl in impls]
    rows = []
    expected = {}
    for reduce, order, impl in progress(tasks, desc="bench forward+backward", unit="case"):
        fn = impl.build(graph, reduce, order == "sorted")
        if fn is None:
            continue
        if (reduce, order) not in expected:
            expected[reduce, order] = PYG_BACKWARD.build(graph, reduce, order == "sorted")().clone()
        got, want = fn(), expected[reduce, order]
        if reduce in ("amax", "amin") and impl is not SCATTERX_BACKWARD:
            # torch_scatter gives a tie's whole gradient to one member, PyG and scatterx split it: compare what
            # each segment receives in total, which both conventions conserve
            index = graph.index if order == "sorted" else graph.shuffled_index
            got, want = (torch.zeros_like(grad_out).index_add_(0, index, t) for t in (got, want))
        check(f"{impl.name} gradient ({reduce}, {order})", got, want)
        seconds = median_seconds(fn, 1, max(3, config.repeat // 3), config.device)
        rows.append(
            Row(
                reduce,
                order,
                impl.name,
                impl.torch_native,
                seconds * 1e3,
                src_bytes / seconds / 1e9,
                0.0,
                mode="forward+backward",
            )
        )
    return rows


def _section_rows(section: Section, graph: Graph, config: Config, progress: Callable, src_bytes: int) -> List[Row]:
    """An op module's section (``ops.Section``): scatterx (its first implementation) against the others, each
    checked first against the last one's result (a forward result per index order, or the gradients of one
    forward+backward), then timed."""
    impls = section.implementations if config.peers else section.implementations[:1]
    orders = config.orders if section.per_order else ("sorted",)
    tasks = [(o, impl) for o in orders for impl in impls]
    rows, expected = [], {}
    for order, impl in progress(tasks, desc=f"bench {section.label}", unit="case"):
        args = (graph, order == "sorted") if section.per_order else (graph,)
        fn = impl.build(*args)
        if fn is None:
            continue
        if order not in expected:
            expected[order] = section.implementations[-1].build(*args)().clone()
        check(f"{impl.name} ({order})" if section.per_order else f"{impl.name} gradients", fn(), expected[order])
        if section.per_order:
            seconds, mode = median_seconds(fn, config.warmup, config.repeat, config.device), "forward"
        else:
            seconds, mode = median_seconds(fn, 1, max(3, config.repeat // 3), config.device), "forward+backward"
        rows.append(
            Row(
                section.label,
                order,
                impl.name,
                impl.torch_native,
                seconds * 1e3,
                src_bytes / seconds / 1e9,
                0.0,
                mode=mode,
            )
        )
    return rows


DROP_IN_MODE = "drop-in"


def _dropin_rows(graph: Graph, config: Config, progress: Callable, src_bytes: int) -> List[Row]:
    """``scatterx.torch_scatter``'s functions against torch_scatter's (or torch-native equivalents without it),
    each pair checked against each other first (``bench/dropin.py``)."""
    peer = dropin.real_torch_scatter() if config.peers else None
    rows = []
    for function, order, ours, theirs, name in progress(dropin.calls(graph, peer), desc="bench drop-in", unit="case"):
        dropin.check_pair(check, function, order, ours(), theirs(), graph)
        for impl, fn, native in ((dropin.DROP_IN, ours, False), (name, theirs, peer is None)):
            if impl != dropin.DROP_IN and not config.peers:
                continue
            seconds = median_seconds(fn, 1, max(3, config.repeat // 3), config.device)
            rows.append(
                Row(function, order, impl, native, seconds * 1e3, src_bytes / seconds / 1e9, 0.0, mode=DROP_IN_MODE)
            )
    return rows


def _expected(graph: Graph, reduce: str) -> torch.Tensor:
    """The trusted result: torch's own scatter_reduce (PyG's path) on the sorted edges."""
    expanded = graph.index.view(-1, 1).expand_as(graph.src)
    out = torch.zeros((graph.num_nodes, graph.src.size(1)), dtype=graph.src.dtype, device=graph.src.device)
    return out.scatter_reduce_(0, expanded, graph.src, reduce, include_self=False)


def find(rows: List[Row], reduce: str, order: str, name: str, mode: str = "forward") -> Optional[Row]:
    return next((r for r in rows if (r.reduce, r.order, r.implementation, r.mode) == (reduce, order, name, mode)), None)


def best(rows: List[Row], reduce: str, order: str, torch_native_only: bool, mode: str = "forward") -> Optional[Row]:
    """The fastest peer (not scatterx) for one case."""
    peers = [
        r
        for r in rows
        if (r.reduce, r.order, r.mode) == (reduce, order, mode)
        and not r.implementation.startswith("scatterx")
        and (r.torch_native or not torch_native_only)
    ]
    return min(peers, key=lambda r: r.ms, default=None)
