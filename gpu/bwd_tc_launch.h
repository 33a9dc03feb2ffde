// Launchers of FlashAttention-2's backward on tensor cores (gpu/fa2_bwd_tc.cu) for the host code
// in gpu/backward_tc.cpp. Plain types only: the C++ compiler sees no device code.
//
// Q, K, V, O, dO, dK, dV live in device memory as 16-bit values, (heads, N, d) row-major; lse is
// float32 (heads, Nq), natural log, as the forward wrote it. The pre-kernel writes, per head, Nq
// rounded up to `rows_pad` rows of two float32 vectors: D = rowsum(dO o O) and L2 = lse log2(e)
// (+inf for a row that keeps no key and for padding rows, so exp2(S - L2) = 0 there). dQ is
// accumulated in float32 (dq_acc, heads x Nq x d, zeroed by the pre-kernel) by atomic adds (v7 and 25-46, the
// Hopper defaults among them: by the bulk copy engine's reduce, in a row-swizzled layout) and
// converted to the 16-bit type at the end.
#pragma once
#include "gpu/tc_launch.h"

#include <cstdint>

namespace flashstep::gpu::tc {

struct TcBwdParams {
  TcParams fwd;  // Q, K, V, sizes, scale, type and mask as the forward took them (O, lse unused)
  const void* dO = nullptr;
  const float* L2 = nullptr;  // (heads, rows_pad): lse log2(e), +inf where nothing is kept
  const float* D = nullptr;   // (heads, rows_pad): rowsum(dO o O), 0 in padding rows
  float* dq_acc = nullptr;    // (heads, nq, d) float32, zero before the launch
  void *dK = nullptr, *dV = nullptr;
  int rows_pad = 0;
};

struct TcBwdVariantInfo {
  int variant = 0;
  const char* what = "";
  int Br = 0, Bc = 0, warps = 0;
  int64_t smem_bytes = 0;
  bool compiled = false;
  bool sm90_only = false;  // wgmma: runs on compute capability 9.0 alone
  // dq_acc's rows hold their 8-float chunks swizzled (column c at c xor 8 (row mod 8), row
  // counted within the head; v7): fa2_bwd_tc_dq_to_type undoes it.
  bool dq_swizzled = false;
  // dq_acc's rows in the quads layout (34, 35: bwd_store_dq_slab_quads): fa2_bwd_tc_dq_quads_to_type
  // undoes it.
  bool dq_quads = false;
  // dS computed from P as rounded to the type for the dV product (46), where the others take the
  // float32 P: rounded_backward_bound's p_rounded_in_ds.
  bool ds_from_rounded_p = false;
};
int fa2_bwd_tc_variant_count();
int fa2_bwd_tc_row_pad();  // rows_pad is Nq rounded up to a multiple of this
TcBwdVariantInfo fa2_bwd_tc_variant(int variant, int d);

// FA2b L3 and L4 in one pass (d = 64 or 128): dq_acc (heads x nq x d) set to zero, D and the L2
// the loop reads from dO, O and lse.
void fa2_bwd_tc_prepare(const void* dO, const void* O, const float* lse, float* D, float* L2, float* dq_acc,
                        int heads, int nq, int rows_pad, int d, Elem elem);
// FA2b L5-L18 (variant 1 .. fa2_bwd_tc_variant_count()); dq_acc must be zero before (the pre-kernel).
void fa2_bwd_tc_launch(int variant, const TcBwdParams& p);
// dQ = dq_acc rounded to the type (heads x nq x d); `swizzled`: dq_acc in the variant's
// swizzled layout (TcBwdVariantInfo::dq_swizzled), dQ row-major.
void fa2_bwd_tc_dq_to_type(const float* dq_acc, void* dQ, int heads, int nq, int d, bool swizzled, Elem elem);
// The same from dq_acc in the quads layout (TcBwdVariantInfo::dq_quads; ladder builds only).
void fa2_bwd_tc_dq_quads_to_type(const float* dq_acc, void* dQ, int heads, int nq, int d, Elem elem);

// The wgmma configurations, 5-46 (sm_90a only, built where FLASHSTEP_HAVE_WGMMA is defined,
// reached through fa2_bwd_tc_launch): the default (26 at d = 64, 46 at d = 128) in
// gpu/fa2_bwd_wgmma.cu, the others in gpu/ladder/ (which d each has: bwd_variant_for_d below;
// 13-46, warp-specialised, run 12 warps; 19, 20, 22, 26, 27, 31, 33, 35 and 39 have Br = 128). The
// caller checks that the GPU is 9.0.
constexpr int kBwdWgmmaVariant = 5, kBwdWgmmaLast = 46;
// Whether tensor-core backward variant `variant` (1 .. kBwdWgmmaLast) exists for head dimension d
// in a build that holds every rung (the ladder's): each at d = 64 and 128 but those of one d only.
constexpr bool bwd_variant_for_d(int variant, int d) {
  if (variant < 1 || variant > kBwdWgmmaLast || (d != 64 && d != 128)) return false;
  const bool d64_only =
      variant == 3 || variant == 8 || variant == 18 || variant == 19 || variant == 20 || variant == 22 || variant == 26 ||
      variant == 27 || variant == 31 || variant == 33 || variant == 35 || variant == 39;
  const bool d128_only = variant == 21 || variant == 23 || variant == 24 || variant == 25 || variant == 28 ||
                         variant == 29 || variant == 30 || variant == 32 || variant == 34 || variant == 36 ||
                         variant == 37 || variant == 38 || variant == 40 || variant == 41 || variant == 42 ||
                         variant == 43 || variant == 44 || variant == 45 || variant == 46;
  return d == 64 ? !d128_only : !d64_only;
}
int bwd_config_sm90(int d);  // the Hopper default for d (0: none)
TcBwdVariantInfo fa2_bwd_wgmma_variant(int variant, int d);
void fa2_bwd_wgmma_launch(int variant, const TcBwdParams& p);

}  // namespace flashstep::gpu::tc
