// The frame's arrangement and its controls: where each panel goes (ComputeLayout), the keys
// (Right, Left, Space, Home, End; F2 the Display menu), and the controls panel: step, back, play,
// scrubber, jump, Display.
#include "app/gui/key_latch.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <GLFW/glfw3.h>  // the key callback (the latch takes GLFW's key codes)

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

Layout ComputeLayout(ImVec2 d, float controls_h, const DisplaySettings& ds, float softmax_min_h) {
  Layout l;
  // Half the font scale's growth: the side panels wrap and scroll, the tiles need the width.
  const float fs = 1.0f + 0.5f * (ds.font_scale - 1.0f);
  const bool any_left = ds.shows(kPanelAlgorithm) || ds.shows(kPanelProblem);
  const bool any_right = ds.shows(kPanelMemory) || ds.shows(kPanelSoftmax);
  float left = any_left ? std::clamp(d.x * 0.25f, 300.0f * fs, 420.0f * fs) : 0.0f;
  float right = any_right ? std::clamp(d.x * 0.26f, 320.0f * fs, 440.0f * fs) : 0.0f;
  // Large text widens the side columns, but the tiles keep at least 40% of the window.
  const float sides = left + right, most = d.x * 0.6f;
  if (sides > most) {
    left *= most / sides;
    right *= most / sides;
  }
  left = std::floor(left);
  right = std::floor(right);
  const float center = std::max(d.x - left - right, 200.0f);
  const float body = std::max(d.y - controls_h, 200.0f);
  l.controls_pos = ImVec2(0, 0);
  l.controls_size = ImVec2(d.x, controls_h);
  // A column's one shown panel takes its whole height.
  // With larger text the pseudocode needs more lines to show the current one in context (at 2.5
  // the Problem panel's form scrolls in what is left).
  const float algo_share = std::min(0.44f + 0.16f * (ds.font_scale - 1.0f), 0.68f);
  const float algo_h = !ds.shows(kPanelProblem) ? body : !ds.shows(kPanelAlgorithm) ? 0.0f : std::floor(body * algo_share);
  l.algo_pos = ImVec2(0, controls_h);
  l.algo_size = ImVec2(left, algo_h);
  l.problem_pos = ImVec2(0, controls_h + algo_h);
  l.problem_size = ImVec2(left, body - algo_h);
  l.center_pos = ImVec2(left, controls_h);
  l.center_size = ImVec2(center, body);
  const float mem_share = std::clamp(1.0f - softmax_min_h / body, 0.45f, 0.72f);
  const float mem_h = !ds.shows(kPanelSoftmax) ? body : !ds.shows(kPanelMemory) ? 0.0f : std::floor(body * mem_share);
  l.memory_pos = ImVec2(left + center, controls_h);
  l.memory_size = ImVec2(d.x - left - center, mem_h);
  l.softmax_pos = ImVec2(left + center, controls_h + mem_h);
  l.softmax_size = ImVec2(d.x - left - center, body - mem_h);
  return l;
}

// The buttons, speed, jump and Display take about 62 font heights: at large font scales they
// wrap onto a second row (the jump and Display), and the scrubber moves to a third.
int ControlsRows(float width) { return width >= ImGui::GetFontSize() * 62.0f ? 2 : 3; }

namespace {

KeyLatch g_keys;  // the window's key presses since the last frame (key_latch.h says why)

void latch_key(GLFWwindow*, int key, int /*scancode*/, int action, int /*mods*/) { g_keys.on_key(key, action); }

static_assert(KeyLatch::kGlfwRight == GLFW_KEY_RIGHT && KeyLatch::kGlfwLeft == GLFW_KEY_LEFT &&
              KeyLatch::kGlfwSpace == GLFW_KEY_SPACE && KeyLatch::kGlfwHome == GLFW_KEY_HOME &&
              KeyLatch::kGlfwEnd == GLFW_KEY_END && KeyLatch::kGlfwF2 == GLFW_KEY_F2);
static_assert(KeyLatch::kGlfwRelease == GLFW_RELEASE && KeyLatch::kGlfwPress == GLFW_PRESS &&
              KeyLatch::kGlfwRepeat == GLFW_REPEAT);

}  // namespace

