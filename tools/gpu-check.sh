#!/usr/bin/env bash
# The checks to run when a GPU is lent (the device tool's `run`, from the project's root there; it has torch, triton,
# numba, pytest, hypothesis, torch_geometric, onnxruntime and no network):
#   bash tools/gpu-check.sh [extra pytest args]      -> logs, bench files and the GPU report under $OUT
# 1. every test, on CUDA where the test can use it (conftest sets TRITON_INTERPRET only without CUDA);
# 2. scatterx bench --device cuda at the built-in graph;
# 3. scatterx gpu-report for this GPU's architecture and the usual targets, with --measure: the bandwidth model's
#    calls timed on this GPU beside the time a perfect kernel would take (bench-results/gpu-static/ holds the
#    report made without a GPU, to compare with).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -3
python3 -c "import torch, triton, numba; print('torch', torch.__version__, 'triton', triton.__version__, 'numba', numba.__version__, torch.cuda.get_device_name(), 'sm_%d%d' % torch.cuda.get_device_capability())" | tee "$OUT/env.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv | tee -a "$OUT/env.txt"
timeout 330 python3 -m pytest -q -x -p no:cacheprovider -ra "$@" tests 2>&1 | tee "$OUT/tests.log" | tail -25
timeout 200 scatterx bench --device cuda --out-dir "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -60
timeout 240 scatterx gpu-report --measure --out-dir "$OUT/gpu-static" 2>&1 | tee "$OUT/gpu-report.log" | tail -40
