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
import sys
from bisect import bisect_left, bisect_right


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


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: clock_split.py ROWS.json TRACE.csv")
    rows = json.load(open(sys.argv[1]))
    rows = rows if isinstance(rows, list) else [r for v in rows.values() if isinstance(v, list) for r in v]
    trace = read_trace(sys.argv[2])
    times = [s[0] for s in trace]
    print(f"{'row':34s} {'contender':10s} {'TFLOP/s':>8s} {'MHz':>6s} {'W':>6s} {'TFLOP/s per GHz':>16s} samples")
    for row in rows:
        spans = {}
        for block in row.get("blocks", []):
            spans.setdefault(block["name"], []).append((block["t0"], block["t1"]))
        label = f"{row.get('dtype', '')} B{row['batch']} H{row['heads']} N{row['seqlen']} d{row['head_dim']} " \
                f"c{int(row['causal'])}"
        for name, intervals in spans.items():
            picked = [trace[i] for t0, t1 in intervals for i in range(bisect_left(times, t0), bisect_right(times, t1))]
            tflops = row.get(f"{name}_tflops")
            if not picked or not tflops:
                continue
            mhz = sum(s[1] for s in picked) / len(picked)
            watts = sum(s[2] for s in picked) / len(picked)
            print(f"{label:34s} {name:10s} {tflops:8.1f} {mhz:6.0f} {watts:6.0f} {tflops / mhz * 1000:16.1f} "
                  f"{len(picked)}")


if __name__ == "__main__":
    main()
