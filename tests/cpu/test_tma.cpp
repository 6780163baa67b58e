// The Hopper primitives without a GPU: the TMA sample kernels and the warp-specialized kernel compile for sm_90a
// only, and tensor maps are checked against the driver's rules before any driver call.
#include <catch2/catch.hpp>
#include <numeric>

#include "attention/families/ws_maps.hpp"
#include "attention_ws_layout.cuh"
#include "fa_jit/errors.hpp"
#include "fa_jit/jit.hpp"
#include "launch/tensor_map.hpp"

using namespace fa_jit;

namespace {

CompileRequest tma_request(const std::string& arch) {
    CompileRequest r;
    r.source = kernel_source("tma_sample.cu");
    r.name_expressions = {"fa_jit::tma_sample::box_roundtrip<64>", "fa_jit::tma_sample::ring_copy<64, 3>"};
    r.arch = arch;
    return r;
}

// A [200][104] 16-bit tensor in [64][64] boxes.
TensorMapDesc matrix_desc() {
    TensorMapDesc d;
    d.base = reinterpret_cast<const void*>(std::uintptr_t{0x10000});
    d.rank = 2;
    d.dims[0] = 104, d.dims[1] = 200;
    d.strides_bytes[1] = 208;
    d.box[0] = 64, d.box[1] = 64;
    return d;
}

void check_refused(const TensorMapDesc& d, const std::string& field) {
    INFO(field);
    CHECK_THROWS_WITH(check_tensor_map(d), Catch::Contains("'" + field + "'"));
}

}  // namespace

TEST_CASE("the TMA sample kernels compile for sm_90a and refuse sm_80", "[compile]") {
    const Compiled c = compile(tma_request("sm_90a"));
    CHECK_FALSE(c.is_ptx);
    CHECK(c.lowered_names.size() == 2);
    CHECK_THROWS_WITH(compile(tma_request("sm_80")), Catch::Contains("needs -arch=sm_90a"));
}

TEST_CASE("the warp-specialized Hopper kernel compiles for sm_90a and refuses sm_80", "[compile]") {
    CompileRequest r;
    r.source = kernel_source("attention_f16_ws.cu");
    r.name_expressions = {"fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 2, true>",
                          "fa_jit::attention_fwd_f16_ws<fa_jit::half_t, 192, 128, 64, 3, false>"};
    r.arch = "sm_90a";
    const Compiled c = compile(r);
    CHECK(c.lowered_names.size() == 2);
    r.arch = "sm_80";
    CHECK_THROWS_WITH(compile(r), Catch::Contains("needs -arch=sm_90a"));
}

TEST_CASE("tensor maps are checked against the driver's rules, naming the field", "[launch]") {
    CHECK_NOTHROW(check_tensor_map(matrix_desc()));
    TensorMapDesc d = matrix_desc();
    d.rank = 6;
    check_refused(d, "rank");
    d = matrix_desc();
    d.base = reinterpret_cast<const void*>(std::uintptr_t{0x10008});
    check_refused(d, "base");
    d = matrix_desc();
    d.dims[1] = 0;
    check_refused(d, "dims[1]");
    d = matrix_desc();
    d.dims[0] = (std::uint64_t{1} << 32) + 1;
    check_refused(d, "dims[0]");
    d = matrix_desc();
    d.strides_bytes[1] = 200;  // rows of 100 elements: not a multiple of 16 bytes
    check_refused(d, "strides_bytes[1]");
    d = matrix_desc();
    d.box[1] = 257;
    check_refused(d, "box[1]");
    d = matrix_desc();
    d.box[0] = 12;  // 24 bytes
    check_refused(d, "box[0]");
    d = matrix_desc();
    d.box[0] = 128;  // 256 bytes: wider than the 128-byte swizzle
    check_refused(d, "box[0]");
    d.swizzle_128b = false;
    CHECK_NOTHROW(check_tensor_map(d));
}

