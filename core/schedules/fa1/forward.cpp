// Algorithm 1 of Dao et al. 2022 (FlashAttention forward pass), one pseudocode line per step.
// Loop order as printed: outer j over K/V blocks, inner i over Q blocks; O, l, m live in HBM
// and make a round trip at every (i, j).
#include "core/schedules/fa1/fa1.h"

#include "core/online_softmax.h"
#include "core/philox.h"
#include "core/progress.h"
#include "core/schedules/context.h"


namespace flashstep {

// Alg1 L10 for one tile, in place: S_ij becomes P~_ij; returns m~_ij and l~_ij.
// A row whose scores are all -inf (fully masked) keeps m~ = -inf and gets P~ = 0, l~ = 0
// (softmax_weight), which rescale_factor then turns into a zero weight.
static void tile_softmax_stats(Mat& S, Mat& m_tilde, Mat& l_tilde) {
  for (int64_t r = 0; r < S.rows(); ++r) {
    const float mx = S.row(r).maxCoeff();
    m_tilde(r, 0) = mx;
    S.row(r) = S.row(r).unaryExpr([mx](float s) { return softmax_weight(s, mx); });
    l_tilde(r, 0) = S.row(r).sum();
  }
}

void run_fa1(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, d = p.d;

  ScheduleContext ctx(tr, record, t.tile_capacity);
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  auto begin = [&](Line line, int64_t i, int64_t j) { return ctx.begin(line, i, j); };
  auto end = [&](int64_t flops) { ctx.end(flops); };


  // Alg1 L2: initialise O = 0, l = 0, m = -inf in HBM. These writes are real HBM traffic.
  begin(Line::A1_L2, -1, -1);
  hbm.allocate(Tensor::O, nq, d);
  hbm.allocate(Tensor::l, nq, 1);
  hbm.allocate(Tensor::m, nq, 1);
  hbm.store(Tensor::O, 0, Mat::Zero(nq, d));
  hbm.store(Tensor::l, 0, Mat::Zero(nq, 1));
  hbm.store(Tensor::m, 0, Mat::Constant(nq, 1, -INFINITY));
  end(0);

  Mat PV;           // P~_ij V_j, on chip
  Vec alpha, beta;  // e^(m_i - m_i^new), e^(m~_ij - m_i^new), on chip
  const Mask& mask = p.mask;
  const bool fp8 = p.dtype == Dtype::fp8;  // e4m3 Q, K, V with scales (core/fp8_inputs.h)
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t bc = t.rows_in_kv_block(j, p.nk);
    // A K/V block that every query block masks entirely is never loaded.
    bool needed = false;
    for (int64_t i = 0; i < t.Tr && !needed; ++i)
      needed = mask.classify(i * t.Br, i * t.Br + t.rows_in_q_block(i, nq), j * t.Bc,
                             j * t.Bc + bc, p.nk) != Mask::Block::empty;
    if (!needed) {
      begin(Line::A1_SKIP, -1, j);
      end(0);
      continue;
    }
    // Alg1 L6: load K_j, V_j from HBM to SRAM
    begin(Line::A1_L6, -1, j);
    const Mat& Kj = sram.load(Slot::Kj, hbm, Tensor::K, j * t.Bc, bc);
    const Mat& Vj = sram.load(Slot::Vj, hbm, Tensor::V, j * t.Bc, bc);
    const float s_k = fp8 ? read_fp8_scale(hbm, Tensor::sK, j) : 1.0f;  // --dtype fp8: their scales
    const float s_v = fp8 ? read_fp8_scale(hbm, Tensor::sV, j) : 1.0f;
    end(0);

    for (int64_t i = 0; i < t.Tr; ++i) {
      progress::tick();
      const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
      const Mask::Block kind = mask.classify(row0, row0 + br, j * t.Bc, j * t.Bc + bc, p.nk);
      if (kind == Mask::Block::empty) {  // Algorithm 2: skip a block that is entirely masked
        begin(Line::A1_SKIP, i, j);
        end(0);
        continue;
      }
      // Alg1 L8: load Q_i, O_i, l_i, m_i from HBM to SRAM
      begin(Line::A1_L8, i, j);
      const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
      Mat& Oi = sram.load(Slot::Oi, hbm, Tensor::O, row0, br);
      const Mat& li = sram.load(Slot::li, hbm, Tensor::l, row0, br);
      const Mat& mi = sram.load(Slot::mi, hbm, Tensor::m, row0, br);
      const float s_q = fp8 ? read_fp8_scale(hbm, Tensor::sQ, i) : 1.0f;
      end(0);

      // Alg1 L9: S_ij = tau Q_i K_j^T
      Step* s = begin(Line::A1_L9, i, j);
      Mat& S = sram.scratch(Slot::Sij, br, bc);
      score_tile(S, Qi, Kj, p, kind, row0, j * t.Bc, s, s_q, s_k);
      end(2 * br * bc * d + br * bc);

      // Alg1 L10: m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij)
      s = begin(Line::A1_L10, i, j);
      Mat& mt = sram.scratch(Slot::mt, br, 1);
      Mat& lt = sram.scratch(Slot::lt, br, 1);
      tile_softmax_stats(S, mt, lt);  // S now holds P~_ij
      if (s) {
        s->m_tilde = mt.col(0);
        s->l_tilde = lt.col(0);
        s->tile = S;
      }
      end(4 * br * bc);  // max, subtract, exp, sum per element

      // Alg1 L11: m_i^new = max(m_i, m~_ij), l_i^new = alpha l_i + beta l~_ij
      s = begin(Line::A1_L11, i, j);
      Mat& mnew = sram.scratch(Slot::mnew, br, 1);
      Mat& lnew = sram.scratch(Slot::lnew, br, 1);
      alpha.resize(br);
      beta.resize(br);
      for (int64_t r = 0; r < br; ++r) {
        mnew(r, 0) = merged_max(mi(r, 0), mt(r, 0));
        alpha(r) = rescale_factor(mi(r, 0), mnew(r, 0));
        beta(r) = rescale_factor(mt(r, 0), mnew(r, 0));
        lnew(r, 0) = merged_sum(alpha(r), li(r, 0), beta(r), lt(r, 0));
      }
      if (s) {
        s->m_old = mi.col(0);
        s->l_old = li.col(0);
        s->m_new = mnew.col(0);
        s->l_new = lnew.col(0);
        s->alpha = alpha;
        s->beta = beta;
      }
      end(8 * br);  // max, 2 subtractions, 2 exps, 2 products, 1 sum per row

      // Alg1 L12: O_i <- diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j), write to HBM
      s = begin(Line::A1_L12, i, j);
      if (p.dropout > 0)  // Algorithm 2: dropout on P~_ij inside the update of O_i
        apply_dropout(S, p.dropout, p.seed, row0, j * t.Bc, s ? &s->dropout_keep : nullptr);
      round_p_tile(S, p, s, s_v);  // --p-dtype, or e4m3: P~_ij as the tensor cores take it
      PV.noalias() = S * Vj;
      if (fp8) PV *= s_v;  // (P~_ij V_j) s_v: V_j's scale after the product
      for (int64_t r = 0; r < br; ++r)
        for (int64_t c = 0; c < d; ++c)
          Oi(r, c) = merged_output(li(r, 0), alpha(r), Oi(r, c), beta(r), PV(r, c), lnew(r, 0));
      hbm.store(Tensor::O, row0, Oi);
      end(2 * br * bc * d + 5 * br * d);

      // Alg1 L13: write l_i <- l_i^new, m_i <- m_i^new to HBM
      begin(Line::A1_L13, i, j);
      hbm.store(Tensor::l, row0, lnew);
      hbm.store(Tensor::m, row0, mnew);
      end(0);

      for (Slot sl : {Slot::Qi, Slot::Oi, Slot::li, Slot::mi, Slot::Sij, Slot::mt, Slot::lt,
                      Slot::mnew, Slot::lnew})
        sram.release(sl);
    }
    sram.release(Slot::Kj);
    sram.release(Slot::Vj);
  }

  // Alg1 L16: return O. lse = m + log l is read off the final l and m in HBM.
  tr.O = hbm.get(Tensor::O);
  const Mat& l = hbm.get(Tensor::l);
  const Mat& m = hbm.get(Tensor::m);
  tr.lse.resize(nq);
  for (int64_t r = 0; r < nq; ++r) tr.lse(r) = row_logsumexp(m(r, 0), l(r, 0));

  ctx.finish();
}

}  // namespace flashstep
