// The windows of the desktop app: one DrawXxxPanel(state) per window, called every frame, each
// in its own file (controls_panel.cpp, pseudocode_panel.cpp, problem_panel.cpp, center_panel.cpp
// with the tiles, lesson and compare views, memory_panel.cpp, softmax_panel.cpp).
// GPU-side objects (heatmap textures) live in GpuState; UpdateHeatmaps re-uploads a texture
// only when its data changed (new run, HBM rows written, compare file loaded).
#pragma once
#include "app/gui/app_state.h"
#include "app/gui/heatmap.h"

#include <imgui.h>

struct GLFWwindow;

namespace flashstep::gui {

struct GpuState {
  HeatmapShader shader;
  Heatmap Q, K, V, S, P, O, l, m, L, err, legend_div, legend_seq, legend_log;
  uint64_t run_seen = 0, compare_seen = 0;
  int64_t o_key = -1, l_key = -1, m_key = -1, L_key = -1;  // bytes written when last uploaded
  ImFont* mono = nullptr;                       // pseudocode, numbers in cells
};

struct Layout {
  ImVec2 controls_pos, controls_size, algo_pos, algo_size, problem_pos, problem_size,
      center_pos, center_size, memory_pos, memory_size, softmax_pos, softmax_size;
  ImVec2 course_pos, course_size;  // the course column (course mode only)
};
// Hidden panels give their space to the rest of their column, or to the centre panel when the
// whole column is hidden; the side columns widen with the font scale.
// softmax_min_h: the height the softmax panel asks for (decode's combine table, one row per
// split); the memory panel gives it up to 55% of the column. 0: the usual 72% / 28% split.
Layout ComputeLayout(ImVec2 display, float controls_height, const DisplaySettings& d = DisplaySettings{},
                     float softmax_min_h = 0.0f);
int ControlsRows(float width);  // rows of the controls panel at the current font size
float ScrubberLabelX(float lo, float hi, size_t k, size_t n, float text_w, float grab_min, float* gap);  // the scrubber label's x

// course_view.cpp: in course mode the text and questions take the left column, the page's side
// panels the right one (CourseDisplay hides the others), and the page's panel is outlined.
// want_w: the course column's width the page asked for last frame (CourseState::want_w; 0: none);
// algo_want_h: the algorithm panel's height with its whole step sentence, last frame (0: none).
Layout ComputeCourseLayout(ImVec2 display, float controls_height, const DisplaySettings& d, float want_w = 0,
                           float algo_want_h = 0);
DisplaySettings CourseDisplay(const AppState& s);  // the display settings with the page's panels
void DrawCoursePanel(AppState& s, const Layout& l);
void DrawCourseRoofline(AppState& s);  // the centre on a roofline page
void DrawCourseIoExplorer(AppState& s);  // the centre on an IO explorer page: sliders, curves, closed forms
void DrawCourseOutline(const AppState& s, const Layout& l);

// controls_panel.cpp: the keys. InstallKeyLatch goes before ImGui's GLFW backend is set up (it
// chains to the callback it finds); HandleKeys, once a frame, acts on the presses since the last.
void InstallKeyLatch(GLFWwindow* window);
void HandleKeys(AppState& s);
void UpdateHeatmaps(AppState& s, GpuState& g);
void DrawControlsPanel(AppState& s, const Layout& l);
void DrawAlgorithmPanel(AppState& s, GpuState& g, const Layout& l);
void DrawProblemPanel(AppState& s, const Layout& l);
void DrawCenterPanel(AppState& s, GpuState& g, const Layout& l);  // tiles, lesson, compare
void DrawMemoryPanel(AppState& s, const Layout& l);
// Where a course page's text names a part of a panel (Scene::anchor = a), the panel being drawn
// scrolls so that the cursor's position is in view for the first frames after the page opens
// (its layout settles over them; the user's own scrolling wins after). at: where the part's
// lines begin (true, the cursor then goes to the view's top) or end (false, to its bottom).
// Returns how many pixels of those lines lie outside the panel's visible part (0: all in view).
float BringAnchorIntoView(AppState& s, course::Anchor a, bool at_start);
// Whether the page's anchor is `a` and BringAnchorIntoView is still in its first frames: a table
// whose rows scroll inside it brings the anchor's row into its own view then.
bool AnchorPending(const AppState& s, course::Anchor a);
void DrawSoftmaxPanel(AppState& s, const Layout& l);
// display.cpp: applies s.display.now (style, panel colours, fonts rebuilt at the font scale;
// `backend_ready`: the GL font texture exists and is rebuilt) and returns the clear colour;
// the Display menu (theme, text size, panels), opened by the controls' button or F2.
ImVec4 ApplyDisplay(AppState& s, GpuState& g, bool backend_ready);
void DrawDisplayMenu(AppState& s);

// The centre panel's tabs.
void DrawTilesView(AppState& s, GpuState& g);
// paged_view.cpp: a decode run's paged KV cache (--page-size) above the tiles: logical pages,
// block table, scattered physical pages; 0 high and nothing drawn for an unpaged run.
float PagedStripHeight(const AppState& s);
void DrawPagedStrip(AppState& s);
void DrawBackwardView(AppState& s, GpuState& g);  // the tiles view from the backward's first step on
void DrawLessonView(AppState& s);
void DrawCompareView(AppState& s, GpuState& g);
void DrawBenchView(AppState& s);  // bench_view.cpp
void DrawPipelineView(AppState& s);  // pipeline_view.cpp
void DrawSnapshotCompare(AppState& s);  // the compare view's snapshot folder part (snapshot_view.cpp)

// row_view.cpp: a softmax row's trace (AppState::row), drawn in place of the run's panels (each
// of the run's Draw functions above hands over to its row counterpart while a row is open).
void DrawRowStepsPanel(AppState& s, GpuState& g, const Layout& l);
void DrawRowProblemPanel(AppState& s, const Layout& l);
void DrawRowCenter(AppState& s, GpuState& g, const Layout& l);
void DrawRowMemoryPanel(AppState& s, const Layout& l);
void DrawRowSoftmaxPanel(AppState& s, const Layout& l);

}  // namespace flashstep::gui
