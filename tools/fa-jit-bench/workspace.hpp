// Device memory for one problem: several sets of random q/k/v that timed runs rotate through (so that the inputs
// do not sit in L2 between repetitions, which would flatter small problems), one output o/lse that the timed
// runs write, and a separate o/lse for attention_reference().
#pragma once

#include <vector>

#include "fa_jit/attention.hpp"
#include "fa_jit/jit.hpp"
#include "problems.hpp"

namespace fa_jit::bench {

// The rotating inputs together should exceed about twice a large L2 (H100/H200: 50-60 MB) ...
inline constexpr std::size_t kRotationTargetBytes = 2 * 60 * 1000 * 1000;
// ... without taking more than this much device memory (one set is always allocated, however large). Small decode
// problems (a KV cache of a few MB) need many sets to stay out of L2.
inline constexpr std::size_t kRotationMaxBytes = std::size_t(2) << 30;
inline constexpr std::size_t kMaxInputSets = 256;

// Host copies of an output, as float.
struct HostOutput {
    std::vector<float> o;
    std::vector<float> lse;
};

class Workspace {
public:
    // Allocates and fills the input sets from `inputs` (fixed seeds: every run sees the same data).
    Workspace(const Problem& problem, InputDistribution inputs);

    std::size_t input_sets() const noexcept { return sets_.size(); }
    std::size_t bytes_per_set() const noexcept { return set_bytes_; }

    // Arguments reading input set `set` and writing the benchmark's o/lse.
    AttentionArgs args(std::size_t set) const;
    // Arguments reading input set 0 and writing the reference o/lse.
    AttentionArgs reference_args() const;

    // Fills o and lse with 0xFF bytes (NaN): any element a kernel fails to write stays NaN and fails the check.
    void poison_outputs();
    HostOutput download_output() const;
    HostOutput download_reference() const;

private:
    struct Inputs {
        DeviceBuffer q, k, v;
    };
    AttentionArgs base_args() const;
    HostOutput download(const DeviceBuffer& o, const DeviceBuffer& lse) const;

    Problem problem_;
    std::size_t q_elems_ = 0, kv_elems_ = 0, lse_elems_ = 0, set_bytes_ = 0;
    std::vector<Inputs> sets_;
    DeviceBuffer o_, lse_, ref_o_, ref_lse_;
    DeviceBuffer alibi_slopes_;  // fp32 [heads] when the problem has ALiBi
    DeviceBuffer block_table_;   // int32 [batch, pages_per_seq] when K / V are paged
    int pages_per_seq_ = 0, num_pages_ = 0;
    DeviceBuffer cu_seqlens_;  // int32 [sequences + 1] prefix sums when the tokens are packed
    int sequences_ = 0, max_length_ = 0;
};

}  // namespace fa_jit::bench
