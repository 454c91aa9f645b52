"""Command line: ``scatterx bench``, ``bench-gnn``, ``bench-dist``, ``partition``, ``gpu-report`` and ``plot``
(also ``python -m scatterx ...``).

Why this module is long: it is the arguments of six commands and their checks, each a few lines next to the
parser they belong to; the work itself is in ``scatterx.bench``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import List, Optional

import torch

from . import distributed as sxd
from .bench import (
    export_onnx,
    figures,
    gpu_kernels,
    gpu_model,
    gpu_static,
    grid,
    grid_elements,
    grid_report,
    targets,
    text,
)
from .bench import report as report_mod
from .bench.gnn import distributed as dist
from .bench.gnn import full_graph as gnn
from .bench.gnn import minibatch as gnn_minibatch
from .bench.gnn.full_graph import MODELS, GnnConfig
from .bench.goals import evaluate
from .bench.harness import ORDERS, REDUCTIONS, Config, environment, run
from .bench.ops import section_flags
from .kernels.gpu import available


def _progress():
    try:
        from tqdm import tqdm
    except ImportError:  # a plain counter on stderr

        def tqdm(iterable, desc="", unit="", **kw):
            items = list(iterable)
            for i, item in enumerate(items, 1):
                print(f"\r{desc}: {i}/{len(items)} {unit}", end="", file=sys.stderr, flush=True)
                yield item
            print(file=sys.stderr)

    return tqdm


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scatterx", description="Fast scatter/gather-reduce for PyTorch.")
    sub = parser.add_subparsers(dest="command", required=True)
    _bench_parser(sub)
    _bench_gnn_parser(sub)
    _bench_dist_parser(sub)
    _partition_parser(sub)
    _bench_export_parser(sub)
    _gpu_report_parser(sub)
    _plot_parser(sub)
    return parser


def _bench_parser(sub) -> None:
    """``scatterx bench``'s arguments."""
    d = Config()
    b = sub.add_parser("bench", help="time scatterx against torch (and torch_scatter) on a synthetic graph")
    b.add_argument("--edges", type=int, default=d.edges, help=f"number of edges (rows of src), default {d.edges:,}")
    b.add_argument("--nodes", type=int, default=d.nodes, help=f"number of target nodes, default {d.nodes:,}")
    b.add_argument("--features", type=int, default=d.features, help=f"features per edge, default {d.features}")
    b.add_argument(
        "--dtype",
        default=None,
        choices=["float32", "float64", "float16", "bfloat16", "int32", "int64"],
        help=f"default {d.dtype}; with --grid, the dtypes axis when --grid-dtypes is not given",
    )
    b.add_argument("--degrees", default=d.degrees, choices=["powerlaw", "uniform"], help="in-degree distribution")
    b.add_argument(
        "--reductions", default=None, help=f"comma-separated, default all (with --grid: {','.join(grid.REDUCTIONS)})"
    )
    b.add_argument("--orders", default=",".join(ORDERS), help="sorted and/or shuffled index, default both")
    b.add_argument("--threads", type=int, default=d.threads, help=f"torch (and scatterx) threads, default {d.threads}")
    b.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed calls per case (the median is reported), default {d.repeat}; with --grid: the least "
        f"number of timed calls per implementation and cell, default {grid.GridSpec.min_calls}",
    )
    b.add_argument("--warmup", type=int, default=d.warmup)
    b.add_argument("--seed", type=int, default=d.seed)
    b.add_argument("--no-peers", action="store_true", help="time scatterx only")
    b.add_argument("--no-latency", action="store_true", help="skip the first-call (JIT) latency measurement")
    b.add_argument("--no-launch", action="store_true", help="skip the CPU kernel launch table")
    b.add_argument("--no-backward", action="store_true", help="skip the forward+backward rows (sum, mean, amax)")
    b.add_argument(
        "--no-dropin",
        action="store_true",
        help="skip the torch_scatter drop-in rows (scatterx.torch_scatter against torch_scatter, or "
        "torch-native equivalents where torch_scatter is not installed)",
    )
    for flag, what in section_flags().items():  # the op modules' sections (bench/ops/<op>.py, SECTIONS)
        b.add_argument(f"--no-{flag}", action="store_true", help=f"skip {what}")
    b.add_argument(
        "--device",
        default=d.device,
        choices=["cpu", "cuda"],
        help="cpu (Numba kernels) or cuda (Triton kernels, timed with CUDA events)",
    )
    b.add_argument(
        "--out-dir",
        default="bench-results",
        help="where bench.csv, bench.json and the figures (forward.png, forward-backward.png, "
        "message-passing.png, drop-in.png) go; with --device cuda also kernels.json",
    )
    b.add_argument(
        "--kernels-only",
        action="store_true",
        help="with --device cuda: only the GPU kernel-time table (kernels.json), not the rest of the bench",
    )
    b.add_argument(
        "--sweep",
        action="store_true",
        help="with --device cuda: also sweep the balanced segment kernels' tile and programs per multiprocessor "
        "(sorted sum at the bench shape; sweep.json)",
    )
    _grid_arguments(b)