// Before ImGui_ImplGlfw_InitForOpenGL: the backend keeps the callback it replaces and calls it
// first from its own (imgui_impl_glfw.cpp, ImGui_ImplGlfw_KeyCallback), so both see every key.
void InstallKeyLatch(GLFWwindow* window) { glfwSetKeyCallback(window, latch_key); }

// Each press since the last frame acts once, however short it was; Right and Left also act on
// each of the system's repeats while held. Presses made while a text field has the keyboard are
// the field's, and are dropped with the rest.
void HandleKeys(AppState& s) {
  const KeyPresses k = g_keys.take();
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || !s.cursor) return;
  const int right = k.times(AppKey::right, true), left = k.times(AppKey::left, true);
  const bool menu = k.times(AppKey::f2, false) > 0;
  if (s.course.active) {  // the course's pages: Space or Right continues, Left goes back
    for (int n = right + k.times(AppKey::space, false); n > 0; --n) s.course.next(s);
    for (int n = left; n > 0; --n) s.course.back(s);
    if (menu) s.display.menu_open = true;
    return;
  }
  for (int n = right; n > 0; --n) s.step_forward();
  for (int n = left; n > 0; --n) s.step_back();
  if (k.times(AppKey::space, false) % 2) s.playing = !s.playing;  // two taps in one frame: back as it was
  if (k.times(AppKey::home, false) > 0) s.reset();
  if (k.times(AppKey::end, false) > 0) s.run_to_end();
  if (menu) s.display.menu_open = true;
}

// Where the scrubber's "step k of n" goes in a slider frame [lo, hi]: centred in the wider of
// the two spaces beside the grab, which is placed as ImGui's integer slider places it (a grab of
// frame / (n + 1), at least GrabMinSize, inset 2 px). *gap gets the distance from the text to the
// grab (negative: they overlap), for --dump-state.
float ScrubberLabelX(float lo, float hi, size_t k, size_t n, float text_w, float grab_min, float* gap) {
  const float pad = 2.0f, slider = (hi - lo) - 2 * pad;
  const float grab = std::min(std::max(slider / float(n + 1), grab_min), slider);
  const float t = n == 0 ? 0.0f : float(k) / float(n);
  const float centre = lo + pad + grab * 0.5f + t * (slider - grab);
  const float g0 = centre - grab * 0.5f, g1 = centre + grab * 0.5f;  // the grab's extent
  const bool right = hi - g1 >= g0 - lo;
  const float x = right ? (g1 + hi - text_w) * 0.5f : (lo + g0 - text_w) * 0.5f;
  if (gap) *gap = right ? x - g1 : g0 - (x + text_w);
  return x;
}

namespace {

// Jump to the load of iteration (i, j): the run's only (a softmax row has no (i, j)).
void DrawJump(AppState& s) {
  ImGui::TextUnformatted("Jump to i");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
  ImGui::InputInt("##ji", &s.jump_i);
  ImGui::SameLine();
  ImGui::TextUnformatted("j");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
  ImGui::InputInt("##jj", &s.jump_j);
  ImGui::SameLine();
  if (ImGui::Button("Go")) s.jump_to(s.jump_i, s.jump_j);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Go to the load of iteration (i, j): Q_i, O_i, l_i, m_i at Alg1 L8; K_j, V_j at "
                      "FA2fwd L7; row block i at Alg0 L1");
  if (!s.jump_error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(kErrorText, "%s", s.jump_error.c_str());
  }
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
}

// Where the cursor is: the line and its loop variables, or a row's step by its label.
void describe_position(const AppState& s, char* where, size_t n) {
  if (s.index() == 0) {
    std::snprintf(where, n, "before the first step");
    return;
  }
  if (s.row) {
    std::snprintf(where, n, "'%s'", s.row->trace.steps[s.index() - 1].label.c_str());
    return;
  }
  const Step* cur = current_step(s);
  if (cur->i >= 0 && cur->j >= 0) std::snprintf(where, n, "%s  i = %d, j = %d", line_label(cur->line), cur->i, cur->j);
  else if (cur->i >= 0) std::snprintf(where, n, "%s  i = %d", line_label(cur->line), cur->i);
  else if (cur->j >= 0) std::snprintf(where, n, "%s  j = %d", line_label(cur->line), cur->j);
  else std::snprintf(where, n, "%s", line_label(cur->line));
}

}  // namespace

