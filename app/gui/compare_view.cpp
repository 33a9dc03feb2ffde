// The compare view: a snapshot folder against the trace step by step (snapshot_view.cpp), then an
// O (and lse) computed elsewhere, such as by the CUDA backend, against this CPU trace's output,
// with |O - O_trace| as a log-scale heatmap.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "core/npy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

void DrawCompareView(AppState& s, GpuState& gs) {
  CompareState& c = s.compare;
  DrawSnapshotCompare(s);
  ImGui::Spacing();
  if (!ImGui::CollapsingHeader("Final O and lse from .npy files", s.snapshots.loaded ? 0 : ImGuiTreeNodeFlags_DefaultOpen))
    return;
  DimText("Load a result computed elsewhere (for instance the CUDA backend's O and lse as .npy) "
          "and compare it with this CPU trace's output. Relative error is normwise: "
          "max |x - ref| / max |ref|.");
  ImGui::PushItemWidth(-ImGui::GetFontSize() * 9);
  ImGui::InputText("O (.npy, Nq x d)", c.o_path, sizeof c.o_path);
  ImGui::InputText("lse (.npy, Nq)", c.lse_path, sizeof c.lse_path);
  ImGui::PopItemWidth();
  if (s.pick_local_file) {  // the web page: the files from the user's computer, through the browser
    if (ImGui::Button("Open O file...")) s.pick_local_file(LocalFile::compare_o);
    SameLineIfButtonFits("Open lse file...");
    if (ImGui::Button("Open lse file...")) s.pick_local_file(LocalFile::compare_lse);
  }
  if (ImGui::Button("Load and compare")) s.load_compare();
  ImGui::SameLine();
  // The longest label that fits the panel (at 1280x720 in presentation mode the full one was cut).
  const float pad = 2 * ImGui::GetStyle().FramePadding.x;
  const char* save = LongestFitting(ImGui::GetContentRegionAvail().x - pad,
                                    {"Save this trace's O and lse to these paths", "Save O and lse to these paths", "Save O, lse"});
  char save_id[96];
  std::snprintf(save_id, sizeof save_id, "%s###save-o-lse", *save ? save : "Save");
  if (ImGui::Button(save_id)) {
    try {
      if (!c.o_path[0]) std::snprintf(c.o_path, sizeof c.o_path, "flashstep-O.npy");
      if (!c.lse_path[0]) std::snprintf(c.lse_path, sizeof c.lse_path, "flashstep-lse.npy");
      write_npy(c.o_path, s.run->trace.O);
      write_npy(c.lse_path, s.run->trace.lse);
      c.message = std::string("wrote ") + c.o_path + " and " + c.lse_path;
      c.error.clear();
    } catch (const InputError& e) {
      c.error = e.what();
    }
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  ImGui::InputDouble("relative tolerance", &c.tolerance, 0, 0, "%.1e");
  if (!c.error.empty()) ErrorText(c.error);
  if (!c.message.empty()) DimText(c.message.c_str());
  if (!c.loaded) {
    DimText("Nothing loaded yet.");
    return;
  }
  ImGui::Text("O:   max abs %.3g   max rel %.3g", c.o_stats.max_abs, c.o_stats.max_rel);
  if (c.lse.size()) ImGui::Text("lse: max abs %.3g   max rel %.3g", c.lse_stats.max_abs, c.lse_stats.max_rel);
  if (c.passed()) ImGui::TextColored(kPassText, "PASS (max rel <= %.1e)", c.tolerance);
  else ImGui::TextColored(kErrorText, "FAIL (max rel > %.1e)", c.tolerance);

  // Error heatmap |O - O_trace|, log scale.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // Under the map, its colour bar: 6 px, the bar, its labels' line and a line's spacing.
  const float fs = ImGui::GetFontSize(), bar_h = std::round(10 * fs / 15);
  const float legend_h = 6 + 2 + bar_h + 1 + ImGui::GetTextLineHeightWithSpacing();
  const int rows = int(c.err.rows()), cols = int(c.err.cols());
  if (rows == 0 || cols == 0) return;
  // The map gets at least six lines of text in height and the view scrolls for it: presentation
  // mode at 1280x720 left it a negative height, drawn upwards over the results and the bar.
  const float map_h = std::max(avail.y - legend_h, 6 * fs);
  const float cell = std::max(std::min({(avail.x - 10) / float(cols), map_h / float(rows), 40.0f}), 0.05f);
  const float ch = cell, cw = std::min(std::max(cell, (avail.x * 0.5f) / float(cols)), 40.0f);
  c.map_px[0] = cw * float(cols);
  c.map_px[1] = ch * float(rows);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = origin, p1(origin.x + cw * float(cols), origin.y + ch * float(rows));
  if (gs.err.valid()) dl->AddImage(gs.err.texture(), p0, p1);
  dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(110, 110, 120, 255));
  if (ImGui::IsWindowHovered()) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    if (mp.x >= p0.x && mp.y >= p0.y && mp.x < p1.x && mp.y < p1.y) {
      const int r = std::clamp(int((mp.y - p0.y) / ch), 0, rows - 1), q = std::clamp(int((mp.x - p0.x) / cw), 0, cols - 1);
      ImGui::SetTooltip("O[%d, %d]: loaded %.8g, trace %.8g, |error| %.3g", r, q, double(c.O(r, q)),
                        double(s.run->trace.O(r, q)), double(c.err(r, q)));
    }
  }
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "1e%.0f", double(c.log_lo));
  std::snprintf(hi, sizeof hi, "1e%.0f", double(c.log_hi));
  const char* name = "|O - O_trace|";
  const float bar_w = std::max(std::min(200 * fs / 15, avail.x - ImGui::CalcTextSize(name).x - 10), 40.0f);
  colorbar(dl, gs.legend_log, ImVec2(origin.x, p1.y + 6), bar_w, bar_h, lo, hi, name);
  ImGui::Dummy(ImVec2(p1.x - p0.x, p1.y - p0.y + legend_h));
}

}  // namespace flashstep::gui
