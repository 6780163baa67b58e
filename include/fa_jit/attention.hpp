// attention(): FlashAttention forward on device pointers the caller owns, on the caller's stream.
//
//   O = softmax(scale * Q K^T [+ causal mask]) V,   LSE = log(sum(exp(scale * Q K^T)))   (per query row)
//
// The first call for a new problem class compiles a kernel specialized for it (or loads it from the disk cache);
// later calls only validate and launch.
#pragma once

#include "fa_jit/cuda_types.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/jit.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fa_jit {

enum class DType { f32, f16, bf16 };
std::string to_string(DType dtype);
DType parse_dtype(std::string_view name);  // "fp32"/"f32"/"float32", "fp16"/"f16"/"float16", "bf16"/"bfloat16"
std::size_t element_size(DType dtype);

// Element strides of a [batch, heads, seqlen, head_dim] tensor whose last dimension is contiguous.
struct Strides {
    std::int64_t batch = 0;
    std::int64_t head = 0;
    std::int64_t row = 0;

    // [batch, seqlen, heads, head_dim] contiguous (BSHD, as FlashAttention's API).
    static Strides bshd(std::int64_t seqlen, std::int64_t heads, std::int64_t head_dim) {
        return {seqlen * heads * head_dim, head_dim, heads * head_dim};
    }
    // [batch, heads, seqlen, head_dim] contiguous (BHSD, as PyTorch SDPA's).
    static Strides bhsd(std::int64_t seqlen, std::int64_t heads, std::int64_t head_dim) {
        return {heads * seqlen * head_dim, seqlen * head_dim, head_dim};
    }
};

struct AttentionArgs {
    const void* q = nullptr;  // [batch, heads_q,  seqlen_q, head_dim]
    const void* k = nullptr;  // [batch, heads_kv, seqlen_k, head_dim]
    const void* v = nullptr;  // [batch, heads_kv, seqlen_k, head_dim]
    void* o = nullptr;        // [batch, heads_q,  seqlen_q, head_dim], written
    float* lse = nullptr;     // optional: [batch, heads_q, seqlen_q] contiguous fp32, natural log, written

    DType dtype = DType::f32;  // of q, k, v and o
    int batch = 0;
    int heads_q = 0;
    int heads_kv = 0;  // heads_q must be a multiple (GQA; 1 = MQA)
    int seqlen_q = 0;
    int seqlen_k = 0;
    int head_dim = 0;
    Strides q_strides, k_strides, v_strides, o_strides;  // in elements

    std::optional<float> scale;  // default 1 / sqrt(head_dim); fp16/bf16 need it positive
    // Causal mask aligned bottom-right: query i sees key j iff j <= i + seqlen_k - seqlen_q.
    // A query that sees no key gets O = 0 and LSE = -inf.
    bool causal = false;

    // Fills all four stride sets for contiguous BSHD or BHSD tensors.
    AttentionArgs& layout_bshd();
    AttentionArgs& layout_bhsd();
};

// Tile shape of the attention kernels. {0, 0, 0} means "choose".
struct TileConfig {
    int block_m = 0;  // B_r: query rows per block
    int block_n = 0;  // B_c: key rows per inner iteration
    int warps = 0;    // warps per block
    int stages = 0;   // fp16/bf16: K/V buffers of the cp.async pipeline (1..4); fp32: 0 (its kernel has one depth)
    // fp16/bf16 on sm_90 only: the Hopper kernel (warpgroup MMA, one warpgroup per 64 rows: warps = block_m / 16)
    // instead of the mma.sync kernel that runs on every sm_80+ GPU.
    bool wgmma = false;
    bool operator==(const TileConfig& o) const noexcept {
        return block_m == o.block_m && block_n == o.block_n && warps == o.warps && stages == o.stages &&
               wgmma == o.wgmma;
    }
    bool empty() const noexcept { return block_m == 0; }
    std::string to_string() const;  // "64x64w4" (fp32), "128x64w4s2" (fp16/bf16), "128x64w8s2-wgmma" (Hopper)
};

