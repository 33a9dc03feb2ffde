#include "app/gui/app_state.h"

#include "app/gui/text_field.h"
#include "core/decode.h"

#include "core/backward.h"
#include "core/export.h"
#include "core/input_files.h"
#include "core/npy.h"
#include "core/output_files.h"
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

int64_t fwd_bwd_form_bytes(const ScheduleRun& r, int bpe) {
  return r.form.read_bytes(bpe) + r.form.write_bytes(bpe) + r.backward_form.read_bytes(bpe) +
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
  return schedule_info(s).forward_traffic(p.nq, p.nk, p.d, t);  // t.S: decode's splits
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
  const Problem& p = v->trace.problem;
  const Tiling& t = v->trace.tiling;

  // Every schedule on the same inputs and blocks: the shown one is the recorded run, the others
  // run unrecorded for their totals and outputs. Then the float64 reference, once.
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
        fast.dO = opt.dO;
        fast.l2 = l2;
        Trace other = run_problem(ps, rt, fast);
        keep(other);
      }
      r.ok = true;
    } catch (const InputError& e) {
      r.error = e.what();
    }
  }
  if (reference_affordable(p.nq, p.nk, p.d)) {
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    for (size_t c = 0; c < n_runs; ++c) {
      ScheduleRun& r = v->runs[c];
      if (!r.ok) continue;
      r.o_err = flashstep::compare(outputs[c], ref.O);
      r.lse_err = flashstep::compare(lses[c], ref.lse);
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
    if (at[size_t(idx)] < 0) at[size_t(idx)] = int64_t(k);
  };
  auto place = [&](Mat& dst, const Mat& tile, int64_t r0, int64_t c0) {
    if (show_scores && tile.size()) dst.block(r0, c0, tile.rows(), tile.cols()) = tile;
  };
  auto series = [&](const Step& s, int64_t r0) {
    for (int64_t r = 0; r < s.m_new.size(); ++r) {
      v->m_series(r0 + r, s.j) = s.m_new(r);
      v->l_series(r0 + r, s.j) = s.l_new(r);
    }
  };
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    const Step& s = tr.steps[k];
    const int64_t r0 = s.i >= 0 ? s.i * t.Br : 0, c0 = s.j >= 0 ? s.j * t.Bc : 0;
    const int64_t ij = s.i * Tc + s.j;
    if (is_backward_line(s.line)) continue;
    const LineRole role = line_role(s.line);
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
        v->merge_step[size_t(ij)] = int64_t(k);
        series(s, r0);
        break;
      case LineRole::write_o:
      case LineRole::accumulate_o:
        if (s.dropout_keep.size() && s.j >= 0) v->keep_step[size_t(ij)] = int64_t(k);
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
  v->range_qkv = std::max({max_abs(p.Q), max_abs(p.K), max_abs(p.V)});
  v->range_o = max_abs(tr.O);
  v->range_s = show_scores ? max_abs(v->S) : 1.0f;
  v->range_L = max_abs(Mat(tr.lse));
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
  s.schedule = schedule;
  s.options = options;
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
  schedule = s.schedule;
  options = s.options;
  scale = s.scale ? *s.scale : 1.0 / std::sqrt(double(std::max<int64_t>(d, 1)));
  seed = int64_t(s.seed);
  const auto& pats = input_patterns();
  pattern = 0;
  for (size_t k = 0; k < pats.size(); ++k)
    if (pats[k] == s.pattern) pattern = int(k);
  use_files = !s.q_path.empty();
  backward = false;  // not part of a ProblemSpec: the caller sets it after
  set_field(q_path, s.q_path, "Q path");
  set_field(k_path, s.k_path, "K path");
  set_field(v_path, s.v_path, "V path");
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
  if (starts("window")) return Field::window;
  if (starts("key length")) return Field::kv_len;
  if (starts("dropout")) return Field::dropout;
  if (starts("input ") && msg.find("fp16") != std::string::npos) return Field::dtype;
  return Field::none;
}

}  // namespace

