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
  // The header's longest title that fits: ImGui 1.86 clips a header's text at the panel's edge
  // without a mark ("Final O and lse from .np" at 1024x768, font scale 2).
  const float room = HeaderLabelRoom();
  const char* head = LongestFitting(room, {"Final O and lse from .npy files", "Final O and lse (.npy)", "O and lse (.npy)", "O, lse (.npy)"});
  if (!*head) head = "O, lse (.npy)";
  c.header_cut_px = ImGui::CalcTextSize(head).x - room;
  char head_id[64];
  std::snprintf(head_id, sizeof head_id, "%s###final-o-lse", head);
  if (!ImGui::CollapsingHeader(head_id, s.snapshots.loaded ? 0 : ImGuiTreeNodeFlags_DefaultOpen)) return;
  DimText("Load a result computed elsewhere (for instance the CUDA backend's O and lse as .npy) "
          "and compare it with this CPU trace's output. Relative error is normwise: "
          "max |x - ref| / max |ref|.");
  // Each path's field fills the line after its label; where that leaves it less than 6 lines'
  // height of width the label goes above it (at 1024x768, font scale 2, the fields were slivers).
  const float fs = ImGui::GetFontSize(), whole = ImGui::GetContentRegionAvail().x;
  const FittedLabel o_label = FitLabel("O (.npy, Nq x d)", whole, fs * 6);
  ImGui::SetNextItemWidth(o_label.width);
  ImGui::InputText(o_label.label, c.o_path, sizeof c.o_path);
  const FittedLabel lse_label = FitLabel("lse (.npy, Nq)", whole, fs * 6);
  ImGui::SetNextItemWidth(lse_label.width);
  ImGui::InputText(lse_label.label, c.lse_path, sizeof c.lse_path);
  if (s.pick_local_file) {  // the web page: the files from the user's computer, through the browser
    if (ImGui::Button("Open O file...")) s.pick_local_file(LocalFile::compare_o);
    SameLineIfButtonFits("Open lse file...");
    if (ImGui::Button("Open lse file...")) s.pick_local_file(LocalFile::compare_lse);
  }
  if (ImGui::Button("Load and compare")) s.load_compare();
  // The longest label that fits the rest of the line (at 1280x720 in presentation mode the full
  // one was cut), else the longest that fits the next line (at font scale 2 not even "Save O,
  // lse" fitted beside "Load and compare": it ran past the panel's edge).
  const float pad = 2 * ImGui::GetStyle().FramePadding.x;
  const char* save = LongestFitting(LineRoomAfterItem() - pad,
                                    {"Save this trace's O and lse to these paths", "Save O and lse to these paths", "Save O, lse"});
  if (*save) ImGui::SameLine();
  else save = LongestFitting(whole - pad, {"Save this trace's O and lse to these paths", "Save O and lse to these paths", "Save O, lse"});
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
  const FittedLabel tol_label = FitLabel("relative tolerance", fs * 7, fs * 5);
  ImGui::SetNextItemWidth(tol_label.width);
  ImGui::InputDouble(tol_label.label, &c.tolerance, 0, 0, "%.1e");
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
  const float bar_h = std::round(10 * fs / 15);
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
