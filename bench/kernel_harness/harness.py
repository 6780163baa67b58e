"""Correctness + speed harness for kernel_sources/attention_fp32.cu (run on the GPU machine after build.sh).

  python3 harness.py [build_dir] [--quick]

1. Correctness: every instantiation against a float64 torch reference, on poisoned (NaN) outputs, with GQA, BSHD
   strides, Nq != Nk, rows that see no key; also the attention_reference kernels (float/half/bf16).
2. Speed: TFLOP/s (4*B*H*Nq*Nk*d, halved for causal) with CUDA events against SDPA's efficient backend, fp32.
"""
import ctypes, math, os, re, sys
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_params import Params  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "/tmp/fa_harness_build"
QUICK = "--quick" in sys.argv          # speed: N = 4096 and the tutorial shape only
SANITIZE = "--sanitize" in sys.argv    # correctness only, a few kernels (run under compute-sanitizer)
lib = ctypes.CDLL(os.path.join(BUILD, "libharness.so"))
lib.fa_kernel_name.restype = ctypes.c_char_p




KERNELS = []
for i in range(lib.fa_num_kernels()):
    name = lib.fa_kernel_name(i).decode()
    info = (ctypes.c_int * 4)()
    lib.fa_kernel_info(i, info)
    m = re.search(r"<(\d+), (\d+), (\d+), (\d+), (true|false), (\d), (\d)>", name)
    cfg = None
    if m:
        cfg = dict(bm=int(m[1]), bn=int(m[2]), d=int(m[3]), w=int(m[4]), causal=m[5] == "true", math=int(m[6]))
    else:
        m = re.search(r"<(.+), (true|false)>", name)
        cfg = dict(ref=m[1], causal=m[2] == "true")
    KERNELS.append(dict(i=i, name=name, regs=info[0], local=info[1], smem=info[2], threads=info[3], **cfg))


def make_params(q, k, v, o, lse, causal_unused=False, scale=None):
    # q, o: [B, Hq, Nq, D] views (any strides, last contiguous); k, v: [B, Hkv, Nk, D]
    B, Hq, Nq, D = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
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


