#!/usr/bin/env bash
# The oldest versions pyproject.toml promises (torch, PyG, Numba: the last patch release of each lower bound's
# minor version, from tools/oldest_requirements.py), set up in .venv-oldest and smoke-tested: the README's
# examples, the core op against its reference on both backends (the Triton kernels through the interpreter), its
# gradients, and the PyG switch. CI runs it beside the main test run (.ci/run); it needs no GPU.
#   bash tools/oldest-smoke.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-oldest
python3 -m venv "$venv"
# NumPy < 2: Triton 3.0 (torch 2.4's) interprets kernels with NumPy 1's casting rules (tests/interpreter_probe.py);
# onnxscript: the README's export example; pytest, pytest-xdist, hypothesis: the tests (over every core: in CI they
# mostly run once the main run is done, and its compiles are most of their time). No pip cache: a CUDA build of torch
# is gigabytes, which the cache would hold twice. No byte-compiling at install (--no-compile): Python compiles
# what the tests import, and the rest of those gigabytes is never read.
"$venv/bin/pip" install -q --no-cache-dir --no-compile $(python3 tools/oldest_requirements.py pyg) "numpy<2" onnxscript pytest \
  pytest-xdist hypothesis
echo "[oldest] $(date -u +%H:%M:%S): installed"
"$venv/bin/python" -c "import torch, torch_geometric, numba, triton, numpy; print('oldest: torch', torch.__version__,
      'PyG', torch_geometric.__version__, 'Numba', numba.__version__, 'Triton', triton.__version__, 'NumPy',
      numpy.__version__)"
# scatterx from the checkout as it is (no install: the main run installs it, editable, at the same time); the
# Numba cache is this Numba version's own (tests/conftest.py)
# (SMOKE_TEST_NICE: CI runs the tests at a low priority beside its main run, and the installs at the usual one)
# Each supported path once, not each variant of it: every compiled variant is a compile on this Numba, 2-3 times
# as long as the newest's over the owner and runs kernels (~15 s a variant), and those compiles are most of this
# smoke's time. So the core op's two dtype grids on float32 alone (every route, reduction and backend, with and
# without ``out``); the other storage formats through the file's other tests (half types, integers, float64's
# gradients); the half types' gradients for a sum on both (both conversions, a linear gradient) and a selection
# (amax) on float16, and every reduction's on float32; the parallel routes through the thread-count test (float32),
# not the hub-segments test as well (its float64 would be ten more variants of the runs and segment kernels).
PYTHONPATH="$PWD" SCATTERX_HYPOTHESIS_EXAMPLES=20 nice -n "${SMOKE_TEST_NICE:-0}" \
  "$venv/bin/python" -m pytest -q -n auto -p no:cacheprovider --durations=5 \
  -k "(not (test_matches_reference or test_matches_torch_index_reduce) or float32 or dtype0) \
      and not test_parallel_path_with_hub_segments \
      and not (test_half_precision_gradients and (mean or prod or amin or (amax and dtype1)) and not dtype2)" \
  tests/test_readme.py tests/ops/test_index_scatter_reduce.py tests/ops/test_index_scatter_reduce_autograd.py \
  tests/pyg/test_pyg.py "$@"
