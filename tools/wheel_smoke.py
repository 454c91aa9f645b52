"""Smoke-test scatterx as users get it: run by ``tools/wheel-smoke.sh`` with the Python of a clean virtual
environment that has the built wheel installed, from a directory outside the checkout.

Checks that the installed package, not the checkout, is what imports; that every module of it imports (a module or
a data file missing from the wheel fails here); that its version is the distribution's and its data files and
``py.typed`` are in place; that the ``scatterx`` command runs; and that the README's examples give their results.

    python tools/wheel_smoke.py README.md
"""

import doctest
import importlib
import importlib.metadata
import os
import pathlib
import pkgutil
import shutil
import subprocess
import sys


def main(readme: str) -> int:
    import scatterx

    package = pathlib.Path(scatterx.__file__).resolve().parent
    prefix = pathlib.Path(sys.prefix).resolve()
    assert prefix in package.parents, f"scatterx imported from {package}, not from the environment at {prefix}"
    print(f"scatterx {scatterx.__version__} from {package}")
    assert scatterx.__version__ == importlib.metadata.version("scatterx"), "the wheel's version is not __version__"
    for data in ("py.typed", "bench/goals.json"):
        assert (package / data).is_file(), f"{data} is missing from the wheel"

    # every module, the optional ones too (the environment has PyG and ONNX Script, as the README's examples need)
    # (not __main__: importing it runs the command)
    names = [m.name for m in pkgutil.walk_packages(scatterx.__path__, "scatterx.") if not m.name.endswith("__main__")]
    for name in names:
        importlib.import_module(name)
    print(f"imported {len(names)} modules")

    command = shutil.which("scatterx", path=os.path.dirname(sys.executable))  # the environment's console script
    assert command, f"the wheel installed no scatterx command beside {sys.executable}"
    done = subprocess.run([command, "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "bench" in done.stdout, f"the scatterx command failed:\n{done.stderr}"

    text = pathlib.Path(readme).read_text()
    test = doctest.DocTestParser().get_doctest(text, {"scatterx": scatterx}, "README", readme, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    print(f"README: {len(test.examples)} examples, {runner.failures} failed")
    return 1 if runner.failures or not test.examples else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
