// The GPU tests' cases: a problem, its layout and options, run through attention() on poisoned outputs and checked
// against the float64 host reference with tolerances scaled to the dtype.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/element_types.hpp"
#include "common/parallel.hpp"
#include "fa_jit/cache.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/tuning.hpp"
#include "support/attention_reference.hpp"
#include "support/compile_jobs.hpp"

namespace fa_jit::testing {

enum class Layout { bshd, bhsd, padded };

// Score modifiers of a case (AttentionArgs' fields; alibi: slopes 2^(-8 (h + 1) / heads_q), uploaded).
struct Mods {
    int window_left = -1, window_right = -1;
    float softcap = 0.f;
    bool alibi = false;
    std::optional<float> scale;  // e.g. 1 instead of 1 / sqrt(d): large logits for softcap
};

struct Case {
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
    bool causal;
    Layout layout;
    TileConfig tile = {};
    std::vector<int> seqused_k = {};  // per-sequence KV lengths (uploaded; may be out of range: kernels clamp)
    int num_splits = 0;
    bool caller_workspace = false;  // pass a workspace of attention_workspace_size() bytes
    Mods mods = {};
    // Packed sequences: each sequence's query and key lengths (batch = their count; seqlen_q / seqlen_k above are the
    // bounds). Uploaded as prefix sums (cu_seqlens), the tensors packed as [total, heads, d] in `layout`'s row order.
    std::vector<int> seqlens_q = {}, seqlens_k = {};
    // A paged KV cache (page_size > 0; with packed queries, seqlens_k stays empty): K / V scattered into pages of
    // page_size rows in random order ([pages, page_size, heads_kv, d] in `layout`'s row order); every row no sequence
    // uses is NaN, and table entries past a sequence's used keys name no page. share_pages: odd sequences share their
    // predecessor's first pages (prefix sharing; the shared keys are made equal). corrupt: sequences whose first table
    // entry names a page past the end: their rows must come out O = 0, LSE = -inf.
    int page_size = 0;
    bool share_pages = false;
    std::vector<int> corrupt = {};
    int table_offset = 0;  // the block table starts this many ints into its (256-byte aligned) buffer
};

namespace detail {
// Set during with_kernels_precompiled's first pass: check_case adds the specialization it would launch here.
inline std::vector<AttentionKernelSpec>*& collected_specs() {
    static std::vector<AttentionKernelSpec>* specs = nullptr;
    return specs;
}
}  // namespace detail

inline std::string describe(const Case& c, DType dtype) {
    static const char* layouts[] = {"bshd", "bhsd", "padded"};
    std::string used;
    for (int u : c.seqused_k) used += (used.empty() ? "" : ",") + std::to_string(u);
    const Mods& m = c.mods;
    std::string packed;
    for (std::size_t b = 0; b < c.seqlens_q.size(); ++b)
        packed += c.seqlens_k.empty() ? fmt::format("{}{}", b ? "," : " varlen=", c.seqlens_q[b])
                                      : fmt::format("{}{}/{}", b ? "," : " varlen=", c.seqlens_q[b], c.seqlens_k[b]);
    const std::string mods =
        packed + fmt::format(" window=({}, {}) softcap={} alibi={} scale={}", m.window_left, m.window_right, m.softcap,
                             m.alibi, m.scale ? std::to_string(*m.scale) : "default");
    const std::string paged = c.page_size
                                  ? fmt::format(" page_size={}{} corrupt={} table_offset={}", c.page_size,
                                                c.share_pages ? " shared" : "", c.corrupt.size(), c.table_offset)
                                  : "";
    return fmt::format(
        "{} B={} Hq={} Hkv={} Nq={} Nk={} d={} causal={} layout={} tile={} seqused_k=[{}] splits={}{}{}{}",
        to_string(dtype), c.batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim, c.causal,
        layouts[int(c.layout)], c.tile.empty() ? "chosen" : c.tile.to_string(), used, c.num_splits,
        c.caller_workspace ? " caller workspace" : "", mods, paged);
}

// Padded: BHSD with every row 8 elements longer and every head 3 rows longer than needed (strides the kernels
// cannot assume away).
inline Strides strides_for(Layout layout, int seqlen, int heads, int d) {
    switch (layout) {
        case Layout::bshd:
            return Strides::bshd(seqlen, heads, d);
        case Layout::bhsd:
            return Strides::bhsd(seqlen, heads, d);
        case Layout::padded: {
            const std::int64_t row = d + 8, head = (seqlen + 3) * row;
            return {heads * head, head, row};
        }
    }
    return {};
}

inline std::size_t elements(const Strides& s, int batch) {
    return static_cast<std::size_t>(s.batch) * batch;
}

struct Errors {
    double max_abs = 0, rel_l2 = 0, lse_max_abs = 0;
    std::size_t not_finite = 0, lse_wrong_inf = 0;
};

// Error bounds against the float64 reference on the same (already rounded) inputs.
struct Tolerance {
    double rel_l2, max_abs, lse_max_abs;  // max_abs is scaled by max(1, max |O_ref|) for fp16/bf16
};
inline Tolerance tolerance(DType dtype) {
    // fp32 inputs, fp32-grade math (3xTF32): errors are a few ulps of the accumulations.
    if (dtype == DType::f32) return {2e-5, 2e-4, 1e-4};
    // fp16/bf16: P and O are rounded to the dtype (unit roundoff u = 2^-11, 2^-8). Measured on an H200: max error
    // <= 1.2 u * max |O|; the L2 error is a fraction of u. Scores and LSE stay fp32.
    const double u = dtype == DType::f16 ? 1.0 / 2048 : 1.0 / 256;
    return {u, 4 * u, 1e-4};
}

// Normal random values, rounded to `dtype`: the reference then sees exactly the kernel's inputs.
inline std::vector<float> random_tensor(std::size_t n, DType dtype, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> t(n);
    for (float& x : t) x = normal(rng);
    return tools::decode(tools::encode(t, dtype), dtype);
}

inline DeviceBuffer upload(const std::vector<float>& values, DType dtype) {
    const std::string bytes = tools::encode(values, dtype);
    DeviceBuffer buffer(bytes.size());
    buffer.upload(bytes.data(), bytes.size());
    return buffer;
}

// Moves the case's K / V (host copies k and v, laid out as a.k_strides over a.batch sequences) into pages: fills
// k_pages / v_pages ([pages, page_size, heads_kv, d]), uploads the block table to `table`, and points `a` at the
// pages (a.k / a.v are set by the caller). Returns the keys the reference gives each sequence: seqused_k (clamped),
// and 0 for the corrupt sequences.
inline std::vector<int> scatter_pages(const Case& c, AttentionArgs& a, std::vector<float>& k, std::vector<float>& v,
                                      std::vector<float>& k_pages, std::vector<float>& v_pages, DeviceBuffer& table,
                                      std::mt19937& rng) {
    const int ps = c.page_size, batch = a.batch;
    const int needed = (c.seqlen_k + ps - 1) / ps;
    const int per_seq = needed + 1;  // one entry more than any sequence uses: it holds garbage
    std::vector<int> used(batch);
    for (int b = 0; b < batch; ++b)
        used[b] = c.seqused_k.empty() ? c.seqlen_k : std::clamp(c.seqused_k[b], 0, c.seqlen_k);
    const int num_pages = batch * needed + 3;  // spare pages stay NaN
    std::vector<int> order(num_pages);
    for (int i = 0; i < num_pages; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int> entries(static_cast<std::size_t>(batch) * per_seq, -7);
    const Strides from = a.k_strides, to = strides_for(c.layout, ps, c.heads_kv, c.head_dim);
    const auto row_at = [&](const Strides& s, int b, int h, int r) { return b * s.batch + h * s.head + r * s.row; };
    int next = 0;
    for (int b = 0; b < batch; ++b) {
        int shared = 0;  // pages taken from sequence b - 1: whole pages both sequences use
        if (c.share_pages && b % 2 == 1) shared = std::min(needed / 2, std::min(used[b], used[b - 1]) / ps);
        for (int j = 0; j * ps < used[b]; ++j) {
            entries[b * per_seq + j] = j < shared ? entries[(b - 1) * per_seq + j] : order[next++];
            if (j >= shared) continue;
            for (int h = 0; h < c.heads_kv; ++h)  // the shared keys are b - 1's
                for (int r = j * ps; r < (j + 1) * ps; ++r)
                    for (int d = 0; d < c.head_dim; ++d) {
                        k[row_at(from, b, h, r) + d] = k[row_at(from, b - 1, h, r) + d];
                        v[row_at(from, b, h, r) + d] = v[row_at(from, b - 1, h, r) + d];
                    }
        }
    }
    const std::size_t n = elements(to, num_pages);
    k_pages.assign(n, std::numeric_limits<float>::quiet_NaN());
    v_pages.assign(n, std::numeric_limits<float>::quiet_NaN());
    for (int b = 0; b < batch; ++b)
        for (int h = 0; h < c.heads_kv; ++h)
            for (int r = 0; r < used[b]; ++r) {
                const int page = entries[b * per_seq + r / ps];
                for (int d = 0; d < c.head_dim; ++d) {
                    k_pages[row_at(to, page, h, r % ps) + d] = k[row_at(from, b, h, r) + d];
                    v_pages[row_at(to, page, h, r % ps) + d] = v[row_at(from, b, h, r) + d];
                }
            }
    for (int b : c.corrupt) {
        entries[b * per_seq] = num_pages + 5;
        used[b] = 0;
    }
    entries.insert(entries.begin(), c.table_offset, -9);
    table = DeviceBuffer(entries.size() * sizeof(int));
    table.upload(entries.data(), entries.size() * sizeof(int));
    a.block_table = static_cast<const int*>(table.get()) + c.table_offset;
    a.page_size = ps, a.num_pages = num_pages, a.pages_per_seq = per_seq;
    a.k_strides = a.v_strides = to;
    return used;
}

inline void check_case(const Case& c, DType dtype, std::mt19937& rng) {
    INFO(describe(c, dtype));
    AttentionArgs a;
    a.dtype = dtype;
    a.batch = c.batch, a.heads_q = c.heads_q, a.heads_kv = c.heads_kv;
    a.seqlen_q = c.seqlen_q, a.seqlen_k = c.seqlen_k, a.head_dim = c.head_dim, a.causal = c.causal;
    a.q_strides = a.o_strides = strides_for(c.layout, c.seqlen_q, c.heads_q, c.head_dim);
    a.k_strides = a.v_strides = strides_for(c.layout, c.seqlen_k, c.heads_kv, c.head_dim);
    std::size_t nq = elements(a.q_strides, c.batch), nk = elements(a.k_strides, c.batch);
    // Packed sequences: one batch of total rows, the batch strides unused (zero).
    const bool varlen = !c.seqlens_q.empty();
    PackedSequences packed;
    int rows_q = c.seqlen_q, batches = c.batch;  // the rows and batches of O and LSE as stored
    const bool paged = c.page_size > 0;
    if (varlen) {  // paged: packed queries against keys in batches
        REQUIRE(c.seqlens_k.size() == (paged ? 0 : c.seqlens_q.size()));
        a.batch = static_cast<int>(c.seqlens_q.size());
        packed.cu_q = {0};
        for (int len : c.seqlens_q) packed.cu_q.push_back(packed.cu_q.back() + len);
        a.total_q = packed.cu_q.back();
        const Strides sq = strides_for(c.layout, a.total_q, c.heads_q, c.head_dim);
        nq = elements(sq, 1);
        a.q_strides = a.o_strides = {0, sq.head, sq.row};
        rows_q = a.total_q, batches = 1;
        if (!paged) {
            packed.cu_k = {0};
            for (int len : c.seqlens_k) packed.cu_k.push_back(packed.cu_k.back() + len);
            a.total_k = packed.cu_k.back();
            const Strides sk = strides_for(c.layout, a.total_k, c.heads_kv, c.head_dim);
            nk = elements(sk, 1);
            a.k_strides = a.v_strides = {0, sk.head, sk.row};
        } else {
            nk = elements(a.k_strides, a.batch);
        }
    }
    const auto q = random_tensor(nq, dtype, rng);
    auto k = random_tensor(std::max<std::size_t>(nk, 1), dtype, rng),
         v = random_tensor(std::max<std::size_t>(nk, 1), dtype, rng);
    if (!paged && !varlen && !c.seqused_k.empty()) {  // a preallocated cache holds anything past the used keys
        for (int b = 0; b < c.batch; ++b)
            for (int h = 0; h < c.heads_kv; ++h)
                for (int r = std::clamp(c.seqused_k[b], 0, c.seqlen_k); r < c.seqlen_k; ++r)
                    for (int d = 0; d < c.head_dim; ++d) {
                        const std::size_t at = b * a.k_strides.batch + h * a.k_strides.head + r * a.k_strides.row + d;
                        k[at] = v[at] = std::numeric_limits<float>::quiet_NaN();
                    }
    }
    const std::size_t es = element_size(dtype);
    const AttentionArgs contiguous = a;       // K / V as the reference reads them
    std::vector<int> ref_used = c.seqused_k;  // the keys the reference gives each sequence
    DeviceBuffer dtable;
    std::vector<float> k_pages, v_pages;
    if (paged) ref_used = scatter_pages(c, a, k, v, k_pages, v_pages, dtable, rng);
    DeviceBuffer dq = upload(q, dtype), dk = upload(paged ? k_pages : k, dtype),
                 dv = upload(paged ? v_pages : v, dtype), do_(nq * es);
    const std::size_t n_lse = static_cast<std::size_t>(batches) * c.heads_q * rows_q;
    DeviceBuffer dlse(n_lse * 4);
    do_.fill_bytes(0xFF), dlse.fill_bytes(0xFF);  // NaN everywhere (fp32, fp16 and bf16): an unwritten element fails
    a.q = dq.get(), a.k = dk.get(), a.v = dv.get(), a.o = do_.get(), a.lse = static_cast<float*>(dlse.get());
    DeviceBuffer dused, workspace, dcu_q, dcu_k;
    if (varlen) {
        dcu_q = DeviceBuffer(packed.cu_q.size() * sizeof(int)), dcu_k = DeviceBuffer(packed.cu_k.size() * sizeof(int));
        dcu_q.upload(packed.cu_q.data(), packed.cu_q.size() * sizeof(int));
        dcu_k.upload(packed.cu_k.data(), packed.cu_k.size() * sizeof(int));
        a.cu_seqlens_q = static_cast<const int*>(dcu_q.get()), a.cu_seqlens_k = static_cast<const int*>(dcu_k.get());
    }
    if (!c.seqused_k.empty()) {
        REQUIRE(c.seqused_k.size() == static_cast<std::size_t>(a.batch));
        dused = DeviceBuffer(c.seqused_k.size() * sizeof(int));
        dused.upload(c.seqused_k.data(), c.seqused_k.size() * sizeof(int));
        a.seqused_k = static_cast<const int*>(dused.get());
    }
    a.num_splits = c.num_splits;
    a.window_left = c.mods.window_left, a.window_right = c.mods.window_right;
    a.softcap = c.mods.softcap;
    a.scale = c.mods.scale;
    std::vector<float> slopes;
    DeviceBuffer dslopes;
    if (c.mods.alibi) {
        for (int h = 0; h < c.heads_q; ++h) slopes.push_back(std::exp2(-8.0f * (h + 1) / c.heads_q));
        dslopes = DeviceBuffer(slopes.size() * sizeof(float));
        dslopes.upload(slopes.data(), slopes.size() * sizeof(float));
        a.alibi_slopes = static_cast<const float*>(dslopes.get());
    }
    if (c.caller_workspace) {
        const std::size_t bytes = attention_workspace_size(a);
        if (bytes > 0) {
            workspace = DeviceBuffer(bytes);
            workspace.fill_bytes(0xFF);
            a.workspace = workspace.get(), a.workspace_bytes = bytes;
        }
    }

    if (std::vector<AttentionKernelSpec>* specs = detail::collected_specs()) {  // collecting: launch nothing
        try {
            const AttentionKernelSpec spec = attention_spec(a, attention_choice(a, c.tile).tile);
            if (std::find(specs->begin(), specs->end(), spec) == specs->end()) specs->push_back(spec);
        } catch (const Error&) {  // refused: the second pass runs the case and reports it
        }
        return;
    }
    Stream stream;
    attention(a, stream.get(), c.tile);
    stream.synchronize();
    std::string o_bytes(nq * es, '\0');
    do_.download(o_bytes.data(), o_bytes.size());
    const std::vector<float> o = tools::decode(o_bytes, dtype);
    std::vector<float> lse(n_lse);
    dlse.download(lse.data(), n_lse * 4);

    std::vector<double> ref_o(nq, 0.0), ref_lse(n_lse);
    AttentionArgs ref = a;
    ref.k_strides = contiguous.k_strides, ref.v_strides = contiguous.v_strides;
    testing::reference_attention(ref, q, k, v, ref_o, ref_lse, ref_used, slopes, packed);

    Errors e;
    double diff2 = 0, ref2 = 0, ref_max = 0;
    for (int b = 0; b < batches; ++b)
        for (int h = 0; h < c.heads_q; ++h)
            for (int i = 0; i < rows_q; ++i)
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
            // Scores stay fp32: past |LSE| ~ 100 (logits that large) their rounding, about 16 ulps of the LSE
            // (2^-20 of it), outgrows the absolute bound, which then scales with the LSE.
            const double scale = std::max(1.0, std::abs(ref_lse[i]) * 0x1p-20 / tolerance(dtype).lse_max_abs);
            e.lse_max_abs = std::max(e.lse_max_abs, std::abs(lse[i] - ref_lse[i]) / scale);
        }
    }
    INFO(
        fmt::format("max |O - ref| = {:.3g} (max |ref| {:.3g}), rel L2 = {:.3g}, max |LSE - ref| (scaled) = {:.3g}, "
                    "non-finite = {}, LSE -inf mismatches = {}",
                    e.max_abs, ref_max, e.rel_l2, e.lse_max_abs, e.not_finite, e.lse_wrong_inf));
    const Tolerance tol = tolerance(dtype);
    CHECK(e.not_finite == 0);
    CHECK(e.lse_wrong_inf == 0);
    CHECK(e.rel_l2 < tol.rel_l2);
    CHECK(e.max_abs < tol.max_abs * (dtype == DType::f32 ? 1.0 : std::max(1.0, ref_max)));
    CHECK(e.lse_max_abs < tol.lse_max_abs);
}