TEST_CASE("paged TMA boxes never cross a page, one per lane of the producer warp", "[launch]") {
    for (int page : {16, 32, 48, 64, 80, 256, 16384})
        for (int block_n : {64, 80, 96, 112, 128, 160, 176, 192}) {
            INFO("page " << page << ", " << block_n << " keys");
            const int rows = ws_layout::paged_box_rows(page, block_n);
            CHECK(rows >= 16);
            CHECK(page % rows == 0);
            CHECK(block_n % rows == 0);
            CHECK(rows == std::gcd(page, block_n));
            CHECK(block_n / rows <= 32);  // a box per lane of the producer warp
        }
    CHECK(ws_layout::paged_box_rows(256, 128) == 128);  // one box a tile where one page holds it
    CHECK(ws_layout::paged_box_rows(16, 128) == 16);
    CHECK(ws_layout::paged_box_rows(48, 96) == 48);
}

// The key steps' two loops (masked and unmasked tiles) under a sliding window: up to d 128, on 192 rows only without
// softcap and with ALiBi (its column term then takes the tensor cores) or the settled max; never in split-KV decode.
TEST_CASE("windows take the two key loops where they measured faster", "[launch]") {
    const auto loops = [](bool window, bool alibi, bool softcap, int block_m, int head_dim, bool split = false,
                          bool settled = false) {
        return ws_layout::mask_loops(window, alibi, softcap, settled, block_m, head_dim, split);
    };
    CHECK(loops(false, false, true, 192, 64));
    CHECK(loops(true, false, false, 128, 128));
    CHECK(loops(true, false, true, 128, 72));
    CHECK_FALSE(loops(true, false, false, 192, 64));
    CHECK(loops(true, false, false, 192, 64, false, true));  // with the settled max
    CHECK_FALSE(loops(true, false, true, 192, 64, false, true));
    CHECK(loops(true, true, false, 192, 96));
    CHECK_FALSE(loops(true, true, true, 192, 64));
    CHECK_FALSE(loops(true, false, false, 128, 136));
    CHECK_FALSE(loops(true, false, false, 128, 64, true));
}

// ALiBi on the tensor cores (tile/alibi_columns.cuh) where its operands fit beside the ring, never with softcap
// (tanh comes before the bias), in split-KV decode (packed rows mix heads) or on a window's one-loop kernels (past d
// 128).
TEST_CASE("the ALiBi columns take the kernels with room for their operands", "[launch]") {
    const auto on = [](int m, int n, int d, int stages, bool softcap = false, bool window = false, bool split = false) {
        return ws_layout::alibi_on_tensor_cores(m, n, d, stages, true, softcap, window, split);
    };
    CHECK(on(192, 128, 64, 2));
    CHECK(on(128, 128, 128, 2));
    CHECK(on(128, 176, 128, 2));
    CHECK(on(192, 96, 96, 2));
    CHECK(on(128, 128, 128, 2, false, true));  // with a window two key loops up to d 128, on 192 rows too
    CHECK(on(192, 96, 96, 2, false, true));
    CHECK(on(128, 64, 160, 2));
    CHECK_FALSE(on(128, 64, 160, 2, false, true));
    CHECK_FALSE(on(128, 128, 128, 2, true));
    CHECK_FALSE(on(128, 128, 128, 2, false, false, true));
    CHECK_FALSE(ws_layout::alibi_on_tensor_cores(128, 128, 128, 2, false, false, false, false));
    CHECK_FALSE(on(128, 128, 128, 3));  // 230 KB of ring and barriers leave no room
    for (int d = 8; d <= 256; d += 8)
        for (int m : {128, 192})
            for (int n = 64; n <= 192; n += 16)
                for (int stages = 2; stages <= 4; ++stages)
                    if (ws_layout::legal(m, n, d, stages) && on(m, n, d, stages)) {
                        INFO(m << " x " << n << ", d " << d << ", " << stages << " stages");
                        CHECK(ws_layout::smem_bytes(m, n, d, stages, true) <= 227 * 1024);
                        CHECK(ws_layout::smem_bytes(m, n, d, stages, true) ==
                              ws_layout::smem_bytes(m, n, d, stages) + ws_layout::alibi_columns_bytes(m, n));
                    }
}

