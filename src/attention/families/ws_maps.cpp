#include "attention/families/ws_maps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "attention/validate.hpp"
#include "attention_ws_layout.cuh"
#include "fa_jit/jit.hpp"

namespace fa_jit::families {

TensorMapDesc ws_tensor_desc(const void* base, const Strides& strides, int batch, int heads, int rows, int head_dim,
                             int box_rows) {
    TensorMapDesc d;
    d.base = base;
    d.rank = 4;
    d.dims[0] = static_cast<std::uint64_t>(head_dim);
    d.dims[1] = static_cast<std::uint64_t>(std::max(rows, 1));  // no keys: the kernel loads none
    d.dims[2] = static_cast<std::uint64_t>(heads);
    d.dims[3] = static_cast<std::uint64_t>(batch);
    // A dimension of extent 1 may have stride 0 (a batch of one), and so may every dimension of a tensor without rows
    // (no keys: BHSD strides are multiples of seqlen_k); TMA wants a positive one, never used.
    const auto stride = [rows](long long elements, std::uint64_t extent) -> std::uint64_t {
        return elements == 0 && (extent == 1 || rows == 0) ? 16 : static_cast<std::uint64_t>(elements) * 2;
    };
    d.strides_bytes[1] = stride(strides.row, d.dims[1]);
    d.strides_bytes[2] = stride(strides.head, d.dims[2]);
    d.strides_bytes[3] = stride(strides.batch, d.dims[3]);
    d.box[0] = 64, d.box[1] = static_cast<std::uint32_t>(box_rows), d.box[2] = 1, d.box[3] = 1;
    return d;
}

PagedRowGroupDescs paged_row_group_descs(const AttentionArgs& a, int block_n) {
    const int blocks = ws_layout::padded_head_dim(a.head_dim) / 64;
    // Row groups from one page to the next, or 0 where a page's rows are not a whole number of groups after page 0
    // (or the last page's groups are past int coordinates).
    const auto groups_per_page = [&](const Strides& s) -> long long {
        if (s.row <= 0 || s.batch % (8 * s.row) != 0) return 0;
        const long long groups = s.batch / (8 * s.row);
        const long long last = (static_cast<long long>(a.num_pages) - 1) * groups + a.page_size / 8;  // dims[3]
        return groups > 0 && last < std::numeric_limits<int>::max() ? groups : 0;
    };
    const long long gk = groups_per_page(a.k_strides), gv = groups_per_page(a.v_strides);
    const int groups = gk > 0 && gk == gv ? static_cast<int>(gk) : 0;
    const int box_rows = groups > 0 ? ws_layout::paged_box_rows(a.page_size, block_n) : 8;
    const auto desc = [&](const void* base, const Strides& s) {
        TensorMapDesc d;
        d.base = base;
        d.rank = 5;
        // A dimension of extent 1 may have a zero stride; TMA wants a positive one, never used.
        const auto bytes = [](long long elements) { return elements == 0 ? 16ull : 2ull * elements; };
        d.dims[0] = 64, d.box[0] = 64;
        d.dims[1] = groups > 0 ? 8 : a.page_size, d.strides_bytes[1] = bytes(s.row), d.box[1] = 8;
        d.dims[2] = blocks, d.strides_bytes[2] = 128, d.box[2] = blocks;
        if (groups > 0) {
            d.dims[3] = (static_cast<std::uint64_t>(a.num_pages) - 1) * groups + a.page_size / 8;
            d.strides_bytes[3] = bytes(8 * s.row), d.box[3] = box_rows / 8;
            d.dims[4] = a.heads_kv, d.strides_bytes[4] = bytes(s.head), d.box[4] = 1;
        } else {
            d.dims[3] = a.heads_kv, d.strides_bytes[3] = bytes(s.head), d.box[3] = 1;
            d.dims[4] = a.num_pages, d.strides_bytes[4] = bytes(s.batch), d.box[4] = 1;
        }
        return d;
    };
    return {desc(a.k, a.k_strides), desc(a.v, a.v_strides), groups};
}

namespace {

// The block table as 16-bit halves ({halves, 1}, boxes of ws_layout::kTableEntries entries) from the 16-byte aligned
// address at or below it; offset_halves: where the table starts in the map.
CUtensorMap block_table_map(const AttentionArgs& a, int& offset_halves) {
    const auto address = reinterpret_cast<std::uintptr_t>(a.block_table);
    offset_halves = static_cast<int>(address % 16 / 2);
    TensorMapDesc d;
    d.base = reinterpret_cast<const void*>(address - address % 16);
    d.rank = 2;
    d.dims[0] = static_cast<std::uint64_t>(offset_halves) + 2ull * a.batch * a.pages_per_seq;
    d.dims[1] = 1;
    d.strides_bytes[1] = (d.dims[0] * 2 + 15) / 16 * 16;  // one row: never used
    d.box[0] = ws_layout::kTableBoxHalves, d.box[1] = 1;
    d.swizzle_128b = false;
    return encode_tensor_map_16bit(d);
}

}  // namespace

void launch_with_ws_maps(const Kernel& kernel, const LaunchConfig& config, const AttentionParams& params,
                         const AttentionArgs& a, const AttentionKernelSpec& spec) {
    const int block_n = spec.tile.block_n;
    const int batch = spec.varlen ? 1 : a.batch;
    const int rows_q = spec.varlen ? a.total_q : a.seqlen_q, rows_k = spec.varlen ? a.total_k : a.seqlen_k;
    const CUtensorMap q = encode_tensor_map_16bit(
        ws_tensor_desc(a.q, a.q_strides, batch, a.heads_q, rows_q, a.head_dim, spec.tile.block_m));
    if (ws_layout::kv_row_groups(spec.paged, a.head_dim)) {
        const PagedRowGroupDescs kv = paged_row_group_descs(a, block_n);
        AttentionParams with_maps = params;
        with_maps.page_row_groups = kv.page_row_groups;
        const CUtensorMap k = encode_tensor_map_16bit(kv.k);
        launch(kernel, config, with_maps, q, k, encode_tensor_map_16bit(kv.v), k);  // no table map
        return;
    }
    const int batch_k = spec.paged ? a.num_pages : batch, rows_kv = spec.paged ? a.page_size : rows_k;
    const int box_k = spec.paged ? ws_layout::paged_box_rows(a.page_size, block_n) : block_n;
    const CUtensorMap k =
        encode_tensor_map_16bit(ws_tensor_desc(a.k, a.k_strides, batch_k, a.heads_kv, rows_kv, a.head_dim, box_k));
    const CUtensorMap v =
        encode_tensor_map_16bit(ws_tensor_desc(a.v, a.v_strides, batch_k, a.heads_kv, rows_kv, a.head_dim, box_k));
    if (spec.table_map) {
        FA_JIT_REQUIRE(
            ws_layout::table_map_pages(a.page_size, block_n), "page_size",
            fmt::format("a multiple of {} rows for this kernel (it reads the block table by TMA)", block_n / 2),
            std::to_string(a.page_size));
        AttentionParams with_table = params;
        const CUtensorMap table = block_table_map(a, with_table.table_map_offset);
        launch(kernel, config, with_table, q, k, v, table);
        return;
    }
    launch(kernel, config, params, q, k, v, k);  // the table map's place, unread
}

}  // namespace fa_jit::families
