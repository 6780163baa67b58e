#include "compile/worker.hpp"

#include "compile/in_process.hpp"
#include "util/log.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

extern char** environ;

namespace fa_jit::worker {
namespace {

constexpr std::string_view kRequestMagic = "fa-jit-nvrtc request 1\n";
constexpr std::string_view kCompiledMagic = "fa-jit-nvrtc compiled 1\n";
constexpr std::string_view kErrorMagic = "fa-jit-nvrtc error 1\n";

class Writer {
public:
    explicit Writer(std::string_view magic) : out_(magic) {}
    Writer& number(std::uint64_t n) {
        char b[8];
        std::memcpy(b, &n, 8);
        out_.append(b, 8);
        return *this;
    }
    Writer& text(std::string_view s) {
        number(s.size());
        out_.append(s);
        return *this;
    }
    Writer& texts(const std::vector<std::string>& v) {
        number(v.size());
        for (const std::string& s : v) text(s);
        return *this;
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class Reader {
public:
    Reader(std::string_view bytes, std::string_view magic) : in_(bytes) {
        if (in_.substr(0, magic.size()) != magic) throw Error("fa-jit-nvrtc: unexpected message");
        in_.remove_prefix(magic.size());
    }
    std::uint64_t number() {
        need(8);
        std::uint64_t n;
        std::memcpy(&n, in_.data(), 8);
        in_.remove_prefix(8);
        return n;
    }
    std::string text() {
        const std::uint64_t n = number();
        need(n);
        std::string s(in_.substr(0, n));
        in_.remove_prefix(n);
        return s;
    }
    std::vector<std::string> texts() {
        const std::uint64_t n = number();
        if (n > in_.size()) throw Error("fa-jit-nvrtc: truncated message");
        std::vector<std::string> v;
        for (std::uint64_t i = 0; i < n; ++i) v.push_back(text());
        return v;
    }
    void end() const {
        if (!in_.empty()) throw Error("fa-jit-nvrtc: trailing bytes in message");
    }

private:
    void need(std::uint64_t n) const {
        if (n > in_.size()) throw Error("fa-jit-nvrtc: truncated message");
    }
    std::string_view in_;
};

// Sends all of `data` on socket `fd` (no SIGPIPE if the worker is gone: EPIPE instead).
bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool is_executable(const std::filesystem::path& p) {
    return ::access(p.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(p);
}

}  // namespace

std::string read_all(int fd) {
    std::string out;
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return out;
        out.append(buffer, static_cast<std::size_t>(n));
    }
}

std::optional<std::string> executable() {
    if (const char* e = std::getenv("FA_JIT_NVRTC_WORKER"); e && *e) {
        if (std::string_view(e) == "0") return std::nullopt;
        if (is_executable(e)) return std::string(e);
        log::warn_once("worker-env", fmt::format("FA_JIT_NVRTC_WORKER={} is not an executable file", e));
        return std::nullopt;
    }
    std::vector<std::filesystem::path> candidates;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&executable), &info) && info.dli_fname && *info.dli_fname) {
        std::error_code ec;
        const auto here = std::filesystem::canonical(info.dli_fname, ec).parent_path();
        if (!ec) {
            candidates.push_back(here / "fa-jit-nvrtc");
            candidates.push_back(here / FA_JIT_WORKER_FROM_LIBDIR / "fa-jit-nvrtc");
        }
    }
#ifdef FA_JIT_WORKER_BUILD_PATH
    candidates.emplace_back(FA_JIT_WORKER_BUILD_PATH);
#endif
    for (const auto& p : candidates)
        if (is_executable(p)) return p.string();
    return std::nullopt;
}

std::string encode_request(const CompileRequest& r) {
    Writer w(kRequestMagic);
    w.text(r.source.name).text(r.source.text).number(r.source.headers.size());
    for (const Header& h : r.source.headers) w.text(h.name).text(h.text);
    return w.texts(r.name_expressions).texts(r.options).text(r.arch).text(r.family).take();
}

CompileRequest decode_request(std::string_view bytes) {
    Reader rd(bytes, kRequestMagic);
    CompileRequest r;
    r.source.name = rd.text();
    r.source.text = rd.text();
    const std::uint64_t headers = rd.number();
    if (headers > bytes.size()) throw Error("fa-jit-nvrtc: truncated message");
    for (std::uint64_t i = 0; i < headers; ++i) {
        Header h;
        h.name = rd.text();
        h.text = rd.text();
        r.source.headers.push_back(std::move(h));
    }
    r.name_expressions = rd.texts();
    r.options = rd.texts();
    r.arch = rd.text();
    r.family = rd.text();
    rd.end();
    return r;
}

