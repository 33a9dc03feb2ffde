// The FP8 forward on Hopper (FlashAttention-3, arXiv 2407.08608, section 3.3): e4m3 Q, K, V with
// float32 scales, S_ij and the softmax in float32, P~_ij rounded to e4m3 with scale 1, O in bf16
// (the CPU engine's contract, docs/fp8.md; the kernel's design, docs/fp8-gpu.md). The pipeline is the bf16 default's (gpu/fa3_kernel.cuh:
// a TMA producer warpgroup, CONSUMERS consumer warpgroups of 64 rows of Q_i each, the softmax of
// block j under O += P~_i,j-1 V_j-1, a persistent grid); what changes with 8-bit inputs:
//
//   Products. wgmma m64nNk32 e4m3 x e4m3 -> f32: 32 keys (or 32 columns of d) per instruction,
//     32 bytes along each operand row, the same byte geometry as a 16-bit k16 step. S_ij = Q_i K_j^T:
//     m64n{Bc}k32 (Bc = 128 at d = 64, 192 at d = 128; 64 in two ladder rungs), d / 32 steps. O_i += P~_ij V_j:
//     m64n{d}k32, Bc / 32 steps.
//   Operands K-major only. For 8-bit types the PTX ISA has no transpose immediates: both shared
//     memory operands are K-major. Q_i and K_j are (rows, d) as stored; the B operand of P~ V must
//     be V_j^T (d rows of keys). The producer of V (the layer that quantises it, here the host)
//     writes V^T per head, (d, nk_pad), and TMA copies a box of Bc = 128 keys x d rows, one
//     128-byte swizzled row per column of d (Bc = 192: a second box of 64 keys, 64B swizzled).
//   Shared memory rows. d = 128: Q_i, K_j rows of 128 bytes, 128B swizzle (as the bf16 kernel's
//     panels). d = 64: rows of 64 bytes, 64B swizzle (8-row atoms of 512 bytes, desc_sw64). V_j^T:
//     rows of 128 keys, 128B swizzle, at either d (the ladder's Bc = 64 rungs: rows of 64 keys, 64B swizzle).
//   P~ from the accumulator to the A fragment, with no data movement. The float32 accumulator of
//     S_ij gives lane (g, t4) of a warp rows g and g + 8 and, in each 8-column tile n, columns
//     8n + 2 t4 and 8n + 2 t4 + 1. The 8-bit A fragment of one k32 step (PTX ISA figure "WGMMA
//     .m64nNk32 register fragment layout for matrix A") wants 4 registers of 4 bytes: a0 row g,
//     k = 4 t4 .. 4 t4 + 3; a1 row g + 8, the same k; a2 row g, k = 16 + 4 t4 .. 16 + 4 t4 + 3; a3
//     row g + 8, the same. Lane t4 holds, of the keys 32 kk .. 32 kk + 31, the eight 2 t4, 2 t4 + 1,
//     8 + 2 t4, 9 + 2 t4 and those + 16. Packing them in that order into a0..a3 (pack_p_e4m3) puts
//     key 2 t4 + (e & 1) + 8 (e >> 1) (+ 16 in a2, a3) at fragment position k = 4 t4 + e: the
//     product then sums over the keys in a permuted order, which is harmless as long as row k of
//     the B operand holds that same key. So V^T stores the keys of each group of 32 in that order
//     (fp8_vt_key in gpu/tc_launch.h: storage position q holds key fp8_vt_key(q)). Instead of the
//     byte permutes and quad shuffles FlashAttention-3 spends on P~ per block, the permutation
//     is folded into the layout the producer writes once (the same transposition pass).
//   Scales. Per S tile one float32 factor (tau s_Q,i) s_K,j, as the CPU engine's score_tile, times
//     log2(e) for exp2. s_V,j is folded into the online softmax's rescale: the accumulator holds
//     O_i / s_V,j-1 after block j - 1, and before O += P~_ij V_j it is multiplied by
//     e^(m_old - m_new) s_V,j-1 / s_V,j (with one scale per tensor the ratio is 1 and the rescale
//     is the bf16 kernel's); at the end O = acc s_V,last / l_i. The CPU adds (P~ V_j) s_V,j to a
//     float32 O instead: the two differ by a few float32 roundings, far under O's bf16 step.
//   Padding. Rows of Q, K past N are zero-filled by TMA (3-D maps, so never the next head's), and
//     V^T's rows are padded to nk_pad (a multiple of Bc) with zeros by the producer; keys past Nk
//     and masked keys get S = -inf, so P~ = 0 there.
//
// Everything is in an anonymous namespace, as gpu/fa3_kernel.cuh.
#pragma once
#include <type_traits>

