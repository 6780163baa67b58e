// `info`: where the cache is and whether it works, which compiler and driver this process finds, which GPUs.
#include "cache_status.hpp"
#include "commands.hpp"
#include "common/text.hpp"

#include "fa_jit/cache.hpp"
#include "fa_jit/jit.hpp"
#include "fa_jit/tuning.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace fa_jit::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string cuda_version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

Json cache_section() {
    const cache::DiskCache& c = cache::DiskCache::instance();
    const auto entries = c.list(/*verify=*/false);
    std::uint64_t bytes = 0;
    for (const auto& e : entries) bytes += e.file_bytes;
    const std::string problem = c.why_unusable();
    Json j;
    j["dir"] = c.config().dir.string();
    j["enabled"] = c.config().enabled;
    j["usable"] = c.usable();
    j["problem"] = problem.empty() ? Json() : Json(problem);
    j["bytes"] = bytes;
    j["entries"] = entries.size();
    j["max_bytes"] = c.config().max_bytes;
    j["tuning_file"] = tuning_file_path();
    return j;
}

Json nvrtc_section() {
    Json j;
    try {
        const int version = nvrtc_version();
        j["found"] = true;
        j["version"] = version;
        j["version_text"] = cuda_version_text(version);
        Json archs = Json::array();
        for (int a : nvrtc_supported_archs()) archs.push_back(fmt::format("sm_{}", a));
        j["archs"] = archs;
        const std::string worker = compile_worker();
        j["worker"] = worker.empty() ? Json() : Json(worker);
    } catch (const CompileError& e) {
        j["found"] = false;
        j["error"] = e.what();
    }
    return j;
}

Json driver_section() {
    const int version = driver_version();
    Json j;
    j["found"] = version != 0;
    j["version"] = version;
    if (version) j["version_text"] = cuda_version_text(version);
    return j;
}

// Devices; a driver that fails while we look is reported, not fatal: info must always answer.
Json devices_section(std::string& error) {
    Json list = Json::array();
    try {
        for (int i = 0, n = device_count(); i < n; ++i) {
            const DeviceInfo& d = use_device(i);
            Json j;
            j["ordinal"] = d.ordinal;
            j["name"] = d.name;
            j["cc"] = fmt::format("{}.{}", d.cc_major, d.cc_minor);
            j["multiprocessors"] = d.multiprocessors;
            j["max_shared_per_block_optin"] = d.max_shared_per_block_optin;
            try {
                j["target_arch"] = target_arch(d.cc_major, d.cc_minor);
            } catch (const Error& e) {
                j["target_arch"] = nullptr;  // a device NVRTC cannot target at all
            }
            list.push_back(j);
        }
    } catch (const Error& e) {
        error = e.what();
    }
    return list;
}

void print_human(const Json& cache, const Json& nvrtc, const Json& driver, const Json& devices,
                 const std::string& device_error) {
    fmt::print("Disk cache\n");
    fmt::print("  directory    {}\n", cache["dir"].get<std::string>());
    if (cache["usable"].get<bool>())
        fmt::print("  usable       yes\n");
    else
        fmt::print("  usable       no: {}\n", cache["problem"].get<std::string>());
    fmt::print("  entries      {} ({}, {} bytes)\n", cache["entries"].get<std::size_t>(),
               human_bytes(cache["bytes"].get<std::uint64_t>()), cache["bytes"].get<std::uint64_t>());
    fmt::print("  max bytes    {} ({})\n", cache["max_bytes"].get<std::uint64_t>(),
               human_bytes(cache["max_bytes"].get<std::uint64_t>()));
    fmt::print("  tuning file  {}\n", cache["tuning_file"].get<std::string>());

    if (nvrtc["found"].get<bool>()) {
        std::string archs;
        for (const auto& a : nvrtc["archs"]) archs += (archs.empty() ? "" : " ") + a.get<std::string>();
        fmt::print("NVRTC          {} (archs: {})\n", nvrtc["version_text"].get<std::string>(), archs);
        fmt::print("  worker       {}\n", nvrtc["worker"].is_null() ? "none: compiles in the calling process"
                                                                  : nvrtc["worker"].get<std::string>());
    } else {
        fmt::print("NVRTC          not found: {}\n", nvrtc["error"].get<std::string>());
    }
    if (driver["found"].get<bool>())
        fmt::print("CUDA driver    {}\n", driver["version_text"].get<std::string>());
    else
        fmt::print("CUDA driver    no driver\n");

    if (!device_error.empty()) fmt::print("Devices        error: {}\n", device_error);
    if (devices.empty()) {
        if (device_error.empty()) fmt::print("Devices        none\n");
        return;
    }
    fmt::print("Devices\n");
    for (const auto& d : devices)
        fmt::print("  {}: {}  cc {}  {} SMs  arch {}\n", d["ordinal"].get<int>(), d["name"].get<std::string>(),
                   d["cc"].get<std::string>(), d["multiprocessors"].get<int>(),
                   d["target_arch"].is_null() ? "unsupported" : d["target_arch"].get<std::string>());
}

}  // namespace

Command add_info(CLI::App& app) {
    CLI::App* sub = app.add_subcommand(
        "info", "Show the cache directory and its state, NVRTC, the CUDA driver and the GPUs present");
    set_help_details(sub,
                     "Prints: the cache directory and whether it is usable (and why not), its size in bytes and\n"
                     "entries, the size cap, the tuning file; NVRTC's version and the archs it compiles for (or\n"
                     "\"not found\"); the CUDA driver version (or \"no driver\"); each GPU's name, compute capability,\n"
                     "SM count and the arch fa_jit compiles for it.");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "print one JSON object instead of text");
    return {sub, [json] {
                std::string device_error;
                const Json cache = cache_section(), nvrtc = nvrtc_section(), driver = driver_section();
                const Json devices = devices_section(device_error);
                if (*json) {
                    Json out;
                    out["cache"] = cache;
                    out["nvrtc"] = nvrtc;
                    out["driver"] = driver;
                    out["devices"] = devices;
                    out["device_error"] = device_error.empty() ? Json() : Json(device_error);
                    fmt::print("{}\n", out.dump(2));
                } else {
                    print_human(cache, nvrtc, driver, devices, device_error);
                }
                return kExitOk;
            }};
}

}  // namespace fa_jit::tools
