#include "cache/disk_cache.hpp"

#include "util/log.hpp"

#include <xxhash.h>  // header-only: XXH_INLINE_ALL is defined for the library's sources

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Entry format (all integers little-endian):
//   offset  0  magic "FAJITC01"
//           8  u32 format version (kFormatVersion)
//          12  u32 flags (bit 0: payload is PTX, else cubin)
//          16  u64 metadata length
//          24  u64 payload length
//          32  u64 XXH3-64 of the metadata
//          40  u64 XXH3-64 of the payload
//          48  u64 XXH3-64 of bytes 0..47 (so a flipped flag or length is caught too)
//          56  metadata: length-prefixed strings (key hex, arch, kernel, options, lowered names, NVRTC log)
//              payload: the cubin or PTX
// ---------------------------------------------------------------------------------------------------------------
constexpr char kMagic[8] = {'F', 'A', 'J', 'I', 'T', 'C', '0', '1'};
constexpr std::size_t kHeaderBytes = 56;
constexpr std::uint32_t kFlagPtx = 1;

constexpr std::string_view kEntrySuffix = ".fajit";
constexpr std::string_view kLockSuffix = ".lock";
constexpr std::string_view kTempPrefix = ".tmp.";
// A temporary file this old belongs to a writer that died; younger ones may still be in flight.
constexpr auto kStaleTempAge = std::chrono::minutes(10);

std::uint64_t hash64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// --- little-endian encoding --------------------------------------------------------------------------------------

void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_str(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

std::uint64_t get_le(const char* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}

// Bounds-checked reader over the metadata; any overrun sets !ok() instead of reading past the end.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}
    bool ok() const { return ok_; }
    bool at_end() const { return pos_ == data_.size(); }

    std::uint64_t u64() {
        if (!need(8)) return 0;
        const auto v = get_le(data_.data() + pos_, 8);
        pos_ += 8;
        return v;
    }
    std::string str() {
        const auto n = u64();
        if (!need(n)) return {};
        std::string s(data_.substr(pos_, n));
        pos_ += n;
        return s;
    }
    // A count of following items, each at least `min_item_bytes` long: rejects absurd counts before allocating.
    std::uint64_t count(std::size_t min_item_bytes) {
        const auto n = u64();
        if (ok_ && n > (data_.size() - pos_) / min_item_bytes) ok_ = false;
        return ok_ ? n : 0;
    }

private:
    bool need(std::uint64_t n) {
        if (ok_ && n > data_.size() - pos_) ok_ = false;
        return ok_;
    }
    std::string_view data_;
    std::size_t pos_ = 0;
    bool ok_ = true;
};

// --- metadata ----------------------------------------------------------------------------------------------------

struct Metadata {
    std::string key_hex;
    std::string arch;
    std::string kernel;
    std::vector<std::string> options;
    std::vector<std::pair<std::string, std::string>> lowered_names;
    std::string log;
};

std::string encode_metadata(const Metadata& m) {
    std::string out;
    put_str(out, m.key_hex);
    put_str(out, m.arch);
    put_str(out, m.kernel);
    put_u64(out, m.options.size());
    for (const auto& o : m.options) put_str(out, o);
    put_u64(out, m.lowered_names.size());
    for (const auto& [expr, mangled] : m.lowered_names) {
        put_str(out, expr);
        put_str(out, mangled);
    }
    put_str(out, m.log);
    return out;
}

bool decode_metadata(std::string_view bytes, Metadata& m) {
    Reader r(bytes);
    m.key_hex = r.str();
    m.arch = r.str();
    m.kernel = r.str();
    for (auto n = r.count(8); r.ok() && n > 0; --n) m.options.push_back(r.str());
    for (auto n = r.count(16); r.ok() && n > 0; --n) {
        std::string expr = r.str();
        std::string mangled = r.str();
        m.lowered_names.emplace_back(std::move(expr), std::move(mangled));
    }
    m.log = r.str();
    return r.ok() && r.at_end();
}

std::string encode_entry(const Metadata& meta, const Compiled& compiled) {
    const std::string metadata = encode_metadata(meta);
    std::string out;
    out.reserve(kHeaderBytes + metadata.size() + compiled.binary.size());
    out.append(kMagic, sizeof kMagic);
    put_u32(out, kFormatVersion);
    put_u32(out, compiled.is_ptx ? kFlagPtx : 0);
    put_u64(out, metadata.size());
    put_u64(out, compiled.binary.size());
    put_u64(out, hash64(metadata));
    put_u64(out, hash64(compiled.binary));
    put_u64(out, hash64(out));
    out += metadata;
    out += compiled.binary;
    return out;
}

