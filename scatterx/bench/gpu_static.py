"""The GPU kernels compiled for real GPUs on a machine without one: ``scatterx gpu-report``.

Triton compiles for a GPU it cannot see: ``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`` runs
the whole pipeline (Triton IR, PTX, and a cubin from the ``ptxas`` its wheel ships). This module compiles every
variant the GPU backend can launch (``backends/gpu/variants.py``) for each target, in parallel processes, and
reads back from each:

- **resources** (from the cubin, ``cuobjdump -res-usage``): registers per thread, local memory and stack frame per
  thread, static shared memory, and the occupancy these allow on the target;
- **static checks** of the generated code, where they matter for speed or safety:

  ============  ====================================================================================
  ``spills``    no register spill inside a loop (``ptxas -v`` and the SASS, read where the cubin has local memory
                or a stack frame); spills outside loops are counted in the report but pass
  ``atomics``   atomic instructions only in the kernels the design gives them (the unsorted sum/mean
                path, ``ATOMIC_KERNELS``); none anywhere on the sorted path
  ``div64``     no 64-bit integer division or remainder inside a loop (PTX ``div``/``rem`` ``.s64``/``.u64``
                between a backward branch and its target: ptxas expands each into a long sequence)
  ``offsets``   every pointer offset computed in 64 bits (``tt.addptr`` with an i32 offset that is not a
                constant): a tensor may hold more than 2**31 elements while each size fits in 32 bits
  ``vector``    where rows are 16-aligned, the widest global load is 128 bits wide (or as wide as the
                elements a thread holds allow): contiguous features are read vectorised
  ============  ====================================================================================

The report (``report.md``, ``report.json``; every variant's numbers in ``variants.json``) and the bandwidth model
(``gpu_model.py``) go to ``bench-results/gpu-static/``. Nothing here needs a GPU; on one, ``tools/gpu-check.sh``
runs the same report and puts measured times beside the model's.

Why this module is long: it is one pipeline -- the parsers of the generated code (each a few lines, tested on
hand-written PTX/SASS/TTIR), the compile of one variant in a worker (two Triton API generations), the pool, and
the report -- and the parts share the record format of one compiled variant; split, that format would cross files.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import inspect
import multiprocessing
import os
import pathlib
import platform
import re
import subprocess
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, TypedDict

from .files import write_json, write_text
from .harness import source_commit

#: the default targets: A100 (sm_80) and H100 (sm_90) always; B200 (sm_100) where the bundled ptxas knows it
TARGETS = (80, 90, 100)
REQUIRED_TARGETS = (80, 90)
#: the kernels that may hold atomic instructions: the unsorted sum/mean route of index_scatter_reduce
ATOMIC_KERNELS = ("atomic_scatter_kernel",)
CHECKS = ("compiled", "spills", "atomics", "div64", "offsets", "vector")


class SmLimits(TypedDict):
    warps: int
    registers: int
    shared: int
    blocks: int
    name: str


#: per-SM limits of each target (CUDA C Programming Guide, "Compute Capabilities": max warps, registers, shared
#: memory per SM, register allocation unit per warp, max resident blocks)
SM_LIMITS: Dict[int, SmLimits] = {
    80: SmLimits(warps=64, registers=65536, shared=167936, blocks=32, name="A100"),
    90: SmLimits(warps=64, registers=65536, shared=233472, blocks=32, name="H100"),
    100: SmLimits(warps=64, registers=65536, shared=233472, blocks=32, name="B200"),
}
THREADS_PER_WARP = 32
REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256


# ------------------------------------------------------------------------------------------------ the code checks
_LOOP_LABEL = re.compile(r"^\s*(\$L__BB\d+_\d+):", re.M)
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);")
_DIV64 = re.compile(r"\b(?:div|rem)\.(?:s64|u64)\b")
_ATOMIC = re.compile(r"\b(?:atom|red)\.(?:global|shared|gpu|cta|sys|relaxed|acq_rel|release|acquire)[\w.]*")
_GLOBAL_LOAD = re.compile(r"\bld\.global(?:\.[\w]+)*?\.(v2|v4|v8)?\.?([bsuf])(8|16|32|64)\b")
_ADDPTR = re.compile(r"(%[\w.#]+) = tt\.addptr (%[\w.#]+), (%[\w.#]+) : [^,]+, (tensor<[^>]*x(i32|i64)>|i32|i64)")
_CONSTANT = re.compile(r"(%[\w.#]+) = arith\.constant")


def loops(ptx: str) -> List[str]:
    """The bodies of the PTX's loops: the text from a label to a later branch back to it."""
    labels = {m.group(1): m.start() for m in _LOOP_LABEL.finditer(ptx)}
    return [
        ptx[labels[m.group(1)] : m.start()]
        for m in _BRANCH.finditer(ptx)
        if m.group(1) in labels and labels[m.group(1)] < m.start()
    ]


