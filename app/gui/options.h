// The `flashstep gui` options, and the app state they ask for. Applying them is what the window
// does before it opens, and what the in-process tests do without one.
#pragma once
#include "app/gui/animation.h"
#include "app/gui/app_state.h"

#include <cstdint>
#include <string>

namespace flashstep::gui {

struct GuiOptions {
  std::string preset = "tiny";
  int64_t step = 0, back = 0;
  std::string script, screenshot, size = "1600x1000", dump_state, view;
  std::string compare_o, compare_lse;
  std::string bench, bench_figure;  // the Bench view: a bench JSON (default assets/bench/h200.json), a figure
  std::string dram;  // a measurement JSON (tools/device/ncu_dram.sh) for the memory panel
  std::string snapshots;          // a snapshot folder for the compare view
  std::string trace;              // a saved trace to open in place of the preset's run (trace_open.h)
  bool snapshot_problem = false;  // run the folder's problem (its manifest) instead of the preset's
  int64_t lesson_blocks = -1;
  int bench_frames = 0;
  bool backward = false;  // add the backward pass to the preset's problem (opens at its first step)
  // Display (app/gui/settings.h): for this run, over the remembered settings; not saved.
  std::string theme, font_scale, hide, settings;
  bool presentation = false;
  AnimationRequest animation;  // --frames, --gif, --video, --from, --to, --fps
  // The guided course: --course [CHAPTER] (empty: the first chapter not finished), --page P
  // (1-based), --seed N (the course problems').
  bool course = false;
  std::string course_chapter;
  int64_t course_page = 0;
  bool course_page_given = false;
  int64_t course_part = 1;  // --part K: with --screenshot, the page's part K (a page cut into parts)
  int64_t course_seed = 1;
  // --check-layout: walk every page of the course in the window and report the pages whose text
  // and questions do not fit the course column without scrolling (exit 1 when one does not).
  bool check_layout = false;
};

// "1600x1000" -> 1600, 1000; throws InputError naming --size.
void parse_size(const std::string& text, int* w, int* h);
// Loads o.preset from the assets, opens o.view, steps, runs o.script, shows o.lesson_blocks and
// loads the compare files, the measurement and the snapshot folder; the display settings: the
// remembered ones, then the flags (the script's `display` actions change and remember them).
// Throws InputError (a bad preset, view, script, compare, measurement or snapshot file, display
// flag or settings file).
void prepare_state(AppState& s, const GuiOptions& o);
void prepare_display(DisplayState& d, const GuiOptions& o);  // the display part of it

}  // namespace flashstep::gui
