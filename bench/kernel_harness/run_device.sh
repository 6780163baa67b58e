#!/bin/bash
# One device call: build for sm_90a, check, time. Logs land in $OUT (or /tmp).
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
"$HERE/build.sh" 90a /tmp/fa_harness_build > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
cp /tmp/fa_harness_build/ptxas_sm90a.log "$OUT/"
python3 "$HERE/harness.py" /tmp/fa_harness_build "$@" 2>&1 | tee "$OUT/harness.log"
