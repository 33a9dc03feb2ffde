// wgmma (sm_90a) helpers shared by the Hopper rungs (gpu/fa2_wgmma.cu, gpu/fa3_forward.cu):
// the m64nNk16 products with float32 accumulators, their fences, and the 128B-swizzled shared
// memory matrix descriptor. Include only from files compiled for sm_90a.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#include "gpu/tc_launch.h"
#include "gpu/tc_forward.cuh"
#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu::tc {

template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[88], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[96], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[112], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d0)[32], float (&d1)[32], const uint32_t (&a)[4], uint64_t b, int scale_d);
// m64n64k16 with A from registers and B from shared memory K-major (wgmma_rs's B is MN-major):
// the backward's S_ij^T = K_j Q_i^T with K_j's A fragments held in registers (configuration 46).
template <typename T>
__device__ __forceinline__ void wgmma_rs_kb(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d);

// The accumulator registers of an m64n64 / m64n128 float32 tile, as asm operands %0 ...
#define FS_ACC32_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FS_ACC32_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FS_ACC64_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FS_ACC64_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// ... and of an m64n176 / m64n192 tile (the long-Bc rungs v20, v21: 88 and 96 registers).
#define FS_ACC88_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"
#define FS_ACC88_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define FS_ACC96_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define FS_ACC96_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])

// ... and of an m64n224 tile (v39's Bc at d = 64: 112 registers).
#define FS_ACC112_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111}"
#define FS_ACC112_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])

// ... and of an m64n160 tile (the FP8 forward's Bc = 160 at d = 64: 80 registers).
#define FS_ACC80_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}"
#define FS_ACC80_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])

// wgmma m64nNk16 with float32 accumulators for one 16-bit input type TY ("bf16" or "f16").
//   ss: A and B from shared memory, both K-major (S_ij = Q_i K_j^T); N = 64, 128, 176, 192 or 224
//       (any multiple of 8 up to 256 is legal for 16-bit inputs; these are the Bc the rungs use).
//   rs: A from registers, B from shared memory MN-major (O_i += P~_ij V_j, imm-trans-b = 1); N = 64,
//       or N = 128 over two 64-column panels (accumulator columns 0-63 in d0, 64-127 in d1; the
//       B descriptor from desc_sw128_mn).
// scale_d = 0 ignores the accumulators' old values (D = A B), 1 adds (D += A B).
#define FS_DEFINE_WGMMA_SS(T, TY, ACC, N, OA, OB, OS)                                                  \
  template <>                                                                                    \
  __device__ __forceinline__ void wgmma_ss<T>(float (&d)[N / 2], uint64_t a, uint64_t b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #OS ", 0;\n"                           \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " FS_ACC##ACC##_REGS \
                 ", %" #OA ", %" #OB ", p, 1, 1, 0, 0;\n}\n"                                    \
                 : FS_ACC##ACC##_OPS(d)                                                          \
                 : "l"(a), "l"(b), "r"(scale_d));                                                \
  }
// m64n64k16 with A from registers; TB: imm-trans-b, "1" for B MN-major (wgmma_rs), "0" K-major.
#define FS_DEFINE_WGMMA_RS64(T, TY, NAME, TB)                                                     \
  template <>                                                                                    \
  __device__ __forceinline__ void NAME<T>(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " FS_ACC32_REGS       \
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, " TB ";\n}\n"                           \
                 : FS_ACC32_OPS(d)                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));            \
  }
