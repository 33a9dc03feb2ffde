// FlashAttention-2's backward on warpgroup MMA with FlashAttention-3's warp specialisation: the
// Hopper default (configuration 26 at d = 64, 46 at d = 128, gpu/fa2_bwd_wgmma.cu) and the ladder's
// configurations 13-25, 27 and 28 (gpu/ladder/bwd_wgmma_rungs.cu; 20-27 are 19 and 15 with their
// products overlapped, dS^T stored by stmatrix, the statistics read by float4, dQ added by the
// bulk copy engine: OVERLAP, STMATRIX, STATS_PERM, DQ_BULK below; 25 is 15 with stmatrix and the
// bulk add, 26 is 19 with both; 28 is 25 with the next Q block's S^T issued under this block's dQ
// product: S_AHEAD; 29 is 28 with dV's and dK's products one wgmma wide: WIDE_KV). 19 is 15 with
// Br = 128 (BR_, FlashAttention-3's tiles at d = 64): S^T and dP^T on m64n128, dV and dK over 8 k
// steps per Q block, dS^T in two 64-query panels, and dQ_i's 128 rows split between the consumer
// warpgroups (64 rows each over all 128 keys: DQ_ROWSPLIT) where 15 splits d = 64's by keys.
// The work, tiles, grid and products of configuration 12 (gpu/fa2_bwd_wgmma_kernel.cuh,
// WgBwdDescOnce: one block per K/V block j of Bc = 128 keys, two warpgroups of 64 keys each,
// Br = 64, all five products on wgmma from descriptors built once, the grid's K/V blocks
// fastest), with a third warpgroup that moves the data:
//
//   warpgroup 0, the producer (setmaxnreg.dec to 24 registers a thread): its first warp loads K_j
//     and V_j once, and Q_i, dO_i (one thread, TMA: cp.async.bulk.tensor, 64-column boxes, 128-byte
//     swizzle, the layout the descriptors read) and L2_i, D_i (all 32 lanes, two floats of each,
//     by plain loads and stores) of every Q block of the loop into a ring of STAGES buffers, each
//     with a "full" mbarrier (32 arrivals, one armed with the bytes the TMA copies bring) and an
//     "empty" one. The tensor maps are 3-D (d, rows, heads), so rows past Nq of Q_i, dO_i and
//     keys past Nk of K_j, V_j land as zeros, as v12's cp.async zero-fill gave them; L2_i and D_i
//     come from the pre-kernel's buffers padded to whole Q blocks (L2 = +inf, D = 0 past Nq), as
//     load_stats reads them.
//   warpgroups 1 and 2, the consumers (setmaxnreg.inc to 240): v12's warpgroups 0 and 1, the
//     same products in the same order on the same operands, so dK and dV are v12's bit for bit.
//     They wait on a stage's full barrier where v12 waits for its cp.async groups and
//     __syncthreads; the two other barriers of a Q block (dS^T complete, dQ partials complete)
//     are named barriers over the 256 consumer threads; the stage is released (empty barrier)
//     once dK's product, the last reader of Q_i, has retired.
//
// The release (ARRIVE_ALL): in 15 and 16 every consumer thread arrives on the empty barrier (it
// counts 256), each after its own reads of L2_i and D_i; in 13 and 14 each consumer warp's lane 0
// arrives after a __syncwarp (it counts 8). Both are ordered by the PTX memory model, but
// compute-sanitizer's racecheck follows only a thread's own arrival: it reports 13's stage as raced
// once the ring wraps (more than STAGES Q blocks) and 15 clean
// (gpu/results/tensor-core-backward/producer-warpgroup/).
//
//   14, 16 (DQ_WARPS): warps 1-3 of the producer warpgroup add tau dQ_i to HBM
//     (red.global.add.v4.f32) from one of two slabs, so that the consumers' third barrier no longer
//     waits for the adds: the consumers write slab t mod 2 and meet the dQ warps at one named
//     barrier of 352 threads (the 256 consumers and the 96 dQ threads, all waiting). Passing it,
//     the consumers know every consumer is done with dS^T of block t (dQ's product has retired:
//     block t + 1 may overwrite it) and the dQ warps are done with slab t - 1 (they arrive only
//     after its adds), so block t + 1 may write that one; the dQ warps know slab t is complete.
//     That barrier is met from two places in the code, so it is the unaligned barrier.sync
//     (bar_sync_unaligned): the aligned bar.sync there is what synccheck reported (ladder notes).
//
// Barriers per Q block: v12 three block-wide ones; 13 and 15 two named ones (256 threads) and a
// wait on the full barrier; 14 and 16 one of 256 and one of 352.
//
// Shared memory: K_j, V_j, STAGES x (Q_i, dO_i, L2_i, D_i), dS^T, the dQ slab(s) (v12's), the
// mbarriers. Register budget: 24 x 128 + 240 x 256 = 64512 <= 65536 (the SM's file); ptxas
// compiles the kernel at 168 a thread (384 threads, one block per SM) and lets each role use
// what its setmaxnreg gives it.
#pragma once
#include "gpu/bwd_ws_steps.cuh"  // stmatrix of dS^T and the steps only ladder rungs take
#include "gpu/fa2_bwd_wgmma_kernel.cuh"
#include "gpu/fa3_kernel.cuh"  // tma_load_3d, encode_tiled, make_map
#include "gpu/mbarrier_ptx.cuh"

#include <type_traits>

