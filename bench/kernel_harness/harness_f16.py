"""Correctness + speed harness for kernel_sources/attention_f16.cu (fp16/bf16); run on the GPU machine after
`build.sh 90a BUILD gen_f16.py`.

  python3 harness_f16.py [build_dir] [--quick]

1. Correctness: every instantiation against a float64 torch reference on NaN-poisoned O / LSE, with GQA, BSHD
   strides, Nq != Nk, rows that see no key (causal, Nq > Nk), odd seqlens; kEvenMN variants on even shapes only.
   The error metric is max|o - ref| / max|ref|; SDPA on the same inputs (flash backend; masked math backend for
   bottom-right causal with Nq != Nk) is the yardstick: ours must be <= 1.5 x SDPA's (floor 1e-4 fp16, 8e-4 bf16).
   Then a long-seqlen_k check of the accumulation bias (the fresh per-tile P V accumulator against SDPA).
2. Speed: TFLOP/s (4*B*H*N*N*d, halved for causal), CUDA-event medians, bf16, against SDPA's flash backend (FA2), on
   the FlashAttention protocol rows (16k tokens, hidden 2048).
"""
import ctypes, math, os, re, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_params import Params  # noqa: E402
BUILD = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "/tmp/fa_harness_f16"
QUICK = "--quick" in sys.argv
lib = ctypes.CDLL(os.path.join(BUILD, "libharness.so"))
lib.fa_kernel_name.restype = ctypes.c_char_p




KERNELS = []
for i in range(lib.fa_num_kernels()):
    name = lib.fa_kernel_name(i).decode()
    info = (ctypes.c_int * 4)()
    lib.fa_kernel_info(i, info)
    m = re.search(r"<fa_jit\w*::(half|bf16)_t, (\d+), (\d+), (\d+), (\d+), (\d+), (true|false), (true|false)>", name)
    KERNELS.append(dict(i=i, name=name, regs=info[0], local=info[1], smem=info[2], threads=info[3],
                        dtype=torch.float16 if m[1] == "half" else torch.bfloat16, bm=int(m[2]), bn=int(m[3]),
                        d=int(m[4]), w=int(m[5]), stages=int(m[6]), causal=m[7] == "true", even=m[8] == "true"))


def make_params(q, k, v, o, lse):
    B, Hq, Nq, D = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D)
    p = Params()
    p.q, p.k, p.v, p.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
    p.lse = lse.data_ptr() if lse is not None else None
    for t, x in zip("qkvo", (q, k, v, o)):
        assert x.stride(3) == 1
        setattr(p, f"{t}_batch_stride", x.stride(0)); setattr(p, f"{t}_head_stride", x.stride(1))
        setattr(p, f"{t}_row_stride", x.stride(2))
    p.batch, p.heads_q, p.heads_kv, p.group_size = B, Hq, Hkv, Hq // Hkv
    p.seqlen_q, p.seqlen_k, p.head_dim = Nq, Nk, D
    p.scale, p.scale_log2 = scale, scale * math.log2(math.e)
    p.causal_offset = Nk - Nq
    return p


