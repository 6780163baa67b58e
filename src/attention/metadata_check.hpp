// FA_JIT_CHECK=1: validate device metadata (seqused_k) before launching, at the cost of one small kernel and one
// synchronization per call; InvalidArgument names the first bad entry. Off by default: kernels clamp instead.
#pragma once

#include "fa_jit/attention.hpp"

namespace fa_jit {

bool metadata_checks_enabled();          // FA_JIT_CHECK=1 (read once), unless overridden
void set_metadata_checks(bool enabled);  // overrides FA_JIT_CHECK for the process (tests)
void check_device_metadata(const AttentionArgs& args, CUstream stream);

}  // namespace fa_jit
