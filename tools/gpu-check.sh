#!/usr/bin/env bash
# The GPU check: what a session lent a GPU learns in ONE call of the device tool's `run` (from the project's root
# there; it has torch, Triton, Numba, pytest, pytest-xdist, hypothesis, PyG, onnxruntime, compute-sanitizer and no
# network). Nothing is installed: the package runs from the checkout (PYTHONPATH).
#   bash tools/gpu-check.sh            (with the device tool: timeout_s=540, about 8 minutes with the start)
#
# The steps, in order of priority, each under a time limit taken from the budget GPU_CHECK_SECONDS (default 450 s:
# 8 minutes less the machine's start and the transfers). A step that ends early leaves its time to the next ones.
#   1. tests (40%): every test that runs a GPU kernel -- the `gpu` backend and route parameters of the op tests,
#      tests/kernels/test_gpu_*, the GPU routes, the sync check -- on CUDA, each against its reference on the CPU:
#      every kernel, every reduction x dtype x dim x sorted/unsorted. Over every core (pytest-xdist, -n auto), fewer
#      random cases.
#   2. memcheck (12%): compute-sanitizer's memcheck over one small call of every GPU kernel (tools/gpu_memcheck.py,
#      which fails if a kernel went unlaunched).
#   3. kernels (22%): scatterx bench --device cuda --kernels-only: the kernel-time table (device time from the
#      profiler, call time, share of peak bandwidth, torch's CUDA kernels beside) -> kernels.json; with
#      GPU_CHECK_SWEEP=1 also the sweep of the segment kernels' tile and programs per multiprocessor (sweep.json,
#      in results.tar.gz).
#   4. bench (12%): scatterx bench --device cuda at the built-in graph, 5 timed calls a case.
#   5. gpu-report (14%): scatterx gpu-report --measure for this GPU's architecture: the bandwidth model's calls timed
#      beside the time a perfect kernel would take.
# With less time (GPU_CHECK_SECONDS=240, say) the shares shrink and the later steps are cut first, where a step
# killed at its limit still leaves its log; below ~200 s run step 1 alone (GPU_CHECK_STEPS=tests). Without CUDA (a
# rehearsal on a developer's machine) step 1 only collects, step 2 runs its calls through Triton's interpreter
# without the sanitizer, and steps 3 and 4 are skipped; `time` the script there to see what the rest costs.
#
# $OUT gets at most 9 files: summary.txt, env.txt, tests.log, memcheck.log, kernels.log, kernels.json, bench.log,
# gpu-report.log and results.tar.gz (the bench's and the report's own files).
set -uo pipefail
root=$PWD
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
work=$(mktemp -d)
export PYTHONUNBUFFERED=1 PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
budget=${GPU_CHECK_SECONDS:-450}
steps=${GPU_CHECK_STEPS:-tests memcheck kernels bench gpu-report}
case "$budget" in '' | *[!0-9]*) echo "GPU_CHECK_SECONDS must be a whole number of seconds, got '$budget'" >&2; exit 2 ;; esac
for s in $steps; do
  case "$s" in tests | memcheck | kernels | bench | gpu-report) ;;
    *) echo "GPU_CHECK_STEPS: unknown step '$s' (the steps: tests memcheck kernels bench gpu-report)" >&2; exit 2 ;; esac
done
start=$SECONDS
summary="$OUT/summary.txt"
: > "$summary"

# t: the time limit of the next step -- its share of the budget plus what earlier steps left unused
shares=0
limit() {
  shares=$((shares + $1))
  t=$((budget * shares / 100 - (SECONDS - start)))
  [ "$t" -lt 20 ] && t=20
}
step() {  # step NAME STATUS: one line of the summary
  printf '%-11s %s (%ds in all)\n' "$1" "$2" "$((SECONDS - start))" | tee -a "$summary"
}
wants() { [[ " $steps " == *" $1 "* ]]; }

