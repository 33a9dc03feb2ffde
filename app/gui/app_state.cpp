#include "app/gui/app_state.h"

#include "core/export.h"
#include "core/npy.h"
#include "core/run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace flashstep::gui {

namespace {

constexpr size_t kMaxTraceBytes = size_t(512) << 20;  // the app refuses larger recordings
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
  v->max_l = max_abs(v->l_series);
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
  s.causal = causal;
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
  causal = s.causal;
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
  preview.clear();
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
      char buf[160];
      std::snprintf(buf, sizeof buf, "Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld: %s%lld steps",
                    (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc,
                    causal ? "up to " : "", (long long)(1 + t.Tc * (1 + 6 * t.Tr)));
      preview = buf;
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
  const Preset p = gui::load_preset(preset_path(name, asset_dir));
  auto v = make_run_view(p.spec);  // throws before anything is replaced
  form.from_spec(p.spec);
  set_run(std::move(v));
  apply_error.clear();
  preset_name = p.name;
  preset_title = p.title;
  std::string vals;
  char buf[32];
  for (double x : p.lesson_values) {
    std::snprintf(buf, sizeof buf, "%s%g", vals.empty() ? "" : ", ", x);
    vals += buf;
  }
  std::snprintf(lesson.values, sizeof lesson.values, "%s", vals.c_str());
  lesson.block = int(p.lesson_block);
  lesson.shown = 0;
  lesson.recompute();
  view = p.view == "lesson" ? View::lesson : p.view == "compare" ? View::compare : View::tiles;
  view_changed = true;
}

bool AppState::apply_form() {
  try {
    set_run(make_run_view(form.to_spec()));
    apply_error.clear();
    preset_name.clear();
    preset_title.clear();
    return true;
  } catch (const InputError& e) {
    apply_error = e.what();
  } catch (const std::bad_alloc&) {
    apply_error = "out of memory: make the problem smaller";
  }
  return false;
}

void AppState::set_run(std::unique_ptr<RunView> v) {
  cursor.reset();  // it points into the old trace
  run = std::move(v);
  cursor = std::make_unique<Cursor>(run->trace);
  ++run_version;
  playing = false;
  compare.loaded = false;
  compare.message.clear();
  jump_i = jump_j = 0;
  plot_row = 0;
  cursor_moved();
}

void AppState::cursor_moved() {
  ++cursor_version;
  const size_t k = index();
  if (k == 0) explanation = "Before the first step: Q, K and V are in HBM; nothing else exists yet.";
  else explanation = run->trace.explain(k - 1);
  if (plot_follow && cursor->current() && cursor->current()->i >= 0)
    plot_row = int(cursor->current()->i * run->trace.tiling.Br);
}

void AppState::step_forward() {
  if (cursor && index() < steps()) {
    cursor->forward();
    cursor_moved();
  }
}

void AppState::step_back() {
  if (cursor && index() > 0) {
    cursor->backward();
    cursor_moved();
  }
}

void AppState::seek(size_t k) {
  if (!cursor) return;
  k = std::min(k, steps());
  if (k == index()) return;
  if (k == index() + 1) cursor->forward();  // the common case while playing: no replay
  else cursor->seek(k);
  cursor_moved();
}

void AppState::run_to_end() {
  seek(steps());
  playing = false;
}

void AppState::reset() {
  seek(0);
  playing = false;
}

bool AppState::jump_to(int64_t i, int64_t j) {
  jump_error.clear();
  const Tiling& t = run->trace.tiling;
  if (i < 0 || i >= t.Tr || j < 0 || j >= t.Tc) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "need 0 <= i < Tr = %lld and 0 <= j < Tc = %lld",
                  (long long)t.Tr, (long long)t.Tc);
    jump_error = buf;
    return false;
  }
  const int64_t k = run->step_of(i, j, Line::A1_L8);
  if (k < 0) {
    jump_error = "iteration (i, j) is skipped: the mask hides that whole tile";
    return false;
  }
  seek(size_t(k + 1));  // the load of (i, j) applied
  return true;
}

void AppState::advance_playback(double dt) {
  if (!playing) return;
  play_accum += dt * double(speed);
  const size_t n = size_t(play_accum);
  play_accum -= double(n);
  if (n) seek(index() + n);
  if (index() >= steps()) playing = false;
}

