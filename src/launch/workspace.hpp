// Device scratch for launches that need it (split-KV partials): one buffer per (context, stream), grown on demand
// with stream-ordered allocation and reused, so that the steady state allocates nothing and never synchronizes.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace fa_jit {

// At least `bytes` of device memory, usable by work enqueued on `stream` (in the current context) until the next
// call for the same stream. Growing frees the old buffer and allocates the new one in stream order (cuMemFreeAsync,
// cuMemAllocAsync), so earlier launches on the stream finish with the old one first. Growing while the stream is
// being captured into a CUDA graph throws Error: the graph would own the allocation.
CUdeviceptr stream_workspace(CUstream stream, std::size_t bytes);

// Frees the current context's workspace of `stream` (in stream order); a later call allocates again.
void release_stream_workspace(CUstream stream);

}  // namespace fa_jit