void ProblemForm::validate() {
  error.clear();
  error_field = Field::none;
  preview.clear();
  try {
    try {
      if (l2_config() && backward) throw InputError("the L2 model covers the forward pass only: untick it or the backward pass");
    } catch (const InputError& e) {
      error_field = Field::l2;
      throw;
    }
    ProblemSpec s = to_spec();
    if (!use_files) {
      validate_sizes(s);
      Problem sizes;  // no inputs: the estimate needs only the shapes
      sizes.nq = s.nq;
      sizes.nk = s.nk;
      sizes.d = s.d;
      sizes.M = s.M;
      sizes.schedule = s.schedule;
      sizes.dropout = float(s.options.dropout);
      const Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
      const size_t est = estimate_trace_bytes(sizes, t) + (backward ? estimate_backward_trace_bytes(sizes, t) : 0);
      if (est > kMaxTraceBytes) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "recording this run would take about %.0f MiB (the app records up to %zu "
                      "MiB): make Nq, Nk or d smaller",
                      double(est) / 1048576.0, kMaxTraceBytes >> 20);
        throw InputError(buf);
      }
      if (const std::optional<L2Config> l2c = l2_config()) {
        try {
          check_l2_cost(s, t, *l2c);
        } catch (const InputError&) {
          error_field = Field::l2;
          throw;
        }
      }
      // Steps of an unmasked run (a mask skips some: fewer then). The backward's bound counts
      // the lines that only a mask or dropout adds (Alg4 L12, L14-15, L18), hence "up to".
      int64_t steps = schedule_steps(s.schedule, t);
      if (backward) steps += int64_t(backward_step_bound(sizes, t));
      const bool masked = s.options.mask.any();
      char buf[160];
      std::snprintf(buf, sizeof buf, "Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld: %s%lld steps",
                    (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc,
                    (masked && schedule_info(s.schedule).tiled) || backward ? "up to " : "", (long long)steps);
      preview = buf;
    }
  } catch (const InputError& e) {
    error = e.what();
    if (error_field == Field::none) error_field = field_of(error);
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
  preset_file = p.path;
  auto v = make_run_view(p.spec, p.backward, p.l2);  // throws before anything is replaced
  form.from_spec(p.spec);
  form.backward = p.backward;
  form.set_l2(p.l2);
  form.validate();
  set_run(std::move(v));
  if (p.start_backward) seek(run->trace.backward_first_step + 1);
  else if (p.start_step > 0) seek(size_t(p.start_step));
  apply_error.clear();
  preset_name = p.name;
  preset_title = p.title;
  preset_description = p.description;
  std::string vals;
  char buf[32];
  for (double x : p.lesson_values) {
    std::snprintf(buf, sizeof buf, "%s%g", vals.empty() ? "" : ", ", x);
    vals += buf;
  }
  set_field(lesson.values, vals, "lesson values");
  lesson.block = int(p.lesson_block);
  lesson.shown = 0;
  lesson.recompute();
  view = p.view == "lesson" ? View::lesson : p.view == "compare" ? View::compare
       : p.view == "bench" ? View::bench : View::tiles;
  view_changed = true;
}

