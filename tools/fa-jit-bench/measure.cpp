#include "measure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace fa_jit::bench {
namespace {

// The arguments of every run of `row`: input set `set`, the row's split request.
AttentionArgs run_args(const Row& row, const Workspace& ws, std::size_t set) {
    AttentionArgs a = ws.args(set);
    a.num_splits = row.splits_requested;
    return a;
}

// What attention() runs for these arguments: the split count and workspace it uses.
void fill_choice(Row& row, const Workspace& ws) {
    const AttentionChoice choice = attention_choice(run_args(row, ws, 0), row.tile);
    row.num_splits = choice.num_splits;
    row.workspace_bytes = static_cast<long long>(choice.workspace_bytes);
}

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
    attention(run_args(row, ws, 0), stream.get(), row.tile);
    stream.synchronize();
    row.check = compare(ws.download_output(), reference, row.problem.dtype);
    row.checked = true;
    if (!row.check.ok) {
        row.status = RowStatus::wrong;
        row.error = row.check.why;
    }
}

// A kernel that keeps the GPU busy for `ns` nanoseconds (one thread, on the global timer).
const Kernel& spin_kernel() {
    static const char* const kText = R"(
namespace fa_jit_bench {
__global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
}  // namespace fa_jit_bench
)";
    CompileRequest request;
    request.source = {"fa_jit_bench_spin.cu", kText, {}};
    request.name_expressions = {"fa_jit_bench::spin"};
    return get_kernel(request, "fa_jit_bench::spin");
}

// --warmup-ms: calls on the rotating input sets until that much time has passed since the first, the GPU having
// finished them (the host may run ahead by a launch queue's depth). Waiting for each batch of calls keeps the
// queue short, so the time is the GPU's.
void sustain(const Row& row, Workspace& ws, const MeasureSettings& s, Stream& stream) {
    if (s.warmup_ms <= 0) return;
    const std::size_t sets = ws.input_sets();
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(s.warmup_ms);
    std::size_t i = static_cast<std::size_t>(s.warmup);
    do {
        for (int k = 0; k < 32; ++k, ++i) attention(run_args(row, ws, i % sets), stream.get(), row.tile);
        stream.synchronize();
    } while (std::chrono::steady_clock::now() < until);
}

// One event pair per repetition, each repetition on the next input set; the median of the per-rep times.
// A decode step's kernels take microseconds, less than the host needs to launch them: there the repetitions are
// queued behind a spin kernel that outlasts the host's launches, so that each event pair times the GPU's work
// (back to back, as in a model's decode loop) rather than the host's launch latency.
double median_ms(Row& row, Workspace& ws, const MeasureSettings& s, Stream& stream) {
    const std::size_t sets = ws.input_sets();
    const auto host_start = std::chrono::steady_clock::now();
    for (int i = 0; i < s.warmup; ++i) attention(run_args(row, ws, i), stream.get(), row.tile);
    const double host_ns_per_call =
        s.warmup > 0
            ? std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - host_start).count() / s.warmup
            : 50e3;
    sustain(row, ws, s, stream);
    if (row.problem.decode()) {
        const auto ns = static_cast<unsigned long long>(
            std::min(2.0 * s.reps * host_ns_per_call + 100e3, 2e9));  // at most 2 s
        launch(spin_kernel(), {{1}, {1}, 0, stream.get()}, ns);
    }
    std::vector<Event> start(s.reps), stop(s.reps);
    for (int i = 0; i < s.reps; ++i) {
        start[i].record(stream.get());
        attention(run_args(row, ws, (s.warmup + i) % sets), stream.get(), row.tile);
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

Row measure_config(const Problem& problem, const RunConfig& config, bool chosen, Workspace& ws,
                   const HostOutput* reference, const MeasureSettings& settings, Stream& stream) {
    Row row;
    row.problem = problem;
    row.tile = config.tile;
    row.splits_requested = config.splits;
    row.chosen = chosen;
    row.input_sets = ws.input_sets();
    try {
        fill_choice(row, ws);
        fill_kernel_attributes(row, ws);
        if (reference) {
            check_config(row, ws, *reference, stream);
            if (row.status == RowStatus::wrong) return row;  // a wrong kernel's speed means nothing
        }
        row.ms = median_ms(row, ws, settings, stream);
        row.tflops = problem.flops() / (row.ms * 1e-3) / 1e12;
        row.kv_tbps = problem.kv_bytes() / (row.ms * 1e-3) / 1e12;
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
