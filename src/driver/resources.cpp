// RAII owners of device memory, streams and events. Destructors never throw: a failure there is only logged.
#include "driver/driver_api.hpp"
#include "fa_jit/jit.hpp"
#include "util/log.hpp"

namespace fa_jit {
namespace {

// Releases a driver object from a destructor: errors (e.g. a context torn down at exit) are logged, never thrown.
template <typename Fn, typename Handle>
void release(const char* call, Fn fn, Handle h) noexcept {
    const driver::Api* api = driver::try_api();
    if (!api || !h) return;
    if (CUresult r = (api->*fn)(h); r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
        log::debug("{} failed with CUresult {} during cleanup", call, static_cast<int>(r));
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) FA_JIT_CU(cuMemAlloc, &ptr_, bytes);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        release("cuMemFree", &driver::Api::cuMemFree, ptr_);
        ptr_ = std::exchange(o.ptr_, 0);
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}
DeviceBuffer::~DeviceBuffer() { release("cuMemFree", &driver::Api::cuMemFree, ptr_); }

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
    if (offset + bytes > bytes_)
        throw InvalidArgument("bytes", "at most " + std::to_string(bytes_ - offset), std::to_string(bytes));
    FA_JIT_CU(cuMemcpyHtoD, ptr_ + offset, host, bytes);
    FA_JIT_CU(cuStreamSynchronize, nullptr);  // from pageable memory the copy may still be in flight
}
void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
    if (offset + bytes > bytes_)
        throw InvalidArgument("bytes", "at most " + std::to_string(bytes_ - offset), std::to_string(bytes));
    FA_JIT_CU(cuMemcpyDtoH, host, ptr_ + offset, bytes);
}
void DeviceBuffer::fill_bytes(unsigned char value) {
    if (!bytes_) return;
    FA_JIT_CU(cuMemsetD8, ptr_, value, bytes_);
    FA_JIT_CU(cuStreamSynchronize, nullptr);  // the memset runs on the legacy stream, unordered with others
}

Stream::Stream() { FA_JIT_CU(cuStreamCreate, &s_, CU_STREAM_NON_BLOCKING); }
Stream& Stream::operator=(Stream&& o) noexcept {
    if (this != &o) {
        release("cuStreamDestroy", &driver::Api::cuStreamDestroy, s_);
        s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
}
Stream::~Stream() { release("cuStreamDestroy", &driver::Api::cuStreamDestroy, s_); }
void Stream::synchronize() const { FA_JIT_CU(cuStreamSynchronize, s_); }

Event::Event() { FA_JIT_CU(cuEventCreate, &e_, CU_EVENT_DEFAULT); }
Event& Event::operator=(Event&& o) noexcept {
    if (this != &o) {
        release("cuEventDestroy", &driver::Api::cuEventDestroy, e_);
        e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
}
Event::~Event() { release("cuEventDestroy", &driver::Api::cuEventDestroy, e_); }
void Event::record(CUstream stream) { FA_JIT_CU(cuEventRecord, e_, stream); }
void Event::synchronize() const { FA_JIT_CU(cuEventSynchronize, e_); }
float Event::elapsed_ms_since(const Event& start) const {
    float ms = 0;
    FA_JIT_CU(cuEventElapsedTime, &ms, start.e_, e_);
    return ms;
}

}  // namespace fa_jit