cuda=$(python3 -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
python3 - > "$OUT/env.txt" 2>&1 <<'EOF'
import os, platform, numba, numpy, torch
try:
    import triton; tv = triton.__version__
except ImportError:
    tv = "none"
print("python", platform.python_version(), "torch", torch.__version__, "triton", tv, "numba", numba.__version__,
      "numpy", numpy.__version__, "cores", os.cpu_count())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(torch.cuda.get_device_name(), "sm_%d%d" % torch.cuda.get_device_capability(), p.multi_processor_count,
          "SMs", round(p.total_memory / 2**30, 1), "GiB")
else:
    print("no CUDA device: a rehearsal")
EOF
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version \
  --format=csv >> "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# 1. the GPU tests, on CUDA
limit 40
if wants tests; then
  select=(-k "(gpu or cuda) and not every_variant_compiles" tests)
  if [ "$cuda" = 1 ]; then
    SCATTERX_HYPOTHESIS_EXAMPLES=${SCATTERX_HYPOTHESIS_EXAMPLES:-40} timeout -k 10 "$t" \
      python3 -m pytest -q -n auto -p no:cacheprovider --maxfail=50 -ra "${select[@]}" > "$OUT/tests.log" 2>&1
    rc=$?
  else
    timeout -k 10 "$t" python3 -m pytest -q --collect-only -p no:cacheprovider "${select[@]}" > "$OUT/tests.log" 2>&1
    rc=$?
  fi
  step tests "rc=$rc (limit ${t}s): $(grep -E '([0-9]+ (passed|failed|error|selected|tests collected))' "$OUT/tests.log" | tail -1)"
fi

# 2. memcheck over one call of every kernel
limit 12
if wants memcheck; then
  if [ "$cuda" = 1 ] && command -v compute-sanitizer > /dev/null; then
    timeout -k 10 "$t" compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 \
      python3 tools/gpu_memcheck.py > "$OUT/memcheck.log" 2>&1
    rc=$?
  elif [ "$cuda" = 1 ]; then
    echo "compute-sanitizer not found" > "$OUT/memcheck.log"
    rc=127
  else
    TRITON_INTERPRET=1 timeout -k 10 "$t" python3 tools/gpu_memcheck.py > "$OUT/memcheck.log" 2>&1
    rc=$?
  fi
  step memcheck "rc=$rc (limit ${t}s): $(grep -E 'kernels launched|ERROR SUMMARY' "$OUT/memcheck.log" | tr '\n' ' ')"
fi

# 3. the kernel-time table (and the sweep, when asked)
limit 22
if wants kernels && [ "$cuda" = 1 ]; then
  sweep=()
  [ "${GPU_CHECK_SWEEP:-0}" = 1 ] && sweep=(--sweep)
  timeout -k 10 "$t" python3 -m scatterx bench --device cuda --kernels-only "${sweep[@]}" --out-dir "$work/kernels" \
    > "$OUT/kernels.log" 2>&1
  rc=$?
  [ -f "$work/kernels/kernels.json" ] && cp "$work/kernels/kernels.json" "$OUT/kernels.json"
  step kernels "rc=$rc (limit ${t}s): $(grep -c MISSED "$OUT/kernels.log") goals missed"
elif wants kernels; then
  step kernels "skipped: no CUDA device"
fi

# 4. the benchmark on the GPU
limit 12
if wants bench && [ "$cuda" = 1 ]; then
  timeout -k 10 "$t" python3 -m scatterx bench --device cuda --repeat 5 --out-dir "$work/bench" > "$OUT/bench.log" 2>&1
  step bench "rc=$? (limit ${t}s)"
elif wants bench; then
  step bench "skipped: no CUDA device"
fi

# 5. the report: compiled for this GPU, its bandwidth model's calls timed here
limit 14
if wants gpu-report && [ "$cuda" = 1 ]; then
  arch=$(python3 -c "import torch; a, b = torch.cuda.get_device_capability(); print(10 * a + b)")
  timeout -k 10 "$t" python3 -m scatterx gpu-report --measure --targets "$arch" --jobs "$(nproc)" \
    --out-dir "$work/gpu-report" > "$OUT/gpu-report.log" 2>&1
  step gpu-report "rc=$? (limit ${t}s)"
elif wants gpu-report; then
  step gpu-report "skipped: no CUDA device"
fi

tar -czf "$OUT/results.tar.gz" -C "$work" . 2> /dev/null
rm -rf "$work"
echo "== summary (budget ${budget}s) ==" && cat "$summary"
