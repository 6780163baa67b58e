// The TMA maps of the warp-specialized family (f16_ws.cpp, kernel_sources/attention_f16_ws.cu) as descriptions, which
// the family checks and encodes per call (launch/tensor_map.hpp): apart from the encoding, so that tests read them
// without a driver.
#pragma once

#include "attention/family.hpp"
#include "fa_jit/attention.hpp"
#include "launch/tensor_map.hpp"

namespace fa_jit::families {

// A [batch][heads][rows][d] tensor as a 4-d map (d innermost), boxes of 64 columns x box_rows rows.
TensorMapDesc ws_tensor_desc(const void* base, const Strides& strides, int batch, int heads, int rows, int head_dim,
                             int box_rows);

// The K and V maps of a paged cache whose head dim is whole column blocks (ws_layout::kv_row_groups), both of one
// form: 5-d, (64 columns, 8 rows, column blocks, ...), so that a box holds every column of its rows, which land row
// group first in shared memory. Where every page starts a whole number of 8-row groups after page 0 (page stride P
// rows, P % 8 == 0: [pages][page rows][heads][d] and [pages][heads][page rows][d] both), the 4th dimension numbers
// the row groups of all pages at once and the 5th is the head: a box takes the ws_layout::paged_box_rows rows of a
// tile that lie in one page, at (0, 0, 0, page * P / 8 + row / 8, head). Otherwise the 4th is the head and the 5th
// the page, and a box takes 8 rows, at (0, row, 0, head, page).
struct PagedRowGroupDescs {
    TensorMapDesc k, v;
    int page_row_groups;  // AttentionParams::page_row_groups: P / 8, or 0 for the page-per-dimension form
};
PagedRowGroupDescs paged_row_group_descs(const AttentionArgs& a, int block_n);

// Launches a kernel of attention_f16_ws.cu with its Q, K and V maps encoded for this call: contiguous tensors, packed
// sequences (one batch of total rows, which the kernel addresses from cu_seqlens) or a paged cache (spec.paged: the
// row-group maps above where the head dim is whole column blocks, else num_pages batches of page_size rows in boxes
// that never cross a page). The kernel's fourth map is the block table's where spec.table_map, else unread.
void launch_with_ws_maps(const Kernel& kernel, const LaunchConfig& config, const AttentionParams& params,
                         const AttentionArgs& a, const AttentionKernelSpec& spec);

}  // namespace fa_jit::families
