// What fa-jit-bench measures: the problems (shapes) from the command line or a preset, and which tile configs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fa_jit/tuning.hpp"

namespace fa_jit::bench {

enum class Layout { bshd, bhsd };
// The inputs' distribution: uniform in [-1, 1), or standard normal (torch.randn's, as the FlashAttention
// benchmarks and bench/compare.py draw them: scores of about unit spread after the 1/sqrt(d) scale).
enum class InputDistribution { uniform, normal };

// Problems with at most this many query rows are decode steps: reported with their KV bandwidth and split count.
inline constexpr int kDecodeMaxSeqlenQ = 16;
// --preset decode skips shapes whose K and V caches together exceed this (one input set is always allocated).
inline constexpr double kDecodeMaxKvBytes = 24e9;

// Score modifiers of a problem (AttentionArgs' fields; ALiBi slopes 2^(-8 (h + 1) / heads)).
struct ProblemMods {
    int window_left = -1, window_right = -1;
    float softcap = 0.f;
    bool alibi = false;
    bool window() const { return window_left >= 0 || window_right >= 0; }
};

// splitmix64: the next of a fixed-seed stream of 64-bit values (fa-jit-bench's inputs and packed lengths).
inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct Problem {
    DType dtype = DType::f32;
    int batch = 1, heads = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 64;
    bool causal = false;
    Layout layout = Layout::bshd;
    ProblemMods mods = {};
    int page_size = 0;  // > 0: K / V in a paged cache of pages this long, in random order (AttentionArgs::block_table)
    bool pages_in_order = false;  // the pages in the sequences' order instead (B 1: the contiguous tensor's bytes)
    // > 0: the batch's batch * seqlen_q tokens packed without padding (AttentionArgs::cu_seqlens_q / _k,
    // self-attention) into sequences of lengths uniform in 1..varlen_max, fixed seed, the last taking what remains.
    int varlen_max = 0;

    bool varlen() const { return varlen_max > 0; }
    // The packed sequences' lengths (empty unless varlen()).
    std::vector<int> packed_lengths() const;

    ProblemClass problem_class() const;
    bool decode() const { return seqlen_q <= kDecodeMaxSeqlenQ; }
    // 4 * B * H * Nq * Nk * d, halved when causal (the FlashAttention papers' convention). Decode problems count
    // the (query, key) pairs the causal mask leaves visible exactly: Nq * Nk - Nq * (Nq - 1) / 2 when Nq <= Nk;
    // so do problems with a sliding window (the pairs inside it) and packed sequences (each sequence's pairs).
    double flops() const;
    // Bytes of K and V read once: 2 * B * H_kv * Nk * d * element size (what a decode step is bound by); with a
    // left window, of the keys inside it.
    double kv_bytes() const;
    // "fp32 B4 H16 Nq2048 Nk2048 d128 causal bshd" (heads_kv shown only when it differs: "H16/kv4"; " page64" for a
    // paged cache). Packed sequences: "bf16 varlen14x1..8192 T65536 H16 ..." (sequences, lengths, tokens).
    std::string label() const;
};

struct BenchOptions {
    // Problem shape (each list flag gives a cartesian product).
    int batch = 4;
    int heads = 16;
    int heads_kv = 0;               // 0: = heads
    std::string seqlen_q = "2048";  // list
    std::string seqlen_k;           // empty: = seqlen_q
    std::string head_dim;           // list; empty: 128 (64,128 for --preset paper)
    std::string dtype = "fp32";     // list
    std::string causal = "no";      // yes | no | both (--preset paper: both)
    std::string layout = "bshd";
    std::string inputs = "uniform";  // uniform | normal (InputDistribution)
    std::string preset;              // "", tutorial, paper, decode, serving
    std::string window;              // "L,R": sliding window of every problem (-1: unbounded side)
    float softcap = 0.f;
    bool alibi = false;
    int page_size = 0;                  // --page-size: every problem's K / V in pages (a multiple of 16; 0: contiguous)
    std::string page_order = "random";  // random | ordered
    int varlen_max = 0;                 // --varlen: every problem's tokens packed into sequences of 1..varlen_max

    // Configs.
    std::string config;  // "64x64w4" (fp32) or "128x64w4s2" (fp16/bf16): force one
    bool sweep = false;  // every config of tile_configs()
    bool save = false;   // write each problem's best sweep config to the tuning file
    int splits = 0;      // AttentionArgs::num_splits of every run (0: the library chooses); --sweep varies it

    // Measurement.
    int reps = 30;
    int warmup = 5;
    double warmup_ms = 0;  // untimed calls for at least this long after `warmup` (MeasureSettings says why)
    bool no_check = false;
    int device = 0;

    // Output.
    bool json = false;
    bool csv = false;
    bool quiet = false;

    // Options whose presence matters (a preset must not silently override them).
    CLI::Option* causal_option = nullptr;
    CLI::Option* dtype_option = nullptr;
};

// Registers every option on `app` (which owns the returned pointers' targets through `options`).
void add_options(CLI::App& app, BenchOptions& options);

// Every problem the options describe; throws UsageError naming the option at fault.
std::vector<Problem> make_problems(const BenchOptions& options);

// The input distribution of --inputs.
InputDistribution input_distribution(const BenchOptions& options);

// The tile config of --config, or nullopt; throws UsageError when malformed.
std::optional<TileConfig> forced_config(const BenchOptions& options);

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace fa_jit::bench
