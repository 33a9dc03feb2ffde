// FlashAttention-2 forward on tensor cores with mma.sync (m16n8k16): the default on GPUs other
// than compute capability 9.0 (configuration 11 of the ladder), and the one place that maps a
// configuration number to its kernel for the whole tensor-core forward: 11 here, the Hopper
// defaults in gpu/fa3_forward.cu, every other rung in gpu/ladder/ (built with
// -DFLASHSTEP_LADDER=ON). The kernel template and its traits: gpu/fa2_tc_kernel.cuh.
//
// Configuration 11: d = 64, 4 warps x 32 rows (Br = 128), Bc = 64; d = 128, 8 warps x 16 rows
// (Br = 128), Bc = 64, the O_i rescale skipped when no row max of the warp moved. Both: Q_i in
// registers, two K/V buffers by cp.async, one barrier per j, and the causal grid laid out
// (head, Q block) so that every head's longest Q block runs first. The fastest mma.sync
// configuration on the H200 (gpu/results/tensor-core-forward/cli_run2.txt: variants 11 and 12).
#include "gpu/fa2_tc_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcVariantInfo fa2_tc_ladder_variant(int variant, int d);
void fa2_tc_ladder_launch(int variant, const TcParams& p);
#if defined(FLASHSTEP_HAVE_WGMMA)
TcVariantInfo fa2_wgmma_variant(int variant, int d);
void fa2_wgmma_launch(int variant, const TcParams& p);
#endif
#endif

namespace {

//                        D, warps, MT, Bc, stages, tweaks[, blocks per SM]
const Entry kDefaults[] = {
    entry<11, Config<64, 4, 2, 64, 2, kQInRegisters | kOneBarrier | kLongestFirst>>("v7, causal grid longest-first over all heads"),
    entry<11, Config<128, 8, 1, 64, 2, kQInRegisters | kOneBarrier | kLazyRescale | kLongestFirst>>("v9, causal grid longest-first over all heads"),
};

}  // namespace

int fa2_tc_variant_count() { return kLastLadderRung; }

bool tc_ladder_rung(int variant) {
  return (variant >= 1 && variant <= kLastLadderRung) || (variant >= 101 && variant <= 104);
}

TcVariantInfo fa2_tc_variant(int variant, int d) {
  for (const Entry& e : kDefaults)
    if (e.variant == variant && e.d == d)
      return TcVariantInfo{variant, e.what, e.Br, e.Bc, e.warps, e.stages, e.smem, true};
  TcVariantInfo info;
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (variant >= 15 && variant <= kLastLadderRung) return fa3_variant(variant, d);  // defaults, then the ladder's
#endif
#if defined(FLASHSTEP_LADDER)
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (variant == 13 || variant == 14) return fa2_wgmma_variant(variant, d);
#endif
  info = fa2_tc_ladder_variant(variant, d);
#endif
  info.variant = variant;
  return info;
}

void fa2_tc_launch(int variant, const TcParams& p) {
  for (const Entry& e : kDefaults)
    if (e.variant == variant && e.d == p.d) return e.launch(p);
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (variant >= 15 && variant <= kLastLadderRung) return fa3_launch(variant, p);
#endif
#if defined(FLASHSTEP_LADDER)
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (variant == 13 || variant == 14) return fa2_wgmma_launch(variant, p);
#endif
  return fa2_tc_ladder_launch(variant, p);
#else
  throw std::runtime_error("fa2_tc_launch: no kernel for variant " + std::to_string(variant) +
                           ", d = " + std::to_string(p.d));
#endif
}

}  // namespace flashstep::gpu::tc
