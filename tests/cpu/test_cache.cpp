// The disk cache: keys, the entry format, corruption handling, untrusted and unwritable directories, eviction,
// and concurrency across threads and processes. Fake payloads only (a real NVRTC round trip is in the GPU tests).
#include "cache/cache_key.hpp"
#include "cache/compile_cached.hpp"
#include "cache/disk_cache.hpp"
#include "cache/entry_format.hpp"
#include "cache/stats.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using fa_jit::Compiled;
using fa_jit::CompileRequest;
using fa_jit::cache::CacheKey;
using fa_jit::cache::DiskCache;
using fa_jit::cache::DiskCacheConfig;
using fa_jit::cache::make_key;

// A fresh private directory per test, removed afterwards (whatever permissions the test left on it).
class TempDir {
public:
    TempDir() {
        char name[] = "/tmp/fa_jit_cache_test.XXXXXX";
        REQUIRE(::mkdtemp(name) != nullptr);
        path_ = name;
    }
    ~TempDir() {
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            ::chmod(it->path().c_str(), 0700);
        ::chmod(path_.c_str(), 0700);
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

DiskCacheConfig config_for(const fs::path& dir, std::uint64_t max_bytes = 1ull << 30) {
    DiskCacheConfig c;
    c.dir = dir;
    c.max_bytes = max_bytes;
    return c;
}

CompileRequest base_request() {
    CompileRequest r;
    r.source.name = "attention_fp32.cu";
    r.source.text = "#include \"common.cuh\"\n__global__ void k() {}\n";
    r.source.headers = {{"common.cuh", "#pragma once\n"}, {"tile.cuh", "struct Tile {};\n"}};
    r.name_expressions = {"fa_jit::attention_fwd_fp32<64, 64, 128, 4, false>"};
    r.options = {"-lineinfo", "-DFA_JIT_X=1"};
    r.arch = "sm_80";
    return r;
}

// A deterministic fake kernel whose bytes (NULs included) depend on `seed`.
Compiled fake_compiled(std::uint64_t seed, std::size_t bytes = 4096, const std::string& arch = "sm_80",
                       bool is_ptx = false) {
    Compiled c;
    c.arch = arch;
    c.is_ptx = is_ptx;
    c.binary.resize(bytes);
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& b : c.binary) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b = static_cast<char>(x);
    }
    c.lowered_names = {{"k<" + std::to_string(seed) + ">", "_Z1kILi" + std::to_string(seed) + "EEvv"},
                       {"other", "_Z5otherv"}};
    c.log = "warning: seed " + std::to_string(seed);
    return c;
}

CacheKey key_for(std::uint64_t seed) {
    CompileRequest r = base_request();
    r.source.text += "// " + std::to_string(seed);
    return make_key(r, 12080, 0);
}

bool same(const Compiled& a, const Compiled& b) {
    return a.arch == b.arch && a.is_ptx == b.is_ptx && a.binary == b.binary && a.lowered_names == b.lowered_names &&
           a.log == b.log;
}

std::string read_bytes(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const fs::path& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << bytes;
}
void flip_byte(const fs::path& p, std::size_t offset) {
    std::string bytes = read_bytes(p);
    REQUIRE(offset < bytes.size());
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5A);
    write_bytes(p, bytes);
}

fs::path entry_file(const fs::path& dir, const CacheKey& key) { return dir / (key.hex() + ".fajit"); }

