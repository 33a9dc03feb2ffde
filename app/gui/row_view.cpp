// The panels of a softmax row's trace (row_state.h): while AppState::row is set they take the
// place of the run's. Left: the student's steps with the current step's sentence, and the row
// itself; centre: x and y element by element (what was loaded and written), the blocks with the
// student's m and l beside core's lesson for the same row and blocks, and the softmax; right:
// the bytes per tensor, and the merge of the current block.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

namespace {

// The puzzles' tolerance (flashstep/_judge.py: ATOL, RTOL): a value of the student's that
// agrees with the lesson's within it is drawn green, else red.
constexpr double kTol = 1e-4;
bool agrees(float mine, double lesson) {
  if (std::isinf(mine) || std::isinf(lesson)) return double(mine) == lesson;
  return std::abs(double(mine) - lesson) <= kTol + kTol * std::abs(lesson);
}

// A vector of the row drawn as a strip of cells, wrapped to the width: each element's value,
// the blocks' boundaries, and what the steps did to it (filled: loaded or written by an earlier
// step; outlined in `now_col`: by this step; an empty frame: not yet).
constexpr int64_t kMaxCells = 512;  // elements drawn as cells; the softmax table lists every one

void DrawCells(const char* title, const Vec& v, const std::vector<Seen>& seen, ImU32 now_col, int64_t block, ImFont* mono) {
  TextWrappedAtSpaces(title);
  const int64_t n = std::min<int64_t>(v.size(), kMaxCells);
  if (mono) ImGui::PushFont(mono);
  char buf[32];
  float widest = ImGui::CalcTextSize("-0.000").x;  // the cells fit the widest value shown
  for (int64_t e = 0; e < n; ++e) widest = std::max(widest, ImGui::CalcTextSize(fmt_g(buf, sizeof buf, double(v(e)))).x);
  const float min_w = widest + 10.0f, avail = ImGui::GetContentRegionAvail().x - 4.0f;
  const int64_t per_line = std::clamp<int64_t>(int64_t(avail / min_w), 1, n);
  const float cw = std::min(avail / float(per_line), min_w * 1.6f), ch = ImGui::GetTextLineHeight() + 8.0f;
  const int64_t lines = (n + per_line - 1) / per_line;
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(kDimText);
  for (int64_t e = 0; e < n; ++e) {
    const ImVec2 a(o.x + 2 + float(e % per_line) * cw, o.y + 2 + float(e / per_line) * (ch + 4)), b(a.x + cw - 2, a.y + ch);
    const Seen s = seen[size_t(e)];
    if (s == Seen::no) dl->AddRect(a, b, kEmptyEdgeCol);
    else dl->AddRectFilled(a, b, kShownCol);
    if (s == Seen::now) dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), now_col, 0, 0, 2.5f);
    if (e % block == 0 && e > 0)  // a block starts here
      dl->AddLine(ImVec2(a.x - 2, a.y - 3), ImVec2(a.x - 2, b.y + 3), kComputeCol, 2.0f);
    fmt_g(buf, sizeof buf, double(v(e)));
    const ImVec2 ts = ImGui::CalcTextSize(buf);
    dl->AddText(ImVec2(a.x + std::max(2.0f, (cw - 2 - ts.x) * 0.5f), a.y + 4), s == Seen::no ? dim : text, buf);
  }
  ImGui::Dummy(ImVec2(avail, float(lines) * (ch + 4) + 2));
  if (mono) ImGui::PopFont();
  if (v.size() > n) ImGui::TextDisabled("... and %lld more (the table below lists every one)", (long long)(v.size() - n));
}

// Places and opens one of the row's panels (a window of the run's panel's place and title).
void BeginRowPanel(AppState& s, const char* title, ImVec2 pos, ImVec2 size) {
  BeginFitted(s, title, pos, size, kPanelFlags);
}

