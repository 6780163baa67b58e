// File I/O for the cache: descriptors, exact reads, atomic writes (temporary file, fsync, rename), flock locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include <sys/types.h>

namespace fa_jit::cache {

// Owns a file descriptor; closes it on destruction.
class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd();
    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_;
};

// open() with O_CLOEXEC, retried on EINTR; -1 and errno on failure.
int open_retry(const std::filesystem::path& path, int flags, mode_t mode = 0);

// Reads exactly `n` bytes at `offset`; false on an error or a short read (the file shrank under us).
bool read_exact(int fd, char* dst, std::size_t n, std::uint64_t offset);

struct WriteError {
    std::string step;  // "" when the write succeeded, else what failed: "write", "fsync", "rename", ...
    int error = 0;     // its errno
};

// Writes `bytes` to `final_path` atomically: a unique temporary file (`temp_path`, in the same directory so that
// rename() stays on one file system), fsync'ed before the rename so that a crash never leaves a named but empty
// file. `temp_path` is called again if the name is taken.
WriteError write_atomically(const std::filesystem::path& final_path, std::string_view bytes,
                            std::filesystem::path (*temp_path)(const std::filesystem::path& dir));

// Holds an exclusive flock on a lock file; released (by closing) on destruction.
class FileLock {
public:
    // Takes the lock, waiting for its holder; an empty FileLock when the file cannot be opened or locked (the
    // caller then goes on without it: at worst two processes compile the same kernel).
    static FileLock acquire(const std::filesystem::path& path);
    FileLock() = default;  // holds nothing
    explicit operator bool() const noexcept { return bool(fd_); }

private:
    explicit FileLock(Fd fd) : fd_(std::move(fd)) {}
    Fd fd_;  // closing the descriptor releases the flock
};

}  // namespace fa_jit::cache
