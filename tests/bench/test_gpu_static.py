"""``scatterx gpu-report`` (``scatterx/bench/gpu_static.py``): every GPU kernel variant compiled for sm_80 and sm_90
on this CPU-only machine, with the resource and code checks; and the checks' parsers, on hand-written code and on a
kernel written to fail them."""

import inspect
import json
import pathlib
import subprocess
import sys
import warnings

import gpu_report_record
import pytest
from conftest import GPU_COMPILE_TEST, background, gpu_compiling_env

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_variant_compiles_for_sm80_and_sm90_without_spills_or_misplaced_atomics(request):
    """The goal: 100% of the launchable variants compile for A100 and H100, every check passing. The compiling
    process was started when the test was collected (``tests/conftest.py``); this waits for it. It compiled every
    variant where the recorded report is not the report of these kernels, variants and Triton; else a sample,
    which must give the recorded numbers, and the checks read the record (``gpu_report_record.py``)."""
    from scatterx.backends.gpu.variants import all_variants
    from scatterx.bench.gpu_static import failures

    returncode, output, out = background(request, GPU_COMPILE_TEST)
    assert (pathlib.Path(out) / "variants.json").exists(), output[-3000:]
    assert returncode == 0, output[-3000:]
    result = json.loads((pathlib.Path(out) / "variants.json").read_text())
    if result.get("sample"):
        recorded = gpu_report_record.load()
        by_pair = {(r["variant"], r["target"]): gpu_report_record.comparable(r) for r in recorded["records"]}
        compiled = result["records"]
        assert len(compiled) == 2 * len({r["kernel"] for r in recorded["records"]})
        for r in compiled:
            assert gpu_report_record.comparable(r) == by_pair[(r["variant"], r["target"])], (
                f"{r['variant']} sm_{r['target']} compiles to other numbers than the record's: is the record made by "
                "hand? Record again: python tests/bench/gpu_report_record.py"
            )
        records = recorded["records"]
    else:
        records = result["records"]
        assert sorted(result["targets"]) == [80, 90]
        warnings.warn(
            "the GPU kernels, their variants, their checks or Triton changed since tests/bench/gpu_report_record.json"
            " was recorded, so every variant was compiled (~15 core-minutes): python tests/bench/gpu_report_record.py"
            " records it",
            stacklevel=1,
        )
    failed = [f"{r['variant']} sm_{r['target']}: {failures(r)} {r.get('error', '')}" for r in records if failures(r)]
    assert not failed, "\n".join(failed[:30])
    assert len({r["variant"] for r in records}) == len(all_variants())
    assert sorted({r["target"] for r in records}) == [80, 90]
    assert len(records) == 2 * len(all_variants()) and all(r["compiled"] for r in records)
    # the sorted path holds no atomics; the atomic route does (the check would flag a lost atomic_add as well)
    assert {r["kernel"] for r in records if r["atomics"]} == {"atomic_scatter_kernel"}
    assert all(r["widest_load"] == 128 for r in records if r["expected_load"] == 128)