namespace flashstep::gpu::tc {

namespace {

template <int V_, int D_, int STAGES_, bool DQ_WARPS_ = false, bool ARRIVE_ALL_ = false, bool DQ_MBAR_ = false,
          bool WG_APART_ = false, int BR_ = 64, bool OVERLAP_ = false, bool STMATRIX_ = false, int STATS_PERM_ = 0,
          bool DQ_BULK_ = false, bool S_AHEAD_ = false, bool WIDE_KV_ = false, bool DKV_TMA_ = false,
          bool DQ_RUN_ = false, bool DQ_QUADS_ = false, bool S_LATE_ = false, bool DQ_ALT_ = false,
          bool PERSIST_ = false, bool SLAB_IN_STAGE_ = false, bool DQ_RED_ = false,
          bool DS_TWO_ = false, bool K_FRAG_ = false>
struct WsBwdConfig : BwdTileBytes<D_, BR_, 128> {
  static constexpr int VARIANT = V_, D = D_, BR = BR_, BC = 128, PANELS = D / 64, STAGES = STAGES_;
  static constexpr int CONSUMER_THREADS = 256, THREADS = 128 + CONSUMER_THREADS;
  // setmaxnreg: the producer warpgroup keeps 24 registers a thread, the consumers take 240 (a
  // multiple of 8): 24 x 128 + 240 x 256 = 64512 <= 65536.
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
  static_assert(128 * PRODUCER_REGS + CONSUMER_THREADS * CONSUMER_REGS <= 65536, "the SM's register file");
  // 14: warps 1-3 of the producer warpgroup add dQ_i to HBM from two alternating slabs.
  static constexpr bool DQ_WARPS = DQ_WARPS_;
  // 15, 16: every consumer thread arrives on a stage's empty barrier (CUTLASS's pipelines count
  // threads there), where 13 and 14 have each consumer warp's lane 0 arrive after a __syncwarp.
  static constexpr bool ARRIVE_ALL = ARRIVE_ALL_;
  // 17: the dQ warps' slabs handed over by an mbarrier pair each (full: the 256 consumer threads'
  // stores; empty: the 96 dQ threads' reads), where 14 and 16 meet at one barrier of 352 threads;
  // the consumers keep a barrier of their own (dS^T's reuse), as 13 and 15 do.
  static constexpr bool DQ_MBAR = DQ_MBAR_;
  static_assert(!DQ_MBAR || (DQ_WARPS && ARRIVE_ALL), "17 is 16 with the slabs' mbarriers");
  // 18 (d = 64): the consumer warpgroups apart. At d = 64 each warpgroup's dQ product reads only
  // its own 64 keys' rows of dS^T (DQ_KSPLIT), which its own threads wrote: dS^T's barrier is one
  // per warpgroup (128 threads), and 17's consumer barrier after the slab goes (a warpgroup's next
  // dS^T stores follow its own dQ product's wait). What the warpgroups share is handed over by
  // mbarriers: the stage (both release it) and the dQ slab (both fill it).
  static constexpr bool WG_APART = WG_APART_;
  static_assert(!WG_APART || (DQ_MBAR && D == 64), "18 is 17 at d = 64 with the warpgroups apart");
  static constexpr int DQ_THREADS = 96;
  static constexpr int ORDER = 1;                 // the grid's K/V blocks fastest (v9's order)
  static constexpr bool DESC_ONCE = true;         // v12's products (bwd_block_products) from base descriptors
  static constexpr bool DQ_KSPLIT = D == 64 && BR == 64;  // v12's dQ split: d = 64 over keys, d = 128 over columns
  // 19 (d = 64, Br = 128): dQ_i's 128 rows split between the warpgroups, 64 each over all 128 keys
  // (as d = 128 splits its columns): one partial, no sum.
  static constexpr bool DQ_ROWSPLIT = BR == 128;
  static_assert(BR == 64 || (BR == 128 && D == 64 && ARRIVE_ALL && !DQ_WARPS), "19 is 15 at d = 64 with Br = 128");
  // 20 (19) and 21 (15 at d = 128): a Q block's products overlapped with its element-wise steps
  // (bwd_block_products_overlap, gpu/bwd_ws_steps.cuh) where 15 and 19 wait for each product before the next step.
  static constexpr bool OVERLAP = OVERLAP_;
  static_assert(!OVERLAP || (ARRIVE_ALL && !DQ_WARPS), "20 and 21 are 19 and 15 with their products overlapped");
  // 22 (19) and 23 (15 at d = 128): dS^T stored by stmatrix, one per k step (bwd_stmatrix_ds_t),
  // where 15 and 19 issue four 4-byte st.shared per k step: the same bytes at the same addresses.
  static constexpr bool STMATRIX = STMATRIX_;
  static_assert(!STMATRIX || (ARRIVE_ALL && !DQ_WARPS && !OVERLAP), "22 and 23 are 19 and 15 with stmatrix");
  // 24 (23, d = 128): L2_i and D_i stored by the producer with each t4's 16 values side by side,
  // 16 floats apart, so that the consumers read them by float4 (bwd_probabilities and bwd_ds with
  // PERM, bwd_stat_pair). 45 (29): L2_i so, 20 floats apart, where the float4 reads of a quad meet
  // no bank twice (24's meet two t4 on the same banks); D_i as before, since its float4 reads, at
  // bwd_ds among 29's most registers, make ptxas spill.
  static constexpr int STATS_PERM = STATS_PERM_, STATS_PERM_D = STATS_PERM == 16 ? 16 : 0;
  static_assert(STATS_PERM == 0 || ((STATS_PERM == 16 || STATS_PERM == 20) && STMATRIX && BR == 64),
                "24 and 45 are 23 and 29 with the statistics laid out for float4 reads");
  // Floats of L2_i (then as many of D_i) in a stage: Br, or 4 x 20 laid out for 45's reads.
  static constexpr int STAT_FLOATS = STATS_PERM == 20 ? 4 * 20 : BR_;
  // 25 (23, d = 128), 26 (22, d = 64) and 27 (19): tau dQ_i added to HBM by the bulk copy engine
  // (cp.reduce.async.bulk .add.f32, v7's writer) from a dense slab whose rows hold their 8-float
  // chunks swizzled (v7's layout, TcBwdVariantInfo::dq_swizzled), in place of the consumers'
  // read-back and red.global.add.v4 after the slab's barrier: one consumer thread issues one bulk add
  // of the Q block's rows below Nq, and waits for it to have read the slab before the next Q
  // block's dS^T barrier (after which the slab is written again).
  static constexpr bool DQ_BULK = DQ_BULK_;
  static_assert(!DQ_BULK || (ARRIVE_ALL && !DQ_WARPS && !OVERLAP && STATS_PERM != 16),
                "25, 26 and 27 are 23, 22 and 19 with dQ added by the bulk copy engine");
  // 28 (25, d = 128): the next Q block's S^T = K_j Q_i+1^T issued right after
  // this block's dQ product, so that it runs while this block's dQ and dK products retire and
  // dQ_i goes to the slab, the slab's barrier and the bulk add's issue (the consumers' steps with
  // no product of their own in flight); the next block starts at S^T's wait. Every Q block issues
  // one (the last on its own stage, a warpgroup no row keeps on its keys as well, results unused),
  // so that the wait for dQ's and dK's groups is always wait_group 1: waits in a branch made ptxas
  // serialise the products of other rungs. Not at d = 64 with Br = 128: the second S^T accumulator
  // (64 registers) does not fit beside 26's, and ptxas serialises every product (C7512).
  static constexpr bool S_AHEAD = S_AHEAD_;
  static_assert(!S_AHEAD || (DQ_BULK && STMATRIX && BR == 64), "28 is 25 with S^T issued a Q block ahead");
  // 29 (28, d = 128): dV~_j += P^T dO_i and dK~_j += dS^T Q_i as one m64n128k16 per 16 queries
  // over both 64-column panels of dO_i and Q_i (bwd_keys_by_cols_desc's WIDE), where 28 issues one
  // m64n64k16 per panel: 8 wgmma a Q block in place of 16, each A fragment read once.
  static constexpr bool WIDE_KV = WIDE_KV_;
  static_assert(!WIDE_KV || ((S_AHEAD || DQ_ALT_ || K_FRAG_) && D == 128), "29 is 28 with the wide dV and dK products");
  // 30 (29, d = 128) and 31 (26, d = 64): dK_j and dV_j leave as K_j and V_j came in. Once every
  // consumer's products have retired, the consumers store them, rounded to the type, by stmatrix
  // into K_j's and V_j's tiles (the same 128-byte-swizzled panels), and one thread hands each
  // panel to the copy engine (cp.async.bulk.tensor, the tensor maps of dK and dV; rows past Nk
  // are not written), where 26 and 29 store them from the registers, 4 bytes per st.global: under
  // Nsight Compute those stores held about 4% of 29's stall samples at N = 4096
  // (gpu/results/tensor-core-backward/ncu-source/).
  static constexpr bool DKV_TMA = DKV_TMA_;
  static_assert(!DKV_TMA || (DQ_BULK && STMATRIX), "30 and 31 are 29 and 26 with dK and dV stored by the copy engine");
  // 32 (29, d = 128) and 33 (26, d = 64): dQ's product issued as one straight run of wgmma where
  // every k step is kept (bwd_dq_product_run), where 26 and 29 issue each of its 8 steps behind a
  // test of its keys: under Nsight Compute the issue of those 8 wgmma held 9% of 29's stall
  // samples at N = 4096, non-causal, where every step is kept.
  static constexpr bool DQ_RUN = DQ_RUN_;
  static_assert(!DQ_RUN || (DQ_BULK && !DQ_KSPLIT), "32 and 33 are 29 and 26 with dQ's product in one run");
  // 34 (29, d = 128) and 35 (26, d = 64): tau dQ_i's partial into the slab by 16-byte stores, 8 a
  // thread and Q block where 26 and 29 issue 16 of 8 bytes: a lane's two column pairs of a row 8
  // columns apart (its accumulator's n = 2m and 2m + 1) side by side, in the dQ accumulator's
  // "quads" layout (bwd_store_dq_slab_quads; TcBwdVariantInfo::dq_quads, undone by
  // fa2_bwd_tc_dq_quads_to_type). Taking the slab's stores out altogether (a knock-out build, the
  // ladder notes) made 29 1.24-1.28x faster at d = 128.
  static constexpr bool DQ_QUADS = DQ_QUADS_;
  static_assert(!DQ_QUADS || DQ_BULK, "34 and 35 are 29 and 26 with the slab's stores 16 bytes wide");
  // 36 (29, d = 128): the next Q block's S^T issued after this block's dQ partial is in the slab,
  // where 28 and 29 issue it before those stores: S^T reads both operands from shared memory, and
  // in the knock-out builds the slab's stores, made under it, cost 29 a fifth of its time.
  static constexpr bool S_LATE = S_LATE_;
  static_assert(!S_LATE || (S_AHEAD && DQ_BULK), "36 is 29 with the next S^T issued after the slab's stores");
  // 37 (29 without S^T ahead, d = 128): dQ_i's product by one warpgroup per Q block, the two in
  // turn (warpgroup t mod 2 for block t), one m64n128k16 per 16 keys over both panels of K_j, where
  // 29 has each warpgroup run m64n64k16 over its 64 columns: dS^T is read once, not twice (16 KiB
  // less shared memory read per Q block), as in cuDNN's backward (60% of its tensor work in n = 128
  // products, 29: 40%; tensor-core-backward/ncu-source/). The other warpgroup goes on to the next
  // Q block meanwhile; a barrier of both before dS^T's stores (the last dQ product retired) replaces
  // the slab's barrier of both; the slab is the dQ warpgroup's (a barrier of its 128 threads, its
  // thread 0 issues the bulk add and waits for its read).
  static constexpr bool DQ_ALT = DQ_ALT_;
  static_assert(!DQ_ALT || (DQ_BULK && STMATRIX && WIDE_KV && !S_AHEAD && !DQ_QUADS && !DQ_RUN && !DKV_TMA),
                "37 is 29 without S^T ahead and with dQ's product by one warpgroup a Q block");
  // 38 (29), 39 (26), 40 (37): a persistent grid (as cuDNN's backward), a block per SM taking the
  // tiles in turn: the stage ring runs on across tiles (the next tile's first Q blocks load as this
  // one ends), the next K_j, V_j load once the consumers are done with these (a K/V-empty
  // mbarrier), while they write dK_j, dV_j.
  static constexpr bool PERSIST = PERSIST_;
  static_assert(!PERSIST || (DQ_BULK && ARRIVE_ALL && !DQ_WARPS && !DQ_MBAR && !DKV_TMA && !S_LATE),
                "38-40 are 29, 26 and 37 on a persistent grid");
  // 41, 42 (29 with 4 and 3 stages): tau dQ_i's partial goes to its own Q block's stage, over Q_i and
  // dO_i (Br x d floats = the two tiles' bytes), once both warpgroups' products of the block have
  // retired (a barrier of both before the stores), and the stage returns to the producer once the
  // bulk add has read it (the issuing thread's arrival; the stage's empty barrier counts one). So no
  // Q block waits for the last one's bulk add to read a shared slab before storing its own, and the
  // 32 KiB of the slab become a fourth stage. The tile's last S^T, issued past the end and unused,
  // reads dS^T's tile in place of its own stage, which is then being written.
  static constexpr bool SLAB_IN_STAGE = SLAB_IN_STAGE_;
  static_assert(!SLAB_IN_STAGE || (DQ_BULK && S_AHEAD && WIDE_KV && BR == 64 && D == 128 && !PERSIST && !S_LATE &&
                                   !DQ_QUADS && !DQ_RUN && !DKV_TMA && !DQ_ALT),
                "41 and 42 are 29 with dQ_i's partial in its own Q block's stage");
  // 43 (29, d = 128): tau dQ_i's partial added to HBM from the accumulator registers
  // (red.global.add.v4.f32, lane pairs swapping half their values so that each lane holds four
  // consecutive columns of one row: 8 adds a thread and Q block; bwd_red_dq_v4) in place of the
  // slab: no 32 KiB of stores and no 32 KiB read by the bulk add per Q block, of the about 366 KiB
  // of shared memory 29 moves per Q block against 2560 cycles of tensor work, where an m64n64k16
  // with both operands in shared memory takes the SM's whole 128 bytes a cycle (the ladder notes).
  // dQ's accumulator in its plain row-major layout. The slab's barrier stays: both warpgroups' dQ
  // products of block t retire before either stores dS^T of block t + 1.
  static constexpr bool DQ_RED = DQ_RED_;
  static_assert(!DQ_RED || (DQ_BULK && S_AHEAD && WIDE_KV && D == 128 && !PERSIST && !SLAB_IN_STAGE && !S_LATE &&
                            !DQ_QUADS && !DQ_RUN && !DKV_TMA && !DQ_ALT),
                "43 is 29 with dQ_i added from the registers");
  // 44 (43): dS^T in two buffers, block t's in buffer t mod 2, and no barrier after dQ's product.
  // A warpgroup stores dS^T of block t + 2 only after both have passed block t + 1's dS^T barrier,
  // which each reaches after its own dQ product of block t has retired; so the consumers meet once
  // per Q block (dS^T complete), where 29 and 43 meet twice. The 16 KiB fit where 43 has no slab.
  static constexpr bool DS_TWO = DS_TWO_;
  static_assert(!DS_TWO || DQ_RED, "44 is 43 with two dS^T buffers");
  static constexpr int DS_BUFS = DS_TWO ? 2 : 1;
  // 46 (29 without S^T ahead, d = 128): K_j's A fragments of S^T loaded once per K/V block and kept
  // in registers (bwd_s_from_k_frags, gpu/bwd_ws_steps.cuh), 32 a thread, with room made by computing
  // dS from P's rounded fragments: a register probe found none to spare in 29, 6 in 29 without S^T
  // ahead, 35 in that with dS from the fragments.
  static constexpr bool K_FRAG = K_FRAG_;
  static_assert(!K_FRAG || (WIDE_KV && !S_AHEAD && DQ_BULK && STMATRIX && !OVERLAP && !PERSIST && !DQ_ALT &&
                            !SLAB_IN_STAGE && !DQ_RED && !S_LATE && !DKV_TMA && !DQ_RUN && !DQ_QUADS && !STATS_PERM),
                "46 is 29 without S^T ahead, with K_j's fragments in registers");
  static constexpr int PARTIALS = DQ_KSPLIT ? 2 : 1;  // dQ partials per slab (d = 64: one per warpgroup)
  static_assert(!DQ_BULK || PARTIALS == 1, "the bulk add takes one dense tile");
  static constexpr int SLABS = DQ_WARPS ? 2 : SLAB_IN_STAGE || DQ_RED ? 0 : 1;
  static constexpr int DQ_LD = DQ_BULK ? D : D + 8;  // + 8 floats: fewer bank conflicts (v12's slab)
  using Tiles = BwdTileBytes<D_, BR_, 128>;
  using Tiles::SMEM_KV, Tiles::SMEM_QI, Tiles::SMEM_BUF, Tiles::SMEM_BUF_PAD, Tiles::SMEM_DS;
  static_assert(2 * SMEM_QI + 2 * STAT_FLOATS * 4 <= SMEM_BUF_PAD, "Q_i, dO_i, L2_i and D_i fit a stage");
  static constexpr int64_t SMEM_SLAB = int64_t(PARTIALS) * BR * DQ_LD * 4;
  static constexpr int64_t SMEM_DQ = SLABS * SMEM_SLAB;
  // The mbarriers: K_j and V_j full; per stage full and empty; 17: per slab full and empty; 38-40:
  // K_j and V_j empty.
  static constexpr int BARRIERS = 1 + 2 * STAGES + (DQ_MBAR ? 2 * SLABS : 0) + (PERSIST ? 1 : 0) + (SLAB_IN_STAGE ? 1 : 0);
  // + 1024: the dynamic shared memory is aligned up to the swizzle atom by hand.
  static constexpr int64_t SMEM = 2 * SMEM_KV + STAGES * SMEM_BUF_PAD + DS_BUFS * SMEM_DS + SMEM_DQ + 8 * BARRIERS + 1024;
  static_assert(SMEM <= 227 * 1024, "fits in an H100/H200 block's shared memory");
  static_assert(SMEM <= 256 * 1024, "desc_add needs shared addresses below 256 KiB");
  static_assert(SMEM_DQ % 8 == 0, "the mbarriers are 8-byte aligned");
  // dS^T's key rows: Br = 64 queries, one 128-byte swizzle row; Br = 128, two panels of 64 queries.
  static_assert(BR % 64 == 0, "dS^T's rows are whole 64-query panels");
};

// The tensor maps of Q, dO (boxes of 64 columns x Br rows) and K, V (64 x Bc), each 3-D
// (d, N, heads): rows past N of a head are zero-filled by the copy engine.
struct BwdWsMaps {
  CUtensorMap q, dO, k, v;
};
// 30, 31: and those of dK and dV, with K's and V's boxes.
struct BwdWsMapsOut : BwdWsMaps {
  CUtensorMap dk, dv;
};

template <class C>
using WsMaps = std::conditional_t<C::DKV_TMA, BwdWsMapsOut, BwdWsMaps>;

// One box of shared memory at src to a 3-D tensor map's box at (column, row, head), by the copy
// engine (the issuing thread's bulk group; the rows and columns past the tensor's are not written).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, int c0, int c1, int c2, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}

// A loop-invariant value made opaque to the compiler once per Q block, so that what is formed
// from it (each wgmma's descriptor: base + constant offset, desc_add; each dS^T store's address)
// is formed in the loop, one add each, as v12 means it. Without it the compiler hoists them all out
// of the loop as invariants (32 descriptors, 8 store addresses), registers live through every
// product that the consumers' 240 cannot hold beside v12's tiles at its peak (dK~, dV~, P, P^T's
// fragments and dP^T: 208): ptxas spilled 8 to 112 bytes, the amount moving with every change.
__device__ __forceinline__ uint32_t per_block(uint32_t x) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(x));
  return x;
}
__device__ __forceinline__ uint64_t per_block(uint64_t d) {
  return (d & 0xFFFFFFFF00000000ull) | per_block(uint32_t(d));
}

