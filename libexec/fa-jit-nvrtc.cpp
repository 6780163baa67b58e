// fa-jit-nvrtc: compiles one kernel for libfa_jit in a process of its own (src/compile/worker.hpp says why). Reads a
// request on stdin, writes the compiled binary or the CompileError on stdout, exits 0; anything else is a failure the
// library reports. Not meant to be run by hand.
#include "compile/in_process.hpp"
#include "compile/worker.hpp"

#include <unistd.h>

#include <cerrno>
#include <exception>
#include <string>

namespace {

bool write_stdout(const std::string& out) {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::write(1, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int main() {
    std::string reply;
    try {
        const fa_jit::CompileRequest request = fa_jit::worker::decode_request(fa_jit::worker::read_all(0));
        reply = fa_jit::worker::encode_compiled(fa_jit::compile_in_process(request));
    } catch (const fa_jit::CompileError& e) {
        reply = fa_jit::worker::encode_error(e);
    } catch (const std::exception& e) {
        reply = fa_jit::worker::encode_error(fa_jit::CompileError("", {}, "", e.what()));
    }
    return write_stdout(reply) ? 0 : 1;
}
