"""Packed variable-length rows of bench/compare.py (--varlen).

Causal prefill of 64k tokens packed without padding, in sequences whose lengths are uniform in 1..8k (seeded),
hidden 2048, against a fixed-length batch of the same tokens at the mean length, on the same family. TFLOP/s count
the visible pairs (n (n + 1) / 2 per causal sequence of n tokens): "vs fixed" is the packed rate over the fixed one.
FlashAttention-4's flash_attn_varlen_func runs the same packed tensors when it imports, and with --baseline-lib so
does a second fa-jit library ("base", checked the same way). They are timed together, their calls interleaved where
their speeds are within 1.3x (compare.time_interleaved). Correctness first: float64 on 128 random rows of three
sequences, each fa-jit library's output poisoned with NaN beforehand.
"""
import torch

from compare import DTYPES, reference_rows, rel_err, time_interleaved
from varlen_lengths import MAX_LEN, TOKENS, lengths

TOL = {"fp32": 1e-4, "fp16": 3e-3, "bf16": 2e-2}


def bhsd(x):
    """[total, H, d] -> a [1, H, total, d] view: the packed rows, batch stride unused."""
    return x.unsqueeze(0).transpose(1, 2)


def packed_args(fa, q, k, v, o, causal, code, lengths, cu, **kwargs):
    """fa-jit's arguments for packed sequences: q, k, v, o as [total, H, d], cu their prefix sums on the device."""
    a = fa.args(bhsd(q), bhsd(k), bhsd(v), bhsd(o), causal, code, **kwargs)
    a.batch, a.seqlen_q, a.seqlen_k = len(lengths), max(lengths), max(lengths)
    a.cu_seqlens_q = a.cu_seqlens_k = cu.data_ptr()
    a.total_q = a.total_k = sum(lengths)
    return a


def run_varlen(args, fa, fa4, dtype_name, base=None):
    dtype, code = DTYPES[dtype_name]
    results = []
    lens = lengths()
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device="cuda", dtype=torch.int32)
    pairs = sum(n * (n + 1) // 2 for n in lens)
    print(f"# varlen, dtype {dtype_name}: {len(lens)} sequences, {TOKENS} tokens, lengths 1..{MAX_LEN} "
          f"(mean {TOKENS / len(lens):.0f})", flush=True)
    for d in args.head_dims:
        h = 2048 // d
        flops = 4.0 * h * d * pairs
        sets = [tuple(torch.randn(TOKENS, h, d, device="cuda", dtype=dtype) for _ in range(3)) for _ in range(2)]
        o = torch.empty_like(sets[0][0])

        def call(q, k, v, lib=fa):
            return packed_args(lib, q, k, v, o, True, code, lens, cu)

        row = {"dtype": dtype_name, "head_dim": d, "heads": h, "tokens": TOKENS, "sequences": len(lens),
               "visible_pairs": pairs}
        q, k, v = sets[0]
        checks = {}  # each library's packed output against the reference on 128 rows of three sequences
        for name, lib in [("fa_jit", fa)] + ([("base", base)] if base else []):
            o.fill_(float("nan"))
            lib.run(call(q, k, v, lib))
            torch.cuda.synchronize()
            errs = []
            for b in (0, len(lens) // 2, len(lens) - 1):
                s, e = int(cu[b]), int(cu[b + 1])
                rows = torch.randperm(e - s, device="cuda")[:128].sort().values
                seq = [bhsd(x[s:e]) for x in (q, k, v)]
                ref = reference_rows(*seq, True, rows)
                errs.append(rel_err(bhsd(o[s:e]), ref, rows))
            row[f"{name}_rel_err"] = max(errs)
            checks[name] = bool(torch.isfinite(o).all()) and max(errs) < TOL[dtype_name]
            if not checks[name]:
                print(f"WRONG: {name} varlen {row}", flush=True)
        err, ok = row["fa_jit_rel_err"], checks["fa_jit"]
        # fa-jit on the packed sequences, the same tokens as a fixed-length batch at the mean length (causal: pairs
        # counted alike) and FlashAttention-4's varlen, timed together (compare.time_interleaved).
        n = round(TOKENS / len(lens))
        b = TOKENS // n
        fixed = [tuple(torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3)) for _ in range(2)]
        of = torch.empty_like(fixed[0][0])
        timers = {"fixed": (lambda q, k, v: fa(q, k, v, of, True, code), fixed)}
        if ok:
            timers["fa_jit"] = (lambda a: fa.run(a), [(call(*s),) for s in sets])
        if checks.get("base"):
            timers["base"] = (lambda a: base.run(a), [(call(*s, lib=base),) for s in sets])
        if fa4:
            def call4(q, k, v):
                return fa4.varlen(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens),
                                  max_seqlen_k=max(lens), causal=True, num_splits=fa4.num_splits)[0]
            try:
                call4(*sets[0])
                timers["fa4"] = (call4, sets)
            except (RuntimeError, TypeError, ValueError, AssertionError) as e:
                row["fa4_error"] = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        ms = time_interleaved(timers, args)
        row["fa_jit_tflops"] = flops / ms["fa_jit"] / 1e9 if ms.get("fa_jit") else None
        row["fixed_seqlen"], row["fixed_batch"] = n, b
        row["fixed_tflops"] = 4.0 * h * d * b * n * (n + 1) / 2 / ms["fixed"] / 1e9
        row["vs_fixed"] = row["fa_jit_tflops"] / row["fixed_tflops"] if row["fa_jit_tflops"] else None
        row["fa4_tflops"] = flops / ms["fa4"] / 1e9 if ms.get("fa4") else None
        if base:
            row["base_tflops"] = flops / ms["base"] / 1e9 if ms.get("base") else None
        results.append(row)
        ratio = row["vs_fixed"]
        base_text = f"  base {row['base_tflops'] or 0:6.1f}" if base else ""
        print(f"d={d:<3d} H={h:<3d} varlen causal  fa-jit {row['fa_jit_tflops'] or 0:6.1f} TFLOP/s  fixed B={b} N={n} "
              f"{row['fixed_tflops']:6.1f}  vs fixed {ratio or float('nan'):5.3f}  fa4 {row['fa4_tflops'] or 0:6.1f}"
              f"{base_text}  err {err:.1e}", flush=True)
    return results
