// The command-line tools, run as the user runs them: separate processes, a private cache directory, exit codes
// and output checked. fa-jit-cache's warmup needs NVRTC (no GPU); fa-jit-bench is only checked without a GPU.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fa_jit/jit.hpp"
#include "fa_jit/tuning.hpp"

namespace {

namespace fs = std::filesystem;

const std::string kToolsDir = FA_JIT_WORKER_DIR "/../tools";
const std::string kCacheTool = kToolsDir + "/fa-jit-cache";
const std::string kBenchTool = kToolsDir + "/fa-jit-bench";

struct ToolResult {
    int exit_code = -1;
    std::string out, err;
};

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// A fresh private directory (mkdtemp: mode 0700, which the cache requires), removed with the object.
class TempDir {
public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "fa_jit_tools_XXXXXX").string();
        if (!::mkdtemp(pattern.data())) FAIL("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// Runs `tool args` with FA_JIT_CACHE_DIR=`cache_dir` set in the child only; captures stdout and stderr.
ToolResult run_tool(const std::string& tool, const std::string& args, const fs::path& cache_dir) {
    INFO(tool << " is not built (FA_JIT_BUILD_TOOLS=ON builds it)");
    REQUIRE(fs::exists(tool));
    const fs::path err_file = cache_dir.parent_path() / (cache_dir.filename().string() + ".stderr");
    const std::string command = "env FA_JIT_CACHE_DIR=" + quoted(cache_dir.string()) + " FA_JIT_LOG=warn " +
                                quoted(tool) + " " + args + " 2>" + quoted(err_file.string());
    ToolResult r;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
    const int status = ::pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_file(err_file);
    fs::remove(err_file);
    INFO(command << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    return r;
}

nlohmann::json parse_json(const ToolResult& r) {
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    REQUIRE_NOTHROW(nlohmann::json::parse(r.out));
    return nlohmann::json::parse(r.out);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

void flip_middle_byte(const fs::path& file) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f);
    f.seekg(0, std::ios::end);
    const std::streamoff middle = f.tellg() / 2;
    char byte = 0;
    f.seekg(middle);
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    f.seekp(middle);
    f.write(&byte, 1);
}

}  // namespace

TEST_CASE("fa-jit-cache --help explains the subcommands and the environment", "[tools]") {
    TempDir dir;
    const ToolResult r = run_tool(kCacheTool, "--help", dir.path());
    CHECK(r.exit_code == 0);
    for (const char* word : {"warmup", "list", "verify", "prune", "clear", "info", "FA_JIT_CACHE_DIR"})
        CHECK(contains(r.out, word));
    CHECK(run_tool(kCacheTool, "warmup --help", dir.path()).exit_code == 0);
}

TEST_CASE("fa-jit-cache usage errors exit with code 2", "[tools]") {
    TempDir dir;
    CHECK(run_tool(kCacheTool, "", dir.path()).exit_code == 2);            // no subcommand
    CHECK(run_tool(kCacheTool, "frobnicate", dir.path()).exit_code == 2);  // unknown subcommand
    const ToolResult prune = run_tool(kCacheTool, "prune --max-bytes 12X", dir.path());
    CHECK(prune.exit_code == 2);
    CHECK(contains(prune.err, "--max-bytes"));
}

TEST_CASE("fa-jit-cache info --json reports the cache directory from FA_JIT_CACHE_DIR", "[tools]") {
    TempDir dir;
    const ToolResult r = run_tool(kCacheTool, "info --json", dir.path());
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = parse_json(r);
    CHECK(j["cache"]["dir"] == dir.path().string());
    CHECK(j["cache"]["usable"] == true);
    CHECK(j["cache"]["entries"] == 0);
    CHECK(j.contains("nvrtc"));
    CHECK(j.contains("driver"));
    CHECK(j["devices"].is_array());
    // The tool's library finds the compile worker built beside it.
    REQUIRE(j["nvrtc"]["found"] == true);
    REQUIRE(j["nvrtc"]["worker"].is_string());
    CHECK(contains(j["nvrtc"]["worker"].get<std::string>(), "fa-jit-nvrtc"));
}

TEST_CASE("fa-jit-cache warmup fills the cache, then list, verify, prune and clear maintain it", "[tools]") {
    TempDir dir;
    const std::string warmup = "warmup --arch sm_80 --head-dim 64 --causal no --json";

    // First warmup compiles; an identical second one finds everything cached.
    const ToolResult first = run_tool(kCacheTool, warmup, dir.path());
    REQUIRE(first.exit_code == 0);
    const nlohmann::json j1 = parse_json(first);
    CHECK(j1["compiled"].get<int>() >= 1);
    CHECK(j1["failed"] == 0);
    const int kernels = j1["compiled"].get<int>() + j1["cached"].get<int>();

    const ToolResult second = run_tool(kCacheTool, warmup, dir.path());
    REQUIRE(second.exit_code == 0);
    const nlohmann::json j2 = parse_json(second);
    CHECK(j2["compiled"] == 0);
    CHECK(j2["cached"] == kernels);
    CHECK(j2["failed"] == 0);

    // list shows the entries.
    const ToolResult list = run_tool(kCacheTool, "list --json", dir.path());
    REQUIRE(list.exit_code == 0);
    const nlohmann::json entries = parse_json(list);
    REQUIRE(entries.is_array());
    REQUIRE(entries.size() == static_cast<std::size_t>(kernels));
    for (const auto& e : entries) {
        CHECK(e["arch"] == "sm_80");
        CHECK(contains(e["kernel"].get<std::string>(), "attention"));
    }
    CHECK(run_tool(kCacheTool, "list --csv", dir.path()).exit_code == 0);
    // Each entry names its kernel family: together, the families attention() picks on sm_80 for the dtypes warmed.
    std::set<std::string> expected_families, listed_families;
    for (const fa_jit::DType d : {fa_jit::DType::f32, fa_jit::DType::f16, fa_jit::DType::bf16}) {
        expected_families.insert(fa_jit::kernel_family_for({d, 64, false, 4096, 4096}, 80));
        expected_families.insert(fa_jit::kernel_family_for({d, 64, false, 1, 4096}, 80));  // decode
    }
    for (const auto& e : entries) {
        REQUIRE(e.contains("family"));
        listed_families.insert(e["family"].get<std::string>());
    }
    CHECK(listed_families == expected_families);
    CHECK(contains(run_tool(kCacheTool, "list", dir.path()).out, "family"));
    CHECK(contains(run_tool(kCacheTool, "list --csv", dir.path()).out, "family"));

    // verify passes, then catches a corrupted entry, names it, and --fix removes it.
    CHECK(run_tool(kCacheTool, "verify", dir.path()).exit_code == 0);
    const std::string key = entries[0]["key"].get<std::string>();
    flip_middle_byte(entries[0]["file"].get<std::string>());
    const ToolResult bad = run_tool(kCacheTool, "verify", dir.path());
    CHECK(bad.exit_code == 1);
    CHECK(contains(bad.out, key));
    const ToolResult fix = run_tool(kCacheTool, "verify --fix", dir.path());
    CHECK(fix.exit_code == 0);
    CHECK_FALSE(fs::exists(entries[0]["file"].get<std::string>()));
    CHECK(run_tool(kCacheTool, "verify", dir.path()).exit_code == 0);

    // prune to zero bytes leaves no entries.
    run_tool(kCacheTool, warmup, dir.path());  // put the removed entry back
    const ToolResult prune = run_tool(kCacheTool, "prune --max-bytes 0", dir.path());
    CHECK(prune.exit_code == 0);
    CHECK(parse_json(run_tool(kCacheTool, "list --json", dir.path())).empty());

    // clear removes whatever a new warmup wrote.
    run_tool(kCacheTool, warmup, dir.path());
    const ToolResult clear = run_tool(kCacheTool, "clear --json", dir.path());
    CHECK(clear.exit_code == 0);
    CHECK(parse_json(clear)["removed"] == kernels);
    CHECK(parse_json(run_tool(kCacheTool, "info --json", dir.path()))["cache"]["entries"] == 0);
}

TEST_CASE("fa-jit-cache warmup compiles the chosen tile's variants, and the decode tiles", "[tools]") {
    TempDir dir;
    const ToolResult r =
        run_tool(kCacheTool, "warmup --arch sm_90 --dtype bf16 --head-dim 128 --causal yes --json", dir.path());
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = parse_json(r);
    // The prefill tile (sm_90: the warp-specialized one, bounds-checked only); decode at 16, 32, 64 and 128 packed
    // rows (warmup_plan.cpp): mma.sync up to 32 rows, warpgroup MMA at 64, the warp-specialized split kernel at 128.
    std::set<std::string> expected_decode;
    for (const auto& [seqlen_q, group] : {std::pair{1, 1}, std::pair{4, 8}, std::pair{4, 16}, std::pair{4, 32}})
        expected_decode.insert(
            fa_jit::default_tile_config(90, {fa_jit::DType::bf16, 128, true, seqlen_q, 4096, group}).to_string());
    CHECK(expected_decode.size() == 4);
    CHECK(j["compiled"] == 1 + static_cast<int>(expected_decode.size()));  // f16-ws has no even-length variant
    CHECK(j["failed"] == 0);
    const fa_jit::TileConfig chosen = fa_jit::default_tile_config(90, {fa_jit::DType::bf16, 128, true, 4096, 4096});
    std::vector<bool> evens;
    std::set<std::string> decode_tiles;
    for (const auto& item : j["items"]) {
        CHECK(item["arch"] == "sm_90a");
        CHECK(item["dtype"] == "bf16");
        if (item["family"] == "decode" || item["family"] == "decode-wgmma" || item["family"] == "decode-ws") {
            decode_tiles.insert(item["config"].get<std::string>());
            continue;
        }
        CHECK(item["config"] == chosen.to_string());
        CHECK(item["family"] == "f16-ws");
        CHECK_FALSE(item.contains("even_mn"));  // the family has one variant: the field is left out
        evens.push_back(false);
    }
    CHECK(decode_tiles == expected_decode);
    std::sort(evens.begin(), evens.end());
    CHECK(evens == std::vector<bool>{false});
    CHECK(chosen.variant == "ws");  // sm_90: the warp-specialized Hopper kernel

    // Other archs get the mma.sync kernel: no wgmma tile is planned for sm_80.
    const ToolResult ampere =
        run_tool(kCacheTool, "warmup --arch sm_80 --dtype bf16 --head-dim 128 --causal no --json", dir.path());
    REQUIRE(ampere.exit_code == 0);
    const nlohmann::json ampere_json = parse_json(ampere);  // kept: items must not outlive the parsed document
    for (const auto& item : ampere_json["items"]) {
        if (item["family"] == "decode") continue;
        CHECK(item["config"] == "128x64w4s2");
        CHECK(item["family"] == "f16-mma");
    }

    const ToolResult bad = run_tool(kCacheTool, "warmup --arch sm_80 --dtype fp16 --head-dim 36", dir.path());
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "multiple of 8"));
}

