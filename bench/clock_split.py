#!/usr/bin/env python3
"""Each contender's SM clock and power while its calls ran, from compare.py --timing blocks and an nvidia-smi trace.

    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 > smi.csv &
    python3 bench/compare.py --timing blocks ... --json rows.json
    python3 bench/clock_split.py rows.json smi.csv

compare.py's blocks timing runs each contender's calls back to back in blocks of their own and logs each timed
block's wall-clock span (the row's "blocks"); this averages the trace's samples that fall inside each contender's
blocks. Under the power cap a kernel's clock follows its own draw, so two kernels of equal speed alone can differ
per clock cycle (bench/NOTES.md, "Power"). Run it on the machine that took the trace: nvidia-smi's timestamps are in
its local time.
"""
import csv
import datetime
import json
import shutil
import subprocess
import sys
from bisect import bisect_left, bisect_right

TRACE_QUERY = ["--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20"]


def start_trace(path):
    """nvidia-smi sampling the SM clock and power every 20 ms into `path`, line-buffered where stdbuf exists, so that
    the file is current while it runs; the caller terminates the returned process."""
    cmd = ["nvidia-smi", *TRACE_QUERY]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", *cmd]
    return subprocess.Popen(cmd, stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def read_trace(path):
    samples = []
    with open(path) as f:
        for rec in csv.reader(f):
            try:
                when = datetime.datetime.strptime(rec[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
                samples.append((when, float(rec[1]), float(rec[2])))
            except (ValueError, IndexError):
                continue  # a header or a cut line
    samples.sort()
    return samples


def mean_clock(trace, intervals):
    """(mean SM MHz, mean W, samples) of the trace's samples inside the (t0, t1) intervals; None without samples."""
    times = [sample[0] for sample in trace]
    picked = [trace[i] for t0, t1 in intervals for i in range(bisect_left(times, t0), bisect_right(times, t1))]
    if not picked:
        return None
    return sum(s[1] for s in picked) / len(picked), sum(s[2] for s in picked) / len(picked), len(picked)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: clock_split.py ROWS.json TRACE.csv")
    rows = json.load(open(sys.argv[1]))
    rows = rows if isinstance(rows, list) else [r for v in rows.values() if isinstance(v, list) for r in v]
    trace = read_trace(sys.argv[2])
    print(f"{'row':34s} {'contender':10s} {'TFLOP/s':>8s} {'MHz':>6s} {'W':>6s} {'TFLOP/s per GHz':>16s} samples")
    for row in rows:
        spans = {}
        for block in row.get("blocks", []):
            spans.setdefault(block["name"], []).append((block["t0"], block["t1"]))
        label = f"{row.get('dtype', '')} B{row['batch']} H{row['heads']} N{row['seqlen']} d{row['head_dim']} " \
                f"c{int(row['causal'])}"
        for name, intervals in spans.items():
            clock, tflops = mean_clock(trace, intervals), row.get(f"{name}_tflops")
            if not clock or not tflops:
                continue
            mhz, watts, samples = clock
            print(f"{label:34s} {name:10s} {tflops:8.1f} {mhz:6.0f} {watts:6.0f} {tflops / mhz * 1000:16.1f} {samples}")


if __name__ == "__main__":
    main()