std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}
std::size_t count_with(const fs::path& dir, const std::string& part) {
    const auto names = names_in(dir);
    return std::count_if(names.begin(), names.end(),
                         [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// get_or_create with a `make` that counts its calls.
struct CountingMake {
    std::uint64_t seed;
    std::string arch = "sm_80";
    int calls = 0;
    Compiled operator()() {
        ++calls;
        return fake_compiled(seed, 4096, arch);
    }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("cache key changes when any one input changes, and only then", "[cache]") {
    const CacheKey base = make_key(base_request(), 12080, 12090);

    SECTION("same inputs, constructed separately, give the same key") {
        CompileRequest again;
        again.arch = "sm_80";
        again.options = {"-lineinfo", "-DFA_JIT_X=1"};
        again.name_expressions = {"fa_jit::attention_fwd_fp32<64, 64, 128, 4, false>"};
        again.source.headers = {{"common.cuh", "#pragma once\n"}, {"tile.cuh", "struct Tile {};\n"}};
        again.source.text = "#include \"common.cuh\"\n__global__ void k() {}\n";
        again.source.name = "attention_fp32.cu";
        CHECK(make_key(again, 12080, 12090) == base);
        CHECK(make_key(base_request(), 12080, 12090).hex() == base.hex());
    }

    SECTION("hex is 32 lowercase hex digits") {
        const std::string hex = base.hex();
        CHECK(hex.size() == 32);
        CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
    }

    SECTION("each single change gives a new, distinct key") {
        std::vector<std::pair<std::string, CacheKey>> variants;
        const auto vary = [&](const std::string& what, auto&& change, int nvrtc = 12080, int driver = 12090) {
            CompileRequest r = base_request();
            change(r);
            variants.emplace_back(what, make_key(r, nvrtc, driver));
        };
        const auto none = [](CompileRequest&) {};
        vary("source text", [](CompileRequest& r) { r.source.text += " "; });
        vary("source name", [](CompileRequest& r) { r.source.name = "attention_bf16.cu"; });
        vary("header text", [](CompileRequest& r) { r.source.headers[1].text = "struct Tile { int x; };\n"; });
        vary("header name", [](CompileRequest& r) { r.source.headers[1].name = "tile2.cuh"; });
        vary("header added", [](CompileRequest& r) { r.source.headers.push_back({"x.cuh", ""}); });
        vary("name expression", [](CompileRequest& r) {
            auto& e = r.name_expressions[0];
            e.replace(e.find("64"), 2, "32");
        });
        vary("name expression added", [](CompileRequest& r) { r.name_expressions.push_back("k2"); });
        vary("option", [](CompileRequest& r) { r.options[1] = "-DFA_JIT_X=2"; });
        vary("option added", [](CompileRequest& r) { r.options.push_back("-G"); });
        vary("option removed", [](CompileRequest& r) { r.options.pop_back(); });
        vary("arch", [](CompileRequest& r) { r.arch = "sm_90"; });
        vary("nvrtc version", none, 12081, 12090);
        vary("driver version", none, 12080, 12091);
        // Length prefixes: moving a character from one field to the next must change the key.
        vary("field boundary", [](CompileRequest& r) {
            r.options = {"-lineinfo-", "DFA_JIT_X=1"};
        });
        vary("header/text boundary", [](CompileRequest& r) {
            r.source.headers[0].name += r.source.headers[0].text.substr(0, 1);
            r.source.headers[0].text.erase(0, 1);
        });

        std::set<std::string> seen = {base.hex()};
        for (const auto& [what, key] : variants) {
            INFO("changed: " << what);
            CHECK_FALSE(key == base);
            CHECK(seen.insert(key.hex()).second);  // distinct from every other variant too
        }
    }
}

TEST_CASE("cache keys do not change with the entry format version", "[cache]") {
    // Computed by the version-1 build. Were the keys to change, old entries would never be looked up again: they
    // would neither be reported as stale nor replaced, only linger until evicted. Update these only together with
    // kKeyVersion.
    CHECK(make_key(base_request(), 12080, 12090).hex() == "0bd5ba0918b54f397be08186db39f109");
    CompileRequest ptx = base_request();
    ptx.arch = "compute_90";
    CHECK(make_key(ptx, 12080, 12090).hex() == "8d4770b5312c8db5450ebe7d6b085a64");

    // The family names the kernel for `fa-jit-cache list`; it does not change the binary, so not the key either.
    CompileRequest named = base_request();
    named.family = "fp32";
    CHECK(make_key(named, 12080, 12090) == make_key(base_request(), 12080, 12090));

    // One source hash keys any target, as make_key() would.
    const fa_jit::cache::SourceHash source(base_request());
    CHECK(source.key("compute_90", 12080, 12090) == make_key(ptx, 12080, 12090));
    CHECK(source.key("sm_80", 12080, 12090) == make_key(base_request(), 12080, 12090));
    // get_kernel()'s form for a request without name expressions: hashed as the list of that one expression.
    CompileRequest unnamed = base_request();
    unnamed.name_expressions.clear();
    CHECK(fa_jit::cache::SourceHash(unnamed.source, base_request().name_expressions[0], unnamed.options)
              .key("sm_80", 12080, 12090) == make_key(base_request(), 12080, 12090));
}

// ---------------------------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("cache store then load returns the identical kernel", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    REQUIRE(cache.usable());

    const bool ptx = GENERATE(false, true);
    const std::string arch = ptx ? "compute_90" : "sm_80";
    const CacheKey key = key_for(1);
    Compiled original = fake_compiled(1, 123457, arch, ptx);
    original.binary[10] = '\0';  // binary-safe

    CHECK_FALSE(cache.load(key, arch).has_value());
    cache.store(key, {"attention_fp32.cu k<1>", {"-lineinfo"}}, original);
    CHECK(fs::exists(entry_file(tmp.path(), key)));
    CHECK(count_with(tmp.path(), ".tmp.") == 0);

    const auto loaded = cache.load(key, arch);
    REQUIRE(loaded.has_value());
    CHECK(same(*loaded, original));

    // A second DiskCache on the same directory (another process, in effect) reads it too.
    DiskCache other(config_for(tmp.path()));
    const auto again = other.load(key, arch);
    REQUIRE(again.has_value());
    CHECK(same(*again, original));

    // get_or_create hits without calling make.
    bool hit = false;
    CountingMake make{99};
    const Compiled got = cache.get_or_create(key, arch, {"k", {}}, std::ref(make), &hit);
    CHECK(hit);
    CHECK(make.calls == 0);
    CHECK(same(got, original));
}

TEST_CASE("cache get_or_create compiles on a miss, stores, and propagates make's exceptions", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    const CacheKey key = key_for(2);

    CHECK_THROWS_AS(cache.get_or_create(key, "sm_80", {"k", {}}, []() -> Compiled { throw std::runtime_error("nvrtc"); }),
                    std::runtime_error);
    CHECK_FALSE(fs::exists(entry_file(tmp.path(), key)));

    bool hit = true;
    CountingMake make{2};
    CHECK(same(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make), &hit), fake_compiled(2)));
    CHECK_FALSE(hit);
    CHECK(make.calls == 1);
    CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make), &hit).binary == fake_compiled(2).binary);
    CHECK(hit);
    CHECK(make.calls == 1);
}

