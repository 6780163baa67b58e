#!/bin/bash
# One device call: build for sm_90a, check, time, then compute-sanitizer memcheck on a few kernels.
# Usage: bench/kernel_harness/run_device.sh [--quick]      Logs land in $OUT (or /tmp).
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
"$HERE/build.sh" 90a /tmp/fa_harness_build > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
cp /tmp/fa_harness_build/ptxas_sm90a.log "$OUT/"
python3 "$HERE/harness.py" /tmp/fa_harness_build "$@" 2>&1 | tee "$OUT/harness.log"
if command -v compute-sanitizer > /dev/null; then
    timeout 240 compute-sanitizer --tool memcheck --print-limit 20 python3 "$HERE/harness.py" /tmp/fa_harness_build --sanitize \
        > "$OUT/memcheck.log" 2>&1
    echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|correctness failures|FAIL" "$OUT/memcheck.log" | head
fi
