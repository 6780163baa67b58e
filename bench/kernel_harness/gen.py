# Writes one instantiation TU per group of configs into build/ (compiled in parallel by build.sh).
import os, sys
OUT = sys.argv[1]
KS = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../kernel_sources"))
HERE = os.path.abspath(os.path.dirname(__file__))
FAST = []  # (BM, BN, D, W, causal, math, min_blocks_per_sm)
for causal in (0, 1):
    for d, cfgs in {64: [(64, 64, 4), (128, 64, 8), (128, 64, 4), (64, 32, 4)],
                    128: [(64, 64, 4), (64, 32, 4), (128, 32, 4), (128, 64, 8), (128, 32, 8)],
                    256: [(64, 32, 4), (64, 64, 4), (128, 32, 8), (32, 32, 2)]}.items():
        for bm, bn, w in cfgs:
            FAST.append((bm, bn, d, w, causal, 1, 1))
    FAST.append((64, 32, 128, 4, causal, 1, 3))  # ptxas' own occupancy target: 168 registers
    # correctness-only: SIMT, odd head dims (scalar cp.async path, padding), tiny tiles
    for d in (64, 128): FAST.append((64, 64, d, 4, causal, 0, 1))
    for d in (7, 40, 100, 256): FAST.append((64, 32, d, 4, causal, 1, 1))
    FAST.append((16, 8, 33, 1, causal, 1, 1))
os.makedirs(OUT, exist_ok=True)
groups = 12
for gi in range(groups):
    with open(f"{OUT}/inst_{gi}.cu", "w") as f:
        f.write(f'#include "{KS}/attention_fp32.cu"\n#include "{KS}/attention_reference.cu"\n#include "{HERE}/registry.h"\nnamespace {{\nstruct Reg {{ Reg() {{\n')
        for i, (bm, bn, d, w, c, m, mb) in enumerate(FAST):
            if i % groups != gi: continue
            tr = f"fa_jit::AttentionFwdFp32Traits<{bm}, {bn}, {d}, {w}, {m}>"
            name = f"fa_jit::attention_fwd_fp32<{bm}, {bn}, {d}, {w}, {'true' if c else 'false'}, {m}, {mb}>"
            f.write(f'  harness_registry().push_back({{"{name}", (const void*)&{name}, {bm}, {w*32}, {tr}::kSmemBytes}});\n')
        if gi == 0:
            for t in ("float", "fa_jit::half_t", "fa_jit::bf16_t"):
                for c in ("false", "true"):
                    name = f"fa_jit::attention_reference<{t}, {c}>"
                    f.write(f'  harness_registry().push_back({{"{name}", (const void*)&{name}, 128, 128, 0}});\n')
        f.write("} } reg;\n}\n")
print(len(FAST))
