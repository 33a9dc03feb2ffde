// The lesson view: the online softmax of one vector, block by block (core/lesson.h), beside the
// direct softmax; with a value vector V, the output O = sum softmax(x)_k v_k carried with the
// blocks (Algorithm 1's O update) beside the direct sum.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

namespace {

// Continues the line with an item `w` pixels wide where it fits, else leaves it for the next line.
void SameLineIfRoom(float w) {
  const float line_end = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (line_end - ImGui::GetItemRectMax().x - ImGui::GetStyle().ItemSpacing.x >= w) ImGui::SameLine();
}

// The block table's forms (DrawLessonView picks the first that fits): its column titles, then its
// cells, where the last form writes three digits and "old -> new" on two lines.
constexpr int kBlockForms = 3, kBlockColumns = 8;
const char* const kBlockTitles[kBlockForms][kBlockColumns] = {
    {"block", "x", "m~ (local max)", "l~ (local sum)", "m: old -> new", "l: old -> new", "e^(m_old - m_new)",
     "e^(m~ - m_new)"},
    {"#", "x", "m~", "l~", "m old->new", "l old->new", "e^(m-m_new)", "e^(m~-m_new)"},
    {"#", "x", "m~", "l~", "m", "l", "a", "b"}};

// Block k's cell in column c, written into buf: its number from 1, its values (six, then "..."),
// m~, l~, m and l old -> new, the rescale factors.
const char* block_cell(const Lesson& L, int k, int c, int form, char* buf, size_t n) {
  const LessonBlock& b = L.blocks[size_t(k)];
  const bool narrow = form == kBlockForms - 1;
  const char* num = narrow ? "%.3g" : "%.4g";
  char old_v[32];
  auto old_new = [&](double o, double x) {
    if (std::isinf(o)) std::snprintf(old_v, sizeof old_v, o < 0 ? "-inf" : "inf");
    else std::snprintf(old_v, sizeof old_v, num, o);
    const int w = std::snprintf(buf, n, narrow ? "%s\n-> " : "%s -> ", old_v);
    if (w > 0 && size_t(w) < n) std::snprintf(buf + w, n - size_t(w), num, x);
  };
  switch (c) {
    case 0: std::snprintf(buf, n, "%d", k + 1); break;
    case 1: {
      size_t used = 0;
      buf[0] = 0;
      for (size_t e = b.begin; e < b.end && e < b.begin + 6 && used < n; ++e) {
        const int w = std::snprintf(buf + used, n - used, e > b.begin ? " %.3g" : "%.3g", L.values[e]);
        if (w > 0) used += size_t(w);
      }
      if (b.end > b.begin + 6 && used < n) std::snprintf(buf + used, n - used, " ...");
      break;
    }
    case 2: std::snprintf(buf, n, num, b.local_max); break;
    case 3: std::snprintf(buf, n, num, b.local_sum); break;
    case 4: old_new(b.m_old, b.m_new); break;
    case 5: old_new(b.l_old, b.l_new); break;
    case 6: std::snprintf(buf, n, num, b.alpha); break;
    default: std::snprintf(buf, n, num, b.beta); break;
  }
  return buf;
}

// A block's row in the lesson's tables: highlighted when it is the last block merged, numbered from 1.
void BlockRow(int k, int shown) {
  ImGui::TableNextRow();
  if (k == shown - 1) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlightCol);
  ImGui::TableNextColumn();
  ImGui::Text("%d", k + 1);
}

}  // namespace

