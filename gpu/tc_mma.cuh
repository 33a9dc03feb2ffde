// mma.sync building blocks shared by the tensor-core kernels of the mma.sync ladders: the
// forward (gpu/fa2_tc.cu) and the backward (gpu/fa2_bwd_tc.cu). ldmatrix, the m16n8k16 MMA in
// bf16 / fp16 with float32 accumulators, and tiles in swizzled shared memory loaded by cp.async.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu::tc {

// ---- PTX wrappers -----------------------------------------------------------------------------

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// D (16x8 f32) += A (16x16) B (16x8), A row-major, B column-major, 16-bit inputs.
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- tiles in shared memory -------------------------------------------------------------------

// Byte offset of 16-byte chunk `c` of row `r` in a tile whose rows hold CH chunks (CH >= 8).
template <int CH>
__device__ __forceinline__ uint32_t swz(int r, int c) {
  return uint32_t((r * CH + (c ^ (r & 7))) * 16);
}

// ROWS x D tile of a (n x D) row-major tensor starting at row `row0`; rows >= n are zeros.
template <int ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void load_tile(uint32_t dst, const T* base, int row0, int n, int tid) {
  constexpr int CH = D / 8, PER_THREAD = (ROWS * CH + THREADS - 1) / THREADS;
#pragma unroll
  for (int k = 0; k < PER_THREAD; ++k) {
    const int e = tid + k * THREADS, r = e / CH, c = e % CH;
    if ((ROWS * CH) % THREADS != 0 && e >= ROWS * CH) break;  // small tiles (the Bc sweep's Bc = 16)
    const bool ok = row0 + r < n;
    cp_async16(dst + swz<CH>(r, c), base + (ok ? int64_t(row0 + r) * D + c * 8 : 0), ok ? 16 : 0);
  }
}

}  // namespace flashstep::gpu::tc
