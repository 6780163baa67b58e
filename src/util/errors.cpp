#include "fa_jit/errors.hpp"

namespace fa_jit {

CudaError::CudaError(std::string call, int result, std::string result_name, std::string message, std::string where)
    : Error(call + " failed: " + result_name + ": " + message + (where.empty() ? "" : " (at " + where + ")")),
      call_(std::move(call)),
      result_(result),
      result_name_(std::move(result_name)),
      where_(std::move(where)) {}

CompileError::CompileError(std::string kernel, std::vector<std::string> options, std::string log,
                           std::string message)
    : Error(std::move(message)), kernel_(std::move(kernel)), options_(std::move(options)), log_(std::move(log)) {}

InvalidArgument::InvalidArgument(std::string argument, std::string expected, std::string given)
    : Error("invalid argument '" + argument + "': expected " + expected + ", got " + given),
      argument_(std::move(argument)),
      expected_(std::move(expected)),
      given_(std::move(given)) {}

}  // namespace fa_jit
