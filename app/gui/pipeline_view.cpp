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

// Text on the chart at `at`, measured against [x0, x1] (its column, or the view): how far it runs
// past either end is kept in `clip` where larger (0 or less: within).
void ChartText(ImDrawList* dl, ImVec2 at, ImU32 col, const char* text, float x0, float x1, float& clip,
               const char* end = nullptr) {
  clip = std::max({clip, at.x + ImGui::CalcTextSize(text, end).x - x1, x0 - at.x});
  dl->AddText(at, col, text, end);
}

// Where `text` is wider than `w` pixels: the start of its second line, after its last '-' or space
// up to which it fits ("softmax-under-" and "product" at font scale 2.5 in a 1024x768 window);
// nullptr where it fits on one line or has no such place.
const char* SecondLine(const char* text, float w) {
  if (ImGui::CalcTextSize(text).x <= w) return nullptr;
  const char* cut = nullptr;
  for (const char* q = text; *q; ++q)
    if ((*q == '-' || *q == ' ') && ImGui::CalcTextSize(text, q + 1).x <= w) cut = q + 1;
  return cut;
}

// The Gantt chart's lanes: each CTA's loads (and the backward's dQ adds), then each warpgroup's
// tensor cores and softmax.
struct Lane {
  int cta, wg;
  pipeline::Unit unit;
  char name[48];
  bool adds = false;
};

std::vector<Lane> GanttLanes(const PipelineState& ps) {
  // The backward's dQ adds ('A', the copy engine's, under the next Q block's loads) get a lane of
  // their own below the loads, so that neither hides the other.
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
  return lanes;
}

// The lanes' names take a column left of the bars as wide as the widest of them; where that
// column would take more than a third of the view (large text in a narrow panel: at font scale
// 2.5 in a 1024x768 window it was wider than the view), each name goes above its lane instead.
struct GanttLayout {
  float label_w = 0;
  bool stacked = false;
  float lane_h = 0;  // stacked: a name's line and the bars'
};

GanttLayout gantt_layout(const std::vector<Lane>& lanes, float width) {
  const float fs = ImGui::GetFontSize();
  GanttLayout g;
  for (const Lane& l : lanes) g.label_w = std::max(g.label_w, ImGui::CalcTextSize(l.name).x);
  g.label_w += fs * 0.5f;
  g.stacked = g.label_w > width / 3;
  if (g.stacked) g.label_w = 0, g.lane_h = fs * 2.4f;
  return g;
}

