// The forward's default kernels on Hopper (compute capability 9.0, sm_90a): FlashAttention-3's
// structure (gpu/fa3_kernel.cuh) in the two configurations that measured fastest on the H200,
// one per head dimension, and the one function that chooses between them (fwd_config_sm90).
// Every other configuration the ladder tried is in gpu/ladder/fa3_rungs.cu (built with
// -DFLASHSTEP_LADDER=ON); its measurements are in gpu/results/fa3_ladder/.
#include "gpu/fa3_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

#if defined(FLASHSTEP_LADDER)
TcVariantInfo fa3_ladder_variant(int variant, int d);
void fa3_ladder_launch(int variant, const TcParams& p);
#endif

namespace {

// The traits of each default, in FlashAttention-3's terms. The first template argument is the
// configuration's number in the ladder (what `verify` and `bench-gpu` print as "variant").
//
// d = 64: a TMA producer warpgroup and three consumer warpgroups (Br = 192, 160 registers a
// thread), Bc = 128, two K/V stages, the softmax under O += P~ V (intra-warpgroup overlap), a
// persistent grid, no ping-pong. gpu/results/fa3_ladder/run10/summary.txt (bf16, TFLOP/s,
// N = 4096 / 16384): 448 / 484 non-causal, 399 / 499 causal; two consumers with Bc 192 or 224
// (the d = 128 choice) 433 / 465 and 367 / 449; three consumers not persistent within 1% at
// N = 16384 non-causal, 1-3% behind elsewhere.
using FwdD64 = Fa3Config<45, 64, 128, 2, kIntra | kPersistent | kHeadGroups | kGroupRounds, 3>;
// d = 128: a TMA producer and two consumer warpgroups (Br = 128, 240 registers), Bc = 192, two
// K/V stages, the softmax under O += P~ V, a persistent grid, O += P~ V as one m64n128k16 per
// 16 keys (wide PV). Same file: 651 / 651 TFLOP/s non-causal; FlashAttention-3's own schedule
// (ping-pong, Bc 128, wide PV) 627 / 618, with Bc 176 580 / 621; ping-pong with Bc 192 651 / 652.
// Rejected at d = 128: three consumers (160 registers hold O_i, S_ij and P~ only with Bc = 64:
// 524 / 557), and the same with a third K/V stage (517 / 542).
using FwdD128 = Fa3Config<45, 128, 192, 2, kIntra | kPersistent | kWidePv | kHeadGroups | kGroupRounds>;
// Both d, causal: the tiles longest first within groups of heads whose K and V fit in 16 MiB of
// L2, each group's rounds dealt alternately over the blocks (gpu/tile_order.h; ladder rung 45,
// built on 34 at d = 64 and 42 at d = 128, which are ladder rungs now). Over all heads at once the
// blocks at work read 132 heads' K and V, more than L2 holds: at 256 heads of 4096 or 16384 keys
// 45 is 1.12-1.29x 34 / 42 (0.99-1.07x cuDNN), at the forward's own points (8 or 32 heads)
// 0.99-1.04x (gpu/results/fa3_rungs/head-groups/). Non-causal the order, and the kernel's work, are
// those of 34 and 42.

template <class C>
TcVariantInfo info_of(const char* what) {
  return TcVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::STAGES, C::SMEM, true, true};
}
const char* const kWhatD64 =
    "TMA producer + 3 consumer warpgroups (Br 192), Bc 128, softmax under O += P~ V, persistent, causal tiles by head groups";
const char* const kWhatD128 =
    "TMA producer + 2 consumer warpgroups (Br 128), Bc 192, softmax under O += P~ V, persistent, wide PV, causal tiles by "
    "head groups";

}  // namespace

// FlashAttention-3's tile_size_fwd_sm90 for this project: (d, causal) -> the configuration. The
// same kernel wins causal and not at each d (the persistent grid takes causal tiles longest
// first within groups of heads), and bf16 and fp16 share it (the type changes no tile).
int fwd_config_sm90(int d, bool causal) {
  (void)causal;
  if (d == 64) return FwdD64::VARIANT;
  if (d == 128) return FwdD128::VARIANT;
  return 0;  // no Hopper kernel for this d: the caller falls back to mma.sync
}

TcVariantInfo fa3_variant(int variant, int d) {
  if (variant == FwdD64::VARIANT && d == 64) return info_of<FwdD64>(kWhatD64);
  if (variant == FwdD128::VARIANT && d == 128) return info_of<FwdD128>(kWhatD128);
#if defined(FLASHSTEP_LADDER)
  return fa3_ladder_variant(variant, d);
#else
  return TcVariantInfo{};
#endif
}

void fa3_launch(int variant, const TcParams& p) {
  if (variant == FwdD64::VARIANT && p.d == 64) return launch_fa3<FwdD64>(p);
  if (variant == FwdD128::VARIANT && p.d == 128) return launch_fa3<FwdD128>(p);
#if defined(FLASHSTEP_LADDER)
  return fa3_ladder_launch(variant, p);
#else
  throw std::runtime_error("fa3_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.d));
#endif
}

}  // namespace flashstep::gpu::tc
