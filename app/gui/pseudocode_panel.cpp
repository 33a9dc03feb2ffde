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

  // Loop variables and the step's sentence first, so they stay visible at 1280 x 720.
  if (cur && cur->i >= 0 && !info.tiled)
    TextWrappedF("row block i = %d of Tr = %lld", cur->i, (long long)t.Tr);
  else if (cur && cur->i >= 0 && cur->j < 0)
    TextWrappedF("i = %d of Tr = %lld  (j not in scope)", cur->i, (long long)t.Tr);
  // i outer (FlashAttention-2's forward: Q_i is loaded before the j loop)
  else if (cur && cur->i >= 0 && !bwd && i_outer(algo))
    TextWrappedF("i = %d of Tr = %lld,  j = %d of Tc = %lld", cur->i, (long long)t.Tr, cur->j, (long long)t.Tc);
  else if (cur && cur->i >= 0)
    TextWrappedF("j = %d of Tc = %lld,  i = %d of Tr = %lld", cur->j, (long long)t.Tc, cur->i, (long long)t.Tr);
  else if (cur && cur->j >= 0)
    TextWrappedF("j = %d of Tc = %lld  (i not in scope)", cur->j, (long long)t.Tc);
  else
    TextWrappedF("Tr = %lld, Tc = %lld  (no loop variable in scope)", (long long)t.Tr, (long long)t.Tc);
  if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x > ImGui::CalcTextSize("(0-based)").x + 12) {
    ImGui::SameLine();
    ImGui::TextDisabled("(0-based)");
  }
  // The step's sentence, in a scrolling box of its own where it would leave the listing fewer
  // than five lines (a short panel: the course's right column in presentation mode).
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float text_h = ImGui::CalcTextSize(s.explanation.c_str(), nullptr, false, ImGui::GetContentRegionAvail().x).y;
  const float room = ImGui::GetContentRegionAvail().y - 5 * line_h - ImGui::GetStyle().ItemSpacing.y * 2;
  if (text_h > room) {
    const float text_line = ImGui::GetTextLineHeight();  // the sentence's lines: one text item
    ImGui::BeginChild("explanation", ImVec2(0, std::max(2.0f, std::floor(room / text_line)) * text_line + 2), false);
    TextWrappedAtSpaces(s.explanation.c_str());
    ImGui::EndChild();
  } else {
    TextWrappedAtSpaces(s.explanation.c_str());
  }
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
