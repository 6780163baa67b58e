// A kernel family: one kernel template (kernel_sources/) and the descriptor that owns everything that differs
// between families. Families register themselves (register_family); attention(), validation, the tile chooser,
// the tuning file, warmup and the sweep iterate the registry and never branch on which family runs.
//
// Choosing: families are asked in ascending priority(); the first whose chosen_for(problem, cc) is true runs the
// problem (serves() unless a family narrows it to where it measured fastest; a forced or tuned tile runs wherever its
// family serves the problem). Built-in order: decode-ws (3), decode-wgmma (4), decode (5), f16-ws (8), f16-wgmma (10),
// f16-mma (20), fp32 (30).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attention_params.cuh"
#include "fa_jit/jit.hpp"
#include "fa_jit/tuning.hpp"

namespace fa_jit {

// One kernel launch of a plan: which of the family's kernels (an index into kernels()), and its shape.
struct KernelLaunch {
    int kernel = 0;
    unsigned grid[3] = {1, 1, 1};
    unsigned block = 0;
    std::size_t shared_bytes = 0;
    // Launched as a programmatic dependent of the previous launch (LaunchConfig::programmatic_dependency): the
    // kernel waits for it with griddepcontrol.wait.
    bool programmatic_dependency = false;
};

// How one call runs: the launches in stream order and the device workspace they need. Fixed capacity, so that
// planning on the hot path allocates nothing.
struct LaunchPlan {
    static constexpr int kMaxLaunches = 4;
    std::array<KernelLaunch, kMaxLaunches> launches{};
    int count = 0;
    int num_splits = 1;               // split-KV: key blocks per (sequence, KV head); AttentionParams::num_splits
    std::size_t workspace_bytes = 0;  // scratch the launches share (split-KV partials); 0: none
};

class KernelFamily {
public:
    virtual ~KernelFamily() = default;

    // ---- identity ----
    virtual const char* name() const = 0;  // recorded in cache entries, logs and `fa-jit-cache list`
    virtual int priority() const = 0;      // asked in ascending order

    // ---- what it serves ----
    // Whether a kernel of this family exists for `dtype` and `head_dim` (whatever the GPU).
    virtual bool accepts(DType dtype, int head_dim) const = 0;
    // Whether it runs `dtype` at some head dim (validate() then asks check_args() why a head dim is refused).
    virtual bool accepts_dtype(DType dtype) const = 0;
    // Whether its binaries run on a GPU of compute capability `cc`.
    virtual bool runs_on(int cc) const = 0;
    // Whether it should run `problem` on `cc`: accepts() and runs_on(), and every feature the problem uses. The
    // default: every feature the problem uses is one the family has (the three hooks below).
    virtual bool serves(const ProblemClass& problem, int cc) const {
        return accepts(problem.dtype, problem.head_dim) && runs_on(cc) && has_mods(problem) &&
               (!problem.seqused_k || serves_seqused_k() || (problem.paged && serves_paged())) &&
               (!problem.varlen || serves_varlen()) && (!problem.paged || serves_paged());
    }
    // Whether its kernels read per-sequence KV lengths (seqused_k).
    virtual bool serves_seqused_k() const { return false; }
    // Whether its kernels read packed variable-length sequences (cu_seqlens).
    virtual bool serves_varlen() const { return false; }
    // Whether its kernels read K / V through a block table (a paged KV cache; its kernels then read seqused_k too).
    virtual bool serves_paged() const { return false; }
    // The score modifiers its kernels compile with (mods:: bits: window, softcap, alibi).
    virtual int score_mods() const { return 0; }
    bool has_mods(const ProblemClass& problem) const { return (problem.mods.bits() & ~score_mods()) == 0; }
    // Whether the chooser runs `problem` with this family when no tile is forced or tuned: serves() unless the family
    // is only faster than the next one on part of what it serves.
    virtual bool chosen_for(const ProblemClass& problem, int cc) const { return serves(problem, cc); }
    // Preconditions beyond validate_problem() and validate_tensors() (alignment, stride multiples, scale sign): throws
    // InvalidArgument naming the argument. Runs on every call: must not allocate unless it throws.
    virtual void check_args(const AttentionArgs& args) const = 0;

    // ---- tiles ----
    // Whether `tile`'s spelling is this family's (exactly one family owns any well-formed tile).
    virtual bool owns(const TileConfig& tile) const = 0;
    // The kernel's static_asserts for `tile` at `head_dim`, from the layout header the kernel checks against.
    virtual bool tile_is_legal(int head_dim, const TileConfig& tile) const = 0;
    // The tiles --sweep and `warmup --all-configs` explore, all legal at `head_dim`.
    virtual std::vector<TileConfig> sweep_tiles(int head_dim) const = 0;
    // The default-tile heuristic, best first: the chooser takes the first that fits the GPU's shared memory.
    virtual std::vector<TileConfig> preferred_tiles(int cc, const ProblemClass& problem) const = 0;
    // Whether the kernels have an even_mn variant (no bounds checks when the lengths are multiples of the tile).
    virtual bool has_even_variant() const = 0;

