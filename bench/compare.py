#!/usr/bin/env python3
"""fa-jit against PyTorch SDPA's backends, in one process on one GPU.

fa-jit is called through its C ABI (ctypes) on tensors torch allocated, on torch's current stream; every
implementation is timed with CUDA events (median of many repetitions after warm-up, rotating input sets so L2 does
not flatter) and checked against a reference before it is timed.

    python3 bench/compare.py --lib build/libfa_jit.so [--dtype fp32 bf16 fp16] [--head-dims 64 128 256]
                             [--quick] [--json out.json] [--baseline-lib old/libfa_jit.so.0]

--baseline-lib loads a second fa-jit build (an earlier commit's library, RTLD_LOCAL so that each keeps its own
symbols) and times it next to this one on the same inputs: the "base" and "new/base" columns.

Accuracy yardstick: the relative error against float64 of SDPA's flash backend (FlashAttention-2) for fp16/bf16,
of its efficient backend for fp32 (flash has no fp32), on the same inputs and rows.
"""
import argparse
import ctypes
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


class Strides(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("head", ctypes.c_int64), ("row", ctypes.c_int64)]


class Args(ctypes.Structure):  # fa_jit_attention_args, include/fa_jit/fa_jit.h
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", ctypes.c_void_p),
                ("lse", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("batch", ctypes.c_int32), ("heads_q", ctypes.c_int32), ("heads_kv", ctypes.c_int32),
                ("seqlen_q", ctypes.c_int32), ("seqlen_k", ctypes.c_int32), ("head_dim", ctypes.c_int32),
                ("q_strides", Strides), ("k_strides", Strides), ("v_strides", Strides), ("o_strides", Strides),
                ("scale", ctypes.c_float), ("causal", ctypes.c_int32)]


DTYPES = {"fp32": (torch.float32, 0), "fp16": (torch.float16, 1), "bf16": (torch.bfloat16, 2)}
PEERS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
         "efficient": SDPBackend.EFFICIENT_ATTENTION}


def strides(t):  # [B, H, N, d] tensor -> element strides
    s = t.stride()
    return Strides(s[0], s[1], s[2])


