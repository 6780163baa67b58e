// POSIX file helpers for the cache: EINTR-safe open/read/write, atomic replacement, flock.
#include "cache/file_io.hpp"

#include "util/log.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

int open_retry(const fs::path& path, int flags, mode_t mode) {
    int fd;
    do fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

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

WriteError write_atomically(const fs::path& final_path, std::string_view bytes,
                            fs::path (*temp_path)(const fs::path& dir)) {
    const fs::path dir = final_path.parent_path();
    fs::path temp;
    Fd fd;
    for (int attempt = 0; attempt < 4 && !fd; ++attempt) {
        temp = temp_path(dir);
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

FileLock FileLock::acquire(const fs::path& path) {
    Fd fd(open_retry(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
    if (!fd) {
        log::debug("cannot open lock file {}: {}; compiling without it", path.string(), std::strerror(errno));
        return FileLock();
    }
    int rc;
    do rc = ::flock(fd.get(), LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        log::debug("cannot lock {}: {}; compiling without it", path.string(), std::strerror(errno));
        return FileLock();
    }
    return FileLock(std::move(fd));
}

}  // namespace fa_jit::cache
