"""Compile a kernel_sources file with NVRTC exactly as the library does (only our headers, in memory; no toolkit
headers) and print the log (-Xptxas=-v: registers, spills) and the lowered names. Needs no GPU.

  python3 nvrtc_check.py sm_90a attention_fp32.cu "fa_jit::attention_fwd_fp32<128, 32, 128, 4, false, 1, 1>"
"""
import ctypes, glob, os, sys
lib = ctypes.CDLL(os.environ.get("NVRTC_LIB", "/usr/local/cuda/lib64/libnvrtc.so.13"))
# The kernel sources: FA_JIT_KERNEL_DIR where set (as the library reads it, e.g. a kernel_ab variant), else this checkout's.
KS = os.path.abspath(os.environ.get("FA_JIT_KERNEL_DIR") or
                     os.path.join(os.path.dirname(__file__), "../../kernel_sources"))
def chk(r, prog=None, what=""):
    if r != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise RuntimeError(f"{what}: {lib.nvrtcGetErrorString(r).decode()}")
def compile(src_name, names, arch, extra=()):
    # Every header by the name the kernels include it under: "x.cuh" at the top, "tile/x.cuh" in the tile layer.
    headers = sorted(glob.glob(KS + "/*.cuh") + glob.glob(KS + "/tile/*.cuh"))
    hsrc = [open(h, "rb").read() for h in headers]
    hnames = [os.path.relpath(h, KS).encode() for h in headers]
    src = open(os.path.join(KS, src_name), "rb").read()
    prog = ctypes.c_void_p()
    n = len(headers)
    chk(lib.nvrtcCreateProgram(ctypes.byref(prog), src, src_name.encode(), n,
        (ctypes.c_char_p * n)(*hsrc), (ctypes.c_char_p * n)(*hnames)), what="create")
    for nm in names: chk(lib.nvrtcAddNameExpression(prog, nm.encode()), what="addname")
    opts = [b"--std=c++17", f"-arch={arch}".encode(), b"-default-device", b"-Xptxas=-v"] + [e.encode() for e in extra]
    r = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    sz = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(sz))
    log = ctypes.create_string_buffer(sz.value); lib.nvrtcGetProgramLog(prog, log)
    print(f"== {src_name} {arch} rc={r}\n{log.value.decode()}")
    if r != 0: return False
    for nm in names:
        low = ctypes.c_char_p(); lib.nvrtcGetLoweredName(prog, nm.encode(), ctypes.byref(low))
        print("  ", nm, "->", low.value.decode())
    return True
if __name__ == "__main__":
    arch = sys.argv[1]; src = sys.argv[2]; names = sys.argv[3:]
    ok = compile(src, names, arch)
    sys.exit(0 if ok else 1)