#define FS_DEFINE_WGMMA(T, TY)                                                                   \
  FS_DEFINE_WGMMA_SS(T, TY, 32, 64, 32, 33, 34)                                                        \
  FS_DEFINE_WGMMA_SS(T, TY, 64, 128, 64, 65, 66)                                                        \
  FS_DEFINE_WGMMA_SS(T, TY, 88, 176, 88, 89, 90)                                                        \
  FS_DEFINE_WGMMA_SS(T, TY, 96, 192, 96, 97, 98)                                                        \
  FS_DEFINE_WGMMA_SS(T, TY, 112, 224, 112, 113, 114)                                                    \
  FS_DEFINE_WGMMA_RS64(T, TY, wgmma_rs, "1")                                                    \
  template <>                                                                                    \
  __device__ __forceinline__ void wgmma_rs<T>(float (&d0)[32], float (&d1)[32], const uint32_t (&a)[4], uint64_t b, \
                                              int scale_d) {                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " FS_ACC64_REGS      \
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                \
                 : FS_ACC32_OPS(d0), FS_ACC32_OPS(d1)                                            \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));            \
  }                                                                                              \
  FS_DEFINE_WGMMA_RS64(T, TY, wgmma_rs_kb, "0")

FS_DEFINE_WGMMA(__nv_bfloat16, "bf16")
FS_DEFINE_WGMMA(__half, "f16")

// wgmma m64n64k16, A and B from shared memory, both MN-major (dQ_i += dS_ij K_j); scale_d = 0:
// D = A B, 1: D += A B.
template <typename T>
__device__ __forceinline__ void wgmma_ss_mn(float (&d)[32], uint64_t a, uint64_t b, int scale_d);
#define FS_DEFINE_WGMMA_SS_MN(T, TY)                                                              \
  template <>                                                                                     \
  __device__ __forceinline__ void wgmma_ss_mn<T>(float (&d)[32], uint64_t a, uint64_t b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " FS_ACC32_REGS        \
                 ", %32, %33, p, 1, 1, 1, 1;\n}\n"                                                \
                 : FS_ACC32_OPS(d)                                                                \
                 : "l"(a), "l"(b), "r"(scale_d));                                                 \
  }
FS_DEFINE_WGMMA_SS_MN(__nv_bfloat16, "bf16")
FS_DEFINE_WGMMA_SS_MN(__half, "f16")
#undef FS_DEFINE_WGMMA_SS_MN
// The same with N = 128 (the backward's rung 37: dQ_i = dS_ij K_j over all d = 128 columns):
// accumulator columns 0-63 in d0, 64-127 in d1; B's two 64-column panels LBO bytes apart (desc_lbo).
template <typename T>
__device__ __forceinline__ void wgmma_ss_mn(float (&d0)[32], float (&d1)[32], uint64_t a, uint64_t b, int scale_d);
#define FS_DEFINE_WGMMA_SS_MN_WIDE(T, TY)                                                                      \
  template <>                                                                                                  \
  __device__ __forceinline__ void wgmma_ss_mn<T>(float (&d0)[32], float (&d1)[32], uint64_t a, uint64_t b,     \
                                                 int scale_d) {                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                  \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " FS_ACC64_REGS                    \
                 ", %64, %65, p, 1, 1, 1, 1;\n}\n"                                                             \
                 : FS_ACC32_OPS(d0), FS_ACC32_OPS(d1)                                                          \
                 : "l"(a), "l"(b), "r"(scale_d));                                                              \
  }
FS_DEFINE_WGMMA_SS_MN_WIDE(__nv_bfloat16, "bf16")
FS_DEFINE_WGMMA_SS_MN_WIDE(__half, "f16")
#undef FS_DEFINE_WGMMA_SS_MN_WIDE

// wgmma m64nNk32 on e4m3 inputs with float32 accumulators (the FP8 forward, gpu/fp8_kernel.cuh).
// For 8-bit inputs the PTX ISA allows K-major operands only: no transpose immediates, so the
// second product reads V^T (d rows of keys) and its instruction has no imm-trans argument.
//   ss: A (Q_i) and B (K_j) from shared memory, N = Bc: 128 (d = 64), 192 (d = 128) or 64, 160, 224 (rungs).
//   rs: A (P~_ij, 4 registers of 4 e4m3 bytes) from registers, B (V_j^T) from shared memory,
//       N = 64 (d = 64) or N = 128 over two 32-register halves (d = 128: columns 0-63 in d0).
// One ss overload per N: R accumulator registers (N / 2), the operands' numbers past them
// (A = "%R", B = "%R+1", the scale-d predicate's source = "%R+2", as strings).
#define FS_DEFINE_WGMMA_SS_E4M3(R, N, A_B, SCALE)                                                               \
  __device__ __forceinline__ void wgmma_ss_e4m3(float (&d)[R], uint64_t a, uint64_t b, int scale_d) {           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                             \
                 "wgmma.mma_async.sync.aligned.m64n" N "k32.f32.e4m3.e4m3 " FS_ACC##R##_REGS ", " A_B ", p, 1, 1;\n}\n" \
                 : FS_ACC##R##_OPS(d)                                                                          \
                 : "l"(a), "l"(b), "r"(scale_d));                                                              \
  }