#include "gpu/fa3_kernel.cuh"  // tma_load_3d, next_tile, encode_tiled, sm_count (the bf16 kernel's helpers)

namespace flashstep::gpu::tc {

namespace {

struct Fp8Maps {
  CUtensorMap q, k, vt;
};
struct Fp8Maps2 : Fp8Maps {  // Bc = 160, 192: V^T's second panel (keys 128-159 or 128-191 of a block)
  CUtensorMap vt2;
};
struct Fp8Maps3 : Fp8Maps2 {  // Bc = 224: V^T's third panel (keys 192-223)
  CUtensorMap vt3;
};

// BC_: keys per K/V block, 128 (the defaults) or 192 (ladder rungs 2, 3). V_j^T is then two
// panels along the keys: keys 0-127 in rows of 128 bytes (128B swizzle, one TMA box), keys
// 128-191 in rows of 64 bytes (64B swizzle, a second box), since a 128B-swizzled TMA box is at
// most 128 bytes wide. Bc = 160 (rung 19) and 224 (rung 18), FlashAttention-3's FP8 blocks at d =
// 64 and 128: 128 + 32 and 128 + 64 + 32 keys, the 32-key panel in rows of 32 bytes (32B
// swizzle). ILP_: the softmax's row max and sum in ILP_ independent chains (ladder rungs 1, 3; online_softmax_row's ILP). PINGPONG_: the consumers take turns issuing their
// products (ladder rungs 4, 5; the bf16 kernel's kPingPong). POLY_: every POLY_-th exp2 of the
// softmax by the ladder's polynomial on the FMA pipe (rungs 6, 7; the bf16 kernel's kPoly8).
// AHEAD_: S_i,j+1 issued before the softmax of block j, into a second accumulator, so that its
// product runs under that softmax (ladder rungs 8, 15: the second accumulator fits at d = 64 with
// two consumers, and at d = 128 with Bc = 64; at d = 128, Bc = 128 ptxas serialises the products
// for want of registers, C7512).
// DESC_ONCE_: every wgmma's matrix descriptor formed by one 32-bit add from a base built once per
// kernel (desc_add), in place of desc_sw128 / desc_sw64 per wgmma (ladder rungs 10, 11; the
// backward's configuration 12 did the same).
// K_AHEAD_: the producer issues K_j, then V_j-1 (ladder rungs 20, 21; the bf16 kernel's kKAhead),
// where the defaults issue K_j, then V_j.
template <int D_, int STAGES_, int CONSUMERS_ = 2, int BC_ = 128, int ILP_ = 1, bool PINGPONG_ = false, int POLY_ = 0,
          bool AHEAD_ = false, bool DESC_ONCE_ = false, bool K_AHEAD_ = false>
struct Fp8Config {
  static constexpr int D = D_, BC = BC_, STAGES = STAGES_, CONSUMERS = CONSUMERS_, ILP = ILP_, POLY = POLY_;
  static constexpr bool PINGPONG = PINGPONG_, AHEAD = AHEAD_, DESC_ONCE = DESC_ONCE_, K_AHEAD = K_AHEAD_;
  static_assert(!(AHEAD && PINGPONG), "S one block ahead is written without the consumers' turns");
  // V_j^T's panels: keys per row, 128 (or 64 at Bc = 64), then 64 or 32, then 32.
  static constexpr int VP0 = BC < 128 ? BC : 128, VP1 = BC - VP0 >= 64 ? 64 : BC - VP0, VP2 = BC - VP0 - VP1;
  static_assert(BC == 64 || BC == 128 || BC == 160 || BC == 192 || BC == 224,
                "Bc = 64 or 128 (one V^T panel), 160 or 192 (128 + 32 or 64 keys) or 224 (128 + 64 + 32)");
  // V_j^T's first panel: rows of 128 keys in the 128B swizzle, or of 64 in the 64B one (Bc = 64).
  static constexpr bool VP0_SW128 = VP0 == 128;
  using Maps = std::conditional_t<VP1 == 0, Fp8Maps, std::conditional_t<VP2 == 0, Fp8Maps2, Fp8Maps3>>;  // its tensor maps
  static constexpr int THREADS = 128 * (CONSUMERS + 1), BR = 64 * CONSUMERS, PANELS = D / 64;
  static constexpr bool PERSISTENT = true;  // next_tile's persistent order
  static constexpr bool HEAD_GROUPS = false, GROUP_ROUNDS = false;
  static constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 240 : 160;
  // Q_i (Br x d bytes), per stage K_j (Bc x d) and V_j^T (d x Bc), the mbarriers, + 1024 to align.
  static constexpr int64_t SMEM_Q = int64_t(BR) * D, SMEM_K = int64_t(BC) * D, SMEM_V = int64_t(D) * BC;
  static constexpr int BARRIERS = 2 + 4 * STAGES;
  static constexpr int64_t SMEM = SMEM_Q + STAGES * (SMEM_K + SMEM_V) + 8 * BARRIERS + 1024;
  static_assert(D == 64 || D == 128, "d = 64 (64-byte rows, 64B swizzle) or 128 (128-byte rows, 128B swizzle)");
  static_assert(CONSUMERS * 64 <= 256, "a TMA box has at most 256 rows");
  static_assert(SMEM_Q % 1024 == 0 && SMEM_K % 1024 == 0 && SMEM_V % 1024 == 0, "every tile on a 1024-byte boundary");
  static_assert(SMEM <= 227 * 1024, "Q, the K/V stages and the mbarriers must fit in 227 KiB");
};

// The K-major descriptor of a Q or K tile at d (rows of d bytes).
template <int D>
__device__ __forceinline__ uint64_t desc_qk(uint32_t addr) {
  if constexpr (D == 128) return desc_sw128(addr);
  else return desc_sw64(addr);
}

// Four float32 values (P~ in [0, 1]) rounded to e4m3 (nearest even, saturating: PTX's cvt, as
// core/fp8.h's round_e4m3) into one register, a in the lowest byte. cvt's first source goes to
// the upper byte of its pair.
__device__ __forceinline__ uint32_t pack4_e4m3(float a, float b, float c, float d) {
  uint32_t r;
  asm("{\n.reg .b16 lo, hi;\n"
      "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
      "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      "mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(r)
      : "f"(a), "f"(b), "f"(c), "f"(d));
  return r;
}
// P~_ij (the accumulator layout of S_ij, s[4n + e]) into the A fragments of O += P~ V, one k32
// step per 32 keys; the key order within the step is fp8_vt_key's (the header above).
template <int BC>
__device__ __forceinline__ void pack_p_e4m3(const float (&s)[BC / 2], uint32_t (&pa)[BC / 32][4]) {
#pragma unroll
  for (int kk = 0; kk < BC / 32; ++kk) {
    // Register 0: row g, keys 2t, 2t+1, 8+2t, 9+2t (entries 0, 1, 4, 5); 1: row g + 8, the same
    // keys; 2, 3: those + 16 (gpu/tc_launch.h's fp8_pack_entry).
    const float* x = s + 16 * kk;
#pragma unroll
    for (int r = 0; r < 4; ++r)
      pa[kk][r] = pack4_e4m3(x[fp8_pack_entry(r, 0)], x[fp8_pack_entry(r, 1)], x[fp8_pack_entry(r, 2)],
                             x[fp8_pack_entry(r, 3)]);
  }
}

template <class C>
__global__ void __launch_bounds__(C::THREADS, 1) fp8_kernel(const Fp8Params fp, const __grid_constant__ typename C::Maps maps) {
  constexpr int D = C::D, BC = C::BC, BR = C::BR, PANELS = C::PANELS, ST = C::STAGES;
  const TcParams& p = fp.base;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sQ = (smem_addr(smem) + 1023u) & ~1023u, sKV = sQ + uint32_t(C::SMEM_Q);
  const uint32_t bars = sKV + uint32_t(ST * (C::SMEM_K + C::SMEM_V));
  const FwdBars<ST> fb{bars};  // the bf16 kernel's mbarriers (gpu/fa3_kernel.cuh)
  const uint32_t barQ = fb.fullQ(), emptyQ = fb.emptyQ();
  auto stageK = [&](int s) { return sKV + uint32_t(s * (C::SMEM_K + C::SMEM_V)); };
  auto stageV = [&](int s) { return stageK(s) + uint32_t(C::SMEM_K); };

  const int tid = threadIdx.x, wg = tid / 128;
  const int Tr = (p.nq + BR - 1) / BR;

  if (tid == 0) fb.init(C::CONSUMERS * 4);
  __syncthreads();

  int i = 0;
  int64_t h = 0;
  if (wg == 0) {
    // ---- the producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0) {
      int g0 = 0, q_uses = 0;
      TileCursor cur;  // unused: next_tile's ungrouped order
      for (int k = 0; next_tile<C>(p, Tr, k, i, h, cur); ++k) {
        const int row0 = i * BR, n_blocks = kept_blocks(row_limit(p, h), row0, BR, p.nq, BC);
        if (n_blocks == 0) continue;  // rows that keep no key: the consumers write O = 0 alone
        // FA2fwd L4: Q_i (one box of Br rows x d bytes), once the consumers are done with the last.
        if (q_uses > 0) mbar_wait(emptyQ, uint32_t((q_uses - 1) & 1));
        ++q_uses;
        mbar_expect_tx(barQ, uint32_t(C::SMEM_Q));
        tma_load_3d(sQ, &maps.q, 0, row0, int(h), barQ);
        // V_j^T's panels into stage s (the copies of one stage's V).
        auto copy_vt = [&](int s, int j) {
          tma_load_3d(stageV(s), &maps.vt, j * BC, 0, int(h), fb.fullV(s));
          if constexpr (C::VP1 > 0)
            tma_load_3d(stageV(s) + uint32_t(D * C::VP0), &maps.vt2, j * BC + C::VP0, 0, int(h), fb.fullV(s));
          if constexpr (C::VP2 > 0)
            tma_load_3d(stageV(s) + uint32_t(D * (C::VP0 + C::VP1)), &maps.vt3, j * BC + C::VP0 + C::VP1, 0, int(h),
                        fb.fullV(s));
        };
        if constexpr (!C::K_AHEAD) {
          // FA2fwd L7: K_j (Bc rows x d bytes) and V_j^T (d rows x Bc keys) into stage g mod ST.
          for (int j = 0; j < n_blocks; ++j) {
            const int g = g0 + j, s = g % ST;
            const uint32_t par = uint32_t((g / ST - 1) & 1);
            if (g >= ST) mbar_wait(fb.emptyK(s), par);
            mbar_expect_tx(fb.fullK(s), uint32_t(C::SMEM_K));
            tma_load_3d(stageK(s), &maps.k, 0, j * BC, int(h), fb.fullK(s));
            if (g >= ST) mbar_wait(fb.emptyV(s), par);
            mbar_expect_tx(fb.fullV(s), uint32_t(C::SMEM_V));
            copy_vt(s, j);
          }
        } else {
          // K_AHEAD (ladder): K_j, then V_j-1, so that K_j+2's copy waits for its own stage (S_ij
          // done), not behind V_j+1's, which waits for V_j-1's release (O += P~ V_j-1 done).
          auto load = [&](int j, bool v) {
            const int g = g0 + j, s = g % ST;
            const uint32_t full = v ? fb.fullV(s) : fb.fullK(s);
            if (g >= ST) mbar_wait(v ? fb.emptyV(s) : fb.emptyK(s), uint32_t((g / ST - 1) & 1));
            mbar_expect_tx(full, uint32_t(v ? C::SMEM_V : C::SMEM_K));
            if (v) copy_vt(s, j);
            else tma_load_3d(stageK(s), &maps.k, 0, j * BC, int(h), full);
          };
          for (int j = 0; j < n_blocks; ++j) {
            load(j, false);
            if (j > 0) load(j - 1, true);
          }
          load(n_blocks - 1, true);
        }
        g0 += n_blocks;
      }
    }
    return;
  }

