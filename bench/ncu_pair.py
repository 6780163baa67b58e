#!/usr/bin/env python3
"""fa-jit beside FlashAttention-4 (or cuDNN) on the same inputs, one call each in a profiler range, for Nsight Compute.

    ncu --profile-from-start off --clock-control none --set full -o pair \\
        python3 bench/ncu_pair.py --lib .carry/libfa_jit.so --head-dims 64 128 [--causal no|yes|both] \\
                                  [--seqlen 16384] [--peer fa4|cudnn] [--window L,R]
    ncu --import pair.ncu-rep --csv --page raw > raw.csv && python3 bench/ncu_pair.py --summary raw.csv
    ncu --import pair.ncu-rep --csv --page source --print-source sass | gzip > sass.csv.gz &&
        python3 bench/ncu_pair.py --sass-summary sass.csv.gz

Each row (bf16, a row of the FlashAttention protocol's: B 16k / N, H 2048 / d, N 16k unless --seqlen; per head dim
without the mask, then with it for --causal both) allocates Q, K, V once in FA4's BSHD layout, gives fa-jit (and
cuDNN, through SDPA's cudnn backend) BHSD views of the same memory, calls both once outside the range (compiling
them) and once inside it, so that the report holds one call of each per row, fa-jit's first (fa-jit's alone where
FA4 does not import; cuDNN's call may launch more than one kernel). What the counters are
for: where two kernels of about the same speed per clock differ in energy per FLOP (bench/NOTES.md, "Alone
against interleaved"), the bytes each moves through DRAM, L2 and shared memory and the instructions it issues.
"""
import argparse
import collections
import csv
import gzip
import os
import re
import sys


# The counters that tell the two kernels apart (bench/NOTES.md, "Alone against interleaved"), for --summary.
SUMMARY_METRICS = [
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "launch__grid_size", "launch__block_size",
    "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "dram__bytes_read.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
    "lrc__lts2lrc_sectors_op_read.sum", "smsp__inst_executed_op_tma_ld.sum", "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "idc__requests.sum",
    "gcc__cache_requests_type_instruction.sum", "sm__icc_requests.sum",
    # Where the cycles go: SMs idle at the end (active cycles' min / avg against max: a launch's tail), issue slots
    # used, the MUFU (XU) pipe's share of its peak.
    "sm__cycles_active.min", "sm__cycles_active.avg", "sm__cycles_active.max",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"] + [
    # Warps stalled per issued instruction, by reason (fixed-latency `wait`: where fa-jit's d 64 kernels exceed FA4's).
    f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
    for reason in ("wait", "barrier", "dispatch_stall", "long_scoreboard", "short_scoreboard", "math_pipe_throttle",
                   "mio_throttle", "no_instruction", "branch_resolving", "imc_miss", "membar", "sleeping",
                   "lg_throttle", "selected", "not_selected")]


def summary(raw_csv):
    """The SUMMARY_METRICS of every profiled kernel, a column each, from `ncu --import R --csv --page raw`."""
    with open(raw_csv) as f:
        rows = list(csv.reader(f))
    header, units, kernels = rows[0], rows[1], rows[2:]
    name = header.index("Kernel Name")
    print("kernels: " + " | ".join(k[name][:40] for k in kernels))
    width = max(len(m) for m in SUMMARY_METRICS)
    for metric in SUMMARY_METRICS:
        if metric not in header:
            print(f"{metric:{width}s} (not in this report)")
            continue
        i = header.index(metric)
        print(f"{metric:{width}s} {units[i]:10s} " + "  ".join(f"{k[i]:>16s}" for k in kernels))


def sass_summary(sass_csv_gz, opcodes=16, waits=3):
    """Per kernel of `ncu --import R --csv --page source --print-source sass | gzip`: the instructions executed (warp
    level) in all and by opcode, and the mbarrier waits executed most often, with the threads each executes for: a wait
    executed far more often than its loop's other instructions spins (bench/NOTES.md, "The producer's spin")."""
    kernels, header = [], None
    with gzip.open(sass_csv_gz, "rt") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "Kernel Name":
                kernels.append((row[1], []))
                header = None
            elif row[0] == "Address":
                header = row
            elif header and kernels:
                kernels[-1][1].append(dict(zip(header, row)))
    for name, lines in kernels:
        executed = [int(line["Instructions Executed"] or 0) for line in lines]
        by_opcode = collections.Counter()
        for line, n in zip(lines, executed):
            by_opcode[re.sub(r"^@!?U?P\w+\s+", "", line["Source"].strip()).split(" ")[0]] += n
        print(f"{name[:100]}\n  instructions executed {sum(executed):.4g}")
        print("  " + ", ".join(f"{op} {n / 1e6:.1f}M" for op, n in by_opcode.most_common(opcodes)))
        tries = sorted(((n, line) for line, n in zip(lines, executed) if "TRYWAIT" in line["Source"]),
                       key=lambda x: -x[0])
        for n, line in tries[:waits]:
            print(f"  {n / 1e6:8.2f}M x {float(line['Avg. Threads Executed'] or 0):4.1f} threads  "
                  f"{line['Source'].strip()}")
        stall_samples(lines)


