// FS_HD marks a small function as callable from the host and from a CUDA kernel, so that core's
// rules (the online-softmax update, the mask, Philox) compile unchanged in gpu/'s kernels.
#pragma once

#if defined(__CUDACC__)
#define FS_HD __host__ __device__ __forceinline__
#else
#define FS_HD inline
#endif
