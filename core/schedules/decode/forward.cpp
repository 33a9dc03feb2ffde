// Flash-decoding (Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference",
// 2023), one pseudocode line per step. Decoding has one query row (or a few) against a long
// KV cache: FlashAttention-2 then starts only heads x Tr thread blocks. Flash-decoding splits
// the Tc K/V blocks into S contiguous ranges that run in parallel: phase 1 runs FA2's row block
// (core/schedules/fa2/row_block.h) over one split and writes the split's normalised partial O_i^(s) and
// its log-sum-exp lse_i^(s) to HBM in float32; phase 2 combines them per Q block:
// lse_i = log sum_s e^(lse_i^(s)), O_i = sum_s e^(lse_i^(s) - lse_i) O_i^(s), the merge of two
// softmax blocks in the lesson, over splits instead of blocks.
//
// The pseudocode, labelled "FD Ln", is the line table in schedule.cpp beside this file; the
// loops below tag each line they implement.
//
// With S = 1 there are no partials and no combine: decode runs fa2 itself (same steps, same
// bits). Masks, dropout (Philox keyed by the global row and column, so a split sees the mask
// fa2 sees) and the storage type work inside the row block exactly as in fa2.
#include "core/schedules/decode/decode.h"

#include "core/online_softmax.h"
#include "core/paged_kv.h"
#include "core/schedules/context.h"
#include "core/schedules/fa2/fa2.h"
#include "core/schedules/fa2/row_block.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace flashstep {

SplitRange split_range(int64_t Tc, int64_t S, int64_t s) {
  const int64_t base = Tc / S, longer = Tc % S;
  SplitRange r;
  r.j0 = s * base + std::min(s, longer);
  r.j1 = r.j0 + base + (s < longer ? 1 : 0);
  return r;
}

int64_t default_splits(int64_t blocks, int64_t Tc, int sm_count) {
  const int64_t slots = 2 * int64_t(std::max(sm_count, 1));
  if (double(blocks) >= 0.8 * double(slots)) return 1;
  const int64_t max_s = std::max<int64_t>(1, std::min<int64_t>({Tc, 128, slots}));
  std::vector<double> eff(size_t(max_s + 1), 0.0);
  double best = 0;
  for (int64_t s = 1; s <= max_s; ++s) {
    const double waves = double(blocks) * double(s) / double(slots);
    eff[size_t(s)] = waves / std::ceil(waves);
    best = std::max(best, eff[size_t(s)]);
  }
  for (int64_t s = 1; s <= max_s; ++s)
    if (eff[size_t(s)] >= 0.85 * best) return s;
  return 1;
}

namespace {
constexpr RowBlockLines kDecodeRowBlockLines = {Line::FD_L3, Line::FD_L4,  Line::FD_SKIP,
                                                Line::FD_L6, Line::FD_L7,  Line::FD_L8,
                                                Line::FD_L9, Line::FD_L11, Line::FD_L12};
}  // namespace

