"""kernel_ab.py --interleave: every variant timed in one process, their calls interleaved (compare.time_interleaved).

Timed one after another (kernel_ab's default), a variant runs its ~100 ms in the power state the one before it left:
under sustained tensor-core load an H200 holds its 700 W cap by lowering the SM clock (bench/NOTES.md, "Power").
Here each variant is its own copy of the library (loaded RTLD_LOCAL, so each keeps its own kernel table), its
kernels compiled from its sources (FA_JIT_KERNEL_DIR while it makes its first call), and every row's repetitions
alternate between the variants. Rows take a subset of fa-jit-bench's options (the chooser's tile: no --config),
--page-size too (K / V in pages of that many rows in random order, without score modifiers) and --varlen N (batch x
seqlen tokens packed into sequences of 1..N rows, fa-jit-bench's lengths: the same seed and generator).

`--timing blocks` in --bench-args times each variant's calls in blocks of their own instead (compare.time_blocks:
each at the clock its own power draw settles at) and traces nvidia-smi beside them: each cell then adds the
variant's mean SM clock and power and its rate per GHz (bench/clock_split.py).
"""
import argparse
import os
import shlex
import shutil
from types import SimpleNamespace

import torch

import compare
from clock_split import mean_clock, read_trace, start_trace
from compare import DTYPES, FaJit, decode_err, decode_reference, kilo, rel_err, time_interleaved
from compare_mods import Mods, alibi_slopes, reference, visible
from compare_paged import layouts, paged_args
from compare_varlen import bhsd, packed_args

TOL = {"fp16": 3e-3, "bf16": 2e-2}


def row_problems(rows):
    """The problems of one --rows string: (dtype, batch, heads, heads_kv, seqlen_q, seqlen_k, d, Mods, page size,
    varlen's longest sequence or 0)."""
    p = argparse.ArgumentParser(prog="--rows", add_help=False)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--heads-kv", type=int)
    p.add_argument("--seqlen-q", default="2048")
    p.add_argument("--seqlen-k")
    p.add_argument("--head-dim", default="128")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--causal", default="no", choices=["yes", "no", "both"])
    p.add_argument("--window")
    p.add_argument("--softcap", type=float, default=0.0)
    p.add_argument("--alibi", action="store_true")
    p.add_argument("--page-size", type=int, default=0)
    p.add_argument("--varlen", type=int, default=0)
    r, rest = p.parse_known_args(shlex.split(rows))
    if r.page_size and (r.window or r.softcap or r.alibi):
        raise SystemExit("kernel_ab --interleave: rows with --page-size take no score modifiers")
    if r.varlen and (r.page_size or (r.seqlen_k and r.seqlen_k != r.seqlen_q)):
        raise SystemExit("kernel_ab --interleave: --varlen packs self-attention, without --page-size")
    if rest:
        raise SystemExit(f"kernel_ab --interleave: rows take no {' '.join(rest)} (forced tiles: without --interleave)")
    window = tuple(int(x) for x in r.window.split(",")) if r.window else None
    masks = {"yes": [True], "no": [False], "both": [False, True]}[r.causal]
    seqlens_k = r.seqlen_k.split(",") if r.seqlen_k else [None]
    return [(dtype, r.batch, r.heads, r.heads_kv or r.heads, kilo(nq), kilo(nk or nq), int(d),
             Mods(rows, causal, window, r.softcap, r.alibi), r.page_size, r.varlen)
            for dtype in r.dtype.split(",") for d in r.head_dim.split(",") for causal in masks
            for nq in r.seqlen_q.split(",") for nk in seqlens_k]