// --- reading and verifying an entry ------------------------------------------------------------------------------

struct Entry {
    std::uint32_t flags = 0;
    Metadata meta;
    std::string payload;
};

// Reads exactly `n` bytes at `offset`; false on an error or a short read (the file shrank under us).
bool read_exact(int fd, char* dst, std::size_t n, std::uint64_t offset) {
    while (n > 0) {
        const ssize_t got = ::pread(fd, dst, n, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        dst += got;
        n -= static_cast<std::size_t>(got);
        offset += static_cast<std::uint64_t>(got);
    }
    return true;
}

// Reads and verifies the entry open on `fd`. Returns why it is bad, or "" when it verified. The payload is read
// (and its checksum checked) only when `with_payload`: listing the cache need not read every binary.
std::string read_entry(int fd, std::uint64_t file_size, bool with_payload, Entry& out) {
    if (file_size < kHeaderBytes)
        return fmt::format("truncated: {} bytes, shorter than the {}-byte header", file_size, kHeaderBytes);
    char h[kHeaderBytes];
    if (!read_exact(fd, h, kHeaderBytes, 0)) return fmt::format("cannot read the header: {}", std::strerror(errno));
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return "not an fa_jit cache entry (wrong magic)";
    // The version is checked before the header checksum: a newer format may lay out the rest differently.
    const auto version = static_cast<std::uint32_t>(get_le(h + 8, 4));
    if (version != kFormatVersion)
        return fmt::format("format version {}, this build reads version {}", version, kFormatVersion);
    if (get_le(h + 48, 8) != hash64(std::string_view(h, 48))) return "header checksum mismatch";
    out.flags = static_cast<std::uint32_t>(get_le(h + 12, 4));
    if (out.flags & ~kFlagPtx) return fmt::format("unknown flags {:#x}", out.flags);

    const std::uint64_t meta_len = get_le(h + 16, 8), payload_len = get_le(h + 24, 8);
    const std::uint64_t body = file_size - kHeaderBytes;
    if (meta_len > body || payload_len > body - meta_len)
        return fmt::format("truncated: {} bytes, the header promises {}", file_size,
                           kHeaderBytes + meta_len + payload_len);
    if (meta_len + payload_len != body)
        return fmt::format("{} unexpected trailing bytes", body - meta_len - payload_len);

    std::string metadata(meta_len, '\0');
    if (!read_exact(fd, metadata.data(), meta_len, kHeaderBytes))
        return fmt::format("cannot read the metadata: {}", std::strerror(errno));
    if (get_le(h + 32, 8) != hash64(metadata)) return "metadata checksum mismatch";
    if (!decode_metadata(metadata, out.meta)) return "malformed metadata";

    if (!with_payload) return "";
    out.payload.assign(payload_len, '\0');
    if (!read_exact(fd, out.payload.data(), payload_len, kHeaderBytes + meta_len))
        return fmt::format("cannot read the payload: {}", std::strerror(errno));
    if (get_le(h + 40, 8) != hash64(out.payload)) return "payload checksum mismatch";
    return "";
}

// --- small POSIX helpers -----------------------------------------------------------------------------------------

class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_;
};

