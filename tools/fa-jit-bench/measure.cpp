#include "measure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace fa_jit::bench {
namespace {

void fill_kernel_attributes(Row& row, const Workspace& ws) {
    const AttentionKernelSpec spec = attention_spec(ws.args(0), row.tile);  // the kernel attention() will run
    const KernelAttributes a = attention_kernel(spec).attributes();
    row.registers = a.registers;
    row.local_bytes = a.local_bytes;
    row.shared_bytes = static_cast<long long>(spec.shared_bytes()) + a.static_shared_bytes;
}

// Poisons the outputs (NaN), runs the config once on input set 0 and compares with the reference.
void check_config(Row& row, Workspace& ws, const HostOutput& reference, Stream& stream) {
    ws.poison_outputs();
    synchronize();  // the memset runs outside `stream`, which does not wait for it
    attention(ws.args(0), stream.get(), row.tile);
    stream.synchronize();
    row.check = compare(ws.download_output(), reference, row.problem.dtype);
    row.checked = true;
    if (!row.check.ok) {
        row.status = RowStatus::wrong;
        row.error = row.check.why;
    }
}

// One event pair per repetition, each repetition on the next input set; the median of the per-rep times.
double median_ms(Row& row, Workspace& ws, const MeasureSettings& s, Stream& stream) {
    const std::size_t sets = ws.input_sets();
    for (int i = 0; i < s.warmup; ++i) attention(ws.args(i), stream.get(), row.tile);
    std::vector<Event> start(s.reps), stop(s.reps);
    for (int i = 0; i < s.reps; ++i) {
        start[i].record(stream.get());
        attention(ws.args((s.warmup + i) % sets), stream.get(), row.tile);
        stop[i].record(stream.get());
    }
    stop.back().synchronize();
    std::vector<double> ms(s.reps);
    for (int i = 0; i < s.reps; ++i) ms[i] = stop[i].elapsed_ms_since(start[i]);
    std::nth_element(ms.begin(), ms.begin() + s.reps / 2, ms.end());
    double median = ms[s.reps / 2];
    if (s.reps % 2 == 0) median = (median + *std::max_element(ms.begin(), ms.begin() + s.reps / 2)) / 2;
    return median;
}

}  // namespace

Row measure_config(const Problem& problem, const TileConfig& tile, bool chosen, Workspace& ws,
                   const HostOutput* reference, const MeasureSettings& settings, Stream& stream) {
    Row row;
    row.problem = problem;
    row.tile = tile;
    row.chosen = chosen;
    row.input_sets = ws.input_sets();
    try {
        fill_kernel_attributes(row, ws);
        if (reference) {
            check_config(row, ws, *reference, stream);
            if (row.status == RowStatus::wrong) return row;  // a wrong kernel's speed means nothing
        }
        row.ms = median_ms(row, ws, settings, stream);
        row.tflops = problem.flops() / (row.ms * 1e-3) / 1e12;
        row.status = reference ? RowStatus::ok : RowStatus::unchecked;
    } catch (const Error& e) {
        const std::string what = e.what();
        row.status = RowStatus::error;
        row.error = what.substr(0, what.find('\n'));
        row.detail = what;
        if (const auto* ce = dynamic_cast<const CompileError*>(&e); ce && what.find(ce->log()) == std::string::npos)
            row.detail += "\nNVRTC log:\n" + ce->log();
    }
    return row;
}

}  // namespace fa_jit::bench
