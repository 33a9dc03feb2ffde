// AppState's actions (what buttons, keys and --script call): presets, the editor's Apply,
// stepping and playback, exports, input files, the compare tab and snapshot folders. The run
// view is built in run_view.cpp, the editor's fields in problem_form.cpp, the script in
// app_script.cpp.
#include "app/gui/app_state.h"

#include "app/gui/text_field.h"
#include "app/gui/trace_open.h"
#include "core/schedules/decode/decode.h"

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

// ---------------------------------------------------------------------------------------------
// Lesson

void LessonState::recompute() {
  error.clear();
  try {
    const bool no_v = std::string(v).find_first_not_of(" \t") == std::string::npos;
    lesson = run_lesson(parse_values(values), size_t(std::max(block, 0)), no_v ? std::vector<double>{} : parse_values(v, "V"));
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
  row.reset();     // a row's trace gives way to the new run
  cursor.reset();  // it points into the old trace
  // The Pipeline view models the pass being stepped: a run that adds or drops the backward turns
  // it to that pass (the user's forward/backward choice stands until the run's pass changes).
  const bool pass_changed = !run || run->backward != v->backward;
  // So do its d (where the view has it: 64 or 128) and its causal mask, and the Bench view's d
  // (where the file has it), each when the run's own value changes.
  const Problem& np = v->trace.problem;
  const bool d_changed = !run || run->trace.problem.d != np.d;
  const bool causal_changed = !run || run->trace.problem.mask.causal != np.mask.causal;
  run = std::move(v);
  bool rebuild = false;
  if (pass_changed && pipeline.backward != run->backward) {
    pipeline.backward = run->backward;
    rebuild = true;
  }
  if (d_changed && (np.d == 64 || np.d == 128) && pipeline.d != int(np.d)) {
    pipeline.d = int(np.d);
    rebuild = true;
  }
  if (causal_changed && pipeline.causal != np.mask.causal) {
    pipeline.causal = np.mask.causal;
    rebuild = true;
  }
  if (rebuild) pipeline.rebuild();
  const std::vector<int64_t>& dims = bench.data.dims;
  if (d_changed && !bench.loaded) bench.d = np.d;  // the file, read later, keeps it where it has it
  else if (d_changed && std::find(dims.begin(), dims.end(), np.d) != dims.end()) bench.select(bench.figure, np.d);
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
  if (row) {
    explanation = row_explain(*row, k);
    return;
  }
  if (k == 0) {
    // A trace read from a file may start from more (a puzzle's setup: Trace::hbm_before).
    std::string placed;
    std::array<bool, kTensors> named{};
    for (const HbmWrite& w : run->trace.hbm_before)
      if (!named[size_t(w.tensor)]) {
        named[size_t(w.tensor)] = true;
        placed += (placed.empty() ? "" : ", ") + std::string(tensor_name(w.tensor));
      }
    explanation = placed.empty() ? "Before the first step: Q, K and V are in HBM; nothing else exists yet."
                                 : "Before the first step: Q, K and V are in HBM, and what was placed there "
                                   "before the run: " + placed + ".";
  } else {
    explanation = run->trace.explain(k - 1);
  }
  // Following: the block of the last step up to here that has one (a K/V load between Q blocks
  // has none), so that a step reached by seeking shows the row that stepping to it shows.
  if (plot_follow)
    for (int64_t q = int64_t(k) - 1, seen = 0; q >= 0 && seen < 256; --q, ++seen)
      if (run->trace.steps[size_t(q)].i >= 0) {
        plot_row = int(run->trace.steps[size_t(q)].i * run->trace.tiling.Br);
        break;
      }
  select_snapshot_tile();
}

void AppState::select_snapshot_tile() {
  const Step* cur = cursor ? cursor->current() : nullptr;
  if (cur && !is_backward_line(cur->line)) snapshots.select(cur->i, cur->j);
  else snapshots.select(-1, -1);
}

void AppState::step_forward() {
  if (row) return seek(index() + 1);
  if (cursor && index() < steps()) {
    cursor->forward();
    cursor_moved();
  }
}

void AppState::step_back() {
  if (row) {
    if (index() > 0) seek(index() - 1);
    return;
  }
  if (cursor && index() > 0) {
    cursor->backward();
    cursor_moved();
  }
}

void AppState::seek(size_t k) {
  k = std::min(k, steps());
  if (row) {  // a row's state is rebuilt from its few steps
    if (k == index()) return;
    row_now = row_at(*row, k);
    cursor_moved();
    return;
  }
  if (!cursor) return;
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
  if (row) {
    jump_error = "a softmax row has no blocks (i, j)";
    return false;
  }
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

namespace {

// "PATH: why", unless the message names the file already (the readers' mostly do).
std::string naming(const std::string& path, const std::string& why) {
  return why.find(path) == std::string::npos ? path + ": " + why : why;
}

// A picked Q, K or V: into its editor field when it reads as a matrix, then applied as Apply does
// once all three fields are given. The field keeps a file that reads but does not fit the other
// two (as a typed path does), so that a new problem's files can be chosen one at a time.
void load_input_file(AppState& s, LocalFile what, const std::string& path) {
  ProblemForm& f = s.form;
  const int k = what == LocalFile::input_q ? 0 : what == LocalFile::input_k ? 1 : 2;
  char(&field)[kPathField] = k == 0 ? f.q_path : k == 1 ? f.k_path : f.v_path;
  try {
    read_npy_matrix(path);  // a broken file, not float32 / float64, or not 2-D: refused here
    set_field(field, path, k == 0 ? "Q path" : k == 1 ? "K path" : "V path");
  } catch (const InputError& e) {
    s.apply_error = naming(path, e.what());
    return;
  }
  f.use_files = true;
  f.validate();
  s.apply_error.clear();
  if (!f.q_path[0] || !f.k_path[0] || !f.v_path[0] || !f.error.empty()) return;  // the form says what is missing
  if (!s.apply_form()) s.apply_error = naming(path, s.apply_error);
}

}  // namespace

void AppState::load_local_file(LocalFile what, const std::string& path) {
  if (what == LocalFile::input_q || what == LocalFile::input_k || what == LocalFile::input_v)
    return load_input_file(*this, what, path);
  if (what == LocalFile::dram) {
    const std::string before = dram.path;
    try {
      set_field(dram.path, path, "DRAM file");
    } catch (const InputError& e) {
      dram.error = naming(path, e.what());
      return;
    }
    load_dram();
    if (!dram.error.empty()) set_field(dram.path, before, "DRAM file");  // the loaded one's path stays
    return;
  }
  if (what == LocalFile::trace) {
    try {
      open_trace_file(*this, path);  // reads the whole file before it replaces anything
    } catch (const InputError& e) {
      apply_error = naming(path, e.what());
    }
    return;
  }
  if (what == LocalFile::bench) {
    view = View::bench;
    view_changed = true;
    bench.load(path);  // on failure bench.error says why and the figure shown stays
    return;
  }
  view = View::compare;
  view_changed = true;
  CompareState& c = compare;
  const std::string o_before = c.o_path, lse_before = c.lse_path;
  try {
    if (what == LocalFile::compare_o) set_field(c.o_path, path, "O path");
    else set_field(c.lse_path, path, "lse path");
  } catch (const InputError& e) {
    c.error = e.what();
    c.message.clear();
    return;
  }
  if (!c.o_path[0]) {  // an lse alone compares nothing yet
    c.error.clear();
    c.message = "lse chosen: now choose the O file";
    return;
  }
  load_compare();
  if (c.error.empty()) return;
  // The fields go back to the files whose results the view still shows.
  set_field(c.o_path, o_before, "O path");
  set_field(c.lse_path, lse_before, "lse path");
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
