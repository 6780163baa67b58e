// fa-jit-bench: correctness-checked benchmarks and tile-config sweeps of fa_jit's attention kernels.
#include "measure.hpp"
#include "problems.hpp"
#include "row.hpp"
#include "workspace.hpp"

#include "common/progress.hpp"
#include "common/text.hpp"

#include "fa_jit/tuning.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/jit.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace fa_jit::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;    // some config was wrong or could not run
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;

const char* const kFooter =
    "Each (problem, config) is first checked against attention_reference() (float64 accumulation): outputs are\n"
    "poisoned with NaN, every element of O and LSE must be written and finite, and the relative L2 and max\n"
    "absolute errors must be within the dtype's tolerance (fp32 1e-4/1e-3, fp16 2e-3/1e-2, bf16 1.6e-2/6e-2).\n"
    "A wrong config prints WRONG and is neither timed nor saved. Timing: CUDA events around each repetition,\n"
    "rotating through enough random input sets to defeat L2, median reported; TFLOP/s = 4*B*H*Nq*Nk*d / t,\n"
    "halved when causal. Per row: registers and spill (local) bytes per thread, shared memory per block.\n"
    "\n"
    "Examples:\n"
    "  fa-jit-bench --preset tutorial\n"
    "  fa-jit-bench --preset paper --dtype bf16 --head-dim 128\n"
    "  fa-jit-bench --seqlen-q 4096 --head-dim 64 --sweep --save --json > sweep.json\n"
    "\n"
    "Environment: FA_JIT_CACHE_DIR, FA_JIT_CACHE=0, FA_JIT_CACHE_MAX_BYTES (kernel cache; --save writes\n"
    "tuning.json there), FA_JIT_LOG=warn|info|debug (library diagnostics on stderr).\n"
    "Exit codes: 0 all configs correct, 1 some config wrong or failed, 2 usage error, 3 no CUDA device.";

// Why there is no GPU, in words, or "" when there is one.
std::string no_device_reason() {
    if (device_count() > 0) return "";
    const int driver = driver_version();
    if (!driver) return "no CUDA driver: libcuda.so.1 could not be loaded";
    return fmt::format("the CUDA {}.{} driver reports no devices", driver / 1000, driver % 1000 / 10);
}

// What the progress line shows: short enough not to wrap on a terminal.
std::string short_line(const Row& r) {
    return fmt::format("{} {}: {}", r.problem.label(), r.tile.to_string(),
                       r.timed() ? fmt::format("{:.1f} TFLOP/s", r.tflops) : to_string(r.status));
}

struct Run {
    std::vector<Row> rows;
    std::vector<Row> saved;
};

// What --sweep measures: every legal config whose kernel runs on `device`.
std::vector<TileConfig> runnable_configs(const Problem& problem, const DeviceInfo& device) {
    return tile_configs(problem.problem_class(), device.cc());
}

// All configs of one problem; the reference runs once and is shared by every config.
void bench_problem(const Problem& problem, const DeviceInfo& device, const BenchOptions& options,
                   const std::optional<TileConfig>& forced, Stream& stream, tools::Progress& progress, Run& run) {
    const TileConfig chosen = choose_tile_config(device, problem.problem_class());
    std::vector<TileConfig> configs = options.sweep ? runnable_configs(problem, device)
                                      : forced      ? std::vector<TileConfig>{*forced}
                                                    : std::vector<TileConfig>{chosen};
    const auto fail_all = [&](const std::string& why) {
        Row row;
        row.problem = problem;
        row.tile = forced ? *forced : chosen;
        row.chosen = !forced;
        row.error = why.substr(0, why.find('\n'));
        row.detail = why;
        run.rows.push_back(row);
        progress.item_done(short_line(row));
        if (!options.json && !options.csv) progress.message(row_line(row), stdout);
    };
    if (configs.empty()) return fail_all(fmt::format("no attention kernel for {} d{}", to_string(problem.dtype),
                                                     problem.head_dim));

    std::optional<Workspace> ws;
    HostOutput reference;
    try {
        ws.emplace(problem);
        synchronize();  // uploads of pageable memory may still be in flight
        if (!options.no_check) {
            attention_reference(ws->reference_args(), stream.get());
            stream.synchronize();
            reference = ws->download_reference();
        }
    } catch (const Error& e) {
        return fail_all(e.what());
    }

    const MeasureSettings settings{options.reps, options.warmup};
    const Row* best = nullptr;
    const std::size_t first = run.rows.size();
    for (const TileConfig& tile : configs) {
        run.rows.push_back(measure_config(problem, tile, tile == chosen, *ws, options.no_check ? nullptr : &reference,
                                          settings, stream));
        const Row& row = run.rows.back();
        progress.item_done(short_line(row));
        if (!options.json && !options.csv) progress.message(row_line(row), stdout);
    }
    for (std::size_t i = first; i < run.rows.size(); ++i)
        if (run.rows[i].status == RowStatus::ok && (!best || run.rows[i].tflops > best->tflops)) best = &run.rows[i];
    if (options.save && best) {
        save_tuned_config(device, problem.problem_class(), best->tile);
        run.saved.push_back(*best);
    }
}

