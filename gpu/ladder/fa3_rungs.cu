// The forward ladder's rungs 15-44 and 46-52 (45, at both d, is the default: gpu/fa3_forward.cu): FlashAttention-3's structure (arXiv 2407.08608,
// sections 3.1 and 3.2) on top of v14's wgmma products (gpu/fa2_wgmma.cu). sm_90a only.
//
//   15  Warp specialisation. Three warpgroups per block: warpgroup 0 is the producer, whose one
//       elected thread issues TMA copies (cp.async.bulk.tensor) of Q_i and of K_j, V_j into a
//       ring of STAGES shared-memory buffers; warpgroups 1 and 2 are consumers (64 rows of Q_i
//       each) that wait on "full" mbarriers and release each buffer on an "empty" mbarrier once
//       their products have read it. No block-wide barrier in the loop. setmaxnreg moves
//       registers from the producer (24) to the consumers (240).
//   16  v15 with ping-pong: the two consumers take turns on the tensor cores through two named
//       barriers, so that one's softmax runs while the other's products run. A turn is
//       (O_i += P~_i,j-1 V_j-1, S_ij = Q_i K_j^T), issued together, as in the paper's Figure 1.
//   17  v15 with the intra-warpgroup overlap (section 3.2): S_ij is issued first, as its own
//       wgmma group, then O_i += P~_i,j-1 V_j-1; the consumer waits for S_ij alone
//       (wgmma.wait_group 1) and runs the mask and the softmax of block j while the tensor cores
//       still work on P~_i,j-1 V_j-1; only the rescale of O_i and the new P~ fragments wait for it.
//   18  v17 persistent: a grid of one block per SM, each looping over (Q block, head) tiles
//       (next_tile: longest first when causal, odd rounds reversed). The producer runs ahead into
//       the next tile (Q_i once the consumers' last S of the tile is done: the "Q empty"
//       mbarrier), so a tile's first loads hide under the previous tile's last product and write.
//   19  v17 with 3 consumer warpgroups (Br = 192, FlashAttention-3's d = 64 tile): each K_j, V_j
//       serves 192 rows of Q_i, and three warpgroups' products and softmax interleave. 512
//       threads leave 128 registers at entry; setmaxnreg gives the consumers 160, which holds
//       O_i, S_ij and P~ at d = 64 with Bc = 128 and at d = 128 only with Bc = 64.
//   20  v17 with a longer Bc (FlashAttention-3's Hopper tiles): 176 at d = 128, 192 at d = 64.
//       Each K_j, V_j is one wgmma S_ij of N = Bc and Bc / 16 k-steps of O += P~ V: the
//       per-block costs (mbarrier waits, the softmax's row max and sum across the quad, the O_i
//       rescale, the waits on the products) are paid over 1.375x (1.5x) the MMA work. A
//       ragged last block (Nk not a multiple of Bc) is zero-filled by TMA past N and masked.
//   21  v18 (persistent) with v20's Bc.
//   22  v17 with v16's ping-pong: FlashAttention-3's own schedule at d <= 128, both techniques
//       at once. A turn on the tensor cores is (S_ij, O += P~_i,j-1 V_j-1), issued together, and
//       each consumer's softmax of block j runs under the other consumer's turn and its own PV.
//   23  v22 with the softmax's row max and row sum as 4 independent partial chains per row
//       (online_softmax_row's ILP): 8 dependent instructions instead of 32 (Bc 128) for warps
//       that, two to a scheduler, have little else to hide the latency of each.
//   24  v21 (persistent, long Bc) with v23's 4 chains.
//   25  v15 with v23's 4 chains.
//   26  v22 with v20's Bc (176 at d = 128: FlashAttention-3's forward tile and schedule).
//   27  v22 persistent; 28 v22 persistent with v20's Bc (v21 with ping-pong).
//   29  v19 (3 consumers, Br 192) persistent with ping-pong: the three take turns in a ring.
//   30  v22 with O += P~ V at d = 128 as one wgmma m64n128k16 per 16 keys over both 64-column
//       panels of V_j (the descriptor's leading offset steps from one panel to the next) instead
//       of two m64n64k16: half the instructions, and each A fragment of P~ read once.
//   31  v26 with v30's wide O += P~ V; 32 v19 with it.
//   33  a third K/V stage on each d's default (v21 at d = 64, v22 at d = 128): the producer two
//       blocks ahead instead of one.
//   34  v19 persistent without ping-pong (v29 without the turns, which cost d = 64 2-7% elsewhere).
//   35  v21 with every 8th exp2 of the softmax from a polynomial on the float32 pipes
//       (gpu/ladder/poly_exp2.h) instead of the special-function units: at d = 64 the 16 exp2 a clock
//       per SM take as long as the products (FlashAttention-4 moves part of them off on
//       Blackwell). 36 v22 with it, 37 v19 with it, 38 v21 with every 4th.
//   39  v21 with a still longer Bc: 224 at d = 64 (O_i 32 + S_ij 112 + P~ 56 registers), 192 at
//       d = 128 (64 + 96 + 48); the per-block costs over 1.17x (1.09x) v21's MMA work.
//   40  v21 with the two consumers staggered once: consumer 1 starts its first tile when
//       consumer 0 has finished the softmax of its first block (named barrier 5), so that their
//       softmaxes, which v21 runs at the same moment, fall in each other's products; no turns.
//   41  v30 with Bc 192 at d = 128; 42 v39 with v30's wide O += P~ V; 43 v34 with 3 K/V stages.
//   44  the defaults before 45 (v34 at d = 64, v42 at d = 128) with the causal tiles longest
//       first within groups of heads whose K and V fit in 16 MiB, not over all heads at once; 45
//       (the default) 44 with each group's rounds dealt alternately over the blocks
//       (gpu/tile_order.h).
//
// Each consumer's loop (FA2fwd, per 64 rows):
//   turn 0:    S_i0
//   turn j:    O += P~_i,j-1 V_j-1 (after the rescale by the softmax of j - 1), S_ij
//              (v17, v18: S_ij, then O += P~_i,j-1 V_j-1)
//   after j:   wait (v17: for S_ij); release K_j; softmax of block j (L9) in registers;
//              (v17: wait for O) release V_j-1; rescale O, P~_ij into A fragments
//   turn n:    O += P~_i,n-1 V_n-1
// The TMA tensor maps are 3-D (d, N, heads): rows past N of a head are zero-filled by the copy
// engine, never read from the next head; the masks then give those columns -inf, as in v13.
// The tensor maps come from the driver's cuTensorMapEncodeTiled, reached through the runtime's
// cudaGetDriverEntryPointByVersion: no -lcuda at link time, so a build without a GPU still links.
//
// Built only with -DFLASHSTEP_LADDER=ON (gpu/ladder/CMakeLists.txt). The kernel template is
// gpu/fa3_kernel.cuh, shared with the product's defaults; gpu/fa3_forward.cu asks this file for
// any other rung (fa3_ladder_variant, fa3_ladder_launch).
#include "gpu/fa3_kernel.cuh"
#include "gpu/ladder/rung_table.h"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

