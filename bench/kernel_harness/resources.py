"""Resource table of the shipped attention tiles: registers, spill bytes and SASS instruction count per kernel, compiled
with NVRTC exactly as the library does (one program per name expression, options --std=c++17 -arch=ARCH, plus
-Xptxas=-v for the log; headers found by following `#include "name"` lines from kernel_sources/, tile/ included).
Needs no GPU; needs cuobjdump (or nvdisasm) for the SASS count: $CUOBJDUMP, PATH, /usr/local/cuda/bin, or
`pip install --target DIR nvidia-cuda-cuobjdump` and CUOBJDUMP=DIR/nvidia/cu13/bin/cuobjdump.

  python3 resources.py [--only fp32|f16|wgmma|ref] [--jobs N] [--ptx-dir DIR] > table.txt

Rows: the default tiles of src/attention/families/ for every variant (dtype, causal, kEvenMN) at head dims 64, 96,
128, 160, 256 (mma.sync), 64/128/192/256 (wgmma, sm_90a), 64/100/128/256 (fp32), and the spill-free reference tiles of
tests/cpu/test_attention_f16_compile.cpp ("ref"). sass = instructions without NOPs; hash = first 8 hex digits of the
SHA-1 of the opcode stream (operands included, addresses dropped): equal hashes mean identical SASS.
"""
import ctypes, hashlib, multiprocessing, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KS = os.path.abspath(os.path.join(HERE, "../../kernel_sources"))
NVRTC = os.environ.get("NVRTC_LIB", "/usr/local/cuda/lib64/libnvrtc.so.13")
B = lambda x: "true" if x else "false"


def find_tool():
    for cand in (os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump",
                 "/tmp/cudatools/nvidia/cu13/bin/cuobjdump", shutil.which("nvdisasm"),
                 "/tmp/cudatools/nvidia/cu13/bin/nvdisasm"):
        if cand and os.path.exists(cand):
            return cand
    return None


# ---- the rows -------------------------------------------------------------------------------------------------------
def fp32_default(d, causal, arch):
    if d <= 64: return (64, 64, 4) if causal else (128, 64, 4)
    if d <= 128: return (128, 64, 8) if causal else (128, 32, 4)
    return (128, 32, 8) if arch == "sm_90a" else (64, 32, 4)  # 207 KB does not fit sm_80's 163 KB


def f16_default(d):
    if d <= 64: return (128, 128, 4, 2)
    if d <= 128: return (128, 64, 4, 2)
    return (64, 64, 4, 1)


WGMMA_DEFAULT = {64: (64, 64, 2), 128: (128, 128, 2), 192: (128, 64, 2), 256: (128, 64, 2)}
# tests/cpu/test_attention_f16_compile.cpp, kConfigs with recommended = true: (block_m, block_n, d, warps, stages)
F16_REFERENCE = [(128, 128, 64, 8, 2), (64, 64, 96, 4, 3), (64, 32, 96, 4, 2), (128, 64, 128, 8, 2),
                 (128, 32, 128, 4, 2), (128, 32, 256, 8, 2), (64, 32, 256, 4, 2)]
DTYPES = ("half_t", "bf16_t")
VARIANTS = [(c, e) for c in (False, True) for e in (False, True)]


def rows(only):
    out = []  # (group, source, arch, name expression)
    for arch in ("sm_80", "sm_90a"):
        if only in (None, "fp32"):
            for d in (64, 100, 128, 256):
                for c in (False, True):
                    bm, bn, w = fp32_default(d, c, arch)
                    out.append(("fp32", "attention_fp32.cu", arch, f"fa_jit::attention_fwd_fp32<{bm}, {bn}, {d}, {w}, {B(c)}, 1, 1>"))
        if only in (None, "f16"):
            for d in (64, 96, 128, 160, 256):
                bm, bn, w, s = f16_default(d)
                for t in DTYPES:
                    for c, e in VARIANTS:
                        out.append(("f16", "attention_f16.cu", arch,
                                    f"fa_jit::attention_fwd_f16<fa_jit::{t}, {bm}, {bn}, {d}, {w}, {s}, {B(c)}, {B(e)}>"))
        if only in (None, "wgmma") and arch == "sm_90a":
            for d, (bm, bn, s) in WGMMA_DEFAULT.items():
                for t in DTYPES:
                    for c, e in VARIANTS:
                        out.append(("wgmma", "attention_f16_wgmma.cu", arch,
                                    f"fa_jit::attention_fwd_f16_wgmma<fa_jit::{t}, {bm}, {bn}, {d}, {s}, {B(c)}, {B(e)}>"))
        if only in (None, "ref"):
            for bm, bn, d, w, s in F16_REFERENCE:
                for t in DTYPES:
                    for c, e in VARIANTS:
                        out.append(("ref", "attention_f16.cu", arch,
                                    f"fa_jit::attention_fwd_f16<fa_jit::{t}, {bm}, {bn}, {d}, {w}, {s}, {B(c)}, {B(e)}>"))
    return out


