#include "problems.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "common/text.hpp"

namespace fa_jit::bench {
namespace {

std::vector<int> parse_ints(const std::string& text, const char* option) {
    std::vector<int> out;
    try {
        out = tools::parse_lengths(text);
    } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("{} '{}': expected positive integers, e.g. 512,1k,2048", option, e.what()));
    }
    if (out.empty()) throw UsageError(fmt::format("{}: expected at least one value", option));
    return out;
}

std::vector<DType> parse_dtypes(const std::string& text) {
    std::vector<DType> out;
    for (const std::string& name : tools::split_list(text)) {
        try {
            out.push_back(parse_dtype(name));
        } catch (const InvalidArgument&) {
            throw UsageError(fmt::format("--dtype '{}': expected fp32, fp16 or bf16", name));
        }
    }
    if (out.empty()) throw UsageError("--dtype: expected fp32, fp16 or bf16");
    return out;
}

std::vector<bool> parse_causal(const std::string& text) {
    if (text == "both") return {false, true};
    if (text == "yes") return {true};
    if (text == "no") return {false};
    throw UsageError(fmt::format("--causal '{}': expected yes, no or both", text));
}

Layout parse_layout(const std::string& text) {
    if (text == "bshd") return Layout::bshd;
    if (text == "bhsd") return Layout::bhsd;
    throw UsageError(fmt::format("--layout '{}': expected bshd or bhsd", text));
}

// FlashAttention's protocol: 16k tokens per batch, heads * head_dim = 2048, seqlen 512 ... 16k.
constexpr int kPaperTokens = 16384;
constexpr int kPaperModelDim = 2048;
constexpr int kPaperSeqlens[] = {512, 1024, 2048, 4096, 8192, 16384};

// Decode steps against a KV cache: 32 query heads over 32 (MHA), 8 (GQA) or 1 (MQA) KV heads; one new token
// (no mask needed) or four (speculative decoding: causal among themselves).
constexpr int kDecodeHeadsQ = 32;
constexpr int kDecodeBatches[] = {1, 16, 64};
constexpr int kDecodeHeadsKv[] = {32, 8, 1};
constexpr int kDecodeSeqlensQ[] = {1, 4};
constexpr int kDecodeSeqlensK[] = {1024, 8192, 32768, 131072};

// The serving preset's packed prefill: 64k tokens in sequences of 1..8k.
constexpr int kServingVarlenTokens = 65536;
constexpr int kServingVarlenMax = 8192;

}  // namespace

std::vector<int> Problem::packed_lengths() const {
    std::vector<int> lengths;
    if (!varlen()) return lengths;
    const long long tokens = static_cast<long long>(batch) * seqlen_q;
    std::uint64_t state = 7;
    for (long long packed = 0; packed < tokens;) {
        const std::uint64_t z = splitmix64(state);
        const long long n = std::min<long long>(1 + static_cast<long long>(z % varlen_max), tokens - packed);
        lengths.push_back(static_cast<int>(n));
        packed += n;
    }
    return lengths;
}

ProblemClass Problem::problem_class() const {
    ProblemClass c{dtype, head_dim, causal, seqlen_q, seqlen_k, heads / heads_kv};
    if (varlen()) {
        const std::vector<int> lengths = packed_lengths();
        c.seqlen_q = c.seqlen_k = *std::max_element(lengths.begin(), lengths.end());
    }
    c.mods = ScoreMods{mods.window(), mods.softcap != 0.f, mods.alibi};
    c.paged = page_size > 0;
    c.varlen = varlen();
    return c;
}

namespace {

// Query-key pairs of one sequence that a sliding window (and the causal mask) leaves visible, row by row.
double visible_pairs(long long seqlen_q, long long seqlen_k, bool causal, const ProblemMods& mods) {
    double pairs = 0;
    for (long long i = 0; i < seqlen_q; ++i) {
        const long long diagonal = i + seqlen_k - seqlen_q;
        long long last = seqlen_k - 1;
        if (causal) last = std::min(last, diagonal);
        if (mods.window_right >= 0) last = std::min(last, diagonal + mods.window_right);
        const long long first = mods.window_left >= 0 ? std::max(0LL, diagonal - mods.window_left) : 0;
        pairs += static_cast<double>(std::max(0LL, last - first + 1));
    }
    return pairs;
}

}  // namespace