//                  variant, D, Bc, stages, flags
using V15d64 = Fa3Config<15, 64, 128, 2, 0>;
using V15d128 = Fa3Config<15, 128, 128, 2, 0>;
using V16d64 = Fa3Config<16, 64, 128, 2, kPingPong>;
using V16d128 = Fa3Config<16, 128, 128, 2, kPingPong>;
using V17d64 = Fa3Config<17, 64, 128, 2, kIntra>;
using V17d128 = Fa3Config<17, 128, 128, 2, kIntra>;
using V18d64 = Fa3Config<18, 64, 128, 2, kIntra | kPersistent>;
using V18d128 = Fa3Config<18, 128, 128, 2, kIntra | kPersistent>;
using V19d64 = Fa3Config<19, 64, 128, 2, kIntra, 3>;
using V19d128 = Fa3Config<19, 128, 64, 2, kIntra, 3>;  // Bc 64: O_i (64) + S_ij (32) + P~ (16) fit in 160
// The long-Bc rungs (FlashAttention-3's Hopper tiles, 128 x 176 at d = 128): registers a consumer
// thread holds across a block, O_i + S_ij + P~ = 32 + 96 + 48 = 176 at d = 64 with Bc 192, and
// 64 + 88 + 44 = 196 at d = 128 with Bc 176, within setmaxnreg's 240. Shared memory: Q_i 16 KiB +
// 2 stages x (K, V) of 24 KiB at d = 64; 32 KiB + 2 x 2 x 44 KiB = 208 KiB at d = 128.
using V20d64 = Fa3Config<20, 64, 192, 2, kIntra>;
using V20d128 = Fa3Config<20, 128, 176, 2, kIntra>;
using V21d64 = Fa3Config<21, 64, 192, 2, kIntra | kPersistent>;
using V21d128 = Fa3Config<21, 128, 176, 2, kIntra | kPersistent>;
using V22d64 = Fa3Config<22, 64, 128, 2, kIntra | kPingPong>;
using V22d128 = Fa3Config<22, 128, 128, 2, kIntra | kPingPong>;
using V23d64 = Fa3Config<23, 64, 128, 2, kIntra | kPingPong | kIlp>;
using V23d128 = Fa3Config<23, 128, 128, 2, kIntra | kPingPong | kIlp>;
using V24d64 = Fa3Config<24, 64, 192, 2, kIntra | kPersistent | kIlp>;
using V24d128 = Fa3Config<24, 128, 176, 2, kIntra | kPersistent | kIlp>;
using V25d64 = Fa3Config<25, 64, 128, 2, kIlp>;
using V25d128 = Fa3Config<25, 128, 128, 2, kIlp>;
using V26d64 = Fa3Config<26, 64, 192, 2, kIntra | kPingPong>;
using V26d128 = Fa3Config<26, 128, 176, 2, kIntra | kPingPong>;
using V27d64 = Fa3Config<27, 64, 128, 2, kIntra | kPingPong | kPersistent>;
using V27d128 = Fa3Config<27, 128, 128, 2, kIntra | kPingPong | kPersistent>;
using V28d64 = Fa3Config<28, 64, 192, 2, kIntra | kPingPong | kPersistent>;
using V28d128 = Fa3Config<28, 128, 176, 2, kIntra | kPingPong | kPersistent>;
using V29d64 = Fa3Config<29, 64, 128, 2, kIntra | kPingPong | kPersistent, 3>;
using V29d128 = Fa3Config<29, 128, 64, 2, kIntra | kPingPong | kPersistent, 3>;
// The wide O += P~ V changes only d = 128 (at d = 64 V_j is one panel): v30-v32 at d = 64 are
// v22, v26 and v19 again.
using V30d64 = Fa3Config<30, 64, 128, 2, kIntra | kPingPong | kWidePv>;
using V30d128 = Fa3Config<30, 128, 128, 2, kIntra | kPingPong | kWidePv>;
using V31d64 = Fa3Config<31, 64, 192, 2, kIntra | kPingPong | kWidePv>;
using V31d128 = Fa3Config<31, 128, 176, 2, kIntra | kPingPong | kWidePv>;
using V32d64 = Fa3Config<32, 64, 128, 2, kIntra | kWidePv, 3>;
using V32d128 = Fa3Config<32, 128, 64, 2, kIntra | kWidePv, 3>;
// Each d's default with a third K/V stage: at d = 64 v21 (16 KiB + 3 x 48 KiB); at d = 128 v22
// (32 KiB + 3 x 64 KiB = 224 KiB, under the 227 KiB an SM gives one block).
using V33d64 = Fa3Config<33, 64, 192, 3, kIntra | kPersistent>;
using V33d128 = Fa3Config<33, 128, 128, 3, kIntra | kPingPong>;
using V34d128 = Fa3Config<34, 128, 64, 2, kIntra | kPersistent, 3>;
// Part of the softmax's exp2 on the float32 pipes, on each d's defaults (v21, v22, v19).
using V35d64 = Fa3Config<35, 64, 192, 2, kIntra | kPersistent | kPoly8>;
using V35d128 = Fa3Config<35, 128, 176, 2, kIntra | kPersistent | kPoly8>;
using V36d64 = Fa3Config<36, 64, 128, 2, kIntra | kPingPong | kPoly8>;
using V36d128 = Fa3Config<36, 128, 128, 2, kIntra | kPingPong | kPoly8>;
using V37d64 = Fa3Config<37, 64, 128, 2, kIntra | kPoly8, 3>;
using V37d128 = Fa3Config<37, 128, 64, 2, kIntra | kPoly8, 3>;
using V38d64 = Fa3Config<38, 64, 192, 2, kIntra | kPersistent | kPoly4>;
using V38d128 = Fa3Config<38, 128, 176, 2, kIntra | kPersistent | kPoly4>;
using V39d64 = Fa3Config<39, 64, 224, 2, kIntra | kPersistent>;
using V39d128 = Fa3Config<39, 128, 192, 2, kIntra | kPersistent>;
using V40d64 = Fa3Config<40, 64, 192, 2, kIntra | kPersistent | kStagger>;
using V40d128 = Fa3Config<40, 128, 176, 2, kIntra | kPersistent | kStagger>;
// Each d's default with the softmax under O += P~ V (fa3 ladder run 9) and one more change: v41
// v30 with Bc 192 at d = 128 (O_i 64 + S_ij 96 + P~ 48 registers; at d = 64 v26 again), v42 v39
// (persistent, Bc 192 at d = 128) with v30's wide O += P~ V (at d = 64 v39 again), v43 v34 (three
// consumers, persistent) with a third K/V stage.
using V41d64 = Fa3Config<41, 64, 192, 2, kIntra | kPingPong>;
using V41d128 = Fa3Config<41, 128, 192, 2, kIntra | kPingPong | kWidePv>;
using V42d64 = Fa3Config<42, 64, 224, 2, kIntra | kPersistent>;
using V43d64 = Fa3Config<43, 64, 128, 3, kIntra | kPersistent, 3>;
using V43d128 = Fa3Config<43, 128, 64, 3, kIntra | kPersistent, 3>;
// v44: each d's default (v34, v42) with the causal tiles longest first within groups of heads
// (next_tile's HEAD_GROUPS); non-causal the defaults' order, and kernel.
using V44d64 = Fa3Config<44, 64, 128, 2, kIntra | kPersistent | kHeadGroups, 3>;
using V44d128 = Fa3Config<44, 128, 192, 2, kIntra | kPersistent | kWidePv | kHeadGroups>;
// v45: v44 with each group's rounds dealt alternately, the direction running on across groups
// (gpu/tile_order.h): 44's groups numbered one after another broke the alternation at every group
// boundary that fell inside a round.
// 45 is the default at both d (gpu/fa3_forward.cu); 34 (d = 64) and 42 (d = 128), the defaults
// before it, are rungs here.
using V34d64 = Fa3Config<34, 64, 128, 2, kIntra | kPersistent, 3>;
using V42d128 = Fa3Config<42, 128, 192, 2, kIntra | kPersistent | kWidePv>;
// v46-v48: 45 with K_j and V_j shared by the two blocks of a cluster (kPairKv, gpu/fa3_kernel.cuh).
//   46  A persistent grid of 2-block clusters whose blocks take neighbouring Q blocks of one head
//       (non-causal, an even number of Q blocks; 45 otherwise). Each block's producer loads half
//       the rows of K_j and of V_j and multicasts them by TMA into both blocks, so that L2 serves
//       each K/V block once per pair (the default read 1.38x cuDNN's L2 sectors at d = 128, 1.20x
//       at d = 64, with the same DRAM bytes). A stage is refilled when the consumers of both
//       blocks have released it: each consumer warp arrives on its own block's "empty" barrier
//       and on the other block's (release at cluster scope); each producer waits on its own
//       (acquire at cluster scope).
//   47  46 with those arrivals and waits at CTA scope (the remote arrival an mbarrier.arrive on a
//       shared::cluster address), to tell the cost of the cluster-scope fences.
//   48  47 without the multicast: each producer loads the whole of K_j and V_j into its own block,
//       the two blocks still refilling a stage only when both have released it.
// Measured: notes/tensor-cores.md, "K and V shared by a pair of blocks: rungs 46-48".
constexpr int kV45d64Flags = kIntra | kPersistent | kHeadGroups | kGroupRounds;
constexpr int kV45d128Flags = kIntra | kPersistent | kWidePv | kHeadGroups | kGroupRounds;
using V46d64 = Fa3Config<46, 64, 128, 2, kV45d64Flags | kPairKv, 3>;
using V46d128 = Fa3Config<46, 128, 192, 2, kV45d128Flags | kPairKv>;
using V47d64 = Fa3Config<47, 64, 128, 2, kV45d64Flags | kPairKv | kPairCta, 3>;
using V47d128 = Fa3Config<47, 128, 192, 2, kV45d128Flags | kPairKv | kPairCta>;
using V48d64 = Fa3Config<48, 64, 128, 2, kV45d64Flags | kPairKv | kPairCta | kPairNoMc, 3>;
using V48d128 = Fa3Config<48, 128, 192, 2, kV45d128Flags | kPairKv | kPairCta | kPairNoMc>;
// v49, v50: a third K/V stage, to hide 47's coupling (a stage is refilled only when the slower of
// the two blocks has released it).
//   49  47 with 3 K/V stages; at d = 128 Bc 128 so that three stages fit (224 KiB, as 45's two of
//       Bc 192).
//   50  45 with the same stages and Bc, unpaired: what the third stage and the shorter Bc are
//       worth without the cluster.
using V49d64 = Fa3Config<49, 64, 128, 3, kV45d64Flags | kPairKv | kPairCta, 3>;
using V49d128 = Fa3Config<49, 128, 128, 3, kV45d128Flags | kPairKv | kPairCta>;
using V50d64 = Fa3Config<50, 64, 128, 3, kV45d64Flags, 3>;
using V50d128 = Fa3Config<50, 128, 128, 3, kV45d128Flags>;
// v51, v52: the producer issues K_j, then V_j-1 (kKAhead), where 45 issues K_j, then V_j. K_j+2's
// copy then waits only for its own stage (S_ij done), not behind V_j+1's, which waits for V_j-1's
// release (O += P~_i,j-1 V_j-1 done, at the end of block j's softmax).
//   51  45 with that order.
//   52  47 (the pair, multicast, CTA scope) with that order: K_j+2's coupling point, the later
//       of the two blocks' S_ij, comes half a block before V_j+1's.
using V51d64 = Fa3Config<51, 64, 128, 2, kV45d64Flags | kKAhead, 3>;
using V51d128 = Fa3Config<51, 128, 192, 2, kV45d128Flags | kKAhead>;
using V52d64 = Fa3Config<52, 64, 128, 2, kV45d64Flags | kPairKv | kPairCta | kKAhead, 3>;
using V52d128 = Fa3Config<52, 128, 192, 2, kV45d128Flags | kPairKv | kPairCta | kKAhead>;

