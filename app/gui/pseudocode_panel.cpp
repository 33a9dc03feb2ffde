// The pseudocode panel: the shown schedule's algorithm (its listing in core's line tables,
// core/lines.h) with the current line lit, the loop variables, and core's sentence for the step.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include "core/schedule_registry.h"

#include <cstdio>
#include <cstring>

namespace flashstep::gui {

namespace {

// Whether the algorithm's outer loop runs over i: its first row in a loop loads Q_i before any
// K_j, V_j (FlashAttention-2's forward), so the loop variables read "i = .., j = ..".
bool i_outer(const AlgorithmInfo& a) {
  for (size_t n = 0; n < a.n_lines; ++n) {
    const LineRole r = a.lines[n].role;
    if (r == LineRole::load_q) return true;
    if (r == LineRole::load_kv) return false;
  }
  return false;
}

}  // namespace

void DrawAlgorithmPanel(AppState& s, GpuState& g, const Layout& l) {
  if (s.row) return DrawRowStepsPanel(s, g, l);
  const ScheduleInfo& info = schedule_info(s.run ? s.run->schedule() : kDefaultSchedule);
  const Step* cur = s.run ? current_step(s) : nullptr;
  // The backward's algorithm from its first step on (both loops j outer, i inner).
  const bool bwd = cur && is_backward_line(cur->line);
  const AlgorithmInfo& algo = bwd ? *info.backward_lines : *info.forward_lines;
  char title[160];  // a fixed buffer: an idle frame allocates nothing
  std::snprintf(title, sizeof title, "%s###algorithm", algo.title);
  // A title wider than the panel keeps its name and drops the parenthesis, its source ("Algorithm
  // 4 (FlashAttention backwar" was cut at 1280x720 in presentation mode).
  const char* paren = std::strstr(algo.title, " (");
  if (paren && ImGui::CalcTextSize(algo.title).x + 2 * ImGui::GetStyle().FramePadding.x > l.algo_size.x)
    std::snprintf(title, sizeof title, "%.*s###algorithm", int(paren - algo.title), algo.title);
  if (!BeginPanel(title, l.algo_pos, l.algo_size, s)) return;
  const Trace& tr = s.run->trace;
  const Tiling& t = tr.tiling;
  const int active = cur ? line_number(cur->line) : -1;

  // Loop variables and the step's sentence first, so they stay visible at 1280 x 720. Where the
  // long form ("i = 0 of Tr = 2,  j = 0 of Tc = 2") needs two lines, the short one ("i = 0 of 2,
  // j = 0 of 2") keeps one, and the line it saves goes to the sentence (1024x768 in presentation
  // mode: the sentence's box hid its last line).
  char loops[2][96];  // the long form, the short one
  const long long Tr = t.Tr, Tc = t.Tc;
  const int ci = cur ? cur->i : -1, cj = cur ? cur->j : -1;
  if (cur && ci >= 0 && !info.tiled) {
    std::snprintf(loops[0], sizeof loops[0], "row block i = %d of Tr = %lld", ci, Tr);
    std::snprintf(loops[1], sizeof loops[1], "row block i = %d of %lld", ci, Tr);
  } else if (cur && ci >= 0 && cj < 0) {
    std::snprintf(loops[0], sizeof loops[0], "i = %d of Tr = %lld  (j not in scope)", ci, Tr);
    std::snprintf(loops[1], sizeof loops[1], "i = %d of %lld (no j)", ci, Tr);
  } else if (cur && ci >= 0 && !bwd && i_outer(algo)) {  // i outer (FlashAttention-2's forward: Q_i before the j loop)
    std::snprintf(loops[0], sizeof loops[0], "i = %d of Tr = %lld,  j = %d of Tc = %lld", ci, Tr, cj, Tc);
    std::snprintf(loops[1], sizeof loops[1], "i = %d of %lld,  j = %d of %lld", ci, Tr, cj, Tc);
  } else if (cur && ci >= 0) {
    std::snprintf(loops[0], sizeof loops[0], "j = %d of Tc = %lld,  i = %d of Tr = %lld", cj, Tc, ci, Tr);
    std::snprintf(loops[1], sizeof loops[1], "j = %d of %lld,  i = %d of %lld", cj, Tc, ci, Tr);
  } else if (cur && cj >= 0) {
    std::snprintf(loops[0], sizeof loops[0], "j = %d of Tc = %lld  (i not in scope)", cj, Tc);
    std::snprintf(loops[1], sizeof loops[1], "j = %d of %lld (no i)", cj, Tc);
  } else {
    std::snprintf(loops[0], sizeof loops[0], "Tr = %lld, Tc = %lld  (no loop variable in scope)", Tr, Tc);
    std::snprintf(loops[1], sizeof loops[1], "Tr = %lld, Tc = %lld", Tr, Tc);
  }
  const char* loop_line = LongestFitting(ImGui::GetContentRegionAvail().x, {loops[0], loops[1]});
  TextWrappedAtSpaces(*loop_line ? loop_line : loops[0]);
  if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x > ImGui::CalcTextSize("(0-based)").x + 12) {
    ImGui::SameLine();
    ImGui::TextDisabled("(0-based)");
  }
  // The step's sentence, in a scrolling box of its own where it would leave the listing fewer
  // than four lines (a short panel; in the course the panel grows to the sentence first, see
  // algo_want_h). Four, not five: at 1024x768 in presentation mode a box that kept the listing
  // five lines hid the last of the fp8 chapter's three-line sentence.
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float text_h = ImGui::CalcTextSize(s.explanation.c_str(), nullptr, false, ImGui::GetContentRegionAvail().x).y;
  const float room = ImGui::GetContentRegionAvail().y - 4 * line_h - ImGui::GetStyle().ItemSpacing.y * 2;
  const float sentence_y = ImGui::GetCursorPosY();
  float sentence_h = 0;  // as drawn, whole
  if (text_h > room) {
    const float text_line = ImGui::GetTextLineHeight();  // the sentence's lines: one text item
    ImGui::BeginChild("explanation", ImVec2(0, std::max(2.0f, std::floor(room / text_line)) * text_line + 2), false);
    TextWrappedAtSpaces(s.explanation.c_str());
    sentence_h = ImGui::GetItemRectSize().y;
    s.algo_sentence_hidden_px = ImGui::GetScrollMaxY();
    ImGui::EndChild();
  } else {
    TextWrappedAtSpaces(s.explanation.c_str());
    sentence_h = ImGui::GetItemRectSize().y;
    s.algo_sentence_hidden_px = 0;
  }
  // The panel's height with the whole sentence and four lines of the listing: the course's layout
  // grows the panel to it where it can (ComputeCourseLayout), from the next frame on.
  s.algo_want_h = sentence_y + sentence_h + 3 * ImGui::GetStyle().ItemSpacing.y + 4 * line_h +
                  ImGui::GetStyle().WindowPadding.y;
  ImGui::Separator();