TEST_CASE("fa-jit-cache warmup compiles each --seqlen class's default kernels", "[tools]") {
    TempDir dir;
    // d 64 under the causal mask on sm_90: 257-2048 keys on 256 x 64, from 4k the 192-row tile.
    const fa_jit::TileConfig short_rows = fa_jit::default_tile_config(90, {fa_jit::DType::bf16, 64, true, 1024, 1024});
    const fa_jit::TileConfig long_rows = fa_jit::default_tile_config(90, {fa_jit::DType::bf16, 64, true, 16384, 16384});
    REQUIRE(short_rows != long_rows);
    const ToolResult r = run_tool(
        kCacheTool, "warmup --arch sm_90 --dtype bf16 --head-dim 64 --causal yes --seqlen 1k,16384 --json", dir.path());
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = parse_json(r);
    CHECK(j["failed"] == 0);
    std::set<std::string> prefill;
    for (const auto& item : j["items"])
        if (item["family"] == "f16-wgmma" || item["family"] == "f16-ws")
            prefill.insert(item["config"].get<std::string>());
    CHECK(prefill == std::set<std::string>{short_rows.to_string(), long_rows.to_string()});

    for (const char* bad : {"--seqlen 0", "--seqlen 2x", "--seqlen ,"}) {
        const ToolResult e = run_tool(kCacheTool, std::string("warmup --arch sm_90 --head-dim 64 ") + bad, dir.path());
        CHECK(e.exit_code == 2);
        CHECK(contains(e.err, "--seqlen"));
    }
}

