// Tile configurations: the legal space, the built-in choice, and the tuning file that overrides it.
#include "attention/fp32_traits.hpp"
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
    if (dtype != DType::f32) return out;
    for (int block_m : {16, 32, 64, 128})
        for (int block_n : {16, 32, 64, 128})
            for (int warps : {1, 2, 4, 8})
                if (fp32_kernels::legal(block_m, block_n, warps, head_dim)) out.push_back({block_m, block_n, warps});
    return out;
}

TileConfig default_tile_config(int cc, const ProblemClass& problem) {
    (void)cc;  // one table serves sm_80 and sm_90 for the fp32 family (both have >= 163 KB of shared memory)
    // 64 query rows per block over 4 warps: each warp owns one 16-row mma tile; 64 rows keep (seqlen / 64) * heads
    // blocks enough to fill 132 SMs at the 16k-token protocol shapes.
    if (problem.head_dim <= 64) return {64, 64, 4};
    // d <= 128: the same tile; Q + K + V tiles take 4 * (64 * 144 + 64 * 144 + 64 * 132) = 107 KB, two blocks per SM
    // on sm_90 (227 KB).
    if (problem.head_dim <= 128) return {64, 64, 4};
    // d > 128: halve B_c so that Q + K + V stay near 100 KB and the per-thread O accumulator fits without spilling.
    return {64, 32, 4};
}

namespace {

// Problem classes share a tuned config when their sequence lengths fall in the same power-of-two bucket.
int seqlen_bucket(int n) {
    int b = 128;
    while (b < n && b < 16384) b *= 2;
    return b;
}

std::string tuning_key(const DeviceInfo& device, const ProblemClass& p) {
    return fmt::format("{}|sm_{}{}|{}|d{}|{}|q{}|k{}", device.name, device.cc_major, device.cc_minor,
                       to_string(p.dtype), p.head_dim, p.causal ? "causal" : "full", seqlen_bucket(p.seqlen_q),
                       seqlen_bucket(p.seqlen_k));
}

std::optional<TileConfig> parse_tile(const std::string& s) {
    TileConfig t;
    if (std::sscanf(s.c_str(), "%dx%dw%d", &t.block_m, &t.block_n, &t.warps) != 3) return std::nullopt;
    return t;
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
    const TileConfig fallback = default_tile_config(device.cc_major * 10 + device.cc_minor, problem);
    static const nlohmann::json tuning = read_tuning_file(tuning_file_path());  // read once per process
    if (!tuning.contains("configs")) return fallback;
    const auto it = tuning["configs"].find(tuning_key(device, problem));
    if (it == tuning["configs"].end() || !it->is_string()) return fallback;
    const std::optional<TileConfig> tuned = parse_tile(it->get<std::string>());
    if (!tuned || !fp32_kernels::legal(tuned->block_m, tuned->block_n, tuned->warps, problem.head_dim)) {
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
