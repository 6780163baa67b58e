// One of many processes sharing a disk-cache directory (started by test_cache.cpp's [processes] test).
//
//   cache_worker <cache dir> <number of keys> <counter file> <worker index>
//
// Blocks reading stdin until EOF (the parent holds the pipe's write end and closes it to start every worker at
// once), then runs DiskCache::get_or_create for each key with a `make` that appends one line to the counter file
// and returns a deterministic fake kernel. Exits 0 when every result is exactly the expected one.
#include "cache/cache_key.hpp"
#include "cache/disk_cache.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace {

using fa_jit::Compiled;
using fa_jit::CompileRequest;
namespace cache = fa_jit::cache;

constexpr std::size_t kPayloadBytes = 100 * 1024;

CompileRequest request_for(int key_index) {
    CompileRequest r;
    r.source.name = "fake_" + std::to_string(key_index) + ".cu";
    r.source.text = "__global__ void k" + std::to_string(key_index) + "() {}";
    r.name_expressions = {"k" + std::to_string(key_index)};
    r.arch = "sm_80";
    return r;
}

// The kernel "compiled" for a key: ~100 KB whose every byte depends on the key, so a mixed-up, torn or
// half-written entry cannot pass for the right one.
Compiled fake_compiled(const cache::CacheKey& key, const std::string& arch) {
    Compiled c;
    c.arch = arch;
    c.binary.resize(kPayloadBytes);
    std::uint64_t x = key.hash[0] ^ key.hash[1];
    for (auto& byte : c.binary) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;  // LCG: deterministic, cheap
        byte = static_cast<char>(x >> 56);
    }
    c.lowered_names = {{"k", "_Z1k_" + key.hex()}};
    return c;
}

void wait_for_start() {
    char buf[64];
    while (true) {
        const ssize_t n = ::read(0, buf, sizeof buf);
        if (n == 0) return;                 // EOF: the parent closed the pipe, go
        if (n < 0 && errno != EINTR) return;
    }
}

// One line per compile, one write() on an O_APPEND descriptor: lines from concurrent processes never interleave.
void count_compile(const std::string& counter_file, const cache::CacheKey& key) {
    const int fd = ::open(counter_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::perror("cache_worker: open counter file");
        std::exit(2);
    }
    const std::string line = key.hex() + " " + std::to_string(::getpid()) + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        std::perror("cache_worker: write counter file");
        std::exit(2);
    }
    ::close(fd);
}

bool same(const Compiled& a, const Compiled& b) {
    return a.arch == b.arch && a.is_ptx == b.is_ptx && a.binary == b.binary && a.lowered_names == b.lowered_names;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s <cache dir> <number of keys> <counter file> <worker index>\n", argv[0]);
        return 2;
    }
    cache::DiskCacheConfig config;
    config.dir = argv[1];
    const int keys = std::atoi(argv[2]);
    const std::string counter_file = argv[3];
    const int index = std::atoi(argv[4]);

    wait_for_start();
    cache::DiskCache disk(config);
    if (!disk.usable()) {
        std::fprintf(stderr, "cache_worker %d: cache directory %s is not usable\n", index, argv[1]);
        return 3;
    }

    int failures = 0;
    for (int n = 0; n < keys; ++n) {
        // Workers start at different keys so that some contend on one key while others race on different ones.
        const int k = (n + index) % keys;
        const CompileRequest request = request_for(k);
        const cache::CacheKey key = cache::make_key(request, 12080, 0);
        const Compiled expected = fake_compiled(key, request.arch);
        const Compiled got = disk.get_or_create(key, request.arch, {request.source.name, request.options}, [&] {
            count_compile(counter_file, key);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // widen the race window
            return fake_compiled(key, request.arch);
        });
        if (!same(got, expected)) {
            std::fprintf(stderr, "cache_worker %d: key %s: wrong kernel (%zu bytes)\n", index, key.hex().c_str(),
                         got.binary.size());
            ++failures;
        }
    }
    return failures == 0 ? 0 : 1;
}