def dense_row(b, h, h_kv, nq, nk, d, m, page, dtype, code, slopes, kwargs):
    """A row of B sequences of the same length: O, how each library runs it (two input sets), its error check."""
    o = torch.empty(b, h, nq, d, device="cuda", dtype=dtype)
    # Two input sets; each a (q, k, v) in [B, H, N, d] for the reference, and how a library runs on it.
    sets, runs = [], []
    for _ in range(2):
        q = torch.randn(b, h, nq, d, device="cuda", dtype=dtype)
        k, v = (torch.randn(b, nk, h_kv, d, device="cuda", dtype=dtype) for _ in range(2))
        sets.append((q, k.transpose(1, 2), v.transpose(1, 2)))
        if page:
            _, table, kp, vp = layouts(k, v, torch.Generator().manual_seed(len(runs)), [page])[1]
            runs.append(lambda fa, q=q, kp=kp, vp=vp, table=table:
                        paged_args(fa, q, kp, vp, o, m.causal, code, nk, table, page))
        else:
            runs.append(lambda fa, s=sets[-1]: fa.args(*s, o, m.causal, code, **kwargs))
    q, k, v = sets[0]
    if nq <= 16 and not (m.window or m.softcap or m.alibi):
        # Decode: float64 on the first and last sequence, per KV head (compare.decode_reference).
        batches = sorted({0, b - 1})
        ref = decode_reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), m.causal, batches)

        def error():
            return decode_err(o.transpose(1, 2), ref, batches)
    else:  # 128 random query rows of every sequence and head
        checked = torch.randperm(nq, device="cuda")[:128].sort().values
        group = h // h_kv
        ref = reference(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), m, slopes, checked)

        def error():
            return rel_err(o, ref, checked)
    return SimpleNamespace(o=o, runs=runs, error=error, pairs=lambda: int(visible(nq, nk, m, "cuda").sum().item()))


def packed_lengths(tokens, longest):
    """fa-jit-bench's --varlen lengths (Problem::packed_lengths): splitmix64 from state 7, each 1 + z % longest, the
    last cut to the tokens left."""
    mask, state, out = (1 << 64) - 1, 7, []
    while sum(out) < tokens:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out.append(min(1 + z % longest, tokens - sum(out)))
    return out


