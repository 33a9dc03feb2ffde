// The tensor-core forward's mma.sync ladder (rungs 1-10, 12) and the Bc sweep (101-104); rung 11,
// the default on GPUs other than compute capability 9.0, is in gpu/fa2_tc.cu. Built only with
// -DFLASHSTEP_LADDER=ON; the kernel template is gpu/fa2_tc_kernel.cuh.
//
// The ladder (each variant keeps what the previous one did unless it says otherwise):
//   1  plain: 4 warps x 16 rows (Br = 64), Bc = 64, one K/V buffer: load K_j, V_j, wait,
//      compute (no overlap of loads with math). Q_i kept in registers as A fragments.
//   2  two K/V buffers: K_{j+1}, V_{j+1} are in flight while S_ij, P~_ij V_j are computed.
//   3  Br = 128 (8 warps x 16 rows): K_j, V_j are loaded once for twice the rows; d = 64 also
//      Bc = 128 (half the iterations, each with twice the independent MMAs).
//   4  32 rows per warp (MT = 2, 4 warps, Br = 128): every K_j / V_j fragment read from shared
//      memory feeds two MMAs instead of one (half the ldmatrix traffic per FLOP); at d = 128
//      Q_i is re-read from shared memory (ldmatrix) instead of held, to fit registers.
//   5  FA2's own tiling for d = 128 (4 warps x 32 rows, Bc = 64, Q_i re-read from shared
//      memory, its k loop not unrolled); d = 64: v4 with Q_i re-read and registers capped for
//      three blocks per SM.
//   6  d = 64: Br = 256 (8 warps x 32 rows); d = 128: v3 with Q_i re-read from shared memory
//      and registers capped for two blocks per SM.
//   7  one barrier per j instead of two (v4 for d = 64, v3 for d = 128): the refill of the
//      buffer block j - 1 used is issued after the barrier that starts block j.
//   8  d = 64: v7 with three K/V buffers; d = 128: v2 with one barrier per j.
//   9  v7, and diag(e^(m_i - m_ij)) O_i skipped when no row max of the warp moved (a warp
//      vote; alpha = 1 exactly then, so the result is the same): after the first few blocks
//      the row max rarely moves, and at d = 128 that rescale is a quarter of the non-MMA
//      instructions.
//   10 v9 with three K/V buffers.
//   11 v7 (d = 64) / v9 (d = 128) with the causal grid laid out (head, Q block): every head's
//      longest Q block is scheduled before any head's second longest, so the short blocks fill
//      the tail (v1-v10 go longest-first within one head only). Non-causal: v7 / v9.
//   12 d = 64: v2 (4 warps x 16 rows, Br = 64: twice the Q blocks to balance causal work,
//      166 registers: three blocks per SM) with one barrier per j and v11's grid; d = 128:
//      4 warps x 32 rows with Bc = 32 (each ldmatrix of K_j, V_j
//      feeds 4 MMAs; the S registers are half v5's), Q_i from shared memory, three K/V
//      buffers, one barrier per j, lazy rescale, v11's grid.
//   13 Hopper (gpu/fa2_wgmma.cu, sm_90a only): wgmma with Q_i, K_j, V_j read by the tensor
//      cores from 128B-swizzled shared memory and P~_ij from registers; 2 warpgroups x 64 rows,
//      Bc 64. 14: v13 with Bc 128 (twice the MMA work per wait and per barrier).
//   15 FlashAttention-3's structure (gpu/fa3_forward.cu, sm_90a only): a producer warpgroup
//      issues TMA copies into an mbarrier ring of K/V stages, setmaxnreg, two consumer
//      warpgroups with no block-wide barrier. 16: v15 with ping-pong of the consumers.
//      17: v15 with the intra-warpgroup overlap. 18: v17 persistent. 19: v17 with 3 consumers.
//      20: v17 with a longer Bc (192 at d = 64, 176 at d = 128). 21: v18 with v20's Bc.
//   101-104  the Bc sweep (Figure 2 middle at full speed): Bc = 16, 32, 64, 128 with Br = 128
//      as 8 warps x 16 rows, Q_i in registers, two K/V buffers, one barrier per j. Not rungs
//      of the ladder (variant 0 never picks them); bench-gpu --tensor-cores times them.
// gpu/ladder/notes/tensor-cores.md records each variant's prediction and measured outcome.
#include "gpu/fa2_tc_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

