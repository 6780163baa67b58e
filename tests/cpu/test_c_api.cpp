// The C ABI's extensible argument struct: fa_jit_attention_args_init, and struct_size deciding which fields the
// library reads. Every call here fails validation, which comes before any driver call: no GPU needed.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fa_jit/fa_jit.h"

namespace {

// The fields every version of the header has had: what a caller compiled against the first one passes.
constexpr std::size_t kV1Size = offsetof(fa_jit_attention_args, seqused_k);

// A problem validation accepts up to the tensors, which are missing: the first error names q.
void valid_problem_without_tensors(fa_jit_attention_args* a) {
    a->dtype = FA_JIT_F32;
    a->batch = 1, a->heads_q = 4, a->heads_kv = 2, a->seqlen_q = 16, a->seqlen_k = 16, a->head_dim = 64;
}

// The status and message of fa_jit_attention on a struct at `p` (possibly a raw buffer of any size).
std::string attention_error(const void* p) {
    const fa_jit_status status = fa_jit_attention(static_cast<const fa_jit_attention_args*>(p), nullptr);
    CHECK(status == FA_JIT_ERROR_INVALID_ARGUMENT);
    return fa_jit_last_error();
}

// A buffer of `total` bytes: the version-1 prefix of `args`, struct_size = `struct_size`, then `fill` bytes.
std::vector<unsigned char> buffer(const fa_jit_attention_args& args, std::size_t prefix, std::uint32_t struct_size,
                                  std::size_t total, unsigned char fill) {
    std::vector<unsigned char> b(total, fill);
    std::memcpy(b.data(), &args, prefix);
    std::memcpy(b.data(), &struct_size, sizeof struct_size);
    return b;
}

}  // namespace

TEST_CASE("fa_jit_attention_args_init sets struct_size and every default", "[c_api]") {
    fa_jit_attention_args a;
    std::memset(&a, 0xAB, sizeof a);
    fa_jit_attention_args_init(&a);
    CHECK(a.struct_size == sizeof(fa_jit_attention_args));
    CHECK(a.q == nullptr);
    CHECK(a.k == nullptr);
    CHECK(a.v == nullptr);
    CHECK(a.o == nullptr);
    CHECK(a.lse == nullptr);
    CHECK(a.dtype == FA_JIT_F32);
    CHECK(a.batch == 0);
    CHECK(a.head_dim == 0);
    CHECK(a.q_strides.row == 0);
    CHECK(a.scale == 0.0f);
    CHECK(a.causal == 0);
    CHECK(a.seqused_k == nullptr);
    CHECK(a.num_splits == 0);
    CHECK(a.workspace == nullptr);
    CHECK(a.workspace_bytes == 0);
    fa_jit_attention_args_init(nullptr);  // a no-op

    // Initialized, the struct reaches the usual validation.
    a.head_dim = 999;
    CHECK_THAT(attention_error(&a), Catch::Contains("'head_dim'"));
}

TEST_CASE("a struct set to zero with memset is rejected, naming struct_size", "[c_api]") {
    fa_jit_attention_args a;
    std::memset(&a, 0, sizeof a);
    a.head_dim = 999;
    const std::string error = attention_error(&a);
    CHECK_THAT(error, Catch::StartsWith("invalid argument 'args.struct_size'"));
    CHECK_THAT(error, Catch::Contains("fa_jit_attention_args_init"));
    CHECK_THAT(error, Catch::Contains("memset"));
    CHECK_THAT(error, Catch::Contains("got 0"));

    // Any size short of version 1 as well.
    fa_jit_attention_args_init(&a);
    a.struct_size = static_cast<std::uint32_t>(kV1Size - 8);
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'args.struct_size'"));
    uint64_t bytes = 1;
    CHECK(fa_jit_attention_workspace_size(&a, &bytes) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::Contains("'args.struct_size'"));
    CHECK(bytes == 0);
}

TEST_CASE("a version-1 struct_size: the fields after it are never read", "[c_api]") {
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    valid_problem_without_tensors(&a);
    // Garbage where seqused_k, num_splits (-1 in every byte) and workspace would lie, as in memory that follows a
    // caller's older, smaller struct: none of it is read, so validation goes on to the missing tensors.
    std::vector<unsigned char> b = buffer(a, kV1Size, kV1Size, sizeof(fa_jit_attention_args) + 64, 0xFF);
    CHECK_THAT(attention_error(b.data()), Catch::StartsWith("invalid argument 'q'"));
    // A struct of exactly that size (a sanitizer sees any read past it).
    b = buffer(a, kV1Size, kV1Size, kV1Size, 0);
    CHECK_THAT(attention_error(b.data()), Catch::StartsWith("invalid argument 'q'"));

    // An invalid problem still reports its own error, not num_splits.
    a.head_dim = 999;
    b = buffer(a, kV1Size, kV1Size, sizeof(fa_jit_attention_args) + 64, 0xFF);
    const std::string error = attention_error(b.data());
    CHECK_THAT(error, Catch::StartsWith("invalid argument 'head_dim'"));
    CHECK_THAT(error, !Catch::Contains("num_splits"));

    // A size that ends inside a field (here seqused_k) leaves that field at its default.
    a.head_dim = 64;
    b = buffer(a, kV1Size, kV1Size + 4, sizeof(fa_jit_attention_args) + 64, 0xFF);
    CHECK_THAT(attention_error(b.data()), Catch::StartsWith("invalid argument 'q'"));
}

