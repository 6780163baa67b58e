// The kernel parameters of one validated attention() call.
#pragma once

#include "attention/family.hpp"

namespace fa_jit {

// AttentionParams for `a` (validated): strides, the scale in log2 units, the window clamped to the lengths, softcap's
// factors (and whether a bf16 kernel may skip the running max: kSoftcapNoMaxLimit), the page divisor; one split.
AttentionParams make_params(const AttentionArgs& a);

}  // namespace fa_jit
