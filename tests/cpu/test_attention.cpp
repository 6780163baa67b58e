// attention() without a GPU: argument validation, configuration choice, and NVRTC compilation of every family's
// default kernels for sm_80 and sm_90a (every sweep configuration: the opt-in [sweep] test, scripts/test --all).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "attention/page_divisor.hpp"
#include "fa_jit/tuning.hpp"
#include "support/compile_jobs.hpp"

using namespace fa_jit;

namespace {

// Valid arguments for a small problem; pointers are never dereferenced by validate().
AttentionArgs valid_args() {
    alignas(16) static float storage[64];
    AttentionArgs a;
    a.q = storage, a.k = storage + 16, a.v = storage + 32, a.o = storage + 48;
    a.batch = 2, a.heads_q = 8, a.heads_kv = 2, a.seqlen_q = 100, a.seqlen_k = 120, a.head_dim = 64;
    a.layout_bshd();
    return a;
}

// Makes `a` read K / V from a paged cache: 4 pages of 64 rows ([4, 64, heads_kv, d]), 2 table entries per sequence.
void paged_args(AttentionArgs& a) {
    a.block_table = reinterpret_cast<const int*>(256);
    a.page_size = 64, a.num_pages = 4, a.pages_per_seq = 2;
    a.k_strides = a.v_strides = Strides::bshd(a.page_size, a.heads_kv, a.head_dim);
}

std::string rejected_argument(const AttentionArgs& a) {
    try {
        validate(a);
    } catch (const InvalidArgument& e) {
        return e.argument();
    }
    return "(accepted)";
}

// Compiles `specs` for `archs` (each where its family runs), one NVRTC program per (arch, source, dtype, head dim);
// returns the failures' messages and, per "name arch", ptxas's usage.
// FA_JIT_SPILL_REPORT=file: one line per kernel compiled (name, arch, registers, spill store bytes), for comparing
// builds.
void write_spill_report(const std::map<std::string, testing::PtxasUsage>& usage) {
    if (const char* report = std::getenv("FA_JIT_SPILL_REPORT")) {
        std::ofstream out(report);
        for (const auto& [name, u] : usage) out << name << " | " << u.registers << " | " << u.spill_stores << "\n";
    }
}

std::vector<std::string> compile_all(const std::vector<AttentionKernelSpec>& specs,
                                     const std::vector<std::string>& archs,
                                     std::map<std::string, testing::PtxasUsage>* usage = nullptr) {
    std::map<std::string, CompileRequest> programs;
    for (const auto& s : specs)
        for (const auto& arch : archs) {
            if (!tile_runs_on(s.tile, arch_cc(arch))) continue;  // wgmma: sm_90a only
            const std::string key = fmt::format("{} {} {} d{}", arch, s.source_name(), to_string(s.dtype), s.head_dim);
            CompileRequest& r = programs[key];
            if (r.name_expressions.empty())
                r = attention_compile_request(s, arch);
            else
                r.name_expressions.push_back(s.name_expression());
        }
    std::vector<CompileRequest> requests;
    for (auto& [key, r] : programs) requests.push_back(r);
    const auto outcomes = testing::compile_parallel(requests);
    std::vector<std::string> failures;
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const auto& o = outcomes[i];
        if (!o.error.empty()) {
            failures.push_back(requests[i].name_expressions.front() + " " + requests[i].arch + ": " + o.error);
            continue;
        }
        if (o.compiled.binary.empty() || o.compiled.lowered_names.size() != requests[i].name_expressions.size())
            failures.push_back(requests[i].name_expressions.front() + " " + requests[i].arch + ": empty result");
        // ptxas serializes every wgmma of a kernel when it cannot prove their registers untouched while in flight (a
        // wgmma under a condition, an accumulator read too early): correct, and several times slower.
        if (const auto at = o.compiled.log.find("wgmma.mma_async instructions are serialized"); at != std::string::npos)
            failures.push_back(requests[i].name_expressions.front() + " " + requests[i].arch + ": " +
                               o.compiled.log.substr(o.compiled.log.rfind('\n', at) + 1, 240));
        if (usage)
            for (const auto& name : requests[i].name_expressions) {
                const auto it = o.usage.find(o.compiled.lowered_name(name));
                if (it == o.usage.end())
                    failures.push_back(name + " " + requests[i].arch + ": no ptxas -v line");
                else
                    (*usage)[name + " " + requests[i].arch] = it->second;
            }
    }
    return failures;
}

}  // namespace

TEST_CASE("valid arguments pass validation", "[attention][validation]") {
    CHECK_NOTHROW(validate(valid_args()));
    AttentionArgs mqa = valid_args();
    mqa.heads_kv = 1;
    CHECK_NOTHROW(validate(mqa));
    AttentionArgs empty = valid_args();
    empty.batch = 0;  // a zero-size problem is valid (a no-op)
    CHECK_NOTHROW(validate(empty));
    for (DType dtype : {DType::f16, DType::bf16}) {
        AttentionArgs half = valid_args();
        half.dtype = dtype;
        CHECK_NOTHROW(validate(half));
        half.head_dim = 40, half.layout_bhsd();  // any multiple of 8
        CHECK_NOTHROW(validate(half));
    }
}

TEST_CASE("each bad argument is rejected by name", "[attention][validation]") {
    struct Bad {
        const char* argument;
        void (*edit)(AttentionArgs&);
    };
    const Bad cases[] = {
        {"q", [](AttentionArgs& a) { a.q = nullptr; }},
        {"k", [](AttentionArgs& a) { a.k = nullptr; }},
        {"v", [](AttentionArgs& a) { a.v = nullptr; }},
        {"o", [](AttentionArgs& a) { a.o = nullptr; }},
        {"q", [](AttentionArgs& a) { a.q = static_cast<const char*>(a.q) + 2; }},  // misaligned for fp32
        {"lse", [](AttentionArgs& a) { a.lse = reinterpret_cast<float*>(reinterpret_cast<char*>(a.lse) + 1); }},
        {"dtype", [](AttentionArgs& a) { a.dtype = static_cast<DType>(7); }},
        // fp16/bf16: rows move in 16-byte chunks, and the row max is taken before scaling.
        {"q", [](AttentionArgs& a) { a.dtype = DType::bf16, a.q = static_cast<const char*>(a.q) + 8; }},
        {"o", [](AttentionArgs& a) { a.dtype = DType::f16, a.o = static_cast<char*>(a.o) + 2; }},
        {"head_dim", [](AttentionArgs& a) { a.dtype = DType::f16, a.head_dim = 36, a.layout_bshd(); }},
        {"v strides", [](AttentionArgs& a) { a.dtype = DType::bf16, a.v_strides.row = 132; }},
        {"k strides", [](AttentionArgs& a) { a.dtype = DType::f16, a.k_strides.batch = 4; }},
        {"scale", [](AttentionArgs& a) { a.dtype = DType::bf16, a.scale = -0.125f; }},
        {"batch", [](AttentionArgs& a) { a.batch = -1; }},
        {"heads_q", [](AttentionArgs& a) { a.heads_q = -8; }},
        {"seqlen_q", [](AttentionArgs& a) { a.seqlen_q = -1; }},
        {"seqlen_k", [](AttentionArgs& a) { a.seqlen_k = -5; }},
        {"head_dim", [](AttentionArgs& a) { a.head_dim = 0; }},
        {"head_dim", [](AttentionArgs& a) { a.head_dim = 257; }},
        {"heads_kv", [](AttentionArgs& a) { a.heads_kv = 0; }},
        {"heads_kv", [](AttentionArgs& a) { a.heads_kv = 3; }},  // does not divide 8
        {"heads_q", [](AttentionArgs& a) { a.heads_q = a.heads_kv = 70000; }},
        {"batch", [](AttentionArgs& a) { a.batch = 70000; }},
        {"scale", [](AttentionArgs& a) { a.scale = std::numeric_limits<float>::infinity(); }},
        {"k strides", [](AttentionArgs& a) { a.k_strides.row = -64; }},
        {"o strides", [](AttentionArgs& a) { a.o_strides.row = 32; }},  // output rows would overlap
        {"o", [](AttentionArgs& a) { a.o = const_cast<void*>(a.q); }},  // in place is not supported
        // Score modifiers.
        {"window_left", [](AttentionArgs& a) { a.window_left = -2; }},
        {"window_right", [](AttentionArgs& a) { a.window_right = -7; }},
        {"seqlen_k", [](AttentionArgs& a) { a.window_left = 10, a.seqlen_q = a.seqlen_k = 1 << 29; }},
        {"softcap", [](AttentionArgs& a) { a.softcap = -1.f; }},
        {"softcap", [](AttentionArgs& a) { a.softcap = std::numeric_limits<float>::quiet_NaN(); }},
        {"alibi_slopes", [](AttentionArgs& a) { a.alibi_slopes = reinterpret_cast<const float*>(std::uintptr_t{2}); }},
        {"scale", [](AttentionArgs& a) { a.scale = 0.f, a.alibi_slopes = reinterpret_cast<const float*>(16); }},
        // Packed sequences.
        {"cu_seqlens_k", [](AttentionArgs& a) { a.cu_seqlens_q = reinterpret_cast<const int*>(256); }},
        {"cu_seqlens_q", [](AttentionArgs& a) { a.cu_seqlens_k = reinterpret_cast<const int*>(256); }},
        {"cu_seqlens_q",
         [](AttentionArgs& a) {
             a.cu_seqlens_q = reinterpret_cast<const int*>(258), a.cu_seqlens_k = reinterpret_cast<const int*>(256);
         }},
        {"total_q", [](AttentionArgs& a) { a.total_q = -1; }},
        {"q strides",
         [](AttentionArgs& a) {  // the packed rows reach past 2^48 bytes
             a.cu_seqlens_q = a.cu_seqlens_k = reinterpret_cast<const int*>(256);
             a.total_q = 1 << 30, a.q_strides.row = std::int64_t{1} << 20;
         }},
        // A paged KV cache (paged_args(): 4 pages of 64 rows, 2 entries per sequence).
        {"block_table", [](AttentionArgs& a) { paged_args(a), a.block_table = reinterpret_cast<const int*>(258); }},
        {"page_size", [](AttentionArgs& a) { paged_args(a), a.page_size = 40; }},
        {"page_size", [](AttentionArgs& a) { paged_args(a), a.page_size = 0; }},
        {"num_pages", [](AttentionArgs& a) { paged_args(a), a.num_pages = 0; }},
        {"pages_per_seq", [](AttentionArgs& a) { paged_args(a), a.pages_per_seq = 1; }},  // 64 rows < seqlen_k 120
        {"pages_per_seq", [](AttentionArgs& a) { paged_args(a), a.pages_per_seq = 1 << 28, a.page_size = 16; }},
        {"cu_seqlens_k", [](AttentionArgs& a) { paged_args(a), a.cu_seqlens_k = reinterpret_cast<const int*>(256); }},
        {"page_size", [](AttentionArgs& a) { a.page_size = 16; }},  // without block_table
        {"num_pages", [](AttentionArgs& a) { a.num_pages = 3; }},
        {"k strides", [](AttentionArgs& a) { paged_args(a), a.k_strides.batch = -1; }},
        {"v strides",
         [](AttentionArgs& a) {  // pages reach past 2^48 bytes
             paged_args(a), a.num_pages = 1 << 30, a.v_strides.batch = std::int64_t{1} << 20;
         }},
    };
    for (const Bad& bad : cases) {
        AttentionArgs a = valid_args();
        static float lse_storage[4];
        a.lse = lse_storage;
        bad.edit(a);
        INFO("expected '" << bad.argument << "' to be rejected");
        CHECK(rejected_argument(a) == bad.argument);
    }
    // The message names the argument, what was expected and what was given.
    AttentionArgs a = valid_args();
    a.head_dim = 300;
    CHECK_THROWS_WITH(validate(a), "invalid argument 'head_dim': expected in [1, 256], got 300");
    a = valid_args();
    a.dtype = DType::bf16, a.head_dim = 100, a.layout_bshd();
    CHECK_THROWS_WITH(validate(a), "invalid argument 'head_dim': expected a multiple of 8 for fp16/bf16, got 100");
}

