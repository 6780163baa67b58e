// The JIT, one type per stage:
//   Source  --compile()-->  Compiled  --Module::load()-->  Module  --get_function()-->  Kernel  --launch()
// compile() is pure (no device). get_kernel() runs the whole chain through the in-process table and the disk cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "fa_jit/cuda_types.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/export.hpp"

namespace fa_jit {

// ---------------------------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------------------------

struct Header {
    std::string name;  // as written in #include "name"
    std::string text;
};

// A kernel source with every header it includes (transitively), so compiling it needs no file system.
struct Source {
    std::string name;  // e.g. "attention_fp32.cu"
    std::string text;
    std::vector<Header> headers;
};

// A file of kernel_sources/: the copy embedded at build time, or the one in $FA_JIT_KERNEL_DIR when set.
// Throws InvalidArgument for an unknown name.
FA_JIT_API Source kernel_source(std::string_view file_name);
// Names of the embedded kernel sources (*.cu).
FA_JIT_API std::vector<std::string> kernel_source_names();

// ---------------------------------------------------------------------------------------------------------------
// Compiling (NVRTC, loaded at run time). Needs no GPU.
// ---------------------------------------------------------------------------------------------------------------

struct CompileRequest {
    Source source;
    std::vector<std::string> name_expressions;  // e.g. "fa_jit::attention_fwd_fp32<64, 64, 128, 4, false>"
    std::vector<std::string> options;           // extra NVRTC options (the arch and the C++ standard are added)
    std::string arch;                           // "sm_80", "sm_90a": cubin; "compute_90": PTX for the driver to JIT
    // The kernel family this request belongs to ("fp32", "f16-mma", "f16-wgmma", ...; empty for other kernels):
    // recorded in the cache entry for `fa-jit-cache list`, not part of the cache key (it does not change the binary).
    std::string family;
};

struct FA_JIT_API Compiled {
    std::string arch;
    bool is_ptx = false;
    std::string binary;                                              // cubin or PTX
    std::vector<std::pair<std::string, std::string>> lowered_names;  // name expression -> mangled name
    std::string log;                                                 // NVRTC log (warnings)

    // Throws InvalidArgument if `name_expression` was not part of the request.
    const std::string& lowered_name(std::string_view name_expression) const;
};

// Throws CompileError (with the full log) if NVRTC rejects the source or cannot be loaded.
FA_JIT_API Compiled compile(const CompileRequest& request);

// The fa-jit-nvrtc worker compile() runs NVRTC in (a process of its own per compile, so that a kernel's binary never
// depends on what else this process compiled), or "" when compiles run in this process: no worker was found, or
// FA_JIT_NVRTC_WORKER=0.
FA_JIT_API std::string compile_worker();

// NVRTC's version as major * 1000 + minor * 10 (CUDA's convention). Throws CompileError if NVRTC is missing.
FA_JIT_API int nvrtc_version();
// The real architectures NVRTC can generate code for, e.g. {75, 80, ..., 120}.
FA_JIT_API std::vector<int> nvrtc_supported_archs();
// The arch string to compile for a device of compute capability major.minor: "sm_XY", "sm_90a" when
// `arch_specific` (wgmma and friends) is requested on 9.0, or "compute_XY" of the newest NVRTC-supported
// arch when the device is newer than NVRTC knows (the driver then JITs the PTX).
FA_JIT_API std::string target_arch(int cc_major, int cc_minor, bool arch_specific = false);
// Checks and normalizes a user-given arch ("sm_90a", "90", "compute_80" ...). Throws InvalidArgument.
FA_JIT_API std::string parse_arch(std::string_view arch);

// ---------------------------------------------------------------------------------------------------------------
// Devices (CUDA driver, loaded at run time)
// ---------------------------------------------------------------------------------------------------------------

// Number of CUDA devices; 0 when no driver is installed (never throws for a missing driver).
FA_JIT_API int device_count() noexcept;
// The CUDA driver version (e.g. 13000), or 0 when there is no driver.
FA_JIT_API int driver_version() noexcept;

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int multiprocessors = 0;
    int max_threads_per_block = 0;
    int max_shared_per_block_optin = 0;  // bytes, the most dynamic shared memory a block can opt into
    int max_grid[3] = {0, 0, 0};
    int max_block[3] = {0, 0, 0};
    int cc() const noexcept { return cc_major * 10 + cc_minor; }  // compute capability as one number, e.g. 90
};

// The device of the current context; when no context is current, device 0's primary context is made current.
// The primary context of each device used is retained for the life of the process.
FA_JIT_API const DeviceInfo& current_device();
// Makes `ordinal`'s primary context current on this thread and returns its info.
FA_JIT_API const DeviceInfo& use_device(int ordinal);

// ---------------------------------------------------------------------------------------------------------------
// RAII owners of driver objects. Move-only; destructors never throw.
// ---------------------------------------------------------------------------------------------------------------

class FA_JIT_API DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);  // cuMemAlloc in the current context
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer();

    unsigned long long address() const noexcept { return ptr_; }
    void* get() const noexcept { return reinterpret_cast<void*>(ptr_); }
    std::size_t size() const noexcept { return bytes_; }

    // Each returns once the device memory holds the bytes (host memory, for download): work on any stream, a
    // non-blocking one included, sees them.
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    void fill_bytes(unsigned char value);  // e.g. 0xFF poisons floats with NaN

private:
    unsigned long long ptr_ = 0;  // CUdeviceptr
    std::size_t bytes_ = 0;
};

class FA_JIT_API Stream {
public:
    Stream();  // a non-blocking stream in the current context
    Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    Stream& operator=(Stream&& o) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();
    CUstream get() const noexcept { return s_; }
    void synchronize() const;

private:
    CUstream s_ = nullptr;
};

