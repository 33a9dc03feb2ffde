// The lesson view: the online softmax of one vector, block by block (core/lesson.h), beside the
// direct softmax.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

void DrawLessonView(AppState& s) {
  LessonState& ls = s.lesson;
  DimText("Softmax of a vector computed block by block: each block contributes its own max m~ and "
          "sum l~, and the running (m, l) is rescaled onto the new max when blocks merge. This is "
          "what every row of S goes through: lines 10 and 11 of Algorithm 1, line 9 of FlashAttention-2.");
  bool changed = false;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  changed |= ImGui::InputText("values", ls.values, sizeof ls.values);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  changed |= ImGui::InputInt("block size", &ls.block);
  if (changed) ls.recompute();
  if (!ls.error.empty()) ErrorText(ls.error + "  (showing the last valid lesson)");
  const Lesson& L = ls.lesson;
  const int nb = int(L.blocks.size());
  if (ImGui::Button("Reset##lesson")) ls.shown = 0;
  ImGui::SameLine();
  if (ImGui::Button("< Previous block")) ls.shown = std::max(0, ls.shown - 1);
  ImGui::SameLine();
  if (ImGui::Button("Next block >")) ls.shown = std::min(nb, ls.shown + 1);
  ImGui::SameLine();
  if (ImGui::Button("All blocks")) ls.shown = nb;
  ImGui::SameLine();
  ImGui::Text("merged %d of %d blocks", ls.shown, nb);

  if (ls.shown > 0 && ls.shown <= nb) {
    const LessonBlock& b = L.blocks[size_t(ls.shown - 1)];
    char text[512];
    std::snprintf(text, sizeof text,
                  "Block %d (x[%zu..%zu]): local max m~ = %.4g, local sum l~ = sum e^(x - m~) = %.4g. "
                  "Merge: m = max(%.4g, %.4g) = %.4g;  l = e^(%.4g - %.4g) * %.4g + e^(%.4g - %.4g) * %.4g = %.4g.",
                  ls.shown, b.begin, b.end - 1, b.local_max, b.local_sum, b.m_old, b.local_max, b.m_new,
                  b.m_old, b.m_new, b.l_old, b.local_max, b.m_new, b.local_sum, b.l_new);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
  } else {
    ImGui::TextUnformatted("Start: m = -inf, l = 0 (nothing seen yet).");
  }

  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  // The long column titles where they fit; with large text or a narrow view the short ones (the
  // sentence above the table says what m~ and l~ are), so that no column is cut off.
  static const char* const kLong[8] = {"block", "x", "m~ (local max)", "l~ (local sum)", "m: old -> new",
                                       "l: old -> new", "e^(m_old - m_new)", "e^(m~ - m_new)"};
  static const char* const kShort[8] = {"#", "x", "m~", "l~", "m old->new", "l old->new", "e^(m-m_new)", "e^(m~-m_new)"};
  float long_w = 0;
  const float pad = ImGui::GetStyle().CellPadding.x * 2 + 2;
  for (const char* h : kLong) long_w += ImGui::CalcTextSize(h).x + pad;
  long_w += ImGui::CalcTextSize("-inf -> 0.0000").x;  // the value columns grow past their titles
  const char* const* titles = long_w <= ImGui::GetContentRegionAvail().x ? kLong : kShort;
  const float rows_h = ImGui::GetFrameHeightWithSpacing() * float(std::min(ls.shown, nb) + 1) + 20;
  if (ImGui::BeginTable("blocks", 8, tf | ImGuiTableFlags_ScrollX, ImVec2(0, rows_h + ImGui::GetStyle().ScrollbarSize))) {
    for (const char* h : {titles[0], titles[1], titles[2], titles[3], titles[4], titles[5], titles[6], titles[7]})
      ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    char a[32], b2[32];
    for (int k = 0; k < std::min(ls.shown, nb); ++k) {
      const LessonBlock& b = L.blocks[size_t(k)];
      ImGui::TableNextRow();
      if (k == ls.shown - 1) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlightCol);
      ImGui::TableNextColumn();
      ImGui::Text("%d", k + 1);
      ImGui::TableNextColumn();
      for (size_t e = b.begin; e < b.end && e < b.begin + 6; ++e) {
        if (e > b.begin) ImGui::SameLine(0, 4);
        ImGui::Text("%.3g", L.values[e]);
      }
      if (b.end > b.begin + 6) {
        ImGui::SameLine(0, 4);
        ImGui::TextUnformatted("...");
      }
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.local_max);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.local_sum);
      ImGui::TableNextColumn();
      ImGui::Text("%s -> %.4g", fmt_g(a, sizeof a, b.m_old), b.m_new);
      ImGui::TableNextColumn();
      ImGui::Text("%s -> %.4g", fmt_g(b2, sizeof b2, b.l_old), b.l_new);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.alpha);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.beta);
    }
    ImGui::EndTable();
  }

  // Softmax so far (online, with the running m and l) beside the direct softmax.
  ImGui::Spacing();
  ImGui::TextUnformatted("softmax(x): online with the running (m, l) so far, and direct in one pass");
  const size_t seen = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].end : 0;
  const double m_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].m_new : 0;
  const double l_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].l_new : 1;
  const float row_h = ImGui::GetFrameHeightWithSpacing();
  const float fit = row_h * float(L.values.size() + 1) + 8;
  const float room = std::max(ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2, 120.0f);
  if (ImGui::BeginTable("softmax", 4, tf | ImGuiTableFlags_ScrollY, ImVec2(0, std::min(fit, room)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("k");
    ImGui::TableSetupColumn("x_k");
    ImGui::TableSetupColumn("online e^(x_k - m) / l", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("direct softmax", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    char ov[48], dv[48];
    for (size_t e = 0; e < L.values.size(); ++e) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", e);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", L.values[e]);
      ImGui::TableNextColumn();
      if (e < seen) {
        const double o = std::exp(L.values[e] - m_run) / l_run;
        std::snprintf(ov, sizeof ov, "%.6f", o);
        ImGui::ProgressBar(float(o), ImVec2(-1, 0), ov);
      } else {
        ImGui::TextDisabled("not seen yet");
      }
      ImGui::TableNextColumn();
      std::snprintf(dv, sizeof dv, "%.6f", L.direct[e]);
      ImGui::ProgressBar(float(L.direct[e]), ImVec2(-1, 0), dv);
    }
    ImGui::EndTable();
  }
  if (ls.shown == nb && nb > 0)
    ImGui::TextColored(kPassText, "All blocks merged: max |online - direct| = %.3g", L.max_diff);
  else
    DimText("Until every block is merged, the online values are relative to the max seen so far.");
}

}  // namespace flashstep::gui
