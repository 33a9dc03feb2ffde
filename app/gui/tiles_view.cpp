// The tiles view: Q, K^T, V^T, the S / P~ tiles, O and the statistics (l, m for fa1, L for fa2)
// as tile grids, with the current step's reads, writes, resident blocks, skipped tiles and
// dropped entries outlined.
#include "app/gui/backward_state.h"
#include "app/gui/decode_state.h"
#include "app/gui/decode_view.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <imgui_internal.h>  // ImGuiWindow: the panel's visible bottom and scroll

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace flashstep::gui {

namespace {

enum class MatId { Q, K, V, S, P, O, l, m, L };

const ImU32 kSkipNowCol = IM_COL32(255, 95, 95, 255);  // the skip step's own outline
const ImU32 kDropCol = IM_COL32(255, 70, 200, 255);    // an entry of P~ dropped by dropout
const ImU32 kNegInfCol = IM_COL32(92, 77, 117, 255);   // shaders/heatmap.frag's kNegInf

// One matrix on screen. Displayed rows/cols are after the optional transpose.
struct Grid {
  MatId id;
  const char* label;
  Heatmap* map;
  ImVec2 p0;
  float cw = 1, ch = 1;
  int rows = 0, cols = 0;     // displayed
  bool transpose = false;
  int row_block = 0, col_block = 0;  // tile size in displayed rows / cols (0 = no tiling)
  const Mat* ready = nullptr;        // S / P~: Tr x Tc steps after which each tile exists
  const Mat* skipped = nullptr;      // S / P~: Tr x Tc, 1 where the tile is skipped (masked)
  ImVec2 p1() const { return ImVec2(p0.x + cw * float(cols), p0.y + ch * float(rows)); }
  ImVec2 at(float r, float c) const { return ImVec2(p0.x + c * cw, p0.y + r * ch); }
};

// Value of element (r, c) in matrix coordinates; NaN when it does not exist at this step.
float value_at(const AppState& s, MatId id, int64_t r, int64_t c) {
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float k = float(s.index());
  switch (id) {
    case MatId::Q: return v.fp8_stored[0].size() ? v.fp8_stored[0](r, c) : p.Q(r, c);  // fp8: as stored
    case MatId::K: return v.fp8_stored[1].size() ? v.fp8_stored[1](r, c) : p.K(r, c);
    case MatId::V: return v.fp8_stored[2].size() ? v.fp8_stored[2](r, c) : p.V(r, c);
    case MatId::S: return v.S.size() && v.s_ready(r / t.Br, c / t.Bc) <= k ? v.S(r, c) : nan;
    case MatId::P: return v.P.size() && v.p_ready(r / t.Br, c / t.Bc) <= k ? v.P(r, c) : nan;
    case MatId::O: return s.cursor->written(Tensor::O) ? s.cursor->hbm(Tensor::O)(r, c) : nan;
    case MatId::l: return s.cursor->written(Tensor::l) ? s.cursor->hbm(Tensor::l)(r, 0) : nan;
    case MatId::m: return s.cursor->written(Tensor::m) ? s.cursor->hbm(Tensor::m)(r, 0) : nan;
    case MatId::L: return s.cursor->written(Tensor::L) ? s.cursor->hbm(Tensor::L)(r, 0) : nan;
  }
  return nan;
}

// Whether a value is drawn light (so its number is written in dark text).
bool light_cell(MatId id, float x, const RunView& v) {
  if (!std::isfinite(x)) return false;
  switch (id) {
    case MatId::P: return x > 0.55f;
    case MatId::l: return x / v.max_l > 0.55f;
    case MatId::Q: case MatId::K: case MatId::V: return std::abs(x) / v.range_qkv < 0.6f;
    case MatId::S: return std::abs(x) / v.range_s < 0.6f;
    case MatId::O: return std::abs(x) / v.range_o < 0.6f;
    case MatId::m: return std::abs(x) / v.range_m < 0.6f;
    case MatId::L: return std::abs(x) / v.range_L < 0.6f;
  }
  return false;
}

// A band of displayed rows [r0, r1) or columns [c0, c1) of a grid, outlined.
void outline(ImDrawList* dl, const Grid& g, float r0, float r1, float c0, float c1, ImU32 col, float thick) {
  const ImVec2 a = g.at(r0, c0), b = g.at(r1, c1);
  dl->AddRect(ImVec2(a.x - thick * 0.5f, a.y - thick * 0.5f), ImVec2(b.x + thick * 0.5f, b.y + thick * 0.5f),
              col, 0.0f, 0, thick);
}

// Outline rows [row0, row0 + rows) in matrix coordinates (columns when transposed).
void outline_rows(ImDrawList* dl, const Grid& g, int64_t row0, int64_t rows, ImU32 col, float thick) {
  if (rows <= 0) return;
  if (g.transpose) outline(dl, g, 0, float(g.rows), float(row0), float(row0 + rows), col, thick);
  else outline(dl, g, float(row0), float(row0 + rows), 0, float(g.cols), col, thick);
}

// A skipped tile: a dark fill with diagonal hatching (when the tile is big enough to see it),
// unlike a tile that is merely not computed yet (an outline on the background).
void draw_skipped(ImDrawList* dl, ImVec2 a, ImVec2 b) {
  dl->AddRectFilled(a, b, kSkipFill);
  if (b.x - a.x < 8 || b.y - a.y < 8) return;
  const float step = 7.0f;
  // Lines x + y = c clipped to the rectangle.
  for (float c = a.x + a.y + step; c < b.x + b.y; c += step) {
    const float xa = std::max(a.x, c - b.y), xb = std::min(b.x, c - a.y);
    if (xa < xb) dl->AddLine(ImVec2(xa, c - xa), ImVec2(xb, c - xb), kSkipHatch, 1.0f);
  }
}

void draw_grid(ImDrawList* dl, const AppState& s, const Grid& g, ImFont* cell_font) {
  const RunView& v = *s.run;
  g.map->fit_to(float(g.cols) * g.cw, float(g.rows) * g.ch);  // colour no finer than drawn
  if (!g.map->valid()) {
    dl->AddRect(g.p0, g.p1(), kEmptyEdgeCol);
  } else if (!g.ready) {
    dl->AddImage(g.map->texture(), g.p0, g.p1());
  } else {
    // S / P~: only the tiles computed so far, each a piece of the texture; the rest stays the
    // panel's background (no overdraw, which is what a software rasteriser pays for).
    // One quad per run of consecutive computed tiles in a tile row (one per row for j-outer).
    const float k = float(s.index());
    const Mat& ready = *g.ready;
    const bool outlines = float(g.row_block) * g.ch >= 5.0f && float(g.col_block) * g.cw >= 5.0f;
    for (int64_t ti = 0; ti < ready.rows(); ++ti) {
      const float r0 = float(ti * g.row_block), r1 = std::min(r0 + float(g.row_block), float(g.rows));
      for (int64_t tj = 0; tj < ready.cols();) {
        const float c0 = float(tj * g.col_block);
        if (ready(ti, tj) <= k) {
          int64_t end = tj;
          while (end < ready.cols() && ready(ti, end) <= k) ++end;
          const float c1 = std::min(float(end * g.col_block), float(g.cols));
          dl->AddImage(g.map->texture(), g.at(r0, c0), g.at(r1, c1),
                       ImVec2(c0 / float(g.cols), r0 / float(g.rows)), ImVec2(c1 / float(g.cols), r1 / float(g.rows)));
          tj = end;
        } else {
          const ImVec2 a = g.at(r0, c0), b = g.at(r1, std::min(c0 + float(g.col_block), float(g.cols)));
          if (g.skipped && (*g.skipped)(ti, tj) != 0) draw_skipped(dl, a, b);
          else if (outlines) dl->AddRect(a, b, kEmptyEdgeCol);
          ++tj;
        }
      }
    }
  }
  // Tile boundaries, unless tiles are too thin to see between the lines (N = 3000, Br = 16).
  if (g.row_block > 0 && float(g.row_block) * g.ch >= 5.0f)
    for (int r = g.row_block; r < g.rows; r += g.row_block)
      dl->AddLine(g.at(float(r), 0), g.at(float(r), float(g.cols)), kGridCol, 1.0f);
  if (g.col_block > 0 && float(g.col_block) * g.cw >= 5.0f)
    for (int c = g.col_block; c < g.cols; c += g.col_block)
      dl->AddLine(g.at(0, float(c)), g.at(float(g.rows), float(c)), kGridCol, 1.0f);
  // Numbers in the cells when they fit (the tiny problem).
  const float px = cell_font ? cell_text_px(cell_font, g.cw, g.ch, 30.0f) : 0.0f, em = px / 13.0f;
  if (px > 0) {
    const int decimals = g.cw >= 46.0f * em ? 3 : g.cw >= 38.0f * em ? 2 : 1;
    char buf[24];
    for (int r = 0; r < g.rows; ++r)
      for (int c = 0; c < g.cols; ++c) {
        const int64_t mr = g.transpose ? c : r, mc = g.transpose ? r : c;
        const float x = value_at(s, g.id, mr, mc);
        if (std::isnan(x)) continue;
        if (g.id == MatId::P && std::isinf(x)) continue;  // masked: weight 0, drawn in the -inf colour
        fmt_value(buf, sizeof buf, x, decimals);
        const ImVec2 ts = cell_font->CalcTextSizeA(px, 1e9f, 0, buf);
        const ImVec2 a = g.at(float(r), float(c));
        dl->AddText(cell_font, px,
                    ImVec2(a.x + (g.cw - ts.x) * 0.5f, a.y + (g.ch - ts.y) * 0.5f),
                    light_cell(g.id, x, v) ? IM_COL32(20, 20, 25, 255) : IM_COL32(250, 250, 250, 255), buf);
      }
  }
  dl->AddRect(ImVec2(g.p0.x - 1, g.p0.y - 1), ImVec2(g.p1().x + 1, g.p1().y + 1), IM_COL32(110, 110, 120, 255));
}

// The dropped entries of the current P~ tile (1 kept, 0 dropped in `keep`, whose top-left
// element is (row0, col0)): a dark cell crossed in magenta, or a magenta fill when tiny.
void draw_dropped(ImDrawList* dl, const Grid& g, const Mat& keep, int64_t row0, int64_t col0) {
  for (int64_t r = 0; r < keep.rows(); ++r)
    for (int64_t c = 0; c < keep.cols(); ++c) {
      if (keep(r, c) != 0) continue;
      const ImVec2 a = g.at(float(row0 + r), float(col0 + c)), b = g.at(float(row0 + r + 1), float(col0 + c + 1));
      if (b.x - a.x < 6 || b.y - a.y < 6) {
        dl->AddRectFilled(a, b, kDropCol);
        continue;
      }
      dl->AddRectFilled(a, b, IM_COL32(18, 18, 22, 235));
      const float in = std::min(b.x - a.x, b.y - a.y) * 0.2f;
      dl->AddLine(ImVec2(a.x + in, a.y + in), ImVec2(b.x - in, b.y - in), kDropCol, 2.0f);
      dl->AddLine(ImVec2(a.x + in, b.y - in), ImVec2(b.x - in, a.y + in), kDropCol, 2.0f);
    }
}

// Tooltip for the element under the mouse.
// --dtype fp8: an input entry as it sits in HBM, its e4m3 code and value, its block's scale, and
// the input it came from (docs/fp8.md).
void fp8_entry_tooltip(const RunView& v, int which, int64_t r, int64_t c) {
  const float e = v.fp8_values[which](r, c), s = v.fp8_scale_of(which, r), x = v.fp8_inputs[which](r, c);
  const char* scale_name = which == 0 ? "s_Q" : which == 1 ? "s_K" : "s_V";
  ImGui::Text("in HBM: e4m3 0x%02X = %g, x %s %.4g = %.5g", unsigned(e4m3_code(e)), double(e), scale_name,
              double(s), double(e * s));
  ImGui::Text("input %s%.5g: rounding error %.3g", which < 2 && v.trace.problem.rotate ? "(rotated) " : "",
              double(x), double(e * s - x));
}

// The current step's FP8 arithmetic in one line: the scales it applied and its rounding error.
void fp8_step_text(const RunView& v, const Step* cur) {
  const Problem& p = v.trace.problem;
  char buf[256];
  if (cur && line_role(cur->line) == LineRole::scores && cur->fp8_scale_b > 0)
    std::snprintf(buf, sizeof buf, "e4m3: S_ij = (Q_i K_j^T) tau s_Q s_K with s_Q = %.4g, s_K = %.4g; largest error "
                  "against tau Q_i K_j^T of the unquantised inputs: %.3g",
                  double(cur->fp8_scale_a), double(cur->fp8_scale_b), cur->fp8_error);
  else if (cur && cur->fp8_scale_b > 0)
    std::snprintf(buf, sizeof buf, "e4m3: P~_ij rounded to e4m3 (scale 1), largest rounding error %.3g; "
                  "P~_ij V_j then times s_V = %.4g", cur->fp8_error, double(cur->fp8_scale_b));
  else
    std::snprintf(buf, sizeof buf, "fp8: Q, K, V shown as stored, e4m3 x %s scale%s; O in bf16. Hover a cell for "
                  "its code and scale.", fp8_scale_name(p.fp8_scale), p.rotate ? " (Q, K rotated first)" : "");
  DimText(buf);
}

void hover_grid(const AppState& s, const Grid& g) {
  if (!ImGui::IsWindowHovered()) return;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  if (mp.x < g.p0.x || mp.y < g.p0.y || mp.x >= g.p1().x || mp.y >= g.p1().y) return;
  const int r = std::clamp(int((mp.y - g.p0.y) / g.ch), 0, g.rows - 1);
  const int c = std::clamp(int((mp.x - g.p0.x) / g.cw), 0, g.cols - 1);
  const int64_t mr = g.transpose ? c : r, mc = g.transpose ? r : c;
  const Tiling& t = s.run->trace.tiling;
  const ScheduleInfo& info = schedule_info(s.run->schedule());
  const bool standard = !info.tiled;
  const float x = value_at(s, g.id, mr, mc);
  char val[32];
  fmt_value(val, sizeof val, x, 6);
  ImGui::BeginTooltip();
  switch (g.id) {
    case MatId::Q:
      ImGui::Text("Q[%lld, %lld] = %s   (block Q_i, i = %lld)", (long long)mr, (long long)mc, val, (long long)(mr / t.Br));
      if (s.run->fp8_values[0].size()) fp8_entry_tooltip(*s.run, 0, mr, mc);
      break;
    case MatId::K:
    case MatId::V:
      ImGui::Text("%s[%lld, %lld] = %s   (block %s_j, j = %lld)", g.id == MatId::K ? "K" : "V", (long long)mr,
                  (long long)mc, val, g.id == MatId::K ? "K" : "V", (long long)(mr / t.Bc));
      if (s.run->fp8_values[0].size()) fp8_entry_tooltip(*s.run, g.id == MatId::K ? 1 : 2, mr, mc);
      break;
    case MatId::S:
    case MatId::P: {
      const char* name = g.id == MatId::S ? "S" : standard ? "P" : "P~";
      const int64_t ti = mr / t.Br, tj = mc / t.Bc;
      if (std::isnan(x) && s.run->skipped(ti, tj) != 0)
        ImGui::Text("tile (i = %lld, j = %lld) is entirely masked: skipped, never loaded or computed",
                    (long long)ti, (long long)tj);
      else if (std::isnan(x))
        ImGui::Text("%s[%lld, %lld]: %s not computed yet", name, (long long)mr, (long long)mc,
                    standard ? "row block" : "tile");
      else if (std::isinf(x))
        ImGui::Text("%s[%lld, %lld]: masked (score -inf, weight 0)", name, (long long)mr, (long long)mc);
      else if (standard)
        ImGui::Text("%s[%lld, %lld] = %s in HBM   (row block i = %lld)", name, (long long)mr, (long long)mc, val,
                    (long long)ti);
      else
        ImGui::Text("%s[%lld, %lld] = %s   (tile i = %lld, j = %lld; on chip, never in HBM)", name, (long long)mr,
                    (long long)mc, val, (long long)ti, (long long)tj);
      break;
    }
    case MatId::O:
      if (std::isnan(x))
        ImGui::Text("O[%lld, %lld]: not in HBM yet%s", (long long)mr, (long long)mc,
                    // O_i accumulated on chip (FA2fwd L10) reaches HBM once, after the j loop
                    algorithm_has_role(*info.forward_lines, LineRole::accumulate_o)
                        ? " (FA2 writes O_i once, at L14; until then it is on chip)" : "");
      else
        ImGui::Text("O[%lld, %lld] = %s in HBM   (block O_i, i = %lld)", (long long)mr, (long long)mc, val,
                    (long long)(mr / t.Br));
      break;
    case MatId::l:
    case MatId::m:
    case MatId::L:
      ImGui::Text("%s[%lld] = %s in HBM   (block i = %lld)", g.id == MatId::l ? "l" : g.id == MatId::m ? "m" : "L = lse",
                  (long long)mr, val, (long long)(mr / t.Br));
      break;
  }
  ImGui::EndTooltip();
}

// Whether the score panel shows P~ (else S) when it follows the step: from the line that makes
// P~ on, while the step is still about this tile (a write after the j loop is not).
bool follow_shows_p(const ScheduleInfo& info, const Step& cur) {
  switch (line_role(cur.line)) {
    case LineRole::probabilities:
    case LineRole::merge_stats:
    case LineRole::online_softmax:
    case LineRole::accumulate_o: return true;
    case LineRole::write_o:
    case LineRole::write_stats: return cur.j >= 0 || !info.tiled;
    default: return false;
  }
}

}  // namespace

int64_t JLabelStride(const Tiling& t, float cs) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "j=%lld", (long long)(t.Tc - 1));
  const float widest_j = ImGui::CalcTextSize(buf).x + 4, block_w = float(t.Bc) * cs;
  return block_w > 0 ? std::max<int64_t>(1, int64_t(std::ceil(widest_j / block_w))) : t.Tc;
}

