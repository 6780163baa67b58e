#!/usr/bin/env python3
"""A / B of kernel-source variants on the GPU, without rebuilding the library.

Each variant is a copy of kernel_sources/ with one or more compile-time constants changed, served to fa-jit-bench
through FA_JIT_KERNEL_DIR (the library compiles a variant's kernels under their own cache keys). Every row set runs
under every variant in turn, for --rounds rounds, so that clock and temperature drift reach all variants alike;
each rate is the median over the rounds, next to the first variant's and the rel. L2 error of the first round's
check against the float64 reference (fa-jit-bench fails a row whose error exceeds the dtype's tolerance). Before the
rounds, every (variant, row set) runs once untimed, all at the same time, so that NVRTC compiles the kernels in
parallel. A table follows every round, so that a run cut short still reports.

    python3 bench/kernel_ab.py --bench .carry/fa-jit-bench \\
        --variant base --variant try2 attention_f16_ws.cu:kSomeSwitch=2 \\
        --rows "--batch 1 --heads 32 --seqlen-q 16k --head-dim 64 --dtype bf16 --causal both"

A change is `FILE:NAME=VALUE`: the one `constexpr ... NAME = ...;` declaration in FILE gets VALUE as its
initializer (exactly one must match), or `@DIR`: the variant starts from the kernel sources in DIR instead (an earlier
commit's, `git archive COMMIT kernel_sources | tar -x -C DIR --strip-components=1`), or `lib=DIR`: fa-jit-bench runs
on the libfa_jit.so.0 in DIR (another build's, e.g. `.carry/baseline` from `BASELINE_LIB=... scripts/gpu-pack`), for
changes to host rules such as tile choice or grid shape; give that build's own kernel sources with `@DIR`. A variant
with no changes is the sources as they are.

    python3 bench/kernel_ab.py --variant main @.carry/ks_main lib=.carry/baseline --variant branch --rows "..."

--interleave times the variants in one process instead, their calls interleaved, so that all run under one clock
(bench/ab_interleaved.py; an H200 at its power cap lowers the clock for whatever runs long).
"""
import argparse
import csv
import io
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_variant(base, changes, into):
    # `@DIR`: this variant starts from another copy of kernel_sources/ (e.g. `git archive` of an earlier commit's, whose
    # AttentionParams must match the library's).
    sources = [c[1:] for c in changes if c.startswith("@")]
    shutil.copytree(sources[-1] if sources else base, into)
    for change in (c for c in changes if not c.startswith("@") and not c.startswith("lib=")):
        m = re.fullmatch(r"([^:]+):(\w+)=(.+)", change)
        if not m:
            sys.exit(f"kernel_ab: a change is FILE:NAME=VALUE, got {change!r}")
        path, name, value = os.path.join(into, m[1]), m[2], m[3]
        text = open(path).read()
        pattern = re.compile(r"(constexpr\s[^;=]*\b" + name + r"\s*=\s*)[^;]+;")
        if len(pattern.findall(text)) != 1:
            sys.exit(f"kernel_ab: {m[1]} must declare constexpr {name} exactly once")
        open(path, "w").write(pattern.sub(lambda x: x[1] + value + ";", text))


def library_dir(changes):
    # `lib=DIR`: the build whose libfa_jit.so.0 this variant's fa-jit-bench loads (None: the one it finds anyway).
    dirs = [os.path.abspath(c[4:]) for c in changes if c.startswith("lib=")]
    if dirs and not os.path.isfile(os.path.join(dirs[-1], "libfa_jit.so.0")):
        sys.exit(f"kernel_ab: {dirs[-1]} has no libfa_jit.so.0")
    return dirs[-1] if dirs else None


def run_rows(bench, kernel_dir, rows, extra, lib_dir=None):
    env = dict(os.environ, FA_JIT_KERNEL_DIR=kernel_dir)
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    cmd = [bench, *shlex.split(rows), "--csv", "-q", *extra]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"kernel_ab: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr}")
    return list(csv.DictReader(io.StringIO(out.stdout)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(ROOT, ".carry", "fa-jit-bench"))
    ap.add_argument("--sources", default=os.path.join(ROOT, "kernel_sources"), help="the sources variants start from")
    ap.add_argument("--variant", nargs="+", action="append", required=True, metavar=("NAME", "CHANGE"),
                    help="a name, then FILE:NAME=VALUE changes or @DIR (none: the sources as they are)")
    ap.add_argument("--rows", action="append", required=True, help="fa-jit-bench problem options, one row set")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bench-args", default="--reps 20 --warmup 3", help="timing options for every run")
    ap.add_argument("--interleave", action="store_true",
                    help="time the variants in one process, their calls interleaved (bench/ab_interleaved.py; "
                         "needs torch; the chooser's tiles only)")
    a = ap.parse_args()

    rates, errors, status = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        dirs, libs = [], {}
        for name, *changes in a.variant:
            dirs.append((name, os.path.join(tmp, name)))
            make_variant(a.sources, changes, dirs[-1][1])
            libs[name] = library_dir(changes)
        compile_only = ["--reps", "1", "--warmup", "0", "--no-check"]
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:  # compiles only: one repetition, no check
            list(pool.map(lambda job: run_rows(a.bench, job[1], job[0], compile_only, libs[job[2]]),
                          [(rows, d, n) for rows in a.rows for n, d in dirs]))
        print("kernels compiled", file=sys.stderr)
        if a.interleave:
            from ab_interleaved import run_interleaved  # torch: only on the GPU machine
            run_interleaved(a, dirs, libs, tmp)
            return
        names = [n for n, _ in dirs]
        for rnd in range(a.rounds):
            # The check runs in the first round only: its error does not change, and later rounds time faster.
            timing = shlex.split(a.bench_args) + (["--no-check"] if rnd else [])
            for rows in a.rows:
                for name, d in dirs:
                    for r in run_rows(a.bench, d, rows, timing, libs[name]):
                        key = (rows, r["dtype"], r["head_dim"], r["seqlen_q"], r["seqlen_k"], r["causal"])
                        if not rnd:
                            status[key, name] = r["status"]
                            errors[key, name] = r["rel_l2_error"]
                        # a WRONG row has no rate; rounds after the first run unchecked
                        if r["status"] in ("ok", "unchecked") and r["tflops"] not in ("", "-"):
                            rates.setdefault((key, name), []).append(float(r["tflops"]))
            # A table after every round, so that a run cut short by a time limit still reports.
            print(f"round {rnd + 1} of {a.rounds} done", file=sys.stderr)
            print_table(names, status, rates, errors)


def print_table(names, status, rates, errors):
    keys = list(dict.fromkeys(k for k, _ in status))  # in the order they ran
    print("| rows | dtype | d | Nq | Nk | causal | " + " | ".join(names) + " |")
    print("|---" * (6 + len(names)) + "|")
    for key in keys:
        base = statistics.median(rates[key, names[0]]) if (key, names[0]) in rates else None
        cells = []
        for n in names:
            if (key, n) not in rates:
                cells.append(status.get((key, n), "-"))
                continue
            r = statistics.median(rates[key, n])
            ratio = f" ({r / base:.3f})" if base and n != names[0] else ""
            cells.append(f"{r:.1f}{ratio} err {errors[key, n]}")
        print(f"| {key[0]} | " + " | ".join(key[1:]) + " | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
