// The pseudocode panel: the shown schedule's algorithm (its listing in core's line tables,
// core/lines.h) with the current line lit, the loop variables, and core's sentence for the step.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include "core/schedule_registry.h"

#include <algorithm>
#include <cmath>
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

// The widest space-separated word of `text` as drawn in the current font.
float WidestWord(const char* text) {
  float widest = 0;
  for (const char* p = text; *p;) {
    while (*p == ' ') ++p;
    const char* e = p;
    while (*e && *e != ' ') ++e;
    if (e > p) widest = std::max(widest, ImGui::CalcTextSize(p, e).x);
    p = e;
  }
  return widest;
}

// A listing row's text from the cursor, wrapped at spaces only within `room` px (ImGui's own wrap
// also breaks after '.' or ',' and inside a word wider than the room: "lse_i^(1." / ".S)").
// Continuation lines start at local x `x`, under the first, one text line apart.
void ListingText(const char* text, float x, float room) {
  const char* line = text;
  const char* const end = text + std::strlen(text);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
  for (bool first = true; line < end; first = false) {
    const char* cut = end;
    if (ImGui::CalcTextSize(line, end).x > room) {
      cut = nullptr;  // the last space that keeps the line within the room, else the first
      for (const char* p = line; p < end; ++p)
        if (*p == ' ') {
          if (!cut || ImGui::CalcTextSize(line, p).x <= room) cut = p;
          else break;
        }
      if (!cut) cut = end;
    }
    if (!first) ImGui::SetCursorPosX(x);
    ImGui::TextUnformatted(line, cut);
    line = cut;
    while (line < end && *line == ' ') ++line;
  }
  ImGui::PopStyleVar();
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
  if (!*loop_line) loop_line = loops[0];
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float wrap_w = ImGui::GetContentRegionAvail().x;
  const float loop_h = ImGui::CalcTextSize(loop_line, nullptr, false, wrap_w).y;
  const float text_h = ImGui::CalcTextSize(s.explanation.c_str(), nullptr, false, wrap_w).y;
  // A short panel (font scale 2.5 at 1024x768: the listing kept 1.3 lines) puts the loop variables
  // under the sentence in one scrolling box, so the listing keeps four lines; the controls' label
  // ("Alg1 L11  i = 0, j = 0") names the loop variables above it.
  const float text_line = ImGui::GetTextLineHeight();
  const float box_min = 2 * text_line + 2;
  const bool compact =
      ImGui::GetContentRegionAvail().y - loop_h - spacing - 4 * line_h - 2 * spacing < box_min && !s.course.active;
  if (!compact) {
    TextWrappedAtSpaces(loop_line);
    if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x > ImGui::CalcTextSize("(0-based)").x + 12) {
      ImGui::SameLine();
      ImGui::TextDisabled("(0-based)");
    }
  }
  // The step's sentence, in a scrolling box of its own where it would leave the listing fewer
  // than four lines (a short panel; in the course the panel grows to the sentence first, see
  // algo_want_h). Four, not five: at 1024x768 in presentation mode a box that kept the listing
  // five lines hid the last of the fp8 chapter's three-line sentence.
  const float room = ImGui::GetContentRegionAvail().y - 4 * line_h - spacing * 2;
  const float sentence_y = ImGui::GetCursorPosY();
  float sentence_h = 0;  // as drawn, whole
  if (compact || text_h > room) {
    ImGui::BeginChild("explanation", ImVec2(0, std::max(2.0f, std::floor(room / text_line)) * text_line + 2), false);
    TextWrappedAtSpaces(s.explanation.c_str());
    sentence_h = ImGui::GetItemRectSize().y;
    s.algo_sentence_hidden_px = std::max(0.0f, sentence_h - ImGui::GetWindowHeight());
    if (compact) TextWrappedAtSpaces(loop_line);
    ImGui::EndChild();
  } else {
    TextWrappedAtSpaces(s.explanation.c_str());
    sentence_h = ImGui::GetItemRectSize().y;
    s.algo_sentence_hidden_px = 0;
  }
  // The panel's height with the whole sentence and four lines of the listing: the course's layout
  // grows the panel to it where it can (ComputeCourseLayout), from the next frame on.
  s.algo_want_h = sentence_y + sentence_h + 3 * spacing + 4 * line_h + ImGui::GetStyle().WindowPadding.y;
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
  // The mono font to measure with, pushed again in the child: ImGui wants each window to pop
  // what it pushed.
  if (g.mono) ImGui::PushFont(g.mono);
  // Rows wrap at spaces, continuing under their first line; where a row's longest word is wider
  // than its room (font scale 2.5 at 1024x768 left about eight characters) no row wraps and the
  // listing scrolls sideways instead of breaking a word ("t_i n" / "ew =").
  float indent_w = ImGui::GetFontSize() * 1.2f, gap = ImGui::GetFontSize() * 0.6f;
  const float number_w = ImGui::CalcTextSize("00").x + gap;
  const float listing_w = ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ScrollbarSize;
  bool sideways = false;
  for (size_t li = 0; li < algo.n_listing && !sideways; ++li) {
    const ListingRow& pl = algo.listing[li];
    const float row_room = listing_w - number_w - indent_w * float(pl.indent);
    sideways = WidestWord(line_pseudocode(pl.line)) > row_room || (pl.text && WidestWord(pl.text) > row_room);
  }
  // Sideways, the nesting takes one character a level and the scrollbars a third of a line each
  // (at 2.5 ImGui's took a whole line and a tenth of the width), so more of each row shows.
  const float char_w = ImGui::CalcTextSize(" ").x;
  if (sideways) indent_w = gap = char_w;
  if (g.mono) ImGui::PopFont();
  s.algo_listing_sideways = sideways;
  s.algo_current_shown_px = 0;
  const float bar = std::min(ImGui::GetStyle().ScrollbarSize, std::max(14.0f, ImGui::GetFontSize() * 0.4f));
  ImGui::PushStyleVar(ImGuiStyleVar_ScrollbarSize, sideways ? bar : ImGui::GetStyle().ScrollbarSize);
  ImGui::BeginChild("pseudocode", ImVec2(0, 0), false, sideways ? ImGuiWindowFlags_HorizontalScrollbar : 0);
  ImGui::PopStyleVar();
  if (g.mono) ImGui::PushFont(g.mono);
  if (sideways && moved) ImGui::SetScrollX(0.0f);  // the rows' starts, where their numbers are
  ImDrawList* dl = ImGui::GetWindowDrawList();
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
    ImGui::SameLine(0, gap + indent_w * float(pl.indent));
    const float text_x = ImGui::GetCursorPosX();
    if (!on) ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
    if (sideways) ImGui::TextUnformatted(text);
    else ListingText(text, text_x, ImGui::GetContentRegionMax().x - text_x);
    if (!on) ImGui::PopStyleColor();
    ImGui::EndGroup();
    if (on) {
      dl->ChannelsSetCurrent(0);
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      const float right = std::max(ImGui::GetWindowPos().x + ImGui::GetWindowWidth(), b.x + 4);
      dl->AddRectFilled(ImVec2(a.x - 4, a.y - 1), ImVec2(right, b.y + 1), kHighlightCol, 3.0f);
      if (s.playing || moved || ImGui::IsWindowAppearing()) ImGui::SetScrollHereY(0.5f);
      // For --dump-state: how much of the current row the listing shows.
      const float top = ImGui::GetWindowPos().y, bottom = top + ImGui::GetWindowHeight();
      s.algo_current_shown_px = std::max(0.0f, std::min(b.y, bottom) - std::max(a.y, top));
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
  // The listing's; rows that scroll sideways are within reach, not cut.
  s.algo_overflow_px = sideways ? std::min(0.0f, PanelOverflowPx()) : PanelOverflowPx();
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace flashstep::gui
