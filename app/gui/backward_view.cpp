// The tiles view during the backward pass: Q, K, V, O, dO and the statistics as they stand in
// HBM, the gradients dQ, dK, dV in HBM (filled in as the steps write them), and what is on chip
// for the current (i, j): P_ij, dP_ij, dS_ij, D_i and the accumulators dV~_j, dK~_j (standard
// attention: P, dP, dS in HBM). Drawn cell by cell (no textures): the matrices are small, and a
// large one is sampled to at most kMaxCells rows and columns.
#include "app/gui/backward_state.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "core/schedule_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace flashstep::gui {

namespace {

constexpr int64_t kMaxCells = 96;  // displayed rows / columns per matrix at most

// Where a box's values come from: a matrix, a column vector, or nothing yet.
struct Src {
  const Mat* m = nullptr;
  const Vec* v = nullptr;
  int64_t rows() const { return m ? m->rows() : v ? v->size() : 0; }
  int64_t cols() const { return m ? m->cols() : v ? 1 : 0; }
  float at(int64_t r, int64_t c) const { return m ? (*m)(r, c) : (*v)(r); }
};

struct Box {
  const char* name = "";   // paper notation: "dQ", "dV~_j", ...
  const char* where = "";  // "HBM" or "on chip"
  Src src;
  int64_t rows = 0, cols = 0;  // of the whole matrix, even when not there yet
  int64_t block_rows = 0;      // row tiling (Br or Bc) for the block lines; 0 none
  ImVec2 p0;
  float cw = 1, ch = 1;
  int64_t sr = 1, sc = 1;      // sampling strides
  bool now = false;            // produced by the current step (outlined yellow)
  int64_t shown_rows() const { return (rows + sr - 1) / sr; }
  int64_t shown_cols() const { return (cols + sc - 1) / sc; }
  ImVec2 p1() const { return ImVec2(p0.x + cw * float(shown_cols()), p0.y + ch * float(shown_rows())); }
  float y_of(int64_t r) const { return p0.y + ch * float(std::min(rows, r) + sr - 1) / float(sr); }
};

Box box(const char* name, const char* where, Src src, int64_t rows, int64_t cols, int64_t block_rows) {
  Box b;
  b.name = name;
  b.where = where;
  b.src = src;
  b.rows = rows;
  b.cols = cols;
  b.block_rows = block_rows;
  b.sr = (rows + kMaxCells - 1) / kMaxCells;
  b.sc = (cols + kMaxCells - 1) / kMaxCells;
  return b;
}

float range_of(const Src& s) {
  float r = 1e-12f;
  for (int64_t i = 0; i < s.rows(); ++i)
    for (int64_t j = 0; j < s.cols(); ++j) {
      const float x = s.at(i, j);
      if (std::isfinite(x)) r = std::max(r, std::abs(x));
    }
  return r;
}

// Diverging colours on the dark background: blue below 0, red above, dark at 0.
ImU32 colour(float x, float range) {
  const float t = std::clamp(x / range, -1.0f, 1.0f);
  const float a = std::abs(t);
  const float r = t > 0 ? 40 + a * 200 : 40 + a * 30, g = t > 0 ? 40 + a * 60 : 40 + a * 110,
              b = t > 0 ? 48 + a * 10 : 48 + a * 200;
  return IM_COL32(int(r), int(g), int(b), 255);
}

void draw_box(ImDrawList* dl, const Box& b, ImFont* font) {
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  char label[64];
  std::snprintf(label, sizeof label, "%s, %s", b.name, b.where);
  const float lw = ImGui::CalcTextSize(label).x, bw = b.p1().x - b.p0.x;
  dl->AddText(ImVec2(b.p0.x, b.p0.y - ImGui::GetTextLineHeight() - 3), text, lw <= bw + 8 ? label : b.name);
  if (!b.src.m && !b.src.v) {
    dl->AddRect(b.p0, b.p1(), kEmptyEdgeCol);  // not there yet
    return;
  }
  const float range = range_of(b.src);
  const float px = font ? cell_text_px(font, b.cw, b.ch, 34.0f) : 0.0f, em = px / 13.0f;
  const bool numbers = px > 0 && b.sr == 1 && b.sc == 1;
  char buf[24];
  for (int64_t r = 0; r < b.shown_rows(); ++r)
    for (int64_t c = 0; c < b.shown_cols(); ++c) {
      const float x = b.src.at(r * b.sr, c * b.sc);
      const ImVec2 a(b.p0.x + float(c) * b.cw, b.p0.y + float(r) * b.ch), e(a.x + b.cw, a.y + b.ch);
      if (std::isnan(x)) continue;  // a row not written yet
      dl->AddRectFilled(a, e, colour(x, range));
      if (!numbers) continue;
      fmt_value(buf, sizeof buf, x, b.cw >= 44.0f * em ? 3 : 2);
      const ImVec2 ts = font->CalcTextSizeA(px, 1e9f, 0, buf);
      dl->AddText(font, px, ImVec2(a.x + (b.cw - ts.x) * 0.5f, a.y + (b.ch - ts.y) * 0.5f),
                  IM_COL32(250, 250, 250, 255), buf);
    }
  if (b.block_rows > 0 && float(b.block_rows) * b.ch / float(b.sr) >= 5.0f)
    for (int64_t r = b.block_rows; r < b.rows; r += b.block_rows)
      dl->AddLine(ImVec2(b.p0.x, b.y_of(r)), ImVec2(b.p1().x, b.y_of(r)), kGridCol, 1.0f);
  dl->AddRect(ImVec2(b.p0.x - 1, b.p0.y - 1), ImVec2(b.p1().x + 1, b.p1().y + 1), IM_COL32(110, 110, 120, 255));
  if (b.now) dl->AddRect(ImVec2(b.p0.x - 2, b.p0.y - 2), ImVec2(b.p1().x + 2, b.p1().y + 2), kComputeCol, 0, 0, 3.0f);
}

void outline_rows(ImDrawList* dl, const Box& b, int64_t r0, int64_t n, ImU32 col, float thick) {
  if (n <= 0) return;
  dl->AddRect(ImVec2(b.p0.x - thick * 0.5f, b.y_of(r0) - thick * 0.5f),
              ImVec2(b.p1().x + thick * 0.5f, b.y_of(r0 + n) + thick * 0.5f), col, 0, 0, thick);
}

void hover(const AppState& s, const Box& b) {
  if (!ImGui::IsWindowHovered() || (!b.src.m && !b.src.v)) return;
  const ImVec2 mp = ImGui::GetIO().MousePos, e = b.p1();
  if (mp.x < b.p0.x || mp.y < b.p0.y || mp.x >= e.x || mp.y >= e.y) return;
  const int64_t r = std::min(b.rows - 1, int64_t((mp.y - b.p0.y) / b.ch) * b.sr);
  const int64_t c = std::min(b.cols - 1, int64_t((mp.x - b.p0.x) / b.cw) * b.sc);
  char val[32];
  fmt_value(val, sizeof val, b.src.at(r, c), 6);
  const Step* cur = current_step(s);
  ImGui::BeginTooltip();
  if (std::strcmp(b.where, "HBM") == 0)
    ImGui::Text("%s[%lld, %lld] = %s in HBM%s", b.name, (long long)r, (long long)c, val,
                std::isnan(b.src.at(r, c)) ? " (not written yet)" : "");
  else
    ImGui::Text("%s[%lld, %lld] = %s on chip, tile (i = %d, j = %d); row and column within the tile",
                b.name, (long long)r, (long long)c, val, cur ? cur->i : -1, cur ? cur->j : -1);
  ImGui::EndTooltip();
}

// Which GPU kernel this backward corresponds to, and the command that runs it: every schedule's
// float32 kernel (gpu/backward.h); FlashAttention-2's also on tensor cores (gpu/fa2_bwd_tc.cu),
// the same j-outer, i-inner loop with P_ij and dS_ij rounded to 16 bits (--p-dtype emulates it).
void DrawGpuKernelNote(const ScheduleInfo& info) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "On the GPU: `flashstep gpu --backward --schedule %s` runs this loop in float32 "
                "(gpu/%s_backward.cu).", info.name, info.name);
  DimText(buf);
  if (info.id == kTensorCoreSchedule)
    DimText("On tensor cores: gpu/fa2_bwd_tc.cu, one thread block per K/V block j, keys as the MMA's rows, "
            "dQ added into float32 in HBM; `flashstep gpu --backward --tensor-cores --dtype bf16` (on an H100/H200 "
            "the wgmma default, 26 at d = 64 and 46 at d = 128, its dQ added by the bulk copy engine; elsewhere "
            "variant 2, mma.sync, with atomics); `flashstep verify --backward --tensor-cores` checks it against "
            "this engine with --p-dtype bf16.");
}

}  // namespace

