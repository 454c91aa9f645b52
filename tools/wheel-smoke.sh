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
.venv-wheel/bin/pip install -q build
.venv-wheel/bin/python -m build -q --outdir dist . > /dev/null
ls dist
wheel=$(ls dist/scatterx-*.whl)
# the README's examples use PyG and the ONNX translations, and every module imports with Triton there too;
# torch pinned as the README pins it
.venv-wheel/bin/pip install -q torch==2.13.0 "${wheel}[pyg,export,gpu]"
echo "[wheel] $(date -u +%H:%M:%S): installed"
cd "$(mktemp -d)"
"$root/.venv-wheel/bin/python" "$root/tools/wheel_smoke.py" "$root/README.md"
