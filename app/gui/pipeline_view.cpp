// The Pipeline view: the pipeline model of one SM of the Hopper forward kernel as a Gantt chart
// (loads, each consumer warpgroup's tensor-core products and softmax), and every rung's predicted
// TFLOP/s beside the TFLOP/s measured on the H200 (app/gui/pipeline_state.h).
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

namespace {

ImU32 kind_colour(char k) {
  switch (k) {
    case 'S': return IM_COL32(90, 150, 255, 255);   // S = Q K^T on the tensor cores
    case 'O': return IM_COL32(170, 110, 240, 255);  // O += P~ V on the tensor cores
    case 'P': return kComputeCol;                   // softmax: exp2 on the SFUs
    case 'W': return kWriteCol;
    default: return kReadCol;                       // Q, K, V loads
  }
}

void DrawGantt(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps) {
  const pipeline::Timeline& tl = ps.timeline;
  const float fs = ImGui::GetFontSize();
  const float label_w = fs * 9.5f, axis_h = fs * 1.6f;
  struct Lane {
    int cta, wg;
    pipeline::Unit unit;
    char name[48];
  };
  std::vector<Lane> lanes;
  for (int c = 0; c < ps.rung.ctas_per_sm; ++c) {
    Lane l{c, -1, pipeline::Unit::load, ""};
    std::snprintf(l.name, sizeof l.name, ps.rung.ctas_per_sm > 1 ? "block %d loads" : "loads", c);
    lanes.push_back(l);
    for (int w = 0; w < ps.rung.consumers; ++w)
      for (pipeline::Unit u : {pipeline::Unit::tensor, pipeline::Unit::softmax}) {
        Lane x{c, w, u, ""};
        if (ps.rung.ctas_per_sm > 1)
          std::snprintf(x.name, sizeof x.name, "block %d wg%d %s", c, w, pipeline::unit_name(u));
        else
          std::snprintf(x.name, sizeof x.name, "wg%d %s", w, pipeline::unit_name(u));
        lanes.push_back(x);
      }
  }
  const float lane_h = std::min(fs * 2.2f, (p1.y - p0.y - axis_h) / float(lanes.size()));
  const float x0 = p0.x + label_w, x1 = p1.x - fs;
  const double t_end = std::max(1.0, tl.end_clk);
  auto X = [&](double t) { return x0 + float(t / t_end) * (x1 - x0); };
  for (size_t k = 0; k < lanes.size(); ++k) {
    const float y = p0.y + float(k) * lane_h;
    dl->AddRectFilled(ImVec2(x0, y + 1), ImVec2(x1, y + lane_h - 1), k % 2 ? IM_COL32(32, 34, 40, 255) : IM_COL32(38, 40, 47, 255));
    dl->AddText(ImVec2(p0.x, y + (lane_h - fs) / 2), ImGui::GetColorU32(kDimText), lanes[k].name);
    for (const pipeline::Segment& s : tl.segments) {
      if (s.cta != lanes[k].cta || s.unit != lanes[k].unit || (s.unit != pipeline::Unit::load && s.wg != lanes[k].wg))
        continue;
      if (s.end <= s.start) continue;
      const ImVec2 a(X(s.start), y + lane_h * 0.18f), b(std::max(X(s.end), X(s.start) + 1.0f), y + lane_h * 0.82f);
      dl->AddRectFilled(a, b, kind_colour(s.kind), 2.0f);
      dl->AddRect(a, b, IM_COL32(15, 15, 20, 255), 2.0f);
      char txt[16];
      if (s.kind == 'Q' || s.kind == 'W') std::snprintf(txt, sizeof txt, "%c", s.kind);
      else std::snprintf(txt, sizeof txt, "%c%d", s.kind, s.j);
      const ImVec2 ts = ImGui::CalcTextSize(txt);
      if (b.x - a.x > ts.x + 4)
        dl->AddText(ImVec2((a.x + b.x - ts.x) / 2, (a.y + b.y - ts.y) / 2), IM_COL32(10, 10, 14, 255), txt);
    }
  }
  // Time axis in clocks and microseconds at the model's clock.
  const float ya = p0.y + float(lanes.size()) * lane_h + 2;
  dl->AddLine(ImVec2(x0, ya), ImVec2(x1, ya), ImGui::GetColorU32(kDimText));
  const double step = t_end > 20000 ? 5000 : t_end > 8000 ? 2000 : t_end > 4000 ? 1000 : 500;
  for (double t = 0; t <= t_end; t += step) {
    dl->AddLine(ImVec2(X(t), ya), ImVec2(X(t), ya + 4), ImGui::GetColorU32(kDimText));
    char txt[32];
    std::snprintf(txt, sizeof txt, "%.0f", t);
    dl->AddText(ImVec2(X(t) + 2, ya + 2), ImGui::GetColorU32(kDimText), txt);
  }
  char unit[64];
  std::snprintf(unit, sizeof unit, "clocks (%.2f us at 1.98 GHz)", t_end / 1980.0);
  const ImVec2 us = ImGui::CalcTextSize(unit);
  dl->AddText(ImVec2(x1 - us.x, ya + 2 + fs), ImGui::GetColorU32(kDimText), unit);
}

// Predicted (outline) and measured (filled) TFLOP/s of every rung, one row each.
void DrawRungBars(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps) {
  const float fs = ImGui::GetFontSize();
  const float label_w = fs * 4.5f,
              row_h = std::min(fs * 2.4f, (p1.y - p0.y - 2.5f * fs) / float(std::max<size_t>(1, ps.rows.size())));
  double top = 800;
  for (const auto& r : ps.rows) top = std::max({top, r.predicted, r.measured});
  for (const auto& m : ps.references) top = std::max(top, m.tflops);
  const float x0 = p0.x + label_w, x1 = p1.x - fs * 16;
  auto X = [&](double v) { return x0 + float(v / top) * (x1 - x0); };
  for (size_t k = 0; k < ps.rows.size(); ++k) {
    const auto& r = ps.rows[k];
    const float y = p0.y + float(k) * row_h;
    if (r.rung.variant == ps.variant)
      dl->AddRectFilled(ImVec2(p0.x, y), ImVec2(p1.x, y + row_h - 2), kShownCol);
    char name[16];
    std::snprintf(name, sizeof name, "v%d", r.rung.variant);
    dl->AddText(ImVec2(p0.x + 4, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), name);
    const float h = (row_h - 4) / 2;
    dl->AddRect(ImVec2(x0, y + 1), ImVec2(X(r.predicted), y + 1 + h), IM_COL32(250, 225, 60, 255), 0, 0, 2.0f);
    if (r.measured > 0) dl->AddRectFilled(ImVec2(x0, y + 2 + h), ImVec2(X(r.measured), y + 1 + 2 * h), kVisitedCol);
    char txt[128];
    if (r.measured > 0)
      std::snprintf(txt, sizeof txt, "model %.0f, measured %.0f", r.predicted, r.measured);
    else
      std::snprintf(txt, sizeof txt, "model %.0f, %s", r.predicted, r.rung.built ? "not measured" : "not built");
    dl->AddText(ImVec2(x1 + 6, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), txt);
  }
  // PyTorch's kernels measured in the same call: vertical lines across the rows.
  const float y_end = p0.y + float(ps.rows.size()) * row_h;
  for (size_t k = 0; k < ps.references.size(); ++k) {
    const auto& m = ps.references[k];
    const ImU32 col = k % 2 ? IM_COL32(120, 200, 200, 255) : IM_COL32(240, 120, 120, 255);
    dl->AddLine(ImVec2(X(m.tflops), p0.y), ImVec2(X(m.tflops), y_end), col, 2.0f);
    char txt[96];
    std::snprintf(txt, sizeof txt, "%s %.0f", m.kernel.c_str(), m.tflops);
    dl->AddText(ImVec2(X(m.tflops) + 3, y_end + 2 + float(k) * fs), col, txt);
  }
}

}  // namespace