# ---- NVRTC, as src/compile/sources.cpp and compiler.cpp do it -------------------------------------------------------
def quoted_includes(text):
    return re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M)


def source_with_headers(name):
    """The source and every header it reaches through #include "name" (names relative to kernel_sources/)."""
    text = open(os.path.join(KS, name)).read()
    seen, headers, pending = {name}, [], quoted_includes(text)
    while pending:
        h = pending.pop(0)
        if h in seen: continue
        seen.add(h)
        htext = open(os.path.join(KS, h)).read()
        pending += quoted_includes(htext)
        headers.append((h, htext))
    return text, headers


def nvrtc_compile(source, arch, name):
    lib = ctypes.CDLL(NVRTC)
    text, headers = source_with_headers(source)
    prog = ctypes.c_void_p()
    n = len(headers)
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), source.encode(), n,
                               (ctypes.c_char_p * n)(*[h[1].encode() for h in headers]),
                               (ctypes.c_char_p * n)(*[h[0].encode() for h in headers]))
    assert r == 0, "nvrtcCreateProgram"
    lib.nvrtcAddNameExpression(prog, name.encode())
    opts = [b"--std=c++17", f"-arch={arch}".encode(), b"-Xptxas=-v"]
    r = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    sz = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(sz))
    log = ctypes.create_string_buffer(sz.value)
    lib.nvrtcGetProgramLog(prog, log)
    log = log.value.decode()
    if r != 0: return None, None, None, log
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(sz))
    cubin = ctypes.create_string_buffer(sz.value)
    lib.nvrtcGetCUBIN(prog, cubin)
    lib.nvrtcGetPTXSize(prog, ctypes.byref(sz))
    ptx = ctypes.create_string_buffer(sz.value)
    lib.nvrtcGetPTX(prog, ptx)
    low = ctypes.c_char_p()
    lib.nvrtcGetLoweredName(prog, name.encode(), ctypes.byref(low))
    return cubin.raw, ptx.value.decode(), low.value.decode(), log


def sass_lines(tool, cubin):
    """The disassembly of `cubin` by cuobjdump or nvdisasm (find_tool), one string per line."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        args = [tool, "-sass", f.name] if "cuobjdump" in tool else [tool, f.name]
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()


def sass_stats(tool, cubin):
    if tool is None: return "-", "-"
    instr = []
    for line in sass_lines(tool, cubin):
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and not m.group(1).startswith("NOP"): instr.append(m.group(1))
    return len(instr), hashlib.sha1("\n".join(instr).encode()).hexdigest()[:8]


def one(job):
    group, source, arch, name, tool, ptx_dir = job
    cubin, ptx, lowered, log = nvrtc_compile(source, arch, name)
    if cubin is None:
        return (group, name, arch, "ERR", "", "", "", "", log.strip().splitlines()[-1:] or ["?"])
    regs = spill_st = spill_ld = None
    m = re.search(r"Used (\d+) registers", log)
    regs = int(m.group(1)) if m else -1
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    spill_st, spill_ld = (int(m.group(1)), int(m.group(2))) if m else (-1, -1)
    count, digest = sass_stats(tool, cubin)
    if ptx_dir:
        os.makedirs(ptx_dir, exist_ok=True)
        tag = re.sub(r"[^A-Za-z0-9]+", "_", f"{arch}_{name}").strip("_")
        open(os.path.join(ptx_dir, tag + ".ptx"), "w").write(ptx)
    return (group, name, arch, regs, spill_st, spill_ld, count, digest, None)


def main():
    args = sys.argv[1:]
    only = args[args.index("--only") + 1] if "--only" in args else None
    jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else os.cpu_count()
    ptx_dir = args[args.index("--ptx-dir") + 1] if "--ptx-dir" in args else None
    tool = find_tool()
    work = [(g, s, a, n, tool, ptx_dir) for g, s, a, n in rows(only)]
    with multiprocessing.Pool(jobs) as pool:
        results = pool.map(one, work, chunksize=1)
    print(f"# NVRTC {NVRTC}; SASS by {tool or 'nothing (no cuobjdump / nvdisasm found)'}")
    print(f"{'group':<6} {'kernel':<82} {'arch':<7} {'regs':>4} {'spill st/ld':>11} {'sass':>6} {'hash':>8}")
    bad = 0
    for group, name, arch, regs, st, ld, count, digest, err in results:
        if regs == "ERR":
            bad += 1
            print(f"{group:<6} {name:<82} {arch:<7} ERROR {err}")
            continue
        print(f"{group:<6} {name:<82} {arch:<7} {regs:>4} {f'{st}/{ld}':>11} {count:>6} {digest:>8}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
