// Tile configurations: the legal space, the built-in choice, and the tuning file that overrides it.
#include "attention/seqlen_bucket.hpp"
#include "attention_f16_layout.cuh"
#include "attention_fp32_layout.cuh"
#include "attention_wgmma_layout.cuh"
#include "cache/disk_cache.hpp"
#include "fa_jit/attention.hpp"
#include "util/log.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <mutex>
#include <optional>

namespace fa_jit {

std::vector<TileConfig> tile_configs(DType dtype, int head_dim) {
    std::vector<TileConfig> out;
    if (dtype == DType::f32) {
        for (int block_m : {16, 32, 64, 128})
            for (int block_n : {16, 32, 64, 128})
                for (int warps : {1, 2, 4, 8})
                    if (fp32_layout::legal(block_m, block_n, warps, head_dim)) out.push_back({block_m, block_n, warps});
        return out;
    }
    // fp16/bf16: 4 or 8 warps (fewer cannot hide the mma and cp.async latency), 1 or 2 16-row m-tiles per warp,
    // 32..128 keys per step, single K/V buffers or a 2- or 3-deep K/V ring.
    for (int block_m : {64, 128})
        for (int block_n : {32, 64, 128})
            for (int warps : {4, 8})
                for (int stages : {1, 2, 3})
                    if (f16_layout::legal(block_m, block_n, warps, stages, head_dim))
                        out.push_back({block_m, block_n, warps, stages});
    // The Hopper kernel: one or two warpgroups, 64 or 128 keys per step, a 2- or 3-deep K/V ring.
    for (int block_m : {64, 128})
        for (int block_n : {64, 128})
            for (int stages : {2, 3})
                if (wgmma_layout::legal(block_m, block_n, block_m / 16, stages, head_dim))
                    out.push_back({block_m, block_n, block_m / 16, stages, true});
    return out;
}

namespace {

// Shared memory a block may opt into, by compute capability (CUDA programming guide, "compute capabilities").
std::size_t max_shared_bytes(int cc) {
    if (cc == 80 || cc == 87) return 163 * 1024;
    if (cc == 90 || cc == 100 || cc == 103) return 227 * 1024;
    return 99 * 1024;  // 8.6, 8.9, 12.x and anything unknown: the smallest of the sm_80+ parts
}

// Candidates in order of preference; the first that fits the device's shared memory wins. Figures measured on an
// H200 at 16k tokens (bench/NOTES.md): TFLOP/s of the 3xTF32 kernel.
std::vector<TileConfig> preferences_fp32(const ProblemClass& p) {
    if (p.head_dim <= 64)
        // 128 query rows x 64 keys: 77 KB, 230 registers, 61 TFLOP/s. Causal prefers 64-row tiles (53 TFLOP/s): the
        // diagonal tile wastes half its work, and smaller tiles waste less.
        return p.causal ? std::vector<TileConfig>{{64, 64, 4}, {64, 32, 4}}
                        : std::vector<TileConfig>{{128, 64, 4}, {64, 64, 4}, {64, 32, 4}};
    if (p.head_dim <= 128)
        // Non-causal: 128 x 32 over 4 warps (107 KB, 254 registers, 60 TFLOP/s). Causal: 8 warps on 128 x 64
        // (141 KB, 196 registers, 53 TFLOP/s); <128, 32, 128, 4, causal> spills.
        return p.causal ? std::vector<TileConfig>{{128, 64, 8}, {64, 64, 4}, {64, 32, 4}}
                        : std::vector<TileConfig>{{128, 32, 4}, {64, 64, 4}, {64, 32, 4}};
    // d > 128: 8 warps on 128 x 32 needs 203 KB (sm_90: 57 TFLOP/s); 64 x 32 over 4 warps (135 KB) elsewhere.
    return {{128, 32, 8}, {64, 32, 4}, {32, 32, 2}, {16, 16, 1}};
}

// fp16/bf16 (attention_f16.cu), bf16 TFLOP/s on an H100 at 16k tokens (bench/NOTES.md). mma.sync on Hopper runs
// short of shared-memory bandwidth unless each K/V fragment feeds two 16-row m-tiles: 128 rows over 4 warps wins
// wherever the registers allow it (Q is then re-read from shared memory, as FlashAttention-2 does).
std::vector<TileConfig> preferences_f16(int cc, const ProblemClass& p) {
    if (cc == 90 && p.head_dim % 64 == 0) {
        // Hopper, d 64 / 128 / 192 / 256: the wgmma kernel (attention_f16_wgmma.cu), 1.2-1.9x the mma.sync one.
        // bf16 TFLOP/s, FlashAttention protocol (N 512..16k), H100 (bench/NOTES.md, "wgmma kernel").
        // d 64: one warpgroup on 64 x 64 (41 KB, 137-152 registers: several CTAs per SM): 327-409 full, 239-394 causal;
        // 64 x 128 309-404 / 200-385; two warpgroups on 128 x 128 259-342 / 170-336.
        if (p.head_dim <= 64) return {{64, 64, 4, 2, true}, {64, 128, 4, 2, true}};
        // d 128: two warpgroups on 128 x 128 (161 KB): 345-488 full, 226-492 causal; 128 x 64 309-415 / 220-442;
        // 64 x 64 over one warpgroup 342-461 / 259-474 (ahead only on short causal rows).
        if (p.head_dim <= 128) return {{128, 128, 8, 2, true}, {128, 64, 8, 2, true}};
        // d 256: two warpgroups on 128 x 64 (193 KB): 379-562 full, 253-548 causal; 64 x 64 over one warpgroup
        // 299-398 / 223-398.
        return {{128, 64, 8, 2, true}, {64, 64, 4, 2, true}};
    }
    if (p.head_dim <= 64)
        // 128 x 128 over 4 warps (80 KB at d 64): the fastest of the 27 tiles at every length swept (N 512..16k, causal
        // or not): 286-340 TFLOP/s full, 191-322 causal, 2-7% ahead of 128 x 64 (which stays the fallback).
        return {{128, 128, 4, 2}, {128, 64, 4, 2}};
    if (p.head_dim <= 128)
        // 128 x 64 over 4 warps (96 KB at d 128): 287-378 TFLOP/s, 1.04-1.20x FA2; 64 x 64 was 10-15% slower.
        return {{128, 64, 4, 2}, {64, 64, 4, 2}};
    // d > 128: the O accumulator alone takes 128 registers at d 256, so one m-tile per warp. 64 x 64 over 4 warps
    // with single K/V buffers (96 KB at d 256: two CTAs per SM, each hiding the other's prologue and epilogue):
    // 275-323 TFLOP/s, 3-12% ahead of 128 x 64 over 8 warps with a 2-deep ring (192 KB, one CTA per SM).
    return {{64, 64, 4, 1}, {64, 32, 4, 1}};
}

}  // namespace

TileConfig default_tile_config(int cc, const ProblemClass& problem) {
    const std::vector<TileConfig> candidates =
        problem.dtype == DType::f32 ? preferences_fp32(problem) : preferences_f16(cc, problem);
    for (const TileConfig& t : candidates)
        if (tile_runs_on(t, cc) &&
            AttentionKernelSpec{problem.dtype, problem.head_dim, problem.causal, t}.shared_bytes() <=
                max_shared_bytes(cc))
            return t;
    return candidates.back();
}

namespace {

std::string tuning_key(const DeviceInfo& device, const ProblemClass& p) {
    return fmt::format("{}|sm_{}{}|{}|d{}|{}|q{}|k{}", device.name, device.cc_major, device.cc_minor,
                       to_string(p.dtype), p.head_dim, p.causal ? "causal" : "full", seqlen_bucket(p.seqlen_q),
                       seqlen_bucket(p.seqlen_k));
}

nlohmann::json read_tuning_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (j.is_object() && j.value("version", 0) == 1 && j.contains("configs") && j["configs"].is_object()) return j;
        log::warn_once("tuning-format", fmt::format("ignoring tuning file {}: unknown format", path));
    } catch (const nlohmann::json::exception& e) {
        log::warn_once("tuning-parse", fmt::format("ignoring tuning file {}: {}", path, e.what()));
    }
    return nlohmann::json::object();
}