def launch(kern, p):
    err = lib.fa_launch(kern["i"], ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    assert err == 0, f"launch failed {err} for {kern['name']}"


def ref_attention(q, k, v, causal):
    B, Hq, Nq, D = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    g = Hq // Hkv
    k = k.double().repeat_interleave(g, dim=1)
    v = v.double().repeat_interleave(g, dim=1)
    s = (q.double() @ k.transpose(-1, -2)) / math.sqrt(D)
    if causal:
        i = torch.arange(Nq, device=q.device)[:, None]
        j = torch.arange(Nk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (Nk - Nq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    pm = torch.nan_to_num(torch.exp(s - lse[..., None]), nan=0.0)
    return pm @ v, lse


def make_inputs(B, Hq, Hkv, Nq, Nk, D, dtype, bshd=False):
    def t(H, N):
        if bshd:
            return torch.randn(B, N, H, D, device="cuda", dtype=dtype).transpose(1, 2)
        return torch.randn(B, H, N, D, device="cuda", dtype=dtype)
    return t(Hq, Nq), t(Hkv, Nk), t(Hkv, Nk)


def sdpa_err(q, k, v, causal, o_ref):
    """SDPA's own error on the same inputs (flash if it accepts them, else efficient/math), same metric."""
    g = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    if causal and q.shape[2] != k.shape[2]:  # SDPA's is_causal is top-left aligned: pass the bottom-right mask
        Nq, Nk = q.shape[2], k.shape[2]
        i = torch.arange(Nq, device="cuda")[:, None]; j = torch.arange(Nk, device="cuda")[None, :]
        mask = j <= i + (Nk - Nq)
        if not mask.any(-1).all(): return None
        o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
    else:
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, kk, vv, is_causal=causal)
        except RuntimeError:
            o = F.scaled_dot_product_attention(q, kk, vv, is_causal=causal)
    return ((o.double() - o_ref).abs().max() / o_ref.abs().max().clamp_min(1e-30)).item()


def check(kern, B, Hq, Hkv, Nq, Nk, bshd):
    D, dtype = kern["d"], kern["dtype"]
    q, k, v = make_inputs(B, Hq, Hkv, Nq, Nk, D, dtype, bshd)
    o = torch.full((B, Nq, Hq, D) if bshd else (B, Hq, Nq, D), float("nan"), device="cuda", dtype=dtype)
    if bshd: o = o.transpose(1, 2)
    lse = torch.full((B, Hq, Nq), float("nan"), device="cuda", dtype=torch.float32)
    launch(kern, make_params(q, k, v, o, lse))
    torch.cuda.synchronize()
    o_ref, lse_ref = ref_attention(q, k, v, kern["causal"])
    err_o = ((o.double() - o_ref).abs().max() / o_ref.abs().max().clamp_min(1e-30)).item()
    fin = torch.isfinite(lse_ref)
    lse_ok = torch.equal(torch.isfinite(lse), fin) and bool((lse[~fin] == float("-inf")).all())
    err_lse = (lse.double()[fin] - lse_ref[fin]).abs().max().item() if fin.any() else 0.0
    zero_rows_ok = bool((o.double()[~fin] == 0).all())
    nan = bool(torch.isnan(o).any())
    e_sdpa = sdpa_err(q, k, v, kern["causal"], o_ref) if fin.all() else None
    return err_o, err_lse, lse_ok and zero_rows_ok and not nan, e_sdpa


def correctness():
    print("== correctness (max |o - ref| / max |ref| vs float64; LSE abs err; SDPA's own error on the same inputs) ==")
    odd = [(1, 2, 2, 1, 1), (2, 4, 2, 17, 17), (1, 3, 1, 100, 257), (2, 2, 2, 257, 100), (1, 4, 2, 200, 77),
           (1, 2, 1, 130, 130), (1, 2, 2, 1000, 3000)]
    fails = 0
    for kern in KERNELS:
        if kern["even"]:
            L = math.lcm(kern["bm"], kern["bn"])
            shapes = [(2, 4, 2, L, L), (1, 2, 1, 2 * L, 4 * L), (1, 2, 2, 4 * L, 4 * L), (1, 2, 2, 32 * L, 32 * L)]
        else:
            shapes = odd
        e_o = e_l = 0.0; ok = True; worst_ratio = 0.0; e_s_max = 0.0
        for si, (B, Hq, Hkv, Nq, Nk) in enumerate(shapes):
            a, b, c, es = check(kern, B, Hq, Hkv, Nq, Nk, bshd=(si % 2 == 1))
            e_o, e_l, ok = max(e_o, a), max(e_l, b), ok and c
            if es is not None:
                e_s_max = max(e_s_max, es)
                worst_ratio = max(worst_ratio, a / max(es, 1e-4 if kern["dtype"] == torch.float16 else 8e-4))
        tol = 4e-3 if kern["dtype"] == torch.float16 else 2.5e-2
        good = ok and e_o < tol and e_l < 2e-3 and worst_ratio <= 1.5
        fails += not good
        print(f"{'ok  ' if good else 'FAIL'} {kern['name']:<72} err_o {e_o:.2e} sdpa {e_s_max:.2e} "
              f"ratio {worst_ratio:4.2f} err_lse {e_l:.2e} special {ok}")
    print(f"correctness failures: {fails}")
    return fails


def long_k_accuracy():
    """Truncation bias of the tensor core's fp32 accumulation (fresh per-tile accumulator), long seqlen_k."""
    print("== long seqlen_k accuracy (B1 H4 Nq128 d128, non-causal): max rel / mean rel error vs float64 ==")
    for dtype, t in ((torch.float16, "half"), (torch.bfloat16, "bf16")):
        for Nk in (4096, 65536):
            q, k, v = make_inputs(1, 4, 4, 128, Nk, 128, dtype)
            v = v.abs() + 0.5  # all-positive V: a biased rounding shows up instead of averaging out
            o_ref, _ = ref_attention(q, k, v, False)
            line = f"  {t} Nk {Nk:6d}"
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v)
            for label, o_ in [("sdpa", o)] + [
                    ("fresh", kern) for kern in KERNELS
                    if kern["d"] == 128 and kern["bm"] == 128 and kern["bn"] == 64 and kern["w"] == 8 and
                    kern["stages"] == 2 and not kern["causal"] and not kern["even"] and kern["dtype"] == dtype]:
                if label != "sdpa":
                    kern = o_
                    o_ = torch.empty_like(q)
                    launch(kern, make_params(q, k, v, o_, None)); torch.cuda.synchronize()
                d = (o_.double() - o_ref)
                line += (f"  {label} {(d.abs().max() / o_ref.abs().max()).item():.2e} / "
                         f"{(d.abs().mean() / o_ref.abs().mean()).item():.2e} (bias {(d.mean() / o_ref.abs().mean()).item():+.1e})")
            print(line)


def time_fn(fn, reps):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def speed():
    print("== speed: TFLOP/s bf16 (median of CUDA-event timings), vs SDPA flash (FlashAttention-2) ==")
    shapes = []
    for D in (64, 128, 256):
        for N in ((512, 16384) if QUICK else (512, 2048, 8192, 16384)):
            shapes.append((16384 // N, 2048 // D, N, D))
    rows = []
    for (B, H, N, D) in shapes:
        for causal in (False, True):
            q, k, v = make_inputs(B, H, H, N, N, D, torch.bfloat16)
            flops = 4 * B * H * N * N * D / (2 if causal else 1)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                t_ref = time_fn(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 10)
            o = torch.empty_like(q)
            lse = torch.empty(B, H, N, device="cuda")
            p = make_params(q, k, v, o, lse)
            best = None
            for kern in KERNELS:
                if kern["d"] != D or kern["causal"] != causal or kern["dtype"] != torch.bfloat16: continue
                if kern["even"] != (N % kern["bm"] == 0 and N % kern["bn"] == 0): continue
                if kern["bm"] < 64: continue
                t = time_fn(lambda: launch(kern, p), 10)
                tf = flops / t / 1e9
                print(f"  B{B} H{H} N{N} d{D} {'causal' if causal else 'full  '} {kern['name']:<72} {tf:6.1f}")
                if best is None or tf > best[0]:
                    best = (tf, kern["name"])
            rows.append((B, H, N, D, causal, flops / t_ref / 1e9, best[0], best[1]))
    print("\n== summary (bf16, TFLOP/s) ==")
    print(f"{'B':>3} {'H':>3} {'N':>6} {'d':>4} {'causal':>6} {'SDPA-fa2':>9} {'ours':>7} {'ratio':>6}  best config")
    for B, H, N, D, c, tr, to, name in rows:
        name = name.replace("fa_jit::attention_fwd_f16<fa_jit::", "<")
        print(f"{B:>3} {H:>3} {N:>6} {D:>4} {str(c):>6} {tr:9.1f} {to:7.1f} {to / tr:6.2f}  {name}")


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), torch.__version__)
    print("== kernels: regs / local bytes / smem ==")
    for kern in KERNELS:
        print(f"  {kern['name']:<72} regs {kern['regs']:3d} local {kern['local']:4d} smem {kern['smem']}")
    fails = correctness()
    long_k_accuracy()
    speed()
