// attention() on a GPU against a float64 host reference, over shapes no tile divides, GQA/MQA, causal both ways,
// BSHD, BHSD and padded strides, head dims 16..256 (powers of two or not), in fp32, fp16 and bf16. Outputs are
// poisoned before each run.
#include "common/element_types.hpp"
#include "fa_jit/tuning.hpp"
#include "fa_jit/fa_jit.h"
#include "support/attention_reference.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace fa_jit;

namespace {

enum class Layout { bshd, bhsd, padded };

struct Case {
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
    bool causal;
    Layout layout;
    TileConfig tile = {};
};

std::string describe(const Case& c, DType dtype) {
    static const char* layouts[] = {"bshd", "bhsd", "padded"};
    return fmt::format("{} B={} Hq={} Hkv={} Nq={} Nk={} d={} causal={} layout={} tile={}", to_string(dtype), c.batch,
                       c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim, c.causal, layouts[int(c.layout)],
                       c.tile.empty() ? "chosen" : c.tile.to_string());
}

// Padded: BHSD with every row 8 elements longer and every head 3 rows longer than needed (strides the kernels
// cannot assume away).
Strides strides_for(Layout layout, int seqlen, int heads, int d) {
    switch (layout) {
        case Layout::bshd: return Strides::bshd(seqlen, heads, d);
        case Layout::bhsd: return Strides::bhsd(seqlen, heads, d);
        case Layout::padded: {
            const std::int64_t row = d + 8, head = (seqlen + 3) * row;
            return {heads * head, head, row};
        }
    }
    return {};
}

std::size_t elements(const Strides& s, int batch) { return static_cast<std::size_t>(s.batch) * batch; }

struct Errors {
    double max_abs = 0, rel_l2 = 0, lse_max_abs = 0;
    std::size_t not_finite = 0, lse_wrong_inf = 0;
};

// Error bounds against the float64 reference on the same (already rounded) inputs.
struct Tolerance {
    double rel_l2, max_abs, lse_max_abs;  // max_abs is scaled by max(1, max |O_ref|) for fp16/bf16
};
Tolerance tolerance(DType dtype) {
    // fp32 inputs, fp32-grade math (3xTF32): errors are a few ulps of the accumulations.
    if (dtype == DType::f32) return {2e-5, 2e-4, 1e-4};
    // fp16/bf16: P and O are rounded to the dtype (unit roundoff u = 2^-11, 2^-8). Measured on an H200: max error
    // <= 1.2 u * max |O|; the L2 error is a fraction of u. Scores and LSE stay fp32.
    const double u = dtype == DType::f16 ? 1.0 / 2048 : 1.0 / 256;
    return {u, 4 * u, 1e-4};
}

// Normal random values, rounded to `dtype`: the reference then sees exactly the kernel's inputs.
std::vector<float> random_tensor(std::size_t n, DType dtype, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> t(n);
    for (float& x : t) x = normal(rng);
    return tools::decode(tools::encode(t, dtype), dtype);
}

DeviceBuffer upload(const std::vector<float>& values, DType dtype) {
    const std::string bytes = tools::encode(values, dtype);
    DeviceBuffer buffer(bytes.size());
    buffer.upload(bytes.data(), bytes.size());
    return buffer;
}

void check_case(const Case& c, DType dtype, std::mt19937& rng) {
    INFO(describe(c, dtype));
    AttentionArgs a;
    a.dtype = dtype;
    a.batch = c.batch, a.heads_q = c.heads_q, a.heads_kv = c.heads_kv;
    a.seqlen_q = c.seqlen_q, a.seqlen_k = c.seqlen_k, a.head_dim = c.head_dim, a.causal = c.causal;
    a.q_strides = a.o_strides = strides_for(c.layout, c.seqlen_q, c.heads_q, c.head_dim);
    a.k_strides = a.v_strides = strides_for(c.layout, c.seqlen_k, c.heads_kv, c.head_dim);

    const std::size_t nq = elements(a.q_strides, c.batch), nk = elements(a.k_strides, c.batch);
    const auto q = random_tensor(nq, dtype, rng), k = random_tensor(std::max<std::size_t>(nk, 1), dtype, rng),
               v = random_tensor(std::max<std::size_t>(nk, 1), dtype, rng);
    const std::size_t es = element_size(dtype);
    DeviceBuffer dq = upload(q, dtype), dk = upload(k, dtype), dv = upload(v, dtype), do_(nq * es);
    const std::size_t n_lse = static_cast<std::size_t>(c.batch) * c.heads_q * c.seqlen_q;
    DeviceBuffer dlse(n_lse * 4);
    do_.fill_bytes(0xFF), dlse.fill_bytes(0xFF);  // NaN everywhere (fp32, fp16 and bf16): an unwritten element fails
    a.q = dq.get(), a.k = dk.get(), a.v = dv.get(), a.o = do_.get(), a.lse = static_cast<float*>(dlse.get());

    Stream stream;
    attention(a, stream.get(), c.tile);
    stream.synchronize();
    std::string o_bytes(nq * es, '\0');
    do_.download(o_bytes.data(), o_bytes.size());
    const std::vector<float> o = tools::decode(o_bytes, dtype);
    std::vector<float> lse(n_lse);
    dlse.download(lse.data(), n_lse * 4);

    std::vector<double> ref_o(nq, 0.0), ref_lse(n_lse);
    testing::reference_attention(a, q, k, v, ref_o, ref_lse);

    Errors e;
    double diff2 = 0, ref2 = 0, ref_max = 0;
    for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads_q; ++h)
            for (int i = 0; i < c.seqlen_q; ++i)
                for (int d = 0; d < c.head_dim; ++d) {
                    const std::size_t at = b * a.o_strides.batch + h * a.o_strides.head + i * a.o_strides.row + d;
                    if (!std::isfinite(o[at])) {
                        ++e.not_finite;
                        continue;
                    }
                    const double diff = o[at] - ref_o[at];
                    ref_max = std::max(ref_max, std::abs(ref_o[at]));
                    e.max_abs = std::max(e.max_abs, std::abs(diff));
                    diff2 += diff * diff, ref2 += ref_o[at] * ref_o[at];
                }
    e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    for (std::size_t i = 0; i < n_lse; ++i) {
        if (std::isinf(ref_lse[i])) {
            if (!(std::isinf(lse[i]) && lse[i] < 0)) ++e.lse_wrong_inf;
        } else if (!std::isfinite(lse[i])) {
            ++e.not_finite;
        } else {
            e.lse_max_abs = std::max(e.lse_max_abs, std::abs(lse[i] - ref_lse[i]));
        }
    }
    INFO(fmt::format("max |O - ref| = {:.3g} (max |ref| {:.3g}), rel L2 = {:.3g}, max |LSE - ref| = {:.3g}, "
                     "non-finite = {}, LSE -inf mismatches = {}",
                     e.max_abs, ref_max, e.rel_l2, e.lse_max_abs, e.not_finite, e.lse_wrong_inf));
    const Tolerance tol = tolerance(dtype);
    CHECK(e.not_finite == 0);
    CHECK(e.lse_wrong_inf == 0);
    CHECK(e.rel_l2 < tol.rel_l2);
    CHECK(e.max_abs < tol.max_abs * (dtype == DType::f32 ? 1.0 : std::max(1.0, ref_max)));
    CHECK(e.lse_max_abs < tol.lse_max_abs);
}

