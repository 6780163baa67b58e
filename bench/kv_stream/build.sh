#!/usr/bin/env bash
# Builds bench/kv_stream/kv_stream (sm_90a, cudart linked statically, so it runs on a machine with only the driver;
# cuTensorMapEncodeTiled comes from the driver at run time). Output: the binary next to this script, or $1.
# On a GPU machine: bench/kv_stream/kv_stream [B N H D [variant...]] (defaults 16 131072 8 128, every variant).
set -euo pipefail
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -O3 -std=c++17 -arch=sm_90a -cudart static -lineinfo -Xcompiler -Wall,-Wextra \
    -Xptxas -warn-spills,-warn-lmem-usage -o "${1:-kv_stream}" kv_stream.cu
