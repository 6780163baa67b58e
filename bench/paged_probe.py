#!/usr/bin/env python3
"""Where a paged prefill row's cost comes from: contiguous K / V against the same keys in pages, under one timing.

One prefill problem (bf16, 16k tokens, hidden 2048: B 1, H 2048 / d, N 16k), run contiguous and paged (pages of
--page-size rows) in every form that separates one cause: the pages shuffled or in the sequence's order (in order,
batch 1, the paged cache holds the contiguous tensor's bytes, so what is left is the paged kernel's own cost), and Q /
O stored [B, N, H, d] or [B, H, N, d]. `--variant NAME DIR` adds the contiguous and the in-order paged call of a
copy of the library whose kernels compile from the kernel sources in DIR (FA_JIT_KERNEL_DIR while its first call
compiles; kernel_ab.py's `@DIR` form), so that a source change is timed beside main in the same process. Every call is
timed by compare.time_interleaved (their calls interleaved, one clock); rates are relative to the first row.

    python3 bench/paged_probe.py --lib .carry/libfa_jit.so --head-dim 64 --page-size 64 --variant new DIR

--profile NAME ...: instead of timing, one call of each named row inside a profiler range, for
`ncu --profile-from-start off ... python3 bench/paged_probe.py ... --profile "contiguous" "paged, in order"`
(then `bench/ncu_pair.py --summary` on the report's raw page). Not checked against a reference: the rows' kernels
are the ones the GPU suites check; a variant is checked there before it is timed here.
"""
import argparse
import os
import shutil
import sys

import torch

from compare import DTYPES, FaJit, time_interleaved
from compare_paged import layouts, paged_args


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--page-size", type=int, default=64)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timing", choices=["grouped", "rotate", "blocks"], default="grouped")
    ap.add_argument("--variant", nargs=2, action="append", default=[], metavar=("NAME", "KERNEL_DIR"))
    ap.add_argument("--profile", nargs="*", metavar="ROW")
    a = ap.parse_args()

    dtype, code = DTYPES["bf16"]
    n, d, c, ps = 16384, a.head_dim, a.causal, a.page_size
    h = 2048 // d
    q, k, v = (torch.randn(1, n, h, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    q_bhsd = q.transpose(1, 2).contiguous()
    o_bhsd = torch.empty_like(q_bhsd)
    gen = torch.Generator().manual_seed(8)
    _, table, kp, vp = layouts(k, v, gen, [ps])[1]
    _, table_in_order, kp_in_order, vp_in_order = layouts(k, v, gen, [ps], ordered=True)[1]
    bshd = (q.transpose(1, 2), o.transpose(1, 2))

    def contiguous(fa, qo=bshd):
        return fa.args(qo[0], k.transpose(1, 2), v.transpose(1, 2), qo[1], c, code)

    def paged(fa, in_order, qo=bshd):
        if in_order:
            return paged_args(fa, qo[0], kp_in_order, vp_in_order, qo[1], c, code, n, table_in_order, ps)
        return paged_args(fa, qo[0], kp, vp, qo[1], c, code, n, table, ps)

    fa = FaJit(a.lib)
    rows = {
        "contiguous": (fa, contiguous(fa)),
        "contiguous, Q / O bhsd": (fa, contiguous(fa, (q_bhsd, o_bhsd))),
        "paged": (fa, paged(fa, False)),
        "paged, in order": (fa, paged(fa, True)),
        "paged, Q / O bhsd": (fa, paged(fa, False, (q_bhsd, o_bhsd))),
    }
    for name, kernel_dir in a.variant:  # a copy of the library per variant: dlopen keeps one instance per file
        copy = os.path.join("/tmp", f"paged_probe_{name}", "libfa_jit.so.0")
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        shutil.copy(os.path.realpath(a.lib), copy)
        worker = os.path.join(os.path.dirname(os.path.realpath(a.lib)), "fa-jit-nvrtc")  # the compile worker
        if os.path.isfile(worker):
            shutil.copy(worker, os.path.dirname(copy))
        fv = FaJit(copy)
        os.environ["FA_JIT_KERNEL_DIR"] = os.path.abspath(kernel_dir)  # read while its first calls compile
        for row, args in ((f"contiguous {name}", contiguous(fv)), (f"paged, in order {name}", paged(fv, True))):
            fv.run(args)
            torch.cuda.synchronize()
            rows[row] = (fv, args)
        del os.environ["FA_JIT_KERNEL_DIR"]

    if a.profile is not None:
        for name in a.profile:
            f, args = rows[name]
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            f.run(args)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            print(f"profiled {name}", flush=True)
        return

    ms = time_interleaved({name: (lambda f=f, x=x: f.run(x), [()]) for name, (f, x) in rows.items()}, a)
    flops = 4.0 * h * d * (n * (n + 1) / 2 if c else n * n)
    first = flops / ms[next(iter(rows))] / 1e9
    print(f"# bf16 B1 H{h} N{n} d{d} {'causal' if c else 'full'}, pages of {ps}; TFLOP/s and the ratio to the first row")
    for name, t in ms.items():
        rate = flops / t / 1e9
        print(f"{name:32s} {rate:6.1f}  {rate / first:5.3f}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
