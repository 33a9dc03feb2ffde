// The backward's default on Hopper (compute capability 9.0, sm_90a): configuration 19 at d = 64
// and 15 at d = 128, causal or not (gpu/bwd_ws_kernel.cuh). FlashAttention-2's backward on warpgroup MMA
// (two consumer warpgroups x 64 keys, Bc = 128, Br = 64, all five products on wgmma from matrix
// descriptors built once, dQ_i added to HBM with red.global.add.v4.f32, the grid's K/V blocks
// fastest so that the blocks at work at once share one head's Q_i, dO_i and dQ_i in L2) with
// FlashAttention-3's producer warpgroup: K_j, V_j, Q_i and dO_i by TMA into a 3-stage mbarrier
// ring, setmaxnreg 24 / 240, every consumer thread releasing a stage. Chosen by its traits and
// measured: 1.11-1.12x configuration 9 (the default before it) at d = 64 and 1.05-1.08x
// configuration 12 at d = 128 at the 8 target points, dK and dV bit for bit v9's; compute-
// sanitizer's four tools clean on rings that wrap around
// (gpu/results/tensor-core-backward/producer-warpgroup/: 13's measurement and 15's within
// 0.985-1.012x of it). Configuration 19 is 15 with FlashAttention-3's tiles at d = 64, Br = 128
// (S^T and dP^T on m64n128, dQ_i's rows split between the warpgroups): 1.135-1.162x 15 at d = 64,
// dK and dV still v9's bits, the four tools clean (producer-warpgroup/rung-19/). d = 128 has no
// Br = 128 form within the consumers' 240 registers. The other configurations: gpu/ladder/.
#include "gpu/bwd_ws_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcBwdVariantInfo bwd_wgmma_ladder_variant(int variant, int d);
void bwd_wgmma_ladder_launch(int variant, const TcBwdParams& p);
#endif

namespace {
//                         variant, D, Q_i / dO_i stages, dQ by the producer's warps, every consumer thread releases
using BwdD64 = WsBwdConfig<kBwdWgmmaVariant + 14, 64, 3, false, true, false, false, 128>;  // 19
using BwdD128 = WsBwdConfig<kBwdWgmmaVariant + 10, 128, 3, false, true>;  // 15
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
