// Exceptions thrown by fa_jit. Each carries the structured data a caller needs to react or report.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "fa_jit/export.hpp"

namespace fa_jit {

// Base of every fa_jit exception.
class FA_JIT_API Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A CUDA driver call failed, or no driver could be loaded.
class FA_JIT_API CudaError : public Error {
public:
    CudaError(std::string call, int result, std::string result_name, std::string message, std::string where);
    const std::string& call() const noexcept { return call_; }                // e.g. "cuModuleLoadData"
    int result() const noexcept { return result_; }                           // the CUresult value (-1: no driver)
    const std::string& result_name() const noexcept { return result_name_; }  // e.g. "CUDA_ERROR_INVALID_VALUE"
    const std::string& where() const noexcept { return where_; }              // file:line in fa_jit

private:
    std::string call_;
    int result_;
    std::string result_name_;
    std::string where_;
};

// NVRTC rejected a kernel, or NVRTC could not be loaded.
class FA_JIT_API CompileError : public Error {
public:
    CompileError(std::string kernel, std::vector<std::string> options, std::string log, std::string message);
    const std::string& kernel() const noexcept { return kernel_; }  // source name and name expressions
    const std::vector<std::string>& options() const noexcept { return options_; }
    const std::string& log() const noexcept { return log_; }  // the full NVRTC log

private:
    std::string kernel_;
    std::vector<std::string> options_;
    std::string log_;
};

// An argument was rejected before anything reached the GPU.
class FA_JIT_API InvalidArgument : public Error {
public:
    InvalidArgument(std::string argument, std::string expected, std::string given);
    const std::string& argument() const noexcept { return argument_; }  // e.g. "head_dim" or "kernel parameter 2"
    const std::string& expected() const noexcept { return expected_; }
    const std::string& given() const noexcept { return given_; }

private:
    std::string argument_;
    std::string expected_;
    std::string given_;
};

}  // namespace fa_jit