std::mutex tuning_mutex;

}  // namespace

std::string tuning_file_path() { return (cache::DiskCache::instance().config().dir / "tuning.json").string(); }

TileConfig choose_tile_config(const DeviceInfo& device, const ProblemClass& problem) {
    const TileConfig fallback = default_tile_config(device.cc(), problem);
    static const nlohmann::json tuning = read_tuning_file(tuning_file_path());  // read once per process
    if (!tuning.contains("configs")) return fallback;
    const auto it = tuning["configs"].find(tuning_key(device, problem));
    if (it == tuning["configs"].end() || !it->is_string()) return fallback;
    const std::optional<TileConfig> tuned = parse_tile_config(it->get<std::string>());
    if (!tuned || !tile_is_legal(problem.dtype, problem.head_dim, *tuned) ||
        !tile_runs_on(*tuned, device.cc())) {
        log::warn_once("tuning-entry", fmt::format("ignoring illegal tuned config '{}' in {}", it->dump(),
                                                   tuning_file_path()));
        return fallback;
    }
    log::debug("tuned config {} for {}", tuned->to_string(), tuning_key(device, problem));
    return *tuned;
}

void save_tuned_config(const DeviceInfo& device, const ProblemClass& problem, const TileConfig& tile) {
    std::lock_guard lock(tuning_mutex);
    const std::string path = tuning_file_path();
    nlohmann::json j = read_tuning_file(path);
    j["version"] = 1;
    j["configs"][tuning_key(device, problem)] = tile.to_string();
    const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << j.dump(2) << "\n";
        if (!out.flush()) throw Error("cannot write the tuning file " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot replace the tuning file " + path);
    }
}

}  // namespace fa_jit