def _bench_gnn_parser(sub) -> None:
    """``scatterx bench-gnn``'s arguments."""
    gd = GnnConfig()
    n = sub.add_parser(
        "bench-gnn",
        help="train GCN/GraphSAGE/GIN/GAT/GATv2/GraphConv on a built-in graph shape: PyG's default path against "
        "scatterx.pyg",
    )
    n.add_argument(
        "--graph",
        default=None,
        choices=sorted(gnn_minibatch.GRAPHS),
        help="a built-in graph shape (synthetic, built in code), default arxiv (--mini-batch: products, the full "
        "ogbn-products shape, which only --mini-batch takes)",
    )
    n.add_argument("--models", default=None, help="comma-separated, default all (--mini-batch: sage,gat)")
    n.add_argument(
        "--mini-batch",
        action="store_true",
        help="mini-batch training instead: PyG's NeighborLoader (fanout [15, 10]) on scatterx.pyg_lib, sampling and "
        "training timed apart, and heterogeneous rows (to_hetero)",
    )
    n.add_argument("--batches", type=int, default=20, help="--mini-batch: timed batches per model, default 20")
    n.add_argument("--batch-size", type=int, default=1024, help="--mini-batch: seeds per batch, default 1,024")
    n.add_argument("--no-hetero", action="store_true", help="--mini-batch: skip the heterogeneous rows")
    n.add_argument("--epochs", type=int, default=gd.epochs, help=f"epochs per model and path, default {gd.epochs}")
    n.add_argument("--nodes", type=int, default=None, help="default: the graph's (arxiv: 169,343)")
    n.add_argument("--edges", type=int, default=None, help="default: the graph's (arxiv: 1,166,243)")
    n.add_argument("--features", type=int, default=None, help="default: the graph's (arxiv: 128)")
    n.add_argument("--no-memory", action="store_true", help="skip the peak-memory steps")
    n.add_argument(
        "--cold",
        action="store_true",
        help="also time each model's first training step in fresh "
        "processes: scatterx with an empty Numba cache and cached, and PyG",
    )
    n.add_argument(
        "--compile",
        action="store_true",
        help="also train each model under torch.compile, PyG's default path against the switch on, "
        "with the switch eager beside them in the same loop",
    )
    n.add_argument(
        "--onnx",
        action="store_true",
        help="also time onnxruntime's inference of the SAGE model "
        "exported with scatterx.export against scatterx eager (needs onnxscript and onnxruntime)",
    )
    n.add_argument("--hidden", type=int, default=gd.hidden, help=f"default {gd.hidden}")
    n.add_argument(
        "--threads", type=int, default=gd.threads, help=f"torch (and scatterx) threads, default {gd.threads}"
    )
    n.add_argument("--seed", type=int, default=gd.seed)
    n.add_argument(
        "--out-dir",
        default="bench-results",
        help="where bench-gnn.csv, bench-gnn.json, the loss chart bench-gnn.png and epochs.png go (--mini-batch: "
        "bench-gnn-mini-batch.csv and .json)",
    )


