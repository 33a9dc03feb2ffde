// The web page's state in its URL (index.html?preset=tiny&step=19): the query read into what
// the app should open on, and the app's state written back as a query, so that a link names a
// moment. Plain C++ (no emscripten): the page's main (main_web.cpp) calls it with the query's
// decoded pairs and writes the result with history.replaceState.
//
//   preset=NAME          a preset of assets/presets (default tiny)
//   nq, nk, d, M, br, bc, seed, schedule (fa1 | fa2 | standard | decode), dtype (fp32 | fp16 | bf16),
//   causal (0 | 1), window=LEFT,RIGHT, kvlen, dropout, backward (0 | 1)
//                        the problem editor's fields over the preset's problem, then Apply
//   step=K               K steps applied (0 .. the trace's length)
//   view=tiles | lesson | compare | bench | pipeline
//   course=CHAPTER, page=P, course_seed=N   the guided course (gui --course CHAPTER --page P --seed N)
//   theme=dark | light, font=SCALE, hide=PANELS, presentation=1   the Display menu (written back)
//   dump=1               print the state dump (flashstep gui --dump-state) to the console
//   bench=N              time N idle and N stepping frames (flashstep gui --bench-frames N)
#pragma once
#include "app/gui/app_state.h"
#include "app/gui/options.h"

#include <string>
#include <utility>
#include <vector>

namespace flashstep::web {

using Query = std::vector<std::pair<std::string, std::string>>;  // decoded, in order

struct UrlRequest {
  gui::GuiOptions options;    // preset, view, display flags (options.step is left 0)
  std::string problem_script; // "set nq 16; set schedule fa2; apply", or "" for the preset's problem
  int64_t step = -1;          // -1: the preset's own start
  bool dump = false;
  int bench_frames = 0;
};

// Throws InputError naming the first bad parameter (unknown name, bad value, repeated name).
UrlRequest parse_query(const Query& q);

// Builds the state the request asks for into `s` (prepare_state, the problem fields, the step).
// Throws InputError (a field out of range, a step past the trace's end, ...).
void apply_request(gui::AppState& s, const UrlRequest& r);

// An error of the app's, which names the desktop's flags (prepare_display, the course loader and
// core/ phrase them for `flashstep gui` and `run`), reworded for a link: "--font-scale" -> "font",
// "--page 99" -> "page=99", "--backward" -> "backward=1", "--dtype fp32" -> "dtype=fp32".
// Flags a link has no name for stay as they are.
std::string link_wording(const std::string& message);

// The query for the app's state now: the preset `base` it started from (the app forgets the
// name once the editor's Apply runs), the problem fields that differ from that preset's, the
// step, the view when it is not the preset's, and the Display menu's settings when they are not
// the defaults (presentation=1, or theme, font and hide).
std::string query_for_state(const gui::AppState& s, const std::string& base);

}  // namespace flashstep::web
