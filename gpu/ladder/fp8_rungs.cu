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
//       registers fit where Bc = 128's 208 did not), 3 stages;
//   16: the d = 128 default (Bc = 192) with 3 K/V stages (160 KiB of shared memory), the producer
//       two blocks ahead; 17: the d = 64 default with 3 stages;
//   18: d = 128 with Bc = 224 and 19: d = 64 with Bc = 160, FlashAttention-3's FP8 tiles (V_j^T's
//       last 32 keys a panel of 32-byte rows, 32B swizzle).
//   20: the d = 128 default and 21: the d = 64 default with the producer issuing K_j, then V_j-1
//       (K_AHEAD; the bf16 ladder's rungs 51, 52), so that K_j+2 waits only for S_ij.
// Built only with -DFLASHSTEP_LADDER=ON; the per-block scales follow each rung's own Br and Bc.
#include "gpu/fp8_kernel.cuh"
#include "gpu/ladder/rung_table.h"

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
using R16d128 = Fp8Config<128, 3, 2, 192>;
using R17d64 = Fp8Config<64, 3, 3>;
using R18d128 = Fp8Config<128, 2, 2, 224>;  // FlashAttention-3's FP8 blocks at d = 128: 128 x 224
using R19d64 = Fp8Config<64, 2, 3, 160>;    // ... and at d = 64: 192 x 160
using R20d128 = Fp8Config<128, 2, 2, 192, 1, false, 0, false, false, true>;  // the d = 128 default, K_j before V_j-1
using R21d64 = Fp8Config<64, 2, 3, 128, 1, false, 0, false, false, true>;     // the d = 64 default, likewise

// Each rung's kernel and tiles, in one table for fp8_ladder_tile_info and fp8_ladder_launch; which
// (rung, d) pairs exist is also stated in gpu/tc_launch.h's fp8_ladder_rung (for builds without the
// ladder), and the static_assert below holds the two to the same list.
using Fp8Rung = RungEntry<Fp8TileInfo, Fp8Params>;
template <class C>
constexpr Fp8Rung rung(int variant, const char* what) {
  return Fp8Rung{variant, C::D, what, &fp8_info_of<C>, &launch_fp8<C>};
}
constexpr Fp8Rung kFp8Rungs[] = {
    rung<R1d64>(1, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, persistent; rung 1: row max and sum in four chains"),
    rung<R1d128>(1, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 1: row max and sum in four chains"),
    rung<R2d128>(2, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192 (V^T in panels of 128 and 64 keys), persistent; rung 2"),
    rung<R3d128>(3, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 3: rung 2 with four chains"),
    rung<R4d128>(4, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 4: the consumers take turns issuing (ping-pong)"),
    rung<R5d128>(5, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 5: rung 2 with ping-pong"),
    rung<R6d64>(6, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, persistent; rung 6: every 8th exp2 by a polynomial"),
    rung<R7d128>(7, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 7: rung 2 with every 8th exp2 by a polynomial"),
    rung<R8d64>(8, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, 3 stages, persistent; rung 8: S one block ahead of the softmax"),
    rung<R9d64>(9, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 9: 8's control, S not ahead"),
    rung<R10d128>(10, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 10: descriptors built once"),
    rung<R11d128>(11, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 11: rung 2 with descriptors built once"),
    rung<R12d128>(12, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 64, persistent; rung 12"),
    rung<R13d128>(13, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 64, 4 stages, persistent; rung 13"),
    rung<R14d128>(14, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, persistent; rung 14: the default before Bc 192"),
    rung<R15d128>(15, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 64, 3 stages, persistent; rung 15: S one block ahead of the softmax"),
    rung<R16d128>(16, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, 3 stages, persistent; rung 16: the default with a third K/V stage"),
    rung<R17d64>(17, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, 3 stages, persistent; rung 17: the default with a third K/V stage"),
    rung<R18d128>(18, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 224 (V^T in panels of 128, 64 and 32 keys), persistent; rung 18"),
    rung<R19d64>(19, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 160 (V^T in panels of 128 and 32 keys), persistent; rung 19"),
    rung<R20d128>(20, "e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 192, persistent; rung 20: the default with K_j issued before V_j-1"),
    rung<R21d64>(21, "e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, persistent; rung 21: the default with K_j issued before V_j-1"),
};
constexpr bool rungs_match_fp8_ladder_rung() {
  int listed = 0;
  for (const Fp8Rung& r : kFp8Rungs) {
    if (!fp8_ladder_rung(r.d, r.variant)) return false;
    for (const Fp8Rung& o : kFp8Rungs)
      if (&o != &r && o.variant == r.variant && o.d == r.d) return false;
    ++listed;
  }
  int named = 0;
  for (int v = 1; v <= kFp8LadderLast; ++v) named += fp8_ladder_rung(64, v) + fp8_ladder_rung(128, v);
  return listed == named;
}
static_assert(rungs_match_fp8_ladder_rung(), "the table lists exactly the (rung, d) pairs fp8_ladder_rung names");
}  // namespace

Fp8TileInfo fp8_ladder_tile_info(int d, int variant) {
  const Fp8Rung* r = find_rung(kFp8Rungs, variant, d);
  return r ? r->info(r->what) : Fp8TileInfo{};
}

void fp8_ladder_launch(const Fp8Params& p) {
  const int d = p.base.d, v = p.variant;
  if (const Fp8Rung* r = find_rung(kFp8Rungs, v, d)) return r->launch(p);
  throw std::runtime_error("fp8_ladder_launch: no FP8 rung " + std::to_string(v) + " for d = " + std::to_string(d));
}

}  // namespace flashstep::gpu::tc