double Problem::flops() const {
    if (varlen()) {
        double pairs = 0;
        for (int n : packed_lengths()) pairs += visible_pairs(n, n, causal, mods);
        return 4.0 * heads * head_dim * pairs;
    }
    const double per_pair = 4.0 * batch * heads * head_dim;
    const double nq = seqlen_q, nk = seqlen_k;
    if (mods.window()) return per_pair * visible_pairs(seqlen_q, seqlen_k, causal, mods);
    if (decode() && causal && seqlen_q <= seqlen_k) return per_pair * (nq * nk - nq * (nq - 1) / 2);
    const double f = per_pair * nq * nk;
    return causal ? f / 2 : f;
}

double Problem::kv_bytes() const {
    double keys = seqlen_k;  // a left window bounds the keys any query row reads
    if (mods.window_left >= 0)
        keys = std::min(keys, double(mods.window_left) + seqlen_q + std::max(0, mods.window_right));
    return 2.0 * batch * heads_kv * keys * head_dim * double(element_size(dtype));
}

std::string Problem::label() const {
    const std::string h = heads_kv == heads ? fmt::format("H{}", heads) : fmt::format("H{}/kv{}", heads, heads_kv);
    std::string modifiers;
    if (mods.window()) modifiers += fmt::format(" window{},{}", mods.window_left, mods.window_right);
    if (mods.softcap != 0.f) modifiers += fmt::format(" softcap{:g}", mods.softcap);
    if (mods.alibi) modifiers += " alibi";
    if (page_size > 0) modifiers += fmt::format(" page{}{}", page_size, pages_in_order ? " ordered" : "");
    const std::string shape =
        varlen() ? fmt::format("varlen{}x1..{} T{}", packed_lengths().size(), varlen_max, 1LL * batch * seqlen_q)
                 : fmt::format("B{}", batch);
    return fmt::format("{} {} {} Nq{} Nk{} d{} {}{}{}", to_string(dtype), shape, h, seqlen_q, seqlen_k, head_dim,
                       causal ? "causal" : "full", layout == Layout::bhsd ? " bhsd" : "", modifiers);
}

