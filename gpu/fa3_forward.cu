// Variants 15-43 of the tensor-core ladder: FlashAttention-3's structure (arXiv 2407.08608,
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
//       (core/poly_exp2.h) instead of the special-function units: at d = 64 the 16 exp2 a clock
//       per SM take as long as the products (FlashAttention-4 moves part of them off on
//       Blackwell). 36 v22 with it, 37 v19 with it, 38 v21 with every 4th.
//   39  v21 with a still longer Bc: 224 at d = 64 (O_i 32 + S_ij 112 + P~ 56 registers), 192 at
//       d = 128 (64 + 96 + 48); the per-block costs over 1.17x (1.09x) v21's MMA work.
//   40  v21 with the two consumers staggered once: consumer 1 starts its first tile when
//       consumer 0 has finished the softmax of its first block (named barrier 5), so that their
//       softmaxes, which v21 runs at the same moment, fall in each other's products; no turns.
//   41  v30 with Bc 192 at d = 128; 42 v39 with v30's wide O += P~ V; 43 v34 with 3 K/V stages.
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
#include <cuda.h>
#include <cudaTypedefs.h>

#include "gpu/common.cuh"
#include "gpu/mbarrier_ptx.cuh"
#include "gpu/tc_launch.h"
#include "gpu/tc_ptx.cuh"
#include "gpu/wgmma_ptx.cuh"

