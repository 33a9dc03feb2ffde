// Algorithm 3 of Dao et al. 2022 (standard attention backward): P from the forward, dP and
// dS are N x N matrices in HBM. One step per line and Q row block i. As in the forward's
// Algorithm 0, V (line 2) and K (line 4) are loaded once and kept on chip, and the sums over
// i of lines 1 and 5 (dV, dK) stay on chip until complete, so every matrix crosses between HBM
// and SRAM once per line that uses it. SRAM capacity is not enforced (the peak shows the
// overshoot). With dropout, P in HBM is the undropped P; Z is drawn again from Philox at
// lines 1 and 3, as the forward drew it at its line 3.
#include "core/schedules/standard/standard.h"

#include "core/schedules/backward_tiles.h"

namespace flashstep {

void run_backward_standard(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, nk = p.nk, d = p.d;
  const float tau = p.scale;

  ScheduleContext ctx(tr, record, 0, take_forward_hbm(tr));  // 0: SRAM not limited
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.put(Tensor::dO, tr.dO);
  for (Tensor x : {Tensor::dQ, Tensor::dK, Tensor::dV, Tensor::dP, Tensor::dS})
    hbm.allocate(x, tensor_rows(x, nq, nk), tensor_cols(x, nk, d));
  Mat keep;

  // Alg3 L1: load P, dO by blocks, dV = P^T dO (summed over i on chip), write dV
  Mat& dV = sram.scratch(Slot::dVj, nk, d);
  dV.setZero();
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = ctx.begin(Line::A3_L1, i, -1);
    const Mat& P = sram.load(Slot::Pij, hbm, Tensor::P, row0, br);
    const Mat& dOi = sram.load(Slot::dOi, hbm, Tensor::dO, row0, br);
    const Mat* Pd = &P;
    if (p.dropout > 0) {
      Pd = &dropped_probs(sram, P, p, row0, 0, keep);
      if (s) s->dropout_keep = keep;
    }
    dV.noalias() += Pd->transpose() * dOi;
    if (i == t.Tr - 1) hbm.store(Tensor::dV, 0, dV);
    for (Slot sl : {Slot::Pij, Slot::Pdij, Slot::dOi}) sram.release(sl);
    ctx.end(matmul_flops(nk, br, d) + (p.dropout > 0 ? br * nk : 0));
  }
  sram.release(Slot::dVj);

  // Alg3 L2: load dO, V by blocks, dP = dO V^T, write dP
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = ctx.begin(Line::A3_L2, i, -1);
    if (i == 0) sram.load(Slot::Vj, hbm, Tensor::V, 0, nk);
    const Mat& dOi = sram.load(Slot::dOi, hbm, Tensor::dO, row0, br);
    Mat& dP = sram.scratch(Slot::dPij, br, nk);
    dP.noalias() = dOi * sram.at(Slot::Vj).transpose();
    hbm.store(Tensor::dP, row0, dP);
    if (s) s->tile = dP;
    for (Slot sl : {Slot::dOi, Slot::dPij}) sram.release(sl);
    ctx.end(matmul_flops(br, d, nk));
  }
  sram.release(Slot::Vj);

  // Alg3 L3: read P, dP, dS_ij = P_ij (dP_ij - sum_l P_il dP_il), write dS
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = ctx.begin(Line::A3_L3, i, -1);
    const Mat& P = sram.load(Slot::Pij, hbm, Tensor::P, row0, br);
    Mat& dP = sram.load(Slot::dPij, hbm, Tensor::dP, row0, br);
    if (p.dropout > 0) {  // dP in HBM is the gradient of P o Z: take it back through Z
      dropout_pattern(keep, br, nk, p, row0, 0);
      undrop_grad(dP, keep, p.dropout);
    }
    Mat& Di = sram.scratch(Slot::Di, br, 1);
    rowsum_product(Di, P, dP);  // sum_l P_il dP_il (= rowsum(dO_i o O_i))
    Mat& dS = sram.scratch(Slot::dSij, br, nk);
    grad_scores(dS, P, dP, Di);
    hbm.store(Tensor::dS, row0, dS);
    if (s) {
      s->tile = dS;
      s->D_i = Di.col(0);
    }
    for (Slot sl : {Slot::Pij, Slot::dPij, Slot::Di, Slot::dSij}) sram.release(sl);
    ctx.end(4 * br * nk + (p.dropout > 0 ? br * nk : 0));
  }

  // Alg3 L4: load dS, K by blocks, dQ = tau dS K, write dQ
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    ctx.begin(Line::A3_L4, i, -1);
    if (i == 0) sram.load(Slot::Kj, hbm, Tensor::K, 0, nk);
    const Mat& dS = sram.load(Slot::dSij, hbm, Tensor::dS, row0, br);
    Mat& dQi = sram.scratch(Slot::dQi, br, d);
    dQi.noalias() = tau * (dS * sram.at(Slot::Kj));
    hbm.store(Tensor::dQ, row0, dQi);
    for (Slot sl : {Slot::dSij, Slot::dQi}) sram.release(sl);
    ctx.end(matmul_flops(br, nk, d) + br * d);
  }
  sram.release(Slot::Kj);

  // Alg3 L5: load dS, Q by blocks, dK = tau dS^T Q (summed over i on chip), write dK
  Mat& dK = sram.scratch(Slot::dKj, nk, d);
  dK.setZero();
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    ctx.begin(Line::A3_L5, i, -1);
    const Mat& dS = sram.load(Slot::dSij, hbm, Tensor::dS, row0, br);
    const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
    dK.noalias() += tau * (dS.transpose() * Qi);
    if (i == t.Tr - 1) hbm.store(Tensor::dK, 0, dK);
    for (Slot sl : {Slot::dSij, Slot::Qi}) sram.release(sl);
    ctx.end(matmul_flops(nk, br, d) + nk * d);
  }
  sram.release(Slot::dKj);

  finish_backward(ctx, tr);
}

}  // namespace flashstep
