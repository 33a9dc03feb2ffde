// The Pipeline view: the pipeline model of one SM of the Hopper forward kernel as a Gantt chart
// (loads, each consumer warpgroup's tensor-core products and softmax), and every technique's
// predicted TFLOP/s beside the TFLOP/s measured on the H200; or the default tensor-core backward:
// what each warpgroup does, its throughput bounds beside the model's and the measured time
// (app/gui/pipeline_state.h).
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace flashstep::gui {

namespace {

ImU32 kind_colour(char k, bool backward) {
  if (backward) switch (k) {
      case 'S': return IM_COL32(90, 150, 255, 255);   // S^T = K Q^T
      case 'D': return IM_COL32(60, 200, 220, 255);   // dP^T = V dO^T
      case 'V': return IM_COL32(170, 110, 240, 255);  // dV += P^T dO
      case 'K': return IM_COL32(240, 150, 210, 255);  // dK += dS^T Q
      case 'Q': return IM_COL32(250, 200, 90, 255);   // dQ += dS K
      case 'P': return kComputeCol;                   // exp2
      case 'G': return IM_COL32(120, 220, 120, 255);  // dS element-wise
      case 'A': case 'W': return kWriteCol;           // dQ added, dK dV written
      default: return kReadCol;                       // loads
    }
  switch (k) {
    case 'S': return IM_COL32(90, 150, 255, 255);   // S = Q K^T on the tensor cores
    case 'O': return IM_COL32(170, 110, 240, 255);  // O += P~ V on the tensor cores
    case 'P': return kComputeCol;                   // softmax: exp2 on the SFUs
    case 'W': return kWriteCol;
    default: return kReadCol;                       // Q, K, V loads
  }
}

// Returns the narrowest gap between two neighbouring labels of the time axis, in pixels.
float DrawGantt(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps) {
  const pipeline::Timeline& tl = ps.timeline;
  const float fs = ImGui::GetFontSize();
  const float label_w = fs * 9.5f, axis_h = fs * 1.6f;
  // The backward's dQ adds ('A', the copy engine's, under the next Q block's loads) get a lane of
  // their own below the loads, so that neither hides the other.
  struct Lane {
    int cta, wg;
    pipeline::Unit unit;
    char name[48];
    bool adds = false;
  };
  std::vector<Lane> lanes;
  for (int c = 0; c < ps.ctas; ++c) {
    Lane l{c, -1, pipeline::Unit::load, ""};
    std::snprintf(l.name, sizeof l.name, ps.ctas > 1 ? "block %d loads" : "loads", c);
    lanes.push_back(l);
    if (ps.backward) {
      Lane a{c, -1, pipeline::Unit::load, "", true};
      std::snprintf(a.name, sizeof a.name, ps.ctas > 1 ? "block %d dQ adds" : "dQ adds", c);
      lanes.push_back(a);
    }
    for (int w = 0; w < ps.warpgroups; ++w)
      for (pipeline::Unit u : {pipeline::Unit::tensor, pipeline::Unit::softmax}) {
        Lane x{c, w, u, ""};
        if (ps.ctas > 1)
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
    dl->AddRectFilled(ImVec2(x0, y + 1), ImVec2(x1, y + lane_h - 1), kLaneCols[k % 2]);
    dl->AddText(ImVec2(p0.x, y + (lane_h - fs) / 2), ImGui::GetColorU32(kDimText), lanes[k].name);
    for (const pipeline::Segment& s : tl.segments) {
      if (s.cta != lanes[k].cta || s.unit != lanes[k].unit || (s.unit != pipeline::Unit::load && s.wg != lanes[k].wg))
        continue;
      if (ps.backward && s.unit == pipeline::Unit::load && (s.kind == 'A') != lanes[k].adds) continue;
      if (s.end <= s.start) continue;
      const ImVec2 a(X(s.start), y + lane_h * 0.18f), b(std::max(X(s.end), X(s.start) + 1.0f), y + lane_h * 0.82f);
      dl->AddRectFilled(a, b, kind_colour(s.kind, ps.backward), 2.0f);
      dl->AddRect(a, b, IM_COL32(15, 15, 20, 255), 2.0f);
      char txt[16];
      if (!ps.backward && (s.kind == 'Q' || s.kind == 'W')) std::snprintf(txt, sizeof txt, "%c", s.kind);
      else if (ps.backward && s.kind == 'I') std::snprintf(txt, sizeof txt, "KV");  // K_j, V_j, once a block
      else if (ps.backward && s.kind == 'W') std::snprintf(txt, sizeof txt, "W");
      else std::snprintf(txt, sizeof txt, "%c%d", s.kind, s.j);
      const ImVec2 ts = ImGui::CalcTextSize(txt);
      if (b.x - a.x > ts.x + 4)
        dl->AddText(ImVec2((a.x + b.x - ts.x) / 2, (a.y + b.y - ts.y) / 2), IM_COL32(10, 10, 14, 255), txt);
    }
  }
  // Time axis in clocks and microseconds at the model's clock.
  const float ya = p0.y + float(lanes.size()) * lane_h + 2;
  dl->AddLine(ImVec2(x0, ya), ImVec2(x1, ya), ImGui::GetColorU32(kDimText));
  // Ticks 1, 2 or 5 x 10^k clocks apart, the first spacing at which the widest label fits with a
  // space on either side (a narrow window or a large font takes fewer ticks).
  char widest[32];
  std::snprintf(widest, sizeof widest, "%.0f", t_end);
  const float need = ImGui::CalcTextSize(widest).x + fs * 0.8f;
  double step = 500;
  for (double s : {500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7}) {
    step = s;
    if (s * (x1 - x0) / t_end >= need) break;
  }
  float gap = std::numeric_limits<float>::max(), prev_end = -std::numeric_limits<float>::max();
  for (double t = 0; t <= t_end; t += step) {
    dl->AddLine(ImVec2(X(t), ya), ImVec2(X(t), ya + 4), ImGui::GetColorU32(kDimText));
    char txt[32];
    std::snprintf(txt, sizeof txt, "%.0f", t);
    // right of its tick, but inside the axis: the last tick can fall at its very end
    const float w = ImGui::CalcTextSize(txt).x, x = std::min(X(t) + 2, x1 - w);
    if (x - prev_end < fs * 0.3f) continue;  // the clamped last label onto its neighbour: leave it out
    gap = std::min(gap, x - prev_end);
    prev_end = x + w;
    dl->AddText(ImVec2(x, ya + 2), ImGui::GetColorU32(kDimText), txt);
  }
  char unit[64];
  std::snprintf(unit, sizeof unit, "clocks (%.2f us at 1.98 GHz)", t_end / 1980.0);
  const ImVec2 us = ImGui::CalcTextSize(unit);
  dl->AddText(ImVec2(x1 - us.x, ya + 2 + fs), ImGui::GetColorU32(kDimText), unit);
  return gap;
}

// Predicted (outline) and measured (filled) TFLOP/s of every technique, one row each.
void DrawTechniqueBars(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps) {
  const float fs = ImGui::GetFontSize();
  const float label_w = fs * 11.5f,
              row_h = std::min(fs * 2.4f, (p1.y - p0.y - 2.5f * fs) / float(std::max<size_t>(1, ps.rows.size())));
  double top = 800;
  for (const auto& r : ps.rows) top = std::max({top, r.predicted, r.measured.value});
  for (const auto& m : ps.references) top = std::max(top, m.tflops);
  const float x0 = p0.x + label_w, x1 = p1.x - fs * 16;
  auto X = [&](double v) { return x0 + float(v / top) * (x1 - x0); };
  for (size_t k = 0; k < ps.rows.size(); ++k) {
    const auto& r = ps.rows[k];
    const float y = p0.y + float(k) * row_h;
    if (r.kernel.key == ps.technique) dl->AddRectFilled(ImVec2(p0.x, y), ImVec2(p1.x, y + row_h - 2), kShownCol);
    dl->AddText(ImVec2(p0.x + 4, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), r.kernel.key.c_str());
    const float h = (row_h - 4) / 2;
    dl->AddRect(ImVec2(x0, y + 1), ImVec2(X(r.predicted), y + 1 + h), kComputeCol, 0, 0, 2.0f);  // the theme's yellow
    if (r.measured.found) dl->AddRectFilled(ImVec2(x0, y + 2 + h), ImVec2(X(r.measured.value), y + 1 + 2 * h), kVisitedCol);
    char txt[128];
    if (r.measured.found) std::snprintf(txt, sizeof txt, "model %.0f, measured %.0f", r.predicted, r.measured.value);
    else std::snprintf(txt, sizeof txt, "model %.0f, not measured", r.predicted);
    dl->AddText(ImVec2(x1 + 6, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), txt);
  }
  // PyTorch's kernels measured in the same call: vertical lines across the rows.
  const float y_end = p0.y + float(ps.rows.size()) * row_h;
  for (size_t k = 0; k < ps.references.size(); ++k) {
    const auto& m = ps.references[k];
    const ImU32 col = kReferenceCols[k % 2];
    dl->AddLine(ImVec2(X(m.tflops), p0.y), ImVec2(X(m.tflops), y_end), col, 2.0f);
    char txt[96];
    std::snprintf(txt, sizeof txt, "%s %.0f", m.kernel.c_str(), m.tflops);
    dl->AddText(ImVec2(X(m.tflops) + 3, y_end + 2 + float(k) * fs), col, txt);
  }
}

// The backward's times of the whole problem (ms): each product's and unit's throughput bound,
// the model's prediction and the H200's measurement, one bar each.
constexpr size_t kBackwardBars = 12;  // DrawBackwardBars' rows
void DrawBackwardBars(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps) {
  const pipeline::BackwardPrediction& p = ps.backward_prediction;
  struct Bar {
    const char* name;
    double ms;
    ImU32 col;
  };
  const Bar bars[] = {{"S^T = K Q^T", p.product_ms[0], kind_colour('S', true)},
                      {"dP^T = V dO^T", p.product_ms[1], kind_colour('D', true)},
                      {"dV += P^T dO", p.product_ms[2], kind_colour('V', true)},
                      {"dK += dS^T Q", p.product_ms[3], kind_colour('K', true)},
                      {"dQ += dS K", p.product_ms[4], kind_colour('Q', true)},
                      {"five products", p.tensor_ms, IM_COL32(130, 130, 250, 255)},
                      {"exp2 of P", p.exp_ms, kind_colour('P', true)},
                      {"P, dS float32", p.fp32_ms, kind_colour('G', true)},
                      {"Q, dO, L, D loads", p.load_ms, kReadCol},
                      {"dQ accumulation", p.dq_add_ms, kWriteCol},
                      {"model", p.ms, IM_COL32(250, 225, 60, 255)},
                      {"H200 measured", ps.backward_measured.found ? ps.backward_measured.value : 0, kVisitedCol}};
  const size_t n = sizeof bars / sizeof bars[0];
  static_assert(sizeof bars / sizeof bars[0] == kBackwardBars, "the view reserves a row per bar");
  const float fs = ImGui::GetFontSize();
  const float label_w = fs * 10.5f, row_h = std::min(fs * 1.7f, (p1.y - p0.y) / float(n));
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, b.ms);
  top = std::max(top, 1e-9);
  const float x0 = p0.x + label_w, x1 = p1.x - fs * 9;
  for (size_t k = 0; k < n; ++k) {
    const float y = p0.y + float(k) * row_h;
    dl->AddText(ImVec2(p0.x + 4, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), bars[k].name);
    const float xe = x0 + float(bars[k].ms / top) * (x1 - x0);
    dl->AddRectFilled(ImVec2(x0, y + 2), ImVec2(std::max(xe, x0 + 1), y + row_h - 2), bars[k].col);
    char txt[48];
    if (k + 1 == n && !ps.backward_measured.found) std::snprintf(txt, sizeof txt, "not measured");
    else std::snprintf(txt, sizeof txt, "%.3f ms", bars[k].ms);
    dl->AddText(ImVec2(std::max(xe, x0) + 6, y + (row_h - fs) / 2), ImGui::GetColorU32(ImGuiCol_Text), txt);
  }
}

}  // namespace

void DrawPipelineView(AppState& s) {
  PipelineState& ps = s.pipeline;
  // In a short panel (presentation mode at 1280 x 720) the paragraphs follow the chart, so that a
  // first look shows the controls, the legend and the chart; otherwise they come first.
  const bool short_panel = ImGui::GetContentRegionAvail().y < ImGui::GetFontSize() * 34;
  const auto intro = [&] {
    if (ps.backward)
      DimText("One SM of the default tensor-core backward over time, from the H200's rates (core/pipeline_backward.h; "
              "flashstep explain --pipeline --backward prints the same). Bars that overlap on one unit share it.");
    else
      DimText("One SM of the Hopper forward kernel over time, from the H200's rates (core/pipeline_model.h; "
              "flashstep explain --pipeline prints the same). Bars that overlap on one unit share it, unless the tensor cores serve in turn.");
  };
  if (!short_panel) intro();
  bool changed = false;
  if (ps.rows.empty() && ps.timeline.segments.empty()) ps.rebuild();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::RadioButton("forward", !ps.backward)) ps.backward = false, changed = true;
  SameLineIfFits("backward");
  if (ImGui::RadioButton("backward", ps.backward)) ps.backward = true, changed = true;
  // Each button on this line where it fits before the panel's edge, else on the next.
  for (int d : {64, 128}) {
    char label[16];
    std::snprintf(label, sizeof label, "d = %d", d);
    if (d == 64) SameLineIfGroupFits({"d = 64", "d = 128"}, ImGui::GetFontSize() * 2);
    else SameLineIfFits(label);
    if (ImGui::RadioButton(label, ps.d == d)) ps.d = d, changed = true;
  }
  for (int n : {4096, 16384}) {
    char label[16];
    std::snprintf(label, sizeof label, "N = %d", n);
    if (n == 4096) SameLineIfGroupFits({"N = 4096", "N = 16384"}, ImGui::GetFontSize() * 2);
    else SameLineIfFits(label);
    if (ImGui::RadioButton(label, ps.n == n)) ps.n = n, changed = true;
  }
  SameLineIfFits("causal", ImGui::GetFontSize() * 2);
  changed |= ImGui::Checkbox("causal", &ps.causal);
  if (!ps.backward) {  // on this line where it fits, else on the next
    SameLineIfFits("tensor cores in turn", ImGui::GetFontSize() * 2);
    changed |= ImGui::Checkbox(FitToggle({"tensor cores in turn###in-turn", "cores in turn###in-turn"}), &ps.in_turn);
  }
  const float slider_w = ImGui::GetFontSize() * 8 + style.ItemInnerSpacing.x + ImGui::CalcTextSize("wait (clocks)").x;
  if (ImGui::GetItemRectMax().x + ImGui::GetFontSize() * 2 + slider_w <= right) ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  // On a line of its own the slider shrinks, then its label goes above it, rather than run past
  // the panel's edge ("wait (clo" at 1024x768, font scale 2).
  const FittedLabel wait = FitLabel("wait (clocks)", ImGui::GetFontSize() * 8, ImGui::GetFontSize() * 4);
  ImGui::SetNextItemWidth(wait.width);
  changed |= ImGui::SliderFloat(wait.label, &ps.wait_clk, 0.0f, 800.0f, "%.0f");
  // The forward's techniques (no allocation per frame), wrapped onto the next line where the panel ends.
  if (!ps.backward)
    for (const PipelineState::Row& row : ps.rows) {
      const char* key = row.kernel.key.c_str();
      if (&row != &ps.rows.front()) SameLineIfFits(key);
      if (ImGui::RadioButton(key, ps.technique == row.kernel.key)) ps.technique = row.kernel.key, changed = true;
    }
  if (changed) ps.rebuild();

  const float fs0 = ImGui::GetFontSize();
  // The kernel's paragraph and the model's prediction, before the chart or (short panel) after it.
  const auto describe = [&] {
    if (ps.backward) {
      const pipeline::BackwardPrediction& p = ps.backward_prediction;
      TextWrappedF("the default backward (gpu/bwd_ws_kernel.cuh): Bc %d keys in 2 consumer warpgroups, Q blocks of "
                   "Br %d loaded by a producer warpgroup (TMA, 3 stages), two barriers per Q block, dQ added by "
                   "the bulk copy engine under the next Q block; first %d Q blocks shown",
                   pipeline::kBwdBc, pipeline::bwd_br(ps.d), PipelineState::kShownBlocks);
      TextWrappedF("predicted: %.0f clocks per Q block, %.3f ms, %.0f TFLOP/s; a Q block's clocks: tensor %.0f%%, "
                   "softmax alone %.0f%%, memory alone %.0f%%, idle %.0f%%",
                   p.clk_per_q_block, p.ms, p.tflops, 100 * p.share_tensor, 100 * p.share_softmax, 100 * p.share_memory,
                   100 * p.share_idle);
    } else {
      const pipeline::Kernel& r = ps.kernel;
      TextWrappedF("%s: %s", r.key.c_str(), r.what.c_str());
      ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
      TextWrappedF("Br %d, Bc %d, %d K/V stages, %d thread block%s per SM%s; first %d K/V blocks shown", r.Br(), r.Bc,
                   r.stages, r.ctas_per_sm, r.ctas_per_sm > 1 ? "s" : "",
                   r.persistent ? " (persistent: one per SM over the tiles)" : "", PipelineState::kShownBlocks);
      ImGui::PopStyleColor();
      const pipeline::Prediction& p = ps.prediction;
      TextWrappedF("predicted: %.0f clocks per K/V block, %.0f TFLOP/s (tensor-core ceiling %.0f); busy: tensor %.0f%%, "
                   "softmax %.0f%%, load %.0f%%",
                   p.clk_per_kv_block, p.tflops, p.bound_tflops, 100 * p.tensor_busy, 100 * p.softmax_busy,
                   100 * p.load_busy);
    }
  };
  if (!short_panel) describe();
  if (ps.backward) {
    const float key_w = ImGui::GetContentRegionAvail().x - ImGui::GetTextLineHeight() - 4;  // beside the swatch
    const char* loads = LongestFitting(key_w, {"loads (KV: K_j, V_j once; L i: Q_i, dO_i, L_i, D_i)",
                                               "loads (KV: K_j, V_j; L i: Q_i, dO_i, L_i, D_i)", "loads (KV, L i)"});
    Swatch(kReadCol, false, *loads ? loads : "loads");
    Swatch(kind_colour('S', true), false, "S^T", true);
    Swatch(kind_colour('P', true), false, "exp2", true);
    Swatch(kind_colour('D', true), false, "dP^T", true);
    Swatch(kind_colour('V', true), false, "dV", true);
    Swatch(kind_colour('G', true), false, "dS", true);
    Swatch(kind_colour('K', true), false, "dK", true);
    Swatch(kind_colour('Q', true), false, "dQ", true);
    Swatch(kWriteCol, false, "A: dQ added, W: dK dV written", true);
  } else {
    Swatch(kReadCol, false, "load Q, K, V");
    Swatch(IM_COL32(90, 150, 255, 255), false, "S = Q K^T", true);
    Swatch(kComputeCol, false, "softmax (exp2)", true);
    Swatch(IM_COL32(170, 110, 240, 255), false, "O += P~ V", true);
    Swatch(kWriteCol, false, "write O", true);
  }

  const ImVec2 p0 = ImGui::GetCursorScreenPos(), left = ImGui::GetContentRegionAvail();
  if (left.x < 100) return;
  // Below its controls the view takes at least a readable chart's height: where the panel has
  // less left (presentation mode's large font at 1280 x 720), it scrolls.
  const ImVec2 avail(left.x, std::max(left.y, ImGui::GetFontSize() * 16));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fs = ImGui::GetFontSize();
  // The heading of the bars, on two lines where one does not fit the panel.
  char head[200], head2[120] = "";
  if (ps.backward) {
    std::snprintf(head, sizeof head, "the whole backward at N = %d, d = %d%s, bf16, 256 heads:", ps.n, ps.d,
                  ps.causal ? ", causal" : "");
    std::snprintf(head2, sizeof head2, "throughput bounds, model, H200 (ms)%s",
                  ps.backward_measured.found ? "" : " - no measurement");
  } else {
    std::snprintf(head, sizeof head, "TFLOP/s at N = %d, d = %d%s, bf16:", ps.n, ps.d, ps.causal ? ", causal" : "");
    std::snprintf(head2, sizeof head2, "model (outline), H200 (filled), PyTorch (lines)%s",
                  ps.measured_loaded ? "" : " - no PyTorch measurements loaded");
  }
  const bool one_line = ImGui::CalcTextSize(head).x + fs * 0.3f + ImGui::CalcTextSize(head2).x <= avail.x;
  const float head_h = fs * (one_line ? 1.4f : 2.6f);
  // The chart takes what its lanes need (at most 58% of the height); the bars get the rest, and
  // never less than a readable row each: where the panel is shorter, the view scrolls.
  const int lanes = ps.ctas * (1 + 2 * ps.warpgroups);
  const float gantt_h = std::min(avail.y * 0.58f, float(lanes) * fs0 * 2.2f + fs0 * 2.4f);
  const size_t bars = ps.backward ? kBackwardBars : ps.rows.size();
  const float bars_min = float(bars) * fs * 1.3f + (ps.backward ? 0 : fs * (2.5f + float(ps.references.size())));
  const float total_h = std::max(avail.y, gantt_h + fs * 0.8f + head_h + bars_min);
  ps.axis_label_gap_px = DrawGantt(dl, p0, ImVec2(p0.x + avail.x, p0.y + gantt_h), ps);
  ps.lane_colours[0] = kLaneCols[0];
  ps.lane_colours[1] = kLaneCols[1];
  const float y2 = p0.y + gantt_h + fs * 0.8f;
  if (one_line) {
    char both[sizeof head + sizeof head2 + 1];
    std::snprintf(both, sizeof both, "%s %s", head, head2);
    dl->AddText(ImVec2(p0.x, y2), ImGui::GetColorU32(ImGuiCol_Text), both);
  } else {
    dl->AddText(ImVec2(p0.x, y2), ImGui::GetColorU32(ImGuiCol_Text), head);
    dl->AddText(ImVec2(p0.x, y2 + fs * 1.2f), ImGui::GetColorU32(ImGuiCol_Text), head2);
  }
  const ImVec2 b0(p0.x, y2 + head_h), b1(p0.x + avail.x, p0.y + total_h);
  if (ps.backward) DrawBackwardBars(dl, b0, b1, ps);
  else DrawTechniqueBars(dl, b0, b1, ps);
  ImGui::Dummy(ImVec2(avail.x, total_h));
  if (short_panel) {
    describe();
    intro();
  }
}

}  // namespace flashstep::gui