def stall_samples(lines, top=12):
    """Where the kernel's warps sat: the warp-state samples by opcode, and the instructions holding most of them, each
    with its place in the code (0 % the first instruction, 100 % the last)."""
    column = next((c for c in lines[0] if c.startswith("Warp Stall Sampling (All")), None) if lines else None
    if column is None:
        return
    samples = [int(float(line[column] or 0)) for line in lines]
    total = sum(samples) or 1
    by_opcode = collections.Counter()
    for line, n in zip(lines, samples):
        by_opcode[re.sub(r"^@!?U?P\w+\s+", "", line["Source"].strip()).split(" ")[0]] += n
    print(f"  warp samples {total}: " + ", ".join(f"{op} {n / total:.1%}" for op, n in by_opcode.most_common(8)))
    for i in sorted(range(len(lines)), key=lambda i: -samples[i])[:top]:
        print(f"    {samples[i] / total:6.1%} at {i / max(1, len(lines) - 1):4.0%}  {lines[i]['Source'].strip()[:90]}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        return summary(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "--sass-summary":
        return sass_summary(sys.argv[2])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default="build/libfa_jit.so")
    p.add_argument("--head-dims", type=int, nargs="+", default=[64, 128])
    p.add_argument("--seqlen", type=int, default=16384)
    p.add_argument("--causal", choices=["no", "yes", "both"], default="no")
    p.add_argument("--peer", choices=["fa4", "cudnn"], default="fa4")
    p.add_argument("--window", metavar="L,R", help="a sliding window (-1: unbounded), fa-jit and FA4 alike")
    p.add_argument("--fa4-site", default=os.environ.get("FA4_SITE", "/tmp/fa4site"))
    args = p.parse_args()

    import torch  # the summaries run without it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch.nn.functional as F
    from compare import DTYPES, PEERS, FaJit, Fa4, sdpa_kernel
    fa = FaJit(args.lib)
    fa4 = Fa4(args.fa4_site, False) if args.peer == "fa4" else None
    if fa4 is not None and not fa4:  # fa-jit alone: its counters still tell variants of it apart
        print(f"FlashAttention-4 not available ({fa4.why}): profiling fa-jit alone", flush=True)
    peer_name = {"fa4": "FlashAttention-4", "cudnn": "cuDNN"}[args.peer] if fa4 is None or fa4 else None
    window = tuple(int(x) for x in args.window.split(",")) if args.window else None
    if window is not None and args.peer != "fa4":
        p.error("--window: cuDNN through SDPA takes no sliding window here; use --peer fa4")
    fa4_window = {} if window is None else {"window_size": tuple(None if x < 0 else x for x in window)}

    def cudnn(q, k, v, causal):
        with sdpa_kernel(PEERS["cudnn"]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    dtype, code = DTYPES["bf16"]
    calls = []
    masks = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    for d in args.head_dims:
        b, h, n = 16384 // args.seqlen, 2048 // d, args.seqlen
        q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dtype) for _ in range(3))  # BSHD
        o = torch.empty_like(q)
        views = [x.transpose(1, 2) for x in (q, k, v, o)]  # [B, H, N, d] views of the same memory
        for causal in masks:
            run_peer = (lambda q=q, k=k, v=v, causal=causal: fa4.func(
                q, k, v, causal=causal, num_splits=fa4.num_splits, **fa4_window)[0]) if args.peer == "fa4" else \
                (lambda views=views, causal=causal: cudnn(*views[:3], causal))
            calls.append((f"{d}{' causal' if causal else ''}{f' window {args.window}' if window else ''}",
                          lambda views=views, causal=causal: fa(*views, causal, code, window=window), run_peer))
    for _, run_fa, run_peer in calls:  # compile both, outside the profiled range
        run_fa()
        if peer_name:
            run_peer()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for d, run_fa, run_peer in calls:
        run_fa()
        if peer_name:
            run_peer()
        torch.cuda.synchronize()
        print(f"profiled d {d}: fa-jit{', then ' + peer_name if peer_name else ''}", flush=True)
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