int run_bench(int argc, char** argv) {
    CLI::App app{
        "fa-jit-bench: benchmark fa_jit's FlashAttention kernels on this GPU, checked against a reference, and\n"
        "sweep tile configurations (B_r x B_c, warps) to find and save the fastest for each problem.",
        "fa-jit-bench"};
    app.footer(kFooter);
    BenchOptions options;
    add_options(app, options);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }

    // Everything the arguments decide is checked before looking for a GPU: argument errors work anywhere.
    const std::vector<Problem> problems = make_problems(options);
    const std::optional<TileConfig> forced = forced_config(options);
    if (options.save && options.no_check)
        throw UsageError("--save needs the correctness check: a config is saved only once it is known to be right");

    if (const std::string why = no_device_reason(); !why.empty()) {
        std::fprintf(stderr, "fa-jit-bench: no CUDA device (%s)\n", why.c_str());
        return kExitNoDevice;
    }
    const DeviceInfo& device = use_device(options.device);
    const DeviceSummary summary{device.name, device.cc_major, device.cc_minor, device.multiprocessors};
    Stream stream;

    std::size_t total = 0;
    for (const Problem& p : problems)
        total += options.sweep ? std::max<std::size_t>(1, runnable_configs(p, device).size()) : 1;
    if (!options.json && !options.csv)
        fmt::print("{} (sm_{}{}, {} SMs); {} reps after {} warm-up\n", device.name, device.cc_major, device.cc_minor,
                   device.multiprocessors, options.reps, options.warmup);
    std::fflush(stdout);

    Run run;
    {
        // Human output prints every row on stdout already: a progress line only where it is redrawn in place.
        const bool human = !options.json && !options.csv;
        tools::Progress progress(total, !options.quiet && (!human || tools::is_terminal(STDERR_FILENO)));
        for (const Problem& p : problems) bench_problem(p, device, options, forced, stream, progress, run);
    }

    bool failed = false;
    for (const Row& r : run.rows)
        if (!r.timed()) {
            if (!failed && !r.detail.empty() && r.detail != r.error)
                std::fprintf(stderr, "fa-jit-bench: first failure, %s %s:\n%s\n", r.problem.label().c_str(),
                             r.tile.to_string().c_str(), r.detail.c_str());
            failed = true;
        }

    if (options.json) {
        fmt::print("{}", rows_json(summary, run.rows, run.saved, options.reps, options.warmup));
    } else if (options.csv) {
        fmt::print("{}", rows_csv(run.rows));
    } else {
        for (const Row& s : run.saved)
            fmt::print("saved {} for {} in {}\n", s.tile.to_string(), s.problem.label(), tuning_file_path());
        fmt::print("\n{}", final_table(run.rows, options.sweep));
    }
    return failed ? kExitFailed : kExitOk;
}

}  // namespace
}  // namespace fa_jit::bench

int main(int argc, char** argv) {
    using namespace fa_jit::bench;
    try {
        return run_bench(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "fa-jit-bench: %s\n", e.what());
        return kExitUsage;
    } catch (const fa_jit::InvalidArgument& e) {
        std::fprintf(stderr, "fa-jit-bench: %s\n", e.what());
        return kExitUsage;
    } catch (const fa_jit::Error& e) {
        std::fprintf(stderr, "fa-jit-bench: %s\n", e.what());
        return kExitFailed;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fa-jit-bench: unexpected error: %s\n", e.what());
        return kExitFailed;
    }
}