// "64x64w4", "128x64w4s2" or "128x64w8s2-wgmma" -> TileConfig; nullopt when malformed (legality is not checked).
std::optional<TileConfig> parse_tile_config(std::string_view text);

// One kernel specialization: everything that is a compile-time constant of the kernel.
struct AttentionKernelSpec {
    DType dtype = DType::f32;
    int head_dim = 0;
    bool causal = false;
    TileConfig tile;
    // fp16/bf16 only: seqlen_q % block_m == 0 and seqlen_k % block_n == 0, so the kernel carries no row bounds checks.
    bool even_mn = false;

    std::string source_name() const;      // the kernel_sources/ file
    std::string name_expression() const;  // e.g. "fa_jit::attention_fwd_fp32<128, 32, 128, 4, false, 1, 1>"
    int threads() const;
    std::size_t shared_bytes() const;     // dynamic shared memory per block
    bool operator==(const AttentionKernelSpec& o) const noexcept {
        return dtype == o.dtype && head_dim == o.head_dim && causal == o.causal && tile == o.tile &&
               even_mn == o.even_mn;
    }
};

// Runs attention on `stream`. Throws InvalidArgument (naming the argument) before anything reaches the GPU,
// CompileError or CudaError. Zero-size problems return at once. `tile` overrides the chosen configuration.
void attention(const AttentionArgs& args, CUstream stream, const TileConfig& tile = {});

// Plain attention with float64 accumulation, for checking results (slow; same semantics and arguments).
void attention_reference(const AttentionArgs& args, CUstream stream);

// Throws InvalidArgument for the first argument attention() would reject.
void validate(const AttentionArgs& args);

// ---- Configuration (used by attention(), fa-jit-bench and fa-jit-cache) ----

// The problem class a tile configuration is chosen for.
struct ProblemClass {
    DType dtype = DType::f32;
    int head_dim = 0;
    bool causal = false;
    int seqlen_q = 0;
    int seqlen_k = 0;
};

// Every legal tile configuration of the kernel families for `dtype` and `head_dim` (what --sweep explores, after
// tile_runs_on()); empty when no kernel serves that head dim (fp16/bf16 need a multiple of 8).
std::vector<TileConfig> tile_configs(DType dtype, int head_dim);
// Whether the kernel family for `dtype` accepts `tile` at `head_dim` (its static_asserts, evaluated on the host).
bool tile_is_legal(DType dtype, int head_dim, const TileConfig& tile);
// Whether `tile`'s kernel runs on a GPU of compute capability `cc` (e.g. 90): wgmma tiles need exactly sm_90.
bool tile_runs_on(const TileConfig& tile, int cc);
// The built-in choice for a GPU of compute capability `cc` (e.g. 90): a pure function, one comment per number.
TileConfig default_tile_config(int cc, const ProblemClass& problem);
// The tuning file's choice for this GPU and problem when there is one, else default_tile_config().
TileConfig choose_tile_config(const DeviceInfo& device, const ProblemClass& problem);

// Where `fa-jit-bench --save` writes and attention() reads tuned configurations: <cache dir>/tuning.json.
std::string tuning_file_path();
// Records `tile` as the best for `problem` on `device` in the tuning file (atomic rewrite).
void save_tuned_config(const DeviceInfo& device, const ProblemClass& problem, const TileConfig& tile);

// The arch whose binaries attention() loads on a GPU of `arch`'s compute capability: the arch-specific variant
// from 9.0 on ("sm_90" and "sm_90a" -> "sm_90a"), so that a cache warmed for either name serves the device.
std::string attention_arch(std::string_view arch);

// The specialization attention(args, stream, tile) runs, for a non-empty legal `tile`.
AttentionKernelSpec attention_spec(const AttentionArgs& args, const TileConfig& tile);
// The compile request of one specialization for `arch` (what warmup compiles without a GPU).
CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch);
// The specialization loaded for the current device (compiled or read from the cache on first use).
Kernel attention_kernel(const AttentionKernelSpec& spec);

}  // namespace fa_jit
