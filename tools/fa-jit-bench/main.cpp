// fa-jit-bench: correctness-checked benchmarks and tile-config sweeps of fa_jit's attention kernels.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "common/progress.hpp"
#include "common/text.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/jit.hpp"
#include "fa_jit/tuning.hpp"
#include "measure.hpp"
#include "precompile.hpp"
#include "problems.hpp"
#include "row.hpp"
#include "workspace.hpp"

namespace fa_jit::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // some config was wrong or could not run
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;

const char* const kFooter =
    "Each (problem, config) is first checked against attention_reference() (float64 accumulation): outputs are\n"
    "poisoned with NaN, every element of O and LSE must be written and finite, and the relative L2 and max\n"
    "absolute errors must be within the dtype's tolerance (fp32 1e-4/1e-3, fp16 2e-3/1e-2, bf16 1.6e-2/6e-2).\n"
    "A wrong config prints WRONG and is neither timed nor saved. Timing: CUDA events around each repetition,\n"
    "rotating through enough random input sets to defeat L2, median reported; TFLOP/s = 4*B*H*Nq*Nk*d / t,\n"
    "halved when causal (decode, Nq <= 16: the visible query-key pairs counted exactly). Decode rows also give\n"
    "KV TB/s = 2*B*H_kv*Nk*d*element size / t (K and V read once) and the key splits the kernel uses\n"
    "(attention_choice(); \"16x64w4s4-split:8\" is a run forced to 8 splits). Per row: registers and spill\n"
    "(local) bytes per thread, shared memory per block.\n"
    "\n"
    "Examples:\n"
    "  fa-jit-bench --preset tutorial\n"
    "  fa-jit-bench --preset paper --dtype bf16 --head-dim 128\n"
    "  fa-jit-bench --seqlen-q 4096 --head-dim 64 --sweep --save --json > sweep.json\n"
    "  fa-jit-bench --preset decode --heads-kv 8 --sweep\n"
    "  fa-jit-bench --seqlen-q 1 --seqlen-k 32k --batch 16 --heads 32 --heads-kv 8 --dtype bf16 --splits 4\n"
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
    return fmt::format("{} {}: {}", r.problem.label(), config_text(r),
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

// The split counts --sweep tries beside the library's choice, for tiles whose family splits the keys; those above
// the tile's key blocks (ceil(Nk / B_c)) are left out, and so are requests the library maps to a count already tried.
constexpr int kSweepSplits[] = {1, 2, 4, 8, 16, 32, 64};

int key_blocks(const Problem& problem, const TileConfig& tile) {
    return tile.block_n > 0 ? (problem.seqlen_k + tile.block_n - 1) / tile.block_n : 1;
}

// The progress line's count before anything is allocated: split counts are known only then, so a tile whose
// variant tag says it splits ("-split") is counted with every split count it may get.
std::size_t estimated_runs(const Problem& problem, const DeviceInfo& device, const BenchOptions& options) {
    if (!options.sweep) return 1;
    std::size_t n = 0;
    for (const TileConfig& tile : runnable_configs(problem, device)) {
        ++n;
        if (tile.variant == "split")
            for (int s : kSweepSplits) n += s <= key_blocks(problem, tile) ? 1 : 0;
    }
    return std::max<std::size_t>(1, n);
}

// The runs of one problem: the chosen or forced tile, or with --sweep every runnable tile, and for a tile whose
// family splits the keys (attention_choice() reports more than one split) also the split counts of kSweepSplits.
std::vector<RunConfig> problem_runs(const Problem& problem, const std::vector<TileConfig>& tiles,
                                    const BenchOptions& options, const Workspace& ws) {
    std::vector<RunConfig> runs;
    for (const TileConfig& tile : tiles) {
        runs.push_back({tile, options.splits});
        if (!options.sweep) continue;
        int chosen_splits = 1;
        try {
            chosen_splits = attention_choice(ws.args(0), tile).num_splits;
        } catch (const Error&) {
            continue;  // measure_config() reports why on the tile's own row
        }
        if (chosen_splits <= 1) continue;
        std::vector<int> seen{chosen_splits};
        for (int s : kSweepSplits) {
            if (s > key_blocks(problem, tile)) break;
            AttentionArgs a = ws.args(0);
            a.num_splits = s;
            int used = s;
            try {
                used = attention_choice(a, tile).num_splits;
            } catch (const Error&) {
                // A split count the library rejects: measured anyway, so that its row says why.
            }
            if (std::find(seen.begin(), seen.end(), used) != seen.end()) continue;
            seen.push_back(used);
            runs.push_back({tile, s});
        }
    }
    return runs;
}

// All configs of one problem; the reference runs once and is shared by every config.
void bench_problem(const Problem& problem, const DeviceInfo& device, const BenchOptions& options,
                   const std::optional<TileConfig>& forced, Stream& stream, tools::Progress& progress, Run& run) {
    TileConfig chosen = choose_tile_config(device, problem.problem_class());
    std::vector<TileConfig> tiles;
    if (options.sweep) tiles = runnable_configs(problem, device);
    const std::size_t estimated = estimated_runs(problem, device, options);
    std::size_t reported = 0;
    const auto report = [&](const Row& row) {
        if (reported++ < estimated) progress.item_done(short_line(row));
        if (options.csv) {
            fmt::print("{}", csv_line(row));
            std::fflush(stdout);
        } else if (!options.json) {
            progress.message(row_line(row), stdout);
        }
    };
    const auto fail_all = [&](const std::string& why) {
        Row row;
        row.problem = problem;
        row.tile = forced ? *forced : chosen;
        row.splits_requested = options.splits;
        row.chosen = !forced && !options.splits;
        row.error = why.substr(0, why.find('\n'));
        row.detail = why;
        run.rows.push_back(row);
        report(row);
        while (reported < estimated) progress.item_done(short_line(row));
    };
    if (options.sweep && tiles.empty())
        return fail_all(fmt::format("no attention kernel for {} d{}", to_string(problem.dtype), problem.head_dim));

    std::optional<Workspace> ws;
    HostOutput reference;
    std::vector<RunConfig> runs;
    int chosen_splits = 1;
    try {
        ws.emplace(problem, input_distribution(options));
        synchronize();  // uploads of pageable memory may still be in flight
        // What attention() runs for these arguments (the tuning file's tile, or the heuristic's), with its splits.
        const AttentionChoice choice = attention_choice(ws->args(0));
        chosen = choice.tile;
        chosen_splits = choice.num_splits;
        if (!options.sweep) tiles = {forced ? *forced : chosen};
        runs = problem_runs(problem, tiles, options, *ws);
        if (options.sweep) {
            const unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
            const std::size_t compiled = precompile(ws->args(0), tiles, device, jobs);
            if (compiled > 0 && !options.quiet)
                progress.message(fmt::format("{}: compiled {} kernels on {} threads", problem.label(), compiled, jobs));
        }
        if (!options.no_check) {
            attention_reference(ws->reference_args(), stream.get());
            stream.synchronize();
            reference = ws->download_reference();
        }
    } catch (const Error& e) {
        return fail_all(e.what());
    }

    const MeasureSettings settings{options.reps, options.warmup, options.warmup_ms};
    const Row* best = nullptr;
    const std::size_t first = run.rows.size();
    for (const RunConfig& config : runs) {
        // The library's choice is the chosen tile with no split request (or a request of the count it picks, or any
        // request when its family does not split).
        const bool is_chosen =
            config.tile == chosen && (config.splits == 0 || config.splits == chosen_splits || chosen_splits <= 1);
        run.rows.push_back(
            measure_config(problem, config, is_chosen, *ws, options.no_check ? nullptr : &reference, settings, stream));
        report(run.rows.back());
    }
    while (reported < estimated) progress.item_done(short_line(run.rows.back()));
    for (std::size_t i = first; i < run.rows.size(); ++i)
        if (run.rows[i].status == RowStatus::ok && (!best || run.rows[i].tflops > best->tflops)) best = &run.rows[i];
    if (options.save && best) {
        save_tuned_config(device, problem.problem_class(), best->tile);  // the tile; a split count is not saved
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
    for (const Problem& p : problems) total += estimated_runs(p, device, options);
    if (!options.json && !options.csv)
        fmt::print("{} (sm_{}{}, {} SMs); {} reps after {} warm-up{}\n", device.name, device.cc_major, device.cc_minor,
                   device.multiprocessors, options.reps, options.warmup,
                   options.warmup_ms > 0 ? fmt::format(" and {:g} ms of calls", options.warmup_ms) : "");
    if (options.csv) fmt::print("{}", csv_header());
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
        fmt::print("{}", rows_json(summary, run.rows, run.saved, options.reps, options.warmup, options.warmup_ms));
    } else if (!options.csv) {  // --csv printed each row as it finished
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