TEST_CASE("fa-jit-cache warmup --features compiles each named set of score modifiers", "[tools]") {
    TempDir dir;
    const ToolResult r =
        run_tool(kCacheTool,
                 "warmup --arch sm_80 --dtype bf16 --head-dim 64 --causal yes --features none --features "
                 "window,softcap --json",
                 dir.path());
    REQUIRE(r.exit_code == 0);
    std::map<std::string, int> per_set;
    const nlohmann::json j = parse_json(r);
    for (const auto& item : j["items"]) {
        CHECK(item["status"] == "compiled");
        ++per_set[item["features"].get<std::string>()];
    }
    // The same kernels, once plain and once with the modifiers compiled in.
    CHECK(per_set.size() == 2);
    CHECK(per_set["none"] > 0);
    CHECK(per_set["none"] == per_set["window,softcap"]);
    const ToolResult packed = run_tool(kCacheTool,
                                       "warmup --arch sm_90 --dtype fp32,bf16 --head-dim 64 --causal yes "
                                       "--features varlen --json",
                                       dir.path());
    REQUIRE(packed.exit_code == 0);
    const nlohmann::json pj = parse_json(packed);
    std::set<std::string> packed_dtypes, packed_families;
    for (const auto& item : pj["items"]) {
        CHECK(item["features"] == "none+varlen");
        packed_families.insert(item["family"].get<std::string>());
        packed_dtypes.insert(item["dtype"].get<std::string>());
    }
    CHECK(packed_dtypes == std::set<std::string>{"fp32", "bf16"});
    CHECK(packed_families.count("decode") == 1);  // every family reads packed sequences
    const ToolResult paged = run_tool(kCacheTool,
                                      "warmup --arch sm_90 --dtype bf16 --head-dim 64 --causal yes --features paged "
                                      "--features varlen,paged --json",
                                      dir.path());
    REQUIRE(paged.exit_code == 0);
    std::map<std::string, std::set<std::string>> paged_families;  // per feature set
    const nlohmann::json paged_json = parse_json(paged);
    for (const auto& item : paged_json["items"]) {
        CHECK(item["status"] == "compiled");
        paged_families[item["features"].get<std::string>()].insert(item["family"].get<std::string>());
    }
    // Prefill on the warp-specialized family, decode on the split-KV ones, with and without packed queries.
    for (const char* set : {"none+paged", "none+varlen+paged"}) {
        INFO(set);
        CHECK(paged_families[set].count("f16-ws") == 1);
        CHECK(paged_families[set].count("decode") == 1);
    }
    const ToolResult bad = run_tool(kCacheTool, "warmup --arch sm_80 --features window,pages", dir.path());
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "--features"));
}

