// Devices: the primary context of each device used is retained once per process; device properties are read once.
#include "driver/driver_api.hpp"
#include "fa_jit/jit.hpp"

#include <array>
#include <mutex>

namespace fa_jit {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceSlot {
    std::once_flag once;
    DeviceInfo info;
    CUcontext primary = nullptr;
};

std::array<DeviceSlot, kMaxDevices>& slots() {
    static std::array<DeviceSlot, kMaxDevices> s;
    return s;
}

int attribute(CUdevice dev, CUdevice_attribute a) {
    int value = 0;
    FA_JIT_CU(cuDeviceGetAttribute, &value, a, dev);
    return value;
}

DeviceSlot& slot(int ordinal) {
    static const int count = device_count();  // fixed for the life of the process
    if (ordinal < 0 || ordinal >= count || ordinal >= kMaxDevices)
        throw InvalidArgument("device", "an ordinal in [0, " + std::to_string(count) + ")", std::to_string(ordinal));
    DeviceSlot& s = slots()[ordinal];
    std::call_once(s.once, [&] {
        CUdevice dev = 0;
        FA_JIT_CU(cuDeviceGet, &dev, ordinal);
        char name[256] = {};
        FA_JIT_CU(cuDeviceGetName, name, sizeof(name), dev);
        DeviceInfo& i = s.info;
        i.ordinal = ordinal;
        i.name = name;
        i.cc_major = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        i.cc_minor = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        i.multiprocessors = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        i.max_threads_per_block = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        i.max_shared_per_block_optin = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        i.max_grid[0] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
        i.max_grid[1] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
        i.max_grid[2] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
        i.max_block[0] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
        i.max_block[1] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
        i.max_block[2] = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
        // Retained for the life of the process: kernels loaded into it stay valid.
        FA_JIT_CU(cuDevicePrimaryCtxRetain, &s.primary, dev);
    });
    return s;
}

}  // namespace

int device_count() noexcept {
    const driver::Api* api = driver::try_api();
    if (!api) return 0;
    int count = 0;
    if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
    return count;
}

int driver_version() noexcept {
    const driver::Api* api = driver::try_api();
    return api ? api->version : 0;
}

const DeviceInfo& use_device(int ordinal) {
    DeviceSlot& s = slot(ordinal);
    FA_JIT_CU(cuCtxSetCurrent, s.primary);
    return s.info;
}

const DeviceInfo& current_device() {
    CUcontext ctx = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &ctx);
    if (!ctx) return use_device(0);
    CUdevice dev = 0;
    FA_JIT_CU(cuCtxGetDevice, &dev);
    return slot(static_cast<int>(dev)).info;
}

void synchronize() { FA_JIT_CU(cuCtxSynchronize); }

}  // namespace fa_jit