TEST_CASE("a struct_size from a newer header is accepted only if its unknown fields are zero", "[c_api]") {
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    a.head_dim = 999;
    const std::size_t ours = sizeof(fa_jit_attention_args);
    const auto newer = static_cast<std::uint32_t>(ours + 32);

    // Zero beyond our struct: nothing unknown is asked for, and the usual validation runs.
    std::vector<unsigned char> b = buffer(a, ours, newer, newer, 0);
    CHECK_THAT(attention_error(b.data()), Catch::StartsWith("invalid argument 'head_dim'"));

    // A nonzero byte beyond our struct: a feature this library does not know.
    b[ours + 17] = 1;
    const std::string error = attention_error(b.data());
    CHECK_THAT(error, Catch::StartsWith("invalid argument 'args.struct_size'"));
    CHECK_THAT(error, Catch::Contains("older than the header"));

    // A size no header comes near is garbage: rejected without reading that far.
    fa_jit_attention_args_init(&a);
    a.struct_size = 0xFFFFFFFFu;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'args.struct_size'"));
}

TEST_CASE("the C fields of a KV cache reach the C++ validation", "[c_api]") {
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    valid_problem_without_tensors(&a);
    a.num_splits = -1;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'num_splits'"));
}

TEST_CASE("the C fields of the score modifiers reach the C++ validation", "[c_api]") {
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    valid_problem_without_tensors(&a);
    a.window_left = -5;  // ignored without sliding_window
    CHECK_THAT(attention_error(&a), !Catch::Contains("window_left"));
    a.sliding_window = 1;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'window_left'"));
    a.window_left = 16, a.window_right = -3;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'window_right'"));
    fa_jit_attention_args_init(&a);
    valid_problem_without_tensors(&a);
    a.softcap = -2.f;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'softcap'"));
    a.softcap = 0.f;
    a.alibi_slopes = reinterpret_cast<const float*>(std::uintptr_t{6});
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'alibi_slopes'"));
}

TEST_CASE("the C fields of a paged KV cache reach the C++ validation", "[c_api]") {
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    valid_problem_without_tensors(&a);
    a.page_size = 16;  // without block_table
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'page_size'"));
    a.block_table = reinterpret_cast<const int32_t*>(std::uintptr_t{256});
    a.page_size = 24;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'page_size'"));
    a.page_size = 16;
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'num_pages'"));
    a.num_pages = 4, a.pages_per_seq = 1, a.seqlen_k = 40;  // 16 rows for 40 keys
    CHECK_THAT(attention_error(&a), Catch::StartsWith("invalid argument 'pages_per_seq'"));
}

TEST_CASE("C entry points name a NULL argument", "[c_api]") {
    CHECK_THAT(attention_error(nullptr), Catch::StartsWith("invalid argument 'args'"));
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    uint64_t bytes = 1;
    CHECK(fa_jit_attention_workspace_size(nullptr, &bytes) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::StartsWith("invalid argument 'args'"));
    CHECK(bytes == 0);
    CHECK(fa_jit_attention_workspace_size(&a, nullptr) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::StartsWith("invalid argument 'bytes'"));
    // The choice clears its outputs first, and checks the arguments before asking for a device.
    char family[64] = "stale", tile[64] = "stale";
    int32_t splits = 7;
    CHECK(fa_jit_attention_choice(nullptr, family, tile, sizeof family, &splits, &bytes) ==
          FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::StartsWith("invalid argument 'args'"));
    CHECK(std::string(family).empty());
    CHECK(std::string(tile).empty());
    CHECK(splits == 0);
    CHECK(bytes == 0);
    a.head_dim = 999;
    CHECK(fa_jit_attention_choice(&a, family, tile, sizeof family, &splits, nullptr) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::Contains("'head_dim'"));
    a.head_dim = 0;
    // The layout helpers fill the strides, and take NULL as a no-op.
    a.heads_q = 8, a.heads_kv = 2, a.seqlen_q = 1, a.seqlen_k = 100, a.head_dim = 64;
    fa_jit_layout_bshd(&a);
    CHECK(a.q_strides.row == 8 * 64);
    CHECK(a.k_strides.row == 2 * 64);
    CHECK(a.k_strides.batch == 100 * 2 * 64);
    fa_jit_layout_bhsd(&a);
    CHECK(a.k_strides.row == 64);
    CHECK(a.k_strides.head == 100 * 64);
    fa_jit_layout_bshd(nullptr);
}