// Returns the narrowest gap between two neighbouring labels of the time axis, in pixels.
float DrawGantt(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const PipelineState& ps, const std::vector<Lane>& lanes,
                const GanttLayout& g, float& clip, float& bar_room) {
  const pipeline::Timeline& tl = ps.timeline;
  const float fs = ImGui::GetFontSize();
  const float label_w = g.label_w, axis_h = fs * 1.6f;
  const float lane_h = g.stacked ? g.lane_h : std::min(fs * 2.2f, (p1.y - p0.y - axis_h) / float(lanes.size()));
  const float x0 = p0.x + label_w, x1 = p1.x - fs;
  bar_room = std::min(bar_room, x1 - x0);
  const double t_end = std::max(1.0, tl.end_clk);
  auto X = [&](double t) { return x0 + float(t / t_end) * (x1 - x0); };
  for (size_t k = 0; k < lanes.size(); ++k) {
    const float y = p0.y + float(k) * lane_h;
    // The bars' band: the lane's middle, or (stacked) under its name.
    const float top = g.stacked ? y + fs * 1.15f : y + lane_h * 0.18f, bottom = g.stacked ? y + lane_h - 2 : y + lane_h * 0.82f;
    dl->AddRectFilled(ImVec2(x0, g.stacked ? top - 2 : y + 1), ImVec2(x1, g.stacked ? bottom + 1 : y + lane_h - 1),
                      kLaneCols[k % 2]);
    ChartText(dl, ImVec2(p0.x, g.stacked ? y : y + (lane_h - fs) / 2), ImGui::GetColorU32(kDimText), lanes[k].name, p0.x,
              g.stacked ? p1.x : x0, clip);
    for (const pipeline::Segment& s : tl.segments) {
      if (s.cta != lanes[k].cta || s.unit != lanes[k].unit || (s.unit != pipeline::Unit::load && s.wg != lanes[k].wg))
        continue;
      if (ps.backward && s.unit == pipeline::Unit::load && (s.kind == 'A') != lanes[k].adds) continue;
      if (s.end <= s.start) continue;
      const ImVec2 a(X(s.start), top), b(std::max(X(s.end), X(s.start) + 1.0f), bottom);
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
  // The unit under the axis's end, shorter where in full it is wider than the view.
  char unit[64], unit_short[48], unit_least[32];
  std::snprintf(unit, sizeof unit, "clocks (%.2f us at 1.98 GHz)", t_end / 1980.0);
  std::snprintf(unit_short, sizeof unit_short, "clocks (%.2f us)", t_end / 1980.0);
  std::snprintf(unit_least, sizeof unit_least, "%.2f us", t_end / 1980.0);
  const char* shown = LongestFitting(x1 - p0.x, {unit, unit_short, unit_least});
  if (!*shown) shown = unit_least;
  ChartText(dl, ImVec2(std::max(p0.x, x1 - ImGui::CalcTextSize(shown).x), ya + 2 + fs), ImGui::GetColorU32(kDimText), shown,
            p0.x, p1.x, clip);
  return gap;
}

// Predicted (outline) and measured (filled) TFLOP/s of every technique, one row each: the
// name, the bars and the figures side by side, or (where they do not fit the width beside bars of
// six characters) on lines of their own, the figures on two where one is too narrow. Takes
// `room_h` where the rows fit in it, more where not; returns the height drawn.
float DrawTechniqueBars(ImDrawList* dl, ImVec2 p0, float width, float room_h, const PipelineState& ps, float& clip,
                        float& bar_room) {
  const float fs = ImGui::GetFontSize();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  auto figures = [](char* buf, size_t n, const PipelineState::Row& r, bool first_line, bool split) {
    if (split && first_line) std::snprintf(buf, n, "model %.0f,", r.predicted);
    else if (split) std::snprintf(buf, n, r.measured.found ? "measured %.0f" : "not measured", r.measured.value);
    else if (r.measured.found) std::snprintf(buf, n, "model %.0f, measured %.0f", r.predicted, r.measured.value);
    else std::snprintf(buf, n, "model %.0f, not measured", r.predicted);
    return buf;
  };
  char txt[128];
  float name_w = 0, figures_w = 0;
  for (const auto& r : ps.rows) {
    name_w = std::max(name_w, ImGui::CalcTextSize(r.kernel.key.c_str()).x);
    figures_w = std::max(figures_w, ImGui::CalcTextSize(figures(txt, sizeof txt, r, true, false)).x);
  }
  const float label_w = name_w + fs, p1x = p0.x + width;
  const bool stacked = label_w + figures_w + fs * 6.5f > width;
  const bool split = stacked && figures_w > width - 4;
  bool two_line_names = false;  // stacked: a name wider than the view takes two lines (all rows keep one height)
  for (const auto& r : ps.rows) two_line_names |= stacked && SecondLine(r.kernel.key.c_str(), width - 4) != nullptr;
  const float name_h = fs * (two_line_names ? 2.3f : 1.15f);
  const size_t n = std::max<size_t>(1, ps.rows.size());
  const float band = fs * 1.3f;  // stacked: the two bars' height
  const float row_h = stacked ? name_h + fs * (split ? 2.3f : 1.15f) + band + 4
                              : std::clamp((room_h - 2.5f * fs) / float(n), fs * 1.3f, fs * 2.4f);
  double top = 800;
  for (const auto& r : ps.rows) top = std::max({top, r.predicted, r.measured.value});
  for (const auto& m : ps.references) top = std::max(top, m.tflops);
  const float x0 = stacked ? p0.x + 4 : p0.x + label_w, x1 = stacked ? p1x - fs : p1x - figures_w - fs * 0.5f;
  bar_room = std::min(bar_room, x1 - x0);
  auto X = [&](double v) { return x0 + float(v / top) * (x1 - x0); };
  for (size_t k = 0; k < ps.rows.size(); ++k) {
    const auto& r = ps.rows[k];
    const float y = p0.y + float(k) * row_h;
    if (r.kernel.key == ps.technique) dl->AddRectFilled(ImVec2(p0.x, y), ImVec2(p1x, y + row_h - 2), kShownCol);
    const float name_y = stacked ? y : y + (row_h - fs) / 2;
    const char* name = r.kernel.key.c_str();
    const char* second = stacked ? SecondLine(name, width - 4) : nullptr;
    ChartText(dl, ImVec2(p0.x + 4, name_y), text_col, name, p0.x, stacked ? p1x : x0, clip, second);
    if (second) ChartText(dl, ImVec2(p0.x + 4, name_y + fs * 1.15f), text_col, second, p0.x, p1x, clip);
    const float by = stacked ? y + name_h : y + 1, h = stacked ? band / 2 : (row_h - 4) / 2;
    dl->AddRect(ImVec2(x0, by), ImVec2(X(r.predicted), by + h), kComputeCol, 0, 0, 2.0f);  // the theme's yellow
    if (r.measured.found) dl->AddRectFilled(ImVec2(x0, by + 1 + h), ImVec2(X(r.measured.value), by + 2 * h), kVisitedCol);
    if (!stacked) {
      ChartText(dl, ImVec2(x1 + 6, name_y), text_col, figures(txt, sizeof txt, r, true, false), x1, p1x, clip);
      continue;
    }
    const float fy = by + band + 2;
    ChartText(dl, ImVec2(p0.x + 4, fy), text_col, figures(txt, sizeof txt, r, true, split), p0.x, p1x, clip);
    if (split) ChartText(dl, ImVec2(p0.x + 4, fy + fs * 1.15f), text_col, figures(txt, sizeof txt, r, false, true), p0.x, p1x, clip);
  }
  // PyTorch's kernels measured in the same call: vertical lines across the rows, each named under
  // them, kept within the view.
  const float y_end = p0.y + float(ps.rows.size()) * row_h;
  for (size_t k = 0; k < ps.references.size(); ++k) {
    const auto& m = ps.references[k];
    const ImU32 col = kReferenceCols[k % 2];
    if (!stacked) dl->AddLine(ImVec2(X(m.tflops), p0.y), ImVec2(X(m.tflops), y_end), col, 2.0f);
    for (size_t r = 0; stacked && r < ps.rows.size(); ++r) {  // across each row's bars, not its text
      const float by = p0.y + float(r) * row_h + name_h;
      dl->AddLine(ImVec2(X(m.tflops), by - 2), ImVec2(X(m.tflops), by + band + 1), col, 2.0f);
    }
    // "PyTorch sdpa cudnn 566", or without "PyTorch " where that is wider than the view (the
    // heading says the lines are PyTorch's).
    std::snprintf(txt, sizeof txt, "%s %.0f", m.kernel.c_str(), m.tflops);
    if (ImGui::CalcTextSize(txt).x > width && m.kernel.rfind("PyTorch ", 0) == 0)
      std::snprintf(txt, sizeof txt, "%s %.0f", m.kernel.c_str() + 8, m.tflops);
    const float x = std::max(p0.x, std::min(X(m.tflops) + 3, p1x - ImGui::CalcTextSize(txt).x));
    ChartText(dl, ImVec2(x, y_end + 2 + float(k) * fs), col, txt, p0.x, p1x, clip);
  }
  return std::max(room_h, y_end - p0.y + 2 + float(ps.references.size()) * fs + fs * 0.5f);
}

// The backward's times of the whole problem (ms): each product's and unit's throughput bound,
// the model's prediction and the H200's measurement, one bar each.
constexpr size_t kBackwardBars = 12;  // DrawBackwardBars' rows
// Takes `room_h` where the rows fit in it, more where not; returns the height drawn.
float DrawBackwardBars(ImDrawList* dl, ImVec2 p0, float width, float room_h, const PipelineState& ps, float& clip,
                       float& bar_room) {
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
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  // Each name left of its bar where names, bars of four characters and the times fit the width;
  // else on a line of its own above its bar.
  float name_w = 0;
  for (const Bar& b : bars) name_w = std::max(name_w, ImGui::CalcTextSize(b.name).x);
  const float time_w = std::max(ImGui::CalcTextSize("not measured").x, ImGui::CalcTextSize("00.000 ms").x) + 6;
  const float label_w = name_w + fs, p1x = p0.x + width;
  const bool stacked = label_w + fs * 4 + time_w > width;
  const float bar_h = stacked ? fs * 1.2f : std::clamp(room_h / float(n), fs * 1.3f, fs * 1.7f);
  const float row_h = stacked ? fs * 1.15f + bar_h + 2 : bar_h;
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, b.ms);
  top = std::max(top, 1e-9);
  // Stacked, the bars take the whole width, and a time that does not fit after its bar is written
  // on the bar's end, in dark text on its light colour.
  const float x0 = stacked ? p0.x + 4 : p0.x + label_w, x1 = stacked ? p1x - 4 : p1x - time_w;
  bar_room = std::min(bar_room, x1 - x0);
  for (size_t k = 0; k < n; ++k) {
    const float y = p0.y + float(k) * row_h, by = stacked ? y + fs * 1.15f : y;
    ChartText(dl, ImVec2(p0.x + 4, stacked ? y : y + (bar_h - fs) / 2), text_col, bars[k].name, p0.x, stacked ? p1x : x0,
              clip);
    const float xe = x0 + float(bars[k].ms / top) * (x1 - x0);
    dl->AddRectFilled(ImVec2(x0, by + 2), ImVec2(std::max(xe, x0 + 1), by + bar_h - 2), bars[k].col);
    char txt[48];
    if (k + 1 == n && !ps.backward_measured.found) std::snprintf(txt, sizeof txt, "not measured");
    else std::snprintf(txt, sizeof txt, "%.3f ms", bars[k].ms);
    const float tw = ImGui::CalcTextSize(txt).x, ty = by + (bar_h - fs) / 2;
    if (std::max(xe, x0) + 6 + tw <= p1x || !stacked) ChartText(dl, ImVec2(std::max(xe, x0) + 6, ty), text_col, txt, p0.x, p1x, clip);
    else ChartText(dl, ImVec2(xe - tw - 4, ty), IM_COL32(10, 10, 14, 255), txt, x0, xe, clip);
  }
  return std::max(room_h, float(n) * row_h);
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
      if (WrappedRadioButton(key, ps.technique == row.kernel.key)) ps.technique = row.kernel.key, changed = true;
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
  // The chart takes what its lanes need (at most 58% of the height; with the names above the
  // lanes, all of it); the bars get the rest, and never less than a readable row each: where the
  // panel is shorter, the view scrolls.
  const std::vector<Lane> lanes = GanttLanes(ps);
  const GanttLayout g = gantt_layout(lanes, avail.x);
  const float gantt_h = g.stacked ? float(lanes.size()) * g.lane_h + fs * 2.8f
                                  : std::min(avail.y * 0.58f, float(lanes.size()) * fs0 * 2.2f + fs0 * 2.4f);
  float clip = 0, bar_room = avail.x;
  ps.axis_label_gap_px = DrawGantt(dl, p0, ImVec2(p0.x + avail.x, p0.y + gantt_h), ps, lanes, g, clip, bar_room);
  ps.lane_colours[0] = kLaneCols[0];
  ps.lane_colours[1] = kLaneCols[1];
  ImGui::Dummy(ImVec2(avail.x, gantt_h + fs * 0.8f - ImGui::GetStyle().ItemSpacing.y));
  // The heading of the bars: one line where it fits, else its two parts, each wrapped where wider
  // than the view.
  if (one_line) {
    char both[sizeof head + sizeof head2 + 1];
    std::snprintf(both, sizeof both, "%s %s", head, head2);
    TextWrappedAtSpaces(both);
  } else {
    TextWrappedAtSpaces(head);
    TextWrappedAtSpaces(head2);
  }
  const ImVec2 b0 = ImGui::GetCursorScreenPos();
  const float room_h = std::max(0.0f, p0.y + avail.y - b0.y);
  const float bars_h = ps.backward ? DrawBackwardBars(dl, b0, avail.x, room_h, ps, clip, bar_room)
                                   : DrawTechniqueBars(dl, b0, avail.x, room_h, ps, clip, bar_room);
  ImGui::Dummy(ImVec2(avail.x, bars_h));
  ps.chart_clip_px = clip;
  ps.chart_bar_room_px = bar_room;
  if (short_panel) {
    describe();
    intro();
  }
}

}  // namespace flashstep::gui