void run_decode(Trace& tr, bool record) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t S = p.splits;
  if (S <= 1) return run_fa2(tr, record);  // no partials, no combine: fa2 step for step
  const int64_t nq = p.nq, d = p.d;

  ScheduleContext ctx(tr, record, t.tile_capacity);
  Hbm& hbm = ctx.hbm;
  Sram& sram = ctx.sram;
  hbm.allocate(Tensor::Op, S * nq, d);
  hbm.allocate(Tensor::Lp, S * nq, 1);
  hbm.allocate(Tensor::O, nq, d);
  hbm.allocate(Tensor::L, nq, 1);
  auto begin = [&](Line line, int64_t i, int64_t j, int64_t s) {
    Step* st = ctx.begin(line, i, j);
    if (st) st->split = int32_t(s);
    return st;
  };
  auto end = [&](int64_t flops) { ctx.end(flops); };

  // Phase 1 (FD L2-L15): every (split, Q block) is FA2's row block over the split's K/V blocks.
  for (int64_t s = 0; s < S; ++s) {
    const SplitRange J = split_range(t.Tc, S, s);
    for (int64_t i = 0; i < t.Tr; ++i) {
      fa2_row_block(ctx, tr, i, J.j0, J.j1, kDecodeRowBlockLines, int32_t(s));
      const int64_t row0 = s * nq + i * t.Br;  // the partials of split s start at row s Nq
      begin(Line::FD_L13, i, -1, s);
      hbm.store(Tensor::Op, row0, sram.at(Slot::Oi));
      end(0);
      begin(Line::FD_L14, i, -1, s);
      hbm.store(Tensor::Lp, row0, sram.at(Slot::Li));
      end(0);
      for (Slot sl : {Slot::Qi, Slot::Oi, Slot::li, Slot::mi, Slot::Li}) sram.release(sl);
    }
  }

  // Phase 2 (FD L16-L20): the combine, per Q block.
  Vec weight;
  for (int64_t i = 0; i < t.Tr; ++i) {
    const int64_t br = t.rows_in_q_block(i, nq), row0 = i * t.Br;
    // FD L17: load lse_i^(1..S); lse_i = m + log sum_s e^(lse_i^(s) - m); O_i = 0
    Step* st = begin(Line::FD_L17, i, -1, -1);
    Mat& lse_all = sram.scratch(Slot::Lps, br, S);  // column s holds lse_i^(s)
    for (int64_t s = 0; s < S; ++s)
      lse_all.col(s) = sram.load(Slot::mt, hbm, Tensor::Lp, s * nq + row0, br).col(0);
    sram.release(Slot::mt);
    Mat& Li = sram.scratch(Slot::Li, br, 1);
    Mat& mi = sram.scratch(Slot::mi, br, 1);
    for (int64_t r = 0; r < br; ++r) {
      float m = -INFINITY;
      for (int64_t s = 0; s < S; ++s) m = merged_max(m, lse_all(r, s));
      float l = 0;
      for (int64_t s = 0; s < S; ++s) l += rescale_factor(lse_all(r, s), m);
      mi(r, 0) = m;
      Li(r, 0) = row_logsumexp(m, l);  // -inf when no split kept a key of the row
    }
    Mat& Oi = sram.scratch(Slot::Oi, br, d);
    Oi.setZero();
    if (st) {
      st->m_tilde = mi.col(0);  // max_s lse_i^(s)
      st->m_new = Li.col(0);    // lse_i
    }
    end(br * (3 * S + 2));

    // FD L18, per split: O_i += e^(lse_i^(s) - lse_i) O_i^(s)
    for (int64_t s = 0; s < S; ++s) {
      st = begin(Line::FD_L18, i, -1, s);
      const Mat& Os = sram.load(Slot::Ops, hbm, Tensor::Op, s * nq + row0, br);
      weight.resize(br);
      for (int64_t r = 0; r < br; ++r) {
        weight(r) = split_weight(lse_all(r, s), Li(r, 0));
        for (int64_t c = 0; c < d; ++c) Oi(r, c) += weight(r) * Os(r, c);
      }
      if (st) {
        st->alpha = weight;                 // the rescale factors e^(lse_i^(s) - lse_i)
        st->m_old = lse_all.col(s);         // lse_i^(s)
        st->m_new = Li.col(0);              // lse_i
        st->tile = Os;                      // O_i^(s) as loaded
        st->O_i = Oi;                       // the running combination
      }
      end(br + 2 * br * d);
      sram.release(Slot::Ops);
    }

    begin(Line::FD_L19, i, -1, -1);
    hbm.store(Tensor::O, row0, Oi);
    end(0);
    begin(Line::FD_L20, i, -1, -1);
    hbm.store(Tensor::L, row0, Li);
    end(0);
    for (Slot sl : {Slot::Oi, Slot::Li, Slot::mi, Slot::Lps}) sram.release(sl);
  }

  tr.O = hbm.get(Tensor::O);
  tr.lse = hbm.get(Tensor::L).col(0);
  ctx.finish();
}

// [SECTION] One sentence per step (run --steps, the JSON "text", the app)

namespace {
// A paged load's addresses (core/paged_kv.h): " Pages 3-4 of the block table: physical 7, 2."
std::string pages_text(const Trace& t, const Step& s) {
  if (s.pages.empty()) return "";
  const int64_t P = t.problem.page_size, lp0 = int64_t(s.j) * t.tiling.Bc / P;
  std::string out = " Through the block table: logical page" + std::string(s.pages.size() > 1 ? "s " : " ") +
                    std::to_string(lp0);
  if (s.pages.size() > 1) out += "-" + std::to_string(lp0 + int64_t(s.pages.size()) - 1);
  out += " at physical page" + std::string(s.pages.size() > 1 ? "s " : " ");
  for (size_t k = 0; k < s.pages.size(); ++k) out += (k ? ", " : "") + std::to_string(s.pages[k]);
  return out + ".";
}
}  // namespace