def launch(kern, p, grid_m=None):
    if kern.get("ref"):
        # reference: block 128 rows; registry stores block_m = 128
        pass
    err = lib.fa_launch(kern["i"], ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    assert err == 0, f"launch failed {err} for {kern['name']}"


def ref_attention(q, k, v, causal):
    # float64 reference: q [B,Hq,Nq,D], k/v [B,Hkv,Nk,D]
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
    pm = torch.exp(s - lse[..., None])
    pm = torch.nan_to_num(pm, nan=0.0)
    o = pm @ v
    return o, lse


def make_inputs(B, Hq, Hkv, Nq, Nk, D, dtype=torch.float32, bshd=False):
    def t(H, N):
        if bshd:  # [B, N, H, D] memory, viewed as [B, H, N, D]
            return torch.randn(B, N, H, D, device="cuda", dtype=dtype).transpose(1, 2)
        return torch.randn(B, H, N, D, device="cuda", dtype=dtype)
    return t(Hq, Nq), t(Hkv, Nk), t(Hkv, Nk)


def check(kern, B, Hq, Hkv, Nq, Nk, D, bshd, dtype=torch.float32):
    q, k, v = make_inputs(B, Hq, Hkv, Nq, Nk, D, dtype, bshd)
    o = torch.full((B, Nq, Hq, D) if bshd else (B, Hq, Nq, D), float("nan"), device="cuda", dtype=dtype)
    if bshd: o = o.transpose(1, 2)
    lse = torch.full((B, Hq, Nq), float("nan"), device="cuda", dtype=torch.float32)
    p = make_params(q, k, v, o, lse)
    launch(kern, p)
    torch.cuda.synchronize()
    o_ref, lse_ref = ref_attention(q, k, v, kern["causal"])
    err_o = ((o.double() - o_ref).abs().max() / o_ref.abs().max().clamp_min(1e-30)).item()
    fin = torch.isfinite(lse_ref)
    lse_ok = torch.equal(torch.isfinite(lse), fin) and bool((lse[~fin] == float("-inf")).all())
    err_lse = (lse.double()[fin] - lse_ref[fin]).abs().max().item() if fin.any() else 0.0
    zero_rows_ok = bool((o.double()[~fin] == 0).all())
    nan = bool(torch.isnan(o).any())
    return err_o, err_lse, lse_ok and zero_rows_ok and not nan


def correctness():
    print("== correctness (max |o - ref| / max |ref| vs float64; LSE abs err) ==")
    shapes = [(1, 2, 2, 1, 1), (2, 4, 2, 17, 17), (1, 3, 1, 100, 257), (2, 2, 2, 257, 100), (1, 4, 2, 200, 77),
              (1, 2, 1, 130, 130)]
    worst = {}
    fails = 0
    for kern in KERNELS:
        if kern.get("ref"): continue
        if SANITIZE and not any(s in kern["name"] for s in ("<64, 32, 7,", "<128, 32, 256, 8,", "<64, 64, 64, 4, true, 0", "<128, 64, 128, 8, true")):
            continue
        e_o = e_l = 0.0
        ok = True
        for si, (B, Hq, Hkv, Nq, Nk) in enumerate(shapes):
            a, b, c = check(kern, B, Hq, Hkv, Nq, Nk, kern["d"], bshd=(si % 2 == 1))
            e_o, e_l, ok = max(e_o, a), max(e_l, b), ok and c
        tol = 2e-5
        good = ok and e_o < tol and e_l < 1e-4
        fails += not good
        print(f"{'ok  ' if good else 'FAIL'} {kern['name']:<55} err_o {e_o:.2e} err_lse {e_l:.2e} special {ok}")
    # reference kernels
    for kern in KERNELS:
        if not kern.get("ref") or SANITIZE: continue
        dtype = {"float": torch.float32, "fa_jit::half_t": torch.float16, "fa_jit::bf16_t": torch.bfloat16}[kern["ref"]]
        tol = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
        e_o = e_l = 0.0; ok = True
        for si, (B, Hq, Hkv, Nq, Nk) in enumerate(shapes[:5]):
            for D in (5, 64):
                a, b, c = check(kern, B, Hq, Hkv, Nq, Nk, D, bshd=(si % 2 == 1), dtype=dtype)
                e_o, e_l, ok = max(e_o, a), max(e_l, b), ok and c
        good = ok and e_o < tol and e_l < 1e-4
        fails += not good
        print(f"{'ok  ' if good else 'FAIL'} {kern['name']:<55} err_o {e_o:.2e} err_lse {e_l:.2e} special {ok}")
    print(f"correctness failures: {fails}")
    return fails


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
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print("== speed: TFLOP/s fp32 (median of CUDA-event timings) ==")
    shapes = []  # (B, H, N, D)
    for D in (64, 128, 256):
        for N in ((4096,) if QUICK else (1024, 4096)):
            shapes.append((16384 // N, 2048 // D, N, D))
    shapes.append((1, 96, 512, 128))
    rows = []
    for (B, H, N, D) in shapes:
        for causal in (False, True):
            q, k, v = make_inputs(B, H, H, N, N, D)
            flops = 4 * B * H * N * N * D / (2 if causal else 1)
            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                t_ref = time_fn(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 10)
            o = torch.empty_like(q)
            lse = torch.empty(B, H, N, device="cuda")
            p = make_params(q, k, v, o, lse)
            best = None
            for kern in KERNELS:
                if kern.get("ref") or kern["d"] != D or kern["causal"] != causal or kern["math"] != 1: continue
                t = time_fn(lambda: launch(kern, p), 10)
                tf = flops / t / 1e9
                print(f"  B{B} H{H} N{N} d{D} {'causal' if causal else 'full  '} {kern['name']:<55} {tf:6.1f} TFLOP/s")
                if best is None or tf > best[0]: best = (tf, kern["name"])
            # SIMT for information on one shape per D
            rows.append((B, H, N, D, causal, flops / t_ref / 1e9, best[0], best[1]))
    print("\n== summary (fp32) ==")
    print(f"{'B':>3} {'H':>3} {'N':>6} {'d':>4} {'causal':>6} {'SDPA-eff':>9} {'ours':>7} {'ratio':>6}  best config")
    for B, H, N, D, c, tr, to, name in rows:
        print(f"{B:>3} {H:>3} {N:>6} {D:>4} {str(c):>6} {tr:9.1f} {to:7.1f} {to / tr:6.2f}  {name}")


if __name__ == "__main__":
    print(torch.cuda.get_device_name())
    print("== kernels: regs / local bytes / smem ==")
    for kern in KERNELS:
        print(f"  {kern['name']:<58} regs {kern['regs']:3d} local {kern['local']:4d} smem {kern['smem']}")
    fails = correctness()
    if not SANITIZE: speed()
