// The tuning file: tiles fa-jit-bench --save measured fastest, which attention() prefers to the built-in choice.
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "attention/family.hpp"
#include "attention/seqlen_bucket.hpp"
#include "cache/disk_cache.hpp"
#include "util/log.hpp"

namespace fa_jit {
namespace {

std::string tuning_key(const DeviceInfo& device, const ProblemClass& p) {
    // Decode problems are told apart by their exact query length (query_length_class) and group size; "|used": with
    // per-sequence KV lengths; "|window,softcap": score modifiers. Prefill keys of group size 1 are unchanged.
    std::string key = fmt::format("{}|sm_{}{}|{}|d{}|{}|q{}|k{}", device.name, device.cc_major, device.cc_minor,
                                  to_string(p.dtype), p.head_dim, p.causal ? "causal" : "full",
                                  query_length_class(p.seqlen_q), seqlen_bucket(p.seqlen_k));
    if (p.group_size != 1) key += fmt::format("|g{}", p.group_size);
    if (p.seqused_k) key += "|used";
    if (p.mods.any()) key += "|" + p.mods.to_string();
    if (p.varlen) key += "|varlen";
    return key;
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

std::string tuning_file_path() {
    return (cache::DiskCache::instance().config().dir / "tuning.json").string();
}

TileConfig choose_tile_config(const DeviceInfo& device, const ProblemClass& problem) {
    const TileConfig fallback = default_tile_config(device.cc(), problem);
    static const nlohmann::json tuning = read_tuning_file(tuning_file_path());  // read once per process
    if (!tuning.contains("configs")) return fallback;
    const auto it = tuning["configs"].find(tuning_key(device, problem));
    if (it == tuning["configs"].end() || !it->is_string()) return fallback;
    const std::optional<TileConfig> tuned = parse_tile_config(it->get<std::string>());
    const auto family = tuned ? family_owning(*tuned) : nullptr;
    if (!family || !family->serves(problem, device.cc()) || !family->tile_is_legal(problem.head_dim, *tuned)) {
        log::warn_once("tuning-entry", fmt::format("ignoring tuned config {} in {}: no kernel family serving this "
                                                   "problem on this GPU accepts it",
                                                   it->dump(), tuning_file_path()));
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