bool AppState::apply_form() {
  try {
    set_run(make_run_view(form.to_spec(), form.backward, form.l2_config()));
    apply_error.clear();
    preset_name.clear();
    preset_title.clear();
    preset_description.clear();
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
  const Mask& mask = run->trace.problem.mask;
  mask_text = mask.any() ? mask.describe() : std::string();
  ++run_version;
  playing = false;
  compare.loaded = false;
  compare.message.clear();
  snapshots.run_changed(*run);
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
  select_snapshot_tile();
}

void AppState::select_snapshot_tile() {
  const Step* cur = cursor ? cursor->current() : nullptr;
  if (cur && !is_backward_line(cur->line)) snapshots.select(cur->i, cur->j);
  else snapshots.select(-1, -1);
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
  const int64_t k = run->first_step_at(i, j);
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
      if (a < 0) throw InputError("script: '" + excerpt(verb) + "' needs a count >= 0");
      a = std::min(a, (long long)steps());  // more steps than the trace has do nothing more
      for (long long n = 0; n < a; ++n) verb == "step" ? step_forward() : step_back();
    } else if (verb == "seek") {
      if (!(cs >> a) || a < 0) throw InputError("script: seek needs a step index >= 0");
      seek(size_t(a));
    } else if (verb == "play" || verb == "pause") {  // the Play/Pause button (offline frames have dt = 0: no step moves)
      playing = verb == "play";
    } else if (verb == "end") {
      run_to_end();
    } else if (verb == "home" || verb == "reset") {
      reset();
    } else if (verb == "jump") {
      if (!(cs >> a >> b)) throw InputError("script: jump needs i and j");
      if (!jump_to(a, b)) throw InputError("script: jump " + jump_error);
    } else if (verb == "course") {  // the course column's buttons (course_state.h)
      std::string rest;
      std::getline(cs, rest);
      course.run_command(*this, rest);
    } else if (verb == "display") {  // the Display menu: "display theme light", "display hide memory"
      std::string rest;
      std::getline(cs, rest);
      display.run_command(rest);
    } else if (verb == "set") {  // the problem editor, as typed into a field
      std::string field, value;
      if (!(cs >> field >> value)) throw InputError("script: set needs a field and a value");
      auto number = [&](const std::string& text) {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end) throw InputError("script: set " + field + " needs a number (got '" + excerpt(text) + "')");
        return x;
      };
      int64_t* slot = field == "nq" ? &form.nq : field == "nk" ? &form.nk : field == "d" ? &form.d
                    : field == "M" ? &form.M : field == "br" ? &form.br : field == "bc" ? &form.bc
                    : field == "seed" ? &form.seed : field == "kvlen" ? &form.options.mask.kv_len : nullptr;
      if (slot) {
        *slot = int64_t(number(value));
        if (slot == &form.M) std::snprintf(form.M_kib, sizeof form.M_kib, "%g", double(*slot) * 4.0 / 1024.0);
      } else if (field == "schedule") {
        form.schedule = parse_schedule(value);  // the editor's combo offers only valid names
      } else if (field == "dtype") {
        form.options.dtype = parse_dtype(excerpt(value));
      } else if (field == "causal") {
        form.options.mask.causal = number(value) != 0;
      } else if (field == "backward") {
        form.backward = number(value) != 0;
      } else if (field == "dropout") {
        form.options.dropout = number(value);
      } else if (field == "l2") {  // a size, "gpu" (the GPU's own size) or "off"
        form.l2 = value != "off";
        std::snprintf(form.l2_size, sizeof form.l2_size, "%s", value == "gpu" || value == "off" ? "" : value.c_str());
      } else if (field == "gpu") {
        const auto* at = std::find(std::begin(kGpuNames), std::end(kGpuNames), value);
        if (at == std::end(kGpuNames)) throw InputError("script: set gpu knows h200, a100 (got '" + excerpt(value) + "')");
        form.gpu = int(at - std::begin(kGpuNames));
      } else if (field == "heads") {
        form.heads = int64_t(number(value));
      } else if (field == "ncu") {
        form.ncu = number(value) != 0;
      } else if (field == "window") {
        std::string right;
        if (!(cs >> right)) throw InputError("script: set window needs LEFT and RIGHT");
        form.options.mask.window_left = int64_t(number(value));
        form.options.mask.window_right = int64_t(number(right));
      } else {
        throw InputError("script: set knows nq, nk, d, M, br, bc, seed, schedule, dtype, causal, window, "
                         "kvlen, dropout, backward, l2, gpu, heads, ncu (got '" + excerpt(field) + "')");
      }
      form.validate();
    } else if (verb == "files") {
      std::string q, k, v;
      if (!(cs >> q >> k >> v)) throw InputError("script: files needs three .npy paths (Q K V)");
      set_files(q, k, v);
    } else if (verb == "export") {
      std::string base;
      if (!(cs >> base)) throw InputError("script: export needs a path without extension");
      set_field(export_base, base, "export path");
      for (ExportKind kind : {ExportKind::json, ExportKind::csv, ExportKind::chrome, ExportKind::png}) {
        export_as(kind);
        if (export_message.rfind("error", 0) == 0) throw InputError("script: export " + export_message);
      }
    } else if (verb == "dram") {
      std::string path;
      if (!(cs >> path)) throw InputError("script: dram needs a measurement .json path");
      set_field(dram.path, path, "--dram");
      load_dram();
      if (!dram.error.empty()) throw InputError("script: dram " + dram.error);
    } else if (verb == "snapshots") {  // the compare view's folder field and Load button
      std::string dir;
      if (!(cs >> dir)) throw InputError("script: snapshots needs a folder");
      set_field(snapshots.dir, dir, "--snapshots");
      load_snapshots();
      if (!snapshots.error.empty()) throw InputError("script: snapshots: " + snapshots.error);
    } else if (verb == "snapshot-problem") {  // the "Load the folder's problem" button
      if (!load_snapshot_problem()) throw InputError("script: snapshot-problem: no folder of another problem is loaded");
    } else if (verb == "first-over") {  // the "Go to the first over tolerance" button
      if (!seek_first_over()) throw InputError("script: first-over: no snapshot j is over tolerance");
    } else if (verb == "apply") {  // the Apply button: disabled while a field is invalid
      if (form.error.empty()) apply_form();
    } else {
      throw InputError("script: unknown action '" + excerpt(verb) +
                       "' (expected step N, back N, seek K, play, pause, end, home, jump I J, set FIELD N, apply, display WHAT, "
                       "export BASE, dram FILE, snapshots DIR, snapshot-problem, first-over)");
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
        write_output(base + ".json", trace_to_json(run->trace).dump(1) + "\n", "export");
        export_message = "wrote " + base + ".json";
        return;
      case ExportKind::csv:
        write_output(base + ".csv", trace_to_csv(run->trace), "export");
        export_message = "wrote " + base + ".csv";
        return;
      case ExportKind::chrome:
        write_output(base + ".chrome.json", trace_to_chrome(run->trace).dump() + "\n", "export");
        export_message = "wrote " + base + ".chrome.json";
        return;
    }
  } catch (const InputError& e) {
    export_message = std::string("error: ") + e.what();
  }
}

