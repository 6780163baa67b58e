"""ctypes mirror of fa_jit::AttentionParams (kernel_sources/attention_params.cuh), shared by the harnesses."""
import ctypes


class Params(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", ctypes.c_void_p),
                ("lse", ctypes.c_void_p)] + \
               [(f"{t}_{s}_stride", ctypes.c_longlong) for t in "qkvo" for s in ("batch", "head", "row")] + \
               [(n, ctypes.c_int) for n in ("batch", "heads_q", "heads_kv", "group_size", "seqlen_q", "seqlen_k",
                                             "head_dim")] + \
               [("scale", ctypes.c_float), ("scale_log2", ctypes.c_float), ("causal_offset", ctypes.c_int)]
