// The online-softmax panel: m_i, l_i and the rescale factors of the current block's rows, and a
// plot of one row's m_i, l_i after each merge over j.
#include "app/gui/decode_view.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

void DrawSoftmaxPanel(AppState& s, const Layout& l) {
  if (s.row) return DrawRowSoftmaxPanel(s, l);
  if (!BeginPanel("Online softmax state", l.softmax_pos, l.softmax_size, s)) return;
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const Step* cur = current_step(s);
  const int64_t k = int64_t(s.index());
  char b1[48], b2[32], b3[48];
  const ScheduleInfo& info = schedule_info(v.schedule());
  // FlashAttention-2 exponentiates against the running max and merges in one line (FA2fwd L9);
  // Algorithm 1 takes the tile's own statistics first (L10) and merges them next (L11).
  const bool fa2 = algorithm_has_role(*info.forward_lines, LineRole::online_softmax);
  // The line that merges m_i, l_i, from the schedule's table ("Alg1 L11", "FA2fwd L9").
  // And the line that divides O_i by l_i ("FA2fwd L12", decode's "FD L11").
  // And Algorithm 1's line that takes the tile's own statistics ("Alg1 L10"). The notes below
  // name these labels, not line numbers: decode merges at FD L8, where "line 9" was written.
  const char* merge_label = "the merge";
  const char* normalise_label = "the end";
  const char* tilde_label = "the tile's statistics";
  for (size_t q = 0; q < info.forward_lines->n_lines; ++q) {
    const LineInfo& li = info.forward_lines->lines[q];
    if (li.role == (fa2 ? LineRole::online_softmax : LineRole::merge_stats)) merge_label = li.label;
    if (li.role == LineRole::normalise) normalise_label = li.label;
    if (li.role == LineRole::probabilities) tilde_label = li.label;
  }
  s.softmax_note[0] = '\0';  // for --dump-state: the note on what this (i, j) has not done yet

  if (!info.tiled) {
    static const std::string text = [] {  // made once: an idle frame allocates nothing
      std::string tiled;                     // "fa1 or fa2"
      for (const ScheduleInfo* si : schedules())
        if (si->tiled) tiled += std::string(tiled.empty() ? "" : " or ") + si->name;
      return "Algorithm 0 takes the softmax of whole rows of S at line 2 (max, exp, sum, divide): "
             "there are no running statistics to merge. Switch the schedule to " + tiled + " to see them.";
    }();
    DimText(text.c_str());
    ImGui::End();
    return;
  }
  if (cur && is_backward_line(cur->line))
    DimText(fa2 ? "Backward: nothing is merged; P_ij = exp(S_ij - L_i) from the forward's L. Below: the "
                  "forward's merges of this block."
                : "Backward: nothing is merged; P_ij is recomputed from the l_i, m_i the forward left in "
                  "HBM. Below: the forward's merges of this block.");
  if (!cur || cur->i < 0) {
    TextWrappedAtSpaces("No block i in scope at this line.");  // wrapped: cut at 1024x768 in presentation mode
  } else if (DrawCombineFactors(s)) {  // decode's combine: its rescale factors (decode_view.cpp)
  } else if (cur->j < 0) {
    TextWrappedF("Block i = %d: j not in scope.", cur->i);
    DimText(fa2 ? "After the j loop: O_i is divided by l_i once and L_i = m_i + log l_i; the plot below "
                  "shows how m_i and l_i got there."
                : "No block j in scope at this line.");
  } else {
    const int64_t i = cur->i, j = cur->j, r0 = i * t.Br;
    const int64_t s10 = v.tilde_step[size_t(i * t.Tc + j)], s11 = v.merge_step[size_t(i * t.Tc + j)];
    const Step* st10 = s10 >= 0 && s10 < k ? &v.trace.steps[size_t(s10)] : nullptr;
    const Step* st11 = s11 >= 0 && s11 < k ? &v.trace.steps[size_t(s11)] : nullptr;
    // Wrapped, with "j = 0" kept whole: at 1024x768 in presentation mode the line ran past the
    // panel's edge.
    char block[96], j_text[32];
    const int64_t last_row = r0 + t.rows_in_q_block(i, p.nq) - 1;
    if (last_row == r0) std::snprintf(block, sizeof block, "Block i = %lld (row %lld),", (long long)i, (long long)r0);
    else std::snprintf(block, sizeof block, "Block i = %lld (rows %lld-%lld),", (long long)i, (long long)r0, (long long)last_row);
    std::snprintf(j_text, sizeof j_text, "j = %lld", (long long)j);
    TextWrappedAtSpaces(block);
    SameLineIfWidthFits(ImGui::CalcTextSize(j_text).x);
    ImGui::TextUnformatted(j_text);
    if (fa2) {
      char text[128];
      std::snprintf(text, sizeof text, "a = e^(m_i^(j-1) - m_i^(j)); O_i and l_i stay unnormalised until %s", normalise_label);
      DimText(text);
    } else {
      DimText("rescale factors: a = e^(m_i - m_i^new), b = e^(m~_ij - m_i^new)");
    }
    const bool skipped = line_role(cur->line) == LineRole::skip;
    if (skipped && !(fa2 ? st11 : st10))
      std::snprintf(s.softmax_note, sizeof s.softmax_note, "This tile is skipped: m_i and l_i are unchanged.");
    else if (!fa2 && !st10)
      std::snprintf(s.softmax_note, sizeof s.softmax_note, "%s of this (i, j) has not run yet.", tilde_label);
    else if (!st11 && fa2)
      std::snprintf(s.softmax_note, sizeof s.softmax_note, "%s of this (i, j) has not run yet.", merge_label);
    else if (!st11)
      std::snprintf(s.softmax_note, sizeof s.softmax_note, "%s done: m~_ij, l~_ij known; %s merges them next.",
                    tilde_label, merge_label);
    if (s.softmax_note[0]) DimText(s.softmax_note);
    const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                               ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit;
    // The columns, each with the step that fills it; where all of them do not fit the panel, only
    // those known at this step (at Alg1 L10: m~_ij and l~_ij, which a question may ask for), not a
    // row of "-" that pushes them out of view.
    struct Col {
      const char* head;
      const Step* st;
      Vec Step::*field;
    };
    const Col all[] = {{fa2 ? "m_i^(j-1)" : "m_i", st11, &Step::m_old}, {fa2 ? "rowmax S" : "m~_ij", st10, &Step::m_tilde},
                       {fa2 ? "m_i^(j)" : "m_i^new", st11, &Step::m_new}, {fa2 ? "l_i^(j-1)" : "l_i", st11, &Step::l_old},
                       {"l~_ij", fa2 ? nullptr : st10, &Step::l_tilde}, {fa2 ? "l_i^(j)" : "l_i^new", st11, &Step::l_new},
                       {"a", st11, &Step::alpha}, {"b", fa2 ? nullptr : st11, &Step::beta}};
    const bool has[] = {true, true, true, true, !fa2, true, true, !fa2};
    const ImGuiStyle& sty = ImGui::GetStyle();
    float need = ImGui::CalcTextSize("row").x + 2 * sty.CellPadding.x + 1;
    for (size_t e = 0; e < 8; ++e)
      if (has[e]) need += std::max(ImGui::CalcTextSize(all[e].head).x, ImGui::CalcTextSize("-0.0000").x) + 2 * sty.CellPadding.x + 1;
    const bool compact = need > ImGui::GetContentRegionAvail().x && (st10 || st11);
    Col cols[8];
    int n = 0;
    for (size_t e = 0; e < 8; ++e)
      if (has[e] && (!compact || all[e].st)) cols[n++] = all[e];
    // One format per column, so that its digits line up ("0.343" stood over "0.3357" with %.4g):
    // three decimals where every value is at least 0.001 in magnitude (or 0), else three
    // significant digits in e-notation (a rescale factor of e^-30). The column's widest text is
    // that of its largest magnitude (with a sign where any value is negative), for the width.
    bool fixed[8];
    float width = ImGui::CalcTextSize("row").x + 2 * sty.CellPadding.x + 1;
    for (int e = 0; e < n; ++e) {
      fixed[e] = true;
      float largest = 0;
      bool negative = false;
      const Step* st = cols[e].st;
      for (int64_t r = 0; st && r < (st->*cols[e].field).size(); ++r) {
        const float v = (st->*cols[e].field)(r), x = std::fabs(v);
        if (!std::isfinite(x)) continue;
        if (x != 0 && (x < 1e-3f || x >= 1e6f)) fixed[e] = false;
        largest = std::max(largest, x);
        negative = negative || v < 0;
      }
      s.softmax_table_fixed[e] = fixed[e];
      char widest[32];
      std::snprintf(widest, sizeof widest, fixed[e] ? "%.3f" : "%.2e", double(negative ? -largest : largest));
      width += std::max(ImGui::CalcTextSize(cols[e].head).x, ImGui::CalcTextSize(widest).x) + 2 * sty.CellPadding.x + 1;
    }
    // As tall as its header and rows (and the sideways scrollbar where the columns are wider than
    // the panel), at most 45% of what is left but never less than the header and one whole row
    // (a short panel at 1280 x 720 cut the first row in half): the panel scrolls. A fixed three
    // lines left a blank row under a one-row block.
    const float row_h = ImGui::GetTextLineHeight() + 2 * sty.CellPadding.y;
    const float sideways = width > ImGui::GetContentRegionAvail().x ? sty.ScrollbarSize : 0.0f;
    const int64_t rows = t.rows_in_q_block(i, p.nq);
    const float table_h = std::max(std::min(row_h * float(rows + 1), ImGui::GetContentRegionAvail().y * 0.45f),
                                   row_h * 2) + sideways + 2;
    float last_row_bottom = 0;
    if (ImGui::BeginTable("stats", 1 + n, tf, ImVec2(0, table_h))) {
      ImGui::TableSetupScrollFreeze(1, 1);
      ImGui::TableSetupColumn("row");
      for (int e = 0; e < n; ++e) ImGui::TableSetupColumn(cols[e].head);
      s.softmax_table_columns = n;  // for --dump-state
      s.softmax_table_l_tilde = std::any_of(cols, cols + n, [](const Col& c) { return c.field == &Step::l_tilde; });
      ImGui::TableHeadersRow();
      for (int64_t r = 0; r < rows; ++r) {
        ImGui::TableNextRow();
        if (r0 + r == s.plot_row) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlightCol);
        ImGui::TableNextColumn();
        ImGui::Text("%lld", (long long)(r0 + r));
        for (int e = 0; e < n; ++e) {
          ImGui::TableNextColumn();
          const Step* st = cols[e].st;
          if (st && r < (st->*cols[e].field).size()) {
            const float x = (st->*cols[e].field)(r);
            if (std::isfinite(x)) ImGui::Text(fixed[e] ? "%.3f" : "%.2e", double(x));
            else ImGui::TextUnformatted(fmt_value(b1, sizeof b1, x));
          } else {
            ImGui::TextDisabled("-");
          }
        }
        last_row_bottom = ImGui::GetItemRectMax().y + sty.CellPadding.y;
      }
      // The sideways scrollbar as ImGui draws it (the estimate above only made room for it).
      const float scrollbar = ImGui::GetScrollMaxX() > 0 ? sty.ScrollbarSize : 0.0f;
      ImGui::EndTable();
      // The table's room under its last row, less the sideways scrollbar's (--dump-state).
      s.softmax_table_blank_px = ImGui::GetItemRectMax().y - 1 - scrollbar - last_row_bottom;
    }
  }

  // m_i and l_i of one row after each merge (Alg1 L11, FA2 L9) over j.
  // "follow" where the whole label is wider than the panel (font scale 2.5 at 1024x768: 14 px past its edge).
  ImGui::Checkbox(FitToggle({"follow block###follow", "follow###follow"}), &s.plot_follow);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The plotted row follows the current block");
  // The slider takes what is left of the line beside its label (at most 8 font sizes): at 1280x720
  // in presentation mode a fixed width pushed "row" under the scrollbar.
  const float label_w = ImGui::CalcTextSize("row").x + ImGui::GetStyle().ItemInnerSpacing.x, fs = ImGui::GetFontSize();
  if (LineRoomAfterItem() - label_w >= fs * 3) ImGui::SameLine();  // else too narrow beside the checkbox: its own line
  ImGui::SetNextItemWidth(std::clamp(ImGui::GetContentRegionAvail().x - label_w, fs * 3, fs * 8));
  if (ImGui::SliderInt("row", &s.plot_row, 0, int(p.nq) - 1)) s.plot_follow = false;
  s.plot_row = std::clamp(s.plot_row, 0, int(p.nq) - 1);
  const int64_t row = s.plot_row, bi = row / t.Br;
  int done = 0;
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t st = v.merge_step[size_t(bi * t.Tc + j)];
    if (st >= 0 && st < k) done = int(j + 1);
  }
  // Blocks j before the row's first kept key (skipped, or all masked for this row) leave m at
  // -inf, which a plot cannot scale: the curves start at the first finite m.
  int first = 0;
  while (first < done && !std::isfinite(v.m_series(row, first))) ++first;
  if (!v.any_merge) {  // a saved trace whose steps do not note m_new and l_new (a puzzle's, without m.note)
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("This run shows no merged m_i, l_i (%s with m_new and l_new): in a puzzle, m.note them.",
                        merge_label);
    ImGui::PopTextWrapPos();
  } else if (done == 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    TextWrappedF("Row %lld has not been merged yet (%s).", (long long)row, merge_label);  // wrapped: it was cut
    ImGui::PopStyleColor();
  } else if (first == done) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    TextWrappedF("Row %lld has kept no key so far: m = -inf, l = 0.", (long long)row);
    ImGui::PopStyleColor();
  } else {
    const float* ms = &v.m_series(row, first);
    const float* lsr = &v.l_series(row, first);
    const float w = ImGui::GetContentRegionAvail().x;
    const float h = std::max((ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2) * 0.5f, 30.0f);
    // ImGui writes the label over the plot's top edge; the curve's range is widened upwards so
    // that its highest point stays under the label (decode's saw-tooth m_i ran through "m_0 =").
    const float pad = ImGui::GetStyle().FramePadding.y, inner = h - 2 * pad, label_h = ImGui::GetFontSize() + 2;
    const float room = std::max(0.25f, 1.0f - label_h / std::max(inner, 1.0f));  // the curve's share of the height
    s.softmax_plot_label_clear_px = FLT_MAX;
    auto plot = [&](const char* id, const float* y, const char* label) {
      const int n = done - first;
      const float lo = *std::min_element(y, y + n), hi = *std::max_element(y, y + n);
      const float top = hi > lo ? lo + (hi - lo) / room : lo + 1;  // flat: ImGui draws it at the bottom
      ImGui::PlotLines(id, y, n, 0, label, lo, top, ImVec2(w, h));
      s.softmax_plot_label_clear_px = std::min(s.softmax_plot_label_clear_px, (1 - (hi - lo) / (top - lo)) * inner - label_h);
    };
    std::snprintf(b1, sizeof b1, "m_%lld = %s", (long long)row, fmt_value(b2, sizeof b2, ms[done - 1 - first], 4));
    plot("##m", ms, b1);
    std::snprintf(b3, sizeof b3, "l_%lld = %s", (long long)row, fmt_value(b2, sizeof b2, lsr[done - 1 - first], 4));
    plot("##l", lsr, b3);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    TextWrappedF("after each merge, j = %d .. %d of %lld", first, done - 1, (long long)t.Tc);  // wrapped: it was cut
    ImGui::PopStyleColor();
  }
  s.softmax_overflow_px = PanelOverflowPx();
  ImGui::End();
}

}  // namespace flashstep::gui