bool JLabelSpan(const Tiling& t, int64_t nk, int64_t j, int64_t stride, float x_s, float cs, float left, float* x_lo,
                float* x_hi) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "j=%lld", (long long)j);
  const float tw = ImGui::CalcTextSize(buf).x;
  const float x0 = x_s + float(j * t.Bc) * cs, wid = float(t.rows_in_kv_block(j, nk)) * cs;
  if (stride == 1 && wid >= tw + 4) *x_lo = x0 + wid * 0.5f - tw * 0.5f;
  else if (stride > 1 && (t.Tc - 1 - j) % stride == 0) *x_lo = std::max(left, x0 + wid - tw);
  else return false;
  *x_hi = *x_lo + tw;
  return true;
}

void DrawTilesView(AppState& s, GpuState& gs) {
  if (in_backward(s.run->trace, s.index())) return DrawBackwardView(s, gs);
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const ScheduleInfo& info = schedule_info(v.schedule());
  const bool standard = !info.tiled;
  const Step* cur = current_step(s);
  const float k = float(s.index());

  // S or P~: follow the step (P~ once it exists for the current tile), or fixed.
  bool show_p = s.sp_mode == SpMode::P;
  if (s.sp_mode == SpMode::follow && cur) show_p = follow_shows_p(info, *cur);
  // Each choice continues the line where it fits, else starts the next (at 1024x768 in
  // presentation mode "P~_ij" ran past the panel's edge).
  ImGui::TextUnformatted("Score tile:");
  int mode = int(s.sp_mode);
  const char* const choices[3] = {"follow the step", standard ? "S" : "S_ij", standard ? "P" : "P~_ij"};
  for (int c = 0; c < 3; ++c) {
    SameLineIfFits(choices[c]);
    ImGui::RadioButton(choices[c], &mode, c);
  }
  s.sp_mode = SpMode(mode);
  s.tiles_header_overflow_px = PanelOverflowPx();
  DimText(info.tiles_note);
  if (p.dtype == Dtype::fp8) fp8_step_text(v, cur);

  char Tr_label[32];  // the widest block label, "i=15" for Tr = 16
  std::snprintf(Tr_label, sizeof Tr_label, "i=%lld", (long long)(t.Tr - 1));
  // Statistics columns beside O as they stand in HBM: l and m (fa1), L (fa2), none (standard).
  // decode's lse^(s) is drawn with its partials (decode_view.cpp), not beside O.
  Tensor stats[2] = {};
  int n_stats = 0;
  for (Tensor x : info.stat_tensors)
    if (n_stats < 2 && x != Tensor::Lp) stats[n_stats++] = x;
  const float ns = float(n_stats);
  // Geometry: the sequence axes share one cell size cs; the d axis gets cd >= cs so that Q, O,
  // K^T and V^T stay readable when N >> d (N = 1024, d = 64).
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  // lab: a title's line above its grid, with room under it for the loaded-before dots (7 px).
  const float lab = ImGui::GetTextLineHeight() + 11, gap = 12, margin = ImGui::CalcTextSize(Tr_label).x + 12;
  // The legend: colour bars, then the keys (Swatch below), wrapped into as many rows as they need.
  const char* keys[11] = {"read from HBM", "written to HBM", "computed on chip", "in SRAM", "loaded before",
                          "not there yet", p.mask.any() ? "masked (-inf)" : "-inf", nullptr, nullptr, nullptr, nullptr};
  int n_keys = 7;
  if (v.skipped_tiles) {
    keys[n_keys++] = "skipped tile";
    keys[n_keys++] = "skipped by this step";
  }
  if (p.dropout > 0) keys[n_keys++] = "dropped (dropout)";
  float key_rows = has_partials(v.trace) ? 2 : 1, row_w = 0;  // decode: a row of split colours
  for (int e = 0; e < n_keys; ++e) {
    const float kw = ImGui::GetTextLineHeight() + 4 + ImGui::CalcTextSize(keys[e]).x + 12;
    if (row_w > 0 && row_w + kw > avail.x) {
      ++key_rows;
      row_w = 0;
    }
    row_w += kw;
  }
  // The colour bars: Q K V, then S or P~, then O, as many to a row as fit (large text wraps them).
  struct Bar {
    Heatmap* map;
    const char* name;
    char lo[32], hi[32];
    float bar_w, w;  // the bar, and the whole entry with its name and gap
  };
  const float em = ImGui::GetFontSize() / 15.0f;
  Bar bars[3] = {{&gs.legend_div, "Q K V", {}, {}, 0, 0},
                 {show_p ? &gs.legend_seq : &gs.legend_div, show_p ? (standard ? "P" : "P~") : "S", {}, {}, 0, 0},
                 {&gs.legend_div, "O", {}, {}, 0, 0}};
  const double ranges[3][2] = {{-double(v.range_qkv), double(v.range_qkv)},
                               {show_p ? 0.0 : -double(v.range_s), show_p ? 1.0 : double(v.range_s)},
                               {-double(v.range_o), double(v.range_o)}};
  float bar_rows = 1, bar_row_w = 0;
  for (int e = 0; e < 3; ++e) {
    Bar& b = bars[e];
    // Two digits; hundreds to tens of thousands in full ("270", not "2.7e+02"); "-" for the floor
    // of an empty range (a saved trace that notes no scores: max_abs's 1e-12).
    for (auto [x, buf] : {std::pair<double, char*>{ranges[e][0], b.lo}, {ranges[e][1], b.hi}}) {
      if (x != 0 && std::abs(x) <= 1e-11) std::snprintf(buf, sizeof b.lo, "-");
      else if (std::abs(x) >= 100 && std::abs(x) < 1e5) std::snprintf(buf, sizeof b.lo, "%.0f", x);
      else std::snprintf(buf, sizeof b.lo, "%.2g", x);
    }
    const float ends = ImGui::CalcTextSize(b.lo).x + ImGui::CalcTextSize(b.hi).x + 8 * em;  // labels must not meet
    b.bar_w = std::max(std::min(140.0f * em, avail.x * 0.16f), ends);
    b.w = ImGui::CalcTextSize(b.name).x + 6 + b.bar_w + 18 * em;
    if (bar_row_w > 0 && bar_row_w + b.w > avail.x) {
      ++bar_rows;
      bar_row_w = 0;
    }
    bar_row_w += b.w;
  }
  const bool legend = s.display.now.shows(kPanelLegend);
  const float bar_h = std::round(10 * em), bar_line = ImGui::GetTextLineHeightWithSpacing() * 1.6f;
  const float bars_h = legend ? bar_line * bar_rows : 0.0f;
  const float keys_h = legend ? ImGui::GetTextLineHeightWithSpacing() * (0.6f + key_rows) : 0.0f;
  // The colour bars, from the row at y down; returns where their lowest labels end.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto draw_bars = [&](float y) {
    float bx = origin.x, by = y, bottom = y;
    for (Bar& b : bars) {
      if (bx > origin.x && bx - origin.x + b.w > avail.x) {
        bx = origin.x;
        by += bar_line;
      }
      bottom = std::max(bottom, colorbar(dl, *b.map, ImVec2(bx, by), b.bar_w, bar_h, b.lo, b.hi, b.name));
      bx += b.w;
    }
    return bottom;
  };
  // The tiles get at least half their width in height: where the notes above and the legend below
  // leave less (a small window, large text, fp8's line of scales), the view scrolls rather than
  // shrink the tiles to nothing under their labels. Then the colour bars go above the tiles, where
  // a first look sees them whole (under the tiles the panel's edge cut their labels: dropout-bf16
  // at 1280x720 in presentation mode), unless the notes above leave them no room either; the keys
  // stay under the tiles. The choice is made with the panel scrolled to its top, so that it holds
  // while the user scrolls.
  const ImGuiWindow* win = ImGui::GetCurrentWindow();
  const float visible_bottom = win->InnerClipRect.Max.y, top_at_rest = origin.y + win->Scroll.y;
  const float W = avail.x - margin - (2 + ns) * gap;
  const bool bars_on_top = legend && avail.y - 4 * lab - gap - bars_h - keys_h < 0.5f * W &&
                           top_at_rest + bars_h <= visible_bottom;  // not where notes above fill the panel
  float bars_top = origin.y, bars_bottom = 0;
  if (bars_on_top) {
    bars_bottom = draw_bars(origin.y);
    origin.y += bars_h;
    avail.y -= bars_h;
  }
  const float legend_h = bars_on_top ? keys_h : bars_h + keys_h;
  const float H = std::max(avail.y - 4 * lab - gap - legend_h, 0.5f * W);
  const float nq = float(p.nq), nk = float(p.nk), d = float(p.d);
  float cs = std::min(W / (2 * d + nk + ns), H / (2 * d + nq));
  float cd = cs, cv = cs;  // cv: width of the l, m, L columns
  if (cs < 14) {
    cv = 14;
    cs = std::min((W - ns * cv) / (2 * d + nk), H / (2 * d + nq));
    cd = cs;
  }
  const float dmin = 0.12f * std::min(W, H);
  if (d * cs < dmin) {
    cd = dmin / d;
    cs = std::min((W - ns * cv - 2 * dmin) / nk, (H - 2 * dmin) / nq);
  }
  cs = std::clamp(cs, 0.05f, 64.0f);
  cd = std::clamp(cd, cs, 64.0f);
  if (cv < 14) cv = std::max(cs, 14.0f);
  cv = std::min(cv, 64.0f);

  // cr: a query row's height, cs but at least a visible band for all rows: decode's one query row
  // (Nq = 1 against 4096 keys, 0.08 px a key) drew Q, S, O and L as 1-px lines. The labels above
  // and V^T's title below move with it.
  const float cr = std::max(cs, std::round(0.8f * ImGui::GetFontSize()) / nq);
  s.tiles_cell_px = cs;
  s.tiles_rows_px = nq * cr;
  s.tiles_d_cell_px = cd;
  const float x_q = origin.x + margin, x_s = x_q + d * cd + gap, x_o = x_s + nk * cs + gap;
  const float x_l = x_o + d * cd + gap, x_m = x_l + cv + gap * 0.5f;
  const float y_k = origin.y + lab, y_s = y_k + d * cd + 2 * lab, y_v = y_s + nq * cr + gap + lab;

  const Mat* skipped = v.skipped_tiles ? &v.skipped : nullptr;
  Grid gq{MatId::Q, "Q", &gs.Q, ImVec2(x_q, y_s), cd, cr, int(p.nq), int(p.d), false, int(t.Br), 0};
  Grid gk{MatId::K, "K^T", &gs.K, ImVec2(x_s, y_k), cs, cd, int(p.d), int(p.nk), true, 0, int(t.Bc)};
  Grid gv{MatId::V, "V^T", &gs.V, ImVec2(x_s, y_v), cs, cd, int(p.d), int(p.nk), true, 0, int(t.Bc)};
  Grid gsp{show_p ? MatId::P : MatId::S, "", show_p ? &gs.P : &gs.S, ImVec2(x_s, y_s), cs, cr,
           int(p.nq), int(p.nk), false, int(t.Br), standard ? 0 : int(t.Bc), show_p ? &v.p_ready : &v.s_ready,
           skipped};
  if (standard) gsp.col_block = int(t.Bc);  // readiness is per row block; lines still at Bc
  Grid go{MatId::O, "O", &gs.O, ImVec2(x_o, y_s), cd, cr, int(p.nq), int(p.d), false, int(t.Br), 0};
  Grid gl{MatId::l, "l", &gs.l, ImVec2(x_l, y_s), cv, cr, int(p.nq), 1, false, int(t.Br), 0};
  Grid gm{MatId::m, "m", &gs.m, ImVec2(x_m, y_s), cv, cr, int(p.nq), 1, false, int(t.Br), 0};
  Grid gL{MatId::L, "L", &gs.L, ImVec2(x_l, y_s), cv, cr, int(p.nq), 1, false, int(t.Br), 0};

  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(kDimText);
  char buf[96];
  // K^T's and V^T's titles in the longest form that fits: K^T's to the panel's edge, V^T's before
  // decode's partials, drawn on its row under O.
  char mid[64], brief[16];
  auto kv_title = [&](const char* name, float w) {
    std::snprintf(buf, sizeof buf, "%s (d x Nk = %lld x %lld), HBM", name, (long long)p.d, (long long)p.nk);
    std::snprintf(mid, sizeof mid, "%s (%lld x %lld), HBM", name, (long long)p.d, (long long)p.nk);
    std::snprintf(brief, sizeof brief, "%s, HBM", name);
    return LongestFitting(w, {buf, mid, brief, name});
  };
  dl->AddText(ImVec2(x_s, y_k - lab), text, kv_title("K^T", origin.x + avail.x - x_s));
  std::snprintf(buf, sizeof buf, "Q (%lld x %lld), HBM", (long long)p.nq, (long long)p.d);
  dl->AddText(ImVec2(x_q, y_s - lab), text, p.d * cd > ImGui::CalcTextSize(buf).x ? buf : "Q");
  // The score label in the longest form that fits above S.
  if (standard)
    std::snprintf(buf, sizeof buf, "%s (%lld x %lld), in HBM", show_p ? "P = softmax(S)" : "S = tau Q K^T",
                  (long long)p.nq, (long long)p.nk);
  else
    std::snprintf(buf, sizeof buf, "%s tiles (%lld x %lld), on chip only",
                  !show_p ? "S_ij = tau Q_i K_j^T"
                  : algorithm_has_role(*info.forward_lines, LineRole::online_softmax) ? "P~_ij = exp(S_ij - m_i)"
                                                                                       : "P~_ij = exp(S_ij - m~_ij)",
                  (long long)p.nq, (long long)p.nk);
  if (ImGui::CalcTextSize(buf).x > nk * cs + gap * 0.5f) {
    if (standard) std::snprintf(buf, sizeof buf, "%s, HBM", show_p ? "P" : "S");
    else std::snprintf(buf, sizeof buf, "%s tiles, on chip", show_p ? "P~_ij" : "S_ij");
  }
  if (ImGui::CalcTextSize(buf).x > nk * cs + gap * 0.5f)  // large text: the name alone
    std::snprintf(buf, sizeof buf, "%s", standard ? (show_p ? "P" : "S") : show_p ? "P~_ij" : "S_ij");
  dl->AddText(ImVec2(x_s, y_s - lab), text, buf);
  std::snprintf(buf, sizeof buf, "O (%lld x %lld), HBM", (long long)p.nq, (long long)p.d);
  dl->AddText(ImVec2(x_o, y_s - lab), text, p.d * cd > ImGui::CalcTextSize(buf).x ? buf : "O");
  const float stat_x[2] = {x_l, x_m};
  for (int e = 0; e < n_stats && e < 2; ++e) dl->AddText(ImVec2(stat_x[e], y_s - lab), text, tensor_name(stats[size_t(e)]));
  // decode's partials put O^(s)'s label at x_o and lse^(s)'s at DecodeLseLabelX.
  const float right = origin.x + avail.x;
  const float v_end = has_partials(v.trace) ? std::min(x_o, DecodeLseLabelX(x_l, right)) - 6 : right;
  dl->AddText(ImVec2(x_s, y_v - lab), text, kv_title("V^T", v_end - x_s));

  ImFont* cell_font = gs.mono;
  const Grid* grids[8] = {&gq, &gk, &gv, &gsp, &go, nullptr, nullptr, nullptr};
  for (int e = 0; e < n_stats && e < 2; ++e)  // the statistics' grids: l, m or L (its values in gL)
    grids[5 + e] = stats[size_t(e)] == Tensor::L ? &gL : stats[size_t(e)] == Tensor::m ? &gm : &gl;
  for (const Grid* g : grids)
    if (g) draw_grid(dl, s, *g, cell_font);
  if (!v.S.size()) {
    dl->AddText(ImVec2(x_s + 8, y_s + 8), text, "(too large to display)");
  }
  // For --dump-state: the gap from O^(s)'s column to lse^(s)'s as drawn (below 0: they overlap).
  const float lse_drawn = DrawDecodeTiles(s, {x_s, y_k, d * cd, y_s, nq * cr, y_v, cs, x_o, d * cd, x_l, cv, lab, origin.x + avail.x, origin.x});
  s.decode_lse_gap_px = has_partials(v.trace) ? lse_drawn - (x_o + d * cd) : 0.0f;
  // And from the rows' bottom (decode's split band under the scores included) to V^T's title.
  s.tiles_rows_label_gap_px = (y_v - lab) - (y_s + nq * cr + (has_partials(v.trace) ? 5.0f : 0.0f));

  // Block labels and visited marks: a green dot beside a block already loaded once.
  const float dot = 3.5f;
  for (int64_t i = 0; i < t.Tr; ++i) {
    const float y0 = y_s + float(i * t.Br) * cr, hgt = float(t.rows_in_q_block(i, p.nq)) * cr;
    if (hgt >= ImGui::GetTextLineHeight()) {
      std::snprintf(buf, sizeof buf, "i=%lld", (long long)i);
      dl->AddText(ImVec2(origin.x, y0 + hgt * 0.5f - ImGui::GetTextLineHeight() * 0.5f), dim, buf);
    }
    const int64_t first = v.q_first_load[size_t(i)];
    if (first >= 0 && float(first) < k && hgt >= 2 * dot)
      dl->AddCircleFilled(ImVec2(x_q - 5, y0 + std::min(hgt * 0.5f, 8.0f)), dot, kVisitedCol);
  }
  // Every block's label where the widest ("j=Tc-1") fits a block; else every stride-th counted
  // back from the last, ending at its block's right edge (labelling each block whose label fitted
  // stopped at j=9 with Tc = 16).
  const int64_t j_stride = JLabelStride(t, cs);
  s.tiles_j_labels = 0;
  s.tiles_j_last_label = -1;
  s.tiles_j_stride = j_stride;
  auto labelled = [&](int64_t j) { ++s.tiles_j_labels, s.tiles_j_last_label = j; };
  for (int64_t j = 0; j < t.Tc; ++j) {
    const float x0 = x_s + float(j * t.Bc) * cs, wid = float(t.rows_in_kv_block(j, p.nk)) * cs;
    float lx = 0, rx = 0;
    if (JLabelSpan(t, p.nk, j, j_stride, x_s, cs, origin.x, &lx, &rx)) {
      std::snprintf(buf, sizeof buf, "j=%lld", (long long)j);
      dl->AddText(ImVec2(lx, y_k + d * cd + 1), dim, buf);
      labelled(j);
    }
    const int64_t first = v.kv_first_load[size_t(j)];
    if (first >= 0 && float(first) < k && wid >= 2 * dot)
      dl->AddCircleFilled(ImVec2(x0 + std::min(wid * 0.5f, 8.0f), y_k - 5), dot, kVisitedCol);
  }

  // The current step: SRAM-resident blocks (thin white), reads (blue), writes (orange), the
  // tile computed on chip (yellow), a skipped tile (red).
  const bool dropout_now = [&] {
    if (!cur || cur->i < 0 || p.dropout <= 0 || !show_p) return false;
    const int64_t j = standard ? 0 : cur->j;
    if (j < 0) return false;
    const int64_t ks = v.keep_step[size_t(cur->i * t.Tc + j)];
    return ks >= 0 && float(ks) < k;
  }();
  if (cur) {
    const auto& se = cur->sram_elems;
    const int64_t r0 = cur->i >= 0 ? cur->i * t.Br : 0, rows = cur->i >= 0 ? t.rows_in_q_block(cur->i, p.nq) : 0;
    // K and V blocks: block j, or all of K / V in Algorithm 0 (loaded whole at its first row block).
    const int64_t c0 = cur->j >= 0 ? cur->j * t.Bc : 0;
    const int64_t cols = cur->j >= 0 ? t.rows_in_kv_block(cur->j, p.nk) : p.nk;
    if (cur->i >= 0 && se[int(Slot::Qi)] > 0) outline_rows(dl, gq, r0, rows, kResidentCol, 1.5f);
    if (cur->i >= 0 && se[int(Slot::Oi)] > 0) outline_rows(dl, go, r0, rows, kResidentCol, 1.5f);
    if (se[int(Slot::Kj)] > 0) outline_rows(dl, gk, c0, cols, kResidentCol, 1.5f);
    if (se[int(Slot::Vj)] > 0) outline_rows(dl, gv, c0, cols, kResidentCol, 1.5f);
    if (cur->i >= 0) {
      if (tensor_read_now(s, Tensor::Q)) outline_rows(dl, gq, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::O)) outline_rows(dl, go, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::l)) outline_rows(dl, gl, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::m)) outline_rows(dl, gm, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::S) || tensor_read_now(s, Tensor::P)) outline_rows(dl, gsp, r0, rows, kReadCol, 3.0f);
    }
    if (tensor_read_now(s, Tensor::K)) outline_rows(dl, gk, c0, cols, kReadCol, 3.0f);
    if (tensor_read_now(s, Tensor::V)) outline_rows(dl, gv, c0, cols, kReadCol, 3.0f);
    const LineRole role = line_role(cur->line);
    const bool skip = role == LineRole::skip;
    if (skip && cur->j >= 0) {  // the skipped tile, or (fa1, i out of scope) the whole column j
      const float a0 = cur->i >= 0 ? float(r0) : 0, a1 = cur->i >= 0 ? float(r0 + rows) : nq;
      outline(dl, gsp, a0, a1, float(c0), float(c0 + cols), kSkipNowCol, 3.0f);
    } else if (!standard && cur->i >= 0 && cur->j >= 0) {
      const bool computing = role == LineRole::scores || role == LineRole::probabilities ||
                             role == LineRole::online_softmax || role == LineRole::accumulate_o;
      outline(dl, gsp, float(r0), float(r0 + rows), float(c0), float(c0 + cols),
              computing ? kComputeCol : kResidentCol, computing ? 3.0f : 1.5f);
    }
    if (dropout_now) {
      const int64_t j = standard ? 0 : cur->j;
      const Mat& keep = v.trace.steps[size_t(v.keep_step[size_t(cur->i * t.Tc + j)])].dropout_keep;
      draw_dropped(dl, gsp, keep, r0, standard ? 0 : c0);
    }
    for (const HbmWrite& w : cur->writes) {
      const Grid* g = w.tensor == Tensor::O ? &go : w.tensor == Tensor::l ? &gl : w.tensor == Tensor::m ? &gm
                    : w.tensor == Tensor::L ? &gL : (w.tensor == Tensor::S || w.tensor == Tensor::P) ? &gsp : nullptr;
      if (g) outline_rows(dl, *g, w.row0, w.data.rows(), kWriteCol, 3.0f);
    }
  }
  for (const Grid* g : grids)
    if (g) hover_grid(s, *g);

  // Legend.
  const float ly = y_v + d * cd + gap;
  if (!legend) {
    s.tiles_bar_cut_px = 0;
    ImGui::SetCursorScreenPos(ImVec2(origin.x, ly));
    ImGui::Dummy(ImVec2(0, 0));
    return;
  }
  if (!bars_on_top) {
    bars_top = ly;
    bars_bottom = draw_bars(ly);
  }
  // For --dump-state: how much of the bars the panel's bottom edge cuts off (0: all of them in
  // view, or all below it).
  s.tiles_bar_cut_px = bars_top < visible_bottom ? std::max(0.0f, bars_bottom - visible_bottom) : 0.0f;
  ImGui::SetCursorScreenPos(ImVec2(origin.x, bars_on_top ? ly : ly + bars_h));
  const ImU32 key_cols[11] = {kReadCol, kWriteCol, kComputeCol, kResidentCol, kVisitedCol, kEmptyEdgeCol, kNegInfCol,
                              v.skipped_tiles ? kSkipHatch : kDropCol, kSkipNowCol, kDropCol, kDropCol};
  const bool key_outline[11] = {true, true, true, true, false, true, false, false, true, false, false};
  for (int e = 0; e < n_keys; ++e) Swatch(key_cols[e], key_outline[e], keys[e], e > 0);
  DrawSplitLegend(s);
}

}  // namespace flashstep::gui
