"""Paged KV cache rows of bench/compare.py (--paged).

The same problem in one process: K / V contiguous, and K / V scattered into pages of 16, 64 and 256 rows
(--page-sizes) in random order (a block table per sequence), on fa-jit's chosen family each time. "vs contiguous" is
the paged rate over the contiguous one. Decode rows (bf16, d 128, 32 query heads, GQA 8 KV heads) report KV TB/s (bytes of K and V read
/ time, queued timing as the decode rows); prefill rows (16k tokens, hidden 2048) report TFLOP/s (causal: visible
pairs). FlashAttention-4 runs the paged decode rows where its flash_attn_varlen_func takes a page_table.
Correctness first: float64 on a few sequences (decode) or 128 random rows (prefill), outputs poisoned with NaN.
Timing: decode rows in --rounds rounds (default 3 here) that time every layout of a row in turn, each rate the
median; prefill rows interleave the calls of every layout (compare.time_interleaved).
"""
import math
import statistics

import torch

from compare import DTYPES, decode_err, decode_reference, reference_rows, rel_err, time_interleaved, time_queued_us

DECODE_SHAPES = [(16, 32, 8, 1, 16384), (64, 32, 8, 1, 4096), (1, 32, 8, 1, 131072), (16, 32, 8, 4, 16384)]
TOL = {"fp16": 3e-3, "bf16": 2e-2}


def to_pages(x, page_size, perm):
    """[B, N, H, d] -> [B * pages_per_seq, page_size, H, d] with sequence b's page j at perm[b * per_seq + j]."""
    b, n, h, d = x.shape
    per_seq = math.ceil(n / page_size)
    padded = torch.zeros(b, per_seq * page_size, h, d, device=x.device, dtype=x.dtype)
    padded[:, :n] = x
    pages = torch.empty(b * per_seq, page_size, h, d, device=x.device, dtype=x.dtype)
    pages[perm] = padded.view(b * per_seq, page_size, h, d)
    return pages


def paged_args(fa, q, pages_k, pages_v, o, causal, code, seqlen_k, table, page_size):
    """fa-jit's arguments for [B, H, N, d] views of q / o and [pages, page_size, H, d] pages."""
    a = fa.args(q, pages_k.transpose(1, 2), pages_v.transpose(1, 2), o, causal, code)
    a.batch, a.seqlen_k = q.shape[0], seqlen_k
    a.block_table, a.pages_per_seq = table.data_ptr(), table.shape[1]
    a.page_size, a.num_pages = page_size, pages_k.shape[0]
    return a


def layouts(k, v, gen, page_sizes, ordered=False):
    """(page size, table, K pages, V pages) for every page size, contiguous first (page size 0). ordered: page j of
    sequence b at b * pages_per_seq + j (batch 1: the contiguous tensor's bytes), which leaves the paged kernel's own
    cost without the scatter's."""
    b, n = k.shape[0], k.shape[1]
    out = [(0, None, k, v)]
    for ps in page_sizes:
        per_seq = math.ceil(n / ps)
        perm = torch.arange(b * per_seq) if ordered else torch.randperm(b * per_seq, generator=gen)
        perm = perm.cuda()
        out.append((ps, perm.view(b, per_seq).int().contiguous(), to_pages(k, ps, perm), to_pages(v, ps, perm)))
    return out


def alternating(calls, timer, rounds):
    """Median time of each call (None: not timed) over `rounds` rounds that time every call in turn, so that clock
    and temperature drift over a row's timings reach contiguous and paged alike."""
    times = [[] for _ in calls]
    for _ in range(rounds):
        for i, call in enumerate(calls):
            if call is not None:
                times[i].append(timer(call))
    return [statistics.median(t) if t else None for t in times]


def finish(rows, key):
    """vs_contiguous of each row: its rate over the first (contiguous) row's."""
    base = rows[0].get(key)
    for row in rows:
        row["vs_contiguous"] = row[key] / base if row.get(key) and base else None