// A table's height: all its rows when they fit in `cap`, else `cap` with a scroll bar.
float TableHeight(int64_t rows, float row_h, float cap, bool* scroll) {
  const float want = row_h * float(rows + 1) + 4;
  *scroll = want > cap;
  return *scroll ? cap : 0.0f;
}

void ValueCell(const char* fmt_or_dash, bool have, float x) {
  char buf[32];
  ImGui::TableNextColumn();
  if (!have) ImGui::TextDisabled("%s", fmt_or_dash);
  else ImGui::TextUnformatted(fmt_g(buf, sizeof buf, double(x)));
}

void LessonCell(bool have, double x) {
  char buf[32];
  ImGui::TableNextColumn();
  if (!have) ImGui::TextDisabled("-");
  else ImGui::TextUnformatted(fmt_g(buf, sizeof buf, x));
}

void MineCell(bool have, float mine, bool reached, double lesson) {
  char buf[32];
  ImGui::TableNextColumn();
  if (!have) {
    ImGui::TextDisabled("-");
    return;
  }
  ImGui::TextColored(reached && agrees(mine, lesson) ? kPassText : kErrorText, "%s", fmt_g(buf, sizeof buf, double(mine)));
}

}  // namespace

// [SECTION] left column

void DrawRowStepsPanel(AppState& s, GpuState& g, const Layout& l) {
  BeginRowPanel(s, "Your steps, one softmax row###algorithm", l.algo_pos, l.algo_size);
  const RowView& v = *s.row;
  const size_t k = s.index();
  if (k == 0) ImGui::TextUnformatted("before your first step");
  else ImGui::Text("step %zu of %zu: '%s'", k, v.trace.steps.size(), v.trace.steps[k - 1].label.c_str());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(s.explanation.c_str());
  ImGui::PopTextWrapPos();
  ImGui::Separator();
  ImGui::BeginChild("row-steps", ImVec2(0, 0), false);
  if (g.mono) ImGui::PushFont(g.mono);
  char line[200], a[32], b[32];
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (size_t n = 0; n < v.trace.steps.size(); ++n) {
    const RowStep& st = v.trace.steps[n];
    const RowBytes sb = row_judged_bytes(st);  // m, l: diagnostics, named apart from the traffic
    std::snprintf(line, sizeof line, "%3zu  %-12s read %s, wrote %s%s", n + 1, st.label.c_str(),
                  fmt_bytes(a, sizeof a, sb.read), fmt_bytes(b, sizeof b, sb.written), sb.diagnostic ? " (+m,l)" : "");  // one word: never split where the line wraps
    const bool on = n + 1 == k;
    // The line wraps in a narrow panel; the current one is lit behind its text (as the pseudocode's).
    dl->ChannelsSplit(2);
    dl->ChannelsSetCurrent(1);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::PushStyleColor(ImGuiCol_Text, on ? ImGui::GetStyleColorVec4(ImGuiCol_Text) : kDimText);
    ImGui::TextUnformatted(line);
    ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
    if (on) {
      dl->ChannelsSetCurrent(0);
      const ImVec2 p0 = ImGui::GetItemRectMin(), p1 = ImGui::GetItemRectMax();
      dl->AddRectFilled(ImVec2(p0.x - 4, p0.y - 1), ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowWidth(), p1.y + 1),
                        kHighlightCol, 3.0f);
      if (s.playing || ImGui::IsWindowAppearing()) ImGui::SetScrollHereY(0.5f);
    }
    dl->ChannelsMerge();
  }
  if (g.mono) ImGui::PopFont();
  ImGui::EndChild();
  ImGui::End();
}