void DrawBackwardView(AppState& s, GpuState& gs) {
  const RunView& v = *s.run;
  const Trace& tr = v.trace;
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const ScheduleInfo& info = schedule_info(v.schedule());
  const Cursor& cu = *s.cursor;
  const Step* cur = current_step(s);
  const BackwardChip chip = backward_chip(tr, s.index());
  DimText(info.backward_note);
  DrawGpuKernelNote(info);

  auto hbm = [&](Tensor x) { return cu.written(x) ? Src{&cu.hbm(x)} : Src{}; };
  auto tile = [](const Step* st) { return st && st->tile.size() ? Src{&st->tile} : Src{}; };
  const int64_t Br = t.Br, Bc = t.Bc;
  // Row 1 (HBM): the forward's inputs and outputs with dO; row 2: the gradients in HBM, then
  // the chip (standard attention: P, dP, dS in HBM).
  Box row1[7] = {box("Q", "HBM", Src{&p.Q}, p.nq, p.d, Br), box("K", "HBM", Src{&p.K}, p.nk, p.d, Bc),
                 box("V", "HBM", Src{&p.V}, p.nk, p.d, Bc), box("O", "HBM", hbm(Tensor::O), p.nq, p.d, Br),
                 box("dO", "HBM", Src{&tr.dO}, p.nq, p.d, Br), Box{}, Box{}};
  int n1 = 5;
  for (Tensor x : info.backward_stat_tensors)  // the statistics the backward reads: l, m (fa1); L, D (fa2)
    if (n1 < 7) row1[n1++] = box(tensor_name(x), "HBM", hbm(x), p.nq, 1, Br);
  Box row2[10] = {box("dQ", "HBM", hbm(Tensor::dQ), p.nq, p.d, Br), box("dK", "HBM", hbm(Tensor::dK), p.nk, p.d, Bc),
                  box("dV", "HBM", hbm(Tensor::dV), p.nk, p.d, Bc)};
  int n2 = 3;
  const int first_chip = n2;
  const int64_t bi = cur && cur->i >= 0 ? t.rows_in_q_block(cur->i, p.nq) : Br;
  const int64_t bj = cur && cur->j >= 0 ? t.rows_in_kv_block(cur->j, p.nk) : Bc;
  if (!info.tiled) {
    row2[n2++] = box("P", "HBM", hbm(Tensor::P), p.nq, p.nk, Br);
    row2[n2++] = box("dP", "HBM", hbm(Tensor::dP), p.nq, p.nk, Br);
    row2[n2++] = box("dS", "HBM", hbm(Tensor::dS), p.nq, p.nk, Br);
    row2[n2++] = box("D_i", "on chip", chip.D ? Src{nullptr, &chip.D->D_i} : Src{}, bi, 1, 0);
  } else {
    const Step* P = chip.Pd ? chip.Pd : chip.P;
    row2[n2++] = box(chip.Pd ? "P_ij^dropped" : "P_ij", "on chip", tile(P), bi, bj, 0);
    row2[n2++] = box("dP_ij", "on chip", tile(chip.dP), bi, bj, 0);
    row2[n2++] = box("dS_ij", "on chip", tile(chip.dS), bi, bj, 0);
    row2[n2++] = box("D_i", "on chip", chip.D ? Src{nullptr, &chip.D->D_i} : Src{}, bi, 1, 0);
    row2[n2++] = box("dV~_j", "on chip", tile(chip.dV), bj, p.d, 0);
    row2[n2++] = box("dK~_j", "on chip", tile(chip.dK), bj, p.d, 0);
    row2[first_chip].now = P && P == cur;
    row2[first_chip + 1].now = chip.dP && chip.dP == cur;
    row2[first_chip + 2].now = chip.dS && chip.dS == cur;
    row2[first_chip + 4].now = chip.dV && chip.dV == cur;
    row2[first_chip + 5].now = chip.dK && chip.dK == cur;
  }
  row2[first_chip + 3].now = chip.D && chip.D == cur;

  // Geometry: one column width and one row height for every box, to fit both rows.
  const ImVec2 origin = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float lab = ImGui::GetTextLineHeight() + 6, gap = 12;
  const bool legend = s.display.now.shows(kPanelLegend);
  const float legend_h = legend ? ImGui::GetTextLineHeightWithSpacing() * 3.2f : 0.0f;
  auto units = [](const Box* bs, int n, float* hu) {
    float w = 0;
    for (int e = 0; e < n; ++e) {
      w += float(bs[e].shown_cols());
      *hu = std::max(*hu, float(bs[e].shown_rows()));
    }
    return w;
  };
  // A row's width at column width w: each box, or its name where that is wider, then a gap;
  // `extra` is the wider gap between the gradients in HBM and the chip.
  auto extent = [&](const Box* bs, int n, float w, float extra) {
    float x = extra;
    for (int e = 0; e < n; ++e) x += std::max(float(bs[e].shown_cols()) * w, ImGui::CalcTextSize(bs[e].name).x) + gap;
    return x - gap;
  };
  const float room = avail.x - 2;
  // Row 2 holds the gradients in HBM and then the chip; where its names alone are wider than
  // the view (a projector's 1024 x 768), the chip's boxes take a third row.
  const bool split = extent(row2, n2, 1.0f, gap) > room;
  const int n2a = split ? first_chip : n2;  // the boxes on row 2
  // Where the chip's names alone are wider than the view too (font scale 2 at 1024 x 768: the
  // boxes shrank to 1 px slivers and "dK~_j" ran past the edge), its boxes from chip_break on
  // take a fourth row; chip_break = n2: none do.
  int chip_break = n2;
  if (split && extent(row2 + first_chip, n2 - first_chip, 1.0f, 0) > room) {
    chip_break = first_chip + 1;
    while (chip_break < n2 && extent(row2 + first_chip, chip_break + 1 - first_chip, 1.0f, 0) <= room) ++chip_break;
  }
  auto fits = [&](float w) {
    if (extent(row1, n1, w, 0) > room) return false;
    if (split)
      return extent(row2, n2a, w, 0) <= room && extent(row2 + first_chip, chip_break - first_chip, w, 0) <= room &&
             extent(row2 + chip_break, n2 - chip_break, w, 0) <= room;
    return extent(row2, n2, w, gap) <= room;
  };
  // The widest columns (up to 56 px) at which every row fits, found by halving.
  float cw = 56.0f;
  if (!fits(cw)) {
    float lo = 1.0f, hi = cw;
    for (int k = 0; k < 16; ++k) (fits(0.5f * (lo + hi)) ? lo : hi) = 0.5f * (lo + hi);
    cw = lo;
  }
  s.backward_col_px = cw;
  float hu1 = 1, hu2 = 1, hu3 = 0, hu4 = 0;
  units(row1, n1, &hu1);
  units(row2, n2a, &hu2);
  if (split) units(row2 + first_chip, chip_break - first_chip, &hu3);
  if (chip_break < n2) units(row2 + chip_break, n2 - chip_break, &hu4);
  const float rows_n = chip_break < n2 ? 4.0f : split ? 3.0f : 2.0f;
  // Rows fill the height left, but no flatter than 8 px (or the column width): below that the
  // view scrolls rather than draw the matrices as lines.
  const float ch = std::clamp((avail.y - 2 * rows_n * lab - (rows_n - 1) * gap - legend_h) / (hu1 + hu2 + hu3 + hu4),
                              std::min(cw, 8.0f), 32.0f);
  float x = origin.x + 2;
  const float y1 = origin.y + 2 * lab, y2 = y1 + hu1 * ch + gap + 2 * lab, y3 = y2 + hu2 * ch + gap + 2 * lab;
  const float y4 = y3 + hu3 * ch + gap + lab;  // the chip's second row: its names, no caption
  for (int e = 0; e < n1; ++e) {
    row1[e].p0 = ImVec2(x, y1);
    row1[e].cw = cw;
    row1[e].ch = ch;
    x = std::max(row1[e].p1().x, x + ImGui::CalcTextSize(row1[e].name).x) + gap;
  }
  // For --dump-state: how far the rows (boxes and the names over them) reach past the view.
  s.backward_overflow_px = x - gap - (origin.x + avail.x);
  x = origin.x + 2;
  float y = y2;
  for (int e = 0; e < n2; ++e) {
    if (e == first_chip) {  // HBM | chip
      s.backward_overflow_px = std::max(s.backward_overflow_px, x - gap - (origin.x + avail.x));
      if (split) {
        x = origin.x + 2;
        y = y3;
      } else {
        x += gap;
      }
    }
    if (e == chip_break) {
      s.backward_overflow_px = std::max(s.backward_overflow_px, x - gap - (origin.x + avail.x));
      x = origin.x + 2;
      y = y4;
    }
    row2[e].p0 = ImVec2(x, y);
    row2[e].cw = cw;
    row2[e].ch = ch;
    x = std::max(row2[e].p1().x, x + ImGui::CalcTextSize(row2[e].name).x) + gap;
  }
  s.backward_overflow_px = std::max(s.backward_overflow_px, x - gap - (origin.x + avail.x));

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 dim = ImGui::GetColorU32(kDimText);
  char buf[128];
  auto fitting = [&](const char* text, const char* shorter) {  // large text: the short form
    return ImGui::CalcTextSize(text).x <= avail.x ? text : shorter;
  };
  dl->AddText(ImVec2(origin.x, y1 - 2 * lab + 2), dim,
              fitting("HBM at this step: the inputs, O, dO and the statistics", "HBM at this step"));
  if (!info.tiled)
    std::snprintf(buf, sizeof buf, "HBM: the gradients, P, dP, dS  |  on chip: D_i of row block i = %d", cur ? cur->i : -1);
  else if (cur && cur->i >= 0)
    std::snprintf(buf, sizeof buf, "HBM: the gradients  |  on chip for (i = %d, j = %d)", cur->i, cur->j);
  else if (cur && cur->j >= 0)
    std::snprintf(buf, sizeof buf, "HBM: the gradients  |  on chip for j = %d (i not in scope)", cur->j);
  else
    std::snprintf(buf, sizeof buf, "HBM: the gradients  |  on chip (no loop variable in scope)");
  if (!split) {
    dl->AddText(ImVec2(origin.x, y2 - 2 * lab + 2), dim, fitting(buf, "HBM: the gradients | on chip"));
  } else {  // the same words over two rows: "HBM: the gradients ...", then what follows the "|"
    const char* bar = std::strstr(buf, "|  ");
    dl->AddText(ImVec2(origin.x, y2 - 2 * lab + 2), dim, buf, bar ? bar - 1 : nullptr);
    if (bar) dl->AddText(ImVec2(origin.x, y3 - 2 * lab + 2), dim, fitting(bar + 3, "on chip"));
  }
  for (int e = 0; e < n1; ++e) draw_box(dl, row1[e], gs.mono);
  for (int e = 0; e < n2; ++e) draw_box(dl, row2[e], gs.mono);

  // The current step: blocks in SRAM (white), read from HBM (blue), written to HBM (orange).
  const bool standard = !info.tiled;
  auto find = [&](Tensor x) -> const Box* {
    switch (x) {
      case Tensor::Q: return &row1[0];
      case Tensor::K: return &row1[1];
      case Tensor::V: return &row1[2];
      case Tensor::O: return &row1[3];
      case Tensor::dO: return &row1[4];
      case Tensor::l: case Tensor::L: return n1 > 5 ? &row1[5] : nullptr;
      case Tensor::m: case Tensor::D: return n1 > 6 ? &row1[6] : nullptr;
      case Tensor::dQ: return &row2[0];
      case Tensor::dK: return &row2[1];
      case Tensor::dV: return &row2[2];
      case Tensor::P: return standard ? &row2[first_chip] : nullptr;
      case Tensor::dP: return standard ? &row2[first_chip + 1] : nullptr;
      case Tensor::dS: return standard ? &row2[first_chip + 2] : nullptr;
      default: return nullptr;
    }
  };
  if (cur) {
    const auto& se = cur->sram_elems;
    const int64_t r0 = cur->i >= 0 ? cur->i * Br : 0, c0 = cur->j >= 0 ? cur->j * Bc : 0;
    auto resident = [&](Slot sl, Tensor x, int64_t row0, int64_t n) {
      const Box* b = find(x);
      if (b && se[int(sl)] > 0 && n > 0) outline_rows(dl, *b, row0, n, kResidentCol, 1.5f);
    };
    if (cur->i >= 0) {
      resident(Slot::Qi, Tensor::Q, r0, bi);
      resident(Slot::Oi, Tensor::O, r0, bi);
      resident(Slot::dOi, Tensor::dO, r0, bi);
      resident(Slot::dQi, Tensor::dQ, r0, bi);
    }
    if (cur->j >= 0) {
      resident(Slot::Kj, Tensor::K, c0, bj);
      resident(Slot::Vj, Tensor::V, c0, bj);
    }
    for (Tensor x : {Tensor::Q, Tensor::O, Tensor::dO, Tensor::dQ, Tensor::l, Tensor::m, Tensor::L, Tensor::D,
                     Tensor::P, Tensor::dP, Tensor::dS, Tensor::K, Tensor::V}) {
      const Box* b = find(x);
      if (!b || !tensor_read_now(s, x)) continue;
      const bool kv = x == Tensor::K || x == Tensor::V;
      if (kv && cur->j >= 0) outline_rows(dl, *b, c0, bj, kReadCol, 3.0f);
      else if (!kv && cur->i >= 0) outline_rows(dl, *b, r0, bi, kReadCol, 3.0f);
      else outline_rows(dl, *b, 0, b->rows, kReadCol, 3.0f);  // read whole (Algorithm 3, FA2b L4)
    }
    for (const HbmWrite& w : cur->writes)
      if (const Box* b = find(w.tensor)) outline_rows(dl, *b, w.row0, w.data.rows(), kWriteCol, 3.0f);
  }
  for (int e = 0; e < n1; ++e) hover(s, row1[e]);
  for (int e = 0; e < n2; ++e) hover(s, row2[e]);

  // Legend.
  const float ly = (chip_break < n2 ? y4 + hu4 * ch : split ? y3 + hu3 * ch : y2 + hu2 * ch) + gap;
  ImGui::SetCursorScreenPos(ImVec2(origin.x, ly));
  if (!legend) {
    ImGui::Dummy(ImVec2(0, 0));
    return;
  }
  Swatch(kReadCol, true, "read from HBM");
  Swatch(kWriteCol, true, "written to HBM", true);
  Swatch(kComputeCol, true, "computed by this step", true);
  Swatch(kResidentCol, true, "in SRAM", true);
  Swatch(kEmptyEdgeCol, true, "not there yet", true);
  Swatch(colour(-1, 1), false, "< 0", true);
  Swatch(colour(1, 1), false, "> 0 (each matrix to its own largest |x|)", true);
}

}  // namespace flashstep::gui