void add_options(CLI::App& app, BenchOptions& o) {
    auto* shape = "Problem";
    auto* batch = app.add_option("--batch", o.batch, "batch size")->capture_default_str()->group(shape);
    auto* heads = app.add_option("--heads", o.heads, "query heads")->capture_default_str()->group(shape);
    app.add_option("--heads-kv", o.heads_kv,
                   "key/value heads (a divisor of --heads; default: = --heads; decode preset: 32, 8 and 1)")
        ->group(shape);
    auto* sq = app.add_option("--seqlen-q", o.seqlen_q, "query lengths, comma-separated (512,1k,...)")
                   ->capture_default_str()
                   ->group(shape);
    auto* sk =
        app.add_option("--seqlen-k", o.seqlen_k, "key lengths, comma-separated (default: = --seqlen-q)")->group(shape);
    app.add_option("--head-dim", o.head_dim, "head dimensions, comma-separated (default 128; paper preset: 64,128)")
        ->group(shape);
    o.dtype_option = app.add_option("--dtype", o.dtype, "element types, comma-separated: fp32, fp16, bf16")
                         ->capture_default_str()
                         ->group(shape);
    o.causal_option = app.add_option("--causal", o.causal, "causal mask: yes, no or both (paper preset: both)")
                          ->capture_default_str()
                          ->group(shape);
    app.add_option("--layout", o.layout, "memory layout: bshd ([batch, seq, heads, d]) or bhsd")
        ->capture_default_str()
        ->group(shape);
    app.add_option("--inputs", o.inputs,
                   "q, k, v drawn uniform in [-1, 1) or standard normal (the FlashAttention benchmarks' torch.randn)")
        ->check(CLI::IsMember({"uniform", "normal"}))
        ->capture_default_str()
        ->group(shape);
    app.add_option(
           "--preset", o.preset,
           "tutorial: B=1 H=96 N=512 d=128 (fp32 unless --dtype); paper: FlashAttention's protocol, "
           "batch*seqlen = 16k tokens, heads*head_dim = 2048, seqlen 512..16k, --head-dim default 64,128, "
           "causal both; decode: KV-cache decode steps, bf16 unless --dtype, d 128 unless --head-dim, "
           "B 1,16,64, 32 query heads over 32,8,1 KV heads (or --heads-kv), Nq 1 (full) and 4 (causal, "
           "or --causal for both), Nk 1k,8k,32k,128k, skipping shapes whose K+V exceed 24 GB; serving: the "
           "score modifiers models use, bf16 d 128 unless --dtype / --head-dim: prefill B1 N16k hidden 2048 "
           "plain, sliding window 4096 causal and 2048,2048, softcap 30, ALiBi (full and causal), causal on "
           "64-row pages, causal on 64k tokens packed into sequences of 1..8k and as a fixed batch at their mean "
           "length, and decode B16 H32/kv8 Nk 32k "
           "plain, with a 4096 window and on 16-row pages")
        ->check(CLI::IsMember({"tutorial", "paper", "decode", "serving"}))
        ->excludes(batch)
        ->excludes(heads)
        ->excludes(sq)
        ->excludes(sk)
        ->group(shape);

    const auto* mods = "Score modifiers (every problem; a preset's own rows keep theirs)";
    app.add_option("--window", o.window, "sliding window L,R: query i sees keys i+off-L .. i+off+R (-1: unbounded)")
        ->group(mods);
    app.add_option("--softcap", o.softcap, "logit soft-capping (0: off)")->check(CLI::NonNegativeNumber)->group(mods);
    app.add_flag("--alibi", o.alibi, "ALiBi bias with slopes 2^(-8 (h + 1) / heads)")->group(mods);
    app.add_option("--page-size", o.page_size,
                   "K / V in a paged cache of pages this long (a multiple of 16), in random order; 0: contiguous")
        ->check(CLI::NonNegativeNumber)
        ->group(mods);
    app.add_option("--page-order", o.page_order,
                   "random: the pages shuffled (fixed seed); ordered: page j of sequence b is page b * pages_per_seq "
                   "+ j, which isolates the paged kernel's cost from the scatter's")
        ->check(CLI::IsMember({"random", "ordered"}))
        ->group(mods);
    app.add_option("--varlen", o.varlen_max,
                   "pack each problem's batch x seqlen tokens without padding (cu_seqlens) into sequences of lengths "
                   "uniform in 1..N (fixed seed; needs --seqlen-k = --seqlen-q); 0: a fixed-length batch")
        ->check(CLI::NonNegativeNumber)
        ->group(mods);

    const auto* configs = "Tile configurations";
    auto* config = app.add_option("--config", o.config,
                                  "force one tile config: B_r x B_c w warps, e.g. 64x64w4 (fp32); fp16/bf16 add "
                                  "s stages, e.g. 128x64w4s2, and -wgmma for the Hopper kernel, e.g. 128x64w8s2-wgmma")
                       ->group(configs);
    const char* sweep_help =
        "measure every legal tile config (fa_jit::tile_configs); their kernels are compiled "
        "first, on every core, into the disk cache";
    auto* sweep = app.add_flag("--sweep", o.sweep, sweep_help)->excludes(config)->group(configs);
    app.add_option("--splits", o.splits,
                   "key splits of split-KV kernels (AttentionArgs::num_splits; default 0: the library chooses); "
                   "--sweep also tries 1,2,4,...,64 for tiles whose family splits")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 16))
        ->excludes(sweep)
        ->group(configs);
    app.add_flag("--save", o.save,
                 "with --sweep: record each problem's fastest correct config in the tuning file, which "
                 "attention() then uses on this GPU")
        ->needs(sweep)
        ->group(configs);

    const auto* measure = "Measurement";
    app.add_option("--reps", o.reps, "timed repetitions (the median is reported)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber)
        ->group(measure);
    app.add_option("--warmup", o.warmup, "untimed repetitions first")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber)
        ->group(measure);
    app.add_option("--warmup-ms", o.warmup_ms,
                   "then untimed calls for at least this many milliseconds (the GPU's clock settles under its power "
                   "limit within about a second; e.g. 3000 times the sustained rate)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 600e3))
        ->group(measure);
    app.add_flag("--no-check", o.no_check, "skip the correctness check against attention_reference (not advised)")
        ->group(measure);
    app.add_option("--device", o.device, "CUDA device ordinal")->capture_default_str()->group(measure);

    const auto* output = "Output";
    auto* json =
        app.add_flag("--json", o.json, "print one JSON object (device, rows) instead of tables")->group(output);
    app.add_flag("--csv", o.csv, "print the rows as CSV instead of tables, each as it finishes")
        ->excludes(json)
        ->group(output);
    app.add_flag("-q,--quiet", o.quiet, "no progress lines on stderr")->group(output);
}

