// The few CUDA driver types the public API mentions, declared exactly as cuda.h declares them, so that users
// need no CUDA toolkit headers to include fa_jit (and may include cuda.h before or after this file).
#pragma once

typedef struct CUstream_st* CUstream;
typedef struct CUfunc_st* CUfunction;
typedef struct CUmod_st* CUmodule;
typedef struct CUctx_st* CUcontext;
typedef struct CUevent_st* CUevent;
