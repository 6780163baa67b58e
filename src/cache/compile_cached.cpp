#include "cache/compile_cached.hpp"

#include "cache/disk_cache.hpp"
#include "compile/nvrtc_api.hpp"
#include "util/log.hpp"

#include <cuda.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>

namespace fa_jit::cache {
namespace {

// Loading NVRTC takes about 6 ms, more than the rest of a warm first call, only to learn its version for the key.
// So the cache directory remembers, per loader environment, which file NVRTC came from and its version; while
// that file is unchanged, the version is taken from the memo. A compile loads NVRTC anyway, checks the memo and
// keys what it stores with the true version.
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

std::filesystem::path memo_file() { return DiskCache::instance().config().dir / "nvrtc-version"; }

bool file_identity(const std::string& path, long long& size, long long& mtime) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return false;
    size = st.st_size, mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    return true;
}

std::optional<int> remembered_version() {
    if (!DiskCache::instance().usable()) return std::nullopt;
    std::ifstream in(memo_file());
    NvrtcMemo m;
    if (!std::getline(in, m.environment) || !std::getline(in, m.path) || !(in >> m.size >> m.mtime >> m.version))
        return std::nullopt;
    long long size = 0, mtime = 0;
    if (m.environment != loader_environment() || !file_identity(m.path, size, mtime) || size != m.size ||
        mtime != m.mtime)
        return std::nullopt;
    return m.version;
}

void remember_version(int version) {
    if (!DiskCache::instance().usable()) return;
    NvrtcMemo m{loader_environment(), nvrtc::library_path(), 0, 0, version};
    if (!file_identity(m.path, m.size, m.mtime)) return;
    const std::filesystem::path file = memo_file();
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

// The version of the NVRTC that is loaded now, loading it; CUDA_VERSION when there is none.
int loaded_nvrtc_version() noexcept {
    try {
        const int version = nvrtc::api().version;
        if (remembered_version() != version) remember_version(version);
        return version;
    } catch (...) {
        return CUDA_VERSION;
    }
}

}  // namespace

int cache_nvrtc_version() noexcept {
    if (nvrtc::loaded()) return nvrtc::api().version;
    try {
        if (const std::optional<int> v = remembered_version()) return *v;
    } catch (...) {
    }
    return loaded_nvrtc_version();
}

CacheKey key_for(const CompileRequest& request) {
    const bool ptx = request.arch.rfind("compute_", 0) == 0;
    return make_key(request, cache_nvrtc_version(), ptx ? driver_version() : 0);
}

Compiled compile_cached(const CompileRequest& request, bool* was_hit) {
    DiskCache& disk = DiskCache::instance();
    if (std::optional<Compiled> hit = disk.load(key_for(request), request.arch)) {
        if (was_hit) *was_hit = true;
        return std::move(*hit);
    }
    // A miss compiles: key the entry with the version of the NVRTC that will compile it.
    loaded_nvrtc_version();
    std::string description = request.source.name;
    for (const std::string& e : request.name_expressions) description += " " + e;
    return disk.get_or_create(
        key_for(request), request.arch, description, request.options, [&] { return compile(request); }, was_hit);
}

}  // namespace fa_jit::cache