def _bench_dist_parser(sub) -> None:
    """``scatterx bench-dist``'s arguments."""
    gd = GnnConfig()
    t = sub.add_parser(
        "bench-dist",
        help="PyG models trained full-graph over 1, 2, 4 ... processes (torch.distributed, gloo) from saved shards, "
        "even and METIS partitions, against one process on the whole graph",
    )
    t.add_argument("--procs", default="1,2,4", help="comma-separated process counts, default 1,2,4")
    t.add_argument(
        "--models", default="sage,gcn", help=f"comma-separated, of {', '.join(dist.MODELS)}; default sage,gcn"
    )
    t.add_argument(
        "--partitions",
        default="even,metis",
        help="comma-separated partition methods, default "
        "even,metis (metis needs pymetis: pip install 'scatterx[metis]')",
    )
    t.add_argument(
        "--graph", default=gd.graph, choices=sorted(gnn.GRAPHS), help="a built-in graph shape, default arxiv"
    )
    t.add_argument("--epochs", type=int, default=5, help="default 5")
    t.add_argument("--nodes", type=int, default=None, help="default: the graph's")
    t.add_argument("--edges", type=int, default=None, help="default: the graph's")
    t.add_argument("--features", type=int, default=None, help="default: the graph's")
    t.add_argument("--hidden", type=int, default=gd.hidden, help=f"default {gd.hidden}")
    t.add_argument(
        "--threads",
        type=int,
        default=gd.threads,
        help=f"threads in all, split among the processes, default {gd.threads}",
    )
    t.add_argument("--seed", type=int, default=gd.seed)


def _partition_parser(sub) -> None:
    """``scatterx partition``'s arguments."""
    gd = GnnConfig()
    q = sub.add_parser(
        "partition",
        help="partition a built-in graph over N ranks and save one shard file per rank (for torchrun training)",
    )
    q.add_argument("graph", choices=sorted(gnn.GRAPHS), help="a built-in graph")
    q.add_argument("out_dir", help="where meta.json and rank-<r>-of-<N>.pt go")
    q.add_argument("--world", type=int, required=True, help="the number of ranks")
    q.add_argument(
        "--method",
        default="metis",
        choices=list(dist.METHODS),
        help="metis (a locality partition; needs pymetis) or even (ranges of ids); default metis",
    )
    q.add_argument(
        "--balance",
        default="work",
        choices=["work", "nodes"],
        help="what METIS keeps equal over the ranks: work (each node's row and in-edges; default) or node counts",
    )
    q.add_argument("--seed", type=int, default=gd.seed, help="the graph's and METIS's seed")


def _bench_export_parser(sub) -> None:
    """``scatterx bench-export``'s arguments."""
    x = sub.add_parser(
        "bench-export",
        help="time the ONNX graphs scatterx.export writes, in onnxruntime, against eager scatterx (needs "
        "scatterx[export] and torch_geometric)",
    )
    x.add_argument("--edges", type=int, default=1_000_000, help="number of edges, default 1,000,000")
    x.add_argument("--nodes", type=int, default=100_000, help="number of target nodes, default 100,000")
    x.add_argument("--features", type=int, default=64, help="features per edge, default 64")
    x.add_argument("--threads", type=int, default=2, help="onnxruntime's intra-op threads and torch's, default 2")
    x.add_argument("--repeats", type=int, default=5, help="timed calls per case (the median is reported)")
    x.add_argument("--cases", default=None, help="comma-separated, a subset of " + ",".join(export_onnx.CASES))


