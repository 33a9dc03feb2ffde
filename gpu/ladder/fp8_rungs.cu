// The FP8 forward's ladder rungs (gpu/fp8_kernel.cuh's Fp8Config), each measured against the
// default of its d (gpu/fp8_forward.cu: Br 192 / Bc 128 at d = 64, Br 128 / Bc 128 at d = 128) in
// gpu/ladder/notes/tensor-cores.md:
//   1: the default with the softmax's row max and sum in four independent chains (d = 64, 128);
//   2: d = 128 with Bc = 192 (S_ij on m64n192k32, V_j^T in two panels of 128 and 64 keys);
//   3: 2 with the four chains.
// Built only with -DFLASHSTEP_LADDER=ON; the per-block scales follow each rung's own Br and Bc.
#include "gpu/fp8_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {
using R1d64 = Fp8Config<64, 2, 3, 128, 4>;
using R1d128 = Fp8Config<128, 2, 2, 128, 4>;
using R2d128 = Fp8Config<128, 2, 2, 192, 1>;
using R3d128 = Fp8Config<128, 2, 2, 192, 4>;
}  // namespace

Fp8TileInfo fp8_ladder_tile_info(int d, int variant) {
  if (variant == 1 && d == 64)
    return fp8_info_of<R1d64>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, persistent; rung 1: row max and sum in four chains");
  if (variant == 1 && d == 128)
    return fp8_info_of<R1d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 1: row max and sum in four chains");
  if (variant == 2 && d == 128)
    return fp8_info_of<R2d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192 (V^T in panels of 128 and 64 keys), persistent; rung 2");
  if (variant == 3 && d == 128)
    return fp8_info_of<R3d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 3: rung 2 with four chains");
  return Fp8TileInfo{};
}

void fp8_ladder_launch(const Fp8Params& p) {
  const int d = p.base.d, v = p.variant;
  if (v == 1 && d == 64) return launch_fp8<R1d64>(p);
  if (v == 1 && d == 128) return launch_fp8<R1d128>(p);
  if (v == 2 && d == 128) return launch_fp8<R2d128>(p);
  if (v == 3 && d == 128) return launch_fp8<R3d128>(p);
  throw std::runtime_error("fp8_ladder_launch: no FP8 rung " + std::to_string(v) + " for d = " + std::to_string(d));
}

}  // namespace flashstep::gpu::tc