std::string explain_decode_step(const Trace& t, size_t k) {
  const Step& s = t.steps.at(k);
  if (!is_decode_line(s.line)) return explain_paper_step(t, k) + pages_text(t, s);  // S = 1 runs fa2's lines
  const Problem& problem = t.problem;
  const Tiling& tiling = t.tiling;
  const int64_t br = s.i >= 0 ? tiling.rows_in_q_block(s.i, problem.nq) : 0;
  const int64_t r0 = s.i >= 0 ? s.i * tiling.Br : 0;
  const int64_t c0 = s.j >= 0 ? s.j * tiling.Bc : 0;
  const int64_t bc = s.j >= 0 ? tiling.rows_in_kv_block(s.j, problem.nk) : 0;
  const int sp = s.split + 1, S = int(problem.splits);
  char buf[512];
  switch (s.line) {
    case Line::FD_L3:
      std::snprintf(buf, sizeof buf, "Split %d of %d: load Q_i (rows %lld-%lld) into SRAM; every split loads it again.",
                    sp, S, (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::FD_L4:
      std::snprintf(buf, sizeof buf, "Split %d: start O_i = 0, l_i = 0, m_i = -inf on chip.", sp);
      break;
    case Line::FD_SKIP:
      std::snprintf(buf, sizeof buf, "Split %d: block (i = %d, j = %d) is entirely masked: skipped.", sp, s.i, s.j);
      break;
    case Line::FD_L6:
      std::snprintf(buf, sizeof buf, "Split %d: load K_j and V_j (rows %lld-%lld) into SRAM.", sp,
                    (long long)c0, (long long)(c0 + bc - 1));
      break;
    case Line::FD_L7:
      std::snprintf(buf, sizeof buf, "Split %d: compute the %lld x %lld score tile S_ij = tau Q_i K_j^T on chip%s.",
                    sp, (long long)br, (long long)bc, s.masked ? ", masking entries element by element" : "");
      break;
    case Line::FD_L8:
      std::snprintf(buf, sizeof buf, "Split %d: update the running max and sum of this split only, as FA2 does.", sp);
      break;
    case Line::FD_L9:
      std::snprintf(buf, sizeof buf, "Split %d: rescale O_i by e^(m_old - m_new) and add P~_ij V_j.", sp);
      break;
    case Line::FD_L11:
      std::snprintf(buf, sizeof buf, "Split %d: divide O_i by the split's own l_i: the partial O_i^(s).", sp);
      break;
    case Line::FD_L12:
      std::snprintf(buf, sizeof buf, "Split %d: lse_i^(s) = m_i + log l_i, the log of the split's softmax denominator.", sp);
      break;
    case Line::FD_L13:
      std::snprintf(buf, sizeof buf, "Split %d: write the partial O_i^(s) (%lld x %lld, float32) to HBM: traffic fa2 does not have.",
                    sp, (long long)br, (long long)problem.d);
      break;
    case Line::FD_L14:
      std::snprintf(buf, sizeof buf, "Split %d: write lse_i^(s) (%lld float32) to HBM.", sp, (long long)br);
      break;
    case Line::FD_L17:
      std::snprintf(buf, sizeof buf, "Combine rows %lld-%lld: load the %d partial lse_i^(s) and take lse_i = log sum_s e^(lse_i^(s)).",
                    (long long)r0, (long long)(r0 + br - 1), S);
      break;
    case Line::FD_L18:
      std::snprintf(buf, sizeof buf, "Combine: load O_i^(%d) and add it weighted by e^(lse_i^(%d) - lse_i).", sp, sp);
      break;
    case Line::FD_L19:
      std::snprintf(buf, sizeof buf, "Write the combined O_i (rows %lld-%lld) to HBM.", (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::FD_L20:
      std::snprintf(buf, sizeof buf, "Write lse_i to HBM as L_i: the same logsumexp fa2 writes.");
      break;
    default:
      buf[0] = 0;
      break;
  }
  return buf + pages_text(t, s);
}

}  // namespace flashstep