int open_retry(const fs::path& path, int flags, mode_t mode = 0) {
    int fd;
    do fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A unique name for a temporary file in the cache directory: pid and thread id keep writers apart, the random
// part keeps one thread's successive attempts apart (O_EXCL catches the rest).
std::string temp_name() {
    thread_local std::mt19937_64 rng(std::random_device{}() ^
                                     std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
    return fmt::format("{}{}.{}.{:016x}", kTempPrefix, ::getpid(), static_cast<long>(::syscall(SYS_gettid)), rng());
}

// --- directory scanning ------------------------------------------------------------------------------------------

enum class FileKind { entry, lock, temp, other };

FileKind classify(std::string_view name) {
    if (starts_with(name, kTempPrefix)) return FileKind::temp;
    if (name.size() == 32 + kEntrySuffix.size() && ends_with(name, kEntrySuffix)) return FileKind::entry;
    if (name.size() == 32 + kLockSuffix.size() && ends_with(name, kLockSuffix)) return FileKind::lock;
    return FileKind::other;
}

struct DirFile {
    fs::path path;
    std::uint64_t bytes = 0;
    fs::file_time_type mtime{};
};

// The regular files of `kind` in `dir`. Files that vanish while we look (another process evicting) are skipped.
std::vector<DirFile> scan(const fs::path& dir, FileKind kind) {
    std::vector<DirFile> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (classify(it->path().filename().native()) != kind) continue;
        std::error_code e1, e2, e3;
        if (!it->is_regular_file(e1) || e1) continue;
        DirFile f{it->path(), it->file_size(e2), it->last_write_time(e3)};
        if (!e2 && !e3) files.push_back(std::move(f));
    }
    return files;
}

std::uint64_t sum_bytes(const std::vector<DirFile>& files) {
    std::uint64_t total = 0;
    for (const auto& f : files) total += f.bytes;
    return total;
}

// Removes a file; a file already gone counts as removed (another process got there first).
bool remove_file(const fs::path& path) {
    return ::unlink(path.c_str()) == 0 || errno == ENOENT;
}

std::size_t remove_temps(const fs::path& dir, bool only_stale) {
    const auto cutoff = fs::file_time_type::clock::now() - kStaleTempAge;
    std::size_t n = 0;
    for (const auto& f : scan(dir, FileKind::temp))
        if ((!only_stale || f.mtime < cutoff) && remove_file(f.path)) ++n;
    return n;
}

// Removes least-recently-used entries (oldest mtime first) until their total is at most `max_bytes`, never
// `keep`. Concurrent evictors may remove the same files; each file gone counts toward the total either way.
std::size_t evict_lru(const fs::path& dir, std::uint64_t max_bytes, const fs::path* keep) {
    std::vector<DirFile> entries = scan(dir, FileKind::entry);
    std::uint64_t total = sum_bytes(entries);
    if (total <= max_bytes) return 0;
    std::sort(entries.begin(), entries.end(), [](const DirFile& a, const DirFile& b) {
        return a.mtime != b.mtime ? a.mtime < b.mtime : a.path < b.path;
    });
    std::size_t removed = 0;
    for (const auto& e : entries) {
        if (total <= max_bytes) break;
        if (keep && e.path == *keep) continue;
        if (remove_file(e.path)) {
            total -= e.bytes;
            ++removed;
            log::info("evicted {} ({} bytes) from the disk cache", e.path.string(), e.bytes);
        }
    }
    return removed;
}

// --- the directory: creation and trust ---------------------------------------------------------------------------

// Creates `dir` if needed (the leaf with mode 0700) and checks that it is ours, private and writable.
// Returns why it cannot be used, or "" when it can.
std::string prepare_directory(const fs::path& dir) {
    if (dir.empty())
        return "no cache directory: none of FA_JIT_CACHE_DIR, XDG_CACHE_HOME, HOME is set. Set FA_JIT_CACHE_DIR "
               "to a directory you own";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT) return fmt::format("cannot access {}: {}", dir.string(), std::strerror(errno));
        std::error_code ec;
        if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
        if (ec)
            return fmt::format("cannot create {}: {}. Set FA_JIT_CACHE_DIR to a writable directory",
                               dir.parent_path().string(), ec.message());
        // The leaf is created private; chmod because the umask may have removed bits we need (never added any).
        if (::mkdir(dir.c_str(), 0700) == 0)
            ::chmod(dir.c_str(), 0700);
        else if (errno != EEXIST)
            return fmt::format("cannot create {}: {}. Set FA_JIT_CACHE_DIR to a writable directory", dir.string(),
                               std::strerror(errno));
        if (::stat(dir.c_str(), &st) != 0)
            return fmt::format("cannot access {}: {}", dir.string(), std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return fmt::format("{} is not a directory. Set FA_JIT_CACHE_DIR to a directory", dir.string());
    if (st.st_uid != ::geteuid())
        return fmt::format(
            "{} is owned by uid {}, not by this user (uid {}); code from it could be anyone's, so it is not "
            "trusted. Set FA_JIT_CACHE_DIR to a directory you own",
            dir.string(), st.st_uid, ::geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return fmt::format(
            "{} is writable by other users (mode {:04o}: group- or world-writable); code from it could be "
            "anyone's, so it is not trusted. "
            "Fix with: chmod 700 {}",
            dir.string(), st.st_mode & 07777, dir.string());
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return fmt::format("{} is not writable: {}. Fix its permissions, or set FA_JIT_CACHE_DIR to a writable "
                           "directory (FA_JIT_CACHE=0 turns the disk cache off)",
                           dir.string(), std::strerror(errno));
    return "";
}

// --- environment -------------------------------------------------------------------------------------------------

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// "123", "64K", "500M", "2G", "1T" (binary multiples; an optional trailing "B" or "iB" is accepted).
std::optional<std::uint64_t> parse_byte_size(std::string_view s) {
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        const unsigned digit = static_cast<unsigned>(s[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    if (i == 0) return std::nullopt;
    std::string_view suffix = s.substr(i);
    int shift = 0;
    if (!suffix.empty()) {
        switch (suffix[0]) {
            case 'k': case 'K': shift = 10; break;
            case 'm': case 'M': shift = 20; break;
            case 'g': case 'G': shift = 30; break;
            case 't': case 'T': shift = 40; break;
            default: break;
        }
        if (shift) suffix.remove_prefix(1);
        if (shift && (suffix == "i" || suffix == "iB")) suffix = {};
        if (suffix == "B" || suffix == "b") suffix = {};
    }
    if (!suffix.empty()) return std::nullopt;
    if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
    return value << shift;
}

bool disabled_by(std::string v) {
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v == "0" || v == "off" || v == "false" || v == "no";
}

}  // namespace

// =================================================================================================================

DiskCacheConfig DiskCacheConfig::from_env() {
    DiskCacheConfig c;
    if (const auto dir = env("FA_JIT_CACHE_DIR"); !dir.empty())
        c.dir = dir;
    else if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
        c.dir = fs::path(xdg) / "fa_jit";  // the XDG spec says to ignore a relative XDG_CACHE_HOME
    else if (const auto home = env("HOME"); !home.empty())
        c.dir = fs::path(home) / ".cache" / "fa_jit";

    c.enabled = !disabled_by(env("FA_JIT_CACHE"));

    if (const auto max = env("FA_JIT_CACHE_MAX_BYTES"); !max.empty()) {
        if (const auto bytes = parse_byte_size(max))
            c.max_bytes = *bytes;
        else
            log::warn_once("cache-max-bytes",
                           fmt::format("ignoring FA_JIT_CACHE_MAX_BYTES='{}': expected a byte count such as "
                                       "1073741824, 500M or 2G; using the default of {} bytes",
                                       max, c.max_bytes));
    }
    return c;
}

DiskCache::DiskCache(DiskCacheConfig config) : config_(std::move(config)) {
    if (!config_.enabled) {
        log::debug("disk cache disabled (FA_JIT_CACHE=0)");
        return;
    }
    const std::string problem = prepare_directory(config_.dir);
    if (!problem.empty()) {
        log::warn_once("cache-dir:" + config_.dir.string(),
                       fmt::format("disk cache off: {}. Kernels are still compiled, just not cached", problem));
        return;
    }
    usable_ = true;
    log::debug("disk cache at {} (max {} bytes)", config_.dir.string(), config_.max_bytes);
}

DiskCache& DiskCache::instance() {
    static DiskCache cache(DiskCacheConfig::from_env());
    return cache;
}

namespace {

fs::path entry_path(const fs::path& dir, const CacheKey& key) { return dir / (key.hex() + std::string(kEntrySuffix)); }

// A bad entry is reported once and removed -- unless the file at `path` is no longer the one we read (another
// process replaced it with a fresh entry meanwhile): removing that one would throw away good work.
void reject_entry(const fs::path& path, const struct stat& read_st, const std::string& why) {
    log::warn_once("cache-bad-entry:" + path.string(),
                   fmt::format("removing bad cache entry {}: {}; the kernel will be recompiled", path.string(), why));
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0 && now.st_ino == read_st.st_ino && now.st_dev == read_st.st_dev)
        ::unlink(path.c_str());
}

// Holds the per-key flock; released (by closing) on destruction.
class KeyLock {
public:
    // Takes the lock, waiting for its holder; an empty KeyLock when the lock file cannot be opened or locked.
    static KeyLock acquire(const fs::path& dir, const CacheKey& key) {
        const fs::path path = dir / (key.hex() + std::string(kLockSuffix));
        Fd fd(open_retry(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
        if (!fd) {
            log::debug("cannot open lock file {}: {}; compiling without it", path.string(), std::strerror(errno));
            return KeyLock();
        }
        int rc;
        do rc = ::flock(fd.get(), LOCK_EX);
        while (rc != 0 && errno == EINTR);
        if (rc != 0) {
            log::debug("cannot lock {}: {}; compiling without it", path.string(), std::strerror(errno));
            return KeyLock();
        }
        return KeyLock(std::move(fd));
    }
    explicit operator bool() const noexcept { return bool(fd_); }

    KeyLock() = default;  // holds nothing

private:
    explicit KeyLock(Fd fd) : fd_(std::move(fd)) {}
    Fd fd_;  // closing the descriptor releases the flock
};

struct WriteError {
    std::string step;  // "" when the write succeeded
    int error = 0;
};

// Writes `bytes` to `final_path` atomically: a unique temporary file in the same directory (so rename() stays on
// one file system), fsync'ed before the rename so that a crash never leaves a named but empty entry.
WriteError write_atomically(const fs::path& final_path, std::string_view bytes) {
    const fs::path dir = final_path.parent_path();
    fs::path temp;
    Fd fd;
    for (int attempt = 0; attempt < 4 && !fd; ++attempt) {
        temp = dir / temp_name();
        fd = Fd(open_retry(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
        if (!fd && errno != EEXIST) return {"create a temporary file", errno};
    }
    if (!fd) return {"create a temporary file", EEXIST};
    const auto fail = [&](const char* step) {
        const int e = errno;
        ::unlink(temp.c_str());
        return WriteError{step, e};
    };
    if (!write_all(fd.get(), bytes)) return fail("write");
    if (::fsync(fd.get()) != 0) return fail("fsync");
    if (::close(fd.release()) != 0) return fail("close");
    if (::rename(temp.c_str(), final_path.c_str()) != 0) return fail("rename");
    return {};
}

}  // namespace

std::optional<Compiled> DiskCache::load(const CacheKey& key, const std::string& arch) {
    if (!usable()) return std::nullopt;
    const fs::path path = entry_path(config_.dir, key);
    Fd fd(open_retry(path, O_RDONLY | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT)
            log::debug("cache miss {}", key.hex());
        else
            log::warn_once("cache-open:" + path.string(),
                           fmt::format("cannot open cache entry {}: {}", path.string(), std::strerror(errno)));
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        reject_entry(path, st, "not a regular file");
        return std::nullopt;
    }

    Entry entry;
    std::string problem = read_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), true, entry);
    if (problem.empty() && entry.meta.key_hex != key.hex())
        problem =
            fmt::format("it holds the entry of key {} (renamed or copied from another file?)", entry.meta.key_hex);
    if (problem.empty() && entry.meta.arch != arch)
        problem = fmt::format("it was compiled for {}, {} was requested", entry.meta.arch, arch);
    if (!problem.empty()) {
        reject_entry(path, st, problem);
        return std::nullopt;
    }

    // A hit makes the entry the most recently used one for eviction. Failure only skews the LRU order.
    ::futimens(fd.get(), nullptr);
    log::debug("cache hit {} ({}, {})", key.hex(), entry.meta.kernel, arch);

    Compiled c;
    c.arch = std::move(entry.meta.arch);
    c.is_ptx = (entry.flags & kFlagPtx) != 0;
    c.binary = std::move(entry.payload);
    c.lowered_names = std::move(entry.meta.lowered_names);
    c.log = std::move(entry.meta.log);
    return c;
}

void DiskCache::store(const CacheKey& key, const std::string& kernel_description,
                      const std::vector<std::string>& options, const Compiled& compiled) {
    if (!usable()) return;
    try {
        const fs::path path = entry_path(config_.dir, key);
        const Metadata meta{key.hex(), compiled.arch, kernel_description, options, compiled.lowered_names,
                            compiled.log};
        const std::string bytes = encode_entry(meta, compiled);
        const WriteError err = write_atomically(path, bytes);
        if (!err.step.empty()) {
            if (err.step == "rename" && err.error == ENOENT) {
                // Our temporary file was removed by a concurrent clear(): nothing is wrong with the directory.
                log::debug("cache store of {} lost to a concurrent clear", path.string());
                return;
            }
            usable_ = false;
            log::warn_once("cache-store:" + config_.dir.string(),
                           fmt::format("disk cache off for this process: cannot {} in {}: {}. Kernels are still "
                                       "compiled, just not cached; free space or fix the permissions, or set "
                                       "FA_JIT_CACHE_DIR elsewhere",
                                       err.step, config_.dir.string(), std::strerror(err.error)));
            return;
        }
        log::info("cached {} for {} ({} bytes) as {}", kernel_description, compiled.arch, bytes.size(),
                  path.string());

        // Evict down to the cap, keeping the entry just written even if it alone exceeds it.
        evict_lru(config_.dir, config_.max_bytes, &path);
        remove_temps(config_.dir, /*only_stale=*/true);
    } catch (const std::exception& e) {
        // bad_alloc or a filesystem error while evicting: the entry is only a cache, never worth an exception.
        log::warn_once("cache-store-exception:" + config_.dir.string(),
                       fmt::format("disk cache store in {} failed: {}", config_.dir.string(), e.what()));
    }
}

Compiled DiskCache::get_or_create(const CacheKey& key, const std::string& arch, const std::string& kernel_description,
                                  const std::vector<std::string>& options, const std::function<Compiled()>& make,
                                  bool* was_hit) {
    if (was_hit) *was_hit = false;
    if (auto hit = load(key, arch)) {
        if (was_hit) *was_hit = true;
        return std::move(*hit);
    }
    // Another thread or process may be compiling this kernel right now: wait for it, then look again.
    const KeyLock lock = usable() ? KeyLock::acquire(config_.dir, key) : KeyLock{};
    if (lock) {
        if (auto hit = load(key, arch)) {
            if (was_hit) *was_hit = true;
            return std::move(*hit);
        }
    }
    Compiled compiled = make();
    store(key, kernel_description, options, compiled);
    return compiled;
}

// --- maintenance -------------------------------------------------------------------------------------------------

std::vector<EntryInfo> DiskCache::list(bool verify) const {
    std::vector<EntryInfo> infos;
    for (const auto& f : scan(config_.dir, FileKind::entry)) {
        EntryInfo info;
        info.file = f.path;
        info.file_bytes = f.bytes;
        info.last_used = f.mtime;
        Fd fd(open_retry(f.path, O_RDONLY | O_NOFOLLOW));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            if (errno == ENOENT) continue;  // evicted since the scan
            info.problem = fmt::format("cannot open: {}", std::strerror(errno));
            infos.push_back(std::move(info));
            continue;
        }
        Entry entry;
        info.problem = read_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), verify, entry);
        const std::string stem = f.path.stem().string();
        if (info.problem.empty() && entry.meta.key_hex != stem)
            info.problem = fmt::format("it holds the entry of key {} (renamed?)", entry.meta.key_hex);
        info.kernel = std::move(entry.meta.kernel);
        info.arch = std::move(entry.meta.arch);
        info.options = std::move(entry.meta.options);
        infos.push_back(std::move(info));
    }
    return infos;
}

std::uint64_t DiskCache::total_bytes() const { return sum_bytes(scan(config_.dir, FileKind::entry)); }

std::size_t DiskCache::prune(std::uint64_t max_bytes) {
    remove_temps(config_.dir, /*only_stale=*/true);
    return evict_lru(config_.dir, max_bytes, nullptr);
}

std::size_t DiskCache::clear() {
    std::size_t removed = 0;
    for (const auto& e : scan(config_.dir, FileKind::entry))
        if (remove_file(e.path)) ++removed;
    // Lock files are recreated on demand; a process holding one keeps its lock on the unlinked inode, so at worst
    // a kernel being compiled right now gets compiled twice.
    for (const auto& l : scan(config_.dir, FileKind::lock)) remove_file(l.path);
    // Also in-flight temporaries: their writers then lose that one store (rename fails with ENOENT), nothing else.
    remove_temps(config_.dir, /*only_stale=*/false);
    return removed;
}

std::size_t DiskCache::remove_bad() {
    std::size_t removed = 0;
    for (const auto& info : list(/*verify=*/true))
        if (!info.problem.empty() && remove_file(info.file)) {
            log::info("removed bad cache entry {}: {}", info.file.string(), info.problem);
            ++removed;
        }
    return removed;
}

}  // namespace fa_jit::cache