void DrawRowProblemPanel(AppState& s, const Layout& l) {
  BeginRowPanel(s, "Problem", l.problem_pos, l.problem_size);
  const RowView& v = *s.row;
  const RowTrace& t = v.trace;
  TextWrappedF("A softmax of one row (a puzzle's trace)");
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", v.path.c_str());
  ImGui::PopTextWrapPos();
  TextWrappedF("N = %lld, blocks of %lld: %zu block%s", (long long)t.n(), (long long)t.block,
                     v.lesson.blocks.size(), v.lesson.blocks.size() == 1 ? "" : "s");
  DimText("Before your first step HBM held the row x, and y = 0, m = -inf, l = 0 as the puzzle placed them.");
  ImGui::Spacing();
  char text[200];
  std::snprintf(text, sizeof text,
                "Beside your values: core's lesson (flashstep lesson softmax --block %lld) on the same row, as "
                "stored in float32, computed in double.", (long long)t.block);
  DimText(text);
  DimText("Your m and l after block b are your b-th stores of m and of l; green: within 1e-4 + 1e-4 |lesson| "
          "of the lesson's (the puzzles' tolerance), red: not.");
  ImGui::End();
}

// [SECTION] centre

void DrawRowCenter(AppState& s, GpuState& g, const Layout& l) {
  BeginRowPanel(s, "Your softmax, block by block", l.center_pos, l.center_size);
  const RowView& v = *s.row;
  const RowAt& at = s.row_now;
  const Lesson& L = v.lesson;
  const int64_t n = v.trace.n();
  char text[240];
  std::snprintf(text, sizeof text,
                "Your run over the row x (N = %lld) in blocks of %lld: the elements you loaded, your m and l after "
                "each block beside the lesson's, and y as you stored it beside the softmax.",
                (long long)n, (long long)v.trace.block);
  DimText(text);
  DrawCells("x in HBM: loaded (filled), by this step (outlined); yellow bars start the blocks", at.hbm[0],
            at.x_loaded, kReadCol, v.trace.block, g.mono);
  DrawCells("y in HBM: written (filled), by this step (outlined)", at.hbm[1], at.y_written, kWriteCol, v.trace.block,
            g.mono);

  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  const int nb = int(L.blocks.size());
  const float pad = ImGui::GetStyle().CellPadding.y * 2;
  bool scroll = false;
  // Scrolled sideways where the columns are wider than the panel (large text), its height then
  // holding the scroll bar too: the width is the titles' or the widest values' (%.4g, x[a:b]).
  static const char* const kTitles[8] = {"block", "x", "m~", "l~", "m, lesson", "m, yours", "l, lesson", "l, yours"};
  char widest_x[64];
  std::snprintf(widest_x, sizeof widest_x, "x[%zu:%zu]", L.blocks.back().begin, L.blocks.back().end);
  float need = 0;
  for (int c = 0; c < 8; ++c)
    need += std::max(ImGui::CalcTextSize(kTitles[c]).x, ImGui::CalcTextSize(c == 1 ? widest_x : "-1.234e-05").x) +
            ImGui::GetStyle().CellPadding.x * 2 + 2;
  const bool wide = need > ImGui::GetContentRegionAvail().x;
  const float cap = ImGui::GetContentRegionAvail().y * 0.35f;
  float blocks_h = TableHeight(nb, ImGui::GetTextLineHeight() + pad, cap, &scroll);
  if (wide && !scroll) blocks_h = (ImGui::GetTextLineHeight() + pad) * float(nb + 1) + 4 + ImGui::GetStyle().ScrollbarSize;
  if (ImGui::BeginTable("row-blocks", 8, tf | (wide ? ImGuiTableFlags_ScrollX : 0) | (scroll ? ImGuiTableFlags_ScrollY : 0),
                        ImVec2(0, blocks_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* h : kTitles) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (int b = 0; b < nb; ++b) {
      const LessonBlock& lb = L.blocks[size_t(b)];
      const RowBlockAt& rb = at.blocks[size_t(b)];
      ImGui::TableNextRow();
      if (b == at.current_block) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlightCol);
      ImGui::TableNextColumn();
      ImGui::Text("%d", b);
      ImGui::TableNextColumn();
      ImGui::Text("x[%zu:%zu]", lb.begin, lb.end);
      LessonCell(rb.reached, lb.local_max);
      LessonCell(rb.reached, lb.local_sum);
      LessonCell(rb.reached, lb.m_new);
      MineCell(rb.m_stored, rb.m, rb.reached, lb.m_new);
      LessonCell(rb.reached, lb.l_new);
      MineCell(rb.l_stored, rb.l, rb.reached, lb.l_new);
    }
    ImGui::EndTable();
  }

  ImGui::Spacing();
  ImGui::TextUnformatted("y: yours in HBM, and softmax(x) (core's lesson, in one pass)");
  const float softmax_h = TableHeight(n, ImGui::GetFrameHeight() + pad, std::max(ImGui::GetContentRegionAvail().y - 4, 80.0f), &scroll);
  if (ImGui::BeginTable("row-softmax", 4, tf | (scroll ? ImGuiTableFlags_ScrollY : 0), ImVec2(0, softmax_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("k");
    ImGui::TableSetupColumn("x_k");
    ImGui::TableSetupColumn("y_k, yours", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("softmax, lesson", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    char yv[48], dv[48];
    for (int64_t e = 0; e < n; ++e) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%lld", (long long)e);
      ValueCell("-", true, at.hbm[0](e));
      ImGui::TableNextColumn();
      const float y = at.hbm[1](e);
      if (at.y_written[size_t(e)] == Seen::no) {
        ImGui::TextDisabled("not written yet");
      } else {
        std::snprintf(yv, sizeof yv, "%.6f", double(y));
        ImGui::PushStyleColor(ImGuiCol_PlotHistogram, agrees(y, L.direct[size_t(e)]) ? kPassText : kErrorText);
        ImGui::ProgressBar(std::isfinite(y) ? std::clamp(y, 0.0f, 1.0f) : 0.0f, ImVec2(-1, 0), std::isfinite(y) ? yv : "nan / inf");
        ImGui::PopStyleColor();
      }
      ImGui::TableNextColumn();
      std::snprintf(dv, sizeof dv, "%.6f", L.direct[size_t(e)]);
      ImGui::ProgressBar(float(L.direct[size_t(e)]), ImVec2(-1, 0), dv);
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

// [SECTION] right column

void DrawRowMemoryPanel(AppState& s, const Layout& l) {
  BeginRowPanel(s, "Memory: HBM and SRAM", l.memory_pos, l.memory_size);
  const RowView& v = *s.row;
  const RowAt& at = s.row_now;
  char a[32], b[32], c[256];
  ImGui::TextUnformatted("HBM bytes so far (float32)");
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("row-traffic", 4, tf)) {
    for (const char* h : {"tensor", "size", "read", "written"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (int t = 0; t < kRowTensors; ++t) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row_tensor_name(RowTensor(t)));
      ImGui::TableNextColumn();
      ImGui::Text("%lld", (long long)row_tensor_size(RowTensor(t), v.trace.n()));
      ImGui::TableNextColumn();
      if (at.read_now[size_t(t)]) ImGui::TextColored(ImColor(kReadCol), "%s", fmt_bytes(a, sizeof a, at.read[size_t(t)]));
      else ImGui::TextUnformatted(fmt_bytes(a, sizeof a, at.read[size_t(t)]));
      ImGui::TableNextColumn();
      if (at.written_now[size_t(t)]) ImGui::TextColored(ImColor(kWriteCol), "%s", fmt_bytes(b, sizeof b, at.written[size_t(t)]));
      else ImGui::TextUnformatted(fmt_bytes(b, sizeof b, at.written[size_t(t)]));
    }
    ImGui::EndTable();
  }
  // The totals are the judge's: x and y, without the m, l stores (row_judged_bytes).
  const RowBytes &now = at.so_far, &all = at.whole_run;
  const int64_t total = all.read + all.written;
  std::snprintf(c, sizeof c, "so far: read %s, written %s (%.0f%%)", fmt_bytes(a, sizeof a, now.read),
                fmt_bytes(b, sizeof b, now.written), total ? 100.0 * double(now.read + now.written) / double(total) : 0.0);
  LabelledBar(total ? float(double(now.read + now.written) / double(total)) : 0.0f, c);
  if (at.k) TextWrappedF("this step: read %s, written %s", fmt_bytes(a, sizeof a, at.this_step.read), fmt_bytes(b, sizeof b, at.this_step.written));
  else ImGui::TextUnformatted("this step: -");
  std::snprintf(c, sizeof c, "whole run: read %s, written %s", fmt_bytes(a, sizeof a, all.read), fmt_bytes(b, sizeof b, all.written));
  TextWrappedAtSpaces(c);
  if (all.diagnostic) {
    std::snprintf(c, sizeof c, "Not counted: the %s of m, l stored after each block, diagnostics the judge asks for "
                  "to name the block that departs (not the algorithm's traffic).", fmt_bytes(a, sizeof a, all.diagnostic));
    DimText(c);
  }
  ImGui::Separator();
  TextWrappedF("SRAM: at most %s of x, y tiles held at once (the puzzle's M: %s)",
                     fmt_bytes(a, sizeof a, v.trace.peak_sram_bytes),
                     v.lesson.blocks.size() == 1 ? "the whole row fits" : "one block of x fits");
  DimText("The statistics m, l are on-chip scratch, as core charges them (docs/algorithm.md).");
  ImGui::Spacing();
  Swatch(kReadCol, true, "read by this step");
  Swatch(kWriteCol, true, "written by this step", true);
  ImGui::End();
}

void DrawRowSoftmaxPanel(AppState& s, const Layout& l) {
  BeginRowPanel(s, "Online softmax state", l.softmax_pos, l.softmax_size);
  const RowView& v = *s.row;
  const RowAt& at = s.row_now;
  int b = at.current_block;
  if (b < 0)  // no load by this step: the last block reached so far
    for (int k = 0; k < int(at.blocks.size()); ++k)
      if (at.blocks[size_t(k)].reached) b = k;
  if (b < 0) {
    ImGui::TextUnformatted("No block of x loaded yet: m = -inf, l = 0.");
    ImGui::End();
    return;
  }
  const LessonBlock& lb = v.lesson.blocks[size_t(b)];
  const RowBlockAt& rb = at.blocks[size_t(b)];
  char text[400], m0[32], l0[32];
  std::snprintf(text, sizeof text,
                "Block %d (x[%zu:%zu]) in the lesson: m~ = %.4g, l~ = sum e^(x - m~) = %.4g. Merge: m = max(%s, %.4g) = "
                "%.4g; l = e^(%s - %.4g) * %s + e^(%.4g - %.4g) * %.4g = %.4g.",
                b, lb.begin, lb.end, lb.local_max, lb.local_sum, fmt_g(m0, sizeof m0, lb.m_old), lb.local_max,
                lb.m_new, m0, lb.m_new, fmt_g(l0, sizeof l0, lb.l_old), lb.local_max, lb.m_new, lb.local_sum, lb.l_new);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text);
  ImGui::PopTextWrapPos();
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchSame;
  ImGui::Text("After block %d:", b);
  if (ImGui::BeginTable("row-merge", 3, tf)) {
    for (const char* h : {"", "lesson", "yours"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("m");
    LessonCell(true, lb.m_new);
    MineCell(rb.m_stored, rb.m, true, lb.m_new);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("l");
    LessonCell(true, lb.l_new);
    MineCell(rb.l_stored, rb.l, true, lb.l_new);
    ImGui::EndTable();
  }
  if (!rb.m_stored || !rb.l_stored)
    DimText("'-': you have not stored m or l after this block (yet). The online-softmax puzzle asks for them "
            "after each block; safe-softmax stores y only.");
  ImGui::Spacing();
  std::snprintf(text, sizeof text, "After the last block the lesson has m = %.6g, l = %.6g: y = e^(x - m) / l, "
                "max |online - direct| = %.3g.", v.lesson.blocks.back().m_new, v.lesson.blocks.back().l_new,
                v.lesson.max_diff);
  DimText(text);
  ImGui::End();
}

}  // namespace flashstep::gui