// A test whose cases force many tiles spent most of its time in NVRTC, each kernel compiled as its first case
// launched, one at a time. with_kernels_precompiled(body) runs body twice. The first pass only collects the
// specialization each check_case would launch (arguments built and buffers uploaded; nothing launched or checked).
// Their kernels are then compiled into the disk cache on test_threads() threads (FA_JIT_TEST_THREADS, else every
// core), as fa-jit-bench --sweep does, and the second pass runs the cases on the cached binaries. body makes its own
// random generator, so both passes build the same cases. Without a usable disk cache there is one pass, which
// compiles as it goes.
template <class Body>
std::vector<AttentionKernelSpec> specs_launched_by(const Body& body) {
    std::vector<AttentionKernelSpec> specs;
    detail::collected_specs() = &specs;
    try {
        body();
    } catch (...) {
        detail::collected_specs() = nullptr;
        throw;
    }
    detail::collected_specs() = nullptr;
    return specs;
}

template <class Body>
void with_kernels_precompiled(const Body& body) {
    if (cache::DiskCache::instance().usable()) {
        const std::vector<AttentionKernelSpec> specs = specs_launched_by(body);
        const DeviceInfo& device = current_device();
        const std::string arch = attention_arch(target_arch(device.cc_major, device.cc_minor));
        tools::parallel_for(specs.size(), test_threads(), [&](std::size_t i) {
            try {
                cache::compile_into_cache(attention_compile_request(specs[i], arch));
            } catch (const std::exception&) {  // the second pass reports it
            }
        });
    }
    body();
}

// The first tile of every family that serves `problem` on a GPU of compute capability `cc`, in family order.
inline std::vector<TileConfig> tile_per_family(const ProblemClass& problem, int cc) {
    std::vector<TileConfig> tiles;
    std::vector<std::string> families;
    for (const TileConfig& tile : tile_configs(problem, cc)) {
        const std::string family = AttentionKernelSpec{problem.dtype, problem.head_dim, problem.causal, tile}.family();
        if (std::find(families.begin(), families.end(), family) != families.end()) continue;
        families.push_back(family);
        tiles.push_back(tile);
    }
    return tiles;
}

// The fp16/bf16 kernel serves head dims that are multiples of 8; the others are refused before the GPU.
inline void check_case_all_dtypes(const Case& c, std::mt19937& rng) {
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

}  // namespace fa_jit::testing
