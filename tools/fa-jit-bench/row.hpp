// One measured (problem, tile config) pair, and how rows are printed.
#pragma once

#include "check.hpp"
#include "problems.hpp"

#include "fa_jit/tuning.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace fa_jit::bench {

enum class RowStatus {
    ok,         // checked and timed
    unchecked,  // timed with --no-check
    wrong,      // failed the correctness check: not timed, never saved
    error,      // could not compile or run (see `error`)
};
const char* to_string(RowStatus status);

struct Row {
    Problem problem;
    TileConfig tile;
    bool chosen = false;  // the config attention() picks for this problem on this GPU (tile and split count)
    int splits_requested = 0;  // AttentionArgs::num_splits of the runs: 0 = the library's choice
    int num_splits = -1;       // key splits the runs use (attention_choice(); 1 for families that do not split)
    long long workspace_bytes = -1;  // device scratch the runs use (attention_choice())
    RowStatus status = RowStatus::error;
    std::string error;    // why wrong or error: one line
    std::string detail;   // the full message (e.g. the NVRTC log), printed once for the first failure

    double ms = NAN;      // median over the timed repetitions
    double tflops = NAN;
    double kv_tbps = NAN;  // K and V bytes read once (Problem::kv_bytes()) / ms: a decode step's bandwidth
    int registers = -1;   // per thread
    int local_bytes = -1; // per thread: spills and stack
    long long shared_bytes = -1;  // per block: dynamic + static
    bool checked = false;
    CheckResult check;
    std::size_t input_sets = 0;

    bool timed() const { return status == RowStatus::ok || status == RowStatus::unchecked; }
};

// The device line printed above the tables.
struct DeviceSummary {
    std::string name;
    int cc_major = 0, cc_minor = 0, multiprocessors = 0;
};

// The tile's spelling, with ":N" when the row forces N key splits (e.g. "16x64w4s4-split:8").
std::string config_text(const Row& row);

// One line with every field, printed as each row finishes (human output).
std::string row_line(const Row& row);
// The compact table printed last: one line per row, or with a sweep one line per problem (best vs chosen).
std::string final_table(const std::vector<Row>& rows, bool sweep);
// --csv: the header, then each row's line as the row finishes (a run stopped early keeps the rows it measured).
std::string csv_header();
std::string csv_line(const Row& row);
std::string rows_json(const DeviceSummary& device, const std::vector<Row>& rows, const std::vector<Row>& saved,
                      int reps, int warmup, double warmup_ms);

}  // namespace fa_jit::bench