//                        D, warps, MT, Bc, stages, tweaks[, blocks per SM]
const Entry kLadder[] = {
    entry<1, Config<64, 4, 1, 64, 1, kQInRegisters>>("plain: Br 64, Bc 64, one K/V buffer"),
    entry<1, Config<128, 4, 1, 64, 1, kQInRegisters>>("plain: Br 64, Bc 64, one K/V buffer"),
    entry<2, Config<64, 4, 1, 64, 2, kQInRegisters>>("+ double-buffered cp.async K/V"),
    entry<2, Config<128, 4, 1, 64, 2, kQInRegisters>>("+ double-buffered cp.async K/V"),
    entry<3, Config<64, 8, 1, 128, 2, kQInRegisters>>("Br 128 (8 warps), Bc 128"),
    entry<3, Config<128, 8, 1, 64, 2, kQInRegisters>>("Br 128 (8 warps), Bc 64"),
    entry<4, Config<64, 4, 2, 64, 2, kQInRegisters>>("32 rows per warp (4 warps), Bc 64"),
    entry<4, Config<128, 4, 2, 32, 2, kNoTweaks>>("32 rows per warp (4 warps), Bc 32, Q from smem"),
    entry<5, Config<64, 4, 2, 64, 2, kNoTweaks, 3>>("v4, Q from smem, registers for 3 blocks/SM"),
    entry<5, Config<128, 4, 2, 64, 2, kNoTweaks>>("32 rows per warp (4 warps), Bc 64, Q from smem"),
    entry<6, Config<64, 8, 2, 64, 2, kQInRegisters>>("Br 256: 8 warps x 32 rows, Bc 64"),
    entry<6, Config<128, 8, 1, 64, 2, kNoTweaks, 2>>("v3, Q from smem, registers for 2 blocks/SM"),
    entry<7, Config<64, 4, 2, 64, 2, kQInRegisters | kOneBarrier>>("v4 with one barrier per j"),
    entry<7, Config<128, 8, 1, 64, 2, kQInRegisters | kOneBarrier>>("v3 with one barrier per j"),
    entry<8, Config<64, 4, 2, 64, 3, kQInRegisters | kOneBarrier>>("v7 with three K/V buffers"),
    entry<8, Config<128, 4, 1, 64, 2, kQInRegisters | kOneBarrier>>("v2 with one barrier per j"),
    entry<9, Config<64, 4, 2, 64, 2, kQInRegisters | kOneBarrier | kLazyRescale>>("v7, O_i rescaled only when a row max moved"),
    entry<9, Config<128, 8, 1, 64, 2, kQInRegisters | kOneBarrier | kLazyRescale>>("v7, O_i rescaled only when a row max moved"),
    entry<10, Config<64, 4, 2, 64, 3, kQInRegisters | kOneBarrier | kLazyRescale>>("v9 with three K/V buffers"),
    entry<10, Config<128, 8, 1, 64, 3, kQInRegisters | kOneBarrier | kLazyRescale>>("v9 with three K/V buffers"),
    entry<12, Config<64, 4, 1, 64, 2, kQInRegisters | kOneBarrier | kLongestFirst>>("v2 with one barrier per j and v11's order (Br 64)"),
    entry<12, Config<128, 4, 2, 32, 3, kOneBarrier | kLazyRescale | kLongestFirst>>("32 rows per warp, Bc 32, Q from smem, 3 K/V buffers, v11's order"),
    // The Bc sweep (Figure 2 middle at full speed; not rungs of the ladder): one kernel family,
    // Br = 128 as 8 warps x 16 rows, Q_i in registers, two K/V buffers, one barrier per j.
    entry<101, Config<64, 8, 1, 16, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 16"),
    entry<101, Config<128, 8, 1, 16, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 16"),
    entry<102, Config<64, 8, 1, 32, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 32"),
    entry<102, Config<128, 8, 1, 32, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 32"),
    entry<103, Config<64, 8, 1, 64, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 64"),
    entry<103, Config<128, 8, 1, 64, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 64"),
    entry<104, Config<64, 8, 1, 128, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 128"),
    entry<104, Config<128, 8, 1, 128, 2, kQInRegisters | kOneBarrier>>("Bc sweep: Br 128 (8 warps x 16 rows), Bc 128"),
};

}  // namespace

TcVariantInfo fa2_tc_ladder_variant(int variant, int d) {
  for (const Entry& e : kLadder)
    if (e.variant == variant && e.d == d) return TcVariantInfo{variant, e.what, e.Br, e.Bc, e.warps, e.stages, e.smem, true};
  return TcVariantInfo{};
}

void fa2_tc_ladder_launch(int variant, const TcParams& p) {
  for (const Entry& e : kLadder)
    if (e.variant == variant && e.d == p.d) return e.launch(p);
  throw std::runtime_error("fa2_tc_ladder_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.d));
}

}  // namespace flashstep::gpu::tc
