"""Command line: ``scatterx bench`` (also ``python -m scatterx bench``)."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


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
    from .bench.harness import ORDERS, REDUCTIONS, Config

    d = Config()
    parser = argparse.ArgumentParser(prog="scatterx", description="Fast scatter/gather-reduce for PyTorch.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time scatterx against torch (and torch_scatter) on a synthetic graph")
    b.add_argument("--edges", type=int, default=d.edges, help=f"number of edges (rows of src), default {d.edges:,}")
    b.add_argument("--nodes", type=int, default=d.nodes, help=f"number of target nodes, default {d.nodes:,}")
    b.add_argument("--features", type=int, default=d.features, help=f"features per edge, default {d.features}")
    b.add_argument("--dtype", default=d.dtype, choices=["float32", "float64", "float16", "bfloat16", "int32", "int64"])
    b.add_argument("--degrees", default=d.degrees, choices=["powerlaw", "uniform"], help="in-degree distribution")
    b.add_argument("--reductions", default=",".join(REDUCTIONS), help="comma-separated, default all")
    b.add_argument("--orders", default=",".join(ORDERS), help="sorted and/or shuffled index, default both")
    b.add_argument("--threads", type=int, default=d.threads, help=f"torch (and scatterx) threads, default {d.threads}")
    b.add_argument("--repeat", type=int, default=d.repeat, help="timed calls per case (the median is reported)")
    b.add_argument("--warmup", type=int, default=d.warmup)
    b.add_argument("--seed", type=int, default=d.seed)
    b.add_argument("--no-peers", action="store_true", help="time scatterx only")
    b.add_argument("--no-latency", action="store_true", help="skip the first-call (JIT) latency measurement")
    b.add_argument("--no-backward", action="store_true", help="skip the forward+backward rows (sum, mean, amax)")
    b.add_argument("--device", default=d.device, choices=["cpu", "cuda"],
                   help="cpu (Numba kernels) or cuda (Triton kernels, timed with CUDA events)")
    b.add_argument("--out-dir", default="bench-results", help="where bench.csv, bench.json and bench.png go")
    return parser


def _split(value: str, allowed, name: str):
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    wrong = [v for v in items if v not in allowed]
    if wrong or not items:
        raise SystemExit(f"scatterx bench: --{name} takes a comma-separated subset of {','.join(allowed)}; got {value!r}")
    return items


def _require_cuda() -> None:
    import torch

    from .kernels.gpu import available

    if not torch.cuda.is_available():
        raise SystemExit("scatterx bench --device cuda: torch sees no CUDA device on this machine")
    if not available():
        raise SystemExit("scatterx bench --device cuda: triton is not installed (pip install triton)")


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        from .bench import report as report_mod
        from .bench.harness import ORDERS, REDUCTIONS, Config, run

        config = Config(
            edges=args.edges, nodes=args.nodes, features=args.features, dtype=args.dtype, degrees=args.degrees,
            reductions=_split(args.reductions, REDUCTIONS, "reductions"), orders=_split(args.orders, ORDERS, "orders"),
            threads=args.threads, repeat=args.repeat, warmup=args.warmup, seed=args.seed,
            peers=not args.no_peers, latency=not args.no_latency, backward=not args.no_backward,
            device=args.device,
        )
        if args.device == "cuda":
            _require_cuda()
        result = run(config, progress=_progress(), log=lambda msg: print(msg, file=sys.stderr))
        print(report_mod.table(result))
        for path in report_mod.write_files(result, args.out_dir):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