class FaJit:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self.lib.fa_jit_attention.restype = ctypes.c_int
        self.lib.fa_jit_attention.argtypes = [ctypes.POINTER(Args), ctypes.c_void_p]
        self.lib.fa_jit_last_error.restype = ctypes.c_char_p

    def __call__(self, q, k, v, o, causal, dtype_code):
        a = Args(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), None, dtype_code,
                 q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3],
                 strides(q), strides(k), strides(v), strides(o), 0.0, int(causal))
        status = self.lib.fa_jit_attention(ctypes.byref(a), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if status != 0:
            raise RuntimeError(f"fa_jit_attention: status {status}: {self.lib.fa_jit_last_error().decode()}")


def time_ms(fn, input_sets, warmup, reps):
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        args = input_sets[i % len(input_sets)]
        starts[i].record()
        fn(*args)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def reference_rows(q, k, v, causal, rows):
    """float64 attention for the query rows `rows` (all heads, all keys); bottom-right causal alignment."""
    nq, nk, d = q.shape[2], k.shape[2], q.shape[3]
    group = q.shape[1] // k.shape[1]
    kk = k.double().repeat_interleave(group, dim=1)
    vv = v.double().repeat_interleave(group, dim=1)
    s = (q[:, :, rows].double() @ kk.transpose(-1, -2)) / math.sqrt(d)
    if causal:
        j = torch.arange(nk, device=q.device)[None, :]
        s = s.masked_fill(~(j <= rows[:, None] + (nk - nq)), float("-inf"))
    return torch.softmax(s, dim=-1).nan_to_num(0.0) @ vv


def rel_err(out, ref, rows):
    x = out[:, :, rows].double()
    return ((x - ref).norm() / ref.norm()).item()


def shapes(args, dtype_name):
    rows = []
    if dtype_name == "fp32":
        rows.append(("tutorial", 1, 96, 512, 128, False))
    seqlens = [512, 2048, 16384] if args.quick else [512, 1024, 2048, 4096, 8192, 16384]
    for d in args.head_dims:
        for causal in (False, True):
            for n in seqlens:
                rows.append(("16k tokens", 16384 // n, 2048 // d, n, d, causal))
    return rows


def check(fa, sets, o, causal, code, ref, rows, peer_err, tol):
    """(rel err, ok) of one fa-jit build on input set 0: poisoned output, float64 check."""
    q, k, v = sets[0]
    o.fill_(float("nan"))
    fa(q, k, v, o, causal, code)
    torch.cuda.synchronize()
    err = rel_err(o, ref, rows)
    # Within the dtype's tolerance, or no worse than 1.5x the peer on the same inputs.
    ok = bool(torch.isfinite(o).all()) and math.isfinite(err) and (err < tol or err <= 1.5 * peer_err)
    return err, ok


def time_builds(builds, sets, o, causal, code, args):
    """Median ms of each build, timed in `args.rounds` alternating rounds (A B A B ...) of args.reps repetitions, so
    that clock and thermal drift during a row fall on every build alike."""
    per_build = [[] for _ in builds]
    for _ in range(args.rounds):
        for i, fa in enumerate(builds):
            per_build[i].append(time_ms(lambda q, k, v: fa(q, k, v, o, causal, code), sets, args.warmup, args.reps))
    return [statistics.median(ms) for ms in per_build]


def run_dtype(args, fa, dtype_name, base=None):
    dtype, code = DTYPES[dtype_name]
    peers = ["efficient"] if dtype_name == "fp32" else ["flash", "cudnn", "efficient"]
    yardstick = peers[0]  # the SDPA backend whose error ours is held to (within 1.5x)
    tol = {"fp32": 1e-4, "fp16": 3e-3, "bf16": 2e-2}[dtype_name]
    print(f"# dtype {dtype_name}", flush=True)
    results = []
    for name, b, h, n, d, causal in shapes(args, dtype_name):
        flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
        bytes_per_set = 4 * b * h * n * d * dtype.itemsize
        n_sets = max(1, min(8, math.ceil(2 * 60e6 / bytes_per_set)))  # > 2x a 60 MB L2 when small
        sets = [tuple(torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3)) for _ in range(n_sets)]
        o = torch.empty_like(sets[0][0])
        row = {"dtype": dtype_name, "shape": name, "batch": b, "heads": h, "seqlen": n, "head_dim": d,
               "causal": causal}

        # Correctness first, against float64 on a random subset of query rows (all of them when few), with the
        # error of the yardstick SDPA backend on the same rows for scale.
        q, k, v = sets[0]
        rows = torch.randperm(n, device="cuda")[:256].sort().values
        ref = reference_rows(q, k, v, causal, rows)
        with sdpa_kernel(PEERS[yardstick]):
            peer_err = rel_err(F.scaled_dot_product_attention(q, k, v, is_causal=causal), ref, rows)
        row[f"{yardstick}_rel_err"] = peer_err
        err, ok = check(fa, sets, o, causal, code, ref, rows, peer_err, tol)
        row["fa_jit_rel_err"] = err
        if not ok:
            print(f"WRONG: fa-jit {row} rel err {err:.3g} (SDPA {yardstick} {peer_err:.3g})", flush=True)
        builds = [fa] if ok else []
        if base:
            base_err, base_ok = check(base, sets, o, causal, code, ref, rows, peer_err, tol)
            row["base_rel_err"] = base_err
            if not base_ok:
                print(f"WRONG: baseline {row} rel err {base_err:.3g}", flush=True)
            elif ok:
                builds.append(base)
        times = time_builds(builds, sets, o, causal, code, args) if builds else []
        row["fa_jit_tflops"] = flops / times[0] / 1e9 if ok else None
        if base:
            row["base_tflops"] = flops / times[1] / 1e9 if ok and base_ok else None
        for peer in peers:
            try:
                with sdpa_kernel(PEERS[peer]):
                    ms = time_ms(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), sets,
                                 args.warmup, args.reps)
                row[f"{peer}_tflops"] = flops / ms / 1e9
            except RuntimeError:  # the backend does not support this dtype or shape
                row[f"{peer}_tflops"] = None
        results.append(row)
        peer_text = "  ".join(f"{peer} {row[f'{peer}_tflops'] or 0:7.1f}" for peer in peers)
        base_text = f"base {row['base_tflops'] or 0:7.1f}  " if base else ""
        print(f"{name:10s} B={b:<3d} H={h:<3d} N={n:<6d} d={d:<3d} causal={int(causal)}  "
              f"fa-jit {row['fa_jit_tflops'] or 0:7.1f}  {base_text}{peer_text}  err {err:.1e} "
              f"({yardstick} {peer_err:.1e})", flush=True)
        del sets, o

    print(f"\n{'shape':10s} {'B':>3s} {'H':>3s} {'N':>6s} {'d':>4s} {'causal':>6s} {'fa-jit':>8s} " +
          (f"{'base':>8s} {'new/base':>8s} " if base else "") +
          " ".join(f"{p:>9s} {'ratio':>6s}" for p in peers) + f"  err/{yardstick}   ({dtype_name}, TFLOP/s)")
    for r in results:
        line = (f"{r['shape']:10s} {r['batch']:3d} {r['heads']:3d} {r['seqlen']:6d} {r['head_dim']:4d} "
                f"{int(r['causal']):6d} {r['fa_jit_tflops'] or 0:8.1f} ")
        if base:
            b_t = r["base_tflops"]
            line += f"{b_t or 0:8.1f} {(r['fa_jit_tflops'] or 0) / b_t if b_t else float('nan'):8.3f} "
        for peer in peers:
            t = r[f"{peer}_tflops"]
            ratio = (r["fa_jit_tflops"] or 0) / t if t else float("nan")
            line += f"{t or 0:9.1f} {ratio:6.2f} "
        print(line + f" {r['fa_jit_rel_err'] / r[f'{yardstick}_rel_err']:9.2f}")
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default="build/libfa_jit.so")
    p.add_argument("--dtype", default=["fp32"], nargs="+", choices=DTYPES)
    p.add_argument("--head-dims", type=int, nargs="+", default=[64, 128])
    p.add_argument("--quick", action="store_true", help="fewer sequence lengths")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--baseline-lib", help="a second fa-jit library to time beside --lib (e.g. an earlier commit's)")
    p.add_argument("--rounds", type=int, default=1,
                   help="alternating timing rounds per row for --lib and --baseline-lib (median over rounds)")
    args = p.parse_args()

    torch.manual_seed(0)
    fa = FaJit(args.lib)
    base = FaJit(args.baseline_lib) if args.baseline_lib else None
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    results = []
    for dtype_name in args.dtype:
        results += run_dtype(args, fa, dtype_name, base)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if base:
        ratios = [r["fa_jit_tflops"] / r["base_tflops"] for r in results if r["fa_jit_tflops"] and r["base_tflops"]]
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            print(f"\nnew/base over {len(ratios)} rows: min {min(ratios):.3f}, geometric mean {geo:.3f}, "
                  f"max {max(ratios):.3f}", flush=True)
    ok = all(r["fa_jit_tflops"] for r in results) and all(r.get("base_tflops", 1) for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
