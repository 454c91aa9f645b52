"""The package's layering, read from its source with ``ast`` (every import, function-local ones included):

    frontends, pyg, distributed -> planner -> ops -> backends -> kernels -> _reductions, _memo

- no import cycle between scatterx's modules;
- imports point down (or sideways within a layer), never up;
- a function-local import of a scatterx module only for one that needs an optional dependency (triton,
  torch_geometric), never to dodge a cycle;
- the reference (the tests' oracle) imports nothing of the package, and only the benchmark imports it;
- no op, backend, kernel or planner module lists reduction names: they come from the table;
- no module over ~350 lines without a reason at its top.
"""

import ast
import pathlib

import pytest

from scatterx._reductions import REDUCTIONS

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scatterx"


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}

#: layer of each module, by prefix (longest first wins); higher may import lower
LAYERS = [
    ("scatterx._reductions", 0),
    ("scatterx._memo", 0),
    ("scatterx._modules", -1),  # (imports nothing of the package: the reference, at -1 too, may use it)
    ("scatterx.kernels", 1),
    ("scatterx.backends", 2),
    ("scatterx.ops", 3),
    ("scatterx.planner", 4),
    ("scatterx._frontend", 5),
    ("scatterx._dropin", 5),
    ("scatterx._metis", 5),
    ("scatterx.pytorch", 5),
    ("scatterx.onnx", 5),
    ("scatterx.tf", 5),
    ("scatterx.paddle", 5),
    ("scatterx.torch_scatter", 5),
    ("scatterx.pyg", 5),
    ("scatterx.pyg_lib", 5),
    ("scatterx.distributed", 5),
    ("scatterx.export", 5),
    ("scatterx.bench", 6),
    ("scatterx.cli", 6),
    ("scatterx.__main__", 6),
    ("scatterx", 6),
]

#: function-local imports allowed, and why: each needs an optional dependency
OPTIONAL = {
    "scatterx.backends.gpu": "triton",
    "scatterx.pyg": "torch_geometric",
    "scatterx.export": "onnxscript",
}


def _is_reference(module: str) -> bool:
    return module == "scatterx.reference" or module.startswith("scatterx.reference.")


def layer(module: str) -> int:
    if _is_reference(module):
        return -1
    for prefix, rank in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str):
    """(target module, function-local?) for every import of a scatterx module in ``module``'s source."""
    tree = ast.parse(MODULES[module].read_text())
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:  # "from package import submodule" imports the submodule
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in MODULES else base)
        for imported in targets:
            target = imported
            while target not in MODULES and "." in target:  # scatterx.x.y where y is a name in x
                target = target.rsplit(".", 1)[0]
            if target in MODULES and target.startswith("scatterx"):
                found.append((target, id(node) in local))
    # importlib.import_module(".pyg", __name__) in scatterx/__init__: the lazy optional import
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and arg.value.startswith("."):
                found.append((module + arg.value, True))
    return found


GRAPH = {m: imports(m) for m in MODULES}


def test_no_import_cycle_counting_function_local_imports():
    state = {}

    def visit(m, path):
        state[m] = "visiting"
        for target, _ in GRAPH[m]:
            if target == m:
                continue
            if state.get(target) == "visiting":
                raise AssertionError("import cycle: " + " -> ".join(path + [m, target]))
            if target not in state:
                visit(target, path + [m])
        state[m] = "done"

    for m in MODULES:
        if m not in state:
            visit(m, [])


def test_imports_point_down():
    upward = [
        f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
        for m, edges in GRAPH.items()
        for t, _ in edges
        if layer(t) > layer(m) and not t.startswith(m + ".")  # a package may import its own submodules
    ]
    assert not upward, "\n".join(upward)


def test_distributed_does_not_import_the_pyg_integration():
    """Sideways in the top layer goes one way: scatterx.pyg builds on scatterx.distributed (ShardedGraph), which
    works without PyG."""
    bad = [
        f"{m} imports {t}"
        for m, edges in GRAPH.items()
        if m.startswith("scatterx.distributed")
        for t, _ in edges
        if t.startswith("scatterx.pyg")
    ]
    assert not bad, "\n".join(bad)


def test_function_local_imports_only_for_optional_dependencies():
    bad = [
        f"{m} imports {t} inside a function"
        for m, edges in GRAPH.items()
        for t, local in edges
        if local and not any(t == o or t.startswith(o + ".") for o in OPTIONAL)
    ]
    assert not bad, "\n".join(bad)


def test_the_reference_stands_alone():
    """The oracle's modules import one another only -- and ``scatterx._modules``, which finds them and holds no
    semantics -- and only the benchmark imports them."""
    reference = [m for m in GRAPH if _is_reference(m)]
    assert len(reference) > 5, reference  # the package and its modules, one per op
    shared = [
        f"{m} imports {t}" for m in reference for t, _ in GRAPH[m] if not _is_reference(t) and t != "scatterx._modules"
    ]
    assert not shared, "the oracle must not share code with what it checks: " + "; ".join(shared)
    users = [m for m, edges in GRAPH.items() if not _is_reference(m) and any(_is_reference(t) for t, _ in edges)]
    assert all(m.startswith("scatterx.bench") for m in users), users


_NAMES = {alias for r in REDUCTIONS for alias in r.aliases}


@pytest.mark.parametrize("module", [m for m in MODULES if layer(m) in (1, 2, 3, 4)])
def test_reduction_names_come_from_the_table(module):
    """A tuple, list or set of two or more reduction names in these layers would be a second table."""
    tree = ast.parse(MODULES[module].read_text())
    lists = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and len(node.elts) >= 2
        and all(isinstance(e, ast.Constant) and e.value in _NAMES for e in node.elts)
    ]
    assert not lists, f"{module} lists reductions by name: {lists}"


