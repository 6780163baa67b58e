// compile(): a pure function from (source, name expressions, options, arch) to a cubin or PTX. Needs no GPU. It runs
// NVRTC in a worker process (compile/worker.hpp says why) and in this process only where no worker is found.
#include "compile/in_process.hpp"
#include "compile/nvrtc_api.hpp"
#include "compile/worker.hpp"
#include "fa_jit/jit.hpp"
#include "util/log.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace fa_jit {
namespace {

// Owns an nvrtcProgram from the moment it exists, so no error path leaks it.
class Program {
public:
    Program(const Source& source) {
        std::vector<const char*> names, texts;
        for (const Header& h : source.headers) {
            names.push_back(h.name.c_str());
            texts.push_back(h.text.c_str());
        }
        check("nvrtcCreateProgram",
              nvrtc::api().nvrtcCreateProgram(&p_, source.text.c_str(), source.name.c_str(),
                                              static_cast<int>(names.size()), texts.data(), names.data()),
              source.name);
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    ~Program() {
        if (p_) nvrtc::api().nvrtcDestroyProgram(&p_);
    }
    nvrtcProgram get() const noexcept { return p_; }

    std::string log() const {
        std::size_t size = 0;
        nvrtc::api().nvrtcGetProgramLogSize(p_, &size);
        std::string text(size, '\0');
        if (size) nvrtc::api().nvrtcGetProgramLog(p_, text.data());
        while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
        return text;
    }

    static void check(const char* call, nvrtcResult r, const std::string& kernel) {
        if (r != NVRTC_SUCCESS)
            throw CompileError(kernel, {}, "", std::string(call) + " failed: " + nvrtc::api().nvrtcGetErrorString(r));
    }

private:
    nvrtcProgram p_ = nullptr;
};

std::string binary(const Program& program, bool ptx, const std::string& kernel) {
    const nvrtc::Api& api = nvrtc::api();
    std::size_t size = 0;
    Program::check(ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize",
                   ptx ? api.nvrtcGetPTXSize(program.get(), &size) : api.nvrtcGetCUBINSize(program.get(), &size),
                   kernel);
    std::string bytes(size, '\0');
    Program::check(ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN",
                   ptx ? api.nvrtcGetPTX(program.get(), bytes.data()) : api.nvrtcGetCUBIN(program.get(), bytes.data()),
                   kernel);
    return bytes;
}

}  // namespace

const std::string& Compiled::lowered_name(std::string_view name_expression) const {
    for (const auto& [expression, lowered] : lowered_names)
        if (expression == name_expression) return lowered;
    throw InvalidArgument("name_expression", "one of the compiled name expressions", std::string(name_expression));
}

Compiled compile(const CompileRequest& request) {
    parse_arch(request.arch);  // InvalidArgument before a worker starts
    nvrtc::api();              // CompileError when NVRTC cannot be loaded; the worker loads the same file
    const std::optional<std::string> w = worker::executable();
    if (w)
        if (std::optional<Compiled> compiled = worker::compile(request, *w, nvrtc::library_path())) return *compiled;
    if (const char* e = std::getenv("FA_JIT_NVRTC_WORKER"); !w && (!e || std::string_view(e) != "0"))
        log::warn_once("worker-missing",
                       "fa-jit-nvrtc not found beside libfa_jit; kernels compile in this process, where another "
                       "library's use of NVRTC can change them (set FA_JIT_NVRTC_WORKER to its path)");
    return compile_in_process(request);
}

std::string describe(const CompileRequest& r) {
    std::string s = r.source.name;
    for (const std::string& e : r.name_expressions) s += " " + e;
    return s;
}

Compiled compile_in_process(const CompileRequest& request) {
    const std::string arch = parse_arch(request.arch);
    const bool ptx = arch.rfind("compute_", 0) == 0;
    const std::string kernel = describe(request);

    std::vector<std::string> options = {"--std=c++17", "-arch=" + arch};
    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_ptrs;
    for (const std::string& o : options) option_ptrs.push_back(o.c_str());

    const auto start = std::chrono::steady_clock::now();
    Program program(request.source);
    for (const std::string& e : request.name_expressions)
        Program::check("nvrtcAddNameExpression", nvrtc::api().nvrtcAddNameExpression(program.get(), e.c_str()),
                       kernel);
    const nvrtcResult result =
        nvrtc::api().nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
    std::string log_text = program.log();
    if (result != NVRTC_SUCCESS)
        throw CompileError(kernel, options, log_text,
                           "compiling " + kernel + " for " + arch + " failed: " +
                               nvrtc::api().nvrtcGetErrorString(result) + "\n" + log_text);

    Compiled out;
    out.arch = arch;
    out.is_ptx = ptx;
    out.binary = binary(program, ptx, kernel);
    out.log = std::move(log_text);
    for (const std::string& e : request.name_expressions) {
        const char* lowered = nullptr;
        Program::check("nvrtcGetLoweredName", nvrtc::api().nvrtcGetLoweredName(program.get(), e.c_str(), &lowered),
                       kernel);
        out.lowered_names.emplace_back(e, lowered);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log::info("compiled {} for {} in {:.1f} ms ({} bytes of {})", kernel, arch, ms, out.binary.size(),
              ptx ? "PTX" : "cubin");
    return out;
}

std::string compile_worker() { return worker::executable().value_or(""); }

int nvrtc_version() { return nvrtc::api().version; }

std::vector<int> nvrtc_supported_archs() {
    const nvrtc::Api& api = nvrtc::api();
    int n = 0;
    api.nvrtcGetNumSupportedArchs(&n);
    std::vector<int> archs(static_cast<std::size_t>(n));
    if (n) api.nvrtcGetSupportedArchs(archs.data());
    return archs;
}

std::string target_arch(int cc_major, int cc_minor, bool arch_specific) {
    const int cc = cc_major * 10 + cc_minor;
    std::vector<int> archs;
    try {
        archs = nvrtc_supported_archs();
    } catch (const CompileError&) {
        // No NVRTC: only cached cubins can be used, and they are stored under the device's own arch.
    }
    if (archs.empty() || std::find(archs.begin(), archs.end(), cc) != archs.end())
        return "sm_" + std::to_string(cc) + (arch_specific && cc >= 90 ? "a" : "");
    // A device newer than this NVRTC: PTX for the newest arch it knows that is older than the device, which the
    // driver compiles for the device at load time.
    int best = 0;
    for (int a : archs)
        if (a < cc) best = std::max(best, a);
    if (!best)
        throw InvalidArgument("device", "a compute capability NVRTC " + std::to_string(nvrtc_version()) + " supports",
                              std::to_string(cc_major) + "." + std::to_string(cc_minor));
    log::info("device sm_{} is newer than NVRTC supports: compiling PTX for compute_{}", cc, best);
    return "compute_" + std::to_string(best);
}

std::string parse_arch(std::string_view arch) {
    std::string_view digits = arch;
    std::string prefix = "sm_";
    if (digits.rfind("sm_", 0) == 0) {
        digits.remove_prefix(3);
    } else if (digits.rfind("compute_", 0) == 0) {
        digits.remove_prefix(8);
        prefix = "compute_";
    }
    std::string suffix;
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
        suffix = digits.back();
        digits.remove_suffix(1);
    }
    const bool numeric = !digits.empty() && digits.size() <= 3 &&
                         std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numeric || std::stoi(std::string(digits)) < 50)
        throw InvalidArgument("arch", "an architecture such as sm_80, sm_90a or compute_90", std::string(arch));
    return prefix + std::string(digits) + suffix;
}

}  // namespace fa_jit