// The fp16/bf16 kernel serves head dims that are multiples of 8; the others are refused before the GPU.
void check_case_all_dtypes(const Case& c, std::mt19937& rng) {
    check_case(c, DType::f32, rng);
    for (DType dtype : {DType::f16, DType::bf16}) {
        if (c.head_dim % 8 == 0) {
            check_case(c, dtype, rng);
        } else {
            AttentionArgs a;
            a.dtype = dtype, a.batch = c.batch, a.heads_q = c.heads_q, a.heads_kv = c.heads_kv;
            a.seqlen_q = c.seqlen_q, a.seqlen_k = c.seqlen_k, a.head_dim = c.head_dim;
            CHECK_THROWS_WITH(attention(a, nullptr), Catch::Contains("'head_dim'"));
        }
    }
}

}  // namespace

TEST_CASE("attention matches a float64 reference over a grid of shapes in fp32, fp16 and bf16", "[attention]") {
    current_device();
    std::mt19937 rng(2026);
    const std::vector<Case> cases = {
        {1, 1, 1, 1, 1, 16, false, Layout::bhsd},
        {2, 3, 3, 77, 77, 64, false, Layout::bshd},
        {2, 4, 2, 100, 300, 64, true, Layout::bhsd},    // GQA; causal with Nq < Nk
        {1, 2, 1, 300, 100, 128, true, Layout::bshd},   // MQA; causal with Nq > Nk: the first 200 rows see no key
        {1, 8, 1, 129, 257, 96, false, Layout::padded},
        {3, 2, 2, 513, 513, 128, true, Layout::bhsd},
        {1, 2, 2, 200, 333, 256, false, Layout::bshd},
        {1, 2, 2, 190, 190, 256, true, Layout::padded},
        {1, 3, 3, 65, 65, 40, true, Layout::bhsd},
        {1, 2, 2, 70, 90, 72, false, Layout::bshd},
        {1, 2, 1, 111, 64, 160, true, Layout::bshd},
        {1, 2, 2, 64, 200, 192, false, Layout::padded},
        {1, 1, 1, 33, 47, 7, false, Layout::bhsd},      // head_dim below 16 and odd: 4-byte copies
        {1, 2, 2, 20, 0, 64, false, Layout::bshd},      // no keys at all: O = 0, LSE = -inf
        {4, 64, 8, 64, 64, 32, false, Layout::bhsd},    // 256 (batch, head) pairs
        {2, 96, 96, 40, 40, 16, true, Layout::bshd},    // 192 pairs, tiny head dim
        {1, 2, 2, 64, 8192, 64, false, Layout::bhsd},   // many keys: accumulation error must not grow with seqlen_k
        {1, 2, 1, 48, 6000, 128, true, Layout::bshd},
        {2, 4, 2, 256, 512, 128, true, Layout::bhsd},   // every tile divides both lengths: no bounds checks
        {1, 4, 4, 128, 128, 64, false, Layout::padded},
        {1, 2, 2, 512, 512, 256, false, Layout::bshd},
    };
    for (const Case& c : cases) check_case_all_dtypes(c, rng);
}

