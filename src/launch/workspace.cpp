#include "launch/workspace.hpp"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "driver/driver_api.hpp"
#include "fa_jit/errors.hpp"

namespace fa_jit {
namespace {

struct Key {
    CUcontext context;
    CUstream stream;
    bool operator==(const Key& o) const noexcept { return context == o.context && stream == o.stream; }
};
struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
        return std::hash<const void*>{}(k.context) * 31u ^ std::hash<const void*>{}(k.stream);
    }
};
struct Buffer {
    CUdeviceptr pointer = 0;
    std::size_t bytes = 0;
    unsigned long long stream_id = 0;  // cuStreamGetId when allocated; 0 when unknown
};

std::mutex pool_mutex;
std::unordered_map<Key, Buffer, KeyHash>& pool() {
    static auto* buffers = new std::unordered_map<Key, Buffer, KeyHash>();  // never destroyed: see below
    return *buffers;
}
// The buffers are not freed at exit: the driver may already be unloading, and process exit returns the memory.

Key key_of(CUstream stream) {
    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    return {context, stream};
}

// The stream's process-unique id, or 0 when the driver cannot say: drivers before CUDA 12, and streams being
// captured (cuStreamGetId is not allowed there).
unsigned long long stream_id(CUstream stream, bool capturing) {
    unsigned long long id = 0;
    if (capturing || !driver::api().cuStreamGetId) return 0;
    FA_JIT_CU(cuStreamGetId, stream, &id);
    return id;
}

}  // namespace

CUdeviceptr stream_workspace(CUstream stream, std::size_t bytes) {
    const Key key = key_of(stream);
    std::lock_guard lock(pool_mutex);
    Buffer& buffer = pool()[key];  // inserts once per (context, stream)
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    FA_JIT_CU(cuStreamIsCapturing, stream, &capture);
    const bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
    // A stream destroyed without attention_release_workspace() leaves its entry behind, and a new stream may get
    // the same handle. Outside a capture the id tells them apart: the stale buffer is freed, not handed over.
    const unsigned long long id = stream_id(stream, capturing);
    if (id != 0 && buffer.stream_id != id && buffer.pointer) {
        FA_JIT_CU(cuMemFreeAsync, buffer.pointer, stream);
        buffer = {};
    }
    if (id != 0) buffer.stream_id = id;
    if (buffer.bytes >= bytes) return buffer.pointer;
    if (capturing)
        throw Error(fmt::format(
            "attention() needs {} bytes of workspace on a stream that is being captured into a CUDA graph, and the "
            "stream's workspace has {}: pass AttentionArgs::workspace (attention_workspace_size() bytes), or make one "
            "call of the same problem on this stream before capturing",
            bytes, buffer.bytes));
    // A quarter more than asked, in whole MiB: lengths that creep up do not reallocate on every call.
    const std::size_t grown = ((bytes + bytes / 4) + (std::size_t{1} << 20) - 1) & ~((std::size_t{1} << 20) - 1);
    if (buffer.pointer) {
        FA_JIT_CU(cuMemFreeAsync, buffer.pointer, stream);
        buffer = {};
    }
    CUdeviceptr pointer = 0;
    FA_JIT_CU(cuMemAllocAsync, &pointer, grown, stream);
    buffer = {pointer, grown, id};
    return pointer;
}

void release_stream_workspace(CUstream stream) {
    const Key key = key_of(stream);
    std::lock_guard lock(pool_mutex);
    const auto it = pool().find(key);
    if (it == pool().end()) return;
    if (it->second.pointer) FA_JIT_CU(cuMemFreeAsync, it->second.pointer, stream);
    pool().erase(it);
}

}  // namespace fa_jit