def _gpu_report_parser(sub) -> None:
    """``scatterx gpu-report``'s arguments."""
    r = sub.add_parser(
        "gpu-report",
        help="compile every GPU kernel variant for real GPUs (no GPU needed): resources, code checks, bandwidth model",
    )
    r.add_argument(
        "--targets",
        default="80,90,100",
        help="CUDA compute capabilities x10, default 80,90,100 (sm_100 where the bundled ptxas knows it)",
    )
    r.add_argument("--jobs", type=int, default=None, help="compiling processes, default one per CPU")
    r.add_argument("--match", default=None, help="only the variants whose name contains this")
    r.add_argument(
        "--measure",
        action="store_true",
        help="also time the bandwidth model's calls on this machine's GPU, beside the model",
    )
    r.add_argument(
        "--out-dir",
        default="bench-results/gpu-static",
        help="where report.md, report.json, variants.json and bandwidth-model.{md,json} go",
    )


def _plot_parser(sub) -> None:
    """``scatterx plot``'s arguments."""
    p = sub.add_parser(
        "plot",
        help="redraw the figures of saved results: a directory holding bench.json, grid.csv or bench-gnn.json "
        "(or subdirectories holding bench-gnn.json: one figure for all)",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="e.g. bench-results/cpu bench-results/grid")


def _grid_arguments(b) -> None:
    g = b.add_argument_group(
        "grid",
        "scatterx bench --grid: index_scatter_reduce against the fastest torch path over a grid of "
        "shapes, then the element plans; writes grid.csv, grid.json, grid-sizes.png and grid-elements.png",
    )
    s = grid.GridSpec()
    g.add_argument(
        "--grid",
        nargs="?",
        const="default",
        choices=["default", "full"],
        help="run the grid: 'default' (the base plane and one axis at a time, minutes) or 'full' "
        "(every combination, hours)",
    )
    g.add_argument("--grid-edges", default=_ints(s.edges), help=f"default {_ints(s.edges)}")
    g.add_argument("--grid-features", default=_ints(s.features), help=f"default {_ints(s.features)}")
    g.add_argument("--grid-degrees", default=_ints(s.degrees), help=f"mean in-degrees, default {_ints(s.degrees)}")
    g.add_argument("--grid-dtypes", default=None, help=f"default {','.join(s.dtypes)}")
    g.add_argument(
        "--grid-dims",
        default=_ints(s.dims),
        help="0 (of an (E, F) src) and/or -1 (of an (F, E) src; write --grid-dims=-1), default 0,-1",
    )
    g.add_argument(
        "--grid-elements",
        default=",".join(s.elements),
        help=f"element-plan sizes, a subset of {','.join(grid_elements.SIZES)}, or none",
    )
    g.add_argument(
        "--grid-time",
        type=float,
        default=s.seconds,
        help=f"timing budget per implementation and cell in seconds, default {s.seconds}",
    )
    g.add_argument(
        "--cpu-target",
        default=targets.HOST,
        help="comma-separated CPU targets Numba compiles for, one grid each (results in "
        f"<out-dir>/<target>/ when not only host): a subset of {','.join(targets.TARGETS)}; "
        "x86-64-v3 is AVX2. Default host",
    )
    g.add_argument(
        "--grid-memory",
        type=float,
        default=s.memory_fraction,
        help=f"skip cells needing more than this fraction of the available memory, default {s.memory_fraction}",
    )


def _ints(values) -> str:
    return ",".join(str(v) for v in values)


def _int_list(value: str, name: str, minimum: Optional[int] = None, allowed=None) -> tuple:
    try:
        items = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        items = ()
    if not items or (minimum is not None and min(items) < minimum) or (allowed and set(items) - set(allowed)):
        rule = f"integers >= {minimum}" if minimum is not None else f"integers, a subset of {_ints(allowed)}"
        raise SystemExit(f"scatterx: --{name} takes comma-separated {rule}; got {value!r}")
    return items


