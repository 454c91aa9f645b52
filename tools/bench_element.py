"""Time the planner's element plans against torch (issue #13), alternating versions of scatterx.

    python tools/bench_element.py                                   # this checkout only
    python tools/bench_element.py before=/path/to/old/checkout after=.   # A/B, alternating processes

Every round runs one process per version in turn (so that the load of a shared machine falls on all of them
alike); each process times every case ``--reps`` times after two warm-up calls, scatterx and torch alternating.
The table gives, per version, the median and the minimum over all rounds, and torch's (pooled over every
process) for the speed-up ``torch / scatterx`` of the medians. Cases: 200k x 64 float32 into 50k x 64 with a
random general index (``torch.randint(0, 50_000, (200_000, 64))``) along dim 0 and, transposed, along dim 1; the
same at 1,000 x 16 into 250 x 16; ``scatter_reduce`` sum/amax with and without ``include_self``, ``scatter``
(assign) and ``gather``; ONNX ScatterND (add) and GatherND with one whole coordinate pair per update (200k and
1k pairs into the same data) against ``index_put(accumulate=True)`` and advanced indexing; ``--threads``
(default 2) torch and Numba threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def cases(torch, scatterx):
    g = torch.Generator().manual_seed(0)
    for size, (E, N, F) in (("200k x 64", (200_000, 50_000, 64)), ("1k x 16", (1000, 250, 16))):
        for dim in (0, 1):
            shape, data_shape = ((E, F), (N, F)) if dim == 0 else ((F, E), (F, N))
            src = torch.randn(shape, generator=g)
            index = torch.randint(0, N, shape, generator=g)
            zeros, data = torch.zeros(data_shape), torch.randn(data_shape, generator=g)
            label = f"{size} dim {dim}"
            for reduce in ("sum", "amax"):
                for self_ in (True, False):
                    yield (
                        f"{label} scatter_reduce {reduce} include_self={self_}",
                        lambda r=reduce, s=self_, z=zeros, i=index, x=src, d=dim: scatterx.scatter_reduce(
                            z, d, i, x, r, include_self=s
                        ),
                        lambda r=reduce, s=self_, z=zeros, i=index, x=src, d=dim: z.scatter_reduce(
                            d, i, x, r, include_self=s
                        ),
                    )
            yield (
                f"{label} scatter (assign)",
                lambda z=zeros, i=index, x=src, d=dim: scatterx.scatter(z, d, i, x),
                lambda z=zeros, i=index, x=src, d=dim: torch.scatter(z, d, i, x),
            )
            yield (
                f"{label} gather",
                lambda y=data, i=index, d=dim: scatterx.gather(y, d, i),
                lambda y=data, i=index, d=dim: torch.gather(y, d, i),
            )
        # ScatterND / GatherND with whole coordinates: one (row, column) pair per update
        coords = torch.stack([torch.randint(0, N, (E,), generator=g), torch.randint(0, F, (E,), generator=g)], 1)
        updates, data = torch.randn(E, generator=g), torch.randn(N, F, generator=g)
        yield (
            f"{size} coordinates ScatterND add ({E} x 2)",
            lambda y=data, c=coords, u=updates: scatterx.onnx.scatter_nd(y, c, u, "add"),
            lambda y=data, c=coords, u=updates: y.index_put((c[:, 0], c[:, 1]), u, accumulate=True),
        )
        yield (
            f"{size} coordinates GatherND ({E} x 2)",
            lambda y=data, c=coords: scatterx.onnx.gather_nd(y, c),
            lambda y=data, c=coords: y[c[:, 0], c[:, 1]],
        )


def child(reps: int, threads: int, only) -> None:
    import torch

    import scatterx
    import scatterx.onnx

    torch.set_num_threads(threads)
    for name, ours, theirs in cases(torch, scatterx):
        if only and not any(o in name for o in only):
            continue
        if "assign" not in name:  # same values as torch (assign: torch leaves duplicates undefined)
            torch.testing.assert_close(ours(), theirs(), rtol=1e-4, atol=1e-4)
        times = {"ours": [], "torch": []}
        for f in (ours, theirs, ours, theirs):
            f()
        for _ in range(reps):
            for key, f in (("ours", ours), ("torch", theirs)):
                start = time.perf_counter()
                f()
                times[key].append((time.perf_counter() - start) * 1e3)
        print(json.dumps({name: times}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", help="name=path of a checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated substrings of the cases to run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o]
    if args.child:
        return child(args.reps, args.threads, only)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    versions = dict(v.split("=", 1) for v in args.versions) or {"scatterx": here}
    ours = {v: {} for v in versions}
    theirs = {}
    for _ in range(args.rounds):
        for version, path in versions.items():
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            command = [
                sys.executable,
                os.path.abspath(__file__),
                "--child",
                "--reps",
                str(args.reps),
                "--threads",
                str(args.threads),
                "--only",
                args.only,
            ]
            result = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=path)
            for line in result.stdout.splitlines():
                for name, times in json.loads(line).items():
                    ours[version].setdefault(name, []).extend(times["ours"])
                    theirs.setdefault(name, []).extend(times["torch"])
    header = (
        "| case | torch ms (median / min) | "
        + " | ".join(f"{v} ms (median / min) | {v} speed-up" for v in versions)
        + " |"
    )
    print(header)
    print("|" + "---|" * (2 + 2 * len(versions)))
    for name, times in theirs.items():
        row = [name, f"{statistics.median(times):.3g} / {min(times):.3g}"]
        for version in versions:
            mine = ours[version][name]
            row += [
                f"{statistics.median(mine):.3g} / {min(mine):.3g}",
                f"{statistics.median(times) / statistics.median(mine):.2f}x",
            ]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
