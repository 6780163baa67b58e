#include "workspace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/element_types.hpp"

namespace fa_jit::bench {
namespace {

// splitmix64: fast and good enough for test data. Uniform in [-1, 1) (never all zeros, which would hide bugs), or
// standard normal by Box-Muller on pairs of uniforms in (0, 1].
std::vector<float> random_values(std::size_t n, std::uint64_t seed, InputDistribution inputs) {
    std::vector<float> out(n);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    const auto unit = [&] { return static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53; };  // (0, 1]
    if (inputs == InputDistribution::normal) {
        constexpr double kTwoPi = 6.283185307179586;
        for (std::size_t i = 0; i < n; i += 2) {
            const double r = std::sqrt(-2.0 * std::log(unit())), t = kTwoPi * unit();
            out[i] = static_cast<float>(r * std::cos(t));
            if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(t));
        }
        return out;
    }
    for (auto& v : out) {
        const std::uint64_t z = splitmix64(state);
        v = static_cast<float>(static_cast<double>(z >> 40) / double(1ull << 23) - 1.0);
    }
    return out;
}

// Buffers longer than this many elements repeat their first kRandomPeriod values (generating tens of GB on the host
// would take minutes). The period is a prime, so that no two rows of one head's K or V are alike: rows j and j' of a
// [seqlen, heads, head_dim] or [heads, seqlen, head_dim] tensor are equal only when the prime divides
// (j - j') * row stride, i.e. (j - j') is a multiple of it, and no sequence is that long (2^26 - 5 keys).
constexpr std::size_t kRandomPeriod = 67108859;

DeviceBuffer upload_random(std::size_t n, DType dtype, std::uint64_t seed, InputDistribution inputs) {
    const std::string bytes = tools::encode(random_values(std::min(n, kRandomPeriod), seed, inputs), dtype);
    const std::size_t es = element_size(dtype);
    DeviceBuffer buffer(n * es);
    for (std::size_t done = 0; done < n * es; done += bytes.size())
        buffer.upload(bytes.data(), std::min(bytes.size(), n * es - done), done);
    return buffer;
}

}  // namespace

Workspace::Workspace(const Problem& p, InputDistribution inputs) : problem_(p) {
    const std::size_t es = element_size(p.dtype);
    q_elems_ = std::size_t(p.batch) * p.heads * p.seqlen_q * p.head_dim;
    kv_elems_ = std::size_t(p.batch) * p.heads_kv * p.seqlen_k * p.head_dim;
    if (p.page_size > 0) {  // the sequences' pages in a random order (fixed seed) or in order, page_size rows each
        pages_per_seq_ = std::max(1, (p.seqlen_k + p.page_size - 1) / p.page_size);
        num_pages_ = p.batch * pages_per_seq_;
        kv_elems_ = std::size_t(num_pages_) * p.page_size * p.heads_kv * p.head_dim;
        std::vector<int> table(num_pages_);
        for (int i = 0; i < num_pages_; ++i) table[i] = i;
        std::mt19937 rng(42);
        if (!p.pages_in_order) std::shuffle(table.begin(), table.end(), rng);
        block_table_ = DeviceBuffer(table.size() * sizeof(int));
        block_table_.upload(table.data(), table.size() * sizeof(int));
    }
    if (p.varlen()) {  // the same tokens, packed: [total, heads, d] (bhsd: [heads, total, d]), LSE [heads, total]
        const std::vector<int> lengths = p.packed_lengths();
        std::vector<int> cu{0};
        for (int n : lengths) cu.push_back(cu.back() + n);
        sequences_ = static_cast<int>(lengths.size());
        max_length_ = *std::max_element(lengths.begin(), lengths.end());
        cu_seqlens_ = DeviceBuffer(cu.size() * sizeof(int));
        cu_seqlens_.upload(cu.data(), cu.size() * sizeof(int));
    }
    lse_elems_ = std::size_t(p.batch) * p.heads * p.seqlen_q;
    set_bytes_ = (q_elems_ + 2 * kv_elems_) * es;

    std::size_t sets = (kRotationTargetBytes + set_bytes_ - 1) / set_bytes_;
    sets = std::clamp<std::size_t>(sets, 1, kMaxInputSets);
    while (sets > 1 && sets * set_bytes_ > kRotationMaxBytes) --sets;
    for (std::size_t s = 0; s < sets; ++s) {
        const std::uint64_t seed = 1000 + 3 * s;
        sets_.push_back({upload_random(q_elems_, p.dtype, seed, inputs),
                         upload_random(kv_elems_, p.dtype, seed + 1, inputs),
                         upload_random(kv_elems_, p.dtype, seed + 2, inputs)});
    }
    o_ = DeviceBuffer(q_elems_ * es);
    lse_ = DeviceBuffer(lse_elems_ * sizeof(float));
    ref_o_ = DeviceBuffer(q_elems_ * es);
    ref_lse_ = DeviceBuffer(lse_elems_ * sizeof(float));
    if (p.mods.alibi) {
        std::vector<float> slopes(p.heads);
        for (int h = 0; h < p.heads; ++h) slopes[h] = std::exp2(-8.0f * (h + 1) / p.heads);
        alibi_slopes_ = DeviceBuffer(slopes.size() * sizeof(float));
        alibi_slopes_.upload(slopes.data(), slopes.size() * sizeof(float));
    }
}