TEST_CASE("cache detects, removes and recompiles a bad entry", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    REQUIRE(cache.usable());
    const CacheKey key = key_for(3);
    const fs::path file = entry_file(tmp.path(), key);
    const std::string kernel = "attention_fp32.cu fa_jit::attention_fwd_fp32<64>";
    cache.store(key, {kernel, {"-lineinfo"}}, fake_compiled(3));
    REQUIRE(fs::exists(file));
    const std::string good = read_bytes(file);
    std::string requested_arch = "sm_80";

    // Offsets below follow the entry format documented in entry_format.hpp: magic at 0, u32 version at 8,
    // a 56-byte header, then the metadata, then the payload.
    SECTION("truncated by one byte") { fs::resize_file(file, good.size() - 1); }
    SECTION("truncated inside the header") { fs::resize_file(file, 20); }
    SECTION("empty file") { fs::resize_file(file, 0); }
    SECTION("trailing garbage") { write_bytes(file, good + "xyz"); }
    SECTION("flipped byte in the payload") { flip_byte(file, good.size() - 100); }
    SECTION("flipped byte in the metadata") {
        const auto at = good.find(kernel);
        REQUIRE(at != std::string::npos);
        REQUIRE(at > 56);
        flip_byte(file, at + 5);
    }
    SECTION("flipped byte in the header (the flags: cubin would read as PTX)") { flip_byte(file, 12); }
    SECTION("wrong magic") { flip_byte(file, 0); }
    SECTION("wrong format version") {
        std::string bytes = good;
        bytes[8] = static_cast<char>(fa_jit::cache::kFormatVersion + 1);
        write_bytes(file, bytes);
    }
    SECTION("an entry of the previous format version (1: no kernel family)") {
        std::string bytes = good;
        bytes[8] = 1;
        write_bytes(file, bytes);
    }
    SECTION("another key's entry renamed to this key's file name") {
        const CacheKey other = key_for(4);
        cache.store(other, {kernel, {}}, fake_compiled(4));
        fs::rename(entry_file(tmp.path(), other), file);
    }
    SECTION("wrong arch requested") { requested_arch = "sm_90"; }

    CHECK_FALSE(cache.load(key, requested_arch).has_value());
    CHECK_FALSE(fs::exists(file));

    bool hit = true;
    CountingMake make{3, requested_arch};
    const Compiled got = cache.get_or_create(key, requested_arch, {kernel, {}}, std::ref(make), &hit);
    CHECK_FALSE(hit);
    CHECK(make.calls == 1);
    CHECK(got.binary == fake_compiled(3).binary);
    // ... and the recompiled kernel is cached again.
    CHECK(cache.load(key, requested_arch).has_value());
}

