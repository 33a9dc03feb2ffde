// FlashAttention-2's backward on tensor cores: the host-side entry points (the D_i / L2_i
// preparation, dQ's conversion to the type) and the one place that maps a configuration number
// to its kernel. Configuration 2 (mma.sync, 8 warps x 16 keys, Bc = 128, Br = 64) is the default
// on GPUs other than compute capability 9.0; on Hopper the default is gpu/fa2_bwd_wgmma.cu's.
// The ladder's other rungs (1, 3, 4; 5-8, 10-12): gpu/ladder/, built with -DFLASHSTEP_LADDER=ON.
// The kernel template and its traits: gpu/fa2_bwd_tc_kernel.cuh.
#include "gpu/fa2_bwd_tc_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcBwdVariantInfo bwd_tc_ladder_variant(int variant, int d);
void bwd_tc_ladder_launch(int variant, const TcBwdParams& p);
#endif

namespace {

//                           D, warps, Br, K/V fragments in registers
const Entry kDefaults[] = {
    entry<2, BwdConfig<64, 8, 64, true>>("8 warps x 16 keys (Bc 128), Br 64"),
    entry<2, BwdConfig<128, 8, 64, false>>("8 warps x 16 keys (Bc 128), Br 64, K/V fragments from smem"),
};

}  // namespace

#ifdef FLASHSTEP_HAVE_WGMMA
int fa2_bwd_tc_variant_count() { return kBwdWgmmaLast; }
#else
int fa2_bwd_tc_variant_count() { return kBwdWgmmaVariant - 1; }
#endif
int fa2_bwd_tc_row_pad() { return kRowPad; }

TcBwdVariantInfo fa2_bwd_tc_variant(int variant, int d) {
#ifdef FLASHSTEP_HAVE_WGMMA
  if (variant >= kBwdWgmmaVariant) return fa2_bwd_wgmma_variant(variant, d);
#endif
  for (const Entry& e : kDefaults)
    if (e.variant == variant && e.d == d) return TcBwdVariantInfo{variant, e.what, e.Br, e.Bc, e.warps, e.smem, true};
  TcBwdVariantInfo none;
#if defined(FLASHSTEP_LADDER)
  none = bwd_tc_ladder_variant(variant, d);
#endif
  none.variant = variant;
  return none;
}