  // ---- the consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::CONSUMER_REGS));
  const int cw = wg - 1, ctid = tid - 128, warp = (ctid / 32) % 4, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  float o[PANELS][32];
  float s[BC / 2];
  float s_ahead[C::AHEAD ? BC / 2 : 1];  // AHEAD: the second accumulator of S
  uint32_t pa[BC / 32][4];
  int g0 = 0, q_uses = 0;
  auto phase = [&](int gb) { return uint32_t((gb / ST) & 1); };

  // O_i += P~_ij V_j (K/V block gb): one m64n{d}k32 per 32 keys, B = V_j^T from byte 32 kk of each row.
  // DESC_ONCE: the descriptors of Q_i (this consumer's rows), of stage 0's K_j and of stage 0's
  // two V_j^T panels; a stage's are these plus the stage's offset (every address is below 256 KiB,
  // so desc_add's 14-bit field does not carry).
  constexpr uint32_t STAGE_BYTES = uint32_t(C::SMEM_K + C::SMEM_V);
  const uint64_t q_desc = desc_qk<D>(sQ + uint32_t(cw * 64 * D)), k_desc = desc_qk<D>(stageK(0));
  const uint64_t v_desc = C::VP0_SW128 ? desc_sw128(stageV(0)) : desc_sw64(stageV(0));
  const uint64_t v2_desc =
      C::VP1 == 32 ? desc_sw32(stageV(0) + uint32_t(D * C::VP0)) : desc_sw64(stageV(0) + uint32_t(D * C::VP0));
  const uint64_t v3_desc = desc_sw32(stageV(0) + uint32_t(D * (C::VP0 + C::VP1)));
  constexpr int K1 = C::VP0 / 32, K2 = (C::VP0 + C::VP1) / 32;  // the k steps of the first two panels
  auto issue_pv = [&](int gb) {
    const uint32_t sV = stageV(gb % ST), st_off = uint32_t(gb % ST) * STAGE_BYTES;
#pragma unroll
    for (int kk = 0; kk < BC / 32; ++kk) {
      // Keys 32 kk.. in the first panel (rows of 128 bytes, or of 64 at Bc = 64) or, past it, the
      // second (rows of 64 or 32) or the third (rows of 32).
      const uint64_t b = C::DESC_ONCE ? (kk < K1   ? desc_add(v_desc, st_off + uint32_t(kk * 32))
                                         : kk < K2 ? desc_add(v2_desc, st_off + uint32_t((kk - K1) * 32))
                                                   : desc_add(v3_desc, st_off + uint32_t((kk - K2) * 32)))
                         : kk < K1 ? (C::VP0_SW128 ? desc_sw128(sV + uint32_t(kk * 32)) : desc_sw64(sV + uint32_t(kk * 32)))
                         : kk >= K2 ? desc_sw32(sV + uint32_t(D * (C::VP0 + C::VP1) + (kk - K2) * 32))
                         : C::VP1 == 32 ? desc_sw32(sV + uint32_t(D * C::VP0 + (kk - K1) * 32))
                                        : desc_sw64(sV + uint32_t(D * C::VP0 + (kk - K1) * 32));
      if constexpr (PANELS == 2) wgmma_rs_e4m3(o[0], o[1], pa[kk], b, 1);
      else wgmma_rs_e4m3(o[0], pa[kk], b, 1);
    }
  };
  // S_ij = Q_i K_j^T into acc: d / 32 k-steps of 32 bytes along each row of d bytes.
  auto issue_s_to = [&](float (&acc)[BC / 2], int gb) {
    const uint32_t sK = stageK(gb % ST), st_off = uint32_t(gb % ST) * STAGE_BYTES;
#pragma unroll
    for (int kd = 0; kd < D / 32; ++kd) {
      const uint64_t a = C::DESC_ONCE ? desc_add(q_desc, uint32_t(kd * 32)) : desc_qk<D>(sQ + uint32_t(cw * 64 * D + kd * 32));
      const uint64_t b = C::DESC_ONCE ? desc_add(k_desc, st_off + uint32_t(kd * 32)) : desc_qk<D>(sK + uint32_t(kd * 32));
      wgmma_ss_e4m3(acc, a, b, kd > 0);
    }
  };
  auto issue_s = [&](int gb) { issue_s_to(s, gb); };
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  auto fence_o = [&] {
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
  };
  // A turn on the tensor cores (PINGPONG): wait for ours (named barrier 1 + cw), and after
  // issuing hand it to the next consumer of the ring, as the bf16 kernel's turn_begin and
  // turn_end (gpu/fa3_kernel.cuh): each tile's last consumer opens consumer 0's first turn and
  // its own last turn hands nothing on, so every wait meets exactly one arrival. The barriers
  // are the unaligned forms: a consumer waits at three places in the code and the other arrives
  // from three, and .aligned would require one instruction for all the threads involved.
  auto turn_begin = [&] {
    if constexpr (C::PINGPONG) named_sync_unaligned(1 + cw, 256);
  };
  auto turn_end = [&](bool last) {
    if constexpr (C::PINGPONG)
      if (!(last && cw == C::CONSUMERS - 1)) named_arrive_unaligned(1 + (cw + 1) % C::CONSUMERS, 256);
  };