class Packed:
    """A varlen row's tensors: Q / O [tokens, H, d], K / V [tokens, H_kv, d], the sequences' prefix sums."""

    def __init__(self, lengths, h, h_kv, d, dtype):
        self.lengths, self.tokens = lengths, sum(lengths)
        self.cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), device="cuda", dtype=torch.int32)
        self.o = torch.empty(self.tokens, h, d, device="cuda", dtype=dtype)
        self.sets = [(torch.randn(self.tokens, h, d, device="cuda", dtype=dtype),
                      torch.randn(self.tokens, h_kv, d, device="cuda", dtype=dtype),
                      torch.randn(self.tokens, h_kv, d, device="cuda", dtype=dtype)) for _ in range(2)]

    def args(self, fa, qkv, m, code, kwargs):
        return packed_args(fa, *qkv, self.o, m.causal, code, self.lengths, self.cu, **kwargs)

    def error(self, m, slopes):
        """The largest rel. error against float64 over the first, middle and last sequence (128 random rows each)."""
        q, k, v = self.sets[0]
        group = q.shape[1] // k.shape[1]
        errs = []
        for b in sorted({0, len(self.lengths) // 2, len(self.lengths) - 1}):
            s, e = int(self.cu[b]), int(self.cu[b + 1])
            rows = torch.randperm(e - s, device="cuda")[:128].sort().values
            seq = [bhsd(x[s:e]) for x in (q, k, v)]
            ref = reference(seq[0], seq[1].repeat_interleave(group, 1), seq[2].repeat_interleave(group, 1), m, slopes,
                            rows)
            errs.append(rel_err(bhsd(self.o[s:e]), ref, rows))
        return max(errs)

    def visible_pairs(self, m):
        return sum(int(visible(n, n, m, "cuda").sum().item()) for n in self.lengths)


def run_interleaved(a, dirs, libs, tmp):
    """Print one table of every row under every variant (dirs: [(name, kernel dir)], libs: name -> library dir).
    Repetitions: --bench-args' --reps and --warmup, --rounds times the repetitions."""
    timing = argparse.ArgumentParser(add_help=False)
    timing.add_argument("--reps", type=int, default=30)
    timing.add_argument("--warmup", type=int, default=5)
    timing.add_argument("--timing", choices=["grouped", "rotate", "blocks"], default="grouped")
    t = timing.parse_known_args(shlex.split(a.bench_args))[0]
    t.rounds = a.rounds
    trace_path = os.path.join(tmp, "clock_trace.csv")
    tracer = start_trace(trace_path) if t.timing == "blocks" else None
    variants = {}
    for name, kernel_dir in dirs:  # a copy of the library per variant: dlopen keeps one instance per file
        lib_dir = libs[name] or os.path.dirname(os.path.abspath(a.bench))
        copy = os.path.join(tmp, f"lib_{name}", "libfa_jit.so.0")
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        shutil.copy(os.path.join(lib_dir, "libfa_jit.so.0"), copy)
        if os.path.isfile(os.path.join(lib_dir, "fa-jit-nvrtc")):  # its compile worker, which it looks for beside it
            shutil.copy(os.path.join(lib_dir, "fa-jit-nvrtc"), os.path.dirname(copy))
        variants[name] = (FaJit(copy), kernel_dir)
    names = list(variants)
    print("| rows | dtype | d | Nq | Nk | causal | " + " | ".join(names) + " |")
    print("|---" * (6 + len(names)) + "|")
    for rows in a.rows:
        for dtype_name, b, h, h_kv, nq, nk, d, m, page, varlen in row_problems(rows):
            dtype, code = DTYPES[dtype_name]
            slopes = alibi_slopes(h, "cuda") if m.alibi else None
            kwargs = {"window": m.window, "softcap": m.softcap, "alibi_slopes": slopes}
            if varlen:
                packed = Packed(packed_lengths(b * nq, varlen), h, h_kv, d, dtype)
                row = SimpleNamespace(o=packed.o, runs=[lambda fa, s=s: packed.args(fa, s, m, code, kwargs)
                                                        for s in packed.sets],
                                      error=lambda: packed.error(m, slopes), pairs=lambda: packed.visible_pairs(m))
                shape = f"{len(packed.lengths)} sequences | 1..{varlen}"
            else:
                row = dense_row(b, h, h_kv, nq, nk, d, m, page, dtype, code, slopes, kwargs)
                shape = f"{nq} | {nk}"
            o, runs, error = row.o, row.runs, row.error
            timers, cells = {}, {}
            for name, (fa, kernel_dir) in variants.items():
                os.environ["FA_JIT_KERNEL_DIR"] = kernel_dir  # read while this first call compiles
                calls = [run(fa) for run in runs]  # the C arguments (pages: the table's), built once
                o.fill_(float("nan"))
                fa.run(calls[0])
                torch.cuda.synchronize()
                err = error()
                if not (bool(torch.isfinite(o).all()) and err < TOL[dtype_name]):
                    cells[name] = f"WRONG err {err:.3e}"
                    continue
                cells[name] = f"err {err:.3e}"
                timers[name] = (lambda args, fa=fa: fa.run(args), [(c,) for c in calls])
            logged = len(compare.BLOCK_LOG)
            ms = time_interleaved(timers, t)
            spans = {}
            for block in compare.BLOCK_LOG[logged:]:
                spans.setdefault(block["name"], []).append((block["t0"], block["t1"]))
            trace = read_trace(trace_path) if tracer else []
            flops = 4.0 * h * d * row.pairs() * (1 if varlen else b)
            base = flops / ms[names[0]] / 1e9 if ms.get(names[0]) else None
            out = []
            # Blocks: each variant's own clock; its rate per GHz varies less from call to call than its rate (a cell
            # moved 3-4 % between calls with the same kernel, its rate per GHz 0.1-1.7 %: bench/NOTES.md).
            clocks = {n: mean_clock(trace, spans.get(n, [])) for n in names if ms.get(n)} if tracer else {}
            per_ghz = {n: flops / ms[n] / 1e9 / c[0] * 1e3 for n, c in clocks.items() if c}
            for name in names:
                if not ms.get(name):
                    out.append(cells[name])
                    continue
                rate = flops / ms[name] / 1e9
                ratio = f" ({rate / base:.3f})" if base and name != names[0] else ""
                power = ""
                if clocks.get(name):
                    mhz, watts, _ = clocks[name]
                    vs = per_ghz.get(names[0])
                    ghz_ratio = f" ({per_ghz[name] / vs:.3f})" if vs and name != names[0] else ""
                    power = f" {mhz:.0f} MHz {watts:.0f} W {per_ghz[name]:.1f}/GHz{ghz_ratio}"
                out.append(f"{rate:.1f}{ratio}{power} {cells[name]}")
            print(f"| {rows} | {dtype_name} | {d} | {shape} | {int(m.causal)} | " + " | ".join(out) + " |", flush=True)
            del row, runs, o
    if tracer:
        tracer.terminate()
