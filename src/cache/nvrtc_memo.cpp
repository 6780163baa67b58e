// The memo of NVRTC's version in the cache directory (see nvrtc_memo.hpp).
#include "cache/nvrtc_memo.hpp"

#include "cache/disk_cache.hpp"
#include "compile/nvrtc_api.hpp"

#include <cuda.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace fa_jit::cache {
namespace {

struct NvrtcMemo {
    std::string environment;  // what decides which NVRTC dlopen finds
    std::string path;
    long long size = 0, mtime = 0;
    int version = 0;
};

std::string loader_environment() {
    const char* explicit_path = std::getenv("FA_JIT_NVRTC_LIBRARY");
    const char* library_path = std::getenv("LD_LIBRARY_PATH");
    return std::string(explicit_path ? explicit_path : "") + "|" + (library_path ? library_path : "");
}

std::filesystem::path memo_file(const DiskCache& disk) { return disk.config().dir / "nvrtc-version"; }

bool file_identity(const std::string& path, long long& size, long long& mtime) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return false;
    size = st.st_size, mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    return true;
}

std::optional<int> remembered_version(const DiskCache& disk) {
    if (!disk.usable()) return std::nullopt;
    std::ifstream in(memo_file(disk));
    NvrtcMemo m;
    if (!std::getline(in, m.environment) || !std::getline(in, m.path) || !(in >> m.size >> m.mtime >> m.version))
        return std::nullopt;
    long long size = 0, mtime = 0;
    if (m.environment != loader_environment() || !file_identity(m.path, size, mtime) || size != m.size ||
        mtime != m.mtime)
        return std::nullopt;
    return m.version;
}

void remember_version(const DiskCache& disk, int version) {
    if (!disk.usable()) return;
    NvrtcMemo m{loader_environment(), nvrtc::library_path(), 0, 0, version};
    if (!file_identity(m.path, m.size, m.mtime)) return;
    const std::filesystem::path file = memo_file(disk);
    const std::string tmp = file.string() + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << m.environment << "\n" << m.path << "\n" << m.size << " " << m.mtime << " " << m.version << "\n";
        if (!out.flush()) return;
    }
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);  // atomic: readers see the old memo or the new one
    if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

int compiling_nvrtc_version(const DiskCache& disk) noexcept {
    try {
        const int version = nvrtc::api().version;
        if (remembered_version(disk) != version) remember_version(disk, version);
        return version;
    } catch (...) {
        return CUDA_VERSION;
    }
}

int lookup_nvrtc_version(const DiskCache& disk) noexcept {
    if (nvrtc::loaded()) return nvrtc::api().version;
    try {
        if (const std::optional<int> v = remembered_version(disk)) return *v;
    } catch (...) {
    }
    return compiling_nvrtc_version(disk);
}

}  // namespace fa_jit::cache