TEST_CASE("score modifiers: spelling, the chooser, the kernel names", "[attention][config]") {
    CHECK(ScoreMods{}.to_string() == "none");
    CHECK(ScoreMods{true, false, true}.to_string() == "window,alibi");
    for (const char* text : {"none", "window", "softcap,alibi", "window,softcap,alibi"})
        CHECK(ScoreMods::parse(text).to_string() == text);
    CHECK(ScoreMods::parse("").bits() == 0);
    CHECK(ScoreMods::parse("alibi,window").bits() == 5);
    for (const char* bad : {"windows", "window,", ",softcap", "window softcap"})
        CHECK_THROWS_WITH(ScoreMods::parse(bad, "--features"), Catch::StartsWith("invalid argument '--features'"));

    AttentionArgs a = valid_args();
    CHECK_FALSE(ScoreMods::of(a).any());
    a.window_right = 0;  // one bounded side is a window
    CHECK(ScoreMods::of(a).window);
    a.softcap = 30.f;
    a.alibi_slopes = reinterpret_cast<const float*>(256);
    CHECK(ScoreMods::of(a).bits() == 7);

    // Every family has the modifiers: the chooser picks what it picks without them, and the kernel name gains kMods
    // (decode-ws: followed by its varlen, paged and split flags).
    for (int cc : {80, 90})
        for (DType dtype : {DType::f32, DType::bf16})
            for (const ProblemClass& plain :
                 {ProblemClass{dtype, 128, true, 4096, 4096}, ProblemClass{dtype, 128, false, 1, 8192, 8},
                  ProblemClass{dtype, 64, true, 4, 8192, 32}}) {
                ProblemClass modified = plain;
                modified.mods = ScoreMods{true, true, true};
                CHECK(kernel_family_for(modified, cc) == kernel_family_for(plain, cc));
                const AttentionKernelSpec spec = warmup_specs(modified, cc, false).front();
                CHECK(spec.mods == modified.mods);
                CHECK_THAT(spec.name_expression(),
                           Catch::EndsWith(", 7>") || Catch::EndsWith(", 7, false, false, true>"));
                CHECK_FALSE(warmup_specs(plain, cc, false).front().name_expression().find(", 7>") != std::string::npos);
            }
    // attention_spec() takes the modifiers from the arguments.
    a.dtype = DType::bf16;
    const AttentionKernelSpec spec = attention_spec(a, default_tile_config(90, ProblemClass::of(a)));
    CHECK(spec.mods.bits() == 7);
    CHECK_FALSE(spec == attention_spec(valid_args(), spec.tile));
}

TEST_CASE("packed sequences: the families that read them, the kernel names", "[attention][config]") {
    ProblemClass varlen{DType::bf16, 128, true, 4096, 4096};
    varlen.varlen = true;
    CHECK(kernel_family_for(varlen, 90) == "f16-ws");
    CHECK(kernel_family_for(varlen, 80) == "f16-mma");
    varlen.head_dim = 256, varlen.causal = false;
    CHECK(kernel_family_for(varlen, 90) == "f16-ws");
    varlen.head_dim = 64, varlen.causal = true, varlen.seqlen_q = varlen.seqlen_k = 1024;
    CHECK(kernel_family_for(varlen, 90) == "f16-wgmma");
    varlen.seqlen_q = 1;  // decode-shaped: the decode families read packed sequences, with seqused_k too
    CHECK(kernel_family_for(varlen, 90) == "decode");
    varlen.seqused_k = true;
    CHECK(kernel_family_for(varlen, 90) == "decode");
    varlen.dtype = DType::f32;
    CHECK(kernel_family_for(varlen, 90) == "fp32");
    varlen.dtype = DType::bf16, varlen.seqlen_q = 4096;  // prefill with seqused_k: only the decode families read it
    CHECK(kernel_family_for(varlen, 90) == "decode-ws");
    for (int cc : {80, 90}) {
        ProblemClass p{DType::f16, 64, false, 512, 512};
        p.varlen = true;
        const std::vector<AttentionKernelSpec> specs = warmup_specs(p, cc, false);
        REQUIRE(specs.size() == 1);  // packed lengths vary: no variant without bounds checks
        CHECK(specs.front().varlen);
        CHECK_THAT(specs.front().name_expression(), Catch::EndsWith(", 0, true>"));
    }
    AttentionArgs a = valid_args();
    a.dtype = DType::bf16;
    a.cu_seqlens_q = a.cu_seqlens_k = reinterpret_cast<const int*>(256);
    a.total_q = a.total_k = 10;
    CHECK(ProblemClass::of(a).varlen);
    a.q_strides.batch = 0;  // unused with packed sequences: not a repeated input
    CHECK_FALSE(ProblemClass::of(a).repeated_input);
}

TEST_CASE("paged KV cache: validation, the families that read it, the kernel names", "[attention][config]") {
    AttentionArgs a = valid_args();
    paged_args(a);
    CHECK_NOTHROW(validate(a));
    a.cu_seqlens_q = reinterpret_cast<const int*>(256), a.total_q = 100;  // chunked prefill: packed queries alone
    CHECK_NOTHROW(validate(a));
    const ProblemClass p = ProblemClass::of(a);
    CHECK(p.paged);
    CHECK(p.varlen);
    CHECK_FALSE(p.repeated_input);

    ProblemClass paged{DType::bf16, 128, true, 4096, 4096};
    paged.paged = true;
    CHECK(kernel_family_for(paged, 80) == "f16-mma");
    CHECK(kernel_family_for(paged, 90) == "f16-ws");  // TMA boxes page by page
    // The paged prefill kernels read per-sequence lengths themselves.
    paged.seqused_k = true;
    CHECK(kernel_family_for(paged, 90) == "f16-ws");
    paged.head_dim = 256, paged.causal = false;
    CHECK(kernel_family_for(paged, 90) == "f16-ws");
    paged.head_dim = 64, paged.causal = true, paged.seqlen_q = paged.seqlen_k = 1024;
    CHECK(kernel_family_for(paged, 90) == "f16-wgmma");
    paged.seqlen_q = 1, paged.group_size = 8;  // decode
    CHECK(kernel_family_for(paged, 90) == "decode");
    CHECK(kernel_family_for(paged, 80) == "decode");
    paged.dtype = DType::f32;
    CHECK(kernel_family_for(paged, 90) == "fp32");
    for (int cc : {80, 90})
        for (bool varlen : {false, true}) {
            ProblemClass q{DType::f16, 64, false, 512, 512};
            q.paged = true, q.varlen = varlen;
            const std::vector<AttentionKernelSpec> specs = warmup_specs(q, cc, false);
            REQUIRE(specs.size() == 1);  // sequences have lengths of their own: no variant without bounds checks
            CHECK(specs.front().paged);
            CHECK_THAT(specs.front().name_expression(),
                       Catch::EndsWith(varlen ? ", 0, true, true>" : ", 0, false, true>"));
        }
    // Every prefill family on sm_90 offers its tiles for a paged problem.
    ProblemClass prefill{DType::bf16, 128, false, 4096, 4096};
    prefill.paged = true;
    std::set<std::string> families;
    for (const TileConfig& t : tile_configs(prefill, 90))
        families.insert(AttentionKernelSpec{DType::bf16, 128, false, t}.family());
    CHECK(families == std::set<std::string>{"f16-ws", "f16-wgmma", "f16-mma"});
}

