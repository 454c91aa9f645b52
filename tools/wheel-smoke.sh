#!/usr/bin/env bash
# scatterx as users get it: build the sdist and the wheel (the wheel from the sdist, so both are checked), install
# the wheel -- not editable, not from the checkout -- into a clean virtual environment (.venv-wheel), and run
# tools/wheel_smoke.py there from a directory outside the checkout: every module imports, the version and data files
# are in place, the command runs, and the README's examples pass. CI runs it beside the main test run (.ci/run).
#   bash tools/wheel-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rm -rf dist .venv-wheel
python3 -m venv .venv-wheel
# (no isolated build environments: the venv's own setuptools builds, as pyproject.toml's build-system asks)
.venv-wheel/bin/pip install -q --no-compile build "setuptools>=77"
.venv-wheel/bin/python -m build -q --no-isolation --outdir dist . > /dev/null
ls dist
wheel=$(ls dist/scatterx-*.whl)
# the README's examples use PyG and the ONNX translations, and every module imports with Triton there too;
# torch pinned as the README pins it
# (--no-compile: Python compiles what the smoke imports; the rest is never read)
.venv-wheel/bin/pip install -q --no-compile torch==2.13.0 "${wheel}[pyg,export,gpu]"
echo "[wheel] $(date -u +%H:%M:%S): installed"
cd "$(mktemp -d)"
"$root/.venv-wheel/bin/python" "$root/tools/wheel_smoke.py" "$root/README.md"
