// The backward's default on Hopper (compute capability 9.0, sm_90a): FlashAttention-2's backward
// on warpgroup MMA (gpu/fa2_bwd_wgmma_kernel.cuh) with the traits that measured fastest on the
// H200, at d = 64 and 128, causal or not: two warpgroups x 64 keys (Bc = 128), Br = 64, all five
// products on wgmma from shared-memory descriptors, dQ_i added to HBM with red.global.add.v4.f32,
// and the grid's K/V blocks fastest so that the blocks at work at once share one head's Q_i,
// dO_i and dQ_i in L2 (FlashAttention-2's grid order). gpu/results/tensor-core-backward/
// grid-order/run1_summary.txt: 1.04x to 1.20x the same kernel in the heads-first order at the 8
// target points; the rotated Q-block loop within 1% (the simpler kept). Rejected: dQ's product
// on mma.sync, dQ added by the bulk copy engine, the warpgroups apart at d = 64
// (tensor-core-backward/wgmma/ and dq-writer/). At d = 128 the default is configuration 12, the
// same kernel with each buffer's matrix descriptor built once and every wgmma's formed from it by
// one add (WgBwdDescOnce): 1.033x to 1.041x configuration 9 in three alternating rounds at the four
// d = 128 target points, dK and dV bit for bit the same (tensor-core-backward/desc-once/ and
// desc-once-rounds/); at d = 64 it measured 0.99x, and 9 stays. The other configurations:
// gpu/ladder/.
#include "gpu/fa2_bwd_wgmma_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcBwdVariantInfo bwd_wgmma_ladder_variant(int variant, int d);
void bwd_wgmma_ladder_launch(int variant, const TcBwdParams& p);
#endif

namespace {
//                        variant, D, dQ on mma.sync, dQ by the bulk copy engine, warpgroups apart, grid order
using BwdD64 = WgBwdConfig<kBwdWgmmaVariant + 4, 64, false, false, false, 1>;                   // 9
using BwdD128 = WgBwdDescOnce<WgBwdConfig<kBwdWgmmaVariant + 7, 128, false, false, false, 1>>;  // 12
}  // namespace

int bwd_config_sm90(int d) { return d == 64 ? BwdD64::VARIANT : d == 128 ? BwdD128::VARIANT : 0; }

TcBwdVariantInfo fa2_bwd_wgmma_variant(int variant, int d) {
  if (variant == BwdD64::VARIANT && d == 64) return info_of<BwdD64>();
  if (variant == BwdD128::VARIANT && d == 128) return info_of<BwdD128>();
#if defined(FLASHSTEP_LADDER)
  return bwd_wgmma_ladder_variant(variant, d);
#else
  return TcBwdVariantInfo{};
#endif
}

void fa2_bwd_wgmma_launch(int variant, const TcBwdParams& p) {
  if (variant == BwdD64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<BwdD64>(p);
  if (variant == BwdD128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<BwdD128>(p);
#if defined(FLASHSTEP_LADDER)
  return bwd_wgmma_ladder_launch(variant, p);
#else
  throw std::runtime_error("fa2_bwd_wgmma_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.fwd.d));
#endif
}

}  // namespace flashstep::gpu::tc
