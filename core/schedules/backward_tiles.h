// What the tiled backward passes (Algorithm 4 and FlashAttention-2's Algorithm 2) share: the
// hand-over from the forward, the per-tile formulas, and how each recomputes P_ij. Internal
// to core/ (the schedules' backward.cpp files); the public entry points are in core/backward.h.
#pragma once
#include "core/backward.h"
#include "core/online_softmax.h"
#include "core/philox.h"
#include "core/schedules/context.h"

#include <stdexcept>

namespace flashstep {

// The forward's final HBM (O, l, m / L / P), handed over with its traffic counters.
inline Hbm take_forward_hbm(Trace& tr) {
  if (!tr.hbm_after)
    throw std::logic_error("backward: the forward did not keep its HBM (set Trace::keep_hbm)");
  Hbm h = std::move(*tr.hbm_after);
  tr.hbm_after.reset();
  return h;
}

// Records the backward's own SRAM peak, closes the run's totals, reads the gradients back.
inline void finish_backward(ScheduleContext& ctx, Trace& tr) {
  tr.backward_totals.peak_sram_bytes = ctx.sram.peak_bytes();
  tr.backward_totals.peak_tile_bytes = ctx.sram.peak_tile_bytes();
  ctx.finish();
  tr.dQ = ctx.hbm.get(Tensor::dQ);
  tr.dK = ctx.hbm.get(Tensor::dK);
  tr.dV = ctx.hbm.get(Tensor::dV);
}

// Whether some query block keeps a key of K/V block j; if none does, K_j and V_j are never
// loaded and dK_j = dV_j keep the zeros they were initialised with.
inline bool kv_block_needed(const Problem& p, const Tiling& t, int64_t j) {
  const int64_t c0 = j * t.Bc, c1 = c0 + t.rows_in_kv_block(j, p.nk);
  for (int64_t i = 0; i < t.Tr; ++i)
    if (p.mask.classify(i * t.Br, i * t.Br + t.rows_in_q_block(i, p.nq), c0, c1, p.nk) !=
        Mask::Block::empty)
      return true;
  return false;
}

// Alg4 L7-8 / FA2b L6-7: load K_j and V_j and start dK~_j = dV~_j = 0 on chip, one step
// each. When no query keeps a key of block j, records one skip step instead and returns false.
inline bool open_kv_block(ScheduleContext& ctx, const Problem& p, const Tiling& t, int64_t j,
                          Line skip, Line load, Line init) {
  const int64_t bc = t.rows_in_kv_block(j, p.nk);
  if (!kv_block_needed(p, t, j)) {
    ctx.begin(skip, -1, j);
    ctx.end(0);
    return false;
  }
  ctx.begin(load, -1, j);
  ctx.sram.load(Slot::Kj, ctx.hbm, Tensor::K, j * t.Bc, bc);
  ctx.sram.load(Slot::Vj, ctx.hbm, Tensor::V, j * t.Bc, bc);
  ctx.end(0);
  ctx.begin(init, -1, j);
  ctx.sram.scratch(Slot::dKj, bc, p.d).setZero();
  ctx.sram.scratch(Slot::dVj, bc, p.d).setZero();
  ctx.end(0);
  return true;
}

// Alg4 L24 / FA2b L18: write dK_j <- dK~_j and dV_j <- dV~_j to HBM, once; free the j tiles.
inline void close_kv_block(ScheduleContext& ctx, const Tiling& t, int64_t j, Line write) {
  ctx.begin(write, -1, j);
  ctx.hbm.store(Tensor::dK, j * t.Bc, ctx.sram.at(Slot::dKj));
  ctx.hbm.store(Tensor::dV, j * t.Bc, ctx.sram.at(Slot::dVj));
  ctx.end(0);
  for (Slot sl : {Slot::Kj, Slot::Vj, Slot::dKj, Slot::dVj}) ctx.sram.release(sl);
}

// A block (i, j) that the mask hides entirely: P_ij = 0 adds nothing; one skip step, no work.
inline bool skip_empty_block(ScheduleContext& ctx, Mask::Block kind, Line skip, int64_t i, int64_t j) {
  if (kind != Mask::Block::empty) return false;
  ctx.begin(skip, i, j);
  ctx.end(0);
  return true;
}

// Alg4 L14-15 / FA2b L12: P^dropped_ij = P_ij o Z_ij. Z_ij is the forward's draw: Philox keyed
// by the seed with the counter (column, row), so the same element gets the same decision
// whichever pass, loop order or block size asks for it. `keep` returns Z's pattern.
inline const Mat& dropped_probs(Sram& sram, const Mat& P, const Problem& p, int64_t row0,
                                int64_t col0, Mat& keep) {
  Mat& Pd = sram.scratch(Slot::Pdij, P.rows(), P.cols());
  Pd = P;
  apply_dropout(Pd, p.dropout, p.seed, row0, col0, &keep);
  return Pd;
}

// Z_ij's pattern alone (1 kept, 0 dropped) for a rows x cols tile at (row0, col0).
inline void dropout_pattern(Mat& keep, int64_t rows, int64_t cols, const Problem& p, int64_t row0,
                            int64_t col0) {
  Mat ones = Mat::Ones(rows, cols);
  apply_dropout(ones, p.dropout, p.seed, row0, col0, &keep);
}

// Alg4 L18: dP_ij = dP^dropped_ij o Z_ij (Z = keep / (1 - p)).
inline void undrop_grad(Mat& dP, const Mat& keep, float p) {
  dP.array() *= keep.array() * (1.0f / (1.0f - p));
}

// Alg4 L19 / FA2b L4: D_i = rowsum(dO_i o O_i) (equal to rowsum(P_ij o dP_ij) summed over j).
inline void rowsum_product(Mat& Di, const Mat& dOi, const Mat& Oi) {
  Di.col(0) = dOi.cwiseProduct(Oi).rowwise().sum();
}

// Alg4 L20 / FA2b L14: dS_ij = P_ij o (dP_ij - D_i), the softmax Jacobian applied row by row.
inline void grad_scores(Mat& dS, const Mat& P, const Mat& dP, const Mat& Di) {
  dS.array() = P.array() * (dP.array().colwise() - Di.col(0).array());
}

// --p-dtype in the backward: a tensor-core kernel (gpu/fa2_bwd_tc.cu) feeds its matmuls 16-bit
// operands, so it rounds P_ij (before dV += P^T dO) and dS_ij (before dQ += tau dS K and
// dK += tau dS^T Q) to the storage type in registers; S, P, dP, D and every accumulator stay
// float32. `rounded_tile` returns the tile as the kernel's MMA sees it (the tile itself when
// p_dtype is fp32: nothing is rounded, no copy). docs/backward.md, "On tensor cores".
inline const Mat& rounded_tile(const Mat& x, Dtype p_dtype, Mat& scratch) {
  if (p_dtype == Dtype::fp32) return x;
  scratch = x;
  round_in_place(p_dtype, scratch.data(), scratch.size());
  return scratch;
}

// FLOPs of the shared lines, counted as the forward counts them (a multiply-add is 2).
inline int64_t matmul_flops(int64_t rows, int64_t inner, int64_t cols) { return 2 * rows * inner * cols; }

}  // namespace flashstep
