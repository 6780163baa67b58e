// fa-jit-bench's problems as code: what a command line or a preset expands to, packed sequence lengths, the FLOP
// counts its TFLOP/s divide by, and the usage errors (no GPU needed).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "fa-jit-bench/problems.hpp"

using namespace fa_jit;
using namespace fa_jit::bench;

namespace {

// The problems of a command line, parsed as fa-jit-bench parses it.
std::vector<Problem> problems_of(const std::string& command_line) {
    CLI::App app;
    BenchOptions options;
    add_options(app, options);
    app.parse("fa-jit-bench " + command_line, true);
    return make_problems(options);
}

}  // namespace

TEST_CASE("fa-jit-bench --varlen packs a batch's tokens into sequences of 1..N", "[tools][varlen]") {
    const std::vector<Problem> problems =
        problems_of("--batch 4 --heads 16 --seqlen-q 16k --head-dim 128 --dtype bf16 --causal yes --varlen 8192");
    REQUIRE(problems.size() == 1);
    const Problem& p = problems[0];
    CHECK(p.varlen());
    const std::vector<int> lengths = p.packed_lengths();
    CHECK(std::accumulate(lengths.begin(), lengths.end(), 0LL) == 4LL * 16384);
    CHECK(std::all_of(lengths.begin(), lengths.end(), [](int n) { return n >= 1 && n <= 8192; }));
    CHECK(lengths.size() >= 8);            // 64k tokens, mean length ~4k
    CHECK(lengths == p.packed_lengths());  // fixed seed: every run and every tool sees the same batch
    CHECK(std::adjacent_find(lengths.begin(), lengths.end(), std::not_equal_to<int>()) != lengths.end());

    SECTION("TFLOP/s count each sequence's visible pairs") {
        double pairs = 0;
        for (long long n : lengths) pairs += n * (n + 1) / 2.0;
        CHECK(p.flops() == Approx(4.0 * 16 * 128 * pairs).epsilon(1e-12));
        Problem full = p;
        full.causal = false;
        double all = 0;
        for (long long n : lengths) all += double(n) * n;
        CHECK(full.flops() == Approx(4.0 * 16 * 128 * all).epsilon(1e-12));
    }
    SECTION("the problem class is the library's: packed, the longest sequence as the length") {
        const ProblemClass c = p.problem_class();
        CHECK(c.varlen);
        CHECK(c.seqlen_q == *std::max_element(lengths.begin(), lengths.end()));
        CHECK(c.seqlen_k == c.seqlen_q);
    }
    SECTION("the label names the packing") {
        const std::string label = p.label();
        CAPTURE(label);
        CHECK(label.find("varlen" + std::to_string(lengths.size()) + "x1..8192 T65536") != std::string::npos);
    }
    SECTION("a window counts the pairs inside it per sequence") {
        Problem w = p;
        w.mods.window_left = 100, w.mods.window_right = 0;
        double pairs = 0;
        for (long long n : lengths)
            for (long long i = 0; i < n; ++i) pairs += std::min(i, 100LL) + 1;
        CHECK(w.flops() == Approx(4.0 * 16 * 128 * pairs).epsilon(1e-12));
    }
}

TEST_CASE("fa-jit-bench --varlen refuses what it cannot pack, naming the options", "[tools][varlen]") {
    CHECK_THROWS_WITH(problems_of("--seqlen-q 1024 --seqlen-k 2048 --varlen 512"),
                      Catch::Contains("--varlen") && Catch::Contains("--seqlen-k"));
    CHECK_THROWS_WITH(problems_of("--seqlen-q 1024 --varlen 512 --page-size 64"),
                      Catch::Contains("--varlen") && Catch::Contains("--page-size"));
    CHECK_THROWS_AS(problems_of("--varlen -5"), CLI::ValidationError);
}

TEST_CASE("fa-jit-bench --preset serving packs 64k tokens into sequences of 1..8k, beside a fixed batch of them",
          "[tools][varlen]") {
    const std::vector<Problem> problems = problems_of("--preset serving");
    const auto packed = std::find_if(problems.begin(), problems.end(), [](const Problem& p) { return p.varlen(); });
    REQUIRE(packed != problems.end());
    CHECK(packed->causal);
    CHECK(packed->dtype == DType::bf16);
    CHECK(packed->head_dim == 128);
    CHECK(packed->heads == 16);
    CHECK(packed->varlen_max == 8192);
    const std::vector<int> lengths = packed->packed_lengths();
    CHECK(std::accumulate(lengths.begin(), lengths.end(), 0LL) == 65536);
    // The other rows stay fixed-length; the next one holds the same tokens at the mean length.
    CHECK(std::count_if(problems.begin(), problems.end(), [](const Problem& p) { return p.varlen(); }) == 1);
    REQUIRE(packed + 1 != problems.end());
    const Problem& fixed = packed[1];
    CHECK(fixed.batch == static_cast<int>(lengths.size()));
    CHECK(fixed.seqlen_q == 65536 / fixed.batch);
    CHECK(fixed.seqlen_k == fixed.seqlen_q);
    CHECK(fixed.causal);
    CHECK(fixed.heads == packed->heads);
}
