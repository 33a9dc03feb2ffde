// FlashAttention-3's forward on Hopper (arXiv 2407.08608, sections 3.1 and 3.2): the kernel
// template of gpu/fa3_forward.cu (the defaults) and gpu/ladder/fa3_rungs.cu (every other
// configuration the ladder measured). sm_90a only. A configuration is a set of traits
// (Fa3Config: d, Bc, K/V stages, consumer warpgroups, and the technique flags below):
//
//   Warp specialisation (always). Warpgroup 0 is the producer: one elected thread issues TMA
//     copies (cp.async.bulk.tensor) of Q_i and of K_j, V_j into a ring of STAGES shared-memory
//     buffers. The other CONSUMERS warpgroups (64 rows of Q_i each, Br = 64 x CONSUMERS) wait on
//     "full" mbarriers and release each buffer on an "empty" mbarrier once their products have
//     read it; no block-wide barrier in the loop. setmaxnreg moves registers from the producer
//     (24) to the consumers (240 with two, 160 with three).
//   kIntra: the intra-warpgroup overlap (section 3.2). S_ij is issued first, as its own wgmma
//     group, then O_i += P~_i,j-1 V_j-1; the consumer waits for S_ij alone (wait_group 1) and runs
//     the mask and the softmax of block j while the tensor cores still work on P~_i,j-1 V_j-1;
//     only the rescale of O_i and the new P~ fragments wait for it.
//   kPingPong: the consumers take turns on the tensor cores through named barriers, so that one's
//     softmax runs under the other's products (the paper's Figure 1).
//   kPersistent: a grid of one block per SM, each looping over (Q block, head) tiles (next_tile:
//     longest first when causal, odd rounds reversed). The producer runs ahead into the next tile
//     (Q_i once the consumers' last S of the tile is done), so a tile's first loads hide under the
//     previous tile's last product and write.
//   kWidePv (d = 128): O += P~ V as one wgmma m64n128k16 per 16 keys over both 64-column panels
//     of V_j (the descriptor's leading offset steps from one panel to the next) instead of two
//     m64n64k16: half the instructions, each A fragment of P~ read once.
//   kPairKv (ladder rungs 46-48): non-causal tiles in 2-block clusters that share K_j, V_j by
//     TMA multicast, each producer loading half of every block (Fa3Config::PAIR_KV).
//   kKAhead (ladder rungs 51, 52): the producer issues K_j, then V_j-1, where the defaults issue
//     K_j, then V_j.
//   Bc: the N of S_ij's wgmma; a longer Bc pays the per-block costs (mbarrier waits, the row max
//     and sum across the quad, the rescale, the waits) over more MMA work. A ragged last block
//     (Nk not a multiple of Bc) is zero-filled by TMA past N and masked.
//
// Each consumer's loop (FA2fwd, per 64 rows):
//   turn 0:    S_i0
//   turn j:    O += P~_i,j-1 V_j-1 (after the rescale by the softmax of j - 1), S_ij
//              (kIntra: S_ij, then O += P~_i,j-1 V_j-1)
//   after j:   wait (kIntra: for S_ij); release K_j; softmax of block j (L9) in registers;
//              (kIntra: wait for O) release V_j-1; rescale O, P~_ij into A fragments
//   turn n:    O += P~_i,n-1 V_n-1
// The TMA tensor maps are 3-D (d, N, heads): rows past N of a head are zero-filled by the copy
// engine, never read from the next head; the masks then give those columns -inf.
// The tensor maps come from the driver's cuTensorMapEncodeTiled, reached through the runtime's
// cudaGetDriverEntryPointByVersion: no -lcuda at link time, so a build without a GPU still links.
//
// Everything is in an anonymous namespace: each including file gets its own copies of the
// configurations it instantiates.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include "gpu/common.cuh"
#include "gpu/mbarrier_ptx.cuh"
#include "gpu/tc_launch.h"
#include "gpu/tc_ptx.cuh"
#include "gpu/tile_order.h"
#include "gpu/wgmma_ptx.cuh"