def _grid_spec(args) -> grid.GridSpec:
    if args.device != "cpu":
        raise SystemExit("scatterx bench --grid runs on the CPU only")
    floating = ("float32", "bfloat16", "float16", "float64")
    dtypes = args.grid_dtypes or args.dtype or ",".join(grid.DTYPES)
    elements = () if args.grid_elements == "none" else _split(args.grid_elements, grid_elements.SIZES, "grid-elements")
    if (
        args.grid_time < 0
        or not 0 < args.grid_memory <= 1
        or args.threads < 1
        or (args.repeat is not None and args.repeat < 1)
    ):
        raise SystemExit("scatterx bench --grid: --grid-time >= 0, 0 < --grid-memory <= 1, --threads and --repeat >= 1")
    return grid.GridSpec(
        edges=_int_list(args.grid_edges, "grid-edges", 1),
        features=_int_list(args.grid_features, "grid-features", 1),
        degrees=_int_list(args.grid_degrees, "grid-degrees", 1),
        orders=_split(args.orders, ORDERS, "orders"),
        reductions=_split(args.reductions or ",".join(grid.REDUCTIONS), REDUCTIONS, "reductions"),
        dtypes=_split(dtypes, floating, "grid-dtypes"),
        dims=_int_list(args.grid_dims, "grid-dims", allowed=(0, -1)),
        full=args.grid == "full",
        backward=not args.no_backward,
        elements=elements,
        threads=args.threads,
        seconds=args.grid_time,
        min_calls=args.repeat or grid.GridSpec.min_calls,
        memory_fraction=args.grid_memory,
        seed=args.seed,
    )


def _bench_grid(args, argv: List[str]) -> None:
    spec = _grid_spec(args)
    chosen = _split(args.cpu_target, targets.TARGETS, "cpu-target")
    if len(chosen) > 1 or not targets.compiling_for(chosen[0]):
        if os.environ.get(targets.CHILD):
            raise SystemExit(
                f"scatterx bench --grid: Numba did not take the CPU target {chosen[0]!r} "
                "(NUMBA_CPU_NAME) in the child process"
            )
        rows = targets.run(argv, chosen, args.out_dir)
        print(targets.table(rows))
        failed = [str(r["target"]) for r in rows if "failed" in r]
        if failed:
            raise SystemExit(f"scatterx bench --grid: no results for CPU target(s) {', '.join(failed)}")
        return
    result = grid.run(spec, progress=_progress(), log=lambda msg: print(msg, file=sys.stderr))
    print(grid_report.table(result))
    for path in grid_report.write_files(result, args.out_dir):
        print(f"wrote {path}")


def _split(value: str, allowed, name: str):
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    wrong = [v for v in items if v not in allowed]
    if wrong or not items:
        raise SystemExit(f"scatterx: --{name} takes a comma-separated subset of {','.join(allowed)}; got {value!r}")
    return items


def _gpu_kernels(args) -> None:
    """The GPU kernel-time table (and, with --sweep, the tile sweep) of ``scatterx bench --device cuda``."""
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    repeat = 20 if args.repeat is None else args.repeat
    rows = gpu_kernels.run("cuda", repeat=repeat, log=log)
    print(gpu_kernels.table(rows))
    print(f"wrote {gpu_kernels.write(rows, args.out_dir)}")
    if args.sweep:
        swept = gpu_kernels.sweep("cuda", repeat=repeat, log=log)
        print(gpu_kernels.sweep_table(swept))
        print(f"wrote {gpu_kernels.write(swept, args.out_dir, 'sweep.json')}")


def _require_cuda(command: str = "scatterx bench --device cuda") -> None:
    if not torch.cuda.is_available():
        raise SystemExit(f"{command}: torch sees no CUDA device on this machine")
    if not available():
        raise SystemExit(f"{command}: triton is not installed (pip install triton)")


def _check_bench_numbers(args) -> None:
    """Plain ``bench``'s sizes and counts, before anything runs (``--grid`` checks its own)."""
    low = {"edges": 1, "nodes": 1, "features": 1, "threads": 1, "warmup": 0, "repeat": 1}
    bad = [
        f"--{name} must be >= {least}, got {getattr(args, name)}"
        for name, least in low.items()
        if getattr(args, name) is not None and getattr(args, name) < least
    ]
    if bad:
        raise SystemExit("scatterx bench: " + "; ".join(bad))


