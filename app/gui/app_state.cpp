#include "app/gui/app_state.h"

#include "core/npy.h"
#include "core/run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace flashstep::gui {

namespace {

constexpr size_t kMaxTraceBytes = size_t(512) << 20;  // the app refuses larger recordings
constexpr int64_t kMaxScoreDisplay = int64_t(8) << 20;  // S/P panels up to 8M elements
constexpr float kNotYet = 1e30f;                       // "tile never appears" in s_ready

float max_abs(const Mat& m) { return m.size() ? std::max(m.cwiseAbs().maxCoeff(), 1e-12f) : 1.0f; }

}  // namespace

int64_t RunView::step_of(int64_t i, int64_t j, Line line) const {
  for (size_t k = 0; k < trace.steps.size(); ++k) {
    const Step& s = trace.steps[k];
    if (s.line == line && s.i == i && s.j == j) return int64_t(k);
  }
  return -1;
}

std::unique_ptr<RunView> make_run_view(const ProblemSpec& spec_in) {
  ProblemSpec spec = spec_in;
  spec.schedule = Schedule::fa1;
  auto v = std::make_unique<RunView>();
  const Problem p = make_problem(spec);
  const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, spec.br, spec.bc);
  RunOptions opt;
  opt.record = true;
  opt.max_trace_bytes = kMaxTraceBytes;
  v->trace = run_problem(p, t, opt);
  try {  // Algorithm 0 on the same inputs and blocks, only for its totals
    Problem ps = p;
    ps.schedule = Schedule::standard;
    RunOptions fast;
    fast.record = false;
    v->standard = run_problem(ps, t, fast).totals;
  } catch (const InputError& e) {
    v->standard_error = e.what();
  }

  const Trace& tr = v->trace;
  const int64_t Tr = t.Tr, Tc = t.Tc;
  const bool show_scores = p.nq * p.nk <= kMaxScoreDisplay && p.nq <= 8192 && p.nk <= 8192;
  if (show_scores) {
    v->S = Mat::Zero(p.nq, p.nk);
    v->P = Mat::Zero(p.nq, p.nk);
  }
  v->s_ready = Mat::Constant(Tr, Tc, kNotYet);
  v->p_ready = Mat::Constant(Tr, Tc, kNotYet);
  v->q_first_load.assign(size_t(Tr), -1);
  v->kv_first_load.assign(size_t(Tc), -1);
  v->l10_step.assign(size_t(Tr * Tc), -1);
  v->l11_step.assign(size_t(Tr * Tc), -1);
  v->m_series = Mat::Constant(p.nq, Tc, -std::numeric_limits<float>::infinity());
  v->l_series = Mat::Zero(p.nq, Tc);
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    const Step& s = tr.steps[k];
    const int64_t r0 = s.i >= 0 ? s.i * t.Br : 0, c0 = s.j >= 0 ? s.j * t.Bc : 0;
    switch (s.line) {
      case Line::A1_L6:
        if (v->kv_first_load[size_t(s.j)] < 0) v->kv_first_load[size_t(s.j)] = int64_t(k);
        break;
      case Line::A1_L8:
        if (v->q_first_load[size_t(s.i)] < 0) v->q_first_load[size_t(s.i)] = int64_t(k);
        break;
      case Line::A1_L9:
        v->s_ready(s.i, s.j) = float(k + 1);
        if (show_scores && s.tile.size()) v->S.block(r0, c0, s.tile.rows(), s.tile.cols()) = s.tile;
        break;
      case Line::A1_L10:
        v->p_ready(s.i, s.j) = float(k + 1);
        v->l10_step[size_t(s.i * Tc + s.j)] = int64_t(k);
        if (show_scores && s.tile.size()) v->P.block(r0, c0, s.tile.rows(), s.tile.cols()) = s.tile;
        break;
      case Line::A1_L11:
        v->l11_step[size_t(s.i * Tc + s.j)] = int64_t(k);
        for (int64_t r = 0; r < s.m_new.size(); ++r) {
          v->m_series(r0 + r, s.j) = s.m_new(r);
          v->l_series(r0 + r, s.j) = s.l_new(r);
        }
        break;
      default:
        break;
    }
  }
  v->range_qkv = std::max({max_abs(p.Q), max_abs(p.K), max_abs(p.V)});
  v->range_o = max_abs(tr.O);
  v->range_s = show_scores ? max_abs(v->S) : 1.0f;
  float m_abs = 1e-12f;
  for (int64_t r = 0; r < v->m_series.rows(); ++r)
    for (int64_t c = 0; c < v->m_series.cols(); ++c)
      if (std::isfinite(v->m_series(r, c))) m_abs = std::max(m_abs, std::abs(v->m_series(r, c)));
  v->range_m = m_abs;
  v->max_l = std::max(v->l_series.size() ? v->l_series.maxCoeff() : 1.0f, 1e-12f);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Problem editor