def div64_in_loops(ptx: str) -> int:
    """How many 64-bit integer divisions or remainders sit inside a loop."""
    return sum(len(_DIV64.findall(body)) for body in loops(ptx))


def atomics(ptx: str) -> int:
    """How many atomic (``atom``/``red``) instructions the PTX holds."""
    return len(_ATOMIC.findall(ptx))


def widest_global_load(ptx: str) -> int:
    """The widest global load, in bits (a vector load counts its lanes: ``ld.global.v4.b32`` is 128)."""
    widest = 0
    for vector, _, bits in _GLOBAL_LOAD.findall(ptx):
        widest = max(widest, int(bits) * (int(vector[1:]) if vector else 1))
    return widest


def narrow_offsets(ttir: str) -> List[str]:
    """The ``tt.addptr`` results whose offset is a 32-bit value computed at run time (constants are exempt): an
    address that overflows once a tensor holds 2**31 elements."""
    constants = set(_CONSTANT.findall(ttir))
    return [m.group(1) for m in _ADDPTR.finditer(ttir) if m.group(5) == "i32" and m.group(3) not in constants]


def occupancy(target: int, registers: int, shared: int, warps: int) -> float:
    """The fraction of the SM's warp slots that blocks of ``warps`` warps using ``registers`` per thread and
    ``shared`` bytes of shared memory can fill (the limits of ``SM_LIMITS``)."""
    limits = SM_LIMITS[target]
    per_warp = -(-max(registers, 1) * THREADS_PER_WARP // REGISTER_UNIT) * REGISTER_UNIT
    blocks = min(limits["blocks"], limits["warps"] // warps, limits["registers"] // (per_warp * warps))
    if shared:
        blocks = min(blocks, limits["shared"] // shared)
    return blocks * warps / limits["warps"]


def resources(cubin: bytes, cuobjdump: str) -> Dict[str, int]:
    """Registers, local (spill) bytes, stack and static shared memory per thread/block, from the cubin."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        text = subprocess.run([cuobjdump, "-res-usage", str(path)], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", text))
    return {
        "registers": int(fields.get("REG", 0)),
        "local": int(fields.get("LOCAL", 0)),
        "stack": int(fields.get("STACK", 0)),
        "shared": int(fields.get("SHARED", 0)),
    }


# ------------------------------------------------------------------------------------------------- the compiling
def _expected_load_bits(variant: dict) -> int:
    """The widest load a variant should reach on its aligned rows: 128 bits, or a thread's share of a tile row
    when that is less (4 warps of 32 threads share a tile). The first argument is the data (its type sets the
    element width)."""
    constexprs: Dict[str, Any] = dict(variant["constexprs"])
    block_f = constexprs.get("BLOCK_F", constexprs.get("BLOCK_C", 1))
    per_thread = max(1, constexprs.get("BLOCK_E", 1) * block_f // (4 * THREADS_PER_WARP))
    bits = _BITS[variant["params"][0][1]]
    return min(128, per_thread * bits, block_f * bits)


_BITS = {"*fp64": 64, "*i64": 64, "*fp32": 32, "*i32": 32, "*fp16": 16, "*bf16": 16}


def _ast_source(fn, variant: dict):
    """Triton's ``ASTSource`` for ``variant``, in the form this Triton takes (3.0-3.2: positional signature,
    ``constants`` and an ``AttrsDescriptor``; later: named signature with ``constexpr`` entries and attribute
    lists)."""
    import triton.language as tl
    from triton.compiler import ASTSource

    names = list(inspect.signature(fn.fn).parameters)
    params = dict(variant["params"])
    constexprs = {k: (tl.dtype(v) if isinstance(v, str) else v) for k, v in variant["constexprs"]}
    aligned = [names.index(n) for n, t in variant["params"] if t.startswith("*") or n in variant["aligned"]]
    if "constexprs" in inspect.signature(ASTSource.__init__).parameters:
        signature = {n: params.get(n, "constexpr") for n in names}
        return ASTSource(
            fn=fn,
            signature=signature,
            constexprs={(names.index(k),): v for k, v in constexprs.items()},
            attrs={(i,): [["tt.divisibility", 16]] for i in aligned},
        )
    from triton.compiler.compiler import AttrsDescriptor

    return ASTSource(
        fn=fn,
        signature={names.index(n): t for n, t in variant["params"]},
        constants={names.index(k): v for k, v in constexprs.items()},
        attrs=AttrsDescriptor(divisible_by_16=tuple(aligned), equal_to_1=()),
    )


def _bin(name: str) -> pathlib.Path:
    import triton

    return pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name


def _ptxas(target: int) -> pathlib.Path:
    """The ptxas Triton uses for ``target`` (from 3.4 on, a newer one for sm_90 and up)."""
    newer = _bin("ptxas-blackwell")
    return newer if target >= 90 and newer.exists() else _bin("ptxas")


def spills(ptx: str, target: int) -> Dict[str, int]:
    """Register spills of ``ptx`` as ptxas compiles it for ``target``: ``spill_bytes`` (stores and loads per thread,
    from ``ptxas -v``; the cubin's stack frame alone does not say, ptxas also uses it for calls such as the slow
    path of an IEEE division) and ``hot_spills``, the spill instructions (``STL``/``LDL``) inside a loop of the
    SASS. A spill outside every loop -- a value stored once before the loops and loaded once after -- costs a
    thread two L1 accesses; one inside a loop costs every iteration."""
    target_line = re.search(r"^\.target\s+(\w+)", ptx, re.M)
    if target_line is None:
        raise ValueError("the PTX names no .target: cannot ask ptxas about its spills")
    arch = target_line.group(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "kernel.ptx"
        path.write_text(ptx)
        log = subprocess.run(
            [str(_ptxas(target)), "-v", f"-arch={arch}", str(path), "-o", str(path) + ".o"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        sass = subprocess.run(
            [str(_bin("cuobjdump")), "-sass", str(path) + ".o"], capture_output=True, text=True, check=False
        ).stdout  # no SASS (cuobjdump failed): no spill counted inside a loop
    return {
        "spill_bytes": sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)),
        "hot_spills": hot_spills(sass),
    }


_SASS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", re.I)


def hot_spills(sass: str) -> int:
    """How many local-memory spill instructions (``STL``/``LDL``) of the SASS lie inside a loop: between a
    backward branch and its target."""
    lines = [(int(a, 16), text) for a, text in _SASS.findall(sass)]
    ranges = [
        (int(m.group(1), 16), at)
        for at, text in lines
        for m in [re.search(r"\bBRA\s+(?:`?\()?0x([0-9a-f]+)", text, re.I)]
        if m and int(m.group(1), 16) < at
    ]
    return sum(
        1 for at, text in lines if re.search(r"\b(?:STL|LDL)\b", text) and any(lo <= at <= hi for lo, hi in ranges)
    )


def compile_variant(variant: dict, targets: Sequence[int]) -> List[dict]:
    """Compile one variant (a ``Variant`` as a dict) for each target; a record per target. Runs in a worker
    process whose Triton does not interpret (``_worker_init``)."""
    import importlib

    module, name = variant["kernel"].rsplit(".", 1)
    fn = getattr(importlib.import_module(module), name)
    records, ttir = [], None
    for target in targets:
        record = {"kernel": name, "variant": variant["name"], "target": target}
        start = time.perf_counter()
        try:
            compiled = _compile(fn, variant, target, ttir)
            ttir = compiled.asm.get("ttir", ttir)  # (a compile from IR may not list the IR it started from)
        except Exception as error:
            message = str(error).strip().splitlines()
            record.update(compiled=False, error=(message[-1] if message else type(error).__name__)[:500])
            records.append(record)
            continue
        record["seconds"] = round(time.perf_counter() - start, 3)
        metadata = compiled.metadata
        warps = getattr(metadata, "num_warps", 4)
        used = resources(compiled.asm["cubin"], str(_bin("cuobjdump")))
        used["shared"] = max(used["shared"], getattr(metadata, "shared", 0) or 0)
        ptx = compiled.asm["ptx"]
        # local memory or a stack frame: ask ptxas whether it is spilling (rare: the run stays cheap)
        used.update(spills(ptx, target) if used["local"] or used["stack"] else {"spill_bytes": 0, "hot_spills": 0})
        record.update(
            compiled=True,
            warps=warps,
            **used,
            atomics=atomics(ptx),
            div64_in_loops=div64_in_loops(ptx),
            narrow_offsets=len(narrow_offsets(ttir)),
            widest_load=widest_global_load(ptx),
            expected_load=_expected_load_bits(variant) if variant["aligned"] else 0,
        )
        record["occupancy"] = round(occupancy(target, used["registers"], record["shared"], warps), 3)
        records.append(record)
    return records


def _compile(fn, variant: dict, target: int, ttir: Optional[str]):
    """Compile ``variant`` for ``target``: from the Triton IR another target's compile produced where there is one
    (it does not depend on the target: the later stages do; this skips the front end, a sixth of the time),
    else from the kernel's source."""
    import triton
    from triton.backends.compiler import GPUTarget

    gpu = GPUTarget("cuda", target, 32)
    if ttir is not None:
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / f"{variant['kernel'].rsplit('.', 1)[1]}.ttir"
            path.write_text(ttir)
            try:
                return triton.compile(str(path), target=gpu)
            except Exception:
                pass
    return triton.compile(_ast_source(fn, variant), target=gpu)


def failures(record: dict) -> List[str]:
    """The checks (``CHECKS``) a compiled record fails."""
    if not record["compiled"]:
        return ["compiled"]
    failed = []
    if record["hot_spills"]:
        failed.append("spills")
    if record["atomics"] and record["kernel"] not in ATOMIC_KERNELS:
        failed.append("atomics")
    if record["div64_in_loops"]:
        failed.append("div64")
    if record["narrow_offsets"]:
        failed.append("offsets")
    if record["widest_load"] < record["expected_load"]:
        failed.append("vector")
    return failed


def _worker_init():
    import warnings

    os.environ["TRITON_INTERPRET"] = "0"  # read when a kernel is defined: this process compiles, never interprets
    # Triton 3.9 warns once per process that its FP-fusion default will change; the report compiles with the
    # default a user's JIT gets, so the warning says nothing here
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION")


def supported_targets(targets: Iterable[int]) -> List[int]:
    """The targets this Triton's bundled ptxas can compile for (sm_100 needs a Blackwell-aware one)."""
    import triton

    bin_dir = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    return [t for t in targets if t < 100 or (bin_dir / "ptxas-blackwell").exists()]


def compile_all(variants: Sequence[dict], targets: Sequence[int], jobs: Optional[int] = None) -> List[dict]:
    """Every variant for every target, in ``jobs`` processes (default: one per CPU)."""
    jobs = jobs or os.cpu_count() or 1
    context = multiprocessing.get_context("spawn")
    records: List[dict] = []
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_init) as pool:
        for result in pool.map(compile_variant, variants, [tuple(targets)] * len(variants), chunksize=8):
            records.extend(result)
    return records


# --------------------------------------------------------------------------------------------------- the report
def summarize(records: Sequence[dict]) -> List[dict]:
    """One row per (kernel, target): variants, compiled, the worst resources, and the checks' failures."""
    groups: Dict[tuple, List[dict]] = collections.defaultdict(list)
    for r in records:
        groups[(r["kernel"], r["target"])].append(r)
    rows = []
    for (kernel, target), group in sorted(groups.items()):
        ok = [r for r in group if r["compiled"]]
        failed = collections.Counter(f for r in group for f in failures(r))
        rows.append(
            dict(
                kernel=kernel,
                target=target,
                variants=len(group),
                compiled=len(ok),
                max_registers=max((r["registers"] for r in ok), default=0),
                spills=sum(1 for r in ok if r["spill_bytes"]),
                hot_spills=sum(1 for r in ok if r["hot_spills"]),
                stack=max((r["stack"] for r in ok), default=0),
                max_shared=max((r["shared"] for r in ok), default=0),
                min_occupancy=min((r["occupancy"] for r in ok), default=0.0),
                atomics=sum(1 for r in ok if r["atomics"]),
                widest_load=max((r["widest_load"] for r in ok), default=0),
                failed=dict(failed),
            )
        )
    return rows


def environment() -> Dict[str, str]:
    import triton

    return {
        "triton": triton.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
        "commit": source_commit(),
    }


def markdown(rows: Sequence[dict], env: Dict[str, str], seconds: float) -> str:
    """The report's table, and the totals the goals are read from."""
    total = sum(r["variants"] for r in rows)
    compiled = sum(r["compiled"] for r in rows)
    failed: collections.Counter[str] = collections.Counter()
    for r in rows:
        failed.update(r["failed"])
    targets = sorted({r["target"] for r in rows})
    lines = [
        "# GPU kernels compiled without a GPU",
        "",
        f"Triton {env['triton']}, targets {', '.join(f'sm_{t}' for t in targets)}; {compiled} of {total} "
        f"(variant, target) pairs compiled in {seconds:.0f} s. Produced by `scatterx gpu-report` at commit "
        f"{env.get('commit', 'unknown')} "
        "(`scatterx/bench/gpu_static.py` says what each column and check means).",
        "",
        "Checks failed: " + (", ".join(f"{k} x{n}" for k, n in sorted(failed.items())) if failed else "none") + ".",
        "",
        "| kernel | target | variants | compiled | max regs | spilling (in a loop) | max stack B | max shared B | "
        "min occupancy | with atomics | widest load (bits) | failed checks |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        checks = ", ".join(f"{k} x{n}" for k, n in sorted(r["failed"].items())) or "-"
        lines.append(
            f"| {r['kernel']} | sm_{r['target']} | {r['variants']} | {r['compiled']} | {r['max_registers']} | "
            f"{r['spills']} ({r['hot_spills']}) | {r['stack']} | {r['max_shared']} | "
            f"{r['min_occupancy']:.2f} | {r['atomics']} | {r['widest_load']} | {checks} |"
        )
    return "\n".join(lines) + "\n"


def variant_dicts(match: Optional[str] = None) -> List[dict]:
    """Every variant the GPU backend lists (those whose name contains ``match``), as the compiles take them."""
    from ..backends.gpu.variants import all_variants

    return [dict(dataclasses.asdict(v), name=v.name) for v in all_variants() if not match or match in v.name]


def run(
    targets: Sequence[int] = TARGETS,
    jobs: Optional[int] = None,
    out_dir: Optional[str] = None,
    match: Optional[str] = None,
) -> dict:
    """Compile every variant (those whose name contains ``match``) for ``targets`` (those this Triton supports),
    write the report to ``out_dir``, and return ``{"rows", "records", "failed", "env", "skipped_targets"}``."""
    variants = variant_dicts(match)
    if not variants:
        raise ValueError(f"no variant's name contains {match!r} (names look like segment_reduce_kernel[REDUCE=0,...])")
    usable = supported_targets(targets)
    start = time.perf_counter()
    records = compile_all(variants, usable, jobs)
    seconds = time.perf_counter() - start
    rows = summarize(records)
    env = environment()
    result = {
        "env": env,
        "seconds": round(seconds, 1),
        "variants": len(variants),
        "targets": usable,
        "skipped_targets": [t for t in targets if t not in usable],
        "rows": rows,
        "records": records,
        "failed": [dict(r, failed=failures(r)) for r in records if failures(r)],
    }
    if out_dir:
        write_text(out_dir, "report.md", markdown(rows, env, seconds))
        summary = {k: v for k, v in result.items() if k != "records"}
        write_json(out_dir, "report.json", summary, default=str)
        # every compiled variant's numbers (~1 MB: regenerated, not committed)
        write_json(out_dir, "variants.json", result, default=str, indent=None)
    return result
