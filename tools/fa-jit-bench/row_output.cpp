// Row printing: one line per finished row, the final compact table, CSV and JSON.
#include "row.hpp"

#include "common/table.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>

namespace fa_jit::bench {
namespace {

std::string num(double v, const char* format) { return std::isnan(v) ? "-" : fmt::format(fmt::runtime(format), v); }
std::string opt_int(long long v) { return v < 0 ? "-" : std::to_string(v); }

// Errors are shown only once checked: "-" when not checked.
std::string error_text(const Row& r) { return r.checked ? fmt::format("{:.1e}", r.check.max_abs_error) : "-"; }

std::string splits_text(const Row& r) { return r.num_splits < 0 ? "-" : std::to_string(r.num_splits); }

bool any_decode(const std::vector<Row>& rows) {
    for (const Row& r : rows)
        if (r.problem.decode()) return true;
    return false;
}

std::string status_text(const Row& r) {
    return r.status == RowStatus::ok || r.status == RowStatus::unchecked ? to_string(r.status)
                                                                         : fmt::format("{}: {}", to_string(r.status), r.error);
}

}  // namespace

const char* to_string(RowStatus s) {
    switch (s) {
        case RowStatus::ok: return "ok";
        case RowStatus::unchecked: return "unchecked";
        case RowStatus::wrong: return "WRONG";
        case RowStatus::error: return "ERROR";
    }
    return "?";
}

std::string config_text(const Row& r) {
    const std::string tile = r.tile.to_string();
    return r.splits_requested > 0 ? fmt::format("{}:{}", tile, r.splits_requested) : tile;
}

std::string row_line(const Row& r) {
    std::string line = fmt::format("{}  {}{}", r.problem.label(), config_text(r), r.chosen ? " (chosen)" : "");
    if (r.timed()) line += fmt::format("  {:.3f} ms  {:.1f} TFLOP/s", r.ms, r.tflops);
    if (r.timed() && r.problem.decode()) line += fmt::format("  {:.2f} TB/s KV", r.kv_tbps);
    if (r.num_splits > 1 || r.splits_requested > 0)
        line += fmt::format("  splits {}  workspace {} B", r.num_splits, r.workspace_bytes);
    if (r.registers >= 0)
        line += fmt::format("  regs {}  local {} B  smem {} B", r.registers, r.local_bytes, r.shared_bytes);
    if (r.checked)
        line += fmt::format("  err {:.1e} (rel {:.1e}, lse {:.1e})", r.check.max_abs_error, r.check.rel_l2_error,
                            r.check.lse_max_error);
    if (!r.timed()) line += fmt::format("  {}: {}", to_string(r.status), r.error);
    return line;
}

std::string final_table(const std::vector<Row>& rows, bool sweep) {
    using tools::Table;
    constexpr auto R = Table::Align::right;
    // Decode rows (Nq <= 16) add their KV bandwidth and split count next to TFLOP/s.
    const bool decode = any_decode(rows);
    const auto kv = [](const Row& r) { return r.problem.decode() ? num(r.kv_tbps, "{:.2f}") : std::string("-"); };
    if (!sweep) {
        std::vector<Table::Column> columns{{"problem"}, {"config"}, {"ms", R}, {"TFLOP/s", R}};
        if (decode) columns.insert(columns.end(), {{"KV TB/s", R}, {"splits", R}});
        columns.insert(columns.end(), {{"regs", R}, {"spill B", R}, {"smem B", R}, {"max err", R}, {"status"}});
        Table t(std::move(columns));
        for (const Row& r : rows) {
            std::vector<std::string> cells{r.problem.label(), config_text(r) + (r.chosen ? "*" : ""),
                                           num(r.ms, "{:.3f}"), num(r.tflops, "{:.1f}")};
            if (decode) cells.insert(cells.end(), {kv(r), splits_text(r)});
            cells.insert(cells.end(), {opt_int(r.registers), opt_int(r.local_bytes), opt_int(r.shared_bytes),
                                       error_text(r), status_text(r)});
            t.add_row(std::move(cells));
        }
        return t.text() + "* = the config attention() chooses on this GPU" +
               (decode ? "; KV TB/s = K and V bytes read once / time" : "") + "\n";
    }
    // A sweep: per problem, the fastest correct config against the chosen one.
    struct Summary {
        const Row* best = nullptr;
        const Row* chosen = nullptr;
        int tried = 0, failed = 0;
    };
    std::vector<std::string> order;
    std::map<std::string, Summary> by_problem;
    for (const Row& r : rows) {
        const std::string key = r.problem.label();
        if (!by_problem.count(key)) order.push_back(key);
        Summary& s = by_problem[key];
        ++s.tried;
        if (!r.timed()) ++s.failed;
        if (r.timed() && (!s.best || r.tflops > s.best->tflops)) s.best = &r;
        if (r.chosen) s.chosen = &r;
    }
    // A split count is shown as ":N" on both configs of a decode problem (the chosen one's is the library's pick).
    const auto with_splits = [](const Row* r) {
        if (!r) return std::string("-");
        if (r->splits_requested > 0 || r->num_splits <= 1) return config_text(*r);
        return fmt::format("{}:{}", r->tile.to_string(), r->num_splits);
    };
    std::vector<Table::Column> columns{{"problem"}, {"best"}, {"TFLOP/s", R}};
    if (decode) columns.push_back({"KV TB/s", R});
    columns.insert(columns.end(), {{"chosen"}, {"TFLOP/s", R}});
    if (decode) columns.push_back({"KV TB/s", R});
    columns.insert(columns.end(), {{"best/chosen", R}, {"configs", R}, {"wrong/error", R}});
    Table t(std::move(columns));
    for (const std::string& key : order) {
        const Summary& s = by_problem[key];
        const double best = s.best ? s.best->tflops : NAN;
        const bool chosen_timed = s.chosen && s.chosen->timed();
        const double chosen = chosen_timed ? s.chosen->tflops : NAN;
        std::vector<std::string> cells{key, with_splits(s.best), num(best, "{:.1f}")};
        if (decode) cells.push_back(s.best ? kv(*s.best) : "-");
        cells.insert(cells.end(), {with_splits(s.chosen), num(chosen, "{:.1f}")});
        if (decode) cells.push_back(chosen_timed ? kv(*s.chosen) : "-");
        cells.insert(cells.end(),
                     {num(best / chosen, "{:.2f}x"), std::to_string(s.tried), std::to_string(s.failed)});
        t.add_row(std::move(cells));
    }
    return t.text() + (decode ? "config:N = N key splits\n" : "");
}

namespace {

std::vector<std::string> csv_fields(const Row& r) {
    const Problem& p = r.problem;
    return {to_string(p.dtype), std::to_string(p.batch), std::to_string(p.heads), std::to_string(p.heads_kv),
            std::to_string(p.seqlen_q), std::to_string(p.seqlen_k), std::to_string(p.head_dim),
            p.causal ? "1" : "0", p.layout == Layout::bshd ? "bshd" : "bhsd", r.tile.to_string(),
            std::to_string(r.tile.block_m), std::to_string(r.tile.block_n), std::to_string(r.tile.warps),
            r.chosen ? "1" : "0", to_string(r.status), num(r.ms, "{:.6f}"), num(r.tflops, "{:.3f}"),
            opt_int(r.registers), opt_int(r.local_bytes), opt_int(r.shared_bytes),
            r.checked ? fmt::format("{:.3e}", r.check.max_abs_error) : "",
            r.checked ? fmt::format("{:.3e}", r.check.rel_l2_error) : "",
            r.checked ? fmt::format("{:.3e}", r.check.lse_max_error) : "", r.error,
            // Appended after the original columns, so that their indices stay valid (17 = tflops, 1-based).
            num(r.kv_tbps, "{:.4f}"), r.num_splits < 0 ? "" : std::to_string(r.num_splits),
            std::to_string(r.splits_requested), r.workspace_bytes < 0 ? "" : std::to_string(r.workspace_bytes)};
}

nlohmann::ordered_json row_json(const Row& r) {
    const Problem& p = r.problem;
    const auto number = [](double v) { return std::isnan(v) ? nlohmann::ordered_json() : nlohmann::ordered_json(v); };
    nlohmann::ordered_json j;
    j["dtype"] = to_string(p.dtype);
    j["batch"] = p.batch;
    j["heads"] = p.heads;
    j["heads_kv"] = p.heads_kv;
    j["seqlen_q"] = p.seqlen_q;
    j["seqlen_k"] = p.seqlen_k;
    j["head_dim"] = p.head_dim;
    j["causal"] = p.causal;
    j["layout"] = p.layout == Layout::bshd ? "bshd" : "bhsd";
    j["problem"] = p.label();
    j["config"] = r.tile.to_string();
    j["block_m"] = r.tile.block_m;
    j["block_n"] = r.tile.block_n;
    j["warps"] = r.tile.warps;
    j["chosen"] = r.chosen;
    j["status"] = to_string(r.status);
    j["ms"] = number(r.ms);
    j["tflops"] = number(r.tflops);
    j["kv_tbps"] = number(r.kv_tbps);
    j["decode"] = p.decode();
    j["num_splits"] = r.num_splits < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.num_splits);
    j["splits_requested"] = r.splits_requested;
    j["workspace_bytes"] = r.workspace_bytes < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.workspace_bytes);
    j["registers"] = r.registers < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.registers);
    j["local_bytes"] = r.local_bytes < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.local_bytes);
    j["shared_bytes"] = r.shared_bytes < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.shared_bytes);
    j["checked"] = r.checked;
    j["max_abs_error"] = r.checked ? number(r.check.max_abs_error) : nlohmann::ordered_json();
    j["rel_l2_error"] = r.checked ? number(r.check.rel_l2_error) : nlohmann::ordered_json();
    j["lse_max_error"] = r.checked ? number(r.check.lse_max_error) : nlohmann::ordered_json();
    j["input_sets"] = r.input_sets;
    j["error"] = r.error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.error);
    return j;
}

}  // namespace

