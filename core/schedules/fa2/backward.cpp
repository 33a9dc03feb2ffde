// FlashAttention-2's backward pass (Dao 2023, Algorithm 2), one pseudocode line per step,
// labelled "FA2b Ln". Two changes against Algorithm 4: D = rowsum(dO o O) is computed once,
// up front, and written to HBM (so O_i is not loaded in the loop), and P_ij is recomputed
// from the one statistic the FA2 forward keeps, the logsumexp L_i. The loop order is
// Algorithm 4's (outer j, inner i); dQ_i still makes a round trip at every (i, j) (line 15).
// Dropout, which the paper's Algorithm 2 leaves out, is applied as in Algorithm 4: P_ij^dropped
// in line 12, dP_ij o Z_ij in line 13.
#include "core/schedules/fa2/fa2.h"

#include "core/schedules/backward_tiles.h"

namespace flashstep {

void run_backward_fa2(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, nk = p.nk, d = p.d;
  const float tau = p.scale;

  ScheduleContext ctx(tr, record, backward_tile_capacity(t), take_forward_hbm(tr));
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.put(Tensor::dO, tr.dO);
  // Line 3 only divides dK and dV: line 18 writes each block once. A K/V block that no query
  // keeps is skipped, so its rows start at zero outside the counted traffic (the GPU's
  // allocation does the same with a memset).
  hbm.put(Tensor::dK, Mat::Zero(nk, d));
  hbm.put(Tensor::dV, Mat::Zero(nk, d));
  hbm.allocate(Tensor::D, nq, 1);

  // FA2b L3: initialise dQ = 0 in HBM
  ctx.begin(Line::FA2B_L3, -1, -1);
  hbm.allocate(Tensor::dQ, nq, d);
  hbm.store(Tensor::dQ, 0, Mat::Zero(nq, d));
  ctx.end(0);

  // FA2b L4: D = rowsum(dO o O), block by block, written to HBM
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = ctx.begin(Line::FA2B_L4, i, -1);
    const Mat& Oi = sram.load(Slot::Oi, hbm, Tensor::O, row0, br);
    const Mat& dOi = sram.load(Slot::dOi, hbm, Tensor::dO, row0, br);
    Mat& Di = sram.scratch(Slot::Di, br, 1);
    rowsum_product(Di, dOi, Oi);
    hbm.store(Tensor::D, row0, Di);
    if (s) s->D_i = Di.col(0);
    for (Slot sl : {Slot::Oi, Slot::dOi, Slot::Di}) sram.release(sl);
    ctx.end(2 * br * d);
  }

  Mat keep, p16, ds16;  // P_ij and dS_ij as a tensor-core kernel's MMAs take them (--p-dtype)
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t bc = t.rows_in_kv_block(j, nk), col0 = j * t.Bc;
    // FA2b L6: load K_j, V_j; FA2b L7: dK_j = dV_j = 0 on chip
    if (!open_kv_block(ctx, p, t, j, Line::FA2B_SKIP, Line::FA2B_L6, Line::FA2B_L7)) continue;
    const Mat& Kj = sram.at(Slot::Kj);
    const Mat& Vj = sram.at(Slot::Vj);
    Mat& dKt = sram.at(Slot::dKj);
    Mat& dVt = sram.at(Slot::dVj);

