"""Score-modifier rows of bench/compare.py (--mods): sliding windows, softcap and ALiBi.

Each modifier row runs beside plain attention of the same shape (16k tokens: batch 16384 / N, hidden 2048) and is
counted in visible query-key pairs: TFLOP/s = 4 * d * pairs * batch * heads / time. "per pair" is fa-jit's rate with
the modifier over its plain rate (full or causal alike; the two timed in the same call of compare.time_interleaved:
their calls interleaved where their speeds are within 1.3x, else each in a sustained run of its own), the figure
that shows a window skipping the key tiles it does not reach and softcap / ALiBi costing little per pair. Peers, in
the same process and the same timing: SDPA's efficient and cudnn backends on an explicit mask (windows:
bool; ALiBi: an additive bias in the query dtype, -inf where masked) and FlashAttention-4 where it has the modifier
(window_size, softcap). Correctness first: the float64 reference with the
modifiers on 256 random query rows, fa-jit's output poisoned with NaN beforehand.
"""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from compare import DTYPES, rel_err, time_interleaved

TOL = {"fp32": 1e-4, "fp16": 3e-3, "bf16": 2e-2}
SDPA_PEERS = {"efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


class Mods:
    def __init__(self, name, causal, window=None, softcap=0.0, alibi=False):
        self.name, self.causal, self.window, self.softcap, self.alibi = name, causal, window, softcap, alibi


def variants():
    return [Mods("plain", False), Mods("plain", True),
            Mods("window 2048/2048", False, window=(2048, 2048)),
            Mods("window 4096/0", True, window=(4096, 0)),  # Mistral's sliding window
            Mods("softcap 30", False, softcap=30.0), Mods("softcap 30", True, softcap=30.0),
            Mods("alibi", False, alibi=True), Mods("alibi", True, alibi=True)]


def visible(nq, nk, m, device):
    """[nq, nk] bool: which keys each query row sees (bottom-right alignment, as fa-jit and FlashAttention)."""
    i = torch.arange(nq, device=device)[:, None] + (nk - nq)
    j = torch.arange(nk, device=device)[None, :]
    seen = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if m.causal:
        seen &= j <= i
    if m.window is not None:
        left, right = m.window
        if left >= 0:
            seen &= j >= i - left
        if right >= 0:
            seen &= j <= i + right
    return seen


def alibi_slopes(heads, device):
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)], device=device, dtype=torch.float32)


def reference(q, k, v, m, slopes, rows):
    """float64 attention with the modifiers for the query rows `rows`."""
    nq, nk, d = q.shape[2], k.shape[2], q.shape[3]
    s = (q[:, :, rows].double() @ k.double().transpose(-1, -2)) / math.sqrt(d)
    if m.softcap:
        s = m.softcap * torch.tanh(s / m.softcap)
    if m.alibi:
        dist = (rows[:, None] + (nk - nq) - torch.arange(nk, device=q.device)[None, :]).abs().double()
        s = s - slopes.double()[None, :, None, None] * dist
    s = s.masked_fill(~visible(nq, nk, m, q.device)[rows], float("-inf"))
    return torch.softmax(s, dim=-1).nan_to_num(0.0) @ v.double()


def sdpa_mask(q, k, m, slopes):
    """SDPA's explicit attn_mask for the modifiers it can express, or None (softcap: not expressible)."""
    if m.softcap:
        return None
    nq, nk = q.shape[2], k.shape[2]
    seen = visible(nq, nk, m, q.device)
    if not m.alibi:
        return seen
    i = torch.arange(nq, device=q.device)[:, None] + (nk - nq)
    dist = (i - torch.arange(nk, device=q.device)[None, :]).abs().float()
    bias = -slopes[None, :, None, None] * dist  # added to the scaled logits
    return bias.masked_fill(~seen, float("-inf")).to(q.dtype)


def fa4_call(fa4, m):
    """FlashAttention-4 with the modifiers, or None where it has no such argument."""
    if not fa4 or m.alibi:
        return None
    kwargs = {"causal": m.causal, "num_splits": fa4.num_splits}
    if m.window is not None:
        kwargs["window_size"] = tuple(None if x < 0 else x for x in m.window)
    if m.softcap:
        kwargs["softcap"] = m.softcap
    return lambda q, k, v: fa4.func(q, k, v, **kwargs)[0]