void DrawPipelineView(AppState& s) {
  PipelineState& ps = s.pipeline;
  DimText("One SM of the Hopper forward kernel over time, from the H200's rates (core/pipeline_model.h; "
          "flashstep explain --pipeline prints the same). Bars that overlap on one unit share it, unless the tensor cores serve in turn.");
  bool changed = false;
  if (ps.rows.empty()) ps.rebuild();
  // Every modelled rung (no allocation per frame), wrapped onto the next line where the panel ends.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (const PipelineState::Row& row : ps.rows) {
    const float w = ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize(row.rung.name.c_str()).x;
    if (&row != &ps.rows.front() && ImGui::GetItemRectMax().x + style.ItemSpacing.x + w <= right) ImGui::SameLine();
    if (ImGui::RadioButton(row.rung.name.c_str(), ps.variant == row.rung.variant)) ps.variant = row.rung.variant, changed = true;
  }
  for (int d : {64, 128}) {
    char label[16];
    std::snprintf(label, sizeof label, "d = %d", d);
    if (d != 64) ImGui::SameLine();
    if (ImGui::RadioButton(label, ps.d == d)) ps.d = d, changed = true;
  }
  ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  for (int n : {4096, 16384}) {
    char label[16];
    std::snprintf(label, sizeof label, "N = %d", n);
    if (n != 4096) ImGui::SameLine();
    if (ImGui::RadioButton(label, ps.n == n)) ps.n = n, changed = true;
  }
  ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  changed |= ImGui::Checkbox("causal", &ps.causal);
  ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  changed |= ImGui::Checkbox("tensor cores in turn", &ps.in_turn);
  const float slider_w = ImGui::GetFontSize() * 8 + style.ItemInnerSpacing.x + ImGui::CalcTextSize("wait (clocks)").x;
  if (ImGui::GetItemRectMax().x + ImGui::GetFontSize() * 2 + slider_w <= right) ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  ImGui::PushItemWidth(ImGui::GetFontSize() * 8);
  changed |= ImGui::SliderFloat("wait (clocks)", &ps.wait_clk, 0.0f, 800.0f, "%.0f");
  ImGui::PopItemWidth();
  if (changed) ps.rebuild();

  const pipeline::Rung& r = ps.rung;
  ImGui::Text("v%d: %s", r.variant, r.what.c_str());
  ImGui::TextColored(kDimText, "Br %d, Bc %d, %d K/V stages, %d thread block%s per SM%s; first %d K/V blocks shown", r.Br(),
                     r.Bc, r.stages, r.ctas_per_sm, r.ctas_per_sm > 1 ? "s" : "",
                     r.persistent ? " (persistent: one per SM over the tiles)" : "", PipelineState::kShownBlocks);
  const pipeline::Prediction& p = ps.prediction;
  ImGui::Text("predicted: %.0f clocks per K/V block, %.0f TFLOP/s (tensor-core ceiling %.0f); busy: tensor %.0f%%, "
              "softmax %.0f%%, load %.0f%%",
              p.clk_per_kv_block, p.tflops, p.bound_tflops, 100 * p.tensor_busy, 100 * p.softmax_busy,
              100 * p.load_busy);
  Swatch(kReadCol, false, "load Q, K, V");
  Swatch(IM_COL32(90, 150, 255, 255), false, "S = Q K^T", true);
  Swatch(kComputeCol, false, "softmax (exp2)", true);
  Swatch(IM_COL32(170, 110, 240, 255), false, "O += P~ V", true);
  Swatch(kWriteCol, false, "write O", true);

  const ImVec2 p0 = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  if (avail.x < 100 || avail.y < 100) return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // The chart takes what its lanes need (at most 58% of the height); the rung bars get the rest.
  const float fs0 = ImGui::GetFontSize();
  const int lanes = ps.rung.ctas_per_sm * (1 + 2 * ps.rung.consumers);
  const float gantt_h = std::min(avail.y * 0.58f, float(lanes) * fs0 * 2.2f + fs0 * 2.4f);
  DrawGantt(dl, p0, ImVec2(p0.x + avail.x, p0.y + gantt_h), ps);
  const float fs = ImGui::GetFontSize();
  const float y2 = p0.y + gantt_h + fs * 0.8f;
  char head[160];
  std::snprintf(head, sizeof head, "TFLOP/s at N = %d, d = %d%s, bf16: model (outline), H200 (filled), PyTorch (lines)%s", ps.n, ps.d,
                ps.causal ? ", causal" : "", ps.measured_loaded ? "" : " - no measurements loaded");
  dl->AddText(ImVec2(p0.x, y2), ImGui::GetColorU32(ImGuiCol_Text), head);
  DrawRungBars(dl, ImVec2(p0.x, y2 + fs * 1.4f), ImVec2(p0.x + avail.x, p0.y + avail.y), ps);
  ImGui::Dummy(avail);
}

}  // namespace flashstep::gui
