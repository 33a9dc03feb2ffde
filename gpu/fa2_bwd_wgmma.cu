// The backward's default on Hopper (compute capability 9.0, sm_90a): configuration 26 at d = 64
// and 46 at d = 128, causal or not (gpu/bwd_ws_kernel.cuh). FlashAttention-2's backward on warpgroup
// MMA (two consumer warpgroups x 64 keys, Bc = 128, all five products on wgmma from matrix
// descriptors built once, the grid's K/V blocks fastest so that the blocks at work at once share one
// head's Q_i, dO_i and dQ_i in L2) with FlashAttention-3's producer warpgroup (K_j, V_j, Q_i and dO_i
// by TMA into a 3-stage mbarrier ring, setmaxnreg 24 / 240, every consumer thread releasing a
// stage), FlashAttention-3's tiles (Br = 128 at d = 64: S^T and dP^T on m64n128, dQ_i's rows split
// between the warpgroups; Br = 64 at d = 128, where Br = 128 has no form within the consumers' 240
// registers), dS^T stored by stmatrix, and FlashAttention-3's dQ accumulation: tau dQ_i added to HBM
// by the bulk copy engine (cp.reduce.async.bulk) from a dense row-swizzled slab, one per Q block,
// under the next Q block. At d = 128, dV's and dK's products are one m64n128k16 per 16 queries over
// both 64-column panels (the forward's wide O += P~ V), and each consumer warp holds its 16 keys of
// K_j as the A fragments of S^T = K_j Q_i^T, loaded once per K/V block, so that S^T reads only Q_i
// from shared memory; the registers for them come from computing dS from P as rounded for dV's
// product (one more rounding of P, which the error bound and the CPU emulation count) in place of a
// float32 P kept beside dP. Chosen by those traits and measured against the defaults before them
// (19 at d = 64, 15 at d = 128; gpu/results/tensor-core-backward/producer-warpgroup/): 26 / 19
// 1.12-1.15x, 25 / 15 1.15-1.16x at the target points (rungs-25-26/), 28 / 25 1.011-1.015x and
// 29 / 28 1.013-1.018x at the four d = 128 points (rung-28/, rung-29/), both on the H200; 46 / 29
// 1.011-1.027x in each of three alternating rounds at the four d = 128 points, on an H100
// (rounds-46-29-h100/). dK and dV of 26 bit for bit v9's; compute-sanitizer's four tools clean on
// rings that wrap. 15, 19, 25, 28 and 29 are ladder rungs. The other configurations: gpu/ladder/.
#include "gpu/bwd_ws_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcBwdVariantInfo bwd_wgmma_ladder_variant(int variant, int d);
void bwd_wgmma_ladder_launch(int variant, const TcBwdParams& p);
#endif

namespace {
//                         variant, D, Q_i / dO_i stages, dQ by the producer's warps, every consumer thread releases,
//                         the slabs' mbarriers, the warpgroups apart, Br, overlap, stmatrix, float4 statistics, bulk dQ
using BwdD64 = WsBwdConfig<kBwdWgmmaVariant + 21, 64, 3, false, true, false, false, 128, false, true, false, true>;  // 26
//                         ..., the next Q block's S^T issued under this block's dQ product, dV and dK wide, ...,
//                         K_j's A fragments of S^T in registers (dS from P's rounded fragments)
using BwdD128 = WsBwdConfig<kBwdWgmmaVariant + 41, 128, 3, false, true, false, false, 64, false, true, 0, true, false, true,
                            false, false, false, false, false, false, false, false, false, true>;  // 46
}  // namespace

int bwd_config_sm90(int d) { return d == 64 ? BwdD64::VARIANT : d == 128 ? BwdD128::VARIANT : 0; }

TcBwdVariantInfo fa2_bwd_wgmma_variant(int variant, int d) {
  if (variant == BwdD64::VARIANT && d == 64) return info_of_ws<BwdD64>();
  if (variant == BwdD128::VARIANT && d == 128) return info_of_ws<BwdD128>();
#if defined(FLASHSTEP_LADDER)
  return bwd_wgmma_ladder_variant(variant, d);
#else
  return TcBwdVariantInfo{};
#endif
}

void fa2_bwd_wgmma_launch(int variant, const TcBwdParams& p) {
  if (variant == BwdD64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<BwdD64>(p);
  if (variant == BwdD128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<BwdD128>(p);
#if defined(FLASHSTEP_LADDER)
  return bwd_wgmma_ladder_launch(variant, p);
#else
  throw std::runtime_error("fa2_bwd_wgmma_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.fwd.d));
#endif
}

}  // namespace flashstep::gpu::tc