void DrawLessonView(AppState& s) {
  LessonState& ls = s.lesson;
  DimText("Softmax of a vector computed block by block: each block contributes its own max m~ and "
          "sum l~, and the running (m, l) is rescaled onto the new max when blocks merge. This is "
          "what every row of S goes through: lines 10 and 11 of Algorithm 1, line 9 of FlashAttention-2.");
  // The controls flow onto the next line where the view is narrow (a course page with a wide
  // text column, presentation mode's large text) rather than run past its edge.
  const float fs = ImGui::GetFontSize(), gap = ImGui::GetStyle().ItemSpacing.x;
  auto labelled = [&](float field_w, const char* label) { return field_w + gap + ImGui::CalcTextSize(label).x; };
  auto button_w = [&](const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2;
  };
  bool changed = false;
  // Each field beside its label where the line leaves it six font sizes, else the label above it
  // (FitLabel: at font scale 2.5 in a 1024x768 window "block size" and "V (optional)" were cut).
  const FittedLabel values = FitLabel("values", fs * 18, fs * 6);
  ImGui::SetNextItemWidth(values.width);
  changed |= ImGui::InputText(values.label, ls.values, sizeof ls.values);
  SameLineIfRoom(labelled(fs * 6, "block size"));
  const FittedLabel block = FitLabel("block size", fs * 6, fs * 6);
  ImGui::SetNextItemWidth(block.width);
  changed |= ImGui::InputInt(block.label, &ls.block);
  // As wide as the rest of a line leaves beside its label, at most 12 font sizes ("V (optional)"
  // ran past the panel at 1024x768 in presentation mode).
  const float v_w =
      std::clamp(ImGui::GetContentRegionAvail().x - gap - ImGui::CalcTextSize("V (optional)").x, fs * 6, fs * 12);
  SameLineIfRoom(labelled(v_w, "V (optional)"));
  const FittedLabel v_label = FitLabel("V (optional)", fs * 12, fs * 6);
  ImGui::SetNextItemWidth(v_label.width);
  changed |= ImGui::InputText(v_label.label, ls.v, sizeof ls.v);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("One value per entry of the values: the output O = sum softmax(x)_k v_k is carried block by "
                      "block with the same rescale as l (Algorithm 1, line 12).");
  if (changed) ls.recompute();
  if (!ls.error.empty()) ErrorText(ls.error + "  (showing the last valid lesson)");
  const Lesson& L = ls.lesson;
  const int nb = int(L.blocks.size());
  if (ImGui::Button("Reset##lesson")) ls.shown = 0;
  SameLineIfRoom(button_w("< Previous block"));
  if (ImGui::Button("< Previous block")) ls.shown = std::max(0, ls.shown - 1);
  SameLineIfRoom(button_w("Next block >"));
  if (ImGui::Button("Next block >")) ls.shown = std::min(nb, ls.shown + 1);
  SameLineIfRoom(button_w("All blocks"));
  if (ImGui::Button("All blocks")) ls.shown = nb;
  char merged[64];
  std::snprintf(merged, sizeof merged, "merged %d of %d blocks", ls.shown, nb);
  SameLineIfRoom(ImGui::CalcTextSize(merged).x);
  TextWrappedAtSpaces(merged);  // on its own line it can still be wider than the view (font scale 2.5)

  const bool with_v = !L.v.empty();
  if (ls.shown > 0 && ls.shown <= nb) {
    const LessonBlock& b = L.blocks[size_t(ls.shown - 1)];
    char text[768];
    int n = std::snprintf(text, sizeof text,
                          "Block %d (x[%zu..%zu]): local max m~ = %.4g, local sum l~ = sum e^(x - m~) = %.4g. "
                          "Merge: m = max(%.4g, %.4g) = %.4g;  l = e^(%.4g - %.4g) * %.4g + e^(%.4g - %.4g) * %.4g = %.4g.",
                          ls.shown, b.begin, b.end - 1, b.local_max, b.local_sum, b.m_old, b.local_max, b.m_new,
                          b.m_old, b.m_new, b.l_old, b.local_max, b.m_new, b.local_sum, b.l_new);
    if (with_v && n > 0 && size_t(n) < sizeof text)
      std::snprintf(text + n, sizeof text - size_t(n),
                    "  P~V = sum e^(x - m~) v = %.4g;  O = (l e^(m - m_new) O + e^(m~ - m_new) P~V) / l_new = "
                    "(%.4g * %.4g * %.4g + %.4g * %.4g) / %.4g = %.4g.",
                    b.local_pv, b.l_old, b.alpha, b.o_old, b.beta, b.local_pv, b.l_new, b.o_new);
    TextWrappedAtSpaces(text);
  } else {
    // Wrapped: at 1024x768 in presentation mode the line ran past the panel's edge.
    TextWrappedAtSpaces(with_v ? "Start: m = -inf, l = 0, O = 0 (nothing seen yet)."
                               : "Start: m = -inf, l = 0 (nothing seen yet).");
  }

  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  // The block table in the first of three forms whose columns all fit, measured over every block
  // (so that the form holds while the blocks are merged one by one): long titles; short ones (the
  // sentence above the table says what m~ and l~ are); in a narrow panel titles of a letter or two,
  // numbers in three digits and each "old -> new" on two lines (presentation mode at 1280x720
  // scrolled the rescale columns out of view). Only where not even that fits does it scroll.
  const float pad = ImGui::GetStyle().CellPadding.x * 2 + 1;
  char cell[96];
  int form = 0;
  bool fits = false;
  for (; form < kBlockForms; ++form) {
    float need = 2;  // the outer borders
    for (int c = 0; c < kBlockColumns; ++c) {
      float w = ImGui::CalcTextSize(kBlockTitles[form][c]).x;
      for (int k = 0; k < nb; ++k) w = std::max(w, ImGui::CalcTextSize(block_cell(L, k, c, form, cell, sizeof cell)).x);
      need += w + pad;
    }
    fits = need <= ImGui::GetContentRegionAvail().x;
    if (fits || form == kBlockForms - 1) break;
  }
  const char* const* titles = kBlockTitles[form];
  if (form == kBlockForms - 1) DimText("m and l: old, then -> new; a = e^(m_old - m_new), b = e^(m~ - m_new).");
  const int rows = std::min(ls.shown, nb);
  float rows_h = 0;
  for (int k = 0; k < rows; ++k) rows_h += ImGui::CalcTextSize(block_cell(L, k, 4, form, cell, sizeof cell)).y;
  rows_h += (ImGui::GetStyle().CellPadding.y * 2 + 1) * float(rows) + ImGui::GetFrameHeightWithSpacing() + 6;
  if (!fits) rows_h += ImGui::GetStyle().ScrollbarSize;  // the sideways scrollbar's
  float clip_px = 0, scroll_px = 0;
  // Sideways scrolling only where the form does not fit: a table that fits but may scroll kept
  // column widths from an earlier, wider form and showed a needless scrollbar (1280x720 in
  // presentation mode, no block merged yet).
  if (ImGui::BeginTable("blocks", kBlockColumns, fits ? tf : tf | ImGuiTableFlags_ScrollX, ImVec2(0, rows_h))) {
    for (int c = 0; c < kBlockColumns; ++c) ImGui::TableSetupColumn(titles[c]);
    ImGui::TableHeadersRow();
    for (int k = 0; k < rows; ++k) {
      BlockRow(k, ls.shown);  // the number's column
      for (int c = 1; c < kBlockColumns; ++c) {
        ImGui::TableNextColumn();
        clip_px = std::max(clip_px, TableCellText(block_cell(L, k, c, form, cell, sizeof cell)));
      }
    }
    if (!fits) scroll_px = ImGui::GetScrollMaxX();  // the table's own scrolling window (ScrollX)
    ImGui::EndTable();
  }
  ls.table_form = form;
  ls.table_clip_px = clip_px;
  ls.table_scroll_px = scroll_px;
  // With V, the output per merged block in a table of its own under the statistics (a ninth
  // column would not fit beside the course column); the line above the table has the update in full.
  if (with_v && ls.shown > 0) {
    const ImGuiTableFlags of = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
    if (ImGui::BeginTable("outputs", 3, of)) {
      ImGui::TableSetupColumn(form == 0 ? "block" : "#", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableSetupColumn(form == 0 ? "P~V = sum e^(x - m~) v (block's own)" : "P~V (block's own)");
      ImGui::TableSetupColumn("O: old -> new");
      ImGui::TableHeadersRow();
      for (int k = 0; k < std::min(ls.shown, nb); ++k) {
        const LessonBlock& b = L.blocks[size_t(k)];
        BlockRow(k, ls.shown);
        ImGui::TableNextColumn();
        ImGui::Text("%.4g", b.local_pv);
        ImGui::TableNextColumn();
        ImGui::Text("%.4g -> %.4g", b.o_old, b.o_new);
      }
      ImGui::EndTable();
    }
  }

  // Softmax so far (online, with the running m and l) beside the direct softmax.
  ImGui::Spacing();
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted("softmax(x): online with the running (m, l) so far, and direct in one pass");
  ImGui::PopTextWrapPos();
  const size_t seen = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].end : 0;
  const double m_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].m_new : 0;
  const double l_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].l_new : 1;
  const float row_h = ImGui::GetFrameHeightWithSpacing();
  const float fit = row_h * float(L.values.size() + 1) + 8;
  const float room = std::max(ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2, 120.0f);
  float k_w = ImGui::CalcTextSize("k").x, x_w = ImGui::CalcTextSize("x_k").x, v_w_col = ImGui::CalcTextSize("v_k").x;
  for (size_t e = 0; e < L.values.size(); ++e) {
    std::snprintf(cell, sizeof cell, "%zu", e);
    k_w = std::max(k_w, ImGui::CalcTextSize(cell).x);
    std::snprintf(cell, sizeof cell, "%.4g", L.values[e]);
    x_w = std::max(x_w, ImGui::CalcTextSize(cell).x);
    if (with_v) {
      std::snprintf(cell, sizeof cell, "%.4g", L.v[e]);
      v_w_col = std::max(v_w_col, ImGui::CalcTextSize(cell).x);
    }
  }
  const float table_w_beside = k_w + x_w + (with_v ? v_w_col + pad : 0) + 2 * pad + 2;
  if (ImGui::BeginTable("softmax", with_v ? 5 : 4, tf | ImGuiTableFlags_ScrollY, ImVec2(0, std::min(fit, room)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("k");
    ImGui::TableSetupColumn("x_k");
    if (with_v) ImGui::TableSetupColumn("v_k");
    // The two stretched columns' titles in full where both fit, else "online" and "direct" (the line
    // above says what they are; at 1024x768 in presentation mode ImGui cut them to "online e^(...").
    const bool long_titles = ImGui::GetContentRegionAvail().x >= table_w_beside + 2 * (ImGui::CalcTextSize("online e^(x_k - m) / l").x + pad);
    ImGui::TableSetupColumn(long_titles ? "online e^(x_k - m) / l" : "online", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn(long_titles ? "direct softmax" : "direct", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    char ov[48], dv[48];
    // A bar's value with as many decimals (6 down to 2) as its cell shows: at font scale 2.5 in a
    // 1024x768 window "0.032059" was cut to "32059", "not seen yet" to "not see".
    float softmax_clip = 0;
    const auto bar_text = [&softmax_clip](char* buf, size_t n, double x) {
      const float room = ImGui::GetContentRegionAvail().x - 2 * ImGui::GetStyle().FramePadding.x;
      for (int digits = 6; digits >= 2; --digits) {
        std::snprintf(buf, n, "%.*f", digits, x);
        if (ImGui::CalcTextSize(buf).x <= room) break;
      }
      softmax_clip = std::max(softmax_clip, ImGui::CalcTextSize(buf).x - room);
      return buf;
    };
    for (size_t e = 0; e < L.values.size(); ++e) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", e);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", L.values[e]);
      if (with_v) {
        ImGui::TableNextColumn();
        ImGui::Text("%.4g", L.v[e]);
      }
      ImGui::TableNextColumn();
      if (e < seen) {
        const double o = std::exp(L.values[e] - m_run) / l_run;
        ImGui::ProgressBar(float(o), ImVec2(-1, 0), bar_text(ov, sizeof ov, o));
      } else {
        const char* not_seen = LongestFitting(ImGui::GetContentRegionAvail().x, {"not seen yet", "not yet", "-"});
        ImGui::TextDisabled("%s", *not_seen ? not_seen : "-");
        softmax_clip = std::max(softmax_clip, ImGui::GetItemRectSize().x - ImGui::GetContentRegionAvail().x);
      }
      ImGui::TableNextColumn();
      ImGui::ProgressBar(float(L.direct[e]), ImVec2(-1, 0), bar_text(dv, sizeof dv, L.direct[e]));
    }
    ls.softmax_clip_px = softmax_clip;
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  if (ls.shown == nb && nb > 0) {
    ImGui::TextColored(kPassText, "All blocks merged: max |online - direct| = %.3g", L.max_diff);
    if (with_v)
      ImGui::TextColored(kPassText, "O = %.6g online, %.6g direct (sum of softmax(x)_k v_k)", L.blocks.back().o_new,
                         L.o_direct);
  } else {
    DimText("Until every block is merged, the online values are relative to the max seen so far.");
    if (with_v && ls.shown > 0 && ls.shown <= nb)
      ImGui::Text("O so far = %.6g: the mean of the v seen, weighted by e^(x - m) / l", L.blocks[size_t(ls.shown - 1)].o_new);
  }
  ImGui::PopTextWrapPos();
}

}  // namespace flashstep::gui