std::vector<std::pair<std::string, std::string>> AppState::input_files() const {
  std::vector<std::pair<std::string, std::string>> in;
  if (!preset_file.empty()) in.push_back({preset_file, "preset"});
  if (form.use_files)
    for (const char* path : {form.q_path, form.k_path, form.v_path}) in.push_back({path, "input .npy"});
  if (bench.loaded) in.push_back({bench.path, "bench"});
  if (!display.path.empty()) in.push_back({display.path, "settings"});
  if (dram.loaded) in.push_back({dram.path, "measurement"});
  if (compare.o_path[0]) in.push_back({compare.o_path, "compare O"});
  if (compare.lse_path[0]) in.push_back({compare.lse_path, "compare lse"});
  if (snapshots.dir[0]) {
    const std::string dir = snapshots.dir;
    in.push_back({dir + "/" + kSnapshotManifest, "snapshot folder"});
    auto add = [&](const SnapshotEntry& sn) {
      for (const SnapshotTensor& t : sn.tensors)
        if (!t.file.empty()) in.push_back({dir + "/" + t.file, "snapshot folder"});
    };
    for (const SnapshotEntry& sn : snapshots.other.snapshots) add(sn);
    add(snapshots.other.final_state);
  }
  return in;
}

void AppState::write_output(const std::string& path, const std::string& bytes, const std::string& what) const {
  OutputFiles out;
  out.add(path, what);
  for (const auto& [file, kind] : input_files()) out.add_input(file, kind);
  out.bytes(path) = bytes;
  out.commit();
}

void AppState::set_files(const std::string& q, const std::string& k, const std::string& v) {
  form.use_files = true;
  set_field(form.q_path, q, "Q path");
  set_field(form.k_path, k, "K path");
  set_field(form.v_path, v, "V path");
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

void AppState::load_snapshots() {
  snapshots.load(*run);
  select_snapshot_tile();
}

bool AppState::load_snapshot_problem() {
  if (!snapshots.can_load_problem) return false;
  bool backward = false;
  const ProblemSpec spec = snapshots.manifest_spec(&backward);
  try {
    set_run(make_run_view(spec, backward));  // compares the folder with the new run
  } catch (const InputError& e) {
    snapshots.error = std::string("the folder's problem: ") + e.what();
    return false;
  }
  form.from_spec(spec);
  form.backward = backward;
  form.validate();
  apply_error.clear();
  preset_name.clear();
  preset_title.clear();
  preset_description.clear();
  if (snapshots.loaded) snapshots.message = std::string("loaded ") + snapshots.dir + " and its problem";
  select_snapshot_tile();
  return snapshots.loaded;
}

bool AppState::seek_first_over() {
  if (snapshots.first_over_j < 0) return false;
  seek(SnapshotCompare::step_after(*run, snapshots.first_over_i, snapshots.first_over_j));
  return true;
}

}  // namespace flashstep::gui