namespace {

ProblemMods parse_mods(const BenchOptions& o) {
    ProblemMods m;
    if (!o.window.empty()) {
        const std::vector<std::string> sides = tools::split_list(o.window);
        bool ok = sides.size() == 2;
        for (std::size_t i = 0; ok && i < 2; ++i) {
            std::size_t used = 0;
            try {
                (i == 0 ? m.window_left : m.window_right) = std::stoi(sides[i], &used);
            } catch (const std::exception&) {
                used = 0;
            }
            ok = used == sides[i].size() && (i == 0 ? m.window_left : m.window_right) >= -1;
        }
        if (!ok) throw UsageError(fmt::format("--window '{}': expected L,R with each >= -1, e.g. 4096,0", o.window));
    }
    m.softcap = o.softcap;
    m.alibi = o.alibi;
    return m;
}

// Serving rows: prefill of 16k tokens (hidden 2048) with each modifier beside plain attention, and GQA decode
// against a 32k cache with and without a sliding window.
std::vector<Problem> serving_problems(const std::vector<DType>& dtypes, const std::vector<int>& dims, Layout layout) {
    std::vector<Problem> problems;
    const ProblemMods plain, window_causal{4096, 0}, window{2048, 2048}, softcap{-1, -1, 30.f},
        alibi{-1, -1, 0.f, true};
    for (DType dtype : dtypes)
        for (int d : dims) {
            if (kPaperModelDim % d != 0)
                throw UsageError(
                    fmt::format("--head-dim {}: the serving preset needs a divisor of {}", d, kPaperModelDim));
            const int heads = kPaperModelDim / d;
            const auto prefill = [&](bool causal, const ProblemMods& m) {
                problems.push_back({dtype, 1, heads, heads, kPaperTokens, kPaperTokens, d, causal, layout, m});
            };
            prefill(false, plain), prefill(true, plain);
            prefill(true, window_causal), prefill(false, window);
            prefill(false, softcap), prefill(true, softcap);
            prefill(false, alibi), prefill(true, alibi);
            prefill(true, plain);
            problems.back().page_size = 64;
            // 64k tokens packed into sequences of 1..8k, causal (a batch of prompts).
            problems.push_back({dtype, kServingVarlenTokens / kPaperTokens, heads, heads, kPaperTokens, kPaperTokens, d,
                                true, layout, plain});
            problems.back().varlen_max = kServingVarlenMax;
            // The same tokens as a fixed-length batch at the mean length: what the packed row is measured against.
            const int sequences = static_cast<int>(problems.back().packed_lengths().size());
            problems.push_back({dtype, sequences, heads, heads, kServingVarlenTokens / sequences,
                                kServingVarlenTokens / sequences, d, true, layout, plain});
            for (const ProblemMods& m : {plain, ProblemMods{4096, -1}})
                problems.push_back({dtype, 16, kDecodeHeadsQ, 8, 1, 32768, d, false, layout, m});
            problems.push_back({dtype, 16, kDecodeHeadsQ, 8, 1, 32768, d, false, layout, plain, 16});
        }
    return problems;
}

std::vector<Problem> make_plain_problems(const BenchOptions& o) {
    const Layout layout = parse_layout(o.layout);
    const std::vector<DType> dtypes = parse_dtypes(o.dtype);
    std::vector<Problem> problems;

    if (o.preset == "serving")
        return serving_problems(o.dtype_option->count() ? dtypes : std::vector<DType>{DType::bf16},
                                o.head_dim.empty() ? std::vector<int>{128} : parse_ints(o.head_dim, "--head-dim"),
                                layout);

    if (o.preset == "tutorial") {
        const std::vector<int> dims = o.head_dim.empty() ? std::vector<int>{128} : parse_ints(o.head_dim, "--head-dim");
        for (DType dtype : dtypes)
            for (int d : dims)
                for (bool causal : parse_causal(o.causal))
                    problems.push_back({dtype, 1, 96, 96, 512, 512, d, causal, layout});
        return problems;
    }
    if (o.preset == "decode") {
        const std::vector<DType> types = o.dtype_option->count() ? dtypes : std::vector<DType>{DType::bf16};
        const std::vector<int> dims = o.head_dim.empty() ? std::vector<int>{128} : parse_ints(o.head_dim, "--head-dim");
        std::vector<int> heads_kv(std::begin(kDecodeHeadsKv), std::end(kDecodeHeadsKv));
        if (o.heads_kv) {
            if (o.heads_kv < 0 || kDecodeHeadsQ % o.heads_kv != 0)
                throw UsageError(fmt::format("--heads-kv {}: the decode preset needs a divisor of its {} query heads",
                                             o.heads_kv, kDecodeHeadsQ));
            heads_kv = {o.heads_kv};
        }
        for (DType dtype : types)
            for (int d : dims)
                for (int b : kDecodeBatches)
                    for (int hkv : heads_kv)
                        for (int nq : kDecodeSeqlensQ) {
                            const std::vector<bool> causals =
                                o.causal_option->count() ? parse_causal(o.causal) : std::vector<bool>{nq > 1};
                            for (bool causal : causals)
                                for (int nk : kDecodeSeqlensK) {
                                    const Problem p{dtype, b, kDecodeHeadsQ, hkv, nq, nk, d, causal, layout};
                                    if (p.kv_bytes() <= kDecodeMaxKvBytes) problems.push_back(p);
                                }
                        }
        return problems;
    }
    if (o.preset == "paper") {
        const std::vector<int> dims =
            o.head_dim.empty() ? std::vector<int>{64, 128} : parse_ints(o.head_dim, "--head-dim");
        const std::vector<bool> causals = parse_causal(o.causal_option->count() ? o.causal : "both");
        for (DType dtype : dtypes)
            for (int d : dims) {
                if (kPaperModelDim % d != 0)
                    throw UsageError(
                        fmt::format("--head-dim {}: the paper preset needs a divisor of {}", d, kPaperModelDim));
                for (bool causal : causals)
                    for (int n : kPaperSeqlens) {
                        const int heads = kPaperModelDim / d;
                        problems.push_back({dtype, kPaperTokens / n, heads, heads, n, n, d, causal, layout});
                    }
            }
        return problems;
    }

    if (o.batch <= 0) throw UsageError(fmt::format("--batch {}: expected a positive batch size", o.batch));
    if (o.heads <= 0) throw UsageError(fmt::format("--heads {}: expected a positive head count", o.heads));
    const int heads_kv = o.heads_kv ? o.heads_kv : o.heads;
    if (heads_kv <= 0 || o.heads % heads_kv != 0)
        throw UsageError(fmt::format("--heads-kv {}: expected a divisor of --heads {}", heads_kv, o.heads));
    const std::vector<int> seqlens_q = parse_ints(o.seqlen_q, "--seqlen-q");
    const std::vector<int> seqlens_k = o.seqlen_k.empty() ? std::vector<int>{} : parse_ints(o.seqlen_k, "--seqlen-k");
    const std::vector<int> dims = o.head_dim.empty() ? std::vector<int>{128} : parse_ints(o.head_dim, "--head-dim");
    for (DType dtype : dtypes)
        for (int d : dims)
            for (bool causal : parse_causal(o.causal))
                for (int nq : seqlens_q)
                    for (int nk : seqlens_k.empty() ? std::vector<int>{nq} : seqlens_k)
                        problems.push_back({dtype, o.batch, o.heads, heads_kv, nq, nk, d, causal, layout});
    return problems;
}

}  // namespace

