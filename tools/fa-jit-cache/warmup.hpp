// `warmup`: compile attention kernels into the disk cache ahead of time, for named archs (no GPU needed) or for the
// GPUs present. Planning (which kernels) and running (compiling them in parallel) are separate steps.
#pragma once

#include "fa_jit/tuning.hpp"

#include <string>
#include <vector>

namespace fa_jit::tools {

struct WarmupOptions {
    std::string archs;                  // "sm_80,sm_90a"; empty: the GPUs present
    std::string dtypes = "fp32,fp16,bf16";
    std::string head_dims = "64,128,256";
    std::string causal = "both";        // both | yes | no
    // The sequence lengths (512,2k,...) whose problem classes the default configs are chosen for: the default tile,
    // and on sm_90 even the kernel, depends on the length.
    std::string seqlens = "4096";
    bool all_configs = false;           // every legal tile config instead of the default one
    // Feature sets a deployment uses, each of window, softcap, alibi (ScoreMods::parse) and varlen, or "none": every
    // kernel is compiled once per set.
    std::vector<std::string> features = {"none"};
    unsigned jobs = 1;
    bool json = false;
    bool quiet = false;                 // no progress lines
};

struct WarmupItem {
    std::string arch;  // normalized, e.g. "sm_90a"
    AttentionKernelSpec spec;
    bool is_default = false;  // the config attention() picks by default for this problem class
};

enum class WarmupStatus { compiled, cached, failed };

struct WarmupResult {
    WarmupStatus status = WarmupStatus::failed;
    double seconds = 0;
    std::string error;       // what() of the failure
    std::string compile_log; // NVRTC's log when the failure was a CompileError
};

// The archs and the kernels to compile; throws UsageError for bad option values (naming the option).
std::vector<std::string> warmup_archs(const std::string& archs_option);
std::vector<WarmupItem> plan_warmup(const WarmupOptions& options, const std::vector<std::string>& archs);

// Compiles every item through the disk cache on `jobs` threads; results in the order of `items`.
std::vector<WarmupResult> run_warmup(const std::vector<WarmupItem>& items, unsigned jobs, bool progress);

// "sm_80 fp32 d64 causal 64x64w4"
std::string describe(const WarmupItem& item);
const char* to_string(WarmupStatus status);

}  // namespace fa_jit::tools
