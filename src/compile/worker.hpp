// Compiling in a process of its own (fa-jit-nvrtc, libexec/fa-jit-nvrtc.cpp), so that a kernel's binary depends only
// on its source, options and NVRTC, never on what else this process compiled.
//
// NVRTC keeps state from one program to the next within a process: once another library has compiled with some
// options (cuDNN's runtime-compiled engines; or any program with -G), the same source and options come out as another
// cubin. fa-jit shares NVRTC with them whenever the process already loaded it (the library is found by its soname),
// so an in-process compile would make a different kernel (7 % slower at d 64 on an H200) and store it under the same
// cache key (bench/NOTES.md, "NVRTC keeps state"). A fresh worker per compile loads the same NVRTC file clean.
#pragma once

#include "fa_jit/jit.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace fa_jit::worker {

// The worker executable: $FA_JIT_NVRTC_WORKER (a path; "0" compiles in this process), else fa-jit-nvrtc next to the
// binary holding this code (libfa_jit.so, or a program linking its objects), in libexec/fa_jit/ of the install
// prefix it sits in (CMake's LIBDIR to LIBEXECDIR), or in the build tree. nullopt when none is found or it is turned off.
std::optional<std::string> executable();

// Compiles `request` in a fresh worker process that loads the NVRTC library at `nvrtc_path`. nullopt when the worker
// cannot be started at all (a sandbox without process creation, say: compile() then compiles in this process);
// throws CompileError as compile() does, also when a started worker fails.
std::optional<Compiled> compile(const CompileRequest& request, const std::string& worker,
                                const std::string& nvrtc_path);

// Everything readable from `fd` until end of file (or an error): a message, each side's end of the socket.
std::string read_all(int fd);

// The wire format between the library and the worker (length-prefixed fields; tested on their own).
std::string encode_request(const CompileRequest& request);
CompileRequest decode_request(std::string_view bytes);  // throws Error on a malformed message
std::string encode_compiled(const Compiled& compiled);
std::string encode_error(const CompileError& error);
// A reply: the Compiled, or the worker's CompileError rethrown here. Throws CompileError on a malformed reply.
Compiled decode_reply(std::string_view bytes, const std::string& kernel);

}  // namespace fa_jit::worker