  TileCursor cur;  // unused: next_tile's ungrouped order
  for (int k = 0; next_tile<C>(p, Tr, k, i, h, cur); ++k) {
    const int row0 = i * BR;
    const RowLimit lim = row_limit(p, h);
    const int n_blocks = kept_blocks(lim, row0, BR, p.nq, BC);
    const int wrow0 = row0 + cw * 64 + warp * 16;
    const int row_hi[2] = {lim.hi(wrow0 + g), lim.hi(wrow0 + g + 8)};
    const int warp_hi_min = lim.hi(min(wrow0, p.nq - 1));
    const float* sk = fp.k_scale + h * fp.k_blocks;
    const float* sv = fp.v_scale + h * fp.k_blocks;
    const bool kv_per_block = fp.k_blocks > 1;
    // (tau s_Q,i): the first half of the CPU's factor (tau s_Q,i) s_K,j.
    const float tau_sq = p.scale * fp.q_scale[h * fp.q_blocks + (fp.q_blocks > 1 ? i : 0)];
    float sv_prev = sv[0];  // the scale O's accumulator is in (block 0: its own, the ratio 1)

    // FA2fwd L5: on chip, O_i = 0, l_i = 0, m_i = -inf (m in units of log2(e) S).
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
      for (int e = 0; e < 32; ++e) o[pn][e] = 0.0f;
    float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
    if (C::PINGPONG && cw == C::CONSUMERS - 1 && n_blocks > 0) named_arrive_unaligned(1, 256);

    if (n_blocks > 0) mbar_wait(barQ, uint32_t(q_uses & 1));
    // The mask and FA2fwd L9 with block j's factor, then L10's rescale (times s_V,j-1 / s_V,j) and
    // P~_ij into A fragments; `pending`: O += P~_i,j-1 V_j-1 still runs and is waited for between
    // the two, as in the bf16 kernel's softmax_block (the wait in both arms of a branch on j's
    // parity, which the whole warpgroup shares, so that ptxas keeps it after the softmax).
    auto softmax_block = [&](int j, int gb, bool pending, float s_k, float s_v) {
      const float scale_log2 = tau_sq * s_k * kLog2e;
      float alphas[2];
      softmax_scores<BC, C::ILP, C::POLY>(s, alphas, m_i, l_i, scale_log2, j * BC, warp_hi_min, row_hi, t4);
      const float ratio = sv_prev / s_v;  // 1 exactly with one scale per tensor
      sv_prev = s_v;
      alphas[0] *= ratio;
      alphas[1] *= ratio;
      if (pending) {
        if (j & 1)
          wgmma_wait_all();
        else
          wgmma_wait_all_copy();
        fence_o();
        if (warp_rescales(alphas)) rescale_o(alphas, o);  // per warp: no wgmma instruction inside
        release(fb.emptyV((gb - 1) % ST));
      } else {
        if (warp_rescales(alphas)) rescale_o(alphas, o);
      }
      pack_p_e4m3<BC>(s, pa);
    };
    // Each block: S_ij as its own wgmma group, then (j > 0) O += P~_i,j-1 V_j-1 as another; wait
    // for S_ij alone. Block 0 is peeled off (no branch between a group's fence and commit).
    auto intra_block = [&](int j, bool pv) {
      const int gb = g0 + j, st = gb % ST;
      // Block j's scales, loaded before the waits so that their latency hides under S_ij.
      const float s_k = kv_per_block ? sk[j] : sk[0];
      const float s_v = kv_per_block ? sv[j] : sv[0];
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
      release(fb.emptyK(st));
      softmax_block(j, gb, pv, s_k, s_v);
    };
    if constexpr (C::AHEAD) {
      // S one block ahead. Block j starts with S_ij complete in `cur`; it issues S_i,j+1 into
      // `nxt`, runs the softmax of block j under it and under O += P~_i,j-1 V_j-1, waits for both,
      // rescales O, packs P~_ij and issues O += P~_ij V_j. The two accumulators swap roles from
      // block to block; the loop is unrolled by two so that each role is a fixed set of registers.
      // NEXT (j + 1 < n_blocks) is a constant at every call, folded once the step is inlined.
      // ptxas must see, on every path through the code, each accumulator read after the wait for
      // the product that writes it (else it serialises every product, C7514); it cannot pair
      // run-time tests with each other. So each step waits before touching O even at j = 0, and
      // the tile ends with an unconditional wait for everything.
      auto step = [&](const bool NEXT, float (&cur)[BC / 2], float (&nxt)[BC / 2], int j) {
        const int gb = g0 + j;
        const float s_k = kv_per_block ? sk[j] : sk[0];
        const float s_v = kv_per_block ? sv[j] : sv[0];
        if (NEXT) {
          mbar_wait(fb.fullK((gb + 1) % ST), phase(gb + 1));
          fence_regs(nxt);
          wgmma_fence();
          issue_s_to(nxt, gb + 1);
          wgmma_commit();
          fence_regs(nxt);
        }
        const float scale_log2 = tau_sq * s_k * kLog2e;
        float alphas[2];
        softmax_scores<BC, C::ILP, C::POLY>(cur, alphas, m_i, l_i, scale_log2, j * BC, warp_hi_min, row_hi, t4);
        const float ratio = sv_prev / s_v;
        sv_prev = s_v;
        alphas[0] *= ratio;
        alphas[1] *= ratio;
        // O += P~_i,j-1 V_j-1 and S_i,j+1 done. One wait for both: a wait for the older alone
        // (wait_group 1) was not seen by ptxas to retire it once the loop had gone round (it
        // serialised every product, C7514), and the two arms of softmax_block's branch on the
        // block's parity made it serialise them too (C7512). By the end of the softmax S_i,j+1
        // has had the softmax's time to run.
        wgmma_wait_all();
        fence_o();
        if (NEXT) {
          fence_regs(nxt);
          release(fb.emptyK((gb + 1) % ST));
        }
        if (warp_rescales(alphas)) rescale_o(alphas, o);
        if (j > 0) release(fb.emptyV((gb - 1) % ST));
        pack_p_e4m3<BC>(cur, pa);
        mbar_wait(fb.fullV(gb % ST), phase(gb));
        fence_o();
        wgmma_fence();
        issue_pv(gb);
        wgmma_commit();
      };
      if (n_blocks > 0) {
        mbar_wait(fb.fullK(g0 % ST), phase(g0));
        fence_regs(s);
        wgmma_fence();
        issue_s_to(s, g0);
        wgmma_commit();
        wgmma_wait_all();
        fence_regs(s);
        release(fb.emptyK(g0 % ST));
      }
      // Blocks in pairs: S of an even block is in s, of an odd one in s_ahead.
      for (int j = 0; j < n_blocks; j += 2) {
        if (j + 1 < n_blocks) step(true, s, s_ahead, j);
        else step(false, s, s_ahead, j);
        if (j + 1 < n_blocks) {
          if (j + 2 < n_blocks) step(true, s_ahead, s, j + 1);
          else step(false, s_ahead, s, j + 1);
        }
      }
      wgmma_wait_all();  // the last O_i += P~ V (already done on every path the tile takes)
      fence_o();
    } else {
      if (n_blocks > 0) intra_block(0, false);
      for (int j = 1; j < n_blocks; ++j) intra_block(j, true);
    }
    if (n_blocks > 0) {
      ++q_uses;
      release(emptyQ);  // every S of this tile is done: Q_i may be replaced
      const int gb = g0 + n_blocks - 1;
      if constexpr (C::AHEAD) {
        release(fb.emptyV(gb % ST));  // the last O_i += P~ V was issued and waited for above
      } else {
      // The last O_i += P~ V.
      mbar_wait(fb.fullV(gb % ST), phase(gb));
      turn_begin();
      fence_o();
      wgmma_fence();
      issue_pv(gb);
      wgmma_commit();
      turn_end(true);
      wgmma_wait_all();
      fence_o();
      release(fb.emptyV(gb % ST));
      }
      // The accumulator is O_i / s_V,last: back to O_i before FA2fwd L12's division by l_i.
      const float alphas[2] = {sv_prev, sv_prev};
      rescale_o(alphas, o);
    }
    g0 += n_blocks;

    write_o_lse<__nv_bfloat16, D, PANELS>(p, h, wrow0, g, t4, o, m_i, l_i);  // FA2fwd L12-L15, O in bf16
  }
}

// (heads, rows, inner) row-major bytes as a 3-D map (inner, rows, heads) of boxes
// box_inner x box_rows, swizzled as the wgmma descriptors read them; past the ends zero-filled.
CUtensorMap make_map_u8(const void* base, int heads, int rows, int inner, int box_inner, int box_rows,
                        CUtensorMapSwizzle swizzle) {
  CUtensorMap m;
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(rows), cuuint64_t(heads)};
  const cuuint64_t strides[2] = {cuuint64_t(inner), cuuint64_t(rows) * cuuint64_t(inner)};
  const cuuint32_t box[3] = {cuuint32_t(box_inner), cuuint32_t(box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void*>(base), dims, strides, box,
                                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled (e4m3) failed with CUresult " + std::to_string(int(r)));
  return m;
}

// The host's view of configuration C's tiles (fp8_tile_info, the ladder's rungs).
template <class C>
Fp8TileInfo fp8_info_of(const char* what) {
  return Fp8TileInfo{C::BR, C::BC, C::THREADS, C::STAGES, C::SMEM, what, true};
}

template <class C>
void launch_fp8(const Fp8Params& fp) {
  static int64_t opted = 0;
  const TcParams& p = fp.base;
  const int64_t Tr = (p.nq + C::BR - 1) / C::BR, Tc = (p.nk + C::BC - 1) / C::BC;
  // What the kernel assumes of its inputs (gpu/fp8_tc.cpp builds them so): V^T rows of whole
  // blocks, one scale per head or one per tile, every pointer set.
  if (p.d != C::D || fp.nk_pad % C::BC != 0 || fp.nk_pad < p.nk || p.nq < 1 || p.nk < 1 ||
      (fp.q_blocks != 1 && fp.q_blocks != Tr) || (fp.k_blocks != 1 && fp.k_blocks != Tc) || !p.Q || !p.K || !p.V ||
      !p.O || !p.lse || !fp.q_scale || !fp.k_scale || !fp.v_scale)
    throw std::runtime_error("launch_fp8: inputs not laid out as the FP8 kernel reads them (d " + std::to_string(p.d) +
                             ", nk_pad " + std::to_string(fp.nk_pad) + ", scale blocks " + std::to_string(fp.q_blocks) +
                             " / " + std::to_string(fp.k_blocks) + ")");
  typename C::Maps maps;
  const CUtensorMapSwizzle sw = C::D == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  maps.q = make_map_u8(p.Q, p.heads, p.nq, C::D, C::D, C::BR, sw);
  maps.k = make_map_u8(p.K, p.heads, p.nk, C::D, C::D, C::BC, sw);
  maps.vt = make_map_u8(p.V, p.heads, C::D, fp.nk_pad, C::VP0, C::D,
                       C::VP0_SW128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B);
  if constexpr (C::VP1 > 0)
    maps.vt2 = make_map_u8(p.V, p.heads, C::D, fp.nk_pad, C::VP1, C::D,
                           C::VP1 == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_64B);
  if constexpr (C::VP2 > 0) maps.vt3 = make_map_u8(p.V, p.heads, C::D, fp.nk_pad, C::VP2, C::D, CU_TENSOR_MAP_SWIZZLE_32B);
  static const int sms = sm_count();
  const dim3 grid(unsigned(std::min<int64_t>(Tr * p.heads, sms)));
  opt_in_shared(fp8_kernel<C>, C::SMEM, opted);
  fp8_kernel<C><<<grid, C::THREADS, C::SMEM>>>(fp, maps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace flashstep::gpu::tc