    for (int64_t i = 0; i < t.Tr; ++i) {
      const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
      const Mask::Block kind = p.mask.classify(row0, row0 + br, col0, col0 + bc, nk);
      if (skip_empty_block(ctx, kind, Line::FA2B_SKIP, i, j)) continue;
      // FA2b L9: load Q_i, dO_i, L_i, D_i (dQ_i is loaded at line 15)
      ctx.begin(Line::FA2B_L9, i, j);
      const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
      const Mat& dOi = sram.load(Slot::dOi, hbm, Tensor::dO, row0, br);
      const Mat& Li = sram.load(Slot::Li, hbm, Tensor::L, row0, br);
      const Mat& Di = sram.load(Slot::Di, hbm, Tensor::D, row0, br);
      ctx.end(0);

      // FA2b L10: S_ij = tau Q_i K_j^T, masked element by element in a partly masked block
      Step* s = ctx.begin(Line::FA2B_L10, i, j);
      Mat& S = sram.scratch(Slot::Sij, br, bc);
      score_tile(S, Qi, Kj, p, kind, row0, col0, s);
      ctx.end(matmul_flops(br, d, bc) + br * bc);

      // FA2b L11: P_ij = exp(S_ij - L_i)
      s = ctx.begin(Line::FA2B_L11, i, j);
      Mat& P = sram.scratch(Slot::Pij, br, bc);
      for (int64_t r = 0; r < br; ++r)
        for (int64_t c = 0; c < bc; ++c) P(r, c) = recomputed_prob_lse(S(r, c), Li(r, 0));
      sram.release(Slot::Sij);
      if (s) s->tile = P;
      ctx.end(2 * br * bc);

      // FA2b L12: dV_j += (P_ij^dropped)^T dO_i
      s = ctx.begin(Line::FA2B_L12, i, j);
      const Mat* Pd = &P;
      if (p.dropout > 0) {
        Pd = &dropped_probs(sram, P, p, row0, col0, keep);
        if (s) s->dropout_keep = keep;
      }
      // --p-dtype: P_ij rounded to 16 bits before the MMA (the float32 P stays for line 14)
      dVt.noalias() += rounded_tile(*Pd, p.p_dtype, p16).transpose() * dOi;
      sram.release(Slot::Pdij);
      if (s) s->tile = dVt;
      ctx.end(matmul_flops(bc, br, d) + (p.dropout > 0 ? br * bc : 0));

      // FA2b L13: dP_ij = dO_i V_j^T (o Z_ij with dropout)
      s = ctx.begin(Line::FA2B_L13, i, j);
      Mat& dP = sram.scratch(Slot::dPij, br, bc);
      dP.noalias() = dOi * Vj.transpose();
      if (p.dropout > 0) undrop_grad(dP, keep, p.dropout);
      if (s) s->tile = dP;
      ctx.end(matmul_flops(br, d, bc) + (p.dropout > 0 ? br * bc : 0));

      // FA2b L14: dS_ij = P_ij o (dP_ij - D_i); P~_ij as L12 rounded it where the emulated kernel
      // takes dS from those fragments (Problem::ds_from_rounded_p)
      s = ctx.begin(Line::FA2B_L14, i, j);
      Mat& dS = sram.scratch(Slot::dSij, br, bc);
      grad_scores(dS, p.ds_from_rounded_p && p.dropout == 0 ? rounded_tile(P, p.p_dtype, p16) : P, dP, Di);
      if (p.p_dtype != Dtype::fp32) round_in_place(p.p_dtype, dS.data(), dS.size());  // --p-dtype: the MMAs' dS
      if (s) s->tile = dS;
      ctx.end(2 * br * bc);

      // FA2b L15: load dQ_i, dQ_i += tau dS_ij K_j, write it back to HBM
      ctx.begin(Line::FA2B_L15, i, j);
      Mat& dQi = sram.load(Slot::dQi, hbm, Tensor::dQ, row0, br);
      dQi.noalias() += tau * (dS * Kj);
      hbm.store(Tensor::dQ, row0, dQi);
      ctx.end(matmul_flops(br, bc, d) + 2 * br * d);

      // FA2b L16: dK_j += tau dS_ij^T Q_i
      s = ctx.begin(Line::FA2B_L16, i, j);
      dKt.noalias() += tau * (dS.transpose() * Qi);
      if (s) s->tile = dKt;
      ctx.end(matmul_flops(bc, br, d) + 2 * bc * d);

      for (Slot sl : {Slot::Qi, Slot::dOi, Slot::Li, Slot::Di, Slot::Pij, Slot::dPij, Slot::dSij,
                      Slot::dQi})
        sram.release(sl);
    }

    // FA2b L18: write dK_j, dV_j to HBM
    close_kv_block(ctx, t, j, Line::FA2B_L18);
  }

  finish_backward(ctx, tr);
}

}  // namespace flashstep
