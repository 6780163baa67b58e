// Kernel families, tile configurations and tuning: what fa-jit-bench and fa-jit-cache work with, and what a kernel
// engineer needs to force, sweep or warm a specific kernel.
//
// A kernel family is one kernel template and its descriptor (src/attention/families/): which problems it serves,
// its legal tiles, its default-tile heuristic, its launch plan. attention() asks the families in priority order
// (kernel_families()) whether they serve the problem on the current GPU; the first that does runs it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fa_jit/attention.hpp"
#include "fa_jit/export.hpp"
#include "fa_jit/jit.hpp"

namespace fa_jit {

// Tile shape of an attention kernel. Its spelling names its family: "64x64w4" (fp32: no stages),
// "128x64w4s2" (fp16/bf16 mma.sync: a cp.async pipeline depth), "128x64w8s2-wgmma" (a family's variant tag).
// An empty tile ({}) means "choose".
struct FA_JIT_API TileConfig {
    int block_m = 0;           // B_r: query rows per block
    int block_n = 0;           // B_c: key rows per inner iteration
    int warps = 0;             // warps per block
    int stages = 0;            // K/V buffers of a cp.async pipeline; 0 for kernels with a fixed depth
    std::string variant = {};  // "" or the tag of the family that owns the tile, written "-<variant>" ("wgmma")

    bool operator==(const TileConfig& o) const noexcept {
        return block_m == o.block_m && block_n == o.block_n && warps == o.warps && stages == o.stages &&
               variant == o.variant;
    }
    bool operator!=(const TileConfig& o) const noexcept { return !(*this == o); }
    bool empty() const noexcept { return block_m == 0; }
    std::string to_string() const;
};

// "64x64w4", "128x64w4s2" or "128x64w8s2-wgmma" -> TileConfig; nullopt when malformed (legality is not checked).
FA_JIT_API std::optional<TileConfig> parse_tile_config(std::string_view text);

// The score modifiers a kernel is compiled with (AttentionArgs: window_left / window_right, softcap, alibi_slopes).
struct FA_JIT_API ScoreMods {
    bool window = false;
    bool softcap = false;
    bool alibi = false;