class FA_JIT_API Event {
public:
    Event();
    Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    Event& operator=(Event&& o) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();
    CUevent get() const noexcept { return e_; }
    void record(CUstream stream);
    void synchronize() const;
    // Milliseconds from `start` to this event; both recorded and complete.
    float elapsed_ms_since(const Event& start) const;

private:
    CUevent e_ = nullptr;
};

// Synchronizes the current context and throws CudaError if a kernel failed.
FA_JIT_API void synchronize();

// ---------------------------------------------------------------------------------------------------------------
// Loaded code
// ---------------------------------------------------------------------------------------------------------------

class FA_JIT_API Module {
public:
    // Loads a cubin or PTX into the current context.
    static std::shared_ptr<const Module> load(const Compiled& compiled);
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;
    ~Module();
    CUmodule get() const noexcept { return m_; }

private:
    explicit Module(CUmodule m) noexcept : m_(m) {}
    CUmodule m_ = nullptr;
};

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
    Dim3 grid;
    Dim3 block;
    std::size_t shared_bytes = 0;  // dynamic; limits above 48 KB are raised automatically
    CUstream stream = nullptr;
    // Programmatic dependent launch (sm_90 and newer): the kernel may be scheduled while the previous kernel in the
    // stream still runs, so its launch latency overlaps that kernel; it must execute `griddepcontrol.wait` before
    // reading what that kernel wrote. Ignored (an ordinary launch) on older GPUs and drivers.
    bool programmatic_dependency = false;
};

struct KernelParam {
    std::size_t offset;
    std::size_t size;
    std::size_t alignment = 1;  // as packed by the caller; the driver does not report it
};

struct KernelAttributes {
    int registers = 0;            // per thread
    int local_bytes = 0;          // per thread: spills and stack
    int static_shared_bytes = 0;  // per block
    int max_threads_per_block = 0;
};

// A function in a loaded module. Keeps its module alive; cheap to copy.
class FA_JIT_API Kernel {
public:
    Kernel() = default;
    // Looks up `lowered_name` in `module`; reads the parameter layout (cuFuncGetParamInfo) when the driver has it,
    // and allows the function all the dynamic shared memory the current device offers (beyond the default 48 KB).
    Kernel(std::shared_ptr<const Module> module, const std::string& lowered_name);

    CUfunction get() const noexcept { return f_; }
    explicit operator bool() const noexcept { return f_ != nullptr; }
    const std::string& name() const noexcept { return name_; }
    const KernelAttributes& attributes() const noexcept { return attributes_; }
    // The device it was loaded for (its limits are what launch() checks against).
    const DeviceInfo& device() const noexcept { return *device_; }
    // Empty when the driver cannot report it (then launch() cannot check argument sizes).
    const std::vector<KernelParam>& params() const noexcept { return params_; }
    bool params_known() const noexcept { return params_known_; }

private:
    std::shared_ptr<const Module> module_;
    CUfunction f_ = nullptr;
    std::string name_;
    KernelAttributes attributes_;
    const DeviceInfo* device_ = nullptr;
    std::vector<KernelParam> params_;
    bool params_known_ = false;
};

// Compile (or fetch from the caches) and load `name_expression` of `request` for the current device.
// The arch in `request` is ignored: the current device's target_arch() is used, with `arch_specific` as given.
// Concurrent callers of one kernel wait for a single compile. The Kernel returned lives as long as the process.
// A call for a kernel already loaded in this context allocates nothing and touches no file, but it hashes the
// whole request (source text included) to find it: on a hot path, keep the Kernel rather than calling again.
FA_JIT_API const Kernel& get_kernel(const CompileRequest& request, std::string_view name_expression,
                                    bool arch_specific = false);

// ---------------------------------------------------------------------------------------------------------------
// Launching
// ---------------------------------------------------------------------------------------------------------------

// Checks the config against the device and the arguments against the kernel's parameter layout, then launches.
// `given` holds each argument's offset (as packed by the caller) and size. Throws InvalidArgument before the GPU
// sees anything wrong; throws CudaError if the launch itself fails.
FA_JIT_API void launch_packed(const Kernel& kernel, const LaunchConfig& config, const KernelParam* given, void** args,
                              std::size_t count);

// The void*[] that cuLaunchKernel takes, with each argument's offset and size as the kernel's parameter block
// will hold them. Arguments must be trivially copyable; `args` points into the caller's values.
template <std::size_t N>
struct PackedArguments {
    void* args[N == 0 ? 1 : N];
    KernelParam layout[N == 0 ? 1 : N];
    static constexpr std::size_t count = N;
};

template <typename... Args>
PackedArguments<sizeof...(Args)> pack_arguments(const Args&... args) {
    static_assert((std::is_trivially_copyable_v<Args> && ...), "kernel arguments must be trivially copyable");
    PackedArguments<sizeof...(Args)> packed{{const_cast<void*>(static_cast<const void*>(&args))...}, {}};
    std::size_t offset = 0, i = 0;
    // A parameter block is laid out like a struct: each parameter at the next multiple of its alignment.
    ((offset = (offset + alignof(Args) - 1) / alignof(Args) * alignof(Args),
      packed.layout[i++] = {offset, sizeof(Args), alignof(Args)}, offset += sizeof(Args)),
     ...);
    return packed;
}

// Typed launcher: launch(kernel, {grid, block, shared, stream}, args...). Each argument is checked against the
// kernel's parameter sizes and offsets when the driver reports them.
template <typename... Args>
void launch(const Kernel& kernel, const LaunchConfig& config, const Args&... args) {
    auto packed = pack_arguments(args...);
    launch_packed(kernel, config, packed.layout, packed.args, packed.count);
}

}  // namespace fa_jit