TEST_CASE("the page divisor divides every key index by every page size", "[attention][config]") {
    for (int d = 16; d <= 4096; d += 16) {
        const PageDivisor div = page_divisor(d);
        for (std::uint32_t n : {0u, 1u, 15u, 16u, 1000u, 65535u, 1u << 20, (1u << 31) - 1, (1u << 31) - 17})
            CHECK(div.divide(n) == n / d);
        for (std::uint32_t page = 0; page < 64; ++page)  // the edges of the first pages
            for (std::uint32_t n : {page * d, page * d + d - 1}) CHECK(div.divide(n) == n / d);
    }
    for (int d : {48, 80, 112, 208, 1 << 20, (1 << 30) + 16})
        for (std::uint32_t n = 0; n < (1u << 31); n += 104729u * 13u) CHECK(page_divisor(d).divide(n) == n / d);
}

TEST_CASE("attention() validates before touching the GPU", "[attention][validation]") {
    AttentionArgs a = valid_args();
    a.heads_kv = 3;
    CHECK_THROWS_AS(attention(a, nullptr), InvalidArgument);  // this machine has no driver: no CudaError first
    AttentionArgs b = valid_args();
    CHECK_THROWS_WITH(attention(b, nullptr, TileConfig{48, 64, 4}), Catch::Contains("'tile'"));
    b.dtype = DType::bf16;  // fp16/bf16 tiles name their pipeline depth; an fp32 tile is not one of them
    CHECK_THROWS_WITH(attention(b, nullptr, TileConfig{64, 64, 4}), Catch::Contains("'tile'"));
    AttentionArgs empty = valid_args();
    empty.seqlen_q = 0;
    CHECK_NOTHROW(attention(empty, nullptr));  // zero-size: returns before any driver call
}

TEST_CASE("the chosen tile configuration is legal and fits the GPU", "[attention][config]") {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16})
        for (int cc : {80, 86, 89, 90, 100, 120})
            for (int d = dtype == DType::f32 ? 1 : 8; d <= 256; d += dtype == DType::f32 ? 1 : 8)
                for (bool causal : {false, true}) {
                    const ProblemClass p{dtype, d, causal, 4096, 4096};
                    const TileConfig t = default_tile_config(cc, p);
                    const auto all = tile_configs(dtype, d);
                    INFO(to_string(dtype)
                         << " cc " << cc << " d " << d << " causal " << causal << " -> " << t.to_string());
                    REQUIRE(std::find(all.begin(), all.end(), t) != all.end());
                    CHECK(tile_is_legal(dtype, d, t));
                    CHECK(tile_runs_on(t, cc));
                    const AttentionKernelSpec spec{dtype, d, causal, t};
                    const std::size_t limit = (cc == 80 ? 163 : cc == 90 || cc == 100 ? 227 : 99) * 1024;
                    CHECK(spec.shared_bytes() <= limit);
                }
    // fp16/bf16 serve head dims that are multiples of 8 only.
    CHECK(tile_configs(DType::f16, 36).empty());
    CHECK(tile_configs(DType::bf16, 264).empty());
    // The measured choices on sm_90 (bench/NOTES.md).
    CHECK(default_tile_config(90, {DType::f32, 128, false, 16384, 16384}) == TileConfig{128, 32, 4});
    CHECK(default_tile_config(90, {DType::f32, 256, false, 16384, 16384}) == TileConfig{128, 32, 8});
    CHECK(default_tile_config(80, {DType::f32, 256, false, 16384, 16384}) == TileConfig{64, 32, 4});
    // fp16/bf16 on sm_90: the warp-specialized kernel where it measured fastest, then the wgmma kernel wherever it
    // serves the head dim (multiples of 64), else mma.sync.
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 512, 512}) == TileConfig{256, 64, 20, 3, "ws"});
    // 256 rows only where they divide the rows (and up to 1k of them, without the mask or modifiers).
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 1024, 1024}) == TileConfig{256, 64, 20, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 384, 384}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 768, 768}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 512, 4096}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 2048, 2048}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 128, false, 512, 512}).block_m == 128);
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 16384, 16384}) == TileConfig{192, 128, 16, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 64, false, 8192, 8192}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 16384, 16384}) == TileConfig{192, 128, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 48, false, 4096, 4096}) == TileConfig{192, 128, 16, 3, "ws"});
    // d 40-64 causal past 2k keys: 192 x 128, with or without a window.
    CHECK(default_tile_config(90, {DType::bf16, 48, true, 8192, 8192}) == TileConfig{192, 128, 16, 3, "ws"});
    ProblemClass windowed{DType::bf16, 64, true, 4096, 4096};
    windowed.mods.window = true;
    CHECK(default_tile_config(90, windowed) == TileConfig{192, 128, 16, 3, "ws"});
    // d 40-64 plain causal rows of 257-2048 keys: 256 rows, each warpgroup stopping at its own diagonal; at 256 keys
    // or rows and with a score modifier the tiles before (d 64: f16-wgmma).
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 2048, 2048}) == TileConfig{256, 64, 20, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 48, true, 1024, 1024}) == TileConfig{256, 64, 20, 3, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 64, true, 512, 512}) == TileConfig{256, 64, 20, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 300, 2048}) == TileConfig{256, 64, 20, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 256, 256}) == TileConfig{64, 64, 4, 2, "wgmma"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 128, 1024}) == TileConfig{64, 64, 4, 2, "wgmma"});
    CHECK(default_tile_config(90, {DType::bf16, 48, true, 256, 256}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 4096, 4096}) == TileConfig{192, 128, 16, 3, "ws"});
    ProblemClass short_window{DType::bf16, 48, true, 1024, 1024};
    short_window.mods.window = true;
    CHECK(default_tile_config(90, short_window) == TileConfig{128, 128, 12, 3, "ws"});
    // Softcap at d 65-128 in bf16: 192 rows, the widest key tile there; fp16 (which keeps a running max) 128 x 128,
    // as plain rows up to 8k keys.
    for (bool causal : {false, true})
        for (int seqlen : {512, 16384}) {
            ProblemClass softcap{DType::bf16, 128, causal, seqlen, seqlen};
            softcap.mods.softcap = true;
            CHECK(default_tile_config(90, softcap) == TileConfig{192, 80, 16, 3, "ws"});
            softcap.dtype = DType::f16;
            CHECK(default_tile_config(90, softcap) == TileConfig{128, 128, 12, 3, "ws"});
            softcap.dtype = DType::bf16, softcap.mods.window = true;  // a window's overlap needs 128 rows
            CHECK(default_tile_config(90, softcap) == TileConfig{128, 128, 12, 3, "ws"});
            softcap.mods.window = false, softcap.head_dim = 96;
            CHECK(default_tile_config(90, softcap) == TileConfig{192, 96, 16, 3, "ws"});
            softcap.head_dim = 64;  // a MUFU-bound softmax with or without softcap: the plain choice's tile (plain rows
                                    // past 8k keys without the mask take 2 stages of it), but for plain rows of
                                    // whole 256s up to 1k without the mask and of 257-2048 keys under it, on 256
                                    // rows (capped causal ones there on f16-wgmma)
            softcap.mods = ScoreMods{};
            const TileConfig plain = default_tile_config(90, softcap);
            softcap.mods.softcap = true;
            const TileConfig capped = default_tile_config(90, softcap);
            if (seqlen == 512) {
                CHECK(plain == TileConfig{256, 64, 20, 3, "ws"});
                CHECK(capped == (causal ? TileConfig{64, 64, 4, 2, "wgmma"} : TileConfig{192, 128, 16, 3, "ws"}));
            } else {
                CHECK((capped.block_m == plain.block_m && capped.block_n == plain.block_n &&
                       capped.variant == plain.variant));
            }
        }
    CHECK(default_tile_config(90, {DType::bf16, 192, false, 16384, 16384}) == TileConfig{128, 112, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 192, true, 4096, 4096}) == TileConfig{128, 112, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 192, true, 2048, 2048}) == TileConfig{128, 64, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 192, true, 1024, 1024}) == TileConfig{128, 64, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 160, false, 4096, 4096}) == TileConfig{128, 112, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 160, false, 2048, 2048}) == TileConfig{128, 112, 12, 2, "ws"});
    // Without the mask at 2k keys d 168-192 take 96 keys, whose blocks loop (at 112 keys they would not).
    CHECK(default_tile_config(90, {DType::bf16, 192, false, 2048, 2048}) == TileConfig{128, 96, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 168, false, 2048, 2048}) == TileConfig{128, 96, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 160, true, 1024, 1024}) == TileConfig{128, 64, 12, 3, "ws"});
    // Padded to 256 under the causal mask: 64 keys, whose blocks loop over pairs of tiles, up to 2k keys (at d 256 up
    // to 8k); 80 keys past that, and where blocks do not loop (a window).
    CHECK(default_tile_config(90, {DType::f16, 224, true, 1024, 1024}) == TileConfig{128, 64, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 200, true, 2048, 2048}) == TileConfig{128, 64, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 200, true, 4096, 4096}) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 256, true, 8192, 8192}) == TileConfig{128, 64, 12, 2, "ws"});
    ProblemClass windowed256{DType::bf16, 256, true, 1024, 1024};
    windowed256.mods.window = true;
    CHECK(default_tile_config(90, windowed256) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 64, true, 1024, 1024}) == TileConfig{256, 64, 20, 3, "ws"});
    // Past 8k keys plain d 97-128 under the causal mask and d 113-128 without it take wide key tiles in 2 stages.
    CHECK(default_tile_config(90, {DType::bf16, 128, true, 16384, 16384}) == TileConfig{128, 176, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 128, false, 16384, 16384}) == TileConfig{128, 176, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 112, true, 12288, 12288}) == TileConfig{128, 176, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 112, false, 16384, 16384}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 128, true, 8192, 8192}) == TileConfig{128, 128, 12, 3, "ws"});
    // Looping rows at d 113-128 (up to 1k keys without the mask, 2k under it): 2 stages, where Q has two buffers.
    CHECK(default_tile_config(90, {DType::f16, 128, true, 512, 512}) == TileConfig{128, 128, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 128, false, 512, 512}) == TileConfig{128, 128, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 128, true, 2048, 2048}) == TileConfig{128, 128, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 128, false, 2048, 2048}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 128, true, 4096, 4096}) == TileConfig{128, 128, 12, 3, "ws"});
    ProblemClass alibi128{DType::bf16, 128, true, 16384, 16384};
    alibi128.mods.alibi = true;
    CHECK(default_tile_config(90, alibi128) == TileConfig{128, 176, 12, 2, "ws"});
    alibi128.causal = false;  // its kernel keeps the loop, which costs 176 keys their overlap
    CHECK(default_tile_config(90, alibi128) == TileConfig{128, 160, 12, 2, "ws"});
    // A paged cache past 4k keys at d 113-128 takes 192 keys (a multiple of every page size's boxes), both masks.
    for (bool causal : {false, true}) {
        ProblemClass paged128{DType::bf16, 128, causal, 16384, 16384};
        paged128.paged = true;
        CHECK(default_tile_config(90, paged128) == TileConfig{128, 192, 12, 2, "ws"});
        paged128.seqlen_q = paged128.seqlen_k = 8192;
        CHECK(default_tile_config(90, paged128) == TileConfig{128, 192, 12, 2, "ws"});
        paged128.varlen = true;  // chunked prefill too
        CHECK(default_tile_config(90, paged128) == TileConfig{128, 192, 12, 2, "ws"});
        paged128.varlen = false;
        paged128.seqlen_q = paged128.seqlen_k = 4096;
        CHECK(default_tile_config(90, paged128) == TileConfig{128, 128, 12, 3, "ws"});
    }
    // ALiBi without softcap at d 65-128 takes 2 stages where 3 would leave its columns no room.
    for (int seqlen : {2048, 8192}) {
        ProblemClass alibi{DType::bf16, 128, true, seqlen, seqlen};
        alibi.mods.alibi = true;
        CHECK(default_tile_config(90, alibi) == TileConfig{128, 128, 12, 2, "ws"});
        alibi.head_dim = 80, alibi.mods.window = true;
        CHECK(default_tile_config(90, alibi) == TileConfig{128, 128, 12, 2, "ws"});
        alibi.mods.softcap = true, alibi.dtype = DType::f16;
        CHECK(default_tile_config(90, alibi) == TileConfig{128, 128, 12, 3, "ws"});
    }
    ProblemClass windowed128{DType::bf16, 128, true, 16384, 16384};
    windowed128.mods.window = true;
    CHECK(default_tile_config(90, windowed128) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, true, 16384, 16384}) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, false, 16384, 16384}) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, false, 2048, 2048}) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, false, 1024, 1024}) == TileConfig{128, 80, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, false, 512, 512}) == TileConfig{128, 64, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, true, 512, 512}) == TileConfig{128, 64, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 256, true, 1024, 1024}) == TileConfig{128, 64, 12, 2, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 96, false, 16384, 16384}) == TileConfig{192, 112, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 88, true, 8192, 8192}) == TileConfig{192, 96, 16, 3, "ws"});
    // Without the mask 112 keys, under it past 8k keys (no window), but not on pages (boxes of 16 rows) nor with
    // softcap.
    CHECK(default_tile_config(90, {DType::bf16, 96, true, 16384, 16384}) == TileConfig{192, 112, 16, 3, "ws"});
    ProblemClass causal_window96{DType::bf16, 96, true, 16384, 16384};
    causal_window96.mods.window = true;
    CHECK(default_tile_config(90, causal_window96) == TileConfig{192, 96, 16, 3, "ws"});
    ProblemClass d96{DType::bf16, 96, false, 4096, 4096};
    d96.mods.alibi = true;
    CHECK(default_tile_config(90, d96) == TileConfig{192, 112, 16, 3, "ws"});
    d96.mods.alibi = false, d96.paged = true;
    CHECK(default_tile_config(90, d96) == TileConfig{192, 96, 16, 3, "ws"});
    d96.paged = false, d96.mods.softcap = true, d96.dtype = DType::f16;
    CHECK(default_tile_config(90, d96) == TileConfig{192, 96, 16, 3, "ws"});
    d96.mods.softcap = false, d96.varlen = true;  // packed sequences too
    CHECK(default_tile_config(90, d96) == TileConfig{192, 112, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 96, false, 512, 512}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 96, true, 4096, 4096}) == TileConfig{192, 96, 16, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 96, true, 1024, 1024}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::bf16, 80, false, 16384, 16384}) == TileConfig{128, 128, 12, 3, "ws"});
    CHECK(default_tile_config(90, {DType::f16, 32, false, 16384, 16384}) == TileConfig{128, 128, 4, 2});
    CHECK(default_tile_config(80, {DType::bf16, 128, false, 16384, 16384}) == TileConfig{128, 64, 4, 2});
    CHECK(default_tile_config(100, {DType::bf16, 256, false, 16384, 16384}) == TileConfig{64, 64, 4, 1});
}

