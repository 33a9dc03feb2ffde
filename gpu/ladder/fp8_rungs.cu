// The FP8 forward's ladder rungs (gpu/fp8_kernel.cuh's Fp8Config), each measured against the
// default of its d in gpu/ladder/notes/tensor-cores.md (gpu/fp8_forward.cu: Br 192 / Bc 128 at
// d = 64; at d = 128 Br 128 / Bc 128 when rungs 1-13 were measured, Bc 192 since, rung 2's
// configuration, and the former default is rung 14):
//   1: the default with the softmax's row max and sum in four independent chains (d = 64, 128);
//   2: d = 128 with Bc = 192 (S_ij on m64n192k32, V_j^T in two panels of 128 and 64 keys);
//   3: 2 with the four chains;
//   4: d = 128 with the consumers taking turns issuing their products (ping-pong, named barriers);
//   5: 2 with the turns;
//   6: d = 64 with every 8th exp2 by the polynomial on the FMA pipe (gpu/ladder/poly_exp2.h);
//   7: 2 with every 8th exp2 by the polynomial;
//   8: d = 64 with two consumer warpgroups (Br 128) and S_i,j+1 issued before the softmax of
//      block j (a second S accumulator), 3 stages;
//   9: d = 64 with two consumer warpgroups (Br 128), as the default otherwise: 8's control;
//   10: d = 128 with every wgmma's descriptor one add from a base built once;
//   11: 2 (Bc = 192) with the same;
//   12: d = 128 on three consumer warpgroups (Br 192) with Bc = 64 (S 32 registers, so that all
//       fits in 160), 2 stages; 13: 12 with 4 stages;
//   14: d = 128 with Bc = 128, the default until rung 2 replaced it;
//   15: d = 128 on two consumers at Bc = 64 with S one block ahead (8's schedule; 64 + 64 + 64 + 8
//       registers fit where Bc = 128's 208 did not), 3 stages.
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
using R4d128 = Fp8Config<128, 2, 2, 128, 1, true>;
using R5d128 = Fp8Config<128, 2, 2, 192, 1, true>;
using R6d64 = Fp8Config<64, 2, 3, 128, 1, false, 8>;
using R7d128 = Fp8Config<128, 2, 2, 192, 1, false, 8>;
using R8d64 = Fp8Config<64, 3, 2, 128, 1, false, 0, true>;
using R9d64 = Fp8Config<64, 2, 2, 128>;
using R10d128 = Fp8Config<128, 2, 2, 128, 1, false, 0, false, true>;
using R11d128 = Fp8Config<128, 2, 2, 192, 1, false, 0, false, true>;
using R12d128 = Fp8Config<128, 2, 3, 64>;
using R13d128 = Fp8Config<128, 4, 3, 64>;
using R14d128 = Fp8Config<128, 2, 2, 128>;
using R15d128 = Fp8Config<128, 3, 2, 64, 1, false, 0, true>;
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
  if (variant == 4 && d == 128)
    return fp8_info_of<R4d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 4: the consumers take turns issuing (ping-pong)");
  if (variant == 5 && d == 128)
    return fp8_info_of<R5d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 5: rung 2 with ping-pong");
  if (variant == 6 && d == 64)
    return fp8_info_of<R6d64>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, persistent; rung 6: every 8th exp2 by a polynomial");
  if (variant == 7 && d == 128)
    return fp8_info_of<R7d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 7: rung 2 with every 8th exp2 by a polynomial");
  if (variant == 8 && d == 64)
    return fp8_info_of<R8d64>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, 3 stages, persistent; rung 8: S one block ahead of the softmax");
  if (variant == 9 && d == 64)
    return fp8_info_of<R9d64>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 9: 8's control, S not ahead");
  if (variant == 10 && d == 128)
    return fp8_info_of<R10d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 10: descriptors built once");
  if (variant == 11 && d == 128)
    return fp8_info_of<R11d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 11: rung 2 with descriptors built once");
  if (variant == 12 && d == 128)
    return fp8_info_of<R12d128>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 64, persistent; rung 12");
  if (variant == 13 && d == 128)
    return fp8_info_of<R13d128>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 64, 4 stages, persistent; rung 13");
  if (variant == 14 && d == 128)
    return fp8_info_of<R14d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 14: the default before Bc 192");
  if (variant == 15 && d == 128)
    return fp8_info_of<R15d128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 64, 3 stages, persistent; rung 15: S one block ahead of the softmax");
  return Fp8TileInfo{};
}

void fp8_ladder_launch(const Fp8Params& p) {
  const int d = p.base.d, v = p.variant;
  if (v == 1 && d == 64) return launch_fp8<R1d64>(p);
  if (v == 1 && d == 128) return launch_fp8<R1d128>(p);
  if (v == 2 && d == 128) return launch_fp8<R2d128>(p);
  if (v == 3 && d == 128) return launch_fp8<R3d128>(p);
  if (v == 4 && d == 128) return launch_fp8<R4d128>(p);
  if (v == 5 && d == 128) return launch_fp8<R5d128>(p);
  if (v == 6 && d == 64) return launch_fp8<R6d64>(p);
  if (v == 7 && d == 128) return launch_fp8<R7d128>(p);
  if (v == 8 && d == 64) return launch_fp8<R8d64>(p);
  if (v == 9 && d == 64) return launch_fp8<R9d64>(p);
  if (v == 10 && d == 128) return launch_fp8<R10d128>(p);
  if (v == 11 && d == 128) return launch_fp8<R11d128>(p);
  if (v == 12 && d == 128) return launch_fp8<R12d128>(p);
  if (v == 13 && d == 128) return launch_fp8<R13d128>(p);
  if (v == 14 && d == 128) return launch_fp8<R14d128>(p);
  if (v == 15 && d == 128) return launch_fp8<R15d128>(p);
  throw std::runtime_error("fp8_ladder_launch: no FP8 rung " + std::to_string(v) + " for d = " + std::to_string(d));
}

}  // namespace flashstep::gpu::tc