// A few shapes that together reach every code path (edges, causal both ways, GQA, odd head dims, no keys), small
// enough to run under compute-sanitizer memcheck and racecheck (scripts/gpu-check).
TEST_CASE("attention on the sanitizer subset", "[attention][sanitize]") {
    current_device();
    std::mt19937 rng(11);
    const std::vector<Case> cases = {
        {1, 2, 1, 70, 45, 64, true, Layout::bshd},     // Nq > Nk causal: rows without keys
        {1, 2, 2, 45, 70, 128, true, Layout::bhsd},    // Nq < Nk causal
        {1, 2, 1, 33, 47, 7, false, Layout::padded},   // 4-byte copies
        {1, 1, 1, 40, 90, 256, false, Layout::bshd},
        {1, 1, 1, 10, 0, 32, false, Layout::bshd},
        {1, 2, 2, 128, 192, 96, true, Layout::bhsd},   // fp16/bf16 without bounds checks
    };
    for (const Case& c : cases) check_case_all_dtypes(c, rng);
}

TEST_CASE("every tile configuration of a head dim computes the same function", "[attention]") {
    current_device();
    std::mt19937 rng(7);
    for (bool causal : {false, true})
        for (const TileConfig& tile : tile_configs(DType::f32, 64)) {
            if (tile.block_m > 64 && tile.warps < 4) continue;  // slow and never chosen; still compiled in CI
            check_case({1, 2, 2, 150, 170, 64, causal, Layout::bshd, tile}, DType::f32, rng);
        }
    // fp16/bf16 (both kernel families where the GPU runs them): the bounds-checked variant on ragged lengths, the
    // unchecked one on lengths every tile divides.
    const int cc = current_device().cc();
    REQUIRE(tile_configs(DType::bf16, 64) == tile_configs(DType::f16, 64));
    for (const TileConfig& tile : tile_configs(DType::bf16, 64)) {
        if (!tile_runs_on(tile, cc)) continue;
        check_case({1, 2, 1, 150, 170, 64, true, Layout::bshd, tile}, DType::bf16, rng);
        check_case({1, 2, 2, 256, 384, 64, false, Layout::bhsd, tile}, DType::f16, rng);
    }
}

// On sm_90 attention() picks the wgmma kernel for head dims that are multiples of 64, so the shape grid above no
// longer reaches the mma.sync kernel there: run both families at those head dims, every wgmma tile included.
TEST_CASE("both fp16/bf16 kernels at the head dims the wgmma kernel serves", "[attention]") {
    const int cc = current_device().cc();
    std::mt19937 rng(64);
    for (int d : {64, 128, 192, 256}) {
        std::vector<TileConfig> tiles = {default_tile_config(80, {DType::bf16, d, true, 4096, 4096})};  // mma.sync
        for (const TileConfig& tile : tile_configs(DType::bf16, d))
            if (tile.variant == "wgmma" && tile_runs_on(tile, cc)) tiles.push_back(tile);
        for (const TileConfig& tile : tiles) {
            check_case({1, 2, 1, 150, 170, d, true, Layout::bshd, tile}, DType::bf16, rng);
            check_case({2, 2, 2, 256, 384, d, false, Layout::bhsd, tile}, DType::f16, rng);
            check_case({1, 2, 2, 200, 130, d, true, Layout::padded, tile}, DType::f16, rng);  // Nq > Nk: empty rows
        }
    }
}

TEST_CASE("the C ABI runs attention and reports bad arguments", "[attention]") {
    current_device();
    const int n = 64, d = 32;
    DeviceBuffer q(n * d * 4), o(n * d * 4);
    std::vector<float> host(n * d, 0.25f);
    q.upload(host.data(), host.size() * 4);
    o.fill_bytes(0xFF);
    fa_jit_attention_args args;
    fa_jit_attention_args_init(&args);
    args.q = args.k = args.v = q.get();
    args.o = o.get();
    args.dtype = FA_JIT_F32;
    args.batch = args.heads_q = args.heads_kv = 1;
    args.seqlen_q = args.seqlen_k = n;
    args.head_dim = d;
    fa_jit_layout_bshd(&args);
    REQUIRE(fa_jit_attention(&args, nullptr) == FA_JIT_SUCCESS);
    synchronize();
    o.download(host.data(), host.size() * 4);
    // All values equal: attention returns v's rows averaged, i.e. 0.25 everywhere.
    CHECK(std::all_of(host.begin(), host.end(), [](float x) { return std::abs(x - 0.25f) < 1e-6f; }));

    args.heads_kv = 3;  // does not divide heads_q
    CHECK(fa_jit_attention(&args, nullptr) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::Contains("heads_kv"));
}
