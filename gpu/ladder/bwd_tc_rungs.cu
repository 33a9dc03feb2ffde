// The backward ladder's mma.sync rungs other than the default (configuration 2, gpu/fa2_bwd_tc.cu):
// 1 (4 warps, Bc 64), 3 (d = 64: Br 128), 4 (2 with dQ's atomics 4 floats wide). Built only with
// -DFLASHSTEP_LADDER=ON; the kernel template: gpu/fa2_bwd_tc_kernel.cuh.
#include "gpu/fa2_bwd_tc_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

//                           D, warps, Br, K/V fragments in registers
const Entry kLadder[] = {
    entry<1, BwdConfig<64, 4, 64, true>>("4 warps x 16 keys (Bc 64), Br 64, K/V fragments in registers"),
    entry<1, BwdConfig<128, 4, 64, false>>("4 warps x 16 keys (Bc 64), Br 64, K/V fragments from smem"),
    entry<3, BwdConfig<64, 8, 128, false>>("8 warps x 16 keys (Bc 128), Br 128, K/V fragments from smem"),
    entry<4, BwdConfig<64, 8, 64, true, true>>("v2 with dQ's atomics 4 floats wide"),
    entry<4, BwdConfig<128, 8, 64, false, true>>("v2 with dQ's atomics 4 floats wide"),
};

}  // namespace

TcBwdVariantInfo bwd_tc_ladder_variant(int variant, int d) {
  for (const Entry& e : kLadder)
    if (e.variant == variant && e.d == d) return TcBwdVariantInfo{variant, e.what, e.Br, e.Bc, e.warps, e.smem, true};
  return TcBwdVariantInfo{};
}

void bwd_tc_ladder_launch(int variant, const TcBwdParams& p) {
  for (const Entry& e : kLadder)
    if (e.variant == variant && e.d == p.fwd.d) return e.launch(p);
  throw std::runtime_error("bwd_tc_ladder_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.fwd.d));
}

}  // namespace flashstep::gpu::tc