// ---------------------------------------------------------------------------------------------------------------
// Directories that cannot or must not be used
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("cache degrades to no cache when the directory cannot be written", "[cache]") {
    TempDir tmp;
    const CacheKey key = key_for(5);

    // Tests run as root in CI, and root ignores permission bits: chmod 0500 alone would not stop a write.
    // These cases fail for root too.
    SECTION("the directory cannot be created: its parent is a regular file") {
        write_bytes(tmp.path() / "file", "x");
        DiskCache cache(config_for(tmp.path() / "file" / "cache"));
        CHECK_FALSE(cache.usable());
        CHECK_NOTHROW(cache.store(key, {"k", {}}, fake_compiled(5)));
        CHECK_FALSE(cache.load(key, "sm_80").has_value());
        CountingMake make{5};
        CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(5).binary);
        CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(5).binary);
        CHECK(make.calls == 2);
    }

    SECTION("the path is a regular file") {
        write_bytes(tmp.path() / "file", "x");
        DiskCache cache(config_for(tmp.path() / "file"));
        CHECK_FALSE(cache.usable());
        CountingMake make{5};
        CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(5).binary);
    }

    SECTION("writes fail mid-entry, as on a full disk") {
        // RLIMIT_FSIZE makes write() fail with EFBIG past a size (SIGXFSZ ignored), for root too: a real failed
        // write in the middle of an entry, like ENOSPC, without filling a file system. (While it is lowered, a
        // line to a stderr redirected into a large file could be lost; nothing else writes files meanwhile.)
        DiskCache cache(config_for(tmp.path()));
        REQUIRE(cache.usable());
        rlimit saved{};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = saved;
        small.rlim_cur = 4096;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        CHECK_NOTHROW(cache.store(key, {"k", {}}, fake_compiled(5, 100 * 1024)));
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, old_handler);

        CHECK_FALSE(cache.usable());  // turned off for this process, with one warning
        CHECK_FALSE(fs::exists(entry_file(tmp.path(), key)));
        CHECK(count_with(tmp.path(), ".tmp.") == 0);  // the partial temporary file was cleaned up
        CountingMake make{5};
        CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(5).binary);
        CHECK(make.calls == 1);
    }

    SECTION("permission bits, when not running as root") {
        if (::geteuid() == 0) {
            WARN("running as root: permission bits do not stop root; covered by the cases above");
        } else {
            REQUIRE(::chmod(tmp.path().c_str(), 0500) == 0);
            DiskCache cache(config_for(tmp.path()));
            CHECK_FALSE(cache.usable());
            CountingMake make{5};
            CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(5).binary);
        }
    }
}

