#include "app/gui/options.h"

#include "app/gui/resources.h"
#include "app/gui/text_field.h"
#include "app/gui/trace_open.h"
#include "core/checked.h"

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

void parse_size(const std::string& text, int* w, int* h) {
  checked::parse_wxh(text, "--size", "1600x1000", 320, 240, 8192, w, h);
}

// The file named by --bench must load; the shipped H200 file opens when none is named.
static void prepare_bench(AppState& s, const GuiOptions& o) {
  if (!o.bench_figure.empty()) s.bench.figure = plot::parse_figure(o.bench_figure);
  if (!o.bench.empty()) {
    if (!s.bench.load(o.bench)) throw InputError("--bench: " + s.bench.error);
  } else {
    s.bench.load(s.asset_dir + "/bench/h200.json");
  }
  // The Pipeline view's measurements: the Hopper rungs on the H200.
  s.pipeline.load_measured(s.asset_dir + "/bench/h200_hopper.json");
}

void prepare_display(DisplayState& d, const GuiOptions& o) {
  d.path = settings_path(o.settings);
  d.now = load_settings(d.path);
  if (o.presentation) d.now = presentation_settings();
  if (!o.theme.empty()) d.now.theme = parse_theme(o.theme);
  if (!o.font_scale.empty()) d.now.font_scale = parse_font_scale(o.font_scale);
  if (!o.hide.empty()) d.now.hidden = parse_panels(o.hide);
}

namespace {

// Before the steps: --snapshot-problem replaces the run.
void load_snapshot_option(AppState& s, const GuiOptions& o) {
  set_field(s.snapshots.dir, o.snapshots, "--snapshots");
  s.load_snapshots();
  if (!s.snapshots.error.empty()) throw InputError(s.snapshots.error);
  if (s.snapshots.mismatch.empty()) return;
  if (o.snapshot_problem && s.load_snapshot_problem()) return;
  if (!s.snapshots.error.empty()) throw InputError(s.snapshots.error);
  throw InputError("--snapshots: " + o.snapshots + " holds snapshots of another problem than the app's: " +
                   s.snapshots.mismatch +
                   (s.snapshots.can_load_problem ? "; add --snapshot-problem to run the folder's problem"
                                                 : " (its inputs came from .npy files: load them in the editor)"));
}

// --course [CHAPTER] [--page P] [--seed N]: the chapter's page moves the app to its scene.
void prepare_course(AppState& s, const GuiOptions& o) {
  if (!o.course) {
    if (o.course_page_given) throw InputError("--page needs --course");
    if (o.course_part != 1) throw InputError("--part needs --course");
    if (o.course_seed != 1) throw InputError("--seed needs --course");
    return;
  }
  if (o.course_seed < 1) throw InputError("--seed must be at least 1 (got " + std::to_string(o.course_seed) + ")");
  s.course.seed = uint64_t(o.course_seed);
  s.course.load_progress(s.display.path);
  std::string id = o.course_chapter;
  if (id.empty()) {  // the first chapter not finished
    id = course::chapter_list().front().id;
    for (const course::ChapterInfo& c : course::chapter_list()) {
      const auto it = s.course.progress.find(c.id);
      if (it == s.course.progress.end() || it->second.pages_seen < it->second.pages ||
          it->second.correct < it->second.questions) {
        id = c.id;
        break;
      }
    }
  }
  // An unknown chapter or a page out of range (--page 0 included) throws before anything changes.
  const int64_t pg = o.course_page_given ? o.course_page : 1;
  if (pg < 1 || pg > 100000) throw InputError("--page " + std::to_string(pg) + ": pages count from 1");
  if (o.course_part < 1 || o.course_part > 1000) throw InputError("--part " + std::to_string(o.course_part) + ": parts count from 1");
  if (course::chapter_index(id) < 0) course::make_chapter(id);  // the unknown-chapter error, naming the known ids
  try {
    s.course.open(s, id, int(pg - 1), true);
  } catch (const InputError& e) {
    throw InputError("--page " + std::to_string(pg) + ": " + e.what());
  }
}

}  // namespace

void prepare_state(AppState& s, const GuiOptions& o) {
  prepare_display(s.display, o);  // a bad flag fails before the preset's run is made
  s.asset_dir = asset_dir();
  s.preset_names = preset_names(s.asset_dir);
  s.load_preset(o.preset);
  if (o.backward && !s.run->backward) {  // the editor's checkbox, then Apply
    const std::string name = s.preset_name, title = s.preset_title, description = s.preset_description;
    s.form.backward = true;
    s.form.validate();
    if (!s.form.error.empty()) throw InputError("--backward: " + s.form.error);
    if (!s.apply_form()) throw InputError("--backward: " + s.apply_error);
    s.preset_name = name;  // the preset, with the backward added
    s.preset_title = title;
    s.preset_description = description;
    s.seek(s.run->trace.backward_first_step + 1);
  }
  if (!o.trace.empty()) {
    if (o.backward) throw InputError("--trace opens the trace as recorded (with its backward, if any): drop --backward");
    if (o.course) throw InputError("--trace and --course cannot be combined");
    open_trace_file(s, o.trace);
  }
  if (o.snapshot_problem && o.snapshots.empty()) throw InputError("--snapshot-problem needs --snapshots DIR");
  if (!o.snapshots.empty()) load_snapshot_option(s, o);
  if (!o.view.empty()) {
    if (o.view != "tiles" && o.view != "lesson" && o.view != "compare" && o.view != "bench" && o.view != "pipeline")
      throw InputError("--view must be tiles, lesson, compare, bench or pipeline");
    s.view = o.view == "lesson" ? View::lesson : o.view == "compare" ? View::compare
           : o.view == "bench" ? View::bench : o.view == "pipeline" ? View::pipeline : View::tiles;
    s.view_changed = true;
  }
  prepare_bench(s, o);
  if (!o.dram.empty()) {
    set_field(s.dram.path, o.dram, "--dram");
    s.load_dram();
    if (!s.dram.error.empty()) throw InputError("--dram: " + s.dram.error);
  }
  prepare_course(s, o);
  const int64_t len = int64_t(s.steps());  // beyond the trace's length, steps do nothing more
  for (int64_t n = 0; n < std::min(o.step, len); ++n) s.step_forward();
  for (int64_t n = 0; n < std::min(o.back, len); ++n) s.step_back();
  if (!o.script.empty()) s.run_script(o.script);
  if (o.lesson_blocks >= 0) s.lesson.shown = int(std::min<int64_t>(o.lesson_blocks, int64_t(s.lesson.lesson.blocks.size())));
  if (!o.compare_o.empty()) {
    set_field(s.compare.o_path, o.compare_o, "--compare-o");
    set_field(s.compare.lse_path, o.compare_lse, "--compare-lse");
    s.load_compare();
    if (!s.compare.error.empty()) throw InputError(s.compare.error);
  }
}

}  // namespace flashstep::gui
