# Instantiation TUs for kernel_sources/attention_f16.cu (build.sh ARCH BUILD gen_f16.py compiles them in parallel).
import os, sys
OUT = sys.argv[1]
KS = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../kernel_sources"))
HERE = os.path.abspath(os.path.dirname(__file__))
CFGS = set()  # (T, BM, BN, D, W, S, causal, even)
for c in (0, 1):
    # speed candidates (bf16, even) + their odd-shape twins for correctness; fp16 twins of the main ones
    for bm, bn, d, w, s in [(128, 128, 64, 8, 2), (128, 64, 64, 8, 2), (64, 64, 64, 4, 2), (128, 64, 64, 4, 2),
                            (128, 64, 128, 8, 2), (128, 64, 128, 8, 3), (128, 32, 128, 8, 2), (64, 64, 128, 4, 2),
                            (128, 32, 256, 8, 2), (64, 64, 256, 4, 2)]:
        CFGS.add(("bf16", bm, bn, d, w, s, c, 1)); CFGS.add(("bf16", bm, bn, d, w, s, c, 0))
    for bm, bn, d, w, s in [(128, 128, 64, 8, 2), (128, 64, 128, 8, 2), (128, 32, 256, 8, 2)]:
        CFGS.add(("half", bm, bn, d, w, s, c, 0)); CFGS.add(("half", bm, bn, d, w, s, c, 1))
    # newer speed candidates, bf16 even only (0 spill bytes on sm_90a with the old direct-store epilogue; with the
    # shared-memory-staged one <128,64,128,4,2> spills 20 B (non-causal) / 16 B (causal) on sm_90a and sm_80):
    # d 128 with 2 m-tiles per warp (FA2's tile shape), d 256 with bn 64 (192 KB smem: sm_90 only) or 3 stages
    for bm, bn, d, w, s in [(128, 32, 128, 4, 2), (128, 64, 128, 4, 2), (128, 64, 256, 8, 2), (128, 32, 256, 8, 3),
                            (64, 32, 256, 4, 2)]:
        CFGS.add(("bf16", bm, bn, d, w, s, c, 1))
    # odd head dims (padding), tiny tiles, deeper pipelines
    for t in ("half", "bf16"):
        for d in (8, 40, 96, 160, 192):
            CFGS.add((t, 64, 32, d, 4, 2, c, 0))
    CFGS.add(("bf16", 16, 16, 72, 1, 4, c, 0))
    CFGS.add(("half", 64, 64, 96, 4, 3, c, 0))
CFGS = sorted(CFGS)
os.makedirs(OUT, exist_ok=True)
groups = 16
for gi in range(groups):
    with open(f"{OUT}/inst_{gi}.cu", "w") as f:
        f.write(f'#include "{KS}/attention_f16.cu"\n#include "{HERE}/registry.h"\nnamespace {{\nstruct Reg {{ Reg() {{\n')
        for i, (t, bm, bn, d, w, s, c, e) in enumerate(CFGS):
            if i % groups != gi: continue
            name = (f"fa_jit::attention_fwd_f16<fa_jit::{t}_t, {bm}, {bn}, {d}, {w}, {s}, "
                    f"{'true' if c else 'false'}, {'true' if e else 'false'}>")
            f.write(f'  harness_registry().push_back({{"{name}", (const void*)&{name}, {bm}, {w*32}, '
                    f'fa_jit::f16_layout::smem_bytes({bm}, {bn}, {d}, {s})}});\n')
        f.write("} } reg;\n}\n")

print(len(CFGS))