    static ScoreMods of(const AttentionArgs& args) {
        return {args.window_left >= 0 || args.window_right >= 0, args.softcap != 0.f, args.alibi_slopes != nullptr};
    }
    // The kernels' kMods template argument (mods:: bits of attention_params.cuh: window 1, softcap 2, alibi 4).
    int bits() const { return (window ? 1 : 0) | (softcap ? 2 : 0) | (alibi ? 4 : 0); }
    bool any() const { return window || softcap || alibi; }
    std::string to_string() const;  // "window,softcap"; "none" without any
    // "window", "softcap", "alibi" separated by commas ("" or "none": none); throws InvalidArgument naming `argument`.
    static ScoreMods parse(std::string_view text, const char* argument = "features");
    bool operator==(const ScoreMods& o) const noexcept { return bits() == o.bits(); }
    bool operator!=(const ScoreMods& o) const noexcept { return !(*this == o); }
};

// The problem class a kernel and a tile are chosen for: what is a compile-time constant of the kernel, and the
// lengths (through their power-of-two buckets) that the tile choice depends on.
struct FA_JIT_API ProblemClass {
    DType dtype = DType::f32;
    int head_dim = 0;
    bool causal = false;
    int seqlen_q = 0;
    int seqlen_k = 0;
    int group_size = 1;      // heads_q / heads_kv: decode packs a group's query heads into one tile
    bool seqused_k = false;  // per-sequence KV lengths (only families that read them serve the problem)
    // Q, K or V repeats along a dimension (a zero batch, head or row stride over more than one element, in a tensor
    // that has elements; a BHSD K without keys has zero strides and repeats nothing): families
    // that load through TMA maps, which cannot express that, do not serve the problem.
    bool repeated_input = false;
    ScoreMods mods = {};  // only families whose kernels have every modifier serve the problem
    bool varlen = false;  // packed variable-length sequences (cu_seqlens_q / cu_seqlens_k)
    bool paged = false;   // a paged KV cache (block_table)
    static ProblemClass of(const AttentionArgs& args) {
        const auto repeats = [](const Strides& s, int batch, int heads, int rows) {
            if (batch == 0 || heads == 0 || rows == 0) return false;  // no elements: nothing repeats
            return (s.batch == 0 && batch > 1) || (s.head == 0 && heads > 1) || (s.row == 0 && rows > 1);
        };
        // Packed sequences: one batch of total rows; a paged cache: num_pages batches of page_size rows.
        const bool varlen = args.cu_seqlens_q != nullptr, paged = args.block_table != nullptr;
        const int batch_k = paged ? args.num_pages : varlen ? 1 : args.batch;
        const int rows_k = paged ? args.page_size : varlen ? args.total_k : args.seqlen_k;
        return {args.dtype,
                args.head_dim,
                args.causal,
                args.seqlen_q,
                args.seqlen_k,
                args.heads_kv > 0 ? args.heads_q / args.heads_kv : 1,
                args.seqused_k != nullptr,
                repeats(args.q_strides, varlen ? 1 : args.batch, args.heads_q, varlen ? args.total_q : args.seqlen_q) ||
                    repeats(args.k_strides, batch_k, args.heads_kv, rows_k) ||
                    repeats(args.v_strides, batch_k, args.heads_kv, rows_k),
                ScoreMods::of(args),
                varlen,
                paged};
    }
};

// One kernel specialization: everything that is a compile-time constant of the kernel. Its family is the one
// that owns `tile`.
struct FA_JIT_API AttentionKernelSpec {
    DType dtype = DType::f32;
    int head_dim = 0;
    bool causal = false;
    TileConfig tile;
    // Both lengths are multiples of the tile, so the kernel carries no bounds checks (families that have such a
    // variant: kernel_family_has_even_variant()).
    bool even_mn = false;
    // Reads per-sequence KV lengths (AttentionArgs::seqused_k), for families whose kernels specialize on it.
    bool seqused_k = false;
    ScoreMods mods = {};  // score modifiers compiled in (the kMods template argument)
    bool varlen = false;  // reads cu_seqlens (the kVarlen template argument)
    bool paged = false;   // reads K / V through a block table (the kPaged template argument)
    // Blocks loop over tiles (families that have such a variant, for the lengths it serves: the warp-specialized
    // family under the causal mask, up to 8k keys); longer rows' kernel carries none of the loop.
    bool tile_loop = false;
    // Reads a paged cache's block table through a TMA map (families that have such a variant, for the page sizes it
    // serves: the warp-specialized family at d <= 64 without the mask, pages of whole half key tiles).
    bool table_map = false;
    // Each key tile's exponentials use the rows' maxima from before it, settled afterwards where they moved (families
    // that have such a variant, for the problems it serves: the warp-specialized family past 2k keys at d <= 160,
    // ws_layout::settled_max).
    bool settled_max = false;