template <class C>
TcVariantInfo info_of(const char* what) {
  return TcVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::STAGES, C::SMEM, true, true};
}

// Each variant's kernel for d = 64 and d = 128, in one table for fa3_variant and fa3_launch.
using Fa3Entry = RungEntry<TcVariantInfo, TcParams>;
template <class C>
constexpr Fa3Entry entry(const char* what) {
  return Fa3Entry{C::VARIANT, C::D, what, &info_of<C>, &launch_fa3<C>};
}
const char* const kV15 = "TMA + producer warpgroup (mbarrier ring, setmaxnreg), 2 consumer warpgroups x 64 rows, Bc 128";
const char* const kV16 = "v15 with ping-pong of the two consumer warpgroups (named barriers)";
const char* const kV17 = "v15 with the intra-warpgroup overlap: softmax of S_ij while O += P~_i,j-1 V_j-1 runs";
const char* const kV18 = "v17 persistent: one block per SM over the tiles, longest first (causal), the producer a tile ahead";
const char* const kV19 = "v17 with 3 consumer warpgroups (Br 192, 160 registers each); Bc 128 at d = 64, 64 at d = 128";
const char* const kV20 = "v17 with a longer Bc: 192 at d = 64, 176 at d = 128 (FlashAttention-3's d = 128 tile, 128 x 176)";
const char* const kV21 = "v18 (persistent) with v20's Bc: 192 at d = 64, 176 at d = 128";
const char* const kV22 = "v17 with v16's ping-pong (FlashAttention-3's schedule at d <= 128)";
const char* const kV23 = "v22 with the softmax's row max and sum in 4 independent chains per row";
const char* const kV24 = "v21 (persistent, long Bc) with the softmax in 4 independent chains per row";
const char* const kV25 = "v15 with the softmax in 4 independent chains per row";
const char* const kV26 = "v22 with v20's Bc: 192 at d = 64, 176 at d = 128 (FlashAttention-3's d = 128 forward)";
const char* const kV27 = "v22 persistent (v18 with ping-pong)";
const char* const kV28 = "v22 persistent with v20's Bc (v21 with ping-pong)";
const char* const kV29 = "v19 (3 consumers, Br 192) persistent, the three taking turns on the tensor cores";
const char* const kV30 = "v22 with O += P~ V as one m64n128k16 per 16 keys at d = 128 (two m64n64k16 before)";
const char* const kV31 = "v26 (FlashAttention-3's d = 128 tile and schedule) with v30's wide O += P~ V";
const char* const kV32 = "v19 (3 consumers, Br 192) with v30's wide O += P~ V";
const char* const kV33 = "3 K/V stages on each d's default: v21 at d = 64, v22 at d = 128";
const char* const kV34 = "v19 (3 consumers, Br 192) persistent, without ping-pong (v29 without the turns)";
const char* const kV35 = "v21 with every 8th exp2 of the softmax from a polynomial on the float32 pipes";
const char* const kV36 = "v22 with every 8th exp2 of the softmax from a polynomial on the float32 pipes";
const char* const kV37 = "v19 (3 consumers) with every 8th exp2 of the softmax from a polynomial on the float32 pipes";
const char* const kV38 = "v21 with every 4th exp2 of the softmax from a polynomial on the float32 pipes";
const char* const kV39 = "v21 with a longer Bc: 224 at d = 64, 192 at d = 128";
const char* const kV40 = "v21 with consumer 1 started one softmax after consumer 0 (once, no turns)";
const char* const kV41 = "v30 (FlashAttention-3's schedule, wide O += P~ V) with Bc 192 at d = 128 (at d = 64 v26)";
const char* const kV42 = "v39 (persistent, Bc 192 at d = 128) with v30's wide O += P~ V (at d = 64 v39)";
const char* const kV43 = "v34 (3 consumers, Br 192, persistent) with a third K/V stage";
const char* const kV44 = "the defaults before 45 (v34, v42) with the causal tiles longest first within groups of heads whose K and V "
                         "fit in 16 MiB (the L2 keeps what the blocks at work read)";
