// FlashAttention-2's forward pass (Dao 2023, Algorithm 1), one pseudocode line per step.
// Loop order swapped against Algorithm 1: outer i over Q blocks, inner j over K/V blocks.
// O_i, l_i and m_i stay on chip for the whole inner loop, O_i is divided by l_i once at the
// end, and only O and the logsumexp L are written to HBM.
#include "core/schedules/fa2/fa2.h"

#include "core/online_softmax.h"
#include "core/philox.h"
#include "core/progress.h"
#include "core/schedules/context.h"
#include "core/schedules/fa2/row_block.h"


namespace flashstep {

namespace {
// A paged K_j, V_j (decode --page-size): read the block-table entries of the logical pages keys
// col0 .. col0 + bc - 1 touch (4 bytes each), then gather the rows from those physical pages.
void load_paged_kv(ScheduleContext& ctx, int64_t col0, int64_t bc, Step* step) {
  const PagedKv& pk = *ctx.paged;
  const int64_t lp0 = col0 / pk.P, lp1 = (col0 + bc - 1) / pk.P;
  const Mat entries = ctx.hbm.read(Tensor::BT, lp0, lp1 - lp0 + 1);
  std::vector<int32_t> phys(size_t(entries.rows()));
  for (int64_t k = 0; k < entries.rows(); ++k) phys[size_t(k)] = int32_t(entries(k, 0));
  Mat rows;
  pk.gather(pk.K, col0, bc, phys, rows);
  ctx.sram.load_gathered(Slot::Kj, ctx.hbm, Tensor::K, rows);
  pk.gather(pk.V, col0, bc, phys, rows);
  ctx.sram.load_gathered(Slot::Vj, ctx.hbm, Tensor::V, rows);
  if (step) step->pages = std::move(phys);
}
}  // namespace

void fa2_row_block(ScheduleContext& ctx, const Trace& tr, int64_t i, int64_t j0, int64_t j1,
                   const RowBlockLines& lines, int32_t split) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t nq = p.nq, d = p.d;
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  auto begin = [&](Line line, int64_t bi, int64_t bj) {
    Step* s = ctx.begin(line, bi, bj);
    if (s) s->split = split;
    return s;
  };
  auto end = [&](int64_t flops) { ctx.end(flops); };

  const Mask& mask = p.mask;
  Mat PV;
  Vec alpha;
  const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
  // FA2fwd L4: load Q_i from HBM to SRAM
  begin(lines.load_q, i, -1);
  const Mat& Qi = sram.load(Slot::Qi, hbm, Tensor::Q, row0, br);
  const bool fp8 = p.dtype == Dtype::fp8;  // e4m3 Q, K, V with scales (core/fp8_inputs.h)
  const float s_q = fp8 ? read_fp8_scale(hbm, Tensor::sQ, i) : 1.0f;
  end(0);

  // FA2fwd L5: on chip, O_i = 0, l_i = 0, m_i = -inf
  begin(lines.init, i, -1);
  Mat& Oi = sram.scratch(Slot::Oi, br, d);
  Mat& li = sram.scratch(Slot::li, br, 1);
  Mat& mi = sram.scratch(Slot::mi, br, 1);
  Oi.setZero();
  li.setZero();
  mi.setConstant(-INFINITY);
  end(0);

