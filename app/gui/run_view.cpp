// The run view: everything the app derives from one trace when it is made (core/run.h runs every
// schedule on the same inputs; the chosen one recorded), read-only afterwards.
#include "app/gui/app_state.h"

#include "core/backward.h"
#include "core/schedules/decode/decode.h"
#include "core/fp8_inputs.h"
#include "core/run.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

namespace flashstep::gui {

namespace {

constexpr int64_t kMaxScoreDisplay = int64_t(8) << 20;  // S/P panels up to 8M elements
constexpr float kNotYet = 1e30f;                       // "tile never appears" in s_ready

// Largest finite |x| (masked scores are -inf), at least a tiny positive number.
float max_abs(const Mat& m) {
  float r = 1e-12f;
  for (int64_t k = 0; k < m.size(); ++k)
    if (std::isfinite(m.data()[k])) r = std::max(r, std::abs(m.data()[k]));
  return r;
}

}  // namespace

int64_t fwd_bwd_form_bytes(const ScheduleRun& r, Dtype dtype) {
  if (missing_path(schedule_info(r.schedule), dtype, true) != MissingPath::none) return -1;
  const int bpe = dtype_bytes(dtype), out = dtype_bytes(output_dtype(dtype));
  return r.form.read_bytes(bpe, out) + r.form.write_bytes(bpe, out) + r.backward_form.read_bytes(bpe) +
         r.backward_form.write_bytes(bpe);
}

const std::vector<Schedule>& schedule_ids() {
  static const std::vector<Schedule> ids = [] {
    std::vector<Schedule> v;
    for (const ScheduleInfo* s : schedules()) v.push_back(s->id);
    return v;
  }();
  return ids;
}

float RunView::fp8_scale_of(int which, int64_t row) const {
  const Mat& s = fp8_scales[which];
  if (s.rows() == 1) return s(0, 0);
  return s(row / (which == 0 ? trace.tiling.Br : trace.tiling.Bc), 0);
}

int64_t RunView::step_of(int64_t i, int64_t j, Line line) const {
  for (size_t k = 0; k < trace.steps.size(); ++k) {
    const Step& s = trace.steps[k];
    if (s.line == line && s.i == i && s.j == j) return int64_t(k);
  }
  return -1;
}

int64_t RunView::first_step_at(int64_t i, int64_t j) const {
  const bool tiled = schedule_info(schedule()).tiled;
  for (size_t k = 0; k < trace.steps.size(); ++k) {
    const Step& s = trace.steps[k];
    if (is_backward_line(s.line)) break;
    if (s.i == i && s.j == (tiled ? j : -1) && line_role(s.line) != LineRole::skip) return int64_t(k);
  }
  return -1;
}

namespace {

TrafficForm closed_form(Schedule s, const Problem& p, const Tiling& t) {
  // A schedule without an FP8 forward gets its plain form (its run is refused: not applicable).
  if (missing_path(schedule_info(s), p.dtype, false) == MissingPath::fp8_version)
    return schedule_info(s).forward_traffic(p.nq, p.nk, p.d, t);
  return forward_form(s, p.dtype, p.nq, p.nk, p.d, t);  // fp8: with the scale reads; t.S: decode's splits
}

// The memory panel's note for a schedule without this problem's path (MissingPath), after its name.
std::string missing_path_note(const ScheduleInfo& si, MissingPath missing) {
  switch (missing) {
    case MissingPath::backward: return std::string(": no backward pass (") + si.paper_name + " is for inference)";
    case MissingPath::fp8_version: return ": no FP8 version (the FP8 forward runs " + fp8_schedule_names() + ")";
    case MissingPath::fp8_backward: return ": no FP8 backward pass";
    case MissingPath::none: break;
  }
  return "";
}

}  // namespace

std::unique_ptr<RunView> make_run_view(const ProblemSpec& spec, bool backward,
                                       const std::optional<L2Config>& l2) {
  auto v = std::make_unique<RunView>();
  v->spec = spec;
  v->backward = backward;
  v->l2 = l2;
  RunOptions opt;
  opt.record = true;
  opt.l2 = l2;
  opt.max_trace_bytes = kMaxTraceBytes;
  Mat dO;  // as `flashstep run --backward` makes it: the inputs' pattern, "random" for files
  {
    const Problem made = make_problem(spec);
    const Tiling tiling = make_tiling(made);
    if (backward) {
      dO = make_grad_output(made, spec.q_path.empty() ? spec.pattern : "random");
      opt.dO = &dO;
    }
    v->trace = run_problem(made, tiling, opt);
  }
  return derive_run_view(std::move(v), opt.dO);
}

std::unique_ptr<RunView> make_run_view_from_trace(Trace trace) {
  auto v = std::make_unique<RunView>();
  v->from_file = true;
  const Problem& tp = trace.problem;
  v->spec = sizes_spec(tp.nq, tp.nk, tp.d, tp.M, tp.br, tp.bc);
  v->spec.scale = tp.scale;
  v->spec.schedule = tp.schedule;
  v->spec.seed = tp.seed;
  v->spec.pattern = tp.pattern;
  v->spec.options = tp.options();
  if (tp.page_size > 0) v->spec.page_size = tp.page_size;
  v->spec.splits = schedule_splits_kv(tp.schedule) ? tp.splits : 0;
  v->trace = std::move(trace);
  // With the backward, every other schedule runs its backward on the file's dO beside it.
  v->backward = v->trace.has_backward;
  // What the trace's steps read but never write, placed before its first step where core's own
  // run writes it, was made by a part of the schedule the trace does not hold (RunView::whole_schedule).
  std::array<bool, kTensors> written_by_steps{};
  for (const Step& st : v->trace.steps)
    for (const HbmWrite& w : st.writes) written_by_steps[size_t(w.tensor)] = true;
  bool placed = false;
  for (const HbmWrite& w : v->trace.hbm_before) placed = placed || !written_by_steps[size_t(w.tensor)];
  if (!v->backward && placed) {
    RunOptions fast;
    fast.record = false;
    try {
      Trace whole = run_problem(v->trace.problem, v->trace.tiling, fast);
      for (const HbmWrite& w : v->trace.hbm_before)
        if (!written_by_steps[size_t(w.tensor)] && whole.totals.traffic.written[size_t(w.tensor)] > 0)
          v->whole_schedule = whole.totals;
    } catch (const InputError&) {
      // No whole run of this problem (too large for the simulated HBM): the readers say so.
    }
  }
  const Mat* dO = v->backward ? &v->trace.dO : nullptr;
  return derive_run_view(std::move(v), dO);
}

std::unique_ptr<RunView> derive_run_view(std::unique_ptr<RunView> v, const Mat* dO) {
  const std::optional<L2Config>& l2 = v->l2;
  const Problem& p = v->trace.problem;
  const Tiling& t = v->trace.tiling;

  // Every schedule on the same inputs and blocks: the shown one is the recorded run, the others
  // run unrecorded for their totals and outputs. Then their errors against float64.
  const size_t n_runs = kSchedules.size();
  v->runs.resize(n_runs);
  std::vector<Mat> outputs(n_runs);
  std::vector<Vec> lses(n_runs);
  for (size_t c = 0; c < n_runs; ++c) {
    ScheduleRun& r = v->runs[c];
    r.schedule = kSchedules[c];
    // A schedule that splits K/V (decode) beside another shown one: its default S for one head.
    Tiling rt = t;
    if (schedule_splits_kv(r.schedule) && r.schedule != p.schedule) rt.S = default_splits(t.Tr, t.Tc, kDefaultSmCount);
    if (!schedule_splits_kv(r.schedule)) rt.P = 0;  // a paged KV cache (--page-size) is decode's alone
    r.form = closed_form(r.schedule, p, rt);
    r.backward_form = schedule_backward_traffic(r.schedule, p.nq, p.nk, p.d, t.Tr, t.Tc);
    // A schedule without this problem's path has no figures: a note for the panel, not an error.
    const ScheduleInfo& si = schedule_info(r.schedule);
    const MissingPath missing = missing_path(si, p.dtype, dO != nullptr);
    if (missing != MissingPath::none) {
      r.not_applicable = true;
      r.error = si.name + missing_path_note(si, missing);
      continue;
    }
    try {
      auto keep = [&](Trace& tr) {
        r.totals = tr.totals;
        r.forward_totals = tr.has_backward ? tr.forward_totals : tr.totals;
        r.backward_totals = tr.backward_totals;
        outputs[c] = tr.O;
        lses[c] = tr.lse;
      };
      if (r.schedule == p.schedule) {
        keep(v->trace);
      } else {
        Problem ps = p;
        ps.schedule = r.schedule;
        ps.splits = rt.S;
        ps.page_size = rt.P;
        RunOptions fast;
        fast.record = false;
        fast.dO = dO;
        fast.l2 = l2;
        Trace other = run_problem(ps, rt, fast);
        keep(other);
      }
      r.ok = true;
    } catch (const InputError& e) {
      r.error = e.what();
    }
  }
  // Every column against one float64 reference, by core/accuracy.h: the code whose figures
  // run's summary and verify print, so the shown schedule's figure is theirs.
  std::vector<EngineResult> engines;
  std::vector<size_t> columns;  // the runs that ran, in engines' order
  for (size_t c = 0; c < n_runs; ++c)
    if (v->runs[c].ok) {
      engines.push_back({&outputs[c], &lses[c]});
      columns.push_back(c);
    }
  if (const auto errors = forward_accuracies(p, engines)) {
    for (size_t k = 0; k < columns.size(); ++k) {
      ScheduleRun& r = v->runs[columns[k]];
      r.o_err = (*errors)[k].O;
      r.lse_err = (*errors)[k].lse;
      r.have_error = true;
    }
  } else {
    char note[96];
    std::snprintf(note, sizeof note, "error against float64 skipped: Nq Nk d is over %.0e multiply-adds",
                  kMaxReferenceWork);
    v->reference_note = note;
  }

  const Trace& tr = v->trace;
  const ScheduleInfo& info = schedule_info(p.schedule);
  const int64_t Tr = t.Tr, Tc = t.Tc;
  const bool show_scores = p.nq * p.nk <= kMaxScoreDisplay && p.nq <= 8192 && p.nk <= 8192;
  if (show_scores) {
    v->S = Mat::Zero(p.nq, p.nk);
    v->P = Mat::Zero(p.nq, p.nk);
  }
  v->s_ready = Mat::Constant(Tr, Tc, kNotYet);
  v->p_ready = Mat::Constant(Tr, Tc, kNotYet);
  v->skipped = Mat::Zero(Tr, Tc);
  v->partial = Mat::Zero(Tr, Tc);
  for (int64_t i = 0; i < Tr; ++i)
    for (int64_t j = 0; j < Tc; ++j) {
      const int64_t r0 = i * t.Br, c0 = j * t.Bc;
      const Mask::Block kind = p.mask.classify(r0, r0 + t.rows_in_q_block(i, p.nq), c0,
                                               c0 + t.rows_in_kv_block(j, p.nk), p.nk);
      // Standard attention computes every entry (masked ones as -inf): nothing is skipped.
      if (kind == Mask::Block::empty && info.tiled) {
        v->skipped(i, j) = 1;
        ++v->skipped_tiles;
      } else if (kind != Mask::Block::full) {
        v->partial(i, j) = 1;
        ++v->partial_tiles;
      }
    }
  v->q_first_load.assign(size_t(Tr), -1);
  v->kv_first_load.assign(size_t(Tc), -1);
  v->tilde_step.assign(size_t(Tr * Tc), -1);
  v->merge_step.assign(size_t(Tr * Tc), -1);
  v->keep_step.assign(size_t(Tr * Tc), -1);
  v->m_series = Mat::Constant(p.nq, Tc, -std::numeric_limits<float>::infinity());
  v->l_series = Mat::Zero(p.nq, Tc);
  auto first = [](std::vector<int64_t>& at, int64_t idx, size_t k) {
    if (idx >= 0 && size_t(idx) < at.size() && at[size_t(idx)] < 0) at[size_t(idx)] = int64_t(k);
  };
  // A trace file may hold less than a recorded run (a puzzle's notes are optional, and may be one
  // of m_new, l_new alone): what is not there, or does not fit the problem, is not drawn.
  auto place = [&](Mat& dst, const Mat& tile, int64_t r0, int64_t c0) {
    if (show_scores && tile.size() && r0 + tile.rows() <= dst.rows() && c0 + tile.cols() <= dst.cols())
      dst.block(r0, c0, tile.rows(), tile.cols()) = tile;
  };
  auto series = [&](const Step& s, int64_t r0) {
    if (s.j < 0 || s.j >= Tc) return;
    for (int64_t r = 0; r < s.m_new.size() && r0 + r < p.nq; ++r) v->m_series(r0 + r, s.j) = s.m_new(r);
    for (int64_t r = 0; r < s.l_new.size() && r0 + r < p.nq; ++r) v->l_series(r0 + r, s.j) = s.l_new(r);
  };
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    const Step& s = tr.steps[k];
    if (is_backward_line(s.line)) continue;
    // The trace reader refuses a step its line cannot place (core/trace_file.h); this is the
    // last guard: the tables below are indexed by i and j, and a step without them is not drawn.
    const bool has_i = s.i >= 0 && s.i < Tr, has_j = s.j >= 0 && s.j < Tc;
    const int64_t r0 = has_i ? s.i * t.Br : 0, c0 = has_j ? s.j * t.Bc : 0;
    const int64_t ij = has_i && has_j ? s.i * Tc + s.j : -1;
    const LineRole role = line_role(s.line);
    if (!has_i && role != LineRole::load_kv) continue;  // every role drawn below but K/V's load is per Q block
    if (!info.tiled) {
      // Standard attention: whole row blocks of S and P, written to HBM (shown as stored there).
      switch (role) {
        case LineRole::scores:
          first(v->q_first_load, s.i, k);
          if (s.i == 0)
            for (int64_t j = 0; j < Tc; ++j) first(v->kv_first_load, j, k);
          for (const HbmWrite& w : s.writes)
            if (w.tensor == Tensor::S) place(v->S, w.data, w.row0, 0);
          v->s_ready.row(s.i).setConstant(float(k + 1));
          break;
        case LineRole::probabilities:
          for (const HbmWrite& w : s.writes)
            if (w.tensor == Tensor::P) place(v->P, w.data, w.row0, 0);
          v->p_ready.row(s.i).setConstant(float(k + 1));
          break;
        case LineRole::write_o:
          if (s.dropout_keep.size())
            for (int64_t j = 0; j < Tc; ++j) v->keep_step[size_t(s.i * Tc + j)] = int64_t(k);
          break;
        default:
          break;
      }
      continue;
    }
    // The tiled schedules (Algorithm 1: j outer, i inner, O, l, m to HBM and back at every
    // (i, j); FlashAttention-2: i outer, j inner, O_i, l_i, m_i on chip) share what they record:
    // S_ij, then P~_ij with m~_ij, the merged m_i, l_i, and the dropout mask.
    if (ij < 0 && role != LineRole::load_kv && role != LineRole::load_q) continue;
    switch (role) {
      case LineRole::load_kv: first(v->kv_first_load, s.j, k); break;
      case LineRole::load_q: first(v->q_first_load, s.i, k); break;
      case LineRole::scores:
        v->s_ready(s.i, s.j) = float(k + 1);
        place(v->S, s.tile, r0, c0);
        break;
      case LineRole::probabilities:
      case LineRole::online_softmax:  // FA2 L9 also merges m_i, l_i
        v->p_ready(s.i, s.j) = float(k + 1);
        v->tilde_step[size_t(ij)] = int64_t(k);
        place(v->P, s.tile, r0, c0);
        if (role == LineRole::probabilities) break;
        [[fallthrough]];
      case LineRole::merge_stats:
        // A merge the trace shows: a step with the merged statistics (a puzzle's trace has them
        // only where the student noted them).
        if (s.m_new.size() && s.l_new.size()) {
          v->merge_step[size_t(ij)] = int64_t(k);
          v->any_merge = true;
        }
        series(s, r0);
        break;
      case LineRole::write_o:
      case LineRole::accumulate_o:
        if (s.dropout_keep.size()) v->keep_step[size_t(ij)] = int64_t(k);
        break;
      default:
        break;
    }
  }
  // A masked entry's weight is 0; for display it keeps the -inf colour of its score.
  if (show_scores && p.mask.any())
    for (int64_t e = 0; e < v->S.size(); ++e)
      if (v->S.data()[e] == -std::numeric_limits<float>::infinity())
        v->P.data()[e] = -std::numeric_limits<float>::infinity();
  if (p.dtype == Dtype::fp8) {  // Q, K, V as the FP8 kernel finds them in HBM (core/fp8_inputs.h)
    Hbm h(Dtype::fp8);
    put_fp8_inputs(h, p, t);
    const Tensor values[3] = {Tensor::Q, Tensor::K, Tensor::V}, scales[3] = {Tensor::sQ, Tensor::sK, Tensor::sV};
    v->fp8_inputs[0] = rotated_input(p, p.Q);
    v->fp8_inputs[1] = rotated_input(p, p.K);
    v->fp8_inputs[2] = p.V;
    for (int e = 0; e < 3; ++e) {
      v->fp8_values[e] = h.get(values[e]);
      v->fp8_scales[e] = h.get(scales[e]);
      v->fp8_stored[e] = v->fp8_values[e];
      for (int64_t r = 0; r < v->fp8_stored[e].rows(); ++r) v->fp8_stored[e].row(r) *= v->fp8_scale_of(e, r);
    }
  }
  v->range_qkv = p.dtype == Dtype::fp8 ? std::max({max_abs(v->fp8_stored[0]), max_abs(v->fp8_stored[1]), max_abs(v->fp8_stored[2])})
                                       : std::max({max_abs(p.Q), max_abs(p.K), max_abs(p.V)});
  v->range_o = max_abs(tr.O);
  v->range_s = show_scores ? max_abs(v->S) : 1.0f;
  v->range_L = max_abs(Mat(tr.lse));
  // The colour scales of HBM's m and l: the merged statistics the steps show and every value
  // written to m and l. A puzzle's trace without m.note has only the writes: from the statistics
  // alone its scale would be empty, and every stored value one saturated colour.
  v->range_m = max_abs(v->m_series);
  v->max_l = max_abs(v->l_series);
  auto widen = [&](const HbmWrite& w) {
    if (w.tensor == Tensor::m) v->range_m = std::max(v->range_m, max_abs(w.data));
    if (w.tensor == Tensor::l) v->max_l = std::max(v->max_l, max_abs(w.data));
  };
  for (const HbmWrite& w : tr.hbm_before) widen(w);
  for (const Step& s : tr.steps)
    for (const HbmWrite& w : s.writes) widen(w);
  return v;
}

}  // namespace flashstep::gui