std::vector<Problem> make_problems(const BenchOptions& o) {
    std::vector<Problem> problems = make_plain_problems(o);
    const ProblemMods mods = parse_mods(o);
    if (o.page_size % 16 != 0)
        throw UsageError(fmt::format("--page-size {}: expected a multiple of 16 (0: contiguous)", o.page_size));
    if (o.preset != "serving")
        for (Problem& p : problems)
            p.mods = mods, p.page_size = o.page_size, p.pages_in_order = o.page_order == "ordered",
            p.varlen_max = o.varlen_max;
    for (const Problem& p : problems) {
        if (!p.varlen()) continue;
        if (p.seqlen_q != p.seqlen_k)
            throw UsageError(fmt::format("--varlen {}: packs self-attention; --seqlen-k {} differs from --seqlen-q {}",
                                         p.varlen_max, p.seqlen_k, p.seqlen_q));
        if (p.page_size > 0)
            throw UsageError(fmt::format("--varlen {} with --page-size {}: fa-jit-bench packs contiguous K / V only",
                                         p.varlen_max, p.page_size));
    }
    return problems;
}

InputDistribution input_distribution(const BenchOptions& o) {
    return o.inputs == "normal" ? InputDistribution::normal : InputDistribution::uniform;
}

std::optional<TileConfig> forced_config(const BenchOptions& o) {
    if (o.config.empty()) return std::nullopt;
    const std::optional<TileConfig> t = parse_tile_config(o.config);
    if (!t || t->block_m <= 0)
        throw UsageError(fmt::format(
            "--config '{}': expected B_r x B_c w warps, e.g. 64x64w4 (fp32), or with s stages, e.g. 128x64w4s2 "
            "(fp16/bf16) or 128x64w8s2-wgmma (fp16/bf16 on sm_90)",
            o.config));
    return t;
}

}  // namespace fa_jit::bench