namespace flashstep::gpu::tc {

namespace {

// ---- TMA (PTX ISA 8.0, sm_90); the mbarriers: gpu/mbarrier_ptx.cuh ----
// One box of a 3-D tensor map (coordinates: column, row, head) into shared memory at dst; the
// bytes count towards `bar`'s expected transaction.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// Named barriers 1 and 2 (0 is __syncthreads): the consumers' turns on the tensor cores.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The rungs' options, as bits of Fa3Config's FLAGS.
constexpr int kPingPong = 1;    // v16: the consumers take turns on the tensor cores
constexpr int kIntra = 2;       // v17: S_i,j+1 issued before the softmax of block j
constexpr int kPersistent = 4;  // v18: one block per SM loops over the tiles
constexpr int kIlp = 8;         // v23: the softmax's row max and sum in 4 independent chains
constexpr int kWidePv = 16;     // v30: O += P~ V as one m64n128k16 per 16 keys at d = 128, not two n64
constexpr int kPoly8 = 32;      // v35: every 8th exp2 of the softmax by core/poly_exp2.h
constexpr int kPoly4 = 64;      // v38: every 4th
constexpr int kStagger = 128;   // v40: consumer 1 starts one softmax after consumer 0, once

template <int V_, int D_, int BC_, int STAGES_, int FLAGS_, int CONSUMERS_ = 2>
struct Fa3Config {
  static constexpr int VARIANT = V_, D = D_, BC = BC_, STAGES = STAGES_;
  static constexpr bool PINGPONG = FLAGS_ & kPingPong, INTRA = FLAGS_ & kIntra, PERSISTENT = FLAGS_ & kPersistent;
  static constexpr int ILP = FLAGS_ & kIlp ? 4 : 1;
  static constexpr bool WIDE_PV = (FLAGS_ & kWidePv) && D_ == 128;
  static constexpr int POLY = FLAGS_ & kPoly4 ? 4 : FLAGS_ & kPoly8 ? 8 : 0;
  static constexpr bool STAGGER = (FLAGS_ & kStagger) && CONSUMERS_ == 2 && !(FLAGS_ & kPingPong);
  static constexpr int CONSUMERS = CONSUMERS_, THREADS = 128 * (CONSUMERS + 1), BR = 64 * CONSUMERS, PANELS = D / 64;
  // setmaxnreg: the producer keeps 24 registers a thread, the consumers share the rest of the
  // SM's 65536 (a multiple of 8, at most 240 on 2 consumers; 160 on 3: 24 x 128 + 160 x 384 <= 65536).
  static constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 240 : 160;
  static constexpr int64_t SMEM_Q = int64_t(BR) * D * 2, SMEM_KV = int64_t(BC) * D * 2;
  // Q, STAGES x (K, V), then the mbarriers (8 bytes each), + 1024 to align the tiles by hand.
  static constexpr int BARRIERS = 2 + 4 * STAGES;
  static constexpr int64_t SMEM = SMEM_Q + STAGES * 2 * SMEM_KV + 8 * BARRIERS + 1024;
  static_assert(CONSUMERS * 64 <= 256, "a TMA box has at most 256 rows");
  // Bc: the N of S_ij's wgmma (a multiple of 8 up to 256), 16 keys per k-step of O += P~ V, the
  // rows of a K/V box (at most 256), and 8-row groups of 1024 bytes so that every panel of a
  // stage starts on a 1024-byte boundary, as the 128B swizzle wants.
  static_assert(BC % 16 == 0 && BC <= 256, "Bc: a multiple of 16, at most 256");
  static_assert(SMEM <= 227 * 1024, "Q, the K/V stages and the mbarriers must fit in 227 KiB");
};

struct Fa3Maps {
  CUtensorMap q, k, v;
};

// The k-th tile (Q block i of head h) of this thread block; false past its last. v15-v17, v19: one
// tile per block, block_index's grid. Persistent (v18): a grid of G blocks over the Tr x heads
// tiles, block b taking tiles r G + b of round r; tiles are numbered longest first when causal
// (every head's last Q block, then every head's second last, ...), and odd rounds run backwards
// (r G + G - 1 - b), so that the block that drew the longest tile of one round draws the shortest
// of the next. Once a round's tile is past the last, so are all later rounds'.
template <class C>
__device__ __forceinline__ bool next_tile(const TcParams& p, int Tr, int k, int& i, int64_t& h) {
  if (!C::PERSISTENT) {
    if (k > 0) return false;
    const BlockIndex blk = block_index(p, Tr, p.mask.causal);
    i = blk.i;
    h = blk.h;
    return true;
  }
  const int G = int(gridDim.x), b = int(blockIdx.x);
  const int64_t tiles = int64_t(Tr) * p.heads;
  const int64_t t = int64_t(k) * G + (p.mask.causal && (k & 1) ? G - 1 - b : b);
  if (t >= tiles) return false;
  if (p.mask.causal) {
    i = Tr - 1 - int(t / p.heads);
    h = t % p.heads;
  } else {
    i = int(t % Tr);
    h = t / Tr;
  }
  return true;
}

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa3_kernel(const TcParams p, const __grid_constant__ Fa3Maps maps) {
  constexpr int D = C::D, BC = C::BC, BR = C::BR, PANELS = C::PANELS, ST = C::STAGES;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sQ = (smem_addr(smem) + 1023u) & ~1023u, sKV = sQ + uint32_t(C::SMEM_Q);
  const uint32_t bars = sKV + uint32_t(ST * 2 * C::SMEM_KV);
  // mbarriers: Q full, Q empty (persistent: the consumers' last S of a tile is done); per stage
  // K full, V full, K empty, V empty. K/V block number g (counted over this block's tiles) uses
  // stage g mod ST, in phase g / ST of its barriers.
  const uint32_t barQ = bars, emptyQ = bars + 8u;
  auto fullK = [&](int s) { return bars + 8u * uint32_t(2 + s); };
  auto fullV = [&](int s) { return bars + 8u * uint32_t(2 + ST + s); };
  auto emptyK = [&](int s) { return bars + 8u * uint32_t(2 + 2 * ST + s); };
  auto emptyV = [&](int s) { return bars + 8u * uint32_t(2 + 3 * ST + s); };
  auto stageK = [&](int s) { return sKV + uint32_t(s * 2 * C::SMEM_KV); };

  const int tid = threadIdx.x, wg = tid / 128;
  const int Tr = (p.nq + BR - 1) / BR;

  if (tid == 0) {
    mbar_init(barQ, 1);
    mbar_init(emptyQ, C::CONSUMERS * 4);  // one arrival per consumer warp
    for (int s = 0; s < ST; ++s) {
      mbar_init(fullK(s), 1);
      mbar_init(fullV(s), 1);
      mbar_init(emptyK(s), C::CONSUMERS * 4);
      mbar_init(emptyV(s), C::CONSUMERS * 4);
    }
    mbar_init_fence();
  }
  __syncthreads();

  int i = 0;
  int64_t h = 0;
  if (wg == 0) {
    // ---- the producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0) {
      int g0 = 0, q_uses = 0;  // K/V blocks and Q tiles loaded so far
      for (int k = 0; next_tile<C>(p, Tr, k, i, h); ++k) {
        const int row0 = i * BR, n_blocks = kept_blocks(row_limit(p, h), row0, BR, p.nq, BC);
        if (n_blocks == 0) continue;  // rows that keep no key: the consumers write O = 0 alone
        // Alg1 L4: Q_i, one box per 64-column panel, once the consumers are done with the last one.
        if (q_uses > 0) mbar_wait(emptyQ, uint32_t((q_uses - 1) & 1));
        ++q_uses;
        mbar_expect_tx(barQ, uint32_t(C::SMEM_Q));
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sQ + uint32_t(pn * BR * 128), &maps.q, pn * 64, row0, int(h), barQ);
        // Alg1 L7: K_j, V_j into stage g mod ST, once the consumers released it (block g - ST).
        for (int j = 0; j < n_blocks; ++j) {
          const int g = g0 + j, s = g % ST;
          const uint32_t par = uint32_t((g / ST - 1) & 1);
          const uint32_t sK = stageK(s), sV = sK + uint32_t(C::SMEM_KV);
          if (g >= ST) mbar_wait(emptyK(s), par);
          mbar_expect_tx(fullK(s), uint32_t(C::SMEM_KV));
#pragma unroll
          for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sK + uint32_t(pn * BC * 128), &maps.k, pn * 64, j * BC, int(h), fullK(s));
          if (g >= ST) mbar_wait(emptyV(s), par);
          mbar_expect_tx(fullV(s), uint32_t(C::SMEM_KV));
#pragma unroll
          for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sV + uint32_t(pn * BC * 128), &maps.v, pn * 64, j * BC, int(h), fullV(s));
        }
        g0 += n_blocks;
      }
    }
    return;
  }

  // ---- the consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::CONSUMER_REGS));
  const int cw = wg - 1, ctid = tid - 128, warp = (ctid / 32) % 4, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const float scale_log2 = p.scale * kLog2e;
  float o[PANELS][32];
  float s[BC / 2];
  uint32_t pa[BC / 16][4];
  int g0 = 0, q_uses = 0;  // as the producer counts them
  auto phase = [&](int gb) { return uint32_t((gb / ST) & 1); };

  // A turn on the tensor cores (v16): wait for ours (named barrier 1 + cw), and after issuing
  // hand it to the next consumer in the ring (with two, the other one). In each tile the last
  // consumer opens consumer 0's first turn, and its own last turn hands nothing on, so every
  // bar.sync meets exactly one matching bar.arrive (128 waiting + 128 arriving threads); no
  // consumer can arrive twice ahead, since its next turn waits for the whole ring to go round.
  auto turn_begin = [&] {
    if (C::PINGPONG) named_sync(1 + cw, 256);
  };
  auto turn_end = [&](bool last) {
    if (C::PINGPONG && !(last && cw == C::CONSUMERS - 1)) named_arrive(1 + (cw + 1) % C::CONSUMERS, 256);
  };
  // O_i += P~_i,j V_j (K/V block gb), one m64n64k16 per (16 keys, 64-column panel of d).
  // Wide (v30): one m64n128k16 per 16 keys, both panels of V_j through the descriptor's LBO.
  auto issue_pv = [&](int gb) {
    const uint32_t sV = stageK(gb % ST) + uint32_t(C::SMEM_KV);
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      if constexpr (C::WIDE_PV) {
        wgmma_rs<T>(o[0], o[PANELS - 1], pa[kk], desc_sw128_mn(sV + uint32_t(kk * 2048), uint32_t(BC * 128)), 1);
      } else {
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn)
          wgmma_rs<T>(o[pn], pa[kk], desc_sw128(sV + uint32_t(pn * BC * 128 + kk * 2048)), 1);
      }
    }
  };
  // S_ij = Q_i K_j^T: D / 16 k-steps of 32 bytes along each 128-byte row.
  auto issue_s = [&](int gb) {
    const uint32_t sK = stageK(gb % ST);
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
      const uint32_t koff = uint32_t((kd % 4) * 32);
      const uint64_t a = desc_sw128(sQ + uint32_t((kd / 4) * BR * 128 + cw * 64 * 128) + koff);
      const uint64_t b = desc_sw128(sK + uint32_t((kd / 4) * BC * 128) + koff);
      wgmma_ss<T>(s, a, b, kd > 0);
    }
  };
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  auto fence_o = [&] {
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
  };

  for (int k = 0; next_tile<C>(p, Tr, k, i, h); ++k) {
    const int row0 = i * BR;
    const RowLimit lim = row_limit(p, h);
    const int n_blocks = kept_blocks(lim, row0, BR, p.nq, BC);
    const int wrow0 = row0 + cw * 64 + warp * 16;
    const int row_hi[2] = {lim.hi(wrow0 + g), lim.hi(wrow0 + g + 8)};
    const int warp_hi_min = lim.hi(min(wrow0, p.nq - 1));

    // Alg1 L5: on chip, O_i = 0, l_i = 0, m_i = -inf (m in units of tau log2(e) S).
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
      for (int e = 0; e < 32; ++e) o[pn][e] = 0.0f;
    float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
    if (C::PINGPONG && cw == C::CONSUMERS - 1 && n_blocks > 0) named_arrive(1, 256);

    // v40: consumer 1 waits, once, for consumer 0's first softmax (or its empty first tile).
    if (C::STAGGER && k == 0 && cw == 1) named_sync(5, 256);
    if (n_blocks > 0) mbar_wait(barQ, uint32_t(q_uses & 1));
    // The mask and Alg1 L9 (v13's), then the first half of L10 and P~_ij into A fragments; v17
    // waits for O += P~_i,j-1 V_j-1 (`pending`, from block gb - 1) only between the two.
    auto softmax_block = [&](int j, int gb, bool pending) {
      float alphas[2];
      softmax_scores<BC, C::ILP, C::POLY>(s, alphas, m_i, l_i, scale_log2, j * BC, warp_hi_min, row_hi, t4);
      if (!pending) return rescale_and_pack<T, BC, PANELS>(s, alphas, o, pa);
      // The wait for O += P~_i,j-1 V_j-1 (after which O_i and the fragments of P~_i,j-1 are free
      // again) sits in both arms of the rescale's branch: ptxas schedules within a basic block
      // and, in the softmax's block, issued the wait first, before the softmax it was to hide.
      if (warp_rescales(alphas)) {
        wgmma_wait_all();
        fence_o();
        rescale_o(alphas, o);
      } else {
        wgmma_wait_all();
        fence_o();
      }
      release(emptyV((gb - 1) % ST));
      pack_p<T, BC>(s, pa);
    };
    if (!C::INTRA) {
      for (int j = 0; j < n_blocks; ++j) {
        const int gb = g0 + j, st = gb % ST;
        mbar_wait(fullK(st), phase(gb));
        if (j > 0) mbar_wait(fullV((gb - 1) % ST), phase(gb - 1));
        // Turn j: O += P~_i,j-1 V_j-1 (its rescale was done after the softmax of j - 1), S_ij.
        turn_begin();
        fence_o();
        fence_regs(s);
        wgmma_fence();
        if (j > 0) issue_pv(gb - 1);
        issue_s(gb);
        wgmma_commit();
        turn_end(false);
        wgmma_wait_all();
        fence_regs(s);
        fence_o();
        if (j > 0) release(emptyV((gb - 1) % ST));
        release(emptyK(st));
        softmax_block(j, gb, false);
      }
    } else {
      // v17: S_ij as its own wgmma stage (its own wgmma.fence and group), then, for j > 0,
      // O += P~_i,j-1 V_j-1 as another; wait for S_ij alone (wait_group 1). Block 0 is peeled
      // off, so that no branch sits between a stage's start and end: ptxas serialises the
      // products (C7515) when accumulators may be defined by other instructions in between.
      auto intra_block = [&](int j, bool pv) {
        const int gb = g0 + j, st = gb % ST;
        mbar_wait(fullK(st), phase(gb));
        if (pv) mbar_wait(fullV((gb - 1) % ST), phase(gb - 1));
        turn_begin();
        fence_regs(s);
        wgmma_fence();
        issue_s(gb);
        wgmma_commit();
        fence_regs(s);
        if (pv) {
          fence_o();
          wgmma_fence();
          issue_pv(gb - 1);
          wgmma_commit();
        }
        turn_end(false);
        if (pv) wgmma_wait<1>();  // S_ij is done; O += P~_i,j-1 V_j-1 may still run
        else wgmma_wait_all();
        fence_regs(s);
        release(emptyK(st));
        softmax_block(j, gb, pv);
      };
      if (n_blocks > 0) intra_block(0, false);
      if (C::STAGGER && k == 0 && cw == 0) named_arrive(5, 256);
      for (int j = 1; j < n_blocks; ++j) intra_block(j, true);
    }
    if (n_blocks > 0) {
      ++q_uses;
      if (C::PERSISTENT) release(emptyQ);  // every S of this tile is done: Q_i may be replaced
      // Turn n: the last O_i += P~ V.
      const int gb = g0 + n_blocks - 1;
      mbar_wait(fullV(gb % ST), phase(gb));
      turn_begin();
      fence_o();
      wgmma_fence();
      issue_pv(gb);
      wgmma_commit();
      turn_end(true);
      wgmma_wait_all();
      fence_o();
      release(emptyV(gb % ST));
    }
    g0 += n_blocks;

    write_o_lse<T, D, PANELS>(p, h, wrow0, g, t4, o, m_i, l_i);  // Alg1 L12-L15
  }
}

