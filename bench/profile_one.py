#!/usr/bin/env python3
"""One attention call of fa-jit and one of SDPA's flash backend (FlashAttention-2) on the same inputs, for a profiler.

    ncu --clock-control none -k regex:"attention_fwd|flash_fwd" --launch-skip 2 --launch-count 2 \\
        python3 bench/profile_one.py --lib build/libfa_jit.so --batch 4 --heads 8 --seqlen 4096 --head-dim 256

Each implementation runs twice (the first call of fa-jit compiles or loads its kernel); the profiler's --launch-skip
picks the second.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import DTYPES, FaJit  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default="build/libfa_jit.so")
    p.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--seqlen", type=int, default=4096)
    p.add_argument("--head-dim", type=int, default=256)
    p.add_argument("--causal", action="store_true")
    args = p.parse_args()
    dtype, code = DTYPES[args.dtype]
    q, k, v = (torch.randn(args.batch, args.heads, args.seqlen, args.head_dim, device="cuda", dtype=dtype)
               for _ in range(3))
    o = torch.empty_like(q)
    fa = FaJit(args.lib)
    for _ in range(2):
        fa(q, k, v, o, args.causal, code)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(2):
            F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