@pytest.mark.parametrize("module", list(MODULES))
def test_long_modules_say_why(module):
    source = MODULES[module].read_text()
    if len(source.splitlines()) <= 350:
        return
    docstring = ast.get_docstring(ast.parse(source)) or ""
    assert "Why this module is long" in docstring, f"{module}: over 350 lines and no reason in its docstring"


# ------------------------------------------------------------------------------------------- one name per op
#: kernel modules that serve no single op: the index -> segments pass every segment op starts with, the launch that
#: runs every CPU kernel on threads (the OpenMP team, the pool), and the kernels that time a launch
KERNEL_INFRASTRUCTURE = {"segments", "launcher", "openmp", "launch_probe"}
#: kernels of the pyg-lib drop-in's samplers, named after its functions (``scatterx.pyg_lib.sampler``): sampling is
#: no differentiable op of ``ops/`` (CPU only, as pyg-lib's, and nothing to differentiate)
SAMPLER_KERNELS = {"neighbor_sample", "random_walk"}
OPS = sorted(p.stem for p in (PACKAGE / "ops").glob("*.py") if not p.stem.startswith("_"))
TESTS = ROOT / "tests"


def _stems(folder):
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("side", ["cpu", "gpu"])
def test_every_kernel_module_is_named_after_its_op(side):
    """``kernels/<side>/<op>.py`` or ``<op>_<route>.py`` (the routes of ``index_scatter_reduce`` under one
    prefix); underscore modules are the kernels' building blocks."""
    stray = [
        stem
        for stem in _stems(PACKAGE / "kernels" / side)
        if not stem.startswith("_")
        and stem not in KERNEL_INFRASTRUCTURE | SAMPLER_KERNELS
        and not any(stem == op or stem.startswith(op + "_") for op in OPS)
    ]
    assert not stray, f"kernels/{side} modules named after no op: {stray}"


@pytest.mark.parametrize("side", ["cpu", "gpu"])
def test_every_kernel_module_has_its_test_file(side):
    """``kernels/<side>/X.py`` <-> ``tests/kernels/test_<side>_X.py`` (``_X`` -> ``test_<side>_X``)."""
    missing = [
        stem
        for stem in _stems(PACKAGE / "kernels" / side)
        if not (TESTS / "kernels" / f"test_{side}_{stem.lstrip('_')}.py").exists()
    ]
    assert not missing, f"kernels/{side} modules without a test file in tests/kernels: {missing}"
    orphans = [
        p.name
        for p in (TESTS / "kernels").glob(f"test_{side}_*.py")
        if not any(p.stem == f"test_{side}_{stem.lstrip('_')}" for stem in _stems(PACKAGE / "kernels" / side))
    ]
    assert not orphans, f"tests/kernels files of no kernel module: {orphans}"


def test_every_op_has_its_backend_modules_and_tests():
    """``ops/X.py`` <-> ``backends/cpu/X.py``, ``backends/gpu/X.py``, ``reference/X.py``, ``tests/ops/test_X.py``."""
    for op in OPS:
        assert (PACKAGE / "reference" / f"{op}.py").exists(), f"reference/{op}.py"
        assert (PACKAGE / "backends" / "cpu" / f"{op}.py").exists(), f"backends/cpu/{op}.py"
        assert (PACKAGE / "backends" / "gpu" / f"{op}.py").exists(), f"backends/gpu/{op}.py"
        assert (TESTS / "ops" / f"test_{op}.py").exists(), f"tests/ops/test_{op}.py"


#: what CPU kernel modules may import: Numba compiles what a kernel calls into it, and its disk cache only follows
#: the kernel's own file; ``tests/conftest.py`` keys the test cache on these files, so nothing else may be compiled in
KERNEL_SOURCES = {
    "scatterx._reductions",
    "scatterx.kernels.cpu._codegen",
    "scatterx.kernels.cpu._exp",
    "scatterx.kernels.cpu._memory",
    "scatterx.kernels.cpu._random",
    "scatterx.kernels.cpu._runs",
}
#: modules a kernel file may import that hold no compiled code (so no edit there changes a kernel)
NOT_COMPILED = {"scatterx.kernels.cpu._compile_lock", "scatterx.kernels.cpu.openmp"}


@pytest.mark.parametrize("module", [m for m in MODULES if m.startswith("scatterx.kernels.cpu.")])
def test_cpu_kernels_compile_in_only_the_files_the_test_cache_is_keyed_on(module):
    others = {t for t, _ in GRAPH[module]} - KERNEL_SOURCES - NOT_COMPILED - {module}
    if module.endswith((".pool", "._codegen", "._memory")):  # not kernels: no njit function calls across
        others -= {"scatterx.kernels.cpu._codegen", "scatterx.kernels.cpu._memory", "scatterx._reductions"}
    assert not others, f"{module} imports {others}: an edit there would not recompile its kernels"


@pytest.mark.parametrize("module", [m for m in MODULES if m.startswith("scatterx.kernels.gpu.")])
def test_gpu_kernel_modules_keep_their_annotations_objects(module):
    """No ``from __future__ import annotations`` in a Triton kernel module: Triton 3.0's interpreter reads a device
    function's ``tl.constexpr`` annotation as an object, and as a string it passed ``BLOCK_F`` as a tensor."""
    tree = ast.parse(MODULES[module].read_text())
    future = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
    ]
    assert not future, f"{module} imports annotations from __future__"