// ---- host side: the tensor maps ----
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !f)
      throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled (needs a driver for CUDA 12.0 or newer)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// (heads, n, d) row-major 16-bit tensor as a 3-D map (d, n, heads) of boxes 64 columns x rows,
// 128-byte swizzle (wgmma's layout, gpu/fa2_wgmma.cu), rows past n filled with zeros.
CUtensorMap make_map(const void* base, Elem e, int heads, int n, int d, int rows) {
  CUtensorMap m;
  const cuuint64_t dims[3] = {cuuint64_t(d), cuuint64_t(n), cuuint64_t(heads)};
  const cuuint64_t strides[2] = {cuuint64_t(d) * 2, cuuint64_t(n) * cuuint64_t(d) * 2};
  const cuuint32_t box[3] = {64, cuuint32_t(rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&m, e == Elem::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                    3, const_cast<void*>(base), dims, strides, box, elem_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return m;
}

// Multiprocessors of the current device: the persistent grid's size (one block per SM).
int sm_count() {
  int dev = 0, n = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

template <class C>
void launch_fa3(const TcParams& p) {
  static int64_t opted[2] = {0, 0};
  Fa3Maps maps;
  maps.q = make_map(p.Q, p.elem, p.heads, p.nq, C::D, C::BR);
  maps.k = make_map(p.K, p.elem, p.heads, p.nk, C::D, C::BC);
  maps.v = make_map(p.V, p.elem, p.heads, p.nk, C::D, C::BC);
  const unsigned Tr = unsigned((p.nq + C::BR - 1) / C::BR);
  const bool by_head = p.mask.causal;
  dim3 grid = by_head ? dim3(unsigned(p.heads), Tr) : dim3(Tr, unsigned(p.heads));
  if (C::PERSISTENT) {
    static const int sms = sm_count();
    grid = dim3(unsigned(std::min<int64_t>(int64_t(Tr) * p.heads, sms)));
  }
  if (p.elem == Elem::bf16) {
    opt_in_shared(fa3_kernel<__nv_bfloat16, C>, C::SMEM, opted[0]);
    fa3_kernel<__nv_bfloat16, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  } else {
    opt_in_shared(fa3_kernel<__half, C>, C::SMEM, opted[1]);
    fa3_kernel<__half, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  }
  CUDA_CHECK_LAUNCH();
}

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
using V34d64 = Fa3Config<34, 64, 128, 2, kIntra | kPersistent, 3>;
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
using V42d128 = Fa3Config<42, 128, 192, 2, kIntra | kPersistent | kWidePv>;
using V43d64 = Fa3Config<43, 64, 128, 3, kIntra | kPersistent, 3>;
using V43d128 = Fa3Config<43, 128, 64, 3, kIntra | kPersistent, 3>;

template <class C>
TcVariantInfo info_of(const char* what) {
  return TcVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::STAGES, C::SMEM, true, true};
}

// Each variant's kernel for d = 64 and d = 128, in one table for fa3_variant and fa3_launch.
struct Fa3Entry {
  int variant, d;
  const char* what;
  TcVariantInfo (*info)(const char*);
  void (*launch)(const TcParams&);
};
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
    entry<V43d64>(kV43), entry<V43d128>(kV43),
};

}  // namespace

int fa3_last_variant() { return 43; }

TcVariantInfo fa3_variant(int variant, int d) {
  for (const Fa3Entry& e : kFa3)
    if (e.variant == variant && e.d == d) return e.info(e.what);
  return TcVariantInfo{};
}

void fa3_launch(int variant, const TcParams& p) {
  for (const Fa3Entry& e : kFa3)
    if (e.variant == variant && e.d == p.d) return e.launch(p);
  throw std::runtime_error("fa3_launch: no kernel for variant " + std::to_string(variant) + ", d = " + std::to_string(p.d));
}

}  // namespace flashstep::gpu::tc