TEST_CASE("cache refuses a directory other users can write or another user owns", "[cache]") {
    TempDir tmp;
    const CacheKey key = key_for(6);
    {
        DiskCache trusted(config_for(tmp.path()));
        REQUIRE(trusted.usable());
        trusted.store(key, {"k", {}}, fake_compiled(6));
    }

    SECTION("world-writable") { REQUIRE(::chmod(tmp.path().c_str(), 0777) == 0); }
    SECTION("group-writable") { REQUIRE(::chmod(tmp.path().c_str(), 0770) == 0); }
    SECTION("owned by another user") {
        if (::geteuid() != 0) {
            WARN("not root: cannot chown to another uid; skipped");
            return;
        }
        REQUIRE(::chown(tmp.path().c_str(), 65534, 65534) == 0);
    }

    DiskCache cache(config_for(tmp.path()));
    CHECK_FALSE(cache.usable());
    // The entry planted there is never loaded...
    CHECK_FALSE(cache.load(key, "sm_80").has_value());
    CountingMake make{6};
    CHECK(cache.get_or_create(key, "sm_80", {"k", {}}, std::ref(make)).binary == fake_compiled(6).binary);
    CHECK(make.calls == 1);
    // ... nor removed: it is not ours to judge.
    CHECK(fs::exists(entry_file(tmp.path(), key)));
}