  for (int64_t j = j0; j < j1; ++j) {
    progress::tick();
    const int64_t bc = t.rows_in_kv_block(j, p.nk), col0 = j * t.Bc;
    const Mask::Block kind = mask.classify(row0, row0 + br, col0, col0 + bc, p.nk);
    if (kind == Mask::Block::empty) {  // entirely masked: no loads, no FLOPs
      begin(lines.skip, i, j);
      end(0);
      continue;
    }
    // FA2fwd L7: load K_j, V_j (a paged cache: through the block table, core/paged_kv.h)
    Step* ld = begin(lines.load_kv, i, j);
    if (ctx.paged) load_paged_kv(ctx, col0, bc, ld);
    const Mat& Kj = ctx.paged ? sram.at(Slot::Kj) : sram.load(Slot::Kj, hbm, Tensor::K, col0, bc);
    const Mat& Vj = ctx.paged ? sram.at(Slot::Vj) : sram.load(Slot::Vj, hbm, Tensor::V, col0, bc);
    const float s_k = fp8 ? read_fp8_scale(hbm, Tensor::sK, j) : 1.0f;
    const float s_v = fp8 ? read_fp8_scale(hbm, Tensor::sV, j) : 1.0f;
    end(0);

    // FA2fwd L8: S_ij = tau Q_i K_j^T
    Step* s = begin(lines.scores, i, j);
    Mat& S = sram.scratch(Slot::Sij, br, bc);
    score_tile(S, Qi, Kj, p, kind, row0, col0, s, s_q, s_k);
    end(2 * br * bc * d + br * bc);

    // FA2fwd L9: m_new = max(m, rowmax S), P~ = exp(S - m_new), l = e^(m - m_new) l + rowsum P~
    s = begin(lines.softmax, i, j);
    Mat& mt = sram.scratch(Slot::mt, br, 1);    // rowmax(S_ij)
    Mat& mnew = sram.scratch(Slot::mnew, br, 1);
    alpha.resize(br);
    if (s) {
      s->m_old = mi.col(0);
      s->l_old = li.col(0);
    }
    for (int64_t r = 0; r < br; ++r) {
      mt(r, 0) = S.row(r).maxCoeff();
      mnew(r, 0) = merged_max(mi(r, 0), mt(r, 0));
      alpha(r) = rescale_factor(mi(r, 0), mnew(r, 0));
      const float m_new = mnew(r, 0);  // -inf while nothing is kept: weights 0
      S.row(r) = S.row(r).unaryExpr([m_new](float x) { return softmax_weight(x, m_new); });
      li(r, 0) = merged_sum(alpha(r), li(r, 0), 1.0f, S.row(r).sum());
      mi(r, 0) = mnew(r, 0);
    }
    if (s) {
      s->m_tilde = mt.col(0);
      s->m_new = mi.col(0);
      s->l_new = li.col(0);
      s->alpha = alpha;
      s->tile = S;
    }
    end(5 * br * bc + 6 * br);

    // FA2fwd L10: O_i = diag(e^(m_old - m_new)) O_i + P~_ij V_j (not normalised)
    s = begin(lines.update, i, j);
    if (p.dropout > 0)
      apply_dropout(S, p.dropout, p.seed, row0, col0, s ? &s->dropout_keep : nullptr);
    // P~_ij rounded to --p-dtype (or e4m3) for the product, as a tensor-core kernel does in
    // registers (l_i above was summed from the float32 P~, as there too).
    round_p_tile(S, p, s, s_v);
    PV.noalias() = S * Vj;
    if (fp8) PV *= s_v;  // (P~_ij V_j) s_v: V_j's scale after the product
    for (int64_t r = 0; r < br; ++r)
      for (int64_t c = 0; c < d; ++c) Oi(r, c) = accumulated_output(alpha(r), Oi(r, c), PV(r, c));
    if (s) s->O_i = Oi;  // the on-chip state a snapshot of step j shows (core/snapshot.h)
    end(2 * br * bc * d + 2 * br * d);
    for (Slot sl : {Slot::Kj, Slot::Vj, Slot::Sij, Slot::mt, Slot::mnew}) sram.release(sl);
  }

  // FA2fwd L12: O_i = diag(l_i)^-1 O_i, once
  begin(lines.normalise, i, -1);
  for (int64_t r = 0; r < br; ++r)
    for (int64_t c = 0; c < d; ++c) Oi(r, c) = normalised_output(Oi(r, c), li(r, 0));
  end(br * d);
  // FA2fwd L13: L_i = m_i + log(l_i)
  begin(lines.lse, i, -1);
  Mat& Li = sram.scratch(Slot::Li, br, 1);
  for (int64_t r = 0; r < br; ++r) Li(r, 0) = row_logsumexp(mi(r, 0), li(r, 0));
  end(2 * br);
}

void run_fa2(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  ScheduleContext ctx(tr, record, t.tile_capacity);
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.allocate(Tensor::O, p.nq, p.d);
  hbm.allocate(Tensor::L, p.nq, 1);
  for (int64_t i = 0; i < t.Tr; ++i) {
    fa2_row_block(ctx, tr, i, 0, t.Tc, kFa2RowBlockLines, -1);
    const int64_t row0 = i * t.Br;
    // FA2fwd L14, L15: write O_i and L_i to HBM
    ctx.begin(Line::FA2F_L14, i, -1);
    hbm.store(Tensor::O, row0, sram.at(Slot::Oi));
    ctx.end(0);
    ctx.begin(Line::FA2F_L15, i, -1);
    hbm.store(Tensor::L, row0, sram.at(Slot::Li));
    ctx.end(0);
    for (Slot sl : {Slot::Qi, Slot::Oi, Slot::li, Slot::mi, Slot::Li}) sram.release(sl);
  }

  tr.O = hbm.get(Tensor::O);
  tr.lse = hbm.get(Tensor::L).col(0);
  ctx.finish();
}

}  // namespace flashstep