namespace {

template <typename T, int D>
void launch_prepare(const void* dO, const void* O, const float* lse, float* Dvec, float* L2, float* dq_acc,
                    int heads, int nq, int rows_pad) {
  const int64_t rows = int64_t(heads) * rows_pad, per_block = 2 * (256 / (D / 8));  // prepare_kernel's rows
  if (rows == 0) return;
  prepare_kernel<T, D><<<unsigned((rows + per_block - 1) / per_block), 256>>>(
      static_cast<const T*>(dO), static_cast<const T*>(O), lse, Dvec, L2, dq_acc, heads, nq, rows_pad);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void fa2_bwd_tc_prepare(const void* dO, const void* O, const float* lse, float* D, float* L2, float* dq_acc, int heads,
                        int nq, int rows_pad, int d, Elem elem) {
  if (d != 64 && d != 128) throw std::runtime_error("fa2_bwd_tc_prepare: d is 64 or 128, not " + std::to_string(d));
  if (elem == Elem::bf16)
    (d == 64 ? launch_prepare<__nv_bfloat16, 64> : launch_prepare<__nv_bfloat16, 128>)(dO, O, lse, D, L2, dq_acc,
                                                                                      heads, nq, rows_pad);
  else
    (d == 64 ? launch_prepare<__half, 64> : launch_prepare<__half, 128>)(dO, O, lse, D, L2, dq_acc, heads, nq,
                                                                         rows_pad);
}

namespace {

// dQ = dq_acc rounded to the type, four consecutive floats of dq_acc per thread. Swizzled (v7):
// the floats at position c of row r (r counted within its head) belong to column c xor 8 (r mod 8);
// four consecutive positions (4-aligned) are four consecutive columns.
template <typename T>
__global__ void dq_to_type_kernel(const float* __restrict__ acc, T* __restrict__ dq, int64_t n4, int nq, int d,
                                  bool swizzled) {
  const int64_t e4 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e4 >= n4) return;
  const int64_t e = e4 * 4, row = e / d;
  const int pos = int(e % d), c = swizzled ? pos ^ (int(row % nq & 7) << 3) : pos;
  const float4 v = *reinterpret_cast<const float4*>(acc + e);
  // The four values rounded and stored as one 8-byte store (c is a multiple of 4).
  const T t[4] = {from_float<T>(v.x), from_float<T>(v.y), from_float<T>(v.z), from_float<T>(v.w)};
  uint2 w;
  memcpy(&w, t, sizeof w);
  *reinterpret_cast<uint2*>(dq + row * d + c) = w;
}

#if defined(FLASHSTEP_LADDER)
// The same from the quads layout (ladder rungs 34, 35: bwd_store_dq_slab_quads in gpu/bwd_ws_kernel.cuh):
// within each 16-float group of a row the four floats at 4 t hold columns 2 t, 2 t + 1, 8 + 2 t,
// 9 + 2 t of the group's 16, and the groups of odd rows (r counted within its head) are swapped in
// pairs (group q's floats at group q xor 1).
template <typename T>
__global__ void dq_quads_to_type_kernel(const float* __restrict__ acc, T* __restrict__ dq, int64_t n4, int nq, int d) {
  const int64_t e4 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e4 >= n4) return;
  const int64_t row = e4 * 4 / d;  // four floats of one row: d is a multiple of 16
  const int pos = int(e4 * 4 % d), group = (pos / 16) ^ int(row % nq & 1);
  T* o = dq + row * d + 16 * group + 2 * (pos % 16 / 4);
  const float4 v = *reinterpret_cast<const float4*>(acc + e4 * 4);
  const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) o[(k & 1) + 8 * (k >> 1)] = from_float<T>(f[k]);
}
#endif

}  // namespace

#if defined(FLASHSTEP_LADDER)
void fa2_bwd_tc_dq_quads_to_type(const float* dq_acc, void* dQ, int heads, int nq, int d, Elem elem) {
  const int64_t n4 = int64_t(heads) * nq * d / 4;  // d is 64 or 128
  if (n4 == 0) return;
  const unsigned blocks = unsigned((n4 + 255) / 256);
  if (elem == Elem::bf16)
    dq_quads_to_type_kernel<<<blocks, 256>>>(dq_acc, static_cast<__nv_bfloat16*>(dQ), n4, nq, d);
  else
    dq_quads_to_type_kernel<<<blocks, 256>>>(dq_acc, static_cast<__half*>(dQ), n4, nq, d);
  CUDA_CHECK_LAUNCH();
}
#endif

void fa2_bwd_tc_dq_to_type(const float* dq_acc, void* dQ, int heads, int nq, int d, bool swizzled, Elem elem) {
  const int64_t n4 = int64_t(heads) * nq * d / 4;  // d is 64 or 128
  if (n4 == 0) return;
  const unsigned blocks = unsigned((n4 + 255) / 256);
  if (elem == Elem::bf16)
    dq_to_type_kernel<<<blocks, 256>>>(dq_acc, static_cast<__nv_bfloat16*>(dQ), n4, nq, d, swizzled);
  else
    dq_to_type_kernel<<<blocks, 256>>>(dq_acc, static_cast<__half*>(dQ), n4, nq, d, swizzled);
  CUDA_CHECK_LAUNCH();
}

void fa2_bwd_tc_launch(int variant, const TcBwdParams& p) {
#ifdef FLASHSTEP_HAVE_WGMMA
  if (variant >= kBwdWgmmaVariant) return fa2_bwd_wgmma_launch(variant, p);
#endif
  for (const Entry& e : kDefaults)
    if (e.variant == variant && e.d == p.fwd.d) return e.launch(p);
#if defined(FLASHSTEP_LADDER)
  return bwd_tc_ladder_launch(variant, p);
#endif
  throw std::runtime_error("fa2_bwd_tc_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.fwd.d));
}

}  // namespace flashstep::gpu::tc