TEST_CASE("fa-jit-cache warmup rejects an invalid arch with exit code 2", "[tools]") {
    TempDir dir;
    const ToolResult r = run_tool(kCacheTool, "warmup --arch sm_12", dir.path());
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "arch"));
    CHECK(contains(r.err, "sm_12"));
}

TEST_CASE("fa-jit-bench --help works without a GPU", "[tools]") {
    TempDir dir;
    const ToolResult r = run_tool(kBenchTool, "--help", dir.path());
    CHECK(r.exit_code == 0);
    for (const char* word : {"--sweep", "--preset", "--config", "--save", "--json"}) CHECK(contains(r.out, word));
    CHECK(run_tool(kBenchTool, "--batch 0", dir.path()).exit_code == 2);
    CHECK(run_tool(kBenchTool, "--config 64by64", dir.path()).exit_code == 2);
    for (const char* word :
         {"--window", "--softcap", "--alibi", "serving", "--page-size", "--page-order", "--warmup-ms"})
        CHECK(contains(r.out, word));
    for (const char* bad : {"--window 5", "--window 1,-2", "--window a,b", "--softcap -1", "--page-size 40",
                            "--page-size -16", "--page-order sorted", "--warmup-ms -1", "--warmup-ms x"}) {
        INFO(bad);
        CHECK(run_tool(kBenchTool, bad, dir.path()).exit_code == 2);
    }
}

TEST_CASE("fa-jit-bench without a GPU exits 3 saying so", "[tools]") {
    if (fa_jit::device_count() > 0) {
        WARN("a CUDA device is present: this test is for machines without one");
        return;
    }
    TempDir dir;
    const ToolResult r = run_tool(kBenchTool, "", dir.path());
    CHECK(r.exit_code == 3);
    CHECK(contains(r.err, "no CUDA device"));
    // Valid options get as far as the device check too.
    CHECK(run_tool(kBenchTool, "--page-size 64 --page-order ordered", dir.path()).exit_code == 3);
    CHECK(run_tool(kBenchTool, "--warmup-ms 2500", dir.path()).exit_code == 3);
}
