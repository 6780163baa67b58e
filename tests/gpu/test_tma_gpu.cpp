// The Hopper copy primitives on a GPU (sm_90 only): a TMA box lands in the wgmma layout with zeros outside the
// tensor and goes back by TMA store, and a producer warp feeds consumer warps through a ring of mbarrier-guarded
// buffers. Both against the host's copy of the data, outputs poisoned first.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "fa_jit/jit.hpp"
#include "launch/tensor_map.hpp"

using namespace fa_jit;

namespace {

std::vector<std::uint16_t> random_u16(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> bits(0, 0xFFFE);  // 0xFFFF is the poison
    std::vector<std::uint16_t> v(n);
    for (auto& x : v) x = static_cast<std::uint16_t>(bits(rng));
    return v;
}

TensorMapDesc matrix(const DeviceBuffer& buffer, int rows, int cols, int box_rows) {
    TensorMapDesc d;
    d.base = buffer.get();
    d.rank = 2;
    d.dims[0] = static_cast<std::uint64_t>(cols), d.dims[1] = static_cast<std::uint64_t>(rows);
    d.strides_bytes[1] = static_cast<std::uint64_t>(cols) * 2;
    d.box[0] = 64, d.box[1] = static_cast<std::uint32_t>(box_rows);
    return d;
}

bool hopper() {
    if (current_device().cc_major >= 9) return true;
    WARN("TMA needs sm_90: not tested on this GPU");
    return false;
}

CompileRequest tma_request() {
    CompileRequest r;
    r.source = kernel_source("tma_sample.cu");
    r.name_expressions = {"fa_jit::tma_sample::box_roundtrip<64>", "fa_jit::tma_sample::ring_copy<64, 3>"};
    return r;
}

}  // namespace

TEST_CASE("a TMA box lands in the wgmma layout, zero-filled outside the tensor, and stores back", "[tma]") {
    if (!hopper()) return;
    constexpr int kRows = 200, kCols = 104, kBox = 64;  // 4 x 2 boxes, the last row and column of boxes partial
    constexpr int kOutRows = 256, kOutCols = 128;
    const auto in = random_u16(std::size_t{kRows} * kCols, 1);
    DeviceBuffer din(in.size() * 2), dout(std::size_t{kOutRows} * kOutCols * 2), dback(in.size() * 2);
    din.upload(in.data(), in.size() * 2);
    dout.fill_bytes(0xFF), dback.fill_bytes(0xFF);
    const CUtensorMap in_map = encode_tensor_map_16bit(matrix(din, kRows, kCols, kBox));
    const CUtensorMap back_map = encode_tensor_map_16bit(matrix(dback, kRows, kCols, kBox));
    const Kernel kernel = get_kernel(tma_request(), "fa_jit::tma_sample::box_roundtrip<64>", /*arch_specific=*/true);
    Stream stream;
    launch(kernel, {{2, 4}, {128}, kBox * 128 + 1024 + 8, stream.get()}, in_map, back_map, dout.get(), kOutCols);
    stream.synchronize();

    std::vector<std::uint16_t> out(std::size_t{kOutRows} * kOutCols), back(in.size());
    dout.download(out.data(), out.size() * 2);
    dback.download(back.data(), back.size() * 2);
    std::size_t wrong = 0;
    for (int r = 0; r < kOutRows; ++r)
        for (int c = 0; c < kOutCols; ++c) {
            const std::uint16_t want = r < kRows && c < kCols ? in[static_cast<std::size_t>(r) * kCols + c] : 0;
            if (out[static_cast<std::size_t>(r) * kOutCols + c] != want) ++wrong;
        }
    CHECK(wrong == 0);
    CHECK(back == in);  // the TMA store wrote every element inside the tensor and none outside it
}

TEST_CASE("a producer warp feeds consumer warps through a ring of mbarrier-guarded TMA buffers", "[tma]") {
    if (!hopper()) return;
    constexpr int kRows = 1000, kBox = 64, kStages = 3;  // 16 boxes, 5 trips around the ring, the last box partial
    constexpr int kBoxes = (kRows + kBox - 1) / kBox;
    const auto in = random_u16(std::size_t{kRows} * 64, 2);
    DeviceBuffer din(in.size() * 2), dout(std::size_t{kBoxes} * kBox * 64 * 2);
    din.upload(in.data(), in.size() * 2);
    dout.fill_bytes(0xFF);
    const CUtensorMap in_map = encode_tensor_map_16bit(matrix(din, kRows, 64, kBox));
    const Kernel kernel = get_kernel(tma_request(), "fa_jit::tma_sample::ring_copy<64, 3>", /*arch_specific=*/true);
    Stream stream;
    launch(kernel, {{1}, {256}, kStages * kBox * 128 + 1024 + 16 * kStages, stream.get()}, in_map, dout.get(),
           kBoxes);
    stream.synchronize();

    std::vector<std::uint16_t> out(std::size_t{kBoxes} * kBox * 64);
    dout.download(out.data(), out.size() * 2);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
        if (out[i] != (i < in.size() ? in[i] : 0)) ++wrong;
    CHECK(wrong == 0);
}