    // ---- kernels ----
    virtual std::string source_name() const = 0;
    // The name expressions of the kernels a specialization launches; the first is the main one.
    virtual std::vector<std::string> kernels(const AttentionKernelSpec& spec) const = 0;
    // Whether `spec` (every field but tile_loop set) takes the variant whose blocks loop over tiles for rows of
    // `seqlen_k` keys (AttentionKernelSpec::tile_loop). Default: no such variant.
    virtual bool tile_loop(const AttentionKernelSpec& /*spec*/, int /*seqlen_k*/) const { return false; }
    // Whether `spec` (a paged cache, every field but table_map set) takes the variant that reads the block table
    // through a TMA map for pages of `page_size` rows and `seqlen_k` keys (AttentionKernelSpec::table_map; the same
    // answer for every length of a seqlen_bucket). Default: no such variant.
    virtual bool table_map(const AttentionKernelSpec& /*spec*/, int /*page_size*/, int /*seqlen_k*/) const {
        return false;
    }
    // Whether `spec` (every other field set) takes the variant that settles the rows' maxima after each key tile's
    // exponentials, for rows of `row_keys` keys (keys_per_row: a window's span may be shorter than the keys;
    // AttentionKernelSpec::settled_max; the same answer for every length of a seqlen_bucket). Default: no such variant.
    virtual bool settled_max(const AttentionKernelSpec& /*spec*/, int /*row_keys*/) const { return false; }
    virtual int threads(const AttentionKernelSpec& spec) const { return spec.tile.warps * 32; }
    virtual std::size_t shared_bytes(const AttentionKernelSpec& spec) const = 0;
    // The launches of one call on `device`. Default: the main kernel over (query tiles, heads_q, batch), no
    // workspace. Runs on every call: must not allocate.
    virtual LaunchPlan plan(const AttentionKernelSpec& spec, const AttentionArgs& args, const DeviceInfo& device) const;
    // Points the kernels' parameters at the plan's workspace (null when workspace_bytes is 0): the family alone
    // knows its layout.
    virtual void bind_workspace(AttentionParams&, void* /*workspace*/) const {}
    // Launches one kernel of the plan, `index` in kernels(spec). Default: its only parameter is the AttentionParams.
    // A family whose kernels take more (the TMA descriptors of the warp-specialized families) builds them here from
    // the call's arguments.
    virtual void launch_kernel(const AttentionKernelSpec& spec, int index, const Kernel& kernel,
                               const LaunchConfig& config, const AttentionParams& params,
                               const AttentionArgs& args) const;
};

// Adds `family` to the registry (the built-in families do so from their own files at load time); a family of the
// same name is replaced. Returns true, so that a file can register with `const bool registered = ...;`.
bool register_family(std::shared_ptr<const KernelFamily> family);
// Removes the family named `name` (tests that register a family of their own).
void unregister_family(std::string_view name);

// The registered families in priority order (a snapshot: registering later does not change it).
std::vector<std::shared_ptr<const KernelFamily>> registered_families();
// The families that accept (dtype, head_dim), in priority order. Remembered per thread for the last pair asked,
// until the registry changes: a call repeating the last problem takes no lock and allocates nothing.
struct AcceptingFamilies {
    static constexpr int kMax = 8;
    std::array<const KernelFamily*, kMax> families{};
    int count = 0;
};
const AcceptingFamilies& families_accepting(DType dtype, int head_dim);
// The family that owns `tile`, or null.
std::shared_ptr<const KernelFamily> family_owning(const TileConfig& tile);
// The first family that serves `problem` on `cc`, or null.
std::shared_ptr<const KernelFamily> family_serving(const ProblemClass& problem, int cc);
// The first family chosen_for `problem` on `cc` (the one attention() runs without a forced tile), or null.
std::shared_ptr<const KernelFamily> family_chosen(const ProblemClass& problem, int cc);

// The trailing template arguments of a kernel compiled with score modifiers, packed sequences or a paged cache: ", 5"
// for window and alibi, ", 0, true" for varlen without modifiers, ", 0, false, true" for a paged cache; empty
// without any (kMods defaults to 0, kVarlen and kPaged to false, so plain kernels keep the names they had before).
std::string mods_argument(const AttentionKernelSpec& spec);

// The kernels' name for `dtype`'s element type: "float", "fa_jit::half_t" or "fa_jit::bf16_t".
const char* kernel_element_type(DType dtype);

// The shared memory a block may opt into on a GPU of compute capability `cc`.
std::size_t max_shared_bytes(int cc);

}  // namespace fa_jit