def run_mods(args, fa, fa4, dtype_name):
    dtype, code = DTYPES[dtype_name]
    n = args.mods_seqlen
    print(f"# score modifiers, dtype {dtype_name}", flush=True)
    results = []
    for d in args.head_dims:
        b, h = max(1, 16384 // n), 2048 // d
        slopes = alibi_slopes(h, "cuda")
        sets = [tuple(torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3)) for _ in range(2)]
        o = torch.empty_like(sets[0][0])
        rows = torch.randperm(n, device="cuda")[:256].sort().values
        for m in variants():
            pairs = int(visible(n, n, m, "cuda").sum().item())
            flops = 4.0 * b * h * d * pairs
            row = {"dtype": dtype_name, "batch": b, "heads": h, "seqlen": n, "head_dim": d, "causal": m.causal,
                   "mods": m.name, "visible_pairs": pairs}
            kwargs = {"window": m.window, "softcap": m.softcap, "alibi_slopes": slopes if m.alibi else None}
            q, k, v = sets[0]
            ref = reference(q, k, v, m, slopes, rows)
            o.fill_(float("nan"))
            fa(q, k, v, o, m.causal, code, **kwargs)
            torch.cuda.synchronize()
            err = rel_err(o, ref, rows)
            row["fa_jit_rel_err"] = err
            mask = sdpa_mask(q, k, m, slopes)
            if mask is not None:
                with sdpa_kernel(SDPA_PEERS["efficient"]):
                    row["efficient_rel_err"] = rel_err(
                        F.scaled_dot_product_attention(q, k, v, attn_mask=mask), ref, rows)
            ok = bool(torch.isfinite(o).all()) and err < max(TOL[dtype_name], 1.5 * row.get("efficient_rel_err", 0))
            if not ok:
                print(f"WRONG: fa-jit {row}", flush=True)
            # Timed together (compare.time_interleaved): fa-jit with the modifier, fa-jit's plain attention of the
            # same mask (so that "per pair" compares two rates taken the same way, at the same power cap), and the
            # peers.
            timers = {}
            if ok:
                timers["fa_jit"] = (lambda call: call(), [(fa.bind(*s, o, m.causal, code, **kwargs),) for s in sets])
                if m.name != "plain":
                    timers["plain"] = (lambda call: call(), [(fa.bind(*s, o, m.causal, code),) for s in sets])
            for peer, backend in SDPA_PEERS.items():
                if mask is None and m.name != "plain":
                    continue

                def sdpa_call(q, k, v, backend=backend):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                              is_causal=m.causal and mask is None)
                timers[peer] = (sdpa_call, sets)
            call4 = fa4_call(fa4, m)
            if call4 is not None:
                try:
                    bshd = [tuple(x.transpose(1, 2).contiguous() for x in s) for s in sets]
                    row["fa4_rel_err"] = rel_err(call4(*bshd[0]).transpose(1, 2), ref, rows)
                    timers["fa4"] = (call4, bshd)
                except (RuntimeError, TypeError, AssertionError, ValueError) as e:  # no such modifier in this FA4
                    row["fa4_error"] = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            ms = time_interleaved(timers, args)
            for name in ("fa_jit", "efficient", "cudnn", "fa4"):
                row[f"{name}_tflops"] = flops / ms[name] / 1e9 if ms.get(name) else None
            plain_pairs = n * (n + 1) // 2 if m.causal else n * n
            plain_tflops = 4.0 * b * h * d * plain_pairs / ms["plain"] / 1e9 if ms.get("plain") else None
            if m.name == "plain":
                plain_tflops = row["fa_jit_tflops"]
            row["plain_tflops"] = plain_tflops
            rate = row["fa_jit_tflops"]
            row["per_pair_ratio"] = rate / plain_tflops if plain_tflops and rate else None
            results.append(row)
            cells = "  ".join(f"{p} {row[f'{p}_tflops'] or 0:6.1f}" for p in ("efficient", "cudnn", "fa4"))
            ratio = row["per_pair_ratio"]
            print(f"d={d:<3d} N={n:<5d} causal={int(m.causal)} {m.name:15s} pairs {pairs / (n * n):5.3f}  "
                  f"fa-jit {row['fa_jit_tflops'] or 0:6.1f} TFLOP/s  per pair {ratio or float('nan'):5.3f}  {cells}  "
                  f"err {err:.1e}", flush=True)
        del sets, o
    return results