TEST_CASE("a cache warmed for sm_90 or sm_90a serves attention() on a 9.0 GPU", "[attention][config]") {
    CHECK(attention_arch("sm_90") == "sm_90a");
    CHECK(attention_arch("sm_90a") == "sm_90a");
    CHECK(attention_arch("sm_80") == "sm_80");
    CHECK(attention_arch("sm_86") == "sm_86");
    CHECK(attention_arch("compute_90") == "compute_90");
    CHECK_THROWS_AS(attention_arch("sm_9"), InvalidArgument);
}

TEST_CASE("a specialization renders its template arguments and launch shape", "[attention][config]") {
    const AttentionKernelSpec spec{DType::f32, 96, true, {64, 32, 4}};
    CHECK(spec.name_expression() == "fa_jit::attention_fwd_fp32<64, 32, 96, 4, true, 1, 1>");
    CHECK(spec.threads() == 128);
    // d = 96 rounds to 96 (a multiple of 16); Q/K rows padded to 112 floats, V rows to 100.
    CHECK(spec.shared_bytes() == 4u * ((64 + 32) * 112 + 32 * 100));
    CHECK(spec.source_name() == "attention_fp32.cu");
    CHECK(TileConfig{64, 32, 4}.to_string() == "64x32w4");

    const AttentionKernelSpec half{DType::bf16, 96, false, {128, 64, 4, 2}, /*even_mn=*/true};
    CHECK(half.name_expression() == "fa_jit::attention_fwd_f16<fa_jit::bf16_t, 128, 64, 96, 4, 2, false, true>");
    CHECK(half.source_name() == "attention_f16.cu");
    CHECK(half.threads() == 128);
    // Shared rows of 128 elements (d rounded up to 64), Q plus 2 stages of K and V, 2 bytes each.
    CHECK(half.shared_bytes() == 2u * 128 * (128 + 2 * 2 * 64));
    CHECK(AttentionKernelSpec{DType::f16, 64, true, {64, 32, 4, 3}}.name_expression() ==
          "fa_jit::attention_fwd_f16<fa_jit::half_t, 64, 32, 64, 4, 3, true, false>");

    // The Hopper kernel: no warps argument (one warpgroup per 64 rows); tiles 64x64-element swizzle blocks plus
    // 1 KB to align them.
    const AttentionKernelSpec hopper{DType::f16, 256, true, {128, 64, 8, 2, "wgmma"}, /*even_mn=*/true};
    CHECK(hopper.name_expression() == "fa_jit::attention_fwd_f16_wgmma<fa_jit::half_t, 128, 64, 256, 2, true, true>");
    CHECK(hopper.source_name() == "attention_f16_wgmma.cu");
    CHECK(hopper.threads() == 256);
    CHECK(hopper.shared_bytes() == 2u * 256 * (128 + 2 * 2 * 64) + 1024);
}