// A named barrier that threads reach from different instructions (14, 16: the consumers' and the
// dQ warps'): barrier.sync without .aligned. bar.sync is barrier.sync.aligned, which requires every
// thread to execute the same barrier instruction; synccheck reports the aligned form here as
// "Divergent thread(s) in block".
template <int ID, int THREADS>
__device__ __forceinline__ void bar_sync_unaligned() {
  asm volatile("barrier.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
// The same for one warpgroup's named barrier `id` (37: the dQ slab's, reached by one warpgroup in a
// branch the other does not take).
__device__ __forceinline__ void bar_sync_wg_unaligned(int id) {
  asm volatile("barrier.sync %0, 128;\n" ::"r"(id) : "memory");
}

// Named barriers (0 is __syncthreads, which no role uses after the split): 1 dS^T complete
// (256 consumers); 2 dQ's slab complete (13: 256 consumers; 14: + the 96 dQ threads).
constexpr int kBarDsT = 1, kBarSlab = 2, kBarDsTWg = 3;  // 18: 3 and 4, one per consumer warpgroup
// 37: 5 both consumer warpgroups before dS^T's stores; 6 and 7 the dQ slab of one warpgroup.
constexpr int kBarDqAlt = 5, kBarSlabWg = 6;

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_bwd_ws_kernel(const TcBwdParams p, const __grid_constant__ WsMaps<C> maps) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, PANELS = C::PANELS, ST = C::STAGES;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t sK = smem_addr(smem), sV = sK + uint32_t(C::SMEM_KV), sBuf0 = sV + uint32_t(C::SMEM_KV);
  const uint32_t sDS = sBuf0 + uint32_t(ST * C::SMEM_BUF_PAD);
  float* sdq = reinterpret_cast<float*>(smem + 2 * C::SMEM_KV + ST * C::SMEM_BUF_PAD + C::DS_BUFS * C::SMEM_DS);
  // The mbarriers, 8 bytes each: K_j and V_j full, then per stage full, then per stage empty, then
  // (17, 18) per slab full, then per slab empty.
  const uint32_t bar_kv = sDS + uint32_t(C::DS_BUFS * C::SMEM_DS + C::SMEM_DQ);
  auto bar_full = [&](int s) { return bar_kv + 8u * uint32_t(1 + s); };
  auto bar_empty = [&](int s) { return bar_kv + 8u * uint32_t(1 + ST + s); };
  auto slab_full = [&](int b) { return bar_kv + 8u * uint32_t(1 + 2 * ST + b); };      // 17
  auto slab_empty = [&](int b) { return bar_kv + 8u * uint32_t(1 + 2 * ST + C::SLABS + b); };  // 17
  [[maybe_unused]] const uint32_t kv_empty = bar_kv + 8u * uint32_t(1 + 2 * ST + (C::DQ_MBAR ? 2 * C::SLABS : 0));
  // 41, 42: the Q block's dQ partial complete in its stage (the 256 consumers' stores).
  [[maybe_unused]] const uint32_t stage_slab_full =
      bar_kv + 8u * uint32_t(1 + 2 * ST + (C::DQ_MBAR ? 2 * C::SLABS : 0) + (C::PERSIST ? 1 : 0));
  auto buf_addr = [&](int s) { return sBuf0 + uint32_t(s * C::SMEM_BUF_PAD); };
  const int tid = threadIdx.x, wg = tid / 128;

  // The grid is (Tc, heads): the blocks at work at once share one head's Q_i, dO_i, dQ_i in L2.
  // 38-40: tile h Tc + k is head h's K/V block k, from the right on odd heads (backward_tile_block,
  // gpu/tile_order.h); every role loops over its block's tiles, once where the grid is (Tc, heads).
  const int64_t grid_h = blockIdx.y;
  const int grid_col0 = int(blockIdx.x) * BC;
  const int Tc = (p.fwd.nk + BC - 1) / BC;
  const int n_tiles = C::PERSIST ? Tc * int(p.fwd.heads) : 1, tile_step = C::PERSIST ? int(gridDim.x) : 1;
  auto tile_head = [&](int t) { return C::PERSIST ? backward_tile_head(t, Tc) : grid_h; };
  auto tile_col0 = [&](int t) { return C::PERSIST ? backward_tile_block(t, Tc) * BC : grid_col0; };

  if (tid == 0) {
    mbar_init(bar_kv, 1);
    for (int s = 0; s < ST; ++s) {
      mbar_init(bar_full(s), 32);                         // the producer warp's arrivals, one with the bytes
      // per thread (15), per warp, or (41, 42) the bulk add's issuer once it has read the stage
      mbar_init(bar_empty(s), C::SLAB_IN_STAGE ? 1 : C::ARRIVE_ALL ? C::CONSUMER_THREADS : C::CONSUMER_THREADS / 32);
    }
    if constexpr (C::DQ_MBAR)
      for (int b = 0; b < C::SLABS; ++b) {
        mbar_init(slab_full(b), C::CONSUMER_THREADS);
        mbar_init(slab_empty(b), C::DQ_THREADS);
      }
    if constexpr (C::PERSIST) mbar_init(kv_empty, C::CONSUMER_THREADS);
    if constexpr (C::SLAB_IN_STAGE) mbar_init(stage_slab_full, C::CONSUMER_THREADS);
    mbar_init_fence();
  }
  __syncthreads();  // the only block-wide barrier: the mbarriers are initialised

  if (wg == 0) {
    // ---- the producer warpgroup ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(C::PRODUCER_REGS));
    int q0 = 0, kv_n = 0;  // 38-40: the Q blocks and the loaded K/V tiles of the block's earlier tiles
    for (int tile = C::PERSIST ? int(blockIdx.x) : 0; tile < n_tiles; tile += tile_step) {
      const int64_t h = tile_head(tile);
      const int col0 = tile_col0(tile);
      const BwdHead<T> hd = bwd_head<T, D, BR>(p, h, col0);
      const int i_first = hd.i_first, n_i = hd.Tr - i_first;
      if (tid < 32 && n_i > 0) {
        // FA2b L6: K_j, V_j, once (38-40: once every consumer is done with the last tile's).
        auto load_kv = [&] {
          if (tid == 0) {
            if constexpr (C::PERSIST)
              if (kv_n > 0) mbar_wait(kv_empty, uint32_t((kv_n - 1) & 1));
            mbar_expect_tx(bar_kv, uint32_t(2 * C::SMEM_KV));
#pragma unroll
            for (int pn = 0; pn < PANELS; ++pn) {
              tma_load_3d(sK + uint32_t(pn * BC * 128), &maps.k, pn * 64, col0, int(h), bar_kv);
              tma_load_3d(sV + uint32_t(pn * BC * 128), &maps.v, pn * 64, col0, int(h), bar_kv);
            }
          }
        };
        if constexpr (!C::PERSIST) load_kv();
        // FA2b L9's loads: Q_i, dO_i, L2_i, D_i of the block's q-th Q block (t-th of this tile) into
        // stage q mod ST, once the consumers have released the block that used it before (q - ST).
        for (int t = 0; t < n_i; ++t) {
          const int q = C::PERSIST ? q0 + t : t, s = q % ST, row0 = (i_first + t) * BR;
          if (q >= ST) mbar_wait(bar_empty(s), uint32_t((q / ST - 1) & 1));
          const uint32_t b = buf_addr(s), full = bar_full(s);
          // L2_i and D_i: two floats of each per lane (the buffers are padded to whole Q blocks:
          // L2 = +inf, D = 0 past Nq), stored before this lane's arrival releases them.
          if constexpr (BR == 64) {
            // 24 (both), 45 (L2_i): rows 2 tid, + 1 (queries 8n + 2 t4 + e with n = tid / 4,
            // t4 = tid mod 4) at PERM t4 + 2n + e, bwd_stat_pair's layout.
            float2* stats = reinterpret_cast<float2*>(smem + (b - sK) + 2 * C::SMEM_QI);
            const int perm = (tid % 4) * (C::STATS_PERM / 2) + tid / 4;
            stats[C::STATS_PERM ? perm : tid] = *reinterpret_cast<const float2*>(hd.L2 + row0 + 2 * tid);
            stats[C::STAT_FLOATS / 2 + (C::STATS_PERM_D ? perm : tid)] =
                *reinterpret_cast<const float2*>(hd.D + row0 + 2 * tid);
          } else {  // 19: four of each per lane
            static_assert(BR == 128, "BR / 32 floats of L2_i and D_i per lane of the producer warp");
            float4* stats = reinterpret_cast<float4*>(smem + (b - sK) + 2 * C::SMEM_QI) + tid;
            stats[0] = *reinterpret_cast<const float4*>(hd.L2 + row0 + 4 * tid);
            stats[BR / 4] = *reinterpret_cast<const float4*>(hd.D + row0 + 4 * tid);
          }
          if (tid == 0) {
            mbar_expect_tx(full, uint32_t(2 * C::SMEM_QI));
#pragma unroll
            for (int pn = 0; pn < PANELS; ++pn) {
              tma_load_3d(b + uint32_t(pn * BR * 128), &maps.q, pn * 64, row0, int(h), full);
              tma_load_3d(b + uint32_t(C::SMEM_QI + pn * BR * 128), &maps.dO, pn * 64, row0, int(h), full);
            }
          } else {
            mbar_arrive(full);
          }
          // 38-40: this tile's K_j, V_j behind its first stages, which the consumers' last blocks of
          // the tile before release.
          if constexpr (C::PERSIST)
            if (t == min(ST, n_i) - 1) load_kv();
        }
      } else if (C::DQ_WARPS && tid >= 32) {
        // 14: the dQ warps. Per Q block: meet the consumers once slab t mod 2 is complete, add
        // tau dQ_i to the float32 accumulator in HBM (four consecutive floats of one row per thread
        // and step; rows past Nq are not written), and come back for the next.
        const int dtid = tid - 32;
        const float tau = p.fwd.scale;
        for (int t = 0; t < n_i; ++t) {
          const int row0 = (i_first + t) * BR;
          const float* slab = sdq + (t & 1) * (C::SMEM_SLAB / 4);
          if constexpr (C::DQ_MBAR) mbar_wait(slab_full(t & 1), uint32_t((t / 2) & 1));  // its k-th fill, k = t / 2
          else bar_sync_unaligned<kBarSlab, C::CONSUMER_THREADS + C::DQ_THREADS>();
          bwd_add_dq_slab<D, BR, C::DQ_LD, C::DQ_KSPLIT, C::DQ_THREADS>(hd.dQ, slab, row0, p.fwd.nq, tau, dtid);
          if constexpr (C::DQ_MBAR) mbar_arrive(slab_empty(t & 1));  // this thread's reads of it done
        }
      }
      q0 += n_i;
      kv_n += n_i > 0;
    }
    return;
  }

  // ---- the consumers: v12's warpgroups 0 and 1 (cwg) ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::CONSUMER_REGS));
  const int cwg = wg - 1, ctid = tid - 128, warp = (ctid / 32) % 4, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const BwdDescs dsc0 = bwd_descs<C>(sK, sV, sBuf0, sDS, cwg);  // v12's base descriptors
  // 37: dQ's B operand, K_j from its first row and column, both 64-column panels.
  [[maybe_unused]] const uint64_t dq_k_all = desc_lbo(desc_sw128(sK), uint32_t(BC * 128));
  int q0 = 0, kv_n = 0;  // 38-40: the Q blocks and the loaded K/V tiles of the block's earlier tiles
  for (int tile = C::PERSIST ? int(blockIdx.x) : 0; tile < n_tiles; tile += tile_step) {
    const int64_t h = tile_head(tile);
    const int col0 = tile_col0(tile);
    const int wkey0 = col0 + cwg * 64, key0 = wkey0 + warp * 16;  // this warpgroup's and this warp's first key
    const BwdHead<T> hd = bwd_head<T, D, BR>(p, h, col0);  // the head's tensors, mask, Q blocks
    const RowLimit lim = hd.lim;
    const int Tr = hd.Tr, i_first = hd.i_first, n_i = Tr - i_first;

    // FA2b L7: dK~_j = dV~_j = 0; L6's K_j, V_j have landed.
    float dk[PANELS][32] = {}, dv[PANELS][32] = {};
    const float scale_log2 = p.fwd.scale * kLog2e;
    if (n_i > 0) mbar_wait(bar_kv, uint32_t(C::PERSIST ? kv_n & 1 : 0));
    [[maybe_unused]] uint32_t kfrag[C::K_FRAG ? D / 16 : 1][4];  // 46: K_j's A fragments of S^T
    if constexpr (C::K_FRAG)
      if (n_i > 0) bwd_load_k_frags<D, BC>(kfrag, sK, cwg * 64 + warp * 16, lane);
    // 28: S^T of Q block t, issued a block ahead (the first here, once its stage has landed).
    [[maybe_unused]] float s_ahead[C::S_AHEAD ? BR / 2 : 1];
    auto issue_s_ahead = [&](int t_next, bool past_end) {
      if constexpr (C::S_AHEAD) {
        const int qn = C::PERSIST ? q0 + t_next : t_next, sn = qn % ST;
        mbar_wait(bar_full(sn), uint32_t((qn / ST) & 1));
        fence_regs(s_ahead);
        wgmma_fence();
        // 41, 42: past the tile's end, dS^T's tile (16 KiB, as Q_i: read only, results unused).
        bwd_keys_by_queries_desc<T, D, BC, BR>(
            s_ahead, per_block(dsc0.k_wg),
            desc_add(per_block(dsc0.buf0), C::SLAB_IN_STAGE && past_end ? sDS - sBuf0 : uint32_t(sn * C::SMEM_BUF_PAD)));
        wgmma_commit();
      }
    };
    if constexpr (C::S_AHEAD)
      if (n_i > 0) issue_s_ahead(0, false);

    // FA2b L8: for i (only the Q blocks some row of which keeps a key of block j).
    for (int t = 0; t < n_i; ++t) {
      const BwdDescs dsc{per_block(dsc0.k_wg), per_block(dsc0.v_wg), per_block(dsc0.buf0), per_block(dsc0.dq_ds),
                         per_block(dsc0.dq_k)};
      const int i = i_first + t, q = C::PERSIST ? q0 + t : t, s = q % ST, row0 = i * BR;
      const uint32_t sQ = buf_addr(s);
      // 44: block t's dS^T buffer, formed where it is used (opaque, so not kept live between: a kept
      // register spilled 4 bytes).
      auto ds_buf = [&] { return C::DS_TWO ? per_block(uint32_t((t & 1) * C::SMEM_DS)) : 0u; };
      const uint64_t dQi = desc_add(dsc.buf0, uint32_t(s * C::SMEM_BUF_PAD));  // Q_i's and dO_i's descriptors
      const uint64_t ddOi = desc_add(dQi, uint32_t(C::SMEM_QI));
      const float* sL2 = reinterpret_cast<const float*>(smem + (sQ - sK) + 2 * C::SMEM_QI);
      const float* sD = sL2 + C::STAT_FLOATS;
      // FA2b L9: Q_i, dO_i, L_i, D_i have landed (the copy engine's writes, seen through the barrier).
      mbar_wait(bar_full(s), uint32_t((q / ST) & 1));

      if constexpr (C::S_AHEAD) {  // 28: S^T of this Q block, issued a block ahead (unused if !wg_live)
        wgmma_wait<0>();
        fence_regs(s_ahead);
      }
      const int last_row = min(row0 + BR, p.fwd.nq) - 1, hi_last = lim.hi(last_row);
      const bool wg_live = wkey0 <= hi_last;                // some row of Q_i keeps a key of this warpgroup
      const bool partial = key0 + 15 > lim.hi(row0);        // some row of Q_i masks a key of this warp
      if (wg_live) {
        uint32_t dsa[BR / 16][4];
        const BwdBlockOperands op{sK, sV, sQ, sQ + uint32_t(C::SMEM_QI), dsc.k_wg, dsc.v_wg, dQi, ddOi};
        if constexpr (C::OVERLAP) {
          bwd_block_products_overlap<T, C>(dk, dv, dsa, op, sL2, sD, scale_log2, partial, key0, row0, lim, g, t4);
        } else if constexpr (C::K_FRAG) {
          float s_k[BR / 2];
          bwd_s_from_k_frags<T, C>(s_k, kfrag, op.q);
          bwd_block_after_s<T, C>(dk, dv, dsa, s_k, op, cwg, sL2, sD, scale_log2, partial, key0, row0, lim, g, t4);
        } else if constexpr (C::S_AHEAD) {
          bwd_block_after_s<T, C>(dk, dv, dsa, s_ahead, op, cwg, sL2, sD, scale_log2, partial, key0, row0, lim, g, t4);
        } else {
          bwd_block_products<T, C>(dk, dv, dsa, op, cwg, sL2, sD, scale_log2, partial, key0, row0, lim, g, t4);
        }
        // 37: the other warpgroup's dQ product of block t - 1 (the reader of dS^T) has retired.
        if constexpr (C::DQ_ALT) bar_sync_unaligned<kBarDqAlt, C::CONSUMER_THREADS>();
        if constexpr (C::STMATRIX)
          bwd_stmatrix_ds_t(per_block(sDS + ds_buf()), dsa, cwg * 64 + warp * 16, lane);  // for L15
        else
          bwd_store_ds_t(per_block(sDS + ds_buf()), dsa, cwg * 64 + warp * 16 + g, t4);  // for L15
      } else {
        if constexpr (C::DQ_ALT) bar_sync_unaligned<kBarDqAlt, C::CONSUMER_THREADS>();  // as above
        // No row of Q_i keeps these 64 keys: their dS is 0 (dQ's product below may still read them).
        // Their rows in each 64-query panel (Br / 64 of them, 16 KiB apart).
        for (int e = ctid % 128; e < 64 * (BR / 8); e += 128) {
          // Row e / (Br / 8) of this warpgroup's keys, chunk c = e mod (Br / 8) of its Br / 8: chunk
          // c mod 8 of panel c / 8.
          const uint32_t addr = sDS + ds_buf() + uint32_t((cwg * 64 + e / (BR / 8)) * 128 + (e % (BR / 8) % 8) * 16 +
                                               (e % (BR / 8) / 8) * BC * 128);
          asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0u));
        }
      }
      fence_proxy_async();  // dS^T, written by st.shared, is read next by the tensor cores
      // 25-27: Q block t - 1's bulk add has read the slab, which every consumer may write again
      // once past the barrier below.
      if constexpr (C::DQ_BULK && !C::SLAB_IN_STAGE && !C::DQ_RED)
        if (C::DQ_ALT ? ctid % 128 == 0 : ctid == 0) bulk_wait_read<0>();  // 37: either warpgroup's
      if constexpr (C::WG_APART) bar_sync_wg(kBarDsTWg + cwg);  // 18: this warpgroup's rows of dS_ij^T
      else bar_sync<kBarDsT, C::CONSUMER_THREADS>();               // dS_ij^T complete in shared memory

      // FA2b L15: dQ_i += tau dS_ij K_j (tau on the way out), into the slab of shared memory. The
      // first k step overwrites the accumulators (scale_d = 0) and is always issued; steps over
      // keys no row of Q_i keeps are not (d = 64: this warpgroup's 64 keys, warpgroup 0's test;
      // d = 128: all 128 keys, this warpgroup's 64-column panel of K_j).
      if constexpr (C::DQ_ALT) {
        // 37: warpgroup t mod 2 takes all of dQ_i (over both panels of K_j); the other retires its dK
        // product and goes on to the next Q block. The product's wait in its branch (one wait after
        // both branches made ptxas spill 336 bytes).
        if (cwg == (t & 1)) {
          float dq0[32], dq1[32];
          fence_regs(dq0);
          fence_regs(dq1);
          wgmma_fence();
          bwd_dq_product_wide<T, BC / 16>(dq0, dq1, dsc.dq_ds, per_block(dq_k_all));
          wgmma_commit();
          wgmma_wait<0>();
          fence_regs(dq0);
          fence_regs(dq1);
#pragma unroll
          for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
          mbar_arrive(bar_empty(s));  // dK's product was the stage's last reader
          bwd_store_dq_slab_swizzled<D>(sdq, dq0, 0, warp, g, per_block(uint32_t(g)), t4, p.fwd.scale);
          bwd_store_dq_slab_swizzled<D>(sdq, dq1, 64, warp, g, per_block(uint32_t(g)), t4, p.fwd.scale);
          fence_proxy_async();
          bar_sync_wg_unaligned(kBarSlabWg + cwg);  // this warpgroup's dQ_i complete in the slab
          if (ctid % 128 == 0) {
            const int rows = min(BR, p.fwd.nq - row0);
            bulk_reduce_add_f32(hd.dQ + int64_t(row0) * D, smem_addr(sdq), uint32_t(rows * D * 4));
            bulk_commit();
          }
        } else {
          wgmma_wait<0>();
#pragma unroll
          for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
          mbar_arrive(bar_empty(s));
        }
        continue;
      }
      float dq[32];
      fence_regs(dq);
      wgmma_fence();
      if constexpr (C::DQ_RUN) bwd_dq_product_run<T, BC / 16>(dq, dsc.dq_ds, dsc.dq_k, col0, hi_last);
      else bwd_dq_product_desc<T, C::DQ_KSPLIT ? 4 : BC / 16>(dq, C::DS_TWO ? desc_add(dsc.dq_ds, ds_buf()) : dsc.dq_ds,
                                                              dsc.dq_k, col0, hi_last);
      if constexpr (C::S_LATE) {
        bwd_retire_dq_dk<PANELS>(dq, dk);  // 36: the next S^T after the slab's stores, below
      } else if constexpr (C::S_AHEAD) {
        // 28: the next block's S^T (the last block's on its own stage) behind dQ's group, then
        // dK's and dQ's groups retired with it still in flight.
        wgmma_commit();
        issue_s_ahead(t + 1 < n_i ? t + 1 : t, t + 1 == n_i);
        wgmma_wait<1>();
        fence_regs(dq);
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
      } else {
        bwd_retire_dq_dk<PANELS>(dq, dk);
      }
      if constexpr (C::OVERLAP)  // dV's group, retired by the same wait
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn) fence_regs(dv[pn]);
      // dK's product was the stage's last reader (of Q_i): hand the buffer back to the producer.
      // 38: but for the tile's last, which its S^T issued past the end still reads (released below).
      if constexpr (C::SLAB_IN_STAGE) {
        // 41, 42: the stage takes dQ_i's partial next; released after the bulk add has read it.
      } else if constexpr (C::PERSIST && C::S_AHEAD) {
        if (t + 1 < n_i) mbar_arrive(bar_empty(s));
      } else if constexpr (C::ARRIVE_ALL) {
        mbar_arrive(bar_empty(s));  // 15: each thread releases its own reads of L2_i and D_i
      } else {
        __syncwarp();
        if (lane == 0) mbar_arrive(bar_empty(s));
      }

      // To this warpgroup's part of the slab (14: slab t mod 2; d = 64: its partial; 19: its 64 rows).
      float* slab = sdq + (C::DQ_WARPS ? (t & 1) * (C::SMEM_SLAB / 4) : 0) +
                    (C::DQ_KSPLIT ? cwg * BR * C::DQ_LD : C::DQ_ROWSPLIT ? cwg * 64 * C::DQ_LD : 0);
      // 17: slab t mod 2 is free once the dQ warps have read its fill of block t - 2.
      if constexpr (C::DQ_MBAR)
        if (t >= 2) mbar_wait(slab_empty(t & 1), uint32_t((t / 2 - 1) & 1));
      if constexpr (C::SLAB_IN_STAGE) {
        // 41, 42: into this Q block's stage, once no product of either warpgroup reads Q_i or dO_i.
        bar_sync<kBarSlab, C::CONSUMER_THREADS>();
        float* stage_slab = reinterpret_cast<float*>(smem + (sQ - sK));
        bwd_store_dq_slab_swizzled<D>(stage_slab, dq, cwg * 64, warp, g, per_block(uint32_t(g)), t4, p.fwd.scale);
        fence_proxy_async();
        mbar_arrive(stage_slab_full);
        if (ctid == 0) {
          mbar_wait(stage_slab_full, uint32_t(t & 1));  // every consumer's part stored
          const int rows = min(BR, p.fwd.nq - row0);
          bulk_reduce_add_f32(hd.dQ + int64_t(row0) * D, sQ, uint32_t(rows * D * 4));
          bulk_commit();
          // Q block t - 1's add has read its stage (it had this block's time): back to the producer.
          bulk_wait_read<1>();
          if (t > 0) mbar_arrive(bar_empty((t - 1) % ST));
        }
        continue;
      }
      if constexpr (C::DQ_RED) {
        // 43: tau dQ_i's partial from the registers; then every consumer's dQ product of block t has
        // retired before block t + 1 writes dS^T.
        bwd_red_dq_v4<D>(hd.dQ, dq, row0, p.fwd.nq, cwg * 64, warp, g, t4, p.fwd.scale);
        if constexpr (!C::DS_TWO) bar_sync<kBarSlab, C::CONSUMER_THREADS>();  // 44: none (its dS^T's comment)
        continue;
      }
      if constexpr (C::DQ_BULK) {
        // 25-27: tau dQ_i's partial, swizzled, then fenced for the copy engine (the async proxy).
        if constexpr (C::DQ_QUADS)
          bwd_store_dq_slab_quads<D>(slab, dq, C::DQ_ROWSPLIT ? 0 : cwg * 64, warp, g, t4, p.fwd.scale);
        else
          bwd_store_dq_slab_swizzled<D>(slab, dq, C::DQ_ROWSPLIT ? 0 : cwg * 64, warp, g, per_block(uint32_t(g)), t4,
                                        p.fwd.scale);
        fence_proxy_async();
        if constexpr (C::S_LATE) issue_s_ahead(t + 1 < n_i ? t + 1 : t, t + 1 == n_i);
        // dQ_i complete in the slab (and every consumer's dQ product of block t retired before
        // block t + 1 writes dS^T); one thread hands the rows below Nq to the copy engine.
        bar_sync<kBarSlab, C::CONSUMER_THREADS>();
        if (ctid == 0) {
          const int rows = min(BR, p.fwd.nq - row0);
          bulk_reduce_add_f32(hd.dQ + int64_t(row0) * D, smem_addr(sdq), uint32_t(rows * D * 4));
          bulk_commit();
        }
        continue;  // nothing else of the Q block is left
      }
      bwd_store_dq_slab<C::DQ_LD>(slab, dq, C::DQ_KSPLIT || C::DQ_ROWSPLIT ? 0 : cwg * 64, warp, g, t4);
      if constexpr (C::DQ_MBAR) {
        mbar_arrive(slab_full(t & 1));  // this thread's part of dQ_i's partials is in the slab
        // 17: every consumer's dQ product of block t has retired before block t + 1 writes dS^T
        // (18: each warpgroup reads only its own rows, after its own stores).
        if constexpr (!C::WG_APART) bar_sync<kBarSlab, C::CONSUMER_THREADS>();
      } else if constexpr (C::DQ_WARPS) {
        // dQ_i's partials complete: the dQ warps take slab t mod 2 (and are done with the other).
        bar_sync_unaligned<kBarSlab, C::CONSUMER_THREADS + C::DQ_THREADS>();
      } else {
        bar_sync<kBarSlab, C::CONSUMER_THREADS>();  // dQ_i's partials complete
        // tau dQ_i into the float32 accumulator in HBM: four consecutive floats of one row per
        // thread and step (rows past Nq are not written).
        bwd_add_dq_slab<D, BR, C::DQ_LD, C::DQ_KSPLIT, C::CONSUMER_THREADS>(hd.dQ, sdq, row0, p.fwd.nq, p.fwd.scale,
                                                                            ctid);
      }
    }

    // 28: the S^T issued after the last block retired before the block ends.
    if constexpr (C::S_AHEAD) {
      wgmma_wait<0>();
      fence_regs(s_ahead);
    }
    if constexpr (C::PERSIST) {
      if (n_i > 0) {
        if constexpr (C::S_AHEAD) mbar_arrive(bar_empty((q0 + n_i - 1) % ST));  // 38: the last stage
        mbar_arrive(kv_empty);  // 38-40: no product of this thread's reads K_j or V_j any more
      }
    } else if constexpr (C::DQ_BULK) {
      // 25-27: the last bulk add complete before the block's shared memory goes.
      if (C::DQ_ALT ? ctid % 128 == 0 : ctid == 0) bulk_wait_all();
    }
    // FA2b L18 (zeros for a block no row keeps).
    if constexpr (C::DKV_TMA) {
      // 30, 31: no product reads K_j or V_j once every consumer is past this barrier (each has
      // retired its own), and every Q_i stage has landed: their tiles take tau dK~_j and dV~_j.
      wgmma_wait<0>();
      bar_sync<kBarDsT, C::CONSUMER_THREADS>();
      bwd_stage_acc<T, PANELS>(sK, dk, p.fwd.scale, cwg * 64 + warp * 16, lane);
      bwd_stage_acc<T, PANELS>(sV, dv, 1.f, cwg * 64 + warp * 16, lane);
      fence_proxy_async();  // written by stmatrix, read next by the copy engine
      bar_sync<kBarDsT, C::CONSUMER_THREADS>();
      if (ctid == 0) {
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn) {
          tma_store_3d(&maps.dk, pn * 64, col0, int(h), sK + uint32_t(pn * BC * 128));
          tma_store_3d(&maps.dv, pn * 64, col0, int(h), sV + uint32_t(pn * BC * 128));
        }
        bulk_commit();
        bulk_wait_read<0>();  // the tiles read before the block's shared memory goes
      }
    } else {
      bwd_write_dk_dv<T, D, PANELS>(p, h, key0, g, t4, dk, dv);
    }
    q0 += n_i;
    kv_n += n_i > 0;
  }
  // 38-40: the last bulk add complete before the block's shared memory goes.
  if constexpr (C::PERSIST)
    if (C::DQ_ALT ? ctid % 128 == 0 : ctid == 0) bulk_wait_all();
}

