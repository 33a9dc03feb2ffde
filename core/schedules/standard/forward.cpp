// Algorithm 0 of Dao et al. 2022 (standard attention): S and P are materialised in HBM.
// One step per line and Q row block i. K (line 1) and V (line 3) are loaded once and kept on
// chip, so every matrix crosses between HBM and SRAM exactly once per line, as the paper's
// Theta(Nd + N^2) count assumes. SRAM capacity is not enforced here: the peak shows how far a
// row block of S overshoots M.
#include "core/schedules/standard/standard.h"

#include "core/online_softmax.h"
#include "core/philox.h"
#include "core/progress.h"
#include "core/schedules/context.h"


namespace flashstep {

void run_standard(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, nk = p.nk, d = p.d;

  ScheduleContext ctx(tr, record, 0);  // 0: SRAM not limited (see above)
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.allocate(Tensor::S, nq, nk);
  hbm.allocate(Tensor::P, nq, nk);
  hbm.allocate(Tensor::O, nq, d);
  auto begin = [&](Line line, int64_t i) { return ctx.begin(line, i, -1); };
  auto end = [&](int64_t flops) { ctx.end(flops); };


  // Alg0 L1: load Q, K by blocks, compute S = tau Q K^T, write S to HBM
  for (int64_t i = 0; i < t.Tr; ++i) {
    progress::tick();
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = begin(Line::A0_L1, i);
    if (i == 0) sram.load(Slot::Kj, hbm, Tensor::K, 0, nk);
    const Mat& K = sram.at(Slot::Kj);
    const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
    Mat& S = sram.scratch(Slot::Sij, br, nk);
    S.noalias() = Qi * K.transpose();
    S *= p.scale;
    if (p.mask.any()) apply_mask(S, p.mask, row0, 0, nk);  // masked scores are -inf in S
    hbm.store(Tensor::S, row0, S);
    if (s) s->tile = S;
    sram.release(Slot::Qi);
    sram.release(Slot::Sij);
    end(2 * br * nk * d + br * nk);
  }
  sram.release(Slot::Kj);

  // Alg0 L2: read S, compute P = softmax(S) (safe softmax, row by row), write P to HBM
  tr.lse.resize(nq);  // a by-product of the row softmax, not part of Algorithm 0's HBM traffic
  for (int64_t i = 0; i < t.Tr; ++i) {
    progress::tick();
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = begin(Line::A0_L2, i);
    Mat& P = sram.load(Slot::Sij, hbm, Tensor::S, row0, br);
    for (int64_t r = 0; r < br; ++r) {
      // A fully masked row (max -inf) gets P = 0 and lse = -inf, not NaN.
      const float mx = P.row(r).maxCoeff();
      P.row(r) = P.row(r).unaryExpr([mx](float s) { return softmax_weight(s, mx); });
      const float l = P.row(r).sum();
      P.row(r) = P.row(r).unaryExpr([l](float w) { return normalised_output(w, l); });
      tr.lse(row0 + r) = row_logsumexp(mx, l);
    }
    hbm.store(Tensor::P, row0, P);
    if (s) s->tile = P;
    sram.release(Slot::Sij);
    end(5 * br * nk);  // max, subtract, exp, sum, divide per element
  }

  // Alg0 L3: load P and V by blocks, compute O = P V, write O to HBM
  for (int64_t i = 0; i < t.Tr; ++i) {
    progress::tick();
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    Step* s = begin(Line::A0_L3, i);
    if (i == 0) sram.load(Slot::Vj, hbm, Tensor::V, 0, nk);
    const Mat& V = sram.at(Slot::Vj);
    Mat& P = sram.load(Slot::Sij, hbm, Tensor::P, row0, br);
    if (p.dropout > 0) apply_dropout(P, p.dropout, p.seed, row0, 0, s ? &s->dropout_keep : nullptr);
    Mat& Oi = sram.scratch(Slot::Oi, br, d);
    Oi.noalias() = P * V;
    hbm.store(Tensor::O, row0, Oi);
    sram.release(Slot::Sij);
    sram.release(Slot::Oi);
    end(2 * br * nk * d);
  }
  sram.release(Slot::Vj);

  tr.O = hbm.get(Tensor::O);
  ctx.finish();
}

}  // namespace flashstep
