// The Bench view: a bench-gpu --json file drawn as the paper's Figure 2 (middle), TFLOP/s and
// peak memory against N (app/plot/draw_figure.h, the same drawing `flashstep plot` writes).
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "app/plot/draw_figure.h"

#include <cstdio>

namespace flashstep::gui {

void DrawBenchView(AppState& s) {
  BenchState& b = s.bench;
  DimText("Timings from flashstep bench-gpu --json (or several runs combined, like assets/bench/h200.json). "
          "flashstep plot --bench FILE --out fig.png draws the same figures for slides.");
  // The path field keeps 8 lines' height of width: its label goes above it where the label and
  // Load beside it would leave less (at 1024x768 and font scale 2 the field showed "/work"). The
  // web page's "Open a file..." sits after Load where the field keeps that width, else on the
  // next line.
  const char* kOpen = "Open a file...";
  const float fs = ImGui::GetFontSize(), line_avail = ImGui::GetContentRegionAvail().x;
  const float load_w = ButtonWidth("Load") + ImGui::GetStyle().ItemSpacing.x;
  const float label_w = ImGui::CalcTextSize("bench JSON").x + ImGui::GetStyle().ItemInnerSpacing.x;
  const bool label_beside = line_avail - label_w - load_w >= fs * 8;
  if (!label_beside) ImGui::TextUnformatted("bench JSON");
  const float line_w = line_avail - load_w - (label_beside ? label_w : 0.0f);
  const float open_w = s.pick_local_file ? ButtonWidth(kOpen) + ImGui::GetStyle().ItemSpacing.x : 0.0f;
  const bool open_beside = open_w > 0 && line_w - open_w >= fs * 8;
  ImGui::SetNextItemWidth(line_w - (open_beside ? open_w : 0.0f));
  const bool enter = ImGui::InputText(label_beside ? "bench JSON" : "##bench JSON", b.path, sizeof b.path,
                                      ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Load") || enter) b.load(b.path);
  if (s.pick_local_file) {  // the web page: a file from the user's computer, through the browser
    if (open_beside) ImGui::SameLine();
    if (ImGui::Button(kOpen)) s.pick_local_file(LocalFile::bench);
  }
  if (!b.error.empty()) ErrorText(b.error);
  if (!b.loaded) {
    DimText("Nothing loaded yet.");
    return;
  }
  // Each figure's longest name that fits the line (long, then short forms with the same id):
  // at 1024x768 and font scale 2 "Bc sweep (Figure 2, middle)" ran past the panel's edge.
  static const char* const kNames[3] = {"Bc sweep (Figure 2, middle)###bc", "TFLOP/s against N###tflops",
                                        "peak memory against N###memory"};
  for (int k = 0; k < 3; ++k) {
    if (k > 0) SameLineIfFits(kNames[k]);
    const char* name = k == 0   ? FitToggle({kNames[0], "Bc sweep (Figure 2)###bc", "Bc sweep###bc"})
                       : k == 1 ? FitToggle({kNames[1], "TFLOP/s###tflops"})
                                : FitToggle({kNames[2], "peak memory###memory", "memory###memory"});
    if (ImGui::RadioButton(name, b.figure == plot::kFigureKinds[k])) b.select(plot::kFigureKinds[k], b.d);
  }
  if (b.figure != plot::FigureKind::bc) {
    // The d buttons together: the first starts a new line unless all of them fit on this one.
    float group_w = 0;
    char label[32];
    for (int64_t d : b.data.dims) {
      std::snprintf(label, sizeof label, "d = %lld", (long long)d);
      group_w += (group_w > 0 ? ImGui::GetStyle().ItemSpacing.x : 0) + ToggleWidth(label);
    }
    for (int64_t d : b.data.dims) {
      std::snprintf(label, sizeof label, "d = %lld", (long long)d);
      if (d == b.data.dims.front()) SameLineIfWidthFits(group_w);
      else SameLineIfFits(label);
      if (ImGui::RadioButton(label, b.d == d)) b.select(b.figure, d);
    }
  }
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (avail.x < 50) return;
  // At least a readable plot (8 lines of text tall); the view scrolls for the rest.
  avail.y = std::max(avail.y, plot::figure_height_for(b.shown, avail.x, ImGui::GetFont(), fs, 8 * fs));
  const ImVec2 p1(p0.x + avail.x, p0.y + avail.y);
  const plot::FigureLayout lay = plot::layout_figure(b.shown, p0, p1, ImGui::GetFont(), fs);
  b.plot_h = lay.fits ? lay.a1.y - lay.a0.y : 0;
  b.y_labels_gap = lay.y_labels_gap;
  b.y_labels_stacked = lay.y_labels_stacked;
  const ImVec2 mouse = ImGui::IsWindowHovered() ? ImGui::GetIO().MousePos : ImVec2(-FLT_MAX, -FLT_MAX);
  // The figure in the app's theme (it stayed dark on the light theme's panels).
  const plot::FigureStyle st = ThemeFigureStyle(s);
  b.figure_background = st.background;
  if (plot::DrawFigure(ImGui::GetWindowDrawList(), p0, p1, b.shown, st, ImGui::GetFont(), ImGui::GetFontSize(), mouse,
                       b.hover, sizeof b.hover))
    ImGui::SetTooltip("%s", b.hover);
  ImGui::Dummy(avail);
}

}  // namespace flashstep::gui