    std::string family() const;           // e.g. "f16-wgmma"; throws InvalidArgument when no family owns the tile
    std::string source_name() const;      // the kernel_sources/ file
    std::string name_expression() const;  // e.g. "fa_jit::attention_fwd_fp32<128, 32, 128, 4, false, 1, 1>"
    int threads() const;
    std::size_t shared_bytes() const;  // dynamic shared memory per block
    bool operator==(const AttentionKernelSpec& o) const noexcept {
        return dtype == o.dtype && head_dim == o.head_dim && causal == o.causal && tile == o.tile &&
               even_mn == o.even_mn && seqused_k == o.seqused_k && mods == o.mods && varlen == o.varlen &&
               paged == o.paged && tile_loop == o.tile_loop && table_map == o.table_map &&
               settled_max == o.settled_max;
    }
};

// ---- Families ----

// The registered kernel families' names, in the order attention() asks them (first that serves the problem wins).
FA_JIT_API std::vector<std::string> kernel_families();
// The family that runs `problem` on a GPU of compute capability `cc` (e.g. 90) by default; throws InvalidArgument
// naming the first argument no family serves.
FA_JIT_API std::string kernel_family_for(const ProblemClass& problem, int cc);
// Whether `family` has kernels without bounds checks (AttentionKernelSpec::even_mn).
FA_JIT_API bool kernel_family_has_even_variant(std::string_view family);

// ---- Tiles ----

// Every legal tile of every family for `dtype` and `head_dim`, in family order (what --sweep explores, after
// tile_runs_on()); empty when no family serves that head dim (fp16/bf16 need a multiple of 8).
FA_JIT_API std::vector<TileConfig> tile_configs(DType dtype, int head_dim);
// The tiles of tile_configs() whose family serves `problem` on a GPU of compute capability `cc`.
FA_JIT_API std::vector<TileConfig> tile_configs(const ProblemClass& problem, int cc);
// Whether the family owning `tile` accepts it for `dtype` at `head_dim` (its kernel's static_asserts, evaluated on
// the host).
FA_JIT_API bool tile_is_legal(DType dtype, int head_dim, const TileConfig& tile);
// Whether `tile`'s family runs on a GPU of compute capability `cc`: wgmma tiles need exactly sm_90.
FA_JIT_API bool tile_runs_on(const TileConfig& tile, int cc);
// The built-in choice for a GPU of compute capability `cc`: the first family that serves the problem, and its
// heuristic's first tile that fits the GPU's shared memory. Throws InvalidArgument when no family serves it.
FA_JIT_API TileConfig default_tile_config(int cc, const ProblemClass& problem);
// The tuning file's choice for this GPU and problem when there is one, else default_tile_config().
FA_JIT_API TileConfig choose_tile_config(const DeviceInfo& device, const ProblemClass& problem);

// ---- Tuning file ----

// Where `fa-jit-bench --save` writes and attention() reads tuned configurations: <cache dir>/tuning.json.
FA_JIT_API std::string tuning_file_path();
// Records `tile` as the best for `problem` on `device` in the tuning file (atomic rewrite).
FA_JIT_API void save_tuned_config(const DeviceInfo& device, const ProblemClass& problem, const TileConfig& tile);

// ---- Specializations ----

// The arch whose binaries attention() loads on a GPU of `arch`'s compute capability: the arch-specific variant
// from 9.0 on ("sm_90" and "sm_90a" -> "sm_90a"), so that a cache warmed for either name serves the device.
FA_JIT_API std::string attention_arch(std::string_view arch);
// The compute capability of an arch name: "sm_90a" -> 90, "compute_80" -> 80. Throws InvalidArgument.
FA_JIT_API int arch_cc(std::string_view arch);

// The specialization attention(args, stream, tile) runs, for a non-empty legal `tile`.
FA_JIT_API AttentionKernelSpec attention_spec(const AttentionArgs& args, const TileConfig& tile);
// The compile request of one specialization for `arch` (what warmup compiles without a GPU); names its family.
FA_JIT_API CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch);
// The specialization loaded for the current device (compiled or read from the cache on first use).
FA_JIT_API Kernel attention_kernel(const AttentionKernelSpec& spec);

// What a deployment warms for `problem` on GPUs of compute capability `cc`: the default tile's kernels (every
// even_mn variant its family has), or with `all_tiles` those of every tile that runs there.
FA_JIT_API std::vector<AttentionKernelSpec> warmup_specs(const ProblemClass& problem, int cc, bool all_tiles);

// What attention(args, stream, tile) runs on the current device: the family, its tile, the split count (1 for
// families that do not split the keys) and the workspace bytes. Compiles nothing; throws like attention().
struct FA_JIT_API AttentionChoice {
    std::string family;
    TileConfig tile;
    int num_splits = 1;
    std::size_t workspace_bytes = 0;
};
FA_JIT_API AttentionChoice attention_choice(const AttentionArgs& args, const TileConfig& tile = {});

// attention() with `tile` instead of the chosen configuration (empty: choose). Throws InvalidArgument naming
// "tile" for a tile no family serving the problem accepts, or one this GPU cannot run.
FA_JIT_API void attention(const AttentionArgs& args, CUstream stream, const TileConfig& tile);

}  // namespace fa_jit