def run_paged_decode(args, fa, fa4, dtype_name):
    dtype, code = DTYPES[dtype_name]
    d = 128
    results = []
    gen = torch.Generator().manual_seed(7)
    print(f"# paged decode, dtype {dtype_name}, d {d}: KV TB/s, contiguous and paged (page size)", flush=True)
    for b, hq, hkv, nq, nk in DECODE_SHAPES:
        causal = nq > 1
        q = torch.randn(b, nq, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype)
        o = torch.empty_like(q)
        kv_bytes = 2 * b * hkv * nk * d * dtype.itemsize
        picks = sorted({0, b - 1})
        ref = decode_reference(q, k, v, causal, picks)
        line, rows, calls = f"B={b:<3d} Hq={hq} Hkv={hkv} Nq={nq} Nk={nk:<6d}", [], []
        for ps, table, kp, vp in layouts(k, v, gen, args.page_sizes, args.page_order == "ordered"):
            row = {"kind": "paged_decode", "dtype": dtype_name, "batch": b, "heads_q": hq, "heads_kv": hkv,
                   "seqlen_q": nq, "seqlen_k": nk, "head_dim": d, "causal": causal, "page_size": ps}
            if ps == 0:
                a = fa.args(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o.transpose(1, 2), causal, code)
            else:
                a = paged_args(fa, q.transpose(1, 2), kp, vp, o.transpose(1, 2), causal, code, nk, table, ps)
            o.fill_(float("nan"))
            fa.run(a)
            torch.cuda.synchronize()
            row["fa_jit_rel_err"] = err = decode_err(o, ref, torch.tensor(picks, device="cuda"))
            ok = bool(torch.isfinite(o).all()) and err < TOL[dtype_name]
            if not ok:
                print(f"WRONG: fa-jit {row}", flush=True)
            if fa4 and ps:
                try:
                    def call4(kp=kp, vp=vp, table=table):
                        return fa4.varlen(q, kp, vp, page_table=table, seqused_k=torch.full(
                            (b,), nk, dtype=torch.int32, device="cuda"), causal=causal,
                            num_splits=fa4.num_splits)[0]
                    row["fa4_rel_err"] = decode_err(call4(), ref, torch.tensor(picks, device="cuda"))
                    row["fa4_tbps"] = kv_bytes / time_queued_us([call4], args.warmup, args.reps)[0] / 1e6
                except (RuntimeError, TypeError, ValueError, AssertionError, NotImplementedError) as e:
                    row["fa4_error"] = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            rows.append(row)
            calls.append((lambda a=a: fa.run(a)) if ok else None)
        us = alternating(calls, lambda call: time_queued_us([call], args.warmup, args.reps)[0], max(args.rounds, 3))
        for row, t in zip(rows, us):
            row["fa_jit_tbps"] = kv_bytes / t / 1e6 if t else None
        finish(rows, "fa_jit_tbps")
        for row in rows:
            ps = row["page_size"]
            cell = f"{row['fa_jit_tbps'] or 0:5.2f}"
            if ps:
                cell += f" ({row['vs_contiguous'] or 0:4.2f}" + (f", fa4 {row['fa4_tbps']:4.2f})" if row.get(
                    "fa4_tbps") else ")")
            line += f"  {ps or 'contig'}: {cell}"
        results += rows
        print(line, flush=True)
        del q, k, v, o
        torch.cuda.empty_cache()
    return results


def run_paged_prefill(args, fa, dtype_name):
    dtype, code = DTYPES[dtype_name]
    results = []
    gen = torch.Generator().manual_seed(8)
    n = 16384
    print(f"# paged prefill, dtype {dtype_name}: 16k tokens, hidden 2048, TFLOP/s contiguous and paged", flush=True)
    for d in args.head_dims:
        h = 2048 // d
        q = torch.randn(1, n, h, d, device="cuda", dtype=dtype)
        k = torch.randn(1, n, h, d, device="cuda", dtype=dtype)
        v = torch.randn(1, n, h, d, device="cuda", dtype=dtype)
        o = torch.empty_like(q)
        rows_checked = torch.randperm(n, device="cuda")[:128].sort().values
        for causal in (False, True):
            flops = 4.0 * h * d * (n * (n + 1) / 2 if causal else n * n)
            ref = reference_rows(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal, rows_checked)
            line, rows, calls = f"d={d:<3d} H={h:<3d} causal={int(causal)}", [], []
            for ps, table, kp, vp in layouts(k, v, gen, args.page_sizes, args.page_order == "ordered"):
                row = {"kind": "paged_prefill", "dtype": dtype_name, "seqlen": n, "heads": h, "head_dim": d,
                       "causal": causal, "page_size": ps}
                if ps == 0:
                    a = fa.args(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), o.transpose(1, 2), causal,
                                code)
                else:
                    a = paged_args(fa, q.transpose(1, 2), kp, vp, o.transpose(1, 2), causal, code, n, table, ps)
                o.fill_(float("nan"))
                fa.run(a)
                torch.cuda.synchronize()
                row["fa_jit_rel_err"] = err = rel_err(o.transpose(1, 2), ref, rows_checked)
                ok = bool(torch.isfinite(o).all()) and err < TOL[dtype_name]
                if not ok:
                    print(f"WRONG: fa-jit {row}", flush=True)
                rows.append(row)
                calls.append((lambda a=a: fa.run(a)) if ok else None)
            # Contiguous and every page size timed together, their calls interleaved (compare.time_interleaved).
            got = time_interleaved({i: (call, [()]) for i, call in enumerate(calls) if call is not None}, args)
            ms = [got.get(i) for i in range(len(calls))]
            for row, t in zip(rows, ms):
                row["fa_jit_tflops"] = flops / t / 1e9 if t else None
            finish(rows, "fa_jit_tflops")
            for row in rows:
                ps = row["page_size"]
                line += f"  {ps or 'contig'}: {row['fa_jit_tflops'] or 0:6.1f}" + (
                    f" ({row['vs_contiguous'] or 0:4.2f})" if ps else "")
            results += rows
            print(line, flush=True)
        del q, k, v, o
        torch.cuda.empty_cache()
    return results


def run_paged(args, fa, fa4, dtype_name):
    return run_paged_decode(args, fa, fa4, dtype_name) + run_paged_prefill(args, fa, dtype_name)
