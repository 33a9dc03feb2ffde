// The FP8 forward's kernels on Hopper (sm_90a): gpu/fp8_kernel.cuh at d = 64 and d = 128, one
// configuration each, and the host's view of their tiles (fp8_tile_info). Causal, key lengths and
// the scale mode (per tensor or per block) are run-time switches of the same kernel.
#include "gpu/fp8_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

// Both: the bf16 default's pipeline (a TMA producer warpgroup, the softmax under O += P~ V, a
// persistent grid) with two K/V stages; the consumers as the bf16 defaults (gpu/fa3_forward.cu):
// three at d = 64 (Br = 192, 160 registers), two at d = 128 (Br = 128, 240). Keys per block: at
// d = 64 Bc = 128 (one 128-byte row of V^T per column of d; S_ij 64, O_i 32, P~ 16 registers
// within 160); at d = 128 Bc = 192, FlashAttention-3's longer FP8 block (V^T in panels of 128 and
// 64 keys; S_ij 96, O_i 64, P~ 24 registers), the ladder's rung 2, which measured 1.2-4.3% faster
// than Bc = 128 at all 12 points of three device calls (gpu/ladder/notes/tensor-cores.md). ptxas:
// 128 and 168 registers at compile time (before setmaxnreg), no spills.
using Fp8D64 = Fp8Config<64, 2, 3>;
using Fp8D128 = Fp8Config<128, 2, 2, 192>;

}  // namespace

Fp8TileInfo fp8_tile_info(int d, int variant) {
  if (variant != 0) {
#if defined(FLASHSTEP_LADDER)
    return fp8_ladder_tile_info(d, variant);
#else
    return Fp8TileInfo{};
#endif
  }
  if (d == 64) return fp8_info_of<Fp8D64>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, softmax under O += P~ V, persistent");
  if (d == 128) return fp8_info_of<Fp8D128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192 (V^T in panels of 128 and 64 keys), softmax under O += P~ V, persistent");
  return Fp8TileInfo{};
}

void fp8_launch(const Fp8Params& p) {
  if (p.variant != 0) {
#if defined(FLASHSTEP_LADDER)
    return fp8_ladder_launch(p);
#else
    throw std::runtime_error("fp8_launch: variant " + std::to_string(p.variant) + " is the ladder's");
#endif
  }
  if (p.base.d == 64) return launch_fp8<Fp8D64>(p);
  if (p.base.d == 128) return launch_fp8<Fp8D128>(p);
  throw std::runtime_error("fp8_launch: no FP8 kernel for d = " + std::to_string(p.base.d));
}

}  // namespace flashstep::gpu::tc