const char* const kV46 = "45 with K_j, V_j multicast by TMA into both blocks of a 2-block cluster (non-causal, even Tr)";
const char* const kV47 = "46 with the cross-block arrivals and waits at CTA scope";
const char* const kV48 = "47 without the multicast: each block loads all of K_j, V_j; stages refilled in step";
const char* const kV49 = "47 with a third K/V stage (Bc 128 at d = 128)";
const char* const kV50 = "45 with a third K/V stage (Bc 128 at d = 128), unpaired";
const char* const kV51 = "45 with the producer issuing K_j, then V_j-1 (45: K_j, then V_j)";
const char* const kV52 = "47 (the pair) with 51's order of the copies";
const Fa3Entry kFa3[] = {
    entry<V15d64>(kV15), entry<V15d128>(kV15), entry<V16d64>(kV16), entry<V16d128>(kV16),
    entry<V17d64>(kV17), entry<V17d128>(kV17), entry<V18d64>(kV18), entry<V18d128>(kV18),
    entry<V19d64>(kV19), entry<V19d128>(kV19), entry<V20d64>(kV20), entry<V20d128>(kV20),
    entry<V21d64>(kV21), entry<V21d128>(kV21), entry<V22d64>(kV22), entry<V22d128>(kV22),
    entry<V23d64>(kV23), entry<V23d128>(kV23), entry<V24d64>(kV24), entry<V24d128>(kV24),
    entry<V25d64>(kV25), entry<V25d128>(kV25), entry<V26d64>(kV26), entry<V26d128>(kV26),
    entry<V27d64>(kV27), entry<V27d128>(kV27), entry<V28d64>(kV28), entry<V28d128>(kV28),
    entry<V29d64>(kV29), entry<V29d128>(kV29), entry<V30d64>(kV30), entry<V30d128>(kV30),
    entry<V31d64>(kV31), entry<V31d128>(kV31), entry<V32d64>(kV32), entry<V32d128>(kV32),
    entry<V33d64>(kV33), entry<V33d128>(kV33), entry<V34d64>(kV34), entry<V34d128>(kV34),
    entry<V35d64>(kV35), entry<V35d128>(kV35), entry<V36d64>(kV36), entry<V36d128>(kV36),
    entry<V37d64>(kV37), entry<V37d128>(kV37), entry<V38d64>(kV38), entry<V38d128>(kV38),
    entry<V39d64>(kV39), entry<V39d128>(kV39), entry<V40d64>(kV40), entry<V40d128>(kV40),
    entry<V41d64>(kV41), entry<V41d128>(kV41), entry<V42d64>(kV42), entry<V42d128>(kV42),
    entry<V43d64>(kV43), entry<V43d128>(kV43), entry<V44d64>(kV44), entry<V44d128>(kV44),
    entry<V46d64>(kV46), entry<V46d128>(kV46), entry<V47d64>(kV47), entry<V47d128>(kV47),
    entry<V48d64>(kV48), entry<V48d128>(kV48), entry<V49d64>(kV49), entry<V49d128>(kV49),
    entry<V50d64>(kV50), entry<V50d128>(kV50), entry<V51d64>(kV51), entry<V51d128>(kV51),
    entry<V52d64>(kV52), entry<V52d128>(kV52),
};

}  // namespace

TcVariantInfo fa3_ladder_variant(int variant, int d) {
  const Fa3Entry* e = find_rung(kFa3, variant, d);
  return e ? e->info(e->what) : TcVariantInfo{};
}

void fa3_ladder_launch(int variant, const TcParams& p) {
  if (const Fa3Entry* e = find_rung(kFa3, variant, p.d)) return e->launch(p);
  throw std::runtime_error("fa3_ladder_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.d));
}

}  // namespace flashstep::gpu::tc
