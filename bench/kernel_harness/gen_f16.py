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
# Experiment: FA_JIT_F16_PV_DIRECT (P V accumulated straight into O) in its own namespace (no ODR clash).
DIRECT = []
for c in (0, 1):
    for e in (0, 1):
        for t, bm, bn, d, w, s in [("bf16", 128, 64, 128, 8, 2), ("half", 128, 64, 128, 8, 2), ("bf16", 64, 64, 128, 4, 2),
                                   ("bf16", 128, 64, 64, 4, 2), ("bf16", 128, 128, 64, 8, 2), ("half", 128, 128, 64, 8, 2),
                                   ("bf16", 128, 32, 256, 8, 2)]:
            DIRECT.append((t, bm, bn, d, w, s, c, e))
with open(f"{OUT}/inst_direct.cu", "w") as f:
    f.write(f'#define FA_JIT_F16_PV_DIRECT 1\n#define fa_jit fa_jit_direct\n#include "{KS}/attention_f16.cu"\n'
            f'#include "{HERE}/registry.h"\nnamespace {{\nstruct Reg {{ Reg() {{\n')
    for (t, bm, bn, d, w, s, c, e) in DIRECT:
        name = (f"fa_jit_direct::attention_fwd_f16<fa_jit_direct::{t}_t, {bm}, {bn}, {d}, {w}, {s}, "
                f"{'true' if c else 'false'}, {'true' if e else 'false'}>")
        f.write(f'  harness_registry().push_back({{"{name}", (const void*)&{name}, {bm}, {w*32}, '
                f'fa_jit_direct::f16_layout::smem_bytes({bm}, {bn}, {d}, {s})}});\n')
    f.write("} } reg;\n}\n")
print(len(CFGS), len(DIRECT))
