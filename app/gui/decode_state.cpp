// The app's flash-decoding state (decode_state.h): everything from the trace's steps.
#include "app/gui/decode_state.h"

#include "app/gui/app_state.h"
#include "core/lines.h"
#include "core/schedule_registry.h"
#include "core/schedules/decode/decode.h"

#include <cmath>
#include <limits>

namespace flashstep::gui {

bool has_partials(const Trace& tr) { return schedule_splits_kv(tr.problem.schedule) && tr.tiling.S >= 2; }

int64_t split_of_block(const Trace& tr, int64_t j) {
  if (!has_partials(tr) || j < 0 || j >= tr.tiling.Tc) return -1;
  for (int64_t s = 0; s < tr.tiling.S; ++s) {
    const SplitRange r = split_range(tr.tiling.Tc, tr.tiling.S, s);
    if (j >= r.j0 && j < r.j1) return s;
  }
  return -1;
}

bool decode_extra_traffic(const RunView& v, DecodeExtraTraffic& x) {
  const Trace& tr = v.trace;
  if (!has_partials(tr)) return false;
  const ScheduleInfo& info = schedule_info(v.schedule());
  const ScheduleRun& run = v.runs[size_t(schedule_column(v.schedule()))];
  const ScheduleRun& contrast = v.runs[size_t(schedule_column(info.contrast))];
  if (!run.ok || !contrast.ok || info.contrast == v.schedule()) return false;
  const Totals& own = v.whole_schedule ? *v.whole_schedule : run.forward_totals;
  const Totals& base = contrast.forward_totals;
  const Traffic& f = own.traffic;
  const Traffic& g = base.traffic;
  const size_t Q = size_t(Tensor::Q), Op = size_t(Tensor::Op), Lp = size_t(Tensor::Lp);
  x.rows = {{{"Q read", f.read[Q], g.read[Q]},
             {"O^(s), lse^(s) written", f.written[Op] + f.written[Lp], 0},
             {"O^(s), lse^(s) read", f.read[Op] + f.read[Lp], 0},
             {"whole forward", own.hbm_read_bytes + own.hbm_write_bytes, base.hbm_read_bytes + base.hbm_write_bytes}}};
  x.extra = x.rows[3].decode - x.rows[3].contrast;
  x.q_again = f.read[Q] - g.read[Q];
  x.partials = 2 * tr.tiling.S * tr.problem.nq * (tr.problem.d + 1) * 4;
  x.kv = f.read[size_t(Tensor::K)] + f.read[size_t(Tensor::V)];
  return true;
}

PartialWrites partial_writes(const Trace& tr) {
  PartialWrites w;
  if (!has_partials(tr)) return w;
  w.S = tr.tiling.S;
  w.Tr = tr.tiling.Tr;
  w.o_step.assign(size_t(w.S * w.Tr), -1);
  w.lse_step.assign(size_t(w.S * w.Tr), -1);
  // What HBM held before the first step: every Q block of a split whose rows it covers.
  const int64_t nq = tr.problem.nq;
  for (const HbmWrite& hw : tr.hbm_before) {
    if (hw.tensor != Tensor::Op && hw.tensor != Tensor::Lp) continue;
    auto& at = hw.tensor == Tensor::Op ? w.o_step : w.lse_step;
    for (int64_t r = hw.row0; r < hw.row0 + hw.data.rows() && r < w.S * nq; ++r)
      at[size_t((r / nq) * w.Tr + (r % nq) / tr.tiling.Br)] = kBeforeFirstStep;
  }
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    const Step& st = tr.steps[k];
    if (st.split < 0 || st.i < 0) continue;
    for (const HbmWrite& hw : st.writes) {
      const size_t at = size_t(int64_t(st.split) * w.Tr + st.i);
      if (hw.tensor == Tensor::Op) w.o_step[at] = int64_t(k);
      if (hw.tensor == Tensor::Lp) w.lse_step[at] = int64_t(k);
    }
  }
  return w;
}

int64_t combine_splits_at(const Trace& tr, const Cursor& at) {
  const size_t applied = at.index();
  if (applied == 0 || applied > tr.steps.size() || !has_partials(tr)) return 0;
  const Step& cur = tr.steps[applied - 1];
  return line_role(cur.line) == LineRole::combine && cur.i >= 0 ? tr.tiling.S : 0;
}

CombineFactors combine_factors(const Trace& tr, const Cursor& at) {
  CombineFactors c;
  const size_t applied = at.index();
  if (applied == 0 || applied > tr.steps.size() || !has_partials(tr)) return c;
  const Step& cur = tr.steps[applied - 1];
  if (line_role(cur.line) != LineRole::combine || cur.i < 0) return c;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  c.i = cur.i;
  c.S = tr.tiling.S;
  c.row0 = cur.i * tr.tiling.Br;
  c.rows = tr.tiling.rows_in_q_block(cur.i, tr.problem.nq);
  c.current_split = cur.split;
  c.lse_split = Mat::Constant(c.rows, c.S, nan);
  c.factor = Mat::Constant(c.rows, c.S, nan);
  c.lse = Vec::Constant(c.rows, nan);
  // Back from the current step over this block's combine: FD L18 of each split carries its
  // factors (alpha), lse_i^(s) (m_old) and lse_i (m_new); FD L17 (no split) carries lse_i.
  for (size_t k = applied; k-- > 0;) {
    const Step& st = tr.steps[k];
    if (st.i != cur.i || line_role(st.line) != LineRole::combine) break;
    if (st.split >= 0 && st.alpha.size() == c.rows) {
      c.factor.col(st.split) = st.alpha;
      c.lse_split.col(st.split) = st.m_old;
    }
    if (st.m_new.size() == c.rows) c.lse = st.m_new;
  }
  // lse_i^(s) of every split is on chip from FD L17 on: the factors' sources, from HBM.
  if (at.written(Tensor::Lp)) {
    const Mat& Lp = at.hbm(Tensor::Lp);
    for (int64_t s = 0; s < c.S; ++s)
      c.lse_split.col(s) = Lp.block(s * tr.problem.nq + c.row0, 0, c.rows, 1);
  }
  return c;
}

}  // namespace flashstep::gui
