// Storage precision on the GPU (--dtype): Q, K, V and O live in global memory (HBM) as float,
// __half or __nv_bfloat16; the kernels convert to float32 as they load a tile into shared
// memory and round once, to nearest even, as they store O (as core/memory.h's Hbm does).
// l, m and lse stay float32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace flashstep::gpu {

// Four consecutive elements of a row, as float32 (src aligned to four elements).
template <typename T>
__device__ __forceinline__ float4 load4(const T* src);
template <>
__device__ __forceinline__ float4 load4<float>(const float* src) {
  return __ldg(reinterpret_cast<const float4*>(src));
}
template <>
__device__ __forceinline__ float4 load4<__half>(const __half* src) {
  const uint2 u = __ldg(reinterpret_cast<const uint2*>(src));
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
template <>
__device__ __forceinline__ float4 load4<__nv_bfloat16>(const __nv_bfloat16* src) {
  const uint2 u = __ldg(reinterpret_cast<const uint2*>(src));
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Round to nearest even on store (the same rounding as core/memory.cpp's round_to).
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

}  // namespace flashstep::gpu