void AppState::run_script(const std::string& script) {
  std::stringstream ss(script);
  std::string cmd;
  while (std::getline(ss, cmd, ';')) {
    std::istringstream cs(cmd);
    std::string verb;
    if (!(cs >> verb)) continue;
    long long a = 1, b = 0;
    if (verb == "step" || verb == "back") {
      if (!(cs >> a)) a = 1;
      if (a < 0) throw InputError("script: '" + verb + "' needs a count >= 0");
      for (long long n = 0; n < a; ++n) verb == "step" ? step_forward() : step_back();
    } else if (verb == "seek") {
      if (!(cs >> a) || a < 0) throw InputError("script: seek needs a step index >= 0");
      seek(size_t(a));
    } else if (verb == "end") {
      run_to_end();
    } else if (verb == "home" || verb == "reset") {
      reset();
    } else if (verb == "jump") {
      if (!(cs >> a >> b)) throw InputError("script: jump needs i and j");
      if (!jump_to(a, b)) throw InputError("script: jump " + jump_error);
    } else if (verb == "set") {  // the problem editor, as typed into a field
      std::string field;
      if (!(cs >> field >> a)) throw InputError("script: set needs a field and a number");
      int64_t* slot = field == "nq" ? &form.nq : field == "nk" ? &form.nk : field == "d" ? &form.d
                    : field == "M" ? &form.M : field == "br" ? &form.br : field == "bc" ? &form.bc
                    : field == "seed" ? &form.seed : nullptr;
      if (!slot) throw InputError("script: set knows nq, nk, d, M, br, bc, seed (got '" + field + "')");
      *slot = a;
      if (slot == &form.M) std::snprintf(form.M_kib, sizeof form.M_kib, "%g", double(a) * 4.0 / 1024.0);
      form.validate();
    } else if (verb == "files") {
      std::string q, k, v;
      if (!(cs >> q >> k >> v)) throw InputError("script: files needs three .npy paths (Q K V)");
      set_files(q, k, v);
    } else if (verb == "export") {
      std::string base;
      if (!(cs >> base)) throw InputError("script: export needs a path without extension");
      std::snprintf(export_base, sizeof export_base, "%s", base.c_str());
      for (ExportKind kind : {ExportKind::json, ExportKind::csv, ExportKind::chrome, ExportKind::png}) {
        export_as(kind);
        if (export_message.rfind("error", 0) == 0) throw InputError("script: export " + export_message);
      }
    } else if (verb == "apply") {  // the Apply button: disabled while a field is invalid
      if (form.error.empty()) apply_form();
    } else {
      throw InputError("script: unknown action '" + verb +
                       "' (expected step N, back N, seek K, end, home, jump I J, set FIELD N, apply)");
    }
  }
}

void AppState::export_as(ExportKind kind) {
  const std::string base = export_base;
  try {
    switch (kind) {
      case ExportKind::png:
        screenshot_request = base + ".png";  // written after this frame renders
        export_message = "writing " + screenshot_request;
        return;
      case ExportKind::json:
        write_file_atomic(base + ".json", trace_to_json(run->trace).dump(1) + "\n");
        export_message = "wrote " + base + ".json";
        return;
      case ExportKind::csv:
        write_file_atomic(base + ".csv", trace_to_csv(run->trace));
        export_message = "wrote " + base + ".csv";
        return;
      case ExportKind::chrome:
        write_file_atomic(base + ".chrome.json", trace_to_chrome(run->trace).dump() + "\n");
        export_message = "wrote " + base + ".chrome.json";
        return;
    }
  } catch (const InputError& e) {
    export_message = std::string("error: ") + e.what();
  }
}

void AppState::set_files(const std::string& q, const std::string& k, const std::string& v) {
  form.use_files = true;
  std::snprintf(form.q_path, sizeof form.q_path, "%s", q.c_str());
  std::snprintf(form.k_path, sizeof form.k_path, "%s", k.c_str());
  std::snprintf(form.v_path, sizeof form.v_path, "%s", v.c_str());
  form.validate();
}

void AppState::load_compare() {
  CompareState& c = compare;
  c.error.clear();
  c.message.clear();
  try {
    const Trace& tr = run->trace;
    Mat O = read_npy_matrix(c.o_path);
    if (O.rows() != tr.O.rows() || O.cols() != tr.O.cols()) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "O in %s is %lld x %lld, the trace's O is %lld x %lld",
                    c.o_path, (long long)O.rows(), (long long)O.cols(), (long long)tr.O.rows(),
                    (long long)tr.O.cols());
      throw InputError(buf);
    }
    Vec lse;
    if (c.lse_path[0]) {
      const NpyArray a = read_npy(c.lse_path);
      if (int64_t(a.data.size()) != tr.lse.size())
        throw InputError(std::string("lse in ") + c.lse_path + " has " +
                         std::to_string(a.data.size()) + " values, the trace has " +
                         std::to_string(tr.lse.size()));
      lse = Eigen::Map<const Vec>(a.data.data(), Eigen::Index(a.data.size()));
    }
    c.O = std::move(O);
    c.lse = std::move(lse);
    c.err = (c.O - tr.O).cwiseAbs();
    c.o_stats = flashstep::compare(c.O, tr.O.cast<double>().eval());
    c.lse_stats = c.lse.size() ? flashstep::compare(c.lse, tr.lse.cast<double>().eval()) : ErrorStats{};
    const float emax = c.err.size() ? c.err.maxCoeff() : 0.0f;
    c.log_hi = std::max(-1.0f, std::ceil(std::log10(std::max(emax, 1e-30f))));
    c.log_lo = c.log_hi - 8;
    c.loaded = true;
    if (!c.lse.size()) c.message = "no lse file given: only O is compared";
    ++c.version;
  } catch (const InputError& e) {
    c.error = e.what();  // what was loaded before stays
  }
}

}  // namespace flashstep::gui