ProblemSpec ProblemForm::to_spec() const {
  ProblemSpec s;
  s.nq = nq;
  s.nk = nk;
  s.d = d;
  s.M = M;
  s.br = br;
  s.bc = bc;
  if (!default_scale) s.scale = scale;
  s.seed = uint64_t(seed);
  if (seed < 0) throw InputError("seed must be non-negative");
  const auto& pats = input_patterns();
  s.pattern = pats.at(size_t(std::clamp(pattern, 0, int(pats.size()) - 1)));
  if (use_files) {
    s.q_path = q_path;
    s.k_path = k_path;
    s.v_path = v_path;
    if (s.q_path.empty() || s.k_path.empty() || s.v_path.empty())
      throw InputError("give all three .npy files (Q, K, V), or switch back to a pattern");
  }
  return s;
}

void ProblemForm::from_spec(const ProblemSpec& s) {
  nq = s.nq;
  nk = s.nk;
  d = s.d;
  M = s.M;
  std::snprintf(M_kib, sizeof M_kib, "%g", double(M) * 4.0 / 1024.0);
  br = s.br;
  bc = s.bc;
  default_scale = !s.scale.has_value();
  scale = s.scale ? *s.scale : 1.0 / std::sqrt(double(std::max<int64_t>(d, 1)));
  seed = int64_t(s.seed);
  const auto& pats = input_patterns();
  pattern = 0;
  for (size_t k = 0; k < pats.size(); ++k)
    if (pats[k] == s.pattern) pattern = int(k);
  use_files = !s.q_path.empty();
  std::snprintf(q_path, sizeof q_path, "%s", s.q_path.c_str());
  std::snprintf(k_path, sizeof k_path, "%s", s.k_path.c_str());
  std::snprintf(v_path, sizeof v_path, "%s", s.v_path.c_str());
  validate();
}

namespace {

// Which field an InputError from core/problem.cpp is about (its messages start with the name).
Field field_of(const std::string& msg) {
  auto starts = [&](const char* p) { return msg.rfind(p, 0) == 0; };
  if (starts("d ")) return Field::d;
  if (starts("Nq")) return Field::nq;
  if (starts("Nk")) return Field::nk;
  if (starts("M ") || starts("M:")) return Field::M;
  if (starts("block sizes")) return Field::br;
  if (starts("scale")) return Field::scale;
  if (starts("seed")) return Field::seed;
  if (starts("unknown input pattern")) return Field::pattern;
  if (starts("sizes too large") || starts("recording")) return Field::nq;
  if (starts("give all three")) return Field::files;
  return Field::none;
}

}  // namespace

void ProblemForm::validate() {
  error.clear();
  error_field = Field::none;
  try {
    ProblemSpec s = to_spec();
    if (!use_files) {
      validate_sizes(s);
      Problem sizes;  // no inputs: the estimate needs only the shapes
      sizes.nq = s.nq;
      sizes.nk = s.nk;
      sizes.d = s.d;
      sizes.M = s.M;
      const Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
      const size_t est = estimate_trace_bytes(sizes, t);
      if (est > kMaxTraceBytes) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "recording this run would take about %.0f MiB (the app records up to %zu "
                      "MiB): make Nq, Nk or d smaller",
                      double(est) / 1048576.0, kMaxTraceBytes >> 20);
        throw InputError(buf);
      }
    }
  } catch (const InputError& e) {
    error = e.what();
    error_field = field_of(error);
  }
}

// ---------------------------------------------------------------------------------------------
// Lesson

void LessonState::recompute() {
  error.clear();
  try {
    lesson = run_lesson(parse_values(values), size_t(std::max(block, 0)));
    shown = std::clamp(shown, 0, int(lesson.blocks.size()));
  } catch (const InputError& e) {
    error = e.what();  // the previous lesson stays on screen
  }
}

// ---------------------------------------------------------------------------------------------
// Actions

void AppState::load_preset(const std::string& name) {
  const Preset p = load_preset_file(name);
  (void)p;
}

}  // namespace flashstep::gui