TEST_CASE("cache creates its directory private", "[cache]") {
    TempDir tmp;
    const fs::path dir = tmp.path() / "a" / "b" / "fa_jit";
    const mode_t old_umask = ::umask(0);  // even with a permissive umask
    DiskCache cache(config_for(dir));
    ::umask(old_umask);
    REQUIRE(cache.usable());
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("cache disabled by its config does nothing", "[cache]") {
    TempDir tmp;
    DiskCacheConfig config = config_for(tmp.path() / "never");
    config.enabled = false;
    DiskCache cache(config);
    CHECK_FALSE(cache.usable());
    cache.store(key_for(7), {"k", {}}, fake_compiled(7));
    CHECK_FALSE(fs::exists(tmp.path() / "never"));
}

// ---------------------------------------------------------------------------------------------------------------
// Eviction and maintenance
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("cache evicts least recently used entries above its cap", "[cache]") {
    TempDir tmp;
    // Measure one entry's size to set the cap in entries.
    std::uint64_t entry_bytes = 0;
    {
        TempDir probe;
        DiskCache c(config_for(probe.path()));
        c.store(key_for(100), {"k", {}}, fake_compiled(100, 10000));
        entry_bytes = c.total_bytes();
    }
    REQUIRE(entry_bytes > 10000);
    const std::uint64_t cap = entry_bytes * 7 / 2;  // room for 3 entries, not 4
    DiskCache cache(config_for(tmp.path(), cap));

    const CacheKey a = key_for(101), b = key_for(102), c = key_for(103), d = key_for(104);
    for (const auto& [key, seed] : {std::pair{a, 101}, {b, 102}, {c, 103}})
        cache.store(key, {"k", {}}, fake_compiled(seed, 10000));
    REQUIRE(cache.list(false).size() == 3);

    // Distinct ages: a oldest, then b, then c.
    const auto now = fs::file_time_type::clock::now();
    fs::last_write_time(entry_file(tmp.path(), a), now - std::chrono::minutes(30));
    fs::last_write_time(entry_file(tmp.path(), b), now - std::chrono::minutes(20));
    fs::last_write_time(entry_file(tmp.path(), c), now - std::chrono::minutes(10));

    SECTION("the oldest goes") {
        cache.store(d, {"k", {}}, fake_compiled(104, 10000));
        CHECK_FALSE(fs::exists(entry_file(tmp.path(), a)));
        CHECK(fs::exists(entry_file(tmp.path(), b)));
        CHECK(fs::exists(entry_file(tmp.path(), c)));
        CHECK(fs::exists(entry_file(tmp.path(), d)));
        CHECK(cache.total_bytes() <= cap);
    }
    SECTION("a hit makes an entry recent") {
        REQUIRE(cache.load(a, "sm_80").has_value());
        cache.store(d, {"k", {}}, fake_compiled(104, 10000));
        CHECK(fs::exists(entry_file(tmp.path(), a)));
        CHECK_FALSE(fs::exists(entry_file(tmp.path(), b)));
        CHECK(fs::exists(entry_file(tmp.path(), d)));
        CHECK(cache.total_bytes() <= cap);
    }
    SECTION("the entry just written stays even when it alone exceeds the cap") {
        DiskCache tiny(config_for(tmp.path(), entry_bytes / 2));
        tiny.store(d, {"k", {}}, fake_compiled(104, 10000));
        CHECK(names_in(tmp.path()) == std::vector<std::string>{d.hex() + ".fajit"});
    }
    SECTION("prune") {
        CHECK(cache.prune(entry_bytes * 2) == 1);  // a goes
        CHECK_FALSE(fs::exists(entry_file(tmp.path(), a)));
        CHECK(cache.prune(0) == 2);
        CHECK(cache.total_bytes() == 0);
    }
}

TEST_CASE("cache list flags bad entries, remove_bad removes them, clear empties", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    for (int i = 0; i < 3; ++i) {
        CountingMake make{std::uint64_t(200 + i)};
        cache.get_or_create(key_for(200 + i), "sm_80", {"kernel " + std::to_string(i), {"-lineinfo"}}, std::ref(make));
    }
    flip_byte(entry_file(tmp.path(), key_for(201)), 56 + 300);  // inside the payload
    write_bytes(tmp.path() / ".tmp.1.2.deadbeef", "stray");       // a writer that died
    write_bytes(tmp.path() / "README", "not ours");              // other files are left alone

    const auto quick = cache.list(false);  // header and metadata only: the payload flip is not seen
    REQUIRE(quick.size() == 3);
    for (const auto& e : quick) CHECK(e.problem.empty());

    const auto verified = cache.list(true);
    REQUIRE(verified.size() == 3);
    int bad = 0;
    for (const auto& e : verified) {
        CHECK(e.arch == "sm_80");
        CHECK(e.options == std::vector<std::string>{"-lineinfo"});
        CHECK(e.kernel.rfind("kernel ", 0) == 0);
        CHECK(e.file_bytes == fs::file_size(e.file));
        if (!e.problem.empty()) {
            ++bad;
            CHECK(e.file == entry_file(tmp.path(), key_for(201)));
            CHECK(e.problem.find("checksum") != std::string::npos);
        }
    }
    CHECK(bad == 1);
    // Lock files are not entries and do not count.
    CHECK(count_with(tmp.path(), ".lock") == 3);
    std::uint64_t entries_bytes = 0;
    for (const auto& e : verified) entries_bytes += e.file_bytes;
    CHECK(cache.total_bytes() == entries_bytes);

    CHECK(cache.remove_bad() == 1);
    CHECK(cache.list(true).size() == 2);
    CHECK(cache.remove_bad() == 0);

    CHECK(cache.clear() == 2);
    CHECK(cache.list(false).empty());
    CHECK(cache.total_bytes() == 0);
    CHECK(names_in(tmp.path()) == std::vector<std::string>{"README"});
}

TEST_CASE("cache entries record their kernel family and list it", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    REQUIRE(cache.usable());
    cache.store(key_for(250), {"attention_fp32.cu k<64>", {"-lineinfo"}, "fp32"}, fake_compiled(250));
    cache.store(key_for(251), {"sample.cu k", {}}, fake_compiled(251));  // a kernel of no family

    for (const bool verify : {false, true}) {
        const auto entries = cache.list(verify);
        REQUIRE(entries.size() == 2);
        for (const auto& e : entries) {
            INFO(e.file.string());
            CHECK(e.problem.empty());
            if (e.key() == key_for(250).hex()) {
                CHECK(e.family == "fp32");
                CHECK(e.kernel == "attention_fp32.cu k<64>");
            } else {
                CHECK(e.key() == key_for(251).hex());
                CHECK(e.family.empty());
            }
        }
    }
    // The family is metadata only: the kernel loads the same.
    const auto loaded = cache.load(key_for(250), "sm_80");
    REQUIRE(loaded.has_value());
    CHECK(same(*loaded, fake_compiled(250)));
}

TEST_CASE("cache miss hashes the source once and looks on disk once before the lock, once under it", "[cache]") {
    // A real compile (NVRTC, no GPU) of a kernel unique to this run, through the path get_kernel() and warmup use.
    using fa_jit::cache::SourceHash;
    using fa_jit::cache::thread_stats;
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    REQUIRE(cache.usable());
    CompileRequest request;
    request.source = {"count.cu",
                      "__global__ void k(float* x) { x[0] = " + std::to_string(::getpid()) + ".0f; }\n",
                      {}};
    request.name_expressions = {"k"};
    request.arch = "sm_80";
    request.family = "test";
    const auto compile_counting = [&](const std::string& lookup_arch, const CompileRequest& resolved, bool& hit,
                                      int& hashes, int& lookups) {
        const auto before = thread_stats();
        const SourceHash source(request);  // the caller's one hash, as in get_kernel()
        const Compiled c = fa_jit::cache::compile_cached(cache, source, lookup_arch, [&] { return resolved; }, &hit);
        hashes = static_cast<int>(thread_stats().source_hashes - before.source_hashes);
        lookups = static_cast<int>(thread_stats().disk_lookups - before.disk_lookups);
        return c;
    };
    bool hit = true;
    int hashes = 0, lookups = 0;

    SECTION("the arch looked up is the one compiled") {
        const Compiled miss = compile_counting("sm_80", request, hit, hashes, lookups);
        CHECK_FALSE(hit);
        CHECK(hashes == 1);   // before: 3 in get_kernel(), 2 in warmup
        CHECK(lookups == 2);  // before: 4 in get_kernel(), 3 in warmup
        CHECK(miss.arch == "sm_80");

        const Compiled again = compile_counting("sm_80", request, hit, hashes, lookups);
        CHECK(hit);
        CHECK(hashes == 1);
        CHECK(lookups == 1);
        CHECK(same(again, miss));
        const auto entries = cache.list(true);
        REQUIRE(entries.size() == 1);
        CHECK(entries[0].family == "test");
        CHECK(entries[0].kernel == "count.cu k");
    }

    SECTION("re-keyed for another arch (PTX for a device newer than NVRTC): still one hash of the source") {
        CompileRequest ptx = request;
        ptx.arch = "compute_80";
        const Compiled miss = compile_counting("sm_80", ptx, hit, hashes, lookups);
        CHECK_FALSE(hit);
        CHECK(hashes == 1);
        CHECK(lookups == 3);  // the device's arch, then the PTX key before and under the lock
        CHECK(miss.is_ptx);

        compile_counting("compute_80", ptx, hit, hashes, lookups);
        CHECK(hit);
        CHECK(lookups == 1);
    }
}

TEST_CASE("cache config from the environment", "[cache]") {
    // Saves and restores the variables this test changes.
    struct Env {
        std::vector<std::pair<std::string, std::optional<std::string>>> saved;
        void set(const std::string& name, const char* value) {
            const char* old = std::getenv(name.c_str());
            saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
            if (value)
                ::setenv(name.c_str(), value, 1);
            else
                ::unsetenv(name.c_str());
        }
        ~Env() {
            for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
                if (it->second)
                    ::setenv(it->first.c_str(), it->second->c_str(), 1);
                else
                    ::unsetenv(it->first.c_str());
            }
        }
    } env;
    env.set("FA_JIT_CACHE_DIR", nullptr);
    env.set("XDG_CACHE_HOME", nullptr);
    env.set("HOME", "/home/someone");
    env.set("FA_JIT_CACHE", nullptr);
    env.set("FA_JIT_CACHE_MAX_BYTES", nullptr);

    auto c = DiskCacheConfig::from_env();
    CHECK(c.dir == fs::path("/home/someone/.cache/fa_jit"));
    CHECK(c.enabled);
    CHECK(c.max_bytes == (1ull << 30));

    env.set("XDG_CACHE_HOME", "/xdg");
    CHECK(DiskCacheConfig::from_env().dir == fs::path("/xdg/fa_jit"));
    env.set("FA_JIT_CACHE_DIR", "/explicit");
    CHECK(DiskCacheConfig::from_env().dir == fs::path("/explicit"));

    env.set("FA_JIT_CACHE", "0");
    CHECK_FALSE(DiskCacheConfig::from_env().enabled);
    env.set("FA_JIT_CACHE", "1");
    CHECK(DiskCacheConfig::from_env().enabled);

    const std::pair<const char*, std::uint64_t> sizes[] = {
        {"12345", 12345}, {"64K", 64ull << 10}, {"500M", 500ull << 20}, {"2G", 2ull << 30}, {"3g", 3ull << 30},
        {"1GiB", 1ull << 30}, {"0", 0}};
    for (const auto& [text, bytes] : sizes) {
        env.set("FA_JIT_CACHE_MAX_BYTES", text);
        INFO(text);
        CHECK(DiskCacheConfig::from_env().max_bytes == bytes);
    }
    for (const char* bad : {"lots", "-5", "12X", "99999999999999999999", "20000000000000G"}) {
        env.set("FA_JIT_CACHE_MAX_BYTES", bad);
        INFO(bad);
        CHECK(DiskCacheConfig::from_env().max_bytes == (1ull << 30));  // a warning, and the default
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("cache get_or_create from 8 threads on one key compiles once", "[cache]") {
    TempDir tmp;
    DiskCache cache(config_for(tmp.path()));
    REQUIRE(cache.usable());
    const CacheKey key = key_for(300);

    std::atomic<int> makes{0}, hits{0};
    std::atomic<bool> go{false};
    std::vector<Compiled> results(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            while (!go.load()) std::this_thread::yield();
            bool hit = false;
            results[t] = cache.get_or_create(
                key, "sm_80", {"k", {}},
                [&] {
                    ++makes;
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    return fake_compiled(300, 50000);
                },
                &hit);
            if (hit) ++hits;
        });
    go = true;
    for (auto& t : threads) t.join();

    CHECK(makes == 1);
    CHECK(hits == 7);
    for (const auto& r : results) CHECK(same(r, fake_compiled(300, 50000)));
}

TEST_CASE("cache shared by 16 processes compiling the same keys", "[cache][processes]") {
    const std::string worker = FA_JIT_WORKER_DIR "/cache_worker";
    REQUIRE(::access(worker.c_str(), X_OK) == 0);
    TempDir tmp;
    const fs::path dir = tmp.path() / "cache";  // starts absent: the workers race to create it too
    const fs::path counter = tmp.path() / "compiles.txt";
    constexpr int kProcesses = 16, kKeys = 12;

    // Start barrier: every worker reads stdin from this pipe until EOF; closing the write end releases them all.
    int start[2];
    REQUIRE(::pipe2(start, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, start[0], 0);  // dup2 clears close-on-exec on the copy

    std::vector<pid_t> pids;
    for (int i = 0; i < kProcesses; ++i) {
        std::vector<std::string> args = {worker, dir.string(), std::to_string(kKeys), counter.string(),
                                         std::to_string(i)};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        const int rc = ::posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv.data(), environ);
        CHECK(rc == 0);
        if (rc == 0) pids.push_back(pid);
    }
    posix_spawn_file_actions_destroy(&actions);
    ::close(start[0]);
    ::close(start[1]);  // go

    int failed = 0;
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    CHECK(pids.size() == std::size_t(kProcesses));
    CHECK(failed == 0);

    DiskCache cache(config_for(dir));
    REQUIRE(cache.usable());
    const auto entries = cache.list(true);
    CHECK(entries.size() == std::size_t(kKeys));
    for (const auto& e : entries) {
        INFO(e.file.string());
        CHECK(e.problem.empty());
    }
    CHECK(count_with(dir, ".tmp.") == 0);

    // With the per-key lock, each key was compiled exactly once across all processes.
    std::ifstream lines(counter);
    std::vector<std::string> compiled_keys;
    for (std::string line; std::getline(lines, line);) compiled_keys.push_back(line.substr(0, line.find(' ')));
    CHECK(compiled_keys.size() == std::size_t(kKeys));
    CHECK(std::set<std::string>(compiled_keys.begin(), compiled_keys.end()).size() == std::size_t(kKeys));
}