// The paged K / V maps of the warp-specialized kernel (attention_f16_ws.cu): where the kernel's coordinates for a box
// of rows [row, row + box) of page `page`, head `head` land, against the element the strides give; the box stays in
// its page and inside the map's extents, and every map passes the driver's rules. BSHD and BHSD pages are whole row
// groups apart (one dimension numbers the row groups of all pages), padded ones are not (a dimension per page).
TEST_CASE("the warp-specialized kernel's paged maps address every box's rows", "[launch]") {
    struct Layout {
        const char* name;
        Strides strides;
        int expected_groups;  // page_row_groups
    };
    const int page = 16, heads = 4, d = 128, pages = 50, block_n = 128;
    const std::int64_t padded_row = d + 8, padded_head = (page + 3) * padded_row;
    for (const Layout& l : {Layout{"bshd", Strides::bshd(page, heads, d), page / 8},
                            Layout{"bhsd", Strides::bhsd(page, heads, d), heads * page / 8},
                            Layout{"padded", {heads * padded_head, padded_head, padded_row}, 0}}) {
        INFO(l.name);
        AttentionArgs a;
        a.dtype = DType::bf16, a.head_dim = d, a.heads_q = a.heads_kv = heads;
        a.k = a.v = reinterpret_cast<const void*>(std::uintptr_t{0x100000});
        a.k_strides = a.v_strides = l.strides;
        a.page_size = page, a.num_pages = pages;
        const families::PagedRowGroupDescs m = families::paged_row_group_descs(a, block_n);
        CHECK(m.page_row_groups == l.expected_groups);
        const TensorMapDesc& k = m.k;
        CHECK_NOTHROW(check_tensor_map(k));
        REQUIRE(k.rank == 5);
        const bool flat = m.page_row_groups > 0;
        const int box = flat ? ws_layout::paged_box_rows(page, block_n) : 8;
        CHECK(k.box[0] == 64);
        CHECK(k.box[1] * k.box[3] == static_cast<std::uint32_t>(box));  // rows per box
        CHECK(k.box[2] * 64 == static_cast<std::uint32_t>(d));          // every column block
        CHECK(k.strides_bytes[2] == 128);                               // column block c: 64 c elements further
        for (int p : {0, 17, pages - 1})
            for (int h : {0, heads - 1})
                for (int row = 0; row < page; row += box) {
                    const std::uint64_t c[5] = {0, std::uint64_t(flat ? 0 : row), 0,
                                                std::uint64_t(flat ? p * m.page_row_groups + row / 8 : h),
                                                std::uint64_t(flat ? h : p)};
                    std::uint64_t at = 0;
                    for (int i = 1; i < 5; ++i) {
                        CHECK(c[i] + k.box[i] <= k.dims[i]);  // the box lies inside the map
                        at += c[i] * k.strides_bytes[i];
                    }
                    CHECK(at == 2 * std::uint64_t(p * l.strides.batch + h * l.strides.head + row * l.strides.row));
                }
    }
    // K and V of different forms: both take the page-per-dimension form the kernel can address with one flag.
    AttentionArgs a;
    a.dtype = DType::bf16, a.head_dim = 64, a.heads_q = a.heads_kv = 2, a.page_size = 32, a.num_pages = 8;
    a.k = a.v = reinterpret_cast<const void*>(std::uintptr_t{0x100000});
    a.k_strides = Strides::bshd(32, 2, 64), a.v_strides = {2 * 35 * 72, 35 * 72, 72};
    CHECK(families::paged_row_group_descs(a, 128).page_row_groups == 0);
}