namespace {
tools::Table csv_table() {
    return tools::Table({{"dtype"}, {"batch"}, {"heads"}, {"heads_kv"}, {"seqlen_q"}, {"seqlen_k"}, {"head_dim"},
                         {"causal"}, {"layout"}, {"config"}, {"block_m"}, {"block_n"}, {"warps"}, {"chosen"},
                         {"status"}, {"ms"}, {"tflops"}, {"registers"}, {"local_bytes"}, {"shared_bytes"},
                         {"max_abs_error"}, {"rel_l2_error"}, {"lse_max_error"}, {"error"}, {"kv_tbps"},
                         {"num_splits"}, {"splits_requested"}, {"workspace_bytes"}});
}
}  // namespace

std::string csv_header() { return csv_table().csv_header(); }
std::string csv_line(const Row& row) { return csv_table().csv_line(csv_fields(row)); }

std::string rows_json(const DeviceSummary& device, const std::vector<Row>& rows, const std::vector<Row>& saved,
                      int reps, int warmup, double warmup_ms) {
    nlohmann::ordered_json out;
    out["device"] = {{"name", device.name},
                     {"cc", fmt::format("{}.{}", device.cc_major, device.cc_minor)},
                     {"multiprocessors", device.multiprocessors}};
    out["reps"] = reps;
    out["warmup"] = warmup;
    out["warmup_ms"] = warmup_ms;
    out["rows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) out["rows"].push_back(row_json(r));
    out["saved"] = nlohmann::ordered_json::array();
    for (const Row& r : saved) out["saved"].push_back({{"problem", r.problem.label()}, {"config", r.tile.to_string()}});
    return out.dump(2) + "\n";
}

}  // namespace fa_jit::bench