AttentionArgs Workspace::base_args() const {
    AttentionArgs a;
    a.dtype = problem_.dtype;
    a.batch = problem_.batch;
    a.heads_q = problem_.heads;
    a.heads_kv = problem_.heads_kv;
    a.seqlen_q = problem_.seqlen_q;
    a.seqlen_k = problem_.seqlen_k;
    a.head_dim = problem_.head_dim;
    a.causal = problem_.causal;
    a.window_left = problem_.mods.window_left, a.window_right = problem_.mods.window_right;
    a.softcap = problem_.mods.softcap;
    if (problem_.mods.alibi) a.alibi_slopes = static_cast<const float*>(alibi_slopes_.get());
    if (problem_.layout == Layout::bshd)
        a.layout_bshd();
    else
        a.layout_bhsd();
    if (problem_.varlen()) {
        const int total = problem_.batch * problem_.seqlen_q;
        a.batch = sequences_;
        a.seqlen_q = a.seqlen_k = max_length_;
        a.cu_seqlens_q = a.cu_seqlens_k = static_cast<const int*>(cu_seqlens_.get());
        a.total_q = a.total_k = total;
        const auto packed = [&](int heads) {
            return problem_.layout == Layout::bshd ? Strides::bshd(total, heads, a.head_dim)
                                                   : Strides::bhsd(total, heads, a.head_dim);
        };
        a.q_strides = a.o_strides = packed(a.heads_q);
        a.k_strides = a.v_strides = packed(a.heads_kv);
    }
    if (problem_.page_size > 0) {  // [pages, page_size, heads_kv, d] (bhsd: [pages, heads_kv, page_size, d])
        a.block_table = static_cast<const int*>(block_table_.get());
        a.pages_per_seq = pages_per_seq_, a.num_pages = num_pages_, a.page_size = problem_.page_size;
        a.k_strides = a.v_strides = problem_.layout == Layout::bshd
                                        ? Strides::bshd(a.page_size, a.heads_kv, a.head_dim)
                                        : Strides::bhsd(a.page_size, a.heads_kv, a.head_dim);
    }
    return a;
}

AttentionArgs Workspace::args(std::size_t set) const {
    AttentionArgs a = base_args();
    const Inputs& in = sets_[set % sets_.size()];
    a.q = in.q.get();
    a.k = in.k.get();
    a.v = in.v.get();
    a.o = o_.get();
    a.lse = static_cast<float*>(lse_.get());
    return a;
}

AttentionArgs Workspace::reference_args() const {
    AttentionArgs a = args(0);
    a.o = ref_o_.get();
    a.lse = static_cast<float*>(ref_lse_.get());
    return a;
}

void Workspace::poison_outputs() {
    o_.fill_bytes(0xFF);
    lse_.fill_bytes(0xFF);
}

HostOutput Workspace::download(const DeviceBuffer& o, const DeviceBuffer& lse) const {
    std::string bytes(o.size(), '\0');
    o.download(bytes.data(), bytes.size());
    HostOutput out{tools::decode(bytes, problem_.dtype), std::vector<float>(lse_elems_)};
    lse.download(out.lse.data(), lse_elems_ * sizeof(float));
    return out;
}

HostOutput Workspace::download_output() const {
    return download(o_, lse_);
}
HostOutput Workspace::download_reference() const {
    return download(ref_o_, ref_lse_);
}

}  // namespace fa_jit::bench
