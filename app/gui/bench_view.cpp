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
  // The web page's "Open a file..." sits after Load where the path field keeps 8 lines' height
  // of width beside it, else on the next line.
  const char* kOpen = "Open a file...";
  const float fs = ImGui::GetFontSize();
  const float open_w = s.pick_local_file ? ButtonWidth(kOpen) + ImGui::GetStyle().ItemSpacing.x : 0.0f;
  const bool open_beside = open_w > 0 && ImGui::GetContentRegionAvail().x - fs * 9 - open_w >= fs * 8;
  ImGui::PushItemWidth(-fs * 9 - (open_beside ? open_w : 0.0f));
  const bool enter = ImGui::InputText("bench JSON", b.path, sizeof b.path, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::PopItemWidth();
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
  static const char* const kNames[3] = {"Bc sweep (Figure 2, middle)", "TFLOP/s against N", "peak memory against N"};
  for (int k = 0; k < 3; ++k) {
    if (k > 0) SameLineIfFits(kNames[k]);
    if (ImGui::RadioButton(kNames[k], b.figure == plot::kFigureKinds[k])) b.select(plot::kFigureKinds[k], b.d);
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
