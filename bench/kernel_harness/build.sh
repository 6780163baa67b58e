#!/bin/bash
# Usage: bench/kernel_harness/build.sh [arch] [build_dir] [generator]   (default 90a, /tmp/fa_harness_build, gen.py;
#        gen_f16.py builds the fp16/bf16 kernel instead)
#   -> $BUILD/libharness.so and $BUILD/ptxas_sm$ARCH.log (registers / spills of every instantiation)
set -e
HERE="$(cd "$(dirname "$0")" && pwd)"
ARCH=${1:-90a}
BUILD=${2:-/tmp/fa_harness_build}
GEN=${3:-gen.py}
python3 "$HERE/$GEN" "$BUILD"
# -I kernel_sources: headers include each other by their names from that root ("ptx.cuh", "tile/mask.cuh").
FLAGS="-std=c++17 -O3 -I $HERE/../../kernel_sources -Xcompiler -fPIC -gencode=arch=compute_${ARCH},code=sm_${ARCH} -Xptxas -v"
ls "$BUILD"/inst_*.cu | xargs -P 16 -I{} sh -c 'nvcc '"$FLAGS"' -c {} -o {}.o 2> {}.ptxas.log || { cat {}.ptxas.log; exit 1; }'
nvcc $FLAGS -c "$HERE/harness_lib.cu" -o "$BUILD/harness_lib.o"
nvcc -shared -o "$BUILD/libharness.so" "$BUILD"/*.o -lcudart
cat "$BUILD"/inst_*.ptxas.log | grep -E "Compiling entry|registers|spill" > "$BUILD/ptxas_sm${ARCH}.log"
echo "built $BUILD/libharness.so"
