#!/bin/bash
# One device call for the fp16/bf16 kernel: build for sm_90a, check, time. Logs land in $OUT (or /tmp).
# Usage: bench/kernel_harness/run_device_f16.sh [--quick]
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
"$HERE/build.sh" 90a /tmp/fa_harness_f16 gen_f16.py > "$OUT/build_f16.log" 2>&1 || { tail -50 "$OUT/build_f16.log"; exit 1; }
cp /tmp/fa_harness_f16/ptxas_sm90a.log "$OUT/ptxas_f16_sm90a.log"
python3 "$HERE/harness_f16.py" /tmp/fa_harness_f16 "$@" 2>&1 | tee "$OUT/harness_f16.log"