FS_DEFINE_WGMMA_SS_E4M3(64, "128", "%64, %65", "%66")     // Bc = 128, the default at d = 64
FS_DEFINE_WGMMA_SS_E4M3(32, "64", "%32, %33", "%34")      // Bc = 64, the ladder's rungs 12, 13, 15
FS_DEFINE_WGMMA_SS_E4M3(96, "192", "%96, %97", "%98")     // Bc = 192, the default at d = 128
FS_DEFINE_WGMMA_SS_E4M3(80, "160", "%80, %81", "%82")     // Bc = 160, rung 19
FS_DEFINE_WGMMA_SS_E4M3(112, "224", "%112, %113", "%114") // Bc = 224, rung 18
#undef FS_DEFINE_WGMMA_SS_E4M3
__device__ __forceinline__ void wgmma_rs_e4m3(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " FS_ACC32_REGS
               ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
               : FS_ACC32_OPS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_rs_e4m3(float (&d0)[32], float (&d1)[32], const uint32_t (&a)[4], uint64_t b,
                                              int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " FS_ACC64_REGS
               ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
               : FS_ACC32_OPS(d0), FS_ACC32_OPS(d1)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Waits until at most N of this warpgroup's committed groups are pending (the older ones are done).
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving reads or writes of accumulator registers across the
// asynchronous MMA's issue and wait (the asm above does not tell it when the MMA completes).
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
  for (int k = 0; k < R; ++k) asm volatile("" : "+f"(r[k])::"memory");
}
// cp.async writes are generic-proxy writes; wgmma reads shared memory through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Matrix descriptor of a 128B-swizzled operand at shared address `addr` (1024-byte-aligned
// atoms): start address, leading byte offset, stride byte offset (8-row groups, 1024 bytes),
// layout type 1 = 128B swizzle. The leading offset only matters for operands wider than one
// 64-element panel, which v13 never issues; it is set to 1024 too so that a K-major or an
// MN-major reading of the two offsets gives the same layout.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
// The same for 64B swizzling (layout type 2): K-major rows of 64 bytes (the FP8 forward's Q_i and
// K_j at d = 64), 8-row groups SBO = 512 bytes apart, atoms 512-byte aligned. The leading offset
// is unused by a K-major swizzled operand whose k-step (32 bytes) lies within one row.
__device__ __forceinline__ uint64_t desc_sw64(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(512 >> 4) << 32) | (uint64_t(2) << 62);
}
// The same for 32B swizzling (layout type 3): K-major rows of 32 bytes (the FP8 forward's last
// V_j^T panel at Bc = 160 and 224, 32 keys a row), 8-row groups SBO = 256 bytes apart, atoms
// 256-byte aligned.
__device__ __forceinline__ uint64_t desc_sw32(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(256 >> 4) << 32) | (uint64_t(3) << 62);
}
// The same for an MN-major B operand wider than one panel (O_i += P~ V with N = 128 at d = 128):
// PTX's canonical 128B-swizzled MN-major layout is ((8 x 8 elements, m), (8 rows, k)) with the
// strides ((1, 8, LBO), (64, SBO)): 64 consecutive columns of a row, the next 64 columns LBO
// bytes on (here the next panel, `panel_bytes`), 8-row groups SBO = 1024 bytes apart.
__device__ __forceinline__ uint64_t desc_sw128_mn(uint32_t addr, uint32_t panel_bytes) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t((panel_bytes >> 4) & 0x3FFF) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// The descriptor of the operand `byte_offset` bytes (a multiple of 16) past the one `desc`
// describes, for a kernel that builds each buffer's descriptor once: one 32-bit add to the
// start-address field (bits 0-13, address >> 4) in place of the mask, shift and ORs above. Equal
// to desc_sw128(addr + byte_offset) (or the sw64 / MN-major form) as long as addr + byte_offset
// stays below 256 KiB (the 18 bits those keep), so that nothing carries out of the field: every
// shared-memory address of a Hopper SM (228 KiB at most) is below that; the caller checks its
// tiles' size.
__device__ __forceinline__ uint64_t desc_add(uint64_t desc, uint32_t byte_offset) {
  return (desc & 0xFFFFFFFF00000000ull) | uint32_t(uint32_t(desc) + (byte_offset >> 4));
}
// `desc` with its leading byte offset (bits 16-29, in 16-byte units) set to `panel_bytes`: an
// MN-major operand built as one panel read as two, as desc_sw128_mn describes them.
__device__ __forceinline__ uint64_t desc_lbo(uint64_t desc, uint32_t panel_bytes) {
  return (desc & ~(uint64_t(0x3FFF) << 16)) | (uint64_t((panel_bytes >> 4) & 0x3FFF) << 16);
}


// One warp's 16 rows of a 64 x BC score tile S_ij (s[4n + e]: row g + 8 (e / 2), column
// 8n + 2 t4 + (e % 2)) after S = Q_i K_j^T: the mask and FA2fwd L9 (online softmax), P~_ij in
// place of S_ij as float32; alphas[hr] = e^(m_i - m_ij) of the lane's two rows. Touches neither
// O_i nor the A fragments, so it can run while O_i += P~_i,j-1 V_j-1 is still on the tensor
// cores (v17's intra-warpgroup overlap, gpu/fa3_forward.cu). ILP, POLY: online_softmax_row's.
template <int BC, int ILP = 1, int POLY = 0>
__device__ __forceinline__ void softmax_scores(float (&s)[BC / 2], float (&alphas)[2], float (&m_i)[2], float (&l_i)[2],
                                               float scale_log2, int col0, int warp_hi_min, const int (&row_hi)[2],
                                               int t4) {
  // Algorithm 2: scores of masked keys (and of padding columns past Nk) are -inf.
  if (col0 + BC - 1 > warp_hi_min) {
#pragma unroll
    for (int k = 0; k < BC / 2; ++k)
      if (col0 + (k / 4) * 8 + 2 * t4 + (k & 1) > row_hi[(k % 4) / 2]) s[k] = -INFINITY;
  }
  // FA2fwd L9: m_ij = max(m_i, rowmax(S_ij)), P~_ij = exp(S_ij - m_ij),
  // l_ij = e^(m_i - m_ij) l_i + rowsum(P~_ij); each row lives in one quad of lanes.
#pragma unroll
  for (int hr = 0; hr < 2; ++hr)
    alphas[hr] = online_softmax_row<BC / 4, ILP, POLY>([&](int k) -> float& { return s[4 * (k / 2) + 2 * hr + k % 2]; },
                                            m_i[hr], l_i[hr], scale_log2);
}