#include <type_traits>

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
// The same box copied into the same shared-memory offset of every block of the cluster named in
// `cta_mask` (bit r: rank r), each copy counting its bytes towards the mbarrier at `bar`'s offset
// in that block.
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint32_t bar,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4}], "
      "[%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(cta_mask)
      : "memory");
}
// Named barriers 1 and 2 (0 is __syncthreads): the consumers' turns on the tensor cores.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// The same without .aligned (bar.sync and bar.arrive are barrier.sync.aligned and
// barrier.arrive.aligned), for a barrier that a warp may meet at different places in the code.
__device__ __forceinline__ void named_sync_unaligned(int id, int threads) {
  asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive_unaligned(int id, int threads) {
  asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The rungs' options, as bits of Fa3Config's FLAGS.
constexpr int kPingPong = 1;    // the consumers take turns on the tensor cores (named barriers)
constexpr int kIntra = 2;       // intra-warpgroup overlap: S_ij issued, softmax under O += P~_i,j-1 V_j-1
constexpr int kPersistent = 4;  // one block per SM loops over the (Q block, head) tiles
constexpr int kIlp = 8;         // the softmax's row max and sum in 4 independent chains
constexpr int kWidePv = 16;     // O += P~ V as one m64n128k16 per 16 keys at d = 128, not two n64
constexpr int kPoly8 = 32;      // every 8th exp2 of the softmax by gpu/ladder/poly_exp2.h (ladder)
constexpr int kPoly4 = 64;      // every 4th (ladder)
constexpr int kStagger = 128;   // consumer 1 starts one softmax after consumer 0, once (ladder)
constexpr int kHeadGroups = 256;  // persistent causal: longest first within groups of heads
constexpr int kGroupRounds = 512;  // with kHeadGroups: each group's rounds dealt alternately
constexpr int kPairKv = 1024;  // persistent, non-causal: two blocks of a cluster share K_j, V_j (TMA multicast)
constexpr int kPairCta = 2048;  // kPairKv's cross-block arrivals and waits at CTA scope (ladder rung 47)
constexpr int kPairNoMc = 4096;  // kPairKv's coupling without the multicast (ladder rung 48)
constexpr int kKAhead = 8192;  // the producer issues K_j before V_j-1, not V_j (ladder rungs 51, 52)

template <int V_, int D_, int BC_, int STAGES_, int FLAGS_, int CONSUMERS_ = 2>
struct Fa3Config {
  static constexpr int VARIANT = V_, D = D_, BC = BC_, STAGES = STAGES_;
  static constexpr bool PINGPONG = FLAGS_ & kPingPong, INTRA = FLAGS_ & kIntra, PERSISTENT = FLAGS_ & kPersistent;
  static constexpr int ILP = FLAGS_ & kIlp ? 4 : 1;
  static constexpr bool WIDE_PV = (FLAGS_ & kWidePv) && D_ == 128;
  static constexpr int POLY = FLAGS_ & kPoly4 ? 4 : FLAGS_ & kPoly8 ? 8 : 0;
  static constexpr bool STAGGER = (FLAGS_ & kStagger) && CONSUMERS_ == 2 && !(FLAGS_ & kPingPong);
  static constexpr bool HEAD_GROUPS = (FLAGS_ & kHeadGroups) && (FLAGS_ & kPersistent);
  static constexpr bool GROUP_ROUNDS = HEAD_GROUPS && (FLAGS_ & kGroupRounds);
  // kPairKv: the blocks run in clusters of two that take neighbouring Q blocks of one head; each
  // block's producer loads half the rows of K_j and of V_j (whole 8-row groups of 1024 bytes, as
  // Bc is a multiple of 16) and multicasts them into both blocks, so L2 serves each K/V block once
  // per pair. A stage is refilled once the consumers of both blocks have released it. Causal
  // tiles (a pair's blocks keep different numbers of K/V blocks) and an odd number of Q blocks
  // run `Single`, the same configuration without it.
  static constexpr bool PAIR_KV = (FLAGS_ & kPairKv) && (FLAGS_ & kPersistent);
  static constexpr bool PAIR_CTA = FLAGS_ & kPairCta, PAIR_MC = PAIR_KV && !(FLAGS_ & kPairNoMc);
  using Single = Fa3Config<V_, D_, BC_, STAGES_, FLAGS_ & ~kPairKv, CONSUMERS_>;
  // kKAhead: the producer issues K_j, then V_j-1 (FlashAttention-3's order under the intra-warpgroup
  // overlap), where the defaults issue K_j, then V_j.
  static constexpr bool K_AHEAD = FLAGS_ & kKAhead;
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

// The k-th tile (Q block i of head h) of this thread block; false past its last. Not persistent: one
// tile per block, block_index's grid. Persistent: a grid of G blocks over the Tr x heads
// tiles, block b taking tiles r G + b of round r; tiles are numbered longest first when causal
// (every head's last Q block, then every head's second last, ...), and odd rounds run backwards
// (r G + G - 1 - b), so that the block that drew the longest tile of one round draws the shortest
// of the next. Once a round's tile is past the last, so are all later rounds'.
// HEAD_GROUPS (causal; ladder rung 44, and 45, the default): the longest-first order runs within groups of heads
// whose K and V together take at most kHeadGroupBytes, so that the blocks at work at once read the
// K and V of a few heads, which stay in L2, rather than of as many heads as there are SMs (each
// head's last Q block reads all its keys: at 256 heads, N = 4096, d = 128, 132 heads' K and V are
// 264 MiB against the L2's 50). 44 numbers the tiles group by group and deals them as above;
// 45 deals each group's rounds alternately (gpu/tile_order.h), which needs the cursor `cur`.
constexpr int64_t kHeadGroupBytes = int64_t(16) << 20;
template <class C>
__device__ __forceinline__ bool next_tile(const TcParams& p, int Tr, int k, int& i, int64_t& h, TileCursor& cur) {
  if constexpr (C::GROUP_ROUNDS) {
    if (p.mask.causal)
      return grouped_causal_tile(p.heads, Tr, head_group(p.heads, p.nk, C::D, kHeadGroupBytes), int(gridDim.x),
                                 int(blockIdx.x), cur, i, h);
  }
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
  if (p.mask.causal && C::HEAD_GROUPS) {
    const int64_t hg = head_group(p.heads, p.nk, C::D, kHeadGroupBytes);
    const int64_t g = t / (hg * Tr), r = t - g * hg * Tr;
    const int64_t hn = min(hg, p.heads - g * hg);  // the last group may hold fewer heads
    i = Tr - 1 - int(r / hn);
    h = g * hg + r % hn;
  } else if (p.mask.causal) {
    i = Tr - 1 - int(t / p.heads);
    h = t % p.heads;
  } else {
    i = int(t % Tr);
    h = t / Tr;
  }
  return true;
}

// The forward pipeline's mbarriers (this kernel and the FP8 forward's, gpu/fp8_kernel.cuh), 8 bytes
// each from `base`: Q full, Q empty (persistent: the consumers' last S of a tile is done); per
// stage K full, V full, K empty, V empty. K/V block number g (counted over a block's tiles) uses
// stage g mod ST, in phase g / ST of its barriers.
template <int ST>
struct FwdBars {
  uint32_t base;
  __device__ __forceinline__ uint32_t fullQ() const { return base; }
  __device__ __forceinline__ uint32_t emptyQ() const { return base + 8u; }
  __device__ __forceinline__ uint32_t fullK(int s) const { return base + 8u * uint32_t(2 + s); }
  __device__ __forceinline__ uint32_t fullV(int s) const { return base + 8u * uint32_t(2 + ST + s); }
  __device__ __forceinline__ uint32_t emptyK(int s) const { return base + 8u * uint32_t(2 + 2 * ST + s); }
  __device__ __forceinline__ uint32_t emptyV(int s) const { return base + 8u * uint32_t(2 + 3 * ST + s); }
  // By one thread, before the block's first __syncthreads: a full barrier takes one arrival (the
  // producer's, with its bytes), an empty one an arrival per consumer warp (of every block that
  // reads the stage: kv_readers blocks).
  __device__ __forceinline__ void init(int consumer_warps, int kv_readers = 1) const {
    mbar_init(fullQ(), 1);
    mbar_init(emptyQ(), consumer_warps);
    for (int s = 0; s < ST; ++s) {
      mbar_init(fullK(s), 1);
      mbar_init(fullV(s), 1);
      mbar_init(emptyK(s), consumer_warps * kv_readers);
      mbar_init(emptyV(s), consumer_warps * kv_readers);
    }
    mbar_init_fence();
  }
};

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa3_kernel(const TcParams p, const __grid_constant__ Fa3Maps maps) {
  constexpr int D = C::D, BC = C::BC, BR = C::BR, PANELS = C::PANELS, ST = C::STAGES;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sQ = (smem_addr(smem) + 1023u) & ~1023u, sKV = sQ + uint32_t(C::SMEM_Q);
  const uint32_t bars = sKV + uint32_t(ST * 2 * C::SMEM_KV);
  const FwdBars<ST> fb{bars};  // the mbarriers (FwdBars)
  const uint32_t barQ = fb.fullQ(), emptyQ = fb.emptyQ();
  auto stageK = [&](int s) { return sKV + uint32_t(s * 2 * C::SMEM_KV); };

  const int tid = threadIdx.x, wg = tid / 128;
  const int Tr = (p.nq + BR - 1) / BR;

  // kPairKv: the rows of each K/V block one producer loads (half), and a cluster-wide barrier
  // once both blocks' mbarriers are initialised (the other block's copies and arrivals land on them).
  constexpr int HALF = C::PAIR_MC ? BC / 2 : BC;
  if (tid == 0) fb.init(C::CONSUMERS * 4, C::PAIR_KV ? 2 : 1);
  if constexpr (C::PAIR_KV)
    cluster_sync_all();
  else
    __syncthreads();

  int i = 0;
  int64_t h = 0;
  if (wg == 0) {
    // ---- the producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0) {
      int g0 = 0, q_uses = 0;  // K/V blocks and Q tiles loaded so far
      TileCursor cur;
      for (int k = 0; next_tile<C>(p, Tr, k, i, h, cur); ++k) {
        const int row0 = i * BR, n_blocks = kept_blocks(row_limit(p, h), row0, BR, p.nq, BC);
        if (n_blocks == 0) continue;  // rows that keep no key: the consumers write O = 0 alone
        // Alg1 L4: Q_i, one box per 64-column panel, once the consumers are done with the last one.
        if (q_uses > 0) mbar_wait(emptyQ, uint32_t((q_uses - 1) & 1));
        ++q_uses;
        mbar_expect_tx(barQ, uint32_t(C::SMEM_Q));
#pragma unroll
        for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sQ + uint32_t(pn * BR * 128), &maps.q, pn * 64, row0, int(h), barQ);
        if constexpr (!C::K_AHEAD) {
          // Alg1 L7: K_j, V_j into stage g mod ST, once the consumers released it (block g - ST).
          for (int j = 0; j < n_blocks; ++j) {
            const int g = g0 + j, s = g % ST;
            const uint32_t par = uint32_t((g / ST - 1) & 1);
            const uint32_t sK = stageK(s), sV = sK + uint32_t(C::SMEM_KV);
            if constexpr (C::PAIR_KV) {
              auto wait_empty = [&](uint32_t bar) {
                if constexpr (C::PAIR_CTA) mbar_wait(bar, par); else mbar_wait_cluster(bar, par);
              };
              if constexpr (!C::PAIR_MC) {
                if (g >= ST) wait_empty(fb.emptyK(s));
                mbar_expect_tx(fb.fullK(s), uint32_t(C::SMEM_KV));
#pragma unroll
                for (int pn = 0; pn < PANELS; ++pn)
                  tma_load_3d(sK + uint32_t(pn * BC * 128), &maps.k, pn * 64, j * BC, int(h), fb.fullK(s));
                if (g >= ST) wait_empty(fb.emptyV(s));
                mbar_expect_tx(fb.fullV(s), uint32_t(C::SMEM_KV));
#pragma unroll
                for (int pn = 0; pn < PANELS; ++pn)
                  tma_load_3d(sV + uint32_t(pn * BC * 128), &maps.v, pn * 64, j * BC, int(h), fb.fullV(s));
                continue;
              }
              // Rows [rank HALF, rank HALF + HALF) of K_j and V_j into both blocks; the full barrier
              // expects the whole block's bytes, half of them from the other block's producer.
              const uint32_t rank = cluster_rank(), off = rank * uint32_t(HALF * 128);
              const int r0 = j * BC + int(rank) * HALF;
              if (g >= ST) wait_empty(fb.emptyK(s));
              mbar_expect_tx(fb.fullK(s), uint32_t(C::SMEM_KV));
#pragma unroll
              for (int pn = 0; pn < PANELS; ++pn)
                tma_load_3d_multicast(sK + uint32_t(pn * BC * 128) + off, &maps.k, pn * 64, r0, int(h), fb.fullK(s), 3);
              if (g >= ST) wait_empty(fb.emptyV(s));
              mbar_expect_tx(fb.fullV(s), uint32_t(C::SMEM_KV));
#pragma unroll
              for (int pn = 0; pn < PANELS; ++pn)
                tma_load_3d_multicast(sV + uint32_t(pn * BC * 128) + off, &maps.v, pn * 64, r0, int(h), fb.fullV(s), 3);
              continue;
            }
            if (g >= ST) mbar_wait(fb.emptyK(s), par);
            mbar_expect_tx(fb.fullK(s), uint32_t(C::SMEM_KV));
#pragma unroll
            for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sK + uint32_t(pn * BC * 128), &maps.k, pn * 64, j * BC, int(h), fb.fullK(s));
            if (g >= ST) mbar_wait(fb.emptyV(s), par);
            mbar_expect_tx(fb.fullV(s), uint32_t(C::SMEM_KV));
#pragma unroll
            for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(sV + uint32_t(pn * BC * 128), &maps.v, pn * 64, j * BC, int(h), fb.fullV(s));
          }
        } else {
          // kKAhead (ladder): K_j and V_j by one load() each, in the order K_j, V_j-1; the same copies
          // as the loop above (kPairKv: rows [rank HALF, rank HALF + HALF) into both blocks). The
          // defaults keep that loop as written: this form compiles to other machine code for them.
          auto load = [&](int j, auto v) {
            constexpr bool is_v = decltype(v)::value;
            const int g = g0 + j, s = g % ST;
            const uint32_t par = uint32_t((g / ST - 1) & 1);
            const uint32_t dst = stageK(s) + (is_v ? uint32_t(C::SMEM_KV) : 0u);
            const uint32_t full = is_v ? fb.fullV(s) : fb.fullK(s), empty = is_v ? fb.emptyV(s) : fb.emptyK(s);
            const CUtensorMap* map = is_v ? &maps.v : &maps.k;
            if constexpr (C::PAIR_KV) {
              if (g >= ST) {
                if constexpr (C::PAIR_CTA) mbar_wait(empty, par); else mbar_wait_cluster(empty, par);
              }
              mbar_expect_tx(full, uint32_t(C::SMEM_KV));
              if constexpr (!C::PAIR_MC) {
#pragma unroll
                for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(dst + uint32_t(pn * BC * 128), map, pn * 64, j * BC, int(h), full);
              } else {
                const uint32_t rank = cluster_rank(), off = rank * uint32_t(HALF * 128);
                const int r0 = j * BC + int(rank) * HALF;
#pragma unroll
                for (int pn = 0; pn < PANELS; ++pn)
                  tma_load_3d_multicast(dst + uint32_t(pn * BC * 128) + off, map, pn * 64, r0, int(h), full, 3);
              }
            } else {
              if (g >= ST) mbar_wait(empty, par);
              mbar_expect_tx(full, uint32_t(C::SMEM_KV));
#pragma unroll
              for (int pn = 0; pn < PANELS; ++pn) tma_load_3d(dst + uint32_t(pn * BC * 128), map, pn * 64, j * BC, int(h), full);
            }
          };
          // K_j+2's copy then waits for its own stage (S_ij done), not behind V_j+1's, which waits
          // for V_j-1's release (O += P~_i,j-1 V_j-1 done, at the end of block j's softmax).
          constexpr std::false_type kK{};
          constexpr std::true_type kV{};
          for (int j = 0; j < n_blocks; ++j) {
            load(j, kK);
            if (j > 0) load(j - 1, kV);
          }
          load(n_blocks - 1, kV);
        }
        g0 += n_blocks;
      }
      // kPairKv: the block stays until both blocks' consumers have released its last ST stages,
      // so that no arrival from the other block lands on a barrier of a block that has left (the
      // other block's copies into this one land before this block's consumers finish). A cluster
      // barrier here instead made ptxas give the consumers' code the producer's 24 registers.
      if constexpr (C::PAIR_KV) {
        for (int g = max(g0 - ST, 0); g < g0; ++g) {
          mbar_wait_cluster(fb.emptyK(g % ST), uint32_t((g / ST) & 1));
          mbar_wait_cluster(fb.emptyV(g % ST), uint32_t((g / ST) & 1));
        }
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

  // A turn on the tensor cores (kPingPong): wait for ours (named barrier 1 + cw), and after issuing
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
  // Wide (kWidePv): one m64n128k16 per 16 keys, both panels of V_j through the descriptor's LBO.
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
  // A K/V stage is released to the producers of every block that writes into it (kPairKv: both).
  auto release_kv = [&](uint32_t bar) {
    if constexpr (C::PAIR_KV) {
      __syncwarp();
      if (lane == 0) {  // the rank is read here, not held in a register through the loop
        if constexpr (C::PAIR_CTA) {
          mbar_arrive(bar);
          mbar_arrive_remote(cluster_map(bar, cluster_rank() ^ 1u));
        } else {
          mbar_arrive_release_cluster(bar);
          mbar_arrive_cluster(cluster_map(bar, cluster_rank() ^ 1u));
        }
      }
    } else {
      release(bar);
    }
  };
  auto fence_o = [&] {
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
  };

  TileCursor cur;
  for (int k = 0; next_tile<C>(p, Tr, k, i, h, cur); ++k) {
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

    // kStagger: consumer 1 waits, once, for consumer 0's first softmax (or its empty first tile).
    if (C::STAGGER && k == 0 && cw == 1) named_sync(5, 256);
    if (n_blocks > 0) mbar_wait(barQ, uint32_t(q_uses & 1));
    // The mask and Alg1 L9, then the first half of L10 and P~_ij into A fragments; kIntra
    // waits for O += P~_i,j-1 V_j-1 (`pending`, from block gb - 1) only between the two.
    auto softmax_block = [&](int j, int gb, bool pending) {
      float alphas[2];
      softmax_scores<BC, C::ILP, C::POLY>(s, alphas, m_i, l_i, scale_log2, j * BC, warp_hi_min, row_hi, t4);
      if (!pending) return rescale_and_pack<T, BC, PANELS>(s, alphas, o, pa);
      // The wait for O += P~_i,j-1 V_j-1 (after which O_i and the fragments of P~_i,j-1 are free
      // again) must come after the softmax it is to hide. ptxas schedules within a basic block and
      // issues a wait as early as it can: in the softmax's block it put the wait first (a wait
      // predicated on the softmax's sums too). So the wait sits in the two arms of a branch that
      // ends that block. The branch is on j's parity, which all four warps of the warpgroup share:
      // each copy of the wait (.sync.aligned) is executed by the whole warpgroup at one PC, as the
      // PTX ISA requires (a per-warp condition here is undefined behaviour; synccheck reports it).
      // The copies are spelled differently so that the compiler cannot merge the arms.
      if (j & 1)
        wgmma_wait_all();
      else
        wgmma_wait_all_copy();
      fence_o();
      if (warp_rescales(alphas)) rescale_o(alphas, o);  // per warp: no wgmma instruction inside
      release_kv(fb.emptyV((gb - 1) % ST));
      pack_p<T, BC>(s, pa);
    };
    if (!C::INTRA) {
      for (int j = 0; j < n_blocks; ++j) {
        const int gb = g0 + j, st = gb % ST;
        mbar_wait(fb.fullK(st), phase(gb));
        if (j > 0) mbar_wait(fb.fullV((gb - 1) % ST), phase(gb - 1));
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
        if (j > 0) release_kv(fb.emptyV((gb - 1) % ST));
        release_kv(fb.emptyK(st));
        softmax_block(j, gb, false);
      }
    } else {
      // kIntra: S_ij as its own wgmma stage (its own wgmma.fence and group), then, for j > 0,
      // O += P~_i,j-1 V_j-1 as another; wait for S_ij alone (wait_group 1). Block 0 is peeled
      // off, so that no branch sits between a stage's start and end: ptxas serialises the
      // products (C7515) when accumulators may be defined by other instructions in between.
      auto intra_block = [&](int j, bool pv) {
        const int gb = g0 + j, st = gb % ST;
        mbar_wait(fb.fullK(st), phase(gb));
        if (pv) mbar_wait(fb.fullV((gb - 1) % ST), phase(gb - 1));
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
        release_kv(fb.emptyK(st));
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
      mbar_wait(fb.fullV(gb % ST), phase(gb));
      turn_begin();
      fence_o();
      wgmma_fence();
      issue_pv(gb);
      wgmma_commit();
      turn_end(true);
      wgmma_wait_all();
      fence_o();
      release_kv(fb.emptyV(gb % ST));
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

// kPairKv's grid: as many pairs as can be resident at once (a cluster's two blocks sit in one GPC,
// so an SM may be left over where a GPC has an odd count), at most one block per tile.
template <class C, typename T>
void launch_pairs(const TcParams& p, const Fa3Maps& maps, int64_t tiles) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(C::THREADS);
  cfg.dynamicSmemBytes = size_t(C::SMEM);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  static const int pairs = [&] {
    int n = 0;
    cudaLaunchConfig_t q = cfg;
    q.gridDim = dim3(unsigned(2 * sm_count()));
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, fa3_kernel<T, C>, &q));
    if (n < 1) throw std::runtime_error("fa3: no cluster of two blocks fits on this GPU");
    return n;
  }();
  cfg.gridDim = dim3(unsigned(std::min<int64_t>(tiles, 2 * int64_t(pairs))));
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, fa3_kernel<T, C>, p, maps));
}

template <class C>
void launch_fa3(const TcParams& p) {
  const unsigned Tr = unsigned((p.nq + C::BR - 1) / C::BR);
  if constexpr (C::PAIR_KV) {
    if (p.mask.causal || Tr % 2 != 0) return launch_fa3<typename C::Single>(p);
  }
  static int64_t opted[2] = {0, 0};
  Fa3Maps maps;
  maps.q = make_map(p.Q, p.elem, p.heads, p.nq, C::D, C::BR);
  // kPairKv: each producer copies half of a K/V block's rows.
  const int kv_rows = C::PAIR_MC ? C::BC / 2 : C::BC;
  maps.k = make_map(p.K, p.elem, p.heads, p.nk, C::D, kv_rows);
  maps.v = make_map(p.V, p.elem, p.heads, p.nk, C::D, kv_rows);
  const bool by_head = p.mask.causal;
  dim3 grid = by_head ? dim3(unsigned(p.heads), Tr) : dim3(Tr, unsigned(p.heads));
  if (C::PERSISTENT) {
    static const int sms = sm_count();
    grid = dim3(unsigned(std::min<int64_t>(int64_t(Tr) * p.heads, sms)));
  }
  if (p.elem == Elem::bf16) {
    opt_in_shared(fa3_kernel<__nv_bfloat16, C>, C::SMEM, opted[0]);
    if constexpr (C::PAIR_KV) return launch_pairs<C, __nv_bfloat16>(p, maps, int64_t(Tr) * p.heads);
    fa3_kernel<__nv_bfloat16, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  } else {
    opt_in_shared(fa3_kernel<__half, C>, C::SMEM, opted[1]);
    if constexpr (C::PAIR_KV) return launch_pairs<C, __half>(p, maps, int64_t(Tr) * p.heads);
    fa3_kernel<__half, C><<<grid, C::THREADS, C::SMEM>>>(p, maps);
  }
  CUDA_CHECK_LAUNCH();
}


}  // namespace
}  // namespace flashstep::gpu::tc