TEST_CASE("fp16/bf16 drop bounds checks when every tile is full", "[attention][config]") {
    AttentionArgs a = valid_args();
    a.dtype = DType::bf16, a.seqlen_q = 256, a.seqlen_k = 320;
    CHECK(attention_spec(a, {128, 64, 4, 2}).even_mn);
    CHECK_FALSE(attention_spec(a, {128, 128, 8, 2}).even_mn);  // 320 keys: two and a half tiles of 128
    a.seqlen_k = 100;
    CHECK_FALSE(attention_spec(a, {128, 64, 4, 2}).even_mn);
    a.seqlen_k = 0;  // no key tiles at all
    CHECK(attention_spec(a, {128, 64, 4, 2}).even_mn);
    a.dtype = DType::f32, a.seqlen_k = 384;  // the fp32 kernel has no such variant
    CHECK_FALSE(attention_spec(a, {128, 64, 4}).even_mn);
    CHECK_THROWS_WITH(attention_spec(a, {}), Catch::Contains("'tile'"));
}

TEST_CASE("short rows take the warp-specialized variant whose blocks loop over tiles", "[attention][config]") {
    AttentionArgs a = valid_args();
    a.dtype = DType::bf16, a.head_dim = 128, a.causal = true, a.seqlen_q = 1000, a.seqlen_k = 2048;
    const TileConfig tile{128, 128, 12, 3, "ws"};
    const AttentionKernelSpec loop = attention_spec(a, tile);
    CHECK(loop.tile_loop);
    CHECK(loop.name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, true, 0, false, false, false, true>");
    a.seqlen_k = 8192;
    CHECK(attention_spec(a, tile).tile_loop);
    a.seqlen_k = 8193;  // the next length bucket: one tile per block, without the loop (and the settled max)
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    CHECK(attention_spec(a, tile).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, true, 0, false, false, false, false, false, "
          "true>");
    a.seqlen_k = 512;
    // Every tile has the looping variant (none spills since the wgmma descriptors moved to uniform registers).
    CHECK(attention_spec(a, {192, 128, 16, 3, "ws"}).tile_loop);
    a.head_dim = 96;
    CHECK(attention_spec(a, {192, 96, 16, 3, "ws"}).tile_loop);
    a.head_dim = 256;
    CHECK(attention_spec(a, {128, 80, 12, 2, "ws"}).tile_loop);
    CHECK(attention_spec(a, {128, 64, 12, 2, "ws"}).tile_loop);
    a.head_dim = 160;
    CHECK(attention_spec(a, {128, 64, 12, 3, "ws"}).tile_loop);
    CHECK(attention_spec(a, {128, 112, 12, 2, "ws"}).tile_loop);
    a.head_dim = 128, a.window_left = 64;  // a window: keys per sequence, one tile per block
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    // Packed sequences loop under the causal mask (each tile's sequence read from cu_seqlens), plain rows only.
    a.window_left = -1, a.cu_seqlens_q = a.cu_seqlens_k = reinterpret_cast<const int*>(256);
    a.total_q = a.total_k = 4096;
    CHECK(attention_spec(a, tile).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, true, 0, true, false, false, true>");
    a.softcap = 30.f;
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    a.softcap = 0.f, a.causal = false;
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    // Only as many sequences as the kernel's table holds (64), of rows the loop serves (8k: packed_loop_fits).
    const AttentionArgs packed = a;
    a.causal = true, a.batch = 64;
    CHECK(attention_spec(a, tile).tile_loop);
    a.batch = 65;
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    a.batch = 1, a.seqlen_q = 8193;
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    a = packed;
    a.causal = true, a.cu_seqlens_q = a.cu_seqlens_k = nullptr;
    // Without the mask the looping variant serves rows of up to 2k keys; longer ones take a kernel without the loop.
    a.window_left = -1, a.causal = false;
    CHECK(attention_spec(a, tile).tile_loop);
    CHECK(attention_spec(a, tile).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, false, 0, false, false, false, true>");
    a.seqlen_k = 2049;
    CHECK_FALSE(attention_spec(a, tile).tile_loop);
    CHECK(attention_spec(a, tile).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, false, 0, false, false, false, false, false, "
          "true>");
    a.head_dim = 160, a.seqlen_k = 2048;
    CHECK(attention_spec(a, {128, 112, 12, 2, "ws"}).tile_loop);
    CHECK(attention_spec(a, {128, 112, 12, 2, "ws"}).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 112, 160, 2, false, 0, false, false, false, true>");
    CHECK(attention_spec(a, {128, 64, 12, 3, "ws"}).tile_loop);
    a.head_dim = 192;  // d 168-192 at 112 keys never loop
    CHECK(attention_spec(a, {128, 96, 12, 2, "ws"}).tile_loop);
    CHECK_FALSE(attention_spec(a, {128, 112, 12, 2, "ws"}).tile_loop);
    a.seqlen_k = 2049;
    CHECK_FALSE(attention_spec(a, {128, 96, 12, 2, "ws"}).tile_loop);
    // Warm-up names the same specialization for the length class.
    const std::vector<AttentionKernelSpec> warm = warmup_specs({DType::bf16, 128, true, 1000, 2048}, 90, false);
    REQUIRE(warm.size() == 1);
    CHECK(warm[0].tile_loop);
    CHECK(warmup_specs({DType::bf16, 128, true, 4096, 4096}, 90, false).at(0).tile_loop);
    CHECK_FALSE(warmup_specs({DType::bf16, 128, true, 16384, 16384}, 90, false).at(0).tile_loop);
}

TEST_CASE("rows past 2k keys at d <= 160 settle their maxima after the exponentials, softcap aside",
          "[attention][config]") {
    AttentionArgs a = valid_args();
    a.dtype = DType::bf16, a.head_dim = 64, a.seqlen_q = 16384, a.seqlen_k = 16384;
    const TileConfig tile{192, 128, 16, 2, "ws"};
    const AttentionKernelSpec spec = attention_spec(a, tile);
    CHECK(spec.settled_max);
    CHECK(spec.name_expression() == "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 192, 128, 64, 2, false, 0, false, "
                                    "false, false, false, false, true>");
    a.seqlen_k = 2048;  // the 4k length bucket and longer
    CHECK_FALSE(attention_spec(a, tile).settled_max);
    a.seqlen_k = 2049;
    CHECK(attention_spec(a, tile).settled_max);
    a.seqlen_k = 16384, a.causal = true;  // both masks up to d 160
    a.head_dim = 96;
    CHECK(attention_spec(a, {192, 112, 16, 3, "ws"}).settled_max);
    a.head_dim = 128;
    CHECK(attention_spec(a, {128, 176, 12, 2, "ws"}).settled_max);
    a.causal = false;
    CHECK(attention_spec(a, {128, 176, 12, 2, "ws"}).settled_max);
    a.head_dim = 160;
    CHECK(attention_spec(a, {128, 112, 12, 2, "ws"}).settled_max);
    a.head_dim = 192;
    CHECK_FALSE(attention_spec(a, {128, 96, 12, 2, "ws"}).settled_max);
    a.head_dim = 256;
    CHECK_FALSE(attention_spec(a, {128, 80, 12, 2, "ws"}).settled_max);
    a.head_dim = 64, a.alibi_slopes = reinterpret_cast<const float*>(256);  // ALiBi, both masks
    CHECK(attention_spec(a, tile).settled_max);
    a.causal = true;
    CHECK(attention_spec(a, tile).settled_max);
    CHECK(attention_spec(a, tile).name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 192, 128, 64, 2, true, 4, false, false, false, false, false, "
          "true>");
    a.causal = false, a.window_left = 5000;  // windows up to d 128, with ALiBi under the mask only
    a.head_dim = 128;
    CHECK_FALSE(attention_spec(a, {128, 128, 12, 2, "ws"}).settled_max);
    a.causal = true;
    CHECK(attention_spec(a, {128, 128, 12, 2, "ws"}).settled_max);
    a.alibi_slopes = nullptr, a.causal = false;
    CHECK(attention_spec(a, {128, 128, 12, 2, "ws"}).settled_max);
    a.head_dim = 64;  // on 192 rows too
    CHECK(attention_spec(a, tile).settled_max);
    a.window_right = 0;  // rows of 5001 keys
    CHECK(attention_spec(a, tile).settled_max);
    a.window_left = 4000, a.window_right = 96;  // a row's keys are the window's span: past 4k they settle
    CHECK(attention_spec(a, tile).settled_max);
    a.window_right = 95;
    CHECK_FALSE(attention_spec(a, tile).settled_max);
    a.causal = true, a.window_right = 100;  // under the mask a row sees window_left + 1 keys
    CHECK_FALSE(attention_spec(a, tile).settled_max);
    a.window_left = 4096;
    CHECK(attention_spec(a, tile).settled_max);
    a.causal = false, a.window_left = 5000, a.window_right = -1;
    a.head_dim = 160;
    CHECK_FALSE(attention_spec(a, {128, 64, 12, 2, "ws"}).settled_max);
    a.head_dim = 64;
    a.window_left = -1, a.softcap = 30;  // softcap, pages, packed sequences, other families: never
    CHECK_FALSE(attention_spec(a, tile).settled_max);
    a.softcap = 0;
    CHECK_FALSE(attention_spec(a, {128, 128, 8, 2, "wgmma"}).settled_max);
    AttentionArgs paged = a;
    paged_args(paged);
    paged.pages_per_seq = 16384 / 64, paged.num_pages = 2 * paged.pages_per_seq, paged.page_size = 64;
    CHECK_FALSE(attention_spec(paged, tile).settled_max);
    // Warm-up names the kernel each length bucket's rows run.
    CHECK(warmup_specs({DType::bf16, 64, false, 16384, 16384}, 90, false).at(0).settled_max);
    CHECK(warmup_specs({DType::bf16, 64, false, 4096, 4096}, 90, false).at(0).settled_max);
    CHECK_FALSE(warmup_specs({DType::bf16, 64, false, 2048, 2048}, 90, false).at(0).settled_max);
    ProblemClass windowed{DType::bf16, 64, false, 16384, 16384};
    windowed.mods.window = true;  // and the kernel for windows of 4k keys or fewer
    const std::vector<AttentionKernelSpec> warm = warmup_specs(windowed, 90, false);
    const auto settled = std::count_if(warm.begin(), warm.end(), [](const auto& s) { return s.settled_max; });
    CHECK(settled > 0);
    CHECK(2 * settled == static_cast<long>(warm.size()));
}

TEST_CASE("a paged cache at d <= 64 past 4k keys reads its block table by TMA where pages are whole half key tiles",
          "[attention][config]") {
    AttentionArgs a = valid_args();
    a.dtype = DType::bf16, a.seqlen_q = 4096, a.seqlen_k = 16384;
    paged_args(a);
    a.pages_per_seq = 16384 / 64, a.num_pages = 2 * a.pages_per_seq;
    const TileConfig tile{192, 128, 16, 3, "ws"};
    const auto table_map_at = [&](int page_size) {
        AttentionArgs paged = a;
        paged.page_size = page_size;
        return attention_spec(paged, tile).table_map;
    };
    for (int page_size : {64, 128, 192, 256, 1024}) CHECK(table_map_at(page_size));
    for (int page_size : {16, 32, 48, 80, 96}) CHECK_FALSE(table_map_at(page_size));  // 2+ boxes of under 64 rows
    // Past 4k keys only (the 8k length bucket on).
    AttentionArgs short_rows = a;
    short_rows.seqlen_k = 4096;
    CHECK_FALSE(attention_spec(short_rows, tile).table_map);
    short_rows.seqlen_k = 4097;
    CHECK(attention_spec(short_rows, tile).table_map);
    const AttentionKernelSpec spec = attention_spec(a, tile);
    CHECK(spec.name_expression() ==
          "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 192, 128, 64, 3, false, 0, false, true, false, false, true>");
    // The table's barrier and window follow the ring in shared memory.
    AttentionArgs small_pages = a;
    small_pages.page_size = 16;
    CHECK(spec.shared_bytes() > attention_spec(small_pages, tile).shared_bytes());
    a.head_dim = 40;  // padded to 64 columns
    CHECK(attention_spec(a, tile).table_map);
    a.head_dim = 128;
    CHECK_FALSE(attention_spec(a, {128, 128, 12, 3, "ws"}).table_map);
    a.head_dim = 64, a.causal = true;  // the mask, score modifiers, packed queries and other tiles: never
    CHECK_FALSE(attention_spec(a, tile).table_map);
    a.causal = false, a.softcap = 30;
    CHECK_FALSE(attention_spec(a, tile).table_map);
    a.softcap = 0;
    CHECK(attention_spec(a, {128, 64, 12, 3, "ws"}).table_map);           // pages of 64 are whole key tiles of 64
    CHECK_FALSE(attention_spec(a, {128, 128, 8, 2, "wgmma"}).table_map);  // no such variant in f16-wgmma
    // Warm-up compiles both paged kernels of the tile: pages a whole key tile long read the table by TMA.
    ProblemClass p{DType::bf16, 64, false, 16384, 16384};
    p.paged = p.seqused_k = true;
    int table_maps = 0;
    for (const AttentionKernelSpec& s : warmup_specs(p, 90, false)) table_maps += s.table_map;
    CHECK(table_maps == 1);
    CHECK(warmup_specs(p, 90, false).size() == 2);
    p.seqlen_q = p.seqlen_k = 4096;
    CHECK(warmup_specs(p, 90, false).size() == 1);
}

TEST_CASE("tile configurations print and parse both ways", "[attention][config]") {
    CHECK(TileConfig{128, 64, 4, 2}.to_string() == "128x64w4s2");
    for (const TileConfig& t : {TileConfig{64, 32, 4}, TileConfig{128, 64, 8, 3}})
        CHECK(parse_tile_config(t.to_string()) == t);
    for (const char* bad :
         {"", "64x64", "64x64w", "64x64w4x", "64x64w4s", "64x64w4s0", "64x64w4s2 ", "-64x64w4", "axbwc"}) {
        INFO("'" << bad << "'");
        CHECK_FALSE(parse_tile_config(bad).has_value());
    }
    // The fp32 family has no stages; the fp16/bf16 family needs them.
    CHECK(tile_is_legal(DType::f32, 64, {64, 64, 4}));
    CHECK_FALSE(tile_is_legal(DType::f32, 64, {64, 64, 4, 2}));
    CHECK(tile_is_legal(DType::bf16, 64, {128, 64, 4, 2}));
    CHECK_FALSE(tile_is_legal(DType::bf16, 64, {128, 64, 4}));
    CHECK_FALSE(tile_is_legal(DType::f16, 256, {128, 128, 8, 4}));  // 320 KB of shared memory

    // The Hopper kernel's tiles carry "-wgmma"; one warpgroup per 64 rows, head dims that are multiples of 64.
    const TileConfig hopper{128, 64, 8, 2, "wgmma"};
    CHECK(hopper.to_string() == "128x64w8s2-wgmma");
    CHECK(parse_tile_config("128x64w8s2-wgmma") == hopper);
    CHECK_FALSE(hopper == TileConfig{128, 64, 8, 2});
    for (const char* bad : {"-wgmma", "64x64w4-wgmma", "128x64w8s2-wgmm", "128x64w8s2-wgmma ", "128x64w8s2wgmma"}) {
        INFO("'" << bad << "'");
        CHECK_FALSE(parse_tile_config(bad).has_value());
    }
    CHECK(tile_is_legal(DType::bf16, 256, hopper));
    CHECK_FALSE(tile_is_legal(DType::f32, 256, hopper));
    CHECK_FALSE(tile_is_legal(DType::bf16, 96, hopper));                      // head_dim % 64 != 0
    CHECK_FALSE(tile_is_legal(DType::bf16, 128, {128, 64, 4, 2, "wgmma"}));   // warps != block_m / 16
    CHECK_FALSE(tile_is_legal(DType::bf16, 128, {128, 64, 8, 1, "wgmma"}));   // needs a K/V ring
    CHECK_FALSE(tile_is_legal(DType::bf16, 256, {128, 128, 8, 2, "wgmma"}));  // 289 KB of shared memory
    CHECK(tile_runs_on(hopper, 90));
    for (int cc : {80, 86, 89, 100, 120}) CHECK_FALSE(tile_runs_on(hopper, cc));
    CHECK(tile_runs_on(TileConfig{128, 64, 4, 2}, 80));
}

namespace {

// Head dims at which each family's defaults are compiled on every commit: powers of two, the odd multiples of 8
// and 16 that pad inside the kernels, and (fp32) head dims that are not multiples of 8.
const int kCommitHeadDims[] = {1, 33, 40, 64, 96, 100, 128, 160, 192, 256};

// The default specializations per (arch, dtype, head dim, causal), with and without bounds checks, for a prefill
// problem and three decode problems (one token with a group of 8 query heads; 4 speculative tokens with a group of 4,
// and with 32: MQA, row warps).
std::vector<AttentionKernelSpec> default_specs(const std::vector<int>& ccs, const std::vector<DType>& dtypes,
                                               const std::vector<int>& head_dims) {
    std::vector<AttentionKernelSpec> specs;
    for (int cc : ccs)
        for (DType dtype : dtypes)
            for (int d : head_dims) {
                if (tile_configs(dtype, d).empty()) continue;  // e.g. fp16/bf16 at d 33
                for (bool causal : {false, true})
                    for (const ProblemClass& p :
                         {ProblemClass{dtype, d, causal, 4096, 4096}, ProblemClass{dtype, d, causal, 1, 4096, 8},
                          ProblemClass{dtype, d, causal, 4, 4096, 4}, ProblemClass{dtype, d, causal, 4, 4096, 32}})
                        for (const AttentionKernelSpec& s : warmup_specs(p, cc, false))
                            if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
            }
    return specs;
}

// The most each default kernel may spill: tests/cpu/data/default_spills.txt, measured before the tile layer (the
// shipped defaults sit at 255 registers and some spill a few bytes; bench/NOTES.md's speeds include them). A kernel
// not listed there must not spill at all.
int spill_allowance(const std::string& name_and_arch) {
    static const std::map<std::string, int> allowed = [] {
        std::map<std::string, int> out;
        std::ifstream in(std::string(FA_JIT_SOURCE_DIR) + "/tests/cpu/data/default_spills.txt");
        REQUIRE(in);
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            const std::size_t bar = line.find(" | "), last = line.rfind(" | ");
            REQUIRE(bar != std::string::npos);
            out[line.substr(0, bar)] = std::stoi(line.substr(last + 3));
        }
        return out;
    }();
    const auto it = allowed.find(name_and_arch);
    return it == allowed.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("each family's default kernels compile for sm_80 and sm_90a without new spills", "[attention][compile]") {
    // fp16 and bf16 share each template: bf16 at every head dim, fp16 at one per family.
    std::vector<AttentionKernelSpec> specs =
        default_specs({80, 90}, {DType::f32, DType::bf16}, {std::begin(kCommitHeadDims), std::end(kCommitHeadDims)});
    for (const AttentionKernelSpec& s : default_specs({80, 90}, {DType::f16}, {96, 128}))
        if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
    // fp32 with per-sequence KV lengths (its kernels specialize on them).
    for (int cc : {80, 90})
        for (int d : {64, 128})
            for (bool causal : {false, true})
                for (const AttentionKernelSpec& s : warmup_specs({DType::f32, d, causal, 1, 4096, 1, true}, cc, false))
                    specs.push_back(s);
    // f16-wgmma is the default only for d 64 under the causal mask with short rows (up to 256, or below 2k keys with
    // a score modifier).
    for (const AttentionKernelSpec& s : warmup_specs({DType::bf16, 64, true, 256, 256}, 90, false))
        specs.push_back(s);
    // The warp-specialized family at the multiples of 64 and three padded head dims, causal or not (its defaults
    // skip some).
    for (int d : {40, 64, 96, 128, 160, 192, 256})
        for (bool causal : {false, true})
            specs.push_back({DType::bf16, d, causal, {128, d <= 128 ? 128 : 64, 12, 2, "ws"}});
    // Under the causal mask, short rows' variant whose blocks loop over pairs of tiles, with softcap and ALiBi too.
    for (int d : {40, 64, 96, 128, 160, 192}) {
        AttentionKernelSpec looping{DType::bf16, d, true, {128, d <= 128 ? 128 : 64, 12, 3, "ws"}};
        looping.tile_loop = true;
        specs.push_back(looping);
        if (d != 128) continue;
        looping.mods = {false, true, true};
        specs.push_back(looping);
    }
    specs.push_back({DType::bf16, 256, true, {128, 64, 12, 2, "ws"}});  // d 256's, 2 stages (up to 512 keys)
    specs.back().tile_loop = true;
    // Packed causal sequences in looping blocks (their tile table beside a 3-stage ring), d 64 and 128.
    for (const auto& [d, tile] : {std::pair{64, TileConfig{192, 128, 16, 3, "ws"}},
                                  std::pair{128, TileConfig{128, 128, 12, 3, "ws"}}}) {
        specs.push_back({DType::bf16, d, true, tile});
        specs.back().varlen = specs.back().tile_loop = true;
    }
    // Three consumer warpgroups at d 96 under the causal mask (the default from 2k keys), and their looping variant.
    specs.push_back({DType::bf16, 96, true, {192, 96, 16, 3, "ws"}});
    specs.push_back(specs.back());
    specs.back().tile_loop = true;
    // Without the mask, d 136-192 past 64 keys loop in a variant of their own (rows of up to 2k keys).
    for (const TileConfig& t : {TileConfig{128, 112, 12, 2, "ws"}, TileConfig{128, 96, 12, 2, "ws"}}) {
        specs.push_back({DType::bf16, t.block_n == 112 ? 160 : 192, false, t});
        specs.back().tile_loop = true;
    }
    // Its key tiles that are not a power of two: one S instruction of 80 / 96 / 112 keys; d 224's default.
    for (bool causal : {false, true}) specs.push_back({DType::bf16, 224, causal, {128, 80, 12, 2, "ws"}});
    for (bool causal : {false, true})
        for (const TileConfig& t :
             {TileConfig{128, 80, 12, 2, "ws"}, TileConfig{128, 96, 12, 2, "ws"}, TileConfig{128, 112, 12, 2, "ws"}})
            specs.push_back({DType::bf16, t.block_n == 80 ? 256 : 192, causal, t});
    // decode's one-row-warp tile past 8k keys, 4 stages deep (the problems above have 4k keys: 3 stages).
    for (bool causal : {false, true}) specs.push_back({DType::bf16, 128, causal, {16, 64, 4, 4, "split"}});
    specs.push_back({DType::bf16, 128, false, {32, 64, 4, 4, "split"}});  // one token of MQA there, on sm_90
    // One row warp there on sm_90: 32 keys per key warp at d 128, 2 stages at d 256.
    specs.push_back({DType::bf16, 128, true, {16, 128, 4, 2, "split"}});
    specs.push_back({DType::bf16, 256, true, {16, 64, 4, 2, "split"}});
    specs.push_back({DType::bf16, 64, false, {16, 256, 8, 2, "split"}});  // d 64: 8 key warps of 32 keys
    for (bool causal : {false, true}) {  // d 128 from a paged cache: 3 stages
        specs.push_back({DType::bf16, 128, causal, {16, 128, 4, 3, "split"}});
        specs.back().paged = true;
    }
    specs.push_back({DType::bf16, 256, false, {32, 32, 4, 4, "split"}});  // one token of MQA at d 256
    // decode-wgmma's two-warpgroup tiles (128 packed rows with score modifiers or pages; decode-ws takes the plain
    // ones).
    for (int d : {64, 128, 192, 256})
        for (bool causal : {false, true})
            specs.push_back({DType::bf16, d, causal, {128, d <= 128 ? 128 : 64, 8, 2, "wgmma-split"}});
    std::set<std::string> families;
    for (const auto& s : specs) families.insert(s.family());
    // Every registered family is covered: a new family whose problems these do not reach adds its own here.
    const std::vector<std::string> registered = kernel_families();
    CHECK(families == std::set<std::string>(registered.begin(), registered.end()));

    std::map<std::string, testing::PtxasUsage> usage;
    const auto failures = compile_all(specs, {"sm_80", "sm_90a"}, &usage);
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
    write_spill_report(usage);
    std::vector<std::string> spills;
    for (const auto& [name, u] : usage) {
        if (u.spill_stores > 0)
            UNSCOPED_INFO(fmt::format("{}: {} registers, {} bytes spill stores", name, u.registers, u.spill_stores));
        if (u.spill_stores > spill_allowance(name))
            spills.push_back(fmt::format("{}: {} bytes spill stores, more than the {} allowed", name, u.spill_stores,
                                         spill_allowance(name)));
    }
    CHECK(usage.size() >= 100);
    for (const auto& s : spills) UNSCOPED_INFO(s);
    CHECK(spills.empty());
}

namespace {

// The Hopper families fed by TMA, whose kernels spill nothing with or without modifiers, pages and packed sequences
// (ptxas balances their consumers' registers through setmaxnreg): a spill there is a regression, not an allowance.
bool spill_free_family(const std::string& family) {
    return family == "f16-ws" || family == "decode-ws" || family == "decode-wgmma";
}

// Compiles `specs` and `baseline` (the same kernels without a feature, pairwise) for sm_80 and sm_90a: every one
// compiles, and each spec spills at most 64 bytes more than its baseline, and nothing in the spill-free families.
void check_against_baseline(const std::vector<AttentionKernelSpec>& specs,
                            const std::vector<AttentionKernelSpec>& baseline) {
    std::map<std::string, testing::PtxasUsage> usage;
    std::vector<AttentionKernelSpec> all = specs;
    all.insert(all.end(), baseline.begin(), baseline.end());
    const auto failures = compile_all(all, {"sm_80", "sm_90a"}, &usage);
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
    write_spill_report(usage);
    for (std::size_t i = 0; i < specs.size(); ++i)
        for (const char* arch : {"sm_80", "sm_90a"}) {
            const auto with = usage.find(specs[i].name_expression() + " " + arch);
            const auto without = usage.find(baseline[i].name_expression() + " " + arch);
            if (with == usage.end() || without == usage.end()) continue;  // not built for this arch (sm_90a only)
            INFO(with->first << ": " << with->second.spill_stores << " bytes spill stores, "
                             << without->second.spill_stores << " in " << without->first);
            CHECK(with->second.spill_stores <= without->second.spill_stores + 64);
            if (spill_free_family(specs[i].family())) CHECK(with->second.spill_stores == 0);
        }
}

}  // namespace

// Each family's default kernels with every score modifier (window, softcap and ALiBi together, and the window alone),
// and with packed sequences where the family reads them, compile for sm_80 and sm_90a; their spills stay within 64
// bytes of the same kernel's without them.
TEST_CASE("each family's kernels with score modifiers and packed sequences compile for sm_80 and sm_90a",
          "[attention][compile]") {
    std::vector<AttentionKernelSpec> specs, plain;
    for (int cc : {80, 90})
        for (const ProblemClass& p :
             {ProblemClass{DType::bf16, 128, true, 4096, 4096},
              ProblemClass{DType::bf16, 256, false, 4096, 4096},  // f16-ws at 80 keys on sm_90
              ProblemClass{DType::bf16, 192, true, 4096, 4096},   // f16-ws at 112 keys on sm_90
              ProblemClass{DType::bf16, 64, true, 1024, 1024},    // f16-wgmma on sm_90
              ProblemClass{DType::f32, 64, true, 4096, 4096}, ProblemClass{DType::bf16, 128, false, 1, 8192, 8},
              ProblemClass{DType::bf16, 128, true, 4, 8192, 16},   // decode-wgmma (64 packed rows) on sm_90
              ProblemClass{DType::bf16, 128, true, 4, 8192, 32}})  // decode-ws (128 packed rows) on sm_90
            for (const ScoreMods& mods : {ScoreMods{true, true, true}, ScoreMods{true, false, false}}) {
                ProblemClass modified = p;
                modified.mods = mods;
                for (const AttentionKernelSpec& s : warmup_specs(modified, cc, false)) {
                    if (std::find(specs.begin(), specs.end(), s) != specs.end()) continue;
                    specs.push_back(s);
                    AttentionKernelSpec without = s;
                    without.mods = {};
                    plain.push_back(without);
                }
            }
    std::set<std::string> families;
    for (const auto& s : specs) families.insert(s.family());
    const std::vector<std::string> registered = kernel_families();
    CHECK(families == std::set<std::string>(registered.begin(), registered.end()));
    // Packed sequences in every family, with and without modifiers.
    for (int cc : {80, 90})
        for (const ScoreMods& mods : {ScoreMods{}, ScoreMods{true, true, true}})
            for (ProblemClass p : {ProblemClass{DType::bf16, 128, true, 4096, 4096},
                                   ProblemClass{DType::bf16, 256, false, 4096, 4096},  // f16-ws at 80 keys on sm_90
                                   ProblemClass{DType::bf16, 64, true, 1024, 1024},    // f16-wgmma on sm_90
                                   ProblemClass{DType::f32, 64, true, 4096, 4096},
                                   ProblemClass{DType::bf16, 128, false, 1, 8192, 8},     // decode
                                   ProblemClass{DType::bf16, 128, true, 4, 8192, 32}}) {  // decode-ws on sm_90
                p.varlen = true, p.mods = mods;
                for (AttentionKernelSpec s : warmup_specs(p, cc, false)) {
                    specs.push_back(s);
                    s.varlen = false, s.mods = {};
                    plain.push_back(s);
                }
            }

    check_against_baseline(specs, plain);
}

// Each paged family's default kernels, alone and with packed queries and every score modifier, compile for sm_80 and
// sm_90a; their spills stay within 64 bytes of the same kernel's on contiguous K / V.
TEST_CASE("each family's paged kernels compile for sm_80 and sm_90a", "[attention][compile]") {
    std::vector<AttentionKernelSpec> specs, contiguous;
    std::set<std::string> families;
    for (int cc : {80, 90})
        for (bool varlen : {false, true})
            for (ProblemClass p : {ProblemClass{DType::bf16, 128, true, 4096, 4096},
                                   ProblemClass{DType::bf16, 256, false, 4096, 4096},   // f16-ws at 80 keys on sm_90
                                   ProblemClass{DType::bf16, 64, true, 1024, 1024},     // f16-wgmma on sm_90
                                   ProblemClass{DType::f16, 96, true, 4096, 4096},      // f16-ws on sm_90
                                   ProblemClass{DType::bf16, 64, false, 16384, 16384},  // f16-ws table map
                                   ProblemClass{DType::f32, 64, true, 4096, 4096},
                                   ProblemClass{DType::bf16, 128, false, 1, 8192, 8},     // decode
                                   ProblemClass{DType::bf16, 128, true, 4, 8192, 16},     // decode-wgmma on sm_90
                                   ProblemClass{DType::bf16, 128, true, 4, 8192, 32}}) {  // decode-ws on sm_90
                // d 64 causal at 1k keys is there for f16-wgmma: sm_80's f16-mma kernel for it (128 x 128) spills
                // 176 bytes with pages, packed queries and every modifier against 48 without pages.
                if (cc == 80 && p.head_dim == 64 && p.seqlen_k == 1024) continue;
                // d 64 full at 16k is there for f16-ws's table-map kernel (no packed queries, no modifiers); with
                // both, sm_80's f16-mma kernel (128 x 128) spills 136 bytes against 28 without pages.
                if (p.head_dim == 64 && !p.causal && varlen) continue;
                p.paged = true, p.varlen = varlen, p.seqused_k = true;
                if (varlen) p.mods = ScoreMods{true, true, true};
                for (AttentionKernelSpec s : warmup_specs(p, cc, false)) {
                    if (std::find(specs.begin(), specs.end(), s) != specs.end()) continue;
                    families.insert(s.family());
                    specs.push_back(s);
                    s.paged = s.table_map = false;
                    contiguous.push_back(s);
                }
            }
    CHECK(families ==
          std::set<std::string>{"decode", "decode-wgmma", "decode-ws", "f16-mma", "f16-ws", "f16-wgmma", "fp32"});
    check_against_baseline(specs, contiguous);
}

TEST_CASE("every sweep configuration and head dim compiles for sm_80 and sm_90a", "[.][sweep][compile]") {
    std::vector<AttentionKernelSpec> specs;
    const auto add = [&](const AttentionKernelSpec& s) {
        if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
    };
    for (bool causal : {false, true})
        for (const TileConfig& t : tile_configs(DType::f32, 128)) add({DType::f32, 128, causal, t});
    // fp16/bf16 share one kernel template: bf16 covers the sweep, the other dtype and even_mn vary along with it.
    for (bool causal : {false, true})
        for (const TileConfig& t : tile_configs(DType::bf16, 128)) add({DType::bf16, 128, causal, t, causal});
    // The Hopper kernel (sm_90a only): every tile at the other head dims it serves.
    for (int d : {64, 192, 256})
        for (bool causal : {false, true})
            for (const TileConfig& t : tile_configs(DType::f16, d))
                if (t.variant == "wgmma") add({DType::f16, d, causal, t, !causal});
    // The default kernels of every head dim.
    std::vector<int> every_head_dim;
    for (int d = 1; d <= 256; ++d) every_head_dim.push_back(d);
    for (const auto& s : default_specs({80, 90}, {DType::f32, DType::bf16}, every_head_dim)) add(s);
    CHECK(specs.size() >= 300);
    const auto failures = compile_all(specs, {"sm_80", "sm_90a"});
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
}

// The warp-specialized kernel's experiment switches (constexpr knobs for bench/kernel_ab.py, off in the shipped
// kernels) must keep compiling, so that a GPU session can time them as they are: each switched on in the source text,
// compiled for sm_90a at the chooser's 16k tile, without spills and without serialized wgmmas.
TEST_CASE("the warp-specialized kernel's experiment switches compile for sm_90a without spills",
          "[attention][compile]") {
    struct Switch {
        const char* name;
        std::vector<std::pair<std::string, std::string>> values;  // constexpr name -> initializer
        int head_dim;
    };
    const std::vector<Switch> switches{
        {"stagger groups of 8", {{"kStaggerGroup", "8"}}, 128},
        {"the exact rescale skip", {{"kLazyRescaleLog2", "0"}, {"kLazyAfterSteps", "0"}}, 256}};
    std::vector<CompileRequest> requests;
    for (const Switch& sw : switches) {
        const auto specs = warmup_specs({DType::bf16, sw.head_dim, false, 16384, 16384}, 90, false);
        REQUIRE(!specs.empty());
        REQUIRE(specs.front().family() == "f16-ws");
        CompileRequest r = attention_compile_request(specs.front(), "sm_90a");
        for (const auto& [name, value] : sw.values) {
            const std::regex decl("(constexpr\\s[^;=]*\\b" + name + "\\s*=\\s*)[^;]+;");
            INFO(sw.name << ": " << name);
            REQUIRE(std::distance(std::sregex_iterator(r.source.text.begin(), r.source.text.end(), decl),
                                  std::sregex_iterator()) == 1);
            std::smatch m;
            std::regex_search(r.source.text, m, decl);
            r.source.text = m.prefix().str() + m[1].str() + value + ";" + m.suffix().str();
        }
        requests.push_back(r);
    }
    const auto outcomes = testing::compile_parallel(requests);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        INFO(switches[i].name << " at d " << switches[i].head_dim << ": " << requests[i].name_expressions.front());
        INFO(outcomes[i].error.substr(0, 2000));
        REQUIRE(outcomes[i].error.empty());
        CHECK(outcomes[i].compiled.log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
        const auto usage = outcomes[i].usage.find(outcomes[i].compiled.lowered_name(requests[i].name_expressions[0]));
        REQUIRE(usage != outcomes[i].usage.end());
        CHECK(usage->second.spill_stores == 0);
        CHECK(usage->second.spill_loads == 0);
    }
}

TEST_CASE("the wgmma kernel asked for another arch fails naming sm_90a", "[attention][compile]") {
    const AttentionKernelSpec hopper{DType::bf16, 128, false, {128, 128, 8, 2, "wgmma"}};
    for (const char* arch : {"sm_80", "sm_90"}) {
        INFO(arch);
        CHECK_THROWS_WITH(compile(attention_compile_request(hopper, arch)), Catch::Contains("sm_90a"));
    }
}

TEST_CASE("the reference and CUDA-core variants compile for sm_80 and sm_90a", "[attention][compile]") {
    for (const char* arch : {"sm_80", "sm_90a"}) {
        CompileRequest r;
        r.source = kernel_source("attention_reference.cu");
        for (const char* t : {"float", "fa_jit::half_t", "fa_jit::bf16_t"})
            for (const char* causal : {"false", "true"})
                r.name_expressions.push_back(fmt::format("fa_jit::attention_reference<{}, {}>", t, causal));
        r.arch = arch;
        CHECK(compile(r).lowered_names.size() == 6);

        CompileRequest simt;
        simt.source = kernel_source("attention_fp32.cu");
        simt.name_expressions = {"fa_jit::attention_fwd_fp32<64, 64, 128, 4, false, 0, 1>",
                                 "fa_jit::attention_fwd_fp32<64, 32, 72, 4, true, 0, 1>"};
        simt.arch = arch;
        CHECK(compile(simt).lowered_names.size() == 2);
    }
}