std::string encode_compiled(const Compiled& c) {
    Writer w(kCompiledMagic);
    w.text(c.arch).number(c.is_ptx ? 1 : 0).text(c.binary).text(c.log).number(c.lowered_names.size());
    for (const auto& [expression, lowered] : c.lowered_names) w.text(expression).text(lowered);
    return w.take();
}

std::string encode_error(const CompileError& e) {
    return Writer(kErrorMagic).text(e.kernel()).texts(e.options()).text(e.log()).text(e.what()).take();
}

Compiled decode_reply(std::string_view bytes, const std::string& kernel) {
    try {
        if (bytes.substr(0, kErrorMagic.size()) == kErrorMagic) {
            Reader rd(bytes, kErrorMagic);
            std::string k = rd.text();
            std::vector<std::string> options = rd.texts();
            std::string log_text = rd.text(), message = rd.text();
            rd.end();
            throw CompileError(std::move(k), std::move(options), std::move(log_text), std::move(message));
        }
        Reader rd(bytes, kCompiledMagic);
        Compiled c;
        c.arch = rd.text();
        c.is_ptx = rd.number() != 0;
        c.binary = rd.text();
        c.log = rd.text();
        const std::uint64_t names = rd.number();
        if (names > bytes.size()) throw Error("fa-jit-nvrtc: truncated message");
        for (std::uint64_t i = 0; i < names; ++i) {
            std::string expression = rd.text();
            c.lowered_names.emplace_back(std::move(expression), rd.text());
        }
        rd.end();
        return c;
    } catch (const CompileError&) {
        throw;
    } catch (const Error& e) {
        throw CompileError(kernel, {}, "", std::string("compiling ") + kernel + ": " + e.what());
    }
}

std::optional<Compiled> compile(const CompileRequest& request, const std::string& worker,
                                const std::string& nvrtc_path) {
    const std::string kernel = describe(request);
    log::debug("compiling {} in {}", kernel, worker);
    const auto cannot_start = [&](int error) {
        log::warn_once("worker-start", fmt::format("cannot start {}: {}; compiling in this process", worker,
                                                   std::strerror(error)));
        return std::nullopt;
    };
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return cannot_start(errno);
    for (int& fd : fds)  // above 0-2 (a process may have closed its stdin or stdout), so that dup2 below copies
        if (fd <= 2) {
            const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
            ::close(fd);
            fd = moved;
        }
    if (fds[0] < 0 || fds[1] < 0) {
        for (int fd : fds)
            if (fd >= 0) ::close(fd);
        return cannot_start(EMFILE);
    }
    // The worker's stdin and stdout are its end of the socket (dup2 clears close-on-exec there); stderr is ours;
    // nothing else of this process stays open in it.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    // The same NVRTC file as this process (the cache key names it), by path: the worker's loader might find another.
    // Its log level is this process's, as a valid name: a bad FA_JIT_LOG was reported here already.
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "FA_JIT_NVRTC_LIBRARY=", 21) != 0 && std::strncmp(*e, "FA_JIT_LOG=", 11) != 0)
            env.emplace_back(*e);
    if (!nvrtc_path.empty()) env.push_back("FA_JIT_NVRTC_LIBRARY=" + nvrtc_path);
    static const char* const levels[] = {"off", "warn", "info", "debug"};
    env.push_back(std::string("FA_JIT_LOG=") + levels[static_cast<int>(log::level())]);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string path = worker;
    char* argv[] = {path.data(), nullptr};
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (spawned != 0) {
        ::close(fds[0]);
        return cannot_start(spawned);
    }
    const bool sent = send_all(fds[0], encode_request(request));
    ::shutdown(fds[0], SHUT_WR);
    const std::string reply = read_all(fds[0]);
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!sent || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const std::string how = WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                                    : fmt::format("exited with status {}", WEXITSTATUS(status));
        throw CompileError(kernel, request.options, "", fmt::format("compiling {}: {} {}", kernel, worker, how));
    }
    return decode_reply(reply, kernel);
}

}  // namespace fa_jit::worker