def test_the_checks_catch_a_careless_kernel():
    """A kernel with 32-bit offsets, an atomic and a 64-bit division in a loop fails exactly those checks."""
    code = (
        "import json, gpu_static_cases as c; from scatterx.bench import gpu_static as g;"
        "print(json.dumps([g.failures(r) for r in g.compile_variant(c.CARELESS, (90,))]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=gpu_compiling_env(), timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [["atomics", "div64", "offsets"]]


def test_every_kernel_is_enumerated_with_its_own_signature():
    """Each ``*_kernel`` of ``kernels/gpu`` has variants, and each variant names the kernel's arguments in order
    (so that the report compiles what the backend launches)."""
    import importlib

    from scatterx.backends.gpu.variants import all_variants

    kernels = {}
    for path in (ROOT / "scatterx" / "kernels" / "gpu").glob("*.py"):
        module = importlib.import_module(f"scatterx.kernels.gpu.{path.stem}")
        for name, obj in vars(module).items():
            if name.endswith("_kernel") and hasattr(obj, "fn"):
                kernels[f"{obj.fn.__module__}.{name}"] = obj
    variants = all_variants()
    assert set(kernels) == {v.kernel for v in variants}
    for v in variants:
        arguments = list(inspect.signature(kernels[v.kernel].fn).parameters)
        assert [n for n, _ in v.params] + [n for n, _ in v.constexprs] == arguments, v.name
        assert set(v.aligned) <= {n for n, t in v.params if t == "i32"}, v.name


#: what Triton's generated argument binder (``triton/runtime/jit.py``, ``create_function_from_signature``) names
#: besides a kernel's parameters, in the versions read so far: a parameter of the same name is shadowed there on a
#: GPU (the interpreter binds arguments another way, so no test on the CPU would see it)
BINDER_NAMES = {"params", "specialization", "options", "specialize_impl", "backend", "JITCallable", "dynamic_func"}


def _binder_names():
    """``BINDER_NAMES``, and the names the installed Triton's binder defines, read from a binder it generates."""
    import types

    names = set(BINDER_NAMES)
    try:
        from triton.runtime.jit import create_function_from_signature
    except ImportError:  # a Triton without this binder
        return names

    def probe(a, b=1):
        pass

    kinds = dict(is_constexpr=False, is_const=False, do_not_specialize=False, do_not_specialize_on_alignment=False)
    params = [types.SimpleNamespace(annotation_type=None, **kinds) for _ in range(2)]
    try:
        binder = create_function_from_signature(inspect.signature(probe), params, None)
    except TypeError:  # another signature of the function: the known names stand
        return names
    code = binder.__code__
    return names | (set(code.co_varnames) | set(code.co_names) | set(binder.__globals__)) - {"a", "b"}


def test_no_kernel_parameter_is_a_name_of_triton_s_argument_binder():
    """A parameter named like one of the binder's own names (``params`` was one) reaches the kernel as the binder's
    value -- "failed to specialize argument of type: dict" on a real GPU."""
    import importlib

    taken = _binder_names()
    clashes = []
    for path in (ROOT / "scatterx" / "kernels" / "gpu").glob("*.py"):
        module = importlib.import_module(f"scatterx.kernels.gpu.{path.stem}")
        for name, obj in vars(module).items():
            fn = getattr(obj, "fn", None)
            if callable(fn) and getattr(fn, "__module__", None) == module.__name__:
                for param in inspect.signature(fn).parameters:
                    if param in taken or param.startswith("default_"):
                        clashes.append(f"{path.stem}.{name}({param})")
    assert {"params", "options", "backend"} <= taken
    assert not clashes, f"kernel parameters that Triton's binder shadows: {clashes}"


def test_loops_and_64_bit_division():
    from scatterx.bench.gpu_static import div64_in_loops, loops

    ptx = """
        div.s64 %rd1, %rd2, %rd3;
    $L__BB0_2:
        add.s64 %rd4, %rd4, 1;
        rem.u64 %rd5, %rd4, %rd6;
        @%p1 bra $L__BB0_2;
    $L__BB0_3:
        div.s32 %r1, %r2, %r3;
        bra.uni $L__BB0_4;
    $L__BB0_4:
        ret;
    """
    assert len(loops(ptx)) == 1  # the forward branch to BB0_4 is not a loop
    assert div64_in_loops(ptx) == 1  # the rem in the loop; not the div before it, nor the 32-bit one


def test_atomics_and_load_widths():
    from scatterx.bench.gpu_static import atomics, widest_global_load

    assert atomics("atom.global.gpu.acq_rel.add.f32 %f1, [%rd1], %f2;\n red.global.add.f32 [%rd2], %f3;") == 2
    assert atomics("ld.global.b32 %r1, [%rd1];") == 0
    assert widest_global_load("@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];") == 128
    assert widest_global_load("ld.global.v2.b64 { %rd1, %rd2 }, [ %rd3 + 0 ];\nld.global.b32 %r1, [%rd4];") == 128
    assert widest_global_load("@%p2 ld.global.b16 { %rs1 }, [ %rd1 + 0 ];") == 16


def test_narrow_offsets_exempt_constants_only():
    from scatterx.bench.gpu_static import narrow_offsets

    ttir = """
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %0 = tt.addptr %arg0, %c1_i32 : !tt.ptr<i64>, i32 loc(#loc2)
    %1 = tt.addptr %arg1, %5 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc3)
    %2 = tt.addptr %arg1, %6 : tensor<128x!tt.ptr<f32>>, tensor<128xi64> loc(#loc4)
    """
    assert narrow_offsets(ttir) == ["%1"]


def test_occupancy_follows_registers_and_shared_memory():
    from scatterx.bench.gpu_static import occupancy

    assert occupancy(90, 32, 0, 4) == 1.0  # 16 blocks of 4 warps fill 64 warps
    assert occupancy(90, 128, 0, 4) == 0.25  # 128 regs x 128 threads: 4 blocks
    assert occupancy(80, 32, 80 * 1024, 4) == 2 * 4 / 64  # two blocks' shared memory per SM


def test_spills_count_as_hot_only_inside_a_loop():
    from scatterx.bench.gpu_static import hot_spills

    sass = """
        /*0370*/                   STL [R1], R14 ;                  /* 0x0000000e01007387 */
        /*0650*/                   FADD R3, R3, R4 ;                /* 0x0000000e01007387 */
        /*0700*/                   LDL R5, [R1+0x4] ;               /* 0x0000000e01007387 */
        /*0fc0*/              @!P1 BRA 0x650 ;                      /* 0xfffff68000009947 */
        /*1a20*/                   LDL.LU R9, [R1] ;                /* 0x0000000001097983 */
        /*1a30*/                   BRA 0x1a40 ;                     /* 0x0000000001097983 */
    """
    assert hot_spills(sass) == 1  # the LDL at 0x700, inside the loop 0x650..0xfc0; not the ones before and after


@pytest.mark.parametrize(
    "args, message",
    [
        (["--targets", "70"], "--targets takes comma-separated integers, a subset of 80,90,100"),
        (["--jobs", "0"], "--jobs must be >= 1"),
        (["--match", "no_such_kernel"], "no variant's name contains 'no_such_kernel'"),
    ],
)
def test_gpu_report_refuses_bad_arguments_before_compiling(args, message, tmp_path):
    from scatterx.cli import main

    with pytest.raises(SystemExit) as raised:
        main(["gpu-report", *args, "--out-dir", str(tmp_path)])
    assert message in str(raised.value)
    assert not any(tmp_path.iterdir())  # nothing written


def test_the_recorded_report_s_key_changes_with_each_input_of_a_compile(tmp_path, monkeypatch):
    """Triton's version, a kernel's source, the checks' source and the variants each change the key under which
    ``gpu_report_record.json`` holds: a record is never read for kernels it was not made from."""
    import shutil

    every = gpu_report_record.variants()
    for pattern in gpu_report_record.SOURCES:
        for path in ROOT.glob(pattern):
            (tmp_path / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, tmp_path / path.relative_to(ROOT))
    monkeypatch.setattr(gpu_report_record, "ROOT", tmp_path)
    first = gpu_report_record.key(every)
    assert gpu_report_record.key(every[:-1]) != first
    at = next(i for i, v in enumerate(every) if v["aligned"])  # an alignment assumed, then not
    assert gpu_report_record.key([*every[:at], dict(every[at], aligned=()), *every[at + 1 :]]) != first
    kernel = tmp_path / "scatterx" / "kernels" / "gpu" / "segment_reduce.py"
    kernel.write_text(kernel.read_text() + "\n")
    assert gpu_report_record.key(every) != first
    kernel.write_text(kernel.read_text()[:-1])
    assert gpu_report_record.key(every) == first
    checks = tmp_path / "scatterx" / "bench" / "gpu_static.py"
    checks.write_text(checks.read_text().replace("ATOMIC_KERNELS = (", "ATOMIC_KERNELS = (  "))
    assert gpu_report_record.key(every) != first
    checks.write_text(checks.read_text().replace("ATOMIC_KERNELS = (  ", "ATOMIC_KERNELS = ("))
    real_version = gpu_report_record.importlib.metadata.version
    monkeypatch.setattr(
        gpu_report_record.importlib.metadata, "version", lambda name: "0.0" if name == "triton" else real_version(name)
    )
    assert gpu_report_record.key(every) != first
