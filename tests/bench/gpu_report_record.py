"""The recorded result of ``scatterx gpu-report`` for sm_80 and sm_90, and the key it holds for.

Compiling every GPU kernel variant for two targets is ~1,000 compiles through Triton and ``ptxas``: ~15 core-minutes
from an empty Triton cache, which is how CI starts -- more than the rest of the suite's cold compiles together. What
a compile gives is a function of its inputs alone: the kernels' source, the variants the backend lists (their
constexprs, types and alignment), the checks, and Triton (with the ``ptxas`` its wheel ships). So the report is
recorded here (``gpu_report_record.json``) under a key made of exactly those, and
``test_gpu_static.py::test_every_variant_compiles...`` compiles

- **every variant** when the key differs from the record's (a kernel, a variant, a check or Triton changed) -- and
  then says how to record the new report;
- **a sample** otherwise, one variant of each kernel for each target, which must give the recorded numbers field
  for field (the record is what this toolchain makes of these sources, not a stale or hand-edited file); the
  checks then run on the recorded report.

Record after a change (every variant, every core; a few minutes)::

    python tests/bench/gpu_report_record.py

The record's diff then shows what the change did to each variant's registers, shared memory and loads.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import pathlib
import sys
from typing import Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORD = pathlib.Path(__file__).with_name("gpu_report_record.json")
TARGETS = (80, 90)
#: a record's fields, in the record's order (``seconds`` is not one: it is the only field a compile does not decide)
FIELDS = (
    "kernel",
    "variant",
    "target",
    "compiled",
    "warps",
    "registers",
    "local",
    "stack",
    "shared",
    "spill_bytes",
    "hot_spills",
    "atomics",
    "div64_in_loops",
    "narrow_offsets",
    "widest_load",
    "expected_load",
    "occupancy",
)
#: what a compile depends on, besides the variants and Triton: the kernels and the code that compiles and checks them
SOURCES = ("scatterx/kernels/gpu/*.py", "scatterx/bench/gpu_static.py", "tests/bench/gpu_report_record.py")


def variants() -> List[dict]:
    """Every variant the GPU backend lists, as ``scatterx gpu-report`` passes them to its compiles."""
    from scatterx.bench.gpu_static import variant_dicts

    return variant_dicts()


def key(variant_dicts: List[dict]) -> str:
    """The inputs of the report's compiles, hashed: Triton's version, the sources, the variants."""
    digest = hashlib.sha256()
    digest.update(f"triton {importlib.metadata.version('triton')} targets {TARGETS}\n".encode())
    for pattern in SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(f"{path.relative_to(ROOT)}\n".encode())
            digest.update(path.read_bytes())
    # the set of variants, not the order the backend's modules are found in
    listed = sorted(json.dumps(v, sort_keys=True, default=str) for v in variant_dicts)
    digest.update("\n".join(listed).encode())
    return digest.hexdigest()


def load() -> Optional[dict]:
    """The record: ``{"key", "triton", "records"}``, each record a dict of ``FIELDS``; None without one."""
    if not RECORD.exists():
        return None
    doc = json.loads(RECORD.read_text())
    return {**doc, "records": [dict(zip(doc["fields"], row)) for row in doc["rows"]]}


def comparable(record: dict) -> Tuple:
    """A compile's record as the record file holds it (``FIELDS``, in order)."""
    return tuple(record.get(f) for f in FIELDS)


def sample(variant_dicts: List[dict]) -> List[dict]:
    """One variant of each kernel: its last, the widest tile and element type the backend lists for it."""
    last: Dict[str, dict] = {}
    for v in variant_dicts:
        last[v["kernel"]] = v
    return list(last.values())


def write(records: List[dict], record_key: str, path: pathlib.Path = RECORD) -> None:
    rows = sorted(comparable(r) for r in records)
    lines = ",\n".join(json.dumps(list(row)) for row in rows)
    head = json.dumps({"key": record_key, "triton": importlib.metadata.version("triton"), "fields": list(FIELDS)})
    path.write_text(head[:-1] + ', "rows": [\n' + lines + "\n]}\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", action="store_true", help="compile the sample only (the test's check)")
    parser.add_argument("--jobs", type=int, default=None, help="compiling processes, default one per CPU")
    parser.add_argument("--out-dir", help="with --sample: where its variants.json goes")
    args = parser.parse_args(argv)
    from scatterx.bench import gpu_static

    every = variants()
    if args.sample:
        records = gpu_static.compile_all(sample(every), TARGETS, args.jobs)
        out = pathlib.Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "variants.json").write_text(json.dumps({"sample": True, "records": records}, default=str) + "\n")
        return 0
    result = gpu_static.run(TARGETS, args.jobs)
    failed = result["failed"]
    write(result["records"], key(every))
    print(f"{len(result['records'])} records ({len(failed)} failing a check) in {result['seconds']} s -> {RECORD}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