  // The listing keeps the current line in view: when the cursor moves, not only while playing.
  // (Two frames: the first lays out a listing whose line heights the scroll does not know yet.)
  static uint64_t shown_cursor = 0;
  static int scroll_frames = 0;
  if (s.cursor_version != shown_cursor) scroll_frames = 2;
  shown_cursor = s.cursor_version;
  const bool moved = scroll_frames > 0;
  if (scroll_frames > 0) --scroll_frames;
  s.algo_listing_lines = ImGui::GetContentRegionAvail().y / line_h;  // for --dump-state
  ImGui::BeginChild("pseudocode", ImVec2(0, 0), false);
  if (g.mono) ImGui::PushFont(g.mono);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float indent_w = ImGui::GetFontSize() * 1.2f;
  for (size_t li = 0; li < algo.n_listing; ++li) {
    const ListingRow& pl = algo.listing[li];
    // A skipped block highlights its loop line, with core's text saying it was skipped.
    const bool on = cur && pl.number == active && (!pl.text || pl.line == cur->line);
    const char* text = pl.text && !on ? pl.text : line_pseudocode(pl.line);
    dl->ChannelsSplit(2);
    dl->ChannelsSetCurrent(1);
    ImGui::BeginGroup();
    if (pl.number > 0) ImGui::Text("%2d", pl.number);
    else ImGui::TextUnformatted("  ");
    ImGui::SameLine(0, ImGui::GetFontSize() * 0.6f + indent_w * float(pl.indent));
    ImGui::PushTextWrapPos(0.0f);
    if (on) ImGui::TextUnformatted(text);
    else {
      ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
      ImGui::TextUnformatted(text);
      ImGui::PopStyleColor();
    }
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
    if (on) {
      dl->ChannelsSetCurrent(0);
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      dl->AddRectFilled(ImVec2(a.x - 4, a.y - 1), ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowWidth(), b.y + 1),
                        kHighlightCol, 3.0f);
      if (s.playing || moved || ImGui::IsWindowAppearing()) ImGui::SetScrollHereY(0.5f);
    }
    dl->ChannelsMerge();
  }
  ImGui::Spacing();
  // Wrapped: in a narrow panel (1024x768 in presentation mode) the line ran past its edge.
  TextWrappedF("M = %lld: Br = %lld, Bc = %lld%s, tau = %.4g", (long long)t.M, (long long)t.Br,
               (long long)t.Bc, t.overridden ? " (overridden)" : "", double(tr.problem.scale));
  const Problem& p = tr.problem;
  if (p.mask.any() || p.dropout > 0 || p.dtype != Dtype::fp32) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s%s; dropout p = %g; stored as %s", p.mask.any() ? "mask: " : "no mask",
                        s.mask_text.c_str(), double(p.dropout), dtype_name(p.dtype));
    ImGui::PopTextWrapPos();
  }
  if (g.mono) ImGui::PopFont();
  s.algo_overflow_px = PanelOverflowPx();  // the listing's
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace flashstep::gui
