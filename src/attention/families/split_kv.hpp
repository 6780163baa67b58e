// What the split-KV decode families share (decode on mma.sync; decode-wgmma and decode-ws on Hopper): the problems
// they serve, their launches (the split kernel over (row tiles x splits, KV heads, batch), then the combine kernel when
// the keys are split) and the workspace of the partial results. A family adds its kernels and tiles.
#pragma once

#include "attention/family.hpp"

namespace fa_jit::families {

// Packed query rows of one KV head: query tokens x the query heads of its group.
inline int packed_rows(int seqlen_q, int group_size) {
    return seqlen_q * group_size;
}

class SplitKvFamily : public KernelFamily {
public:
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f16 || dtype == DType::bf16; }
    // Decode and speculative decoding (seqlen_q <= kMaxDecodeQueries, any group size), and every problem with
    // per-sequence KV lengths in contiguous tensors (the prefill families read them only from a paged cache).
    bool serves(const ProblemClass& p, int cc) const override;
    void check_args(const AttentionArgs& args) const override;
    bool has_even_variant() const override { return false; }
    int score_mods() const override { return mods::kAll; }  // window, softcap, ALiBi (per packed row)
    bool serves_seqused_k() const override { return true; }
    bool serves_varlen() const override { return true; }  // packed sequences, seqused_k included
    bool serves_paged() const override { return true; }

    // kernels() lists the split kernel, then attention_split_combine<T, d>.
    LaunchPlan plan(const AttentionKernelSpec& spec, const AttentionArgs& args, const DeviceInfo& device) const override;
    void bind_workspace(AttentionParams& p, void* workspace) const override;

protected:
    // K / V bytes one block keeps in flight (its ring), or 0 where not modelled. The split heuristic counts as many
    // blocks per SM as keep kSaturatingLoadBytes in flight, however many more fit: an SM is bound by its share of the
    // HBM, so a second block beside a deep ring shares that share rather than adding to it (0: every block that fits).
    virtual std::size_t ring_bytes(const AttentionKernelSpec&) const { return 0; }
};

// The K / V bytes in flight per SM that read at the HBM's rate: a 4-deep ring of 16 keys for 4 key warps at d 128
// (16x64w4s4, 128 KB) streams at 4.55 TB/s on an H200, its second block per SM adding nothing (bench/NOTES.md, "Ring
// depth and blocks per SM").
constexpr std::size_t kSaturatingLoadBytes = 128 * 1024;

}  // namespace fa_jit::families