def _prepare_out_dir(command: str, path: str) -> None:
    """Make the output folder before the work (minutes of it, for most commands), and say plainly why it cannot
    be made or written to: a path through a file, a file in its place, no permission."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise SystemExit(f"scatterx {command}: cannot make the output folder {path!r}: {error.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise SystemExit(f"scatterx {command}: cannot write to the output folder {path!r}")


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if args.command == "bench" and not args.grid:
        _check_bench_numbers(args)
    if getattr(args, "out_dir", None) is not None:
        _prepare_out_dir(args.command, args.out_dir)
    if args.command == "bench" and args.grid:
        _bench_grid(args, argv)
    elif args.command == "bench":
        d = Config()
        config = Config(
            edges=args.edges,
            nodes=args.nodes,
            features=args.features,
            dtype=args.dtype or d.dtype,
            degrees=args.degrees,
            reductions=_split(args.reductions or ",".join(REDUCTIONS), REDUCTIONS, "reductions"),
            orders=_split(args.orders, ORDERS, "orders"),
            threads=args.threads,
            repeat=d.repeat if args.repeat is None else args.repeat,
            warmup=args.warmup,
            seed=args.seed,
            peers=not args.no_peers,
            latency=not args.no_latency,
            launch=not args.no_launch,
            backward=not args.no_backward,
            skip=tuple(flag for flag in section_flags() if getattr(args, f"no_{flag}")),
            dropin=not args.no_dropin,
            device=args.device,
        )
        if args.device == "cuda":
            _require_cuda()
            _gpu_kernels(args)
            if args.kernels_only:
                return 0
        elif args.kernels_only or args.sweep:
            raise SystemExit("scatterx bench: --kernels-only and --sweep time the GPU kernels: add --device cuda")
        result = run(config, progress=_progress(), log=lambda msg: print(msg, file=sys.stderr))
        print(report_mod.table(result))
        for path in report_mod.write_files(result, args.out_dir):
            print(f"wrote {path}")
    elif args.command == "bench-gnn":
        _bench_gnn(args)
    elif args.command == "bench-dist":
        _bench_dist(args)
    elif args.command == "bench-export":
        _bench_export(args)
    elif args.command == "partition":
        _partition(args)
    elif args.command == "gpu-report":
        return _gpu_report(args)
    elif args.command == "plot":
        return _plot(args.dirs)
    return 0


def _bench_export(args) -> None:
    try:
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise SystemExit(
            "scatterx bench-export needs onnxscript and onnxruntime: pip install 'scatterx[export]'"
        ) from None
    for name in ("edges", "nodes", "features", "threads", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"scatterx bench-export: --{name} must be at least 1, got {getattr(args, name)}")
    cases = None if args.cases is None else _split(args.cases, export_onnx.CASES, "cases")
    rows = export_onnx.export_onnx_rows(args.edges, args.nodes, args.features, args.threads, args.repeats, cases)
    print(
        f"scatterx bench-export: {args.edges:,} edges x {args.features} float32 features -> {args.nodes:,} nodes, "
        f"power-law in-degrees; {args.threads} thread(s) for onnxruntime (intra-op) and torch"
    )
    print(export_onnx.format_rows(rows))
    results = [result for row in rows for result in evaluate("bench-export", row)]
    print("\n".join(text.tail(results, environment("cpu"))))


def _plot(dirs: List[str]) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("scatterx plot needs matplotlib: pip install 'scatterx[bench]'") from None
    for directory in dirs:
        if not pathlib.Path(directory).is_dir():
            raise SystemExit(f"scatterx plot: {directory} is not a directory")
        written = figures.plot_dir(directory)
        if not written:
            raise SystemExit(f"scatterx plot: {directory} holds no bench.json, grid.csv or bench-gnn.json")
        for path in written:
            print(f"wrote {path}")
    return 0


def _gpu_report(args) -> int:
    if not available():
        raise SystemExit("scatterx gpu-report: triton is not installed (pip install triton)")
    targets = _int_list(args.targets, "targets", allowed=gpu_static.TARGETS)
    if args.jobs is not None and args.jobs < 1:
        raise SystemExit(f"scatterx gpu-report: --jobs must be >= 1, got {args.jobs}")
    if args.measure:
        _require_cuda("scatterx gpu-report --measure")
    try:
        result = gpu_static.run(targets, jobs=args.jobs, out_dir=args.out_dir, match=args.match)
    except ValueError as error:
        raise SystemExit(f"scatterx gpu-report: {error}") from error
    print(gpu_static.markdown(result["rows"], result["env"], result["seconds"]))
    for target in result["skipped_targets"]:
        print(f"sm_{target}: skipped, this Triton's ptxas cannot compile for it")
    for record in result["failed"][:20]:
        print(
            f"FAILED {', '.join(record['failed'])}: {record['variant']} sm_{record['target']}"
            + (f": {record['error']}" if record.get("error") else "")
        )
    rows = gpu_model.model()
    paths = gpu_model.write(args.out_dir, rows)
    balance = [gpu_model.balance(shape) for shape in gpu_model.SHAPES]
    paths += gpu_model.write_balance(args.out_dir, balance)
    print(gpu_model.balance_markdown(balance))
    if args.measure:
        device = torch.cuda.get_device_name()
        text = gpu_model.markdown(rows, gpu_model.measure(), device)
        paths.append(pathlib.Path(args.out_dir) / "measured.md")
        paths[-1].write_text(text)
        print(text)
    else:
        print(gpu_model.markdown(rows))
    print(f"wrote {args.out_dir}/report.md, report.json, variants.json and " + ", ".join(p.name for p in paths))
    return 1 if result["failed"] else 0


def _bench_dist(args) -> None:
    try:
        procs = sorted({int(p) for p in args.procs.split(",") if p.strip()})
    except ValueError:
        raise SystemExit(f"scatterx bench-dist: --procs must be comma-separated integers, got {args.procs!r}") from None
    if not procs or procs[0] < 1:
        raise SystemExit(f"scatterx bench-dist: --procs must list process counts >= 1, got {args.procs!r}")
    for name, value in (
        ("epochs", args.epochs),
        ("nodes", args.nodes),
        ("features", args.features),
        ("hidden", args.hidden),
        ("threads", args.threads),
    ):
        if value is not None and value < 1:
            raise SystemExit(f"scatterx bench-dist: --{name} must be >= 1, got {value}")
    config = gnn.GnnConfig.for_graph(
        args.graph,
        nodes=args.nodes,
        edges=args.edges,
        features=args.features,
        hidden=args.hidden,
        threads=args.threads,
        seed=args.seed,
    )
    models = _split(args.models, tuple(dist.MODELS), "models")
    methods = _split(args.partitions, tuple(dist.METHODS), "partitions")
    _require_pyg("scatterx bench-dist")
    results = dist.run(config, procs, args.epochs, models, methods, log=lambda msg: print(msg, file=sys.stderr))
    print(dist.table(config, results))


def _require_pyg(command: str) -> None:
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        raise SystemExit(f"{command} needs PyTorch Geometric: pip install 'scatterx[pyg,bench]'") from None


def _partition(args) -> None:
    if args.world < 1:
        raise SystemExit(f"scatterx partition: --world must be >= 1, got {args.world}")
    config = gnn.GnnConfig.for_graph(args.graph, seed=args.seed)
    data = gnn.make_arxiv_like(config)
    try:
        gp = sxd.partition_graph(
            data.edge_index, config.nodes, args.world, args.method, seed=args.seed, balance=args.balance
        )
    except ImportError as error:
        raise SystemExit(f"scatterx partition: {error}") from error
    meta = sxd.save_shards(
        args.out_dir, gp, data.edge_index, x=data.x, y=data.y, masks={"train_mask": data.train_mask}, name=args.graph
    )
    print(
        f"{args.graph}: {meta['num_nodes']:,} nodes, {meta['num_edges']:,} edges, {args.method} partition over "
        f"{args.world} ranks (partition {meta['partition_id']})"
    )
    print(
        f"edge cut {meta['edge_cut']:,} ({meta['edge_cut'] / max(meta['num_edges'], 1):.1%} of the edges), halo "
        f"{sum(meta['halo']):,} nodes"
    )
    for r in range(args.world):
        lo, hi = meta["bounds"][r], meta["bounds"][r + 1]
        print(f"  rank {r}: {hi - lo:,} nodes, {meta['edges'][r]:,} edges into them, halo {meta['halo'][r]:,}")
    print(f"wrote {args.out_dir}/meta.json and {args.world} shard file(s)")


def _bench_gnn(args) -> None:
    if args.mini_batch:  # before PyG is imported: the run installs scatterx.pyg_lib first
        _bench_gnn_mini_batch(args)
        return
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        raise SystemExit("scatterx bench-gnn needs PyTorch Geometric: pip install 'scatterx[pyg,bench]'") from None
    graph = args.graph or GnnConfig().graph
    if graph not in gnn.GRAPHS:
        raise SystemExit(f"scatterx bench-gnn: --graph {graph} is for --mini-batch runs only")

    for name, value in (
        ("epochs", args.epochs),
        ("nodes", args.nodes),
        ("features", args.features),
        ("hidden", args.hidden),
        ("threads", args.threads),
    ):
        if value is not None and value < 1:
            raise SystemExit(f"scatterx bench-gnn: --{name} must be >= 1, got {value}")
    if args.edges is not None and args.edges < 0:
        raise SystemExit(f"scatterx bench-gnn: --edges must be >= 0, got {args.edges}")
    if args.hidden % 4:
        raise SystemExit(f"scatterx bench-gnn: --hidden must be a multiple of 4 (GAT's 4 heads), got {args.hidden}")
    config = gnn.GnnConfig.for_graph(
        graph,
        nodes=args.nodes,
        edges=args.edges,
        features=args.features,
        hidden=args.hidden,
        epochs=args.epochs,
        models=_split(args.models or ",".join(MODELS), gnn.MODELS, "models"),
        threads=args.threads,
        seed=args.seed,
        memory=not args.no_memory,
        onnx=args.onnx,
        cold=args.cold,
        compile=args.compile,
    )
    report = gnn.run(config, log=lambda msg: print(msg, file=sys.stderr))
    print(gnn.table(report))
    for path in gnn.write_files(report, args.out_dir):
        print(f"wrote {path}")


def _bench_gnn_mini_batch(args) -> None:
    import importlib.util

    if importlib.util.find_spec("torch_geometric") is None:
        raise SystemExit("scatterx bench-gnn needs PyTorch Geometric: pip install 'scatterx[pyg,bench]'")
    for name in ("batches", "batch_size", "nodes", "features", "hidden", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SystemExit(f"scatterx bench-gnn: --{name.replace('_', '-')} must be >= 1, got {value}")
    if args.edges is not None and args.edges < 0:
        raise SystemExit(f"scatterx bench-gnn: --edges must be >= 0, got {args.edges}")
    if args.hidden % 4:
        raise SystemExit(f"scatterx bench-gnn: --hidden must be a multiple of 4 (GAT's 4 heads), got {args.hidden}")
    for flag in ("cold", "compile", "onnx"):
        if getattr(args, flag):
            raise SystemExit(f"scatterx bench-gnn: --{flag} is for full-batch runs, not --mini-batch")
    config = gnn_minibatch.MiniBatchConfig.for_graph(
        args.graph or "products",
        nodes=args.nodes,
        edges=args.edges,
        features=args.features,
        hidden=args.hidden,
        batches=args.batches,
        batch_size=args.batch_size,
        models=_split(args.models or ",".join(gnn_minibatch.MODELS), gnn.MODELS, "models"),
        hetero=not args.no_hetero,
        threads=args.threads,
        seed=args.seed,
    )
    report = gnn_minibatch.run(config, log=lambda msg: print(msg, file=sys.stderr))
    print(gnn_minibatch.table(report))
    for path in gnn_minibatch.write_files(report, args.out_dir):
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