// Host side: the four tensor maps, built per launch (four cuTensorMapEncodeTiled calls on the
// host, no device work), then the launch on the (Tc, heads) grid (38-40: one block per SM).
template <class C>
void launch_bwd_ws(const TcBwdParams& p) {
  static int64_t opted[2] = {0, 0};
  WsMaps<C> maps;
  maps.q = make_map(p.fwd.Q, p.fwd.elem, p.fwd.heads, p.fwd.nq, C::D, C::BR);
  maps.dO = make_map(p.dO, p.fwd.elem, p.fwd.heads, p.fwd.nq, C::D, C::BR);
  maps.k = make_map(p.fwd.K, p.fwd.elem, p.fwd.heads, p.fwd.nk, C::D, C::BC);
  maps.v = make_map(p.fwd.V, p.fwd.elem, p.fwd.heads, p.fwd.nk, C::D, C::BC);
  if constexpr (C::DKV_TMA) {
    maps.dk = make_map(p.dK, p.fwd.elem, p.fwd.heads, p.fwd.nk, C::D, C::BC);
    maps.dv = make_map(p.dV, p.fwd.elem, p.fwd.heads, p.fwd.nk, C::D, C::BC);
  }
  const int64_t tc = (p.fwd.nk + C::BC - 1) / C::BC;
  // 38-40: one block per SM, or per tile where there are fewer tiles.
  const dim3 grid = C::PERSIST ? dim3(unsigned(std::min<int64_t>(tc * p.fwd.heads, sm_count())))
                               : dim3(unsigned(tc), unsigned(p.fwd.heads));
  if (p.fwd.elem == Elem::bf16) {
    opt_in_shared(fa2_bwd_ws_kernel<__nv_bfloat16, C>, C::SMEM, opted[0]);
    fa2_bwd_ws_kernel<__nv_bfloat16, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  } else {
    opt_in_shared(fa2_bwd_ws_kernel<__half, C>, C::SMEM, opted[1]);
    fa2_bwd_ws_kernel<__half, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace flashstep::gpu::tc
#include "gpu/bwd_ws_info.cuh"  // info_of_ws: each configuration's description