void DrawControlsPanel(AppState& s, const Layout& l) {
  if (!BeginPanel("Controls", l.controls_pos, l.controls_size, s, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar)) return;
  if (ImGui::Button("Reset")) s.reset();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Back to step 0 (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Back")) s.step_back();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("One step back (Left)");
  ImGui::SameLine();
  if (ImGui::Button(s.playing ? "Pause" : "Play", ImVec2(ImGui::GetFontSize() * 4, 0))) {
    if (!s.playing && s.index() >= s.steps()) s.reset();
    s.playing = !s.playing;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Play / pause (Space)");
  ImGui::SameLine();
  if (ImGui::Button("Step >")) s.step_forward();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("One step forward (Right)");
  ImGui::SameLine();
  if (ImGui::Button("Run to end")) s.run_to_end();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Apply every step (End)");
  // The speed takes what is left of the first row, at most 9 font heights: at font scale 2.5 in a
  // 1024 px window a fixed width ran past the panel's edge ("4." of "4.0"). Where its label
  // leaves it less than 4 font heights, the label moves into the tooltip.
  const float fs = ImGui::GetFontSize(), gap = ImGui::GetStyle().ItemSpacing.x;
  const float room = LineRoomAfterItem(gap), label_w = ImGui::CalcTextSize("steps/s").x + ImGui::GetStyle().ItemInnerSpacing.x;
  const bool speed_label = std::min(fs * 9, room - label_w) >= fs * 4;
  ImGui::SameLine(0, gap);
  ImGui::SetNextItemWidth(std::max(speed_label ? std::min(fs * 9, room - label_w) : std::min(fs * 9, room), fs * 3));
  ImGui::SliderFloat(speed_label ? "steps/s" : "##steps/s", &s.speed, 0.5f, 500.0f, "%.1f", ImGuiSliderFlags_Logarithmic);
  if (!speed_label && ImGui::IsItemHovered()) ImGui::SetTooltip("Steps per second while playing");
  if (ControlsRows(l.controls_size.x) == 2) ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
  if (!s.row) DrawJump(s);
  if (ImGui::Button("Display")) s.display.menu_open = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Theme, text size and panels for a projector (F2)");

  // Row 2: the scrubber and where we are.
  char where[128];
  describe_position(s, where, sizeof where);
  const float info_w = ImGui::GetFontSize() * 16;
  ImGui::SetNextItemWidth(std::max(ImGui::GetContentRegionAvail().x - info_w, 100.0f));
  int k = int(s.index());
  // The slider draws no text of its own: ImGui centres it, where the grab covers it whenever
  // the cursor is near the middle of the run. The label goes on the wider side of the grab.
  if (ImGui::SliderInt("##scrub", &k, 0, int(s.steps()), "")) s.seek(size_t(k));
  // The first of "step 22 of 43", "22 of 43" and "22" that fits beside the grab: at font scale
  // 2.5 in a 1024x768 window the long form was wider than the grab's wider side and ran off the
  // slider's left end ("tep 22 of 43").
  char labels[3][48];
  std::snprintf(labels[0], sizeof labels[0], "step %zu of %zu", s.index(), s.steps());
  std::snprintf(labels[1], sizeof labels[1], "%zu of %zu", s.index(), s.steps());
  std::snprintf(labels[2], sizeof labels[2], "%zu", s.index());
  const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
  const char* label = labels[2];
  float x = 0, text_w = 0;
  for (const char* form : labels) {
    label = form;
    text_w = ImGui::CalcTextSize(label).x;
    x = ScrubberLabelX(lo.x, hi.x, s.index(), s.steps(), text_w, ImGui::GetStyle().GrabMinSize, &s.scrub_label_gap_px);
    if (s.scrub_label_gap_px >= 2 && x >= lo.x && x + text_w <= hi.x) break;
  }
  s.scrub_label_cut_px = std::max(lo.x - x, x + text_w - hi.x);
  ImGui::GetWindowDrawList()->AddText(ImVec2(x, lo.y + ImGui::GetStyle().FramePadding.y),
                                      ImGui::GetColorU32(ImGuiCol_Text), label);
  if (label != labels[0] && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", labels[0]);
  ImGui::SameLine();
  ImGui::TextUnformatted(where);
  s.controls_overflow_px = PanelOverflowPx();
  ImGui::End();
}

}  // namespace flashstep::gui
