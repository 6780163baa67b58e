#include "attention/families/split_kv.hpp"

#include <algorithm>

#include "attention/families/decode_splits.hpp"
#include "attention/families/f16_args.hpp"
#include "attention/seqlen_bucket.hpp"
#include "attention_decode_layout.cuh"

namespace fa_jit::families {

bool SplitKvFamily::serves(const ProblemClass& p, int cc) const {
    return KernelFamily::serves(p, cc) && ((p.seqused_k && !p.paged) || p.seqlen_q <= kMaxDecodeQueries);
}

void SplitKvFamily::check_args(const AttentionArgs& args) const {
    check_f16_args(args);
}

LaunchPlan SplitKvFamily::plan(const AttentionKernelSpec& spec, const AttentionArgs& a,
                               const DeviceInfo& device) const {
    const TileConfig& t = spec.tile;
    const long long row_tiles = (packed_rows(a.seqlen_q, a.heads_q / a.heads_kv) + t.block_m - 1) / t.block_m;
    int splits = a.num_splits;
    if (splits == 0) {
        // Blocks per SM: shared memory (plus the 1 KB the driver reserves per block) and threads allow, and no more
        // than keep kSaturatingLoadBytes in flight.
        const long long smem = static_cast<long long>(shared_bytes(spec)) + 1024;
        const int by_smem = static_cast<int>((device.max_shared_per_block_optin + 1024) / smem);
        const int by_threads = 2048 / threads(spec);
        const std::size_t ring = ring_bytes(spec);
        const int by_loads = ring ? static_cast<int>(std::max<std::size_t>(1, kSaturatingLoadBytes / ring)) : 8;
        // The keys a block reads: all of them, or with a sliding window the window of its query tokens.
        long long keys = a.seqlen_k;
        if (a.window_left >= 0)
            keys = std::min<long long>(keys, 1LL + a.window_left + a.seqlen_q + std::max(0, a.window_right));
        const SplitProblem problem{device.multiprocessors, std::clamp(std::min({by_smem, by_threads, by_loads}), 1, 8),
                                   row_tiles * a.heads_kv * a.batch, (keys + t.block_n - 1) / t.block_n};
        splits = choose_num_splits(problem);
    }
    LaunchPlan plan;
    plan.num_splits = splits;
    KernelLaunch& split = plan.launches[plan.count++];
    split.kernel = 0;
    split.grid[0] = static_cast<unsigned>(row_tiles * splits);
    split.grid[1] = static_cast<unsigned>(a.heads_kv);
    split.grid[2] = static_cast<unsigned>(a.batch);
    split.block = static_cast<unsigned>(threads(spec));
    split.shared_bytes = shared_bytes(spec);
    // A programmatic dependent of whatever precedes it in the stream: its blocks are scheduled once that kernel
    // releases them (the previous call's combine does as it starts) and wait for it to complete before reading or
    // writing anything, so the launch overlaps the previous kernel's tail.
    split.programmatic_dependency = true;
    if (splits > 1) {
        const long long rows = static_cast<long long>(a.batch) * a.heads_q * a.seqlen_q;
        KernelLaunch& combine = plan.launches[plan.count++];
        combine.kernel = 1;
        const int rows_per_block = decode_layout::kCombineWarps / decode_layout::combine_warps_per_row(splits);
        combine.grid[0] = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
        combine.block = decode_layout::kCombineWarps * 32;
        combine.programmatic_dependency = true;  // its launch overlaps the split kernel's tail
        plan.workspace_bytes = decode_layout::workspace_bytes(rows, splits, a.head_dim);
    }
    return plan;
}

void SplitKvFamily::bind_workspace(AttentionParams& p, void* workspace) const {
    if (!workspace) return;
    const long long rows = static_cast<long long>(p.batch) * p.heads_q * p.seqlen_q;
    p.partial_lse = static_cast<float*>(workspace);
    p.partial_o = reinterpret_cast<float*>(static_cast<char*>(workspace) +
                                           decode_layout::partial_lse_bytes(rows, p.num_splits));
}

}  // namespace fa_jit::families
