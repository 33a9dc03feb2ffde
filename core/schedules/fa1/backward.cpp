// Algorithm 4 of Dao et al. 2022 (FlashAttention backward pass), one pseudocode line per step.
// Loop order as printed: outer j over K/V blocks, inner i over Q blocks. K_j, V_j and the
// accumulators dK~_j, dV~_j stay on chip for the whole inner loop; P_ij is recomputed from
// Q_i, K_j and the l, m the forward wrote, so no N x N matrix ever reaches HBM. The price is
// dQ: every j adds its share to every dQ_i, so dQ_i makes a read-modify-write round trip
// through HBM at every (i, j) (on a GPU, where the j blocks run in parallel, an atomic add).
#include "core/schedules/fa1/fa1.h"

#include "core/schedules/backward_tiles.h"

namespace flashstep {

void run_backward_fa1(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, nk = p.nk, d = p.d;
  const float tau = p.scale;

  ScheduleContext ctx(tr, record, backward_tile_capacity(t), take_forward_hbm(tr));
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.put(Tensor::dO, tr.dO);  // the loss gradient starts in HBM, like Q, K, V

  // Alg4 L5: initialise dQ = 0 (Nq x d), dK = dV = 0 (Nk x d) in HBM
  ctx.begin(Line::A4_L5, -1, -1);
  hbm.allocate(Tensor::dQ, nq, d);
  hbm.allocate(Tensor::dK, nk, d);
  hbm.allocate(Tensor::dV, nk, d);
  hbm.store(Tensor::dQ, 0, Mat::Zero(nq, d));
  hbm.store(Tensor::dK, 0, Mat::Zero(nk, d));
  hbm.store(Tensor::dV, 0, Mat::Zero(nk, d));
  ctx.end(0);

  Mat keep;  // Z_ij's pattern (1 kept, 0 dropped)
  Mat p16;   // P_ij as a tensor-core MMA takes it (--p-dtype)
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t bc = t.rows_in_kv_block(j, nk), col0 = j * t.Bc;
    // Alg4 L7: load K_j, V_j; Alg4 L8: dK~_j = dV~_j = 0 on chip
    if (!open_kv_block(ctx, p, t, j, Line::A4_SKIP, Line::A4_L7, Line::A4_L8)) continue;
    const Mat& Kj = sram.at(Slot::Kj);
    const Mat& Vj = sram.at(Slot::Vj);
    Mat& dKt = sram.at(Slot::dKj);
    Mat& dVt = sram.at(Slot::dVj);

    for (int64_t i = 0; i < t.Tr; ++i) {
      const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
      const Mask::Block kind = p.mask.classify(row0, row0 + br, col0, col0 + bc, nk);
      if (skip_empty_block(ctx, kind, Line::A4_SKIP, i, j)) continue;  // P_ij = 0
      // Alg4 L10: load Q_i, O_i, dO_i, dQ_i, l_i, m_i from HBM to SRAM
      ctx.begin(Line::A4_L10, i, j);
      const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
      const Mat& Oi = sram.load(Slot::Oi, hbm, Tensor::O, row0, br);
      const Mat& dOi = sram.load(Slot::dOi, hbm, Tensor::dO, row0, br);
      Mat& dQi = sram.load(Slot::dQi, hbm, Tensor::dQ, row0, br);
      const Mat& li = sram.load(Slot::li, hbm, Tensor::l, row0, br);
      const Mat& mi = sram.load(Slot::mi, hbm, Tensor::m, row0, br);
      ctx.end(0);

      // Alg4 L11: S_ij = tau Q_i K_j^T (the mask is line 12's)
      Step* s = ctx.begin(Line::A4_L11, i, j);
      Mat& S = sram.scratch(Slot::Sij, br, bc);
      score_tile(S, Qi, Kj, p, Mask::Block::full, row0, col0, s);
      ctx.end(matmul_flops(br, d, bc) + br * bc);

      // Alg4 L12: S_ij^masked = MASK(S_ij); only a partly masked block has work here
      if (kind == Mask::Block::partial) {
        s = ctx.begin(Line::A4_L12, i, j);
        apply_mask(S, p.mask, row0, col0, nk);
        if (s) {
          s->tile = S;
          s->masked = true;
        }
        ctx.end(0);
      }

      // Alg4 L13: P_ij = diag(l_i)^-1 exp(S_ij^masked - m_i)
      s = ctx.begin(Line::A4_L13, i, j);
      Mat& P = sram.scratch(Slot::Pij, br, bc);
      for (int64_t r = 0; r < br; ++r)
        for (int64_t c = 0; c < bc; ++c) P(r, c) = recomputed_prob(S(r, c), mi(r, 0), li(r, 0));
      sram.release(Slot::Sij);
      if (s) s->tile = P;
      ctx.end(3 * br * bc);

      // Alg4 L14-15: Z_ij, P_ij^dropped = P_ij o Z_ij (the forward's mask, drawn again)
      const Mat* Pd = &P;
      if (p.dropout > 0) {
        s = ctx.begin(Line::A4_L14, i, j);
        Pd = &dropped_probs(sram, P, p, row0, col0, keep);
        if (s) {
          s->tile = *Pd;
          s->dropout_keep = keep;
        }
        ctx.end(br * bc);
      }

      // Alg4 L16: dV~_j += (P_ij^dropped)^T dO_i
      s = ctx.begin(Line::A4_L16, i, j);
      dVt.noalias() += rounded_tile(*Pd, p.p_dtype, p16).transpose() * dOi;  // --p-dtype: P_ij in 16 bits
      sram.release(Slot::Pdij);
      if (s) s->tile = dVt;
      ctx.end(matmul_flops(bc, br, d));

      // Alg4 L17: dP_ij^dropped = dO_i V_j^T
      s = ctx.begin(Line::A4_L17, i, j);
      Mat& dP = sram.scratch(Slot::dPij, br, bc);
      dP.noalias() = dOi * Vj.transpose();
      if (s) s->tile = dP;
      ctx.end(matmul_flops(br, d, bc));

      // Alg4 L18: dP_ij = dP_ij^dropped o Z_ij (without dropout Z = 1: no work)
      if (p.dropout > 0) {
        s = ctx.begin(Line::A4_L18, i, j);
        undrop_grad(dP, keep, p.dropout);
        if (s) s->tile = dP;
        ctx.end(br * bc);
      }

      // Alg4 L19: D_i = rowsum(dO_i o O_i), recomputed at every j as printed
      s = ctx.begin(Line::A4_L19, i, j);
      Mat& Di = sram.scratch(Slot::Di, br, 1);
      rowsum_product(Di, dOi, Oi);
      if (s) s->D_i = Di.col(0);
      ctx.end(2 * br * d);

      // Alg4 L20: dS_ij = P_ij o (dP_ij - D_i)
      s = ctx.begin(Line::A4_L20, i, j);
      Mat& dS = sram.scratch(Slot::dSij, br, bc);
      grad_scores(dS, P, dP, Di);
      if (p.p_dtype != Dtype::fp32) round_in_place(p.p_dtype, dS.data(), dS.size());  // --p-dtype: the MMAs' dS
      if (s) s->tile = dS;
      ctx.end(2 * br * bc);

      // Alg4 L21: write dQ_i <- dQ_i + tau dS_ij K_j to HBM
      ctx.begin(Line::A4_L21, i, j);
      dQi.noalias() += tau * (dS * Kj);
      hbm.store(Tensor::dQ, row0, dQi);
      ctx.end(matmul_flops(br, bc, d) + 2 * br * d);

      // Alg4 L22: dK~_j += tau dS_ij^T Q_i
      s = ctx.begin(Line::A4_L22, i, j);
      dKt.noalias() += tau * (dS.transpose() * Qi);
      if (s) s->tile = dKt;
      ctx.end(matmul_flops(bc, br, d) + 2 * bc * d);

      for (Slot sl : {Slot::Qi, Slot::Oi, Slot::dOi, Slot::dQi, Slot::li, Slot::mi, Slot::Pij,
                      Slot::dPij, Slot::Di, Slot::dSij})
        sram.release(sl);
    }

    // Alg4 L24: write dK_j <- dK~_j, dV_j <- dV~_j to HBM
    close_kv_block(ctx, t, j, Line::A4_L24);
  }

  finish_backward(ctx, tr);
}

}  // namespace flashstep