// FA2fwd L10, first half: diag(e^(m_i - m_ij)) O_i.
template <int PANELS>
__device__ __forceinline__ void rescale_o(const float (&alphas)[2], float (&o)[PANELS][32]) {
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
    for (int k = 0; k < 32; ++k) o[pn][k] *= alphas[(k % 4) / 2];
}
// Whether some row of the warp has a new maximum (alpha != 1); when none has, the rescale is skipped.
__device__ __forceinline__ bool warp_rescales(const float (&alphas)[2]) {
  return __any_sync(0xffffffffu, alphas[0] != 1.0f || alphas[1] != 1.0f);
}
// wgmma_wait_all spelled differently ("0x0"), for a second copy of the wait that the compiler
// must not merge with the first (see the forward's softmax_block, gpu/fa3_kernel.cuh).
__device__ __forceinline__ void wgmma_wait_all_copy() { asm volatile("wgmma.wait_group.sync.aligned 0x0;\n" ::: "memory"); }
// P~_ij rounded to the input type, straight into A fragments of wgmma's register form: column
// tiles 2kk, 2kk+1 of the accumulator are (k 0-7, k 8-15) of k-step kk.
template <typename T, int BC>
__device__ __forceinline__ void pack_p(const float (&s)[BC / 2], uint32_t (&pa)[BC / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BC / 16; ++kk) {
    pa[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
    pa[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
    pa[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
    pa[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}
// Both: the rescale skipped when no row max of the warp moved (alpha = 1 exactly then), as v9,
// then the fragments. O_i and the fragments must be free: no product in flight.
template <typename T, int BC, int PANELS>
__device__ __forceinline__ void rescale_and_pack(const float (&s)[BC / 2], const float (&alphas)[2],
                                                 float (&o)[PANELS][32], uint32_t (&pa)[BC / 16][4]) {
  if (warp_rescales(alphas)) rescale_o(alphas, o);
  pack_p<T, BC>(s, pa);
}

// Both of the above in a row: the mask, FA2fwd L9, the O_i rescale of L10 and P~_ij into A fragments.
template <typename T, int BC, int PANELS>
__device__ __forceinline__ void softmax_to_fragments(float (&s)[BC / 2], float (&o)[PANELS][32], uint32_t (&pa)[BC / 16][4],
                                                     float (&m_i)[2], float (&l_i)[2], float scale_log2, int col0,
                                                     int warp_hi_min, const int (&row_hi)[2], int t4) {
  float alphas[2];
  softmax_scores<BC>(s, alphas, m_i, l_i, scale_log2, col0, warp_hi_min, row_hi, t4);
  rescale_and_pack<T, BC, PANELS>(s, alphas, o, pa);
}

// FA2fwd L12: O_i = diag(l_i)^-1 O_i; L13: L_i = m_i + log(l_i); L14, L15: write this warp's
// rows of O_i and L_i (rows from wrow0; rows past Nq are not written).
template <typename T, int D, int PANELS>
__device__ __forceinline__ void write_o_lse(const TcParams& p, int64_t h, int wrow0, int g, int t4,
                                            const float (&o)[PANELS][32], const float (&m_i)[2], const float (&l_i)[2]) {
  T* Oh = static_cast<T*>(p.O) + h * p.nq * D;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float l = quad_row_sum(l_i[hr]);
    const int r = wrow0 + g + 8 * hr;
    if (r >= p.nq) continue;
    const float inv = row_inverse(l);
    uint32_t* out = reinterpret_cast<uint32_t*>(Oh + int64_t(r) * D + 2 * t4);
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
      for (int n = 0; n < 8; ++n)
        out[(pn * 64 + n * 8) / 2] = pack2<T>(o[pn][4 * n + 2 * hr] * inv, o[pn][4 * n + 2 * hr + 1] * inv);
    write_row_lse(p, h, r, m_i[hr], l, t4);
  }
}

}  // namespace flashstep::gpu::tc
