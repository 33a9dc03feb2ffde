// The course in the window: its layout (the text and questions in a column on the left, the
// centre view beside it, the page's side panels on the right, the rest hidden), the course column,
// the roofline in the centre, and the outline around the panel a page points at.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "app/course/io_explorer.h"
#include "app/plot/draw_figure.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace flashstep::gui {

// The page's panel: a violet no other outline of the app uses (reads, writes, compute, SRAM,
// dropped entries have theirs).
constexpr ImU32 kCourseOutlineCol = IM_COL32(150, 80, 255, 255);

Layout ComputeCourseLayout(ImVec2 d, float controls_h, const DisplaySettings& ds, float want_w, float algo_want_h) {
  Layout l;
  const float fs = 1.0f + 0.5f * (ds.font_scale - 1.0f);
  const bool algo = ds.shows(kPanelAlgorithm), mem = ds.shows(kPanelMemory), soft = ds.shows(kPanelSoftmax);
  // The memory panel's side-by-side table needs about 30 font heights: the right column gets
  // that where it can, the course column a little less.
  float course = std::clamp(d.x * 0.28f, 330.0f * fs, 520.0f * fs);
  float right = (algo || mem || soft) ? std::clamp(d.x * 0.31f, 300.0f * fs, 580.0f * fs) : 0.0f;
  // The centre keeps at least 40% of the width: the tiles' grid and the lesson's block table need it.
  const float most = d.x * 0.6f;
  if (course + right > most) {
    const float k = most / (course + right);
    course *= k;
    right *= k;
  }
  // A page whose text and questions would scroll widens the column, from the centre's share only
  // (the side panels keep their width: their tables need it), down to the centre's 40%.
  if (want_w > course) course = std::min(want_w, most - right);
  course = std::floor(course);
  right = std::floor(right);
  const float body = std::max(d.y - controls_h, 200.0f);
  l.controls_pos = ImVec2(0, 0);
  l.controls_size = ImVec2(d.x, controls_h);
  l.course_pos = ImVec2(0, controls_h);
  l.course_size = ImVec2(course, body);
  l.center_pos = ImVec2(course, controls_h);
  l.center_size = ImVec2(std::max(d.x - course - right, 200.0f), body);
  // The right column: the page's panels stacked, the algorithm first; memory takes the most.
  const float x = d.x - right;
  const float wa = algo ? 0.8f : 0.0f, wm = mem ? 1.3f : 0.0f, ws = soft ? 1.0f : 0.0f;
  const float total = std::max(wa + wm + ws, 1e-3f);
  // The algorithm panel at least its header and six lines of the listing (13 text lines), where
  // the body allows: at 1280 x 720 in presentation mode its share alone left one line. A long step
  // sentence grows it (algo_want_h, measured by the panel) up to 60% of the body: at 1024x768 in
  // presentation mode the sentence's box hid up to three of its lines.
  const float ha = algo ? std::floor(std::max({body * wa / total, std::min(13.0f * ImGui::GetFontSize(), 0.5f * body),
                                               std::min(algo_want_h, 0.6f * body)}))
                        : 0.0f;
  const float hm = std::floor((body - ha) * wm / std::max(wm + ws, 1e-3f));
  l.algo_pos = ImVec2(x, controls_h);
  l.algo_size = ImVec2(right, ha);
  l.memory_pos = ImVec2(x, controls_h + ha);
  l.memory_size = ImVec2(right, hm);
  l.softmax_pos = ImVec2(x, controls_h + ha + hm);
  l.softmax_size = ImVec2(right, body - ha - hm);
  l.problem_pos = ImVec2(0, 0);
  l.problem_size = ImVec2(0, 0);
  return l;
}

DisplaySettings CourseDisplay(const AppState& s) {
  DisplaySettings d = s.display.now;
  if (!s.course.active) return d;
  const unsigned side = kPanelAlgorithm | kPanelProblem | kPanelMemory | kPanelSoftmax;
  d.hidden = (d.hidden & ~side) | (side & ~s.course.shown_panels());
  return d;
}

namespace {

// A page's text wrapped at spaces only (ImGui's own wrapping also breaks after '.', which splits
// a number such as 29.39 across two lines), kept until the page, the width or the font changes
// (an idle frame allocates nothing).
struct PageLines {
  std::vector<std::pair<const char*, const char*>> lines;
  const char* text = nullptr;
  float width = 0, font = 0;
  uint64_t version = ~uint64_t(0);  // CourseState::version: the page (and its part) shown
  void update(const char* t, float w, uint64_t v, float f) {
    if (t == text && w == width && v == version && f == font) return;
    text = t;
    width = w;
    version = v;
    font = f;
    lines.clear();
    const char* p = t;
    const char* end = t + std::strlen(t);
    while (p <= end) {
      const char* nl = std::find(p, end, '\n');
      const char* line = p;
      while (true) {
        const char* cut = nullptr;
        for (const char* q = line; q <= nl; ++q) {
          if (q != nl && *q != ' ') continue;
          if (cut && ImGui::CalcTextSize(line, q).x > w) break;
          cut = q;
          if (q == nl) break;
        }
        if (ImGui::CalcTextSize(line, cut).x > w) {  // one word wider than the column: broken (WordBreak)
          const char* brk = WordBreak(line, cut, w);
          lines.emplace_back(line, brk);
          line = brk;
          continue;
        }
        lines.emplace_back(line, cut);
        if (cut >= nl) break;
        line = cut + 1;
      }
      if (nl == end) break;
      p = nl + 1;
    }
  }
};

// Cuts a page into parts of at most `room` pixels: its text's lines (line_h each), then the
// outline's note and the questions (tail[k], as tall as they were drawn; never cut). Fills
// first[k] with part k's first item (lines count from 0, the tail from the number of lines) and
// returns the number of parts (1: the page fits). A cut among the lines falls at a paragraph's
// end where one is in the part's last third.
int PlanParts(const PageLines& pl, float line_h, float room, const std::vector<float>& tail, std::vector<int>* first) {
  const int n = int(pl.lines.size()), total = n + int(tail.size());
  auto h = [&](int i) { return i < n ? line_h : tail[size_t(i - n)]; };
  auto paragraph_end = [&](int i) { return i < n && pl.lines[size_t(i)].first == pl.lines[size_t(i)].second; };
  first->assign(1, 0);
  float all = 0;
  for (int i = 0; i < total; ++i) all += h(i);
  if (all <= room + line_h) return 1;  // (the part's note line is not needed then)
  float used = 0;
  int start = 0;
  for (int i = 0; i < total; ++i) {
    if (used + h(i) > room && i > start) {
      int cut = i;
      if (i <= n)
        for (int k = i; k > start + 2 * (i - start) / 3; --k)
          if (paragraph_end(k - 1)) {
            cut = k;
            break;
          }
      first->push_back(cut);
      start = cut;
      used = 0;
      for (int k = cut; k < i; ++k) used += h(k);  // the lines carried over to the new part
    }
    used += h(i);
  }
  return int(first->size());
}

void DrawQuestion(AppState& s, int qi, const course::Question& q) {
  AnswerState& a = s.course.answers[size_t(qi)];
  ImGui::PushID(qi);
  ImGui::Separator();
  ImGui::PushTextWrapPos(0.0f);
  ImGui::Text("Question %d: %s", qi + 1, q.prompt.c_str());
  ImGui::PopTextWrapPos();
  const bool locked = a.correct || a.revealed;
  bool submit = false;
  if (q.kind == course::Question::Kind::choice) {
    // The letter starts the choice's wrapped text rather than labelling the button: beside a
    // labelled button the text kept the width of "a)" and a spacing less on every line, and a
    // narrow column's last question took a line or two more than the page had (fp8's page 2 at
    // 1024x768 in presentation mode scrolled). The text selects the choice as the button does.
    for (size_t c = 0; c < q.choices.size(); ++c) {
      ImGui::PushID(int(c));
      if (ImGui::RadioButton("##choice", a.choice == int(c)) && !locked) a.choice = int(c);
      ImGui::SameLine(0.0f, ImGui::GetStyle().ItemInnerSpacing.x);
      char text[512];  // no allocation in an idle frame
      std::snprintf(text, sizeof text, "%c) %s", char('a' + c), q.choices[c].c_str());
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(text);
      ImGui::PopTextWrapPos();
      if (ImGui::IsItemClicked() && !locked) a.choice = int(c);
      ImGui::PopID();
    }
  } else {
    // The field keeps 9 font sizes where the tolerance fits beside it, narrows to 6 to make room,
    // and below that the tolerance goes under it ("within 0.1%" was cut at a narrow column's edge).
    const char* tol = q.kind == course::Question::Kind::budget ? "Br,Bc,M" : q.tolerance_text.c_str();
    const float fs = ImGui::GetFontSize(), avail = ImGui::GetContentRegionAvail().x;
    const float beside = avail - ImGui::CalcTextSize(tol).x - ImGui::GetStyle().ItemSpacing.x;
    ImGui::SetNextItemWidth(beside >= 6 * fs ? std::min(9 * fs, beside) : std::min(9 * fs, avail));
    const ImGuiInputTextFlags f = ImGuiInputTextFlags_EnterReturnsTrue | (locked ? ImGuiInputTextFlags_ReadOnly : 0);
    submit |= ImGui::InputText("##answer", a.text, sizeof a.text, f);
    if (beside >= 6 * fs) ImGui::SameLine();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", tol);
    ImGui::PopTextWrapPos();
  }
  if (!locked) {
    if (ImGui::Button("Check")) submit = true;
    // The tries left, beside the button where they fit (written short, then on a line of their
    // own), never cut at the column's edge.
    char tries[2][64];
    std::snprintf(tries[0], sizeof tries[0], "try %d; the answer shows after %d", a.tries + 1, kRevealAfterTries);
    std::snprintf(tries[1], sizeof tries[1], "try %d of %d", a.tries + 1, kRevealAfterTries);
    const char* shown = LongestFitting(LineRoomAfterItem(), {tries[0], tries[1]});
    if (*shown) ImGui::SameLine();
    else shown = tries[0];
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", shown);
    ImGui::PopTextWrapPos();
  }
  if (submit && !locked) s.course.submit(qi);
  if (!a.feedback.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, a.correct ? kPassText : (a.revealed ? kBoundText : kErrorText));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(a.feedback.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
  }
  ImGui::PopID();
}

// The chapter picker's text: "14. fp8".
void ChapterPreview(const CourseState& c, char* out, size_t n) {
  const int cur = course::chapter_index(c.chapter->id);
  std::snprintf(out, n, "%d. %s", cur + 1, course::chapter_list()[size_t(cur)].id);
}

// The picker's width where it is as wide as its text (the arrow and the frame's padding included).
float ChapterPickerFitW(const char* preview) {
  return ImGui::CalcTextSize(preview).x + 2 * ImGui::GetStyle().FramePadding.x + ImGui::GetFrameHeight() +
         ImGui::GetFontSize();
}

// The chapter picker: every chapter with its remembered progress; `width` -1: the column's.
// `tall`: the window has lines to spare for a name wider than the picker.
void DrawChapterPicker(AppState& s, float width, bool tall) {
  CourseState& c = s.course;
  const auto& list = course::chapter_list();
  const int cur = course::chapter_index(c.chapter->id);
  char preview[160];
  ChapterPreview(c, preview, sizeof preview);
  // A name wider than the picker with its arrow (font scale 2.5 in a 1024x768 window cut
  // "5. algorithm-1" to "5. algorithm-") gets the arrow's room (the combo opens on a click all
  // the same), then loses its number; where even the name is wider, the picker shows "chapter 7"
  // and the name is written above it, wrapped after a '-' (in a short window, in its tooltip).
  const float w = width < 0 ? ImGui::GetContentRegionAvail().x : width, pad = 2 * ImGui::GetStyle().FramePadding.x;
  bool no_arrow = ImGui::CalcTextSize(preview).x + pad + ImGui::GetFrameHeight() > w;
  const char* space = std::strchr(preview, ' ');
  const char* shown = no_arrow && space && ImGui::CalcTextSize(preview).x + pad > w ? space + 1 : preview;
  char numbered[32];
  const char* name_only = nullptr;
  if (ImGui::CalcTextSize(shown).x + pad > w) {
    if (tall) TextWrappedAtSpaces(shown);
    else name_only = shown;
    std::snprintf(numbered, sizeof numbered, "chapter %d", cur + 1);
    shown = numbered;
    no_arrow = false;
  }
  c.picker_cut_px = ImGui::CalcTextSize(shown).x + pad + (no_arrow ? 0.0f : ImGui::GetFrameHeight()) - w;
  ImGui::SetNextItemWidth(width);
  if (!ImGui::BeginCombo("##chapter", shown, no_arrow ? ImGuiComboFlags_NoArrowButton : 0)) {
    if (name_only && ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %s", name_only, c.chapter->title.c_str());
    return;
  }
  for (size_t k = 0; k < list.size(); ++k) {
    const auto it = c.progress.find(list[k].id);
    char label[200];
    if (it != c.progress.end() && it->second.pages > 0)
      std::snprintf(label, sizeof label, "%zu. %s  (page %d of %d, %d of %d right)", k + 1, list[k].id,
                    it->second.pages_seen, it->second.pages, it->second.correct, it->second.questions);
    else
      std::snprintf(label, sizeof label, "%zu. %s", k + 1, list[k].id);
    if (ImGui::Selectable(label, int(k) == cur) && int(k) != cur) {
      try {
        c.open(s, list[k].id, 0);
      } catch (const InputError& e) {
        c.message = e.what();
      }
    }
  }
  ImGui::EndCombo();
}

}  // namespace

void DrawCoursePanel(AppState& s, const Layout& l) {
  CourseState& c = s.course;
  if (!c.chapter) return;
  c.column_w = l.course_size.x;
  c.centre_w = l.center_size.x;
  BeginFitted(s, "Course", l.course_pos, l.course_size, kPanelFlags);
  const course::Chapter& ch = *c.chapter;
  const course::Page& p = *c.current_page();
  // The status in three parts, each kept whole ("answered / right" was split in a narrow column):
  // a part that does not fit the rest of the line starts the next, without its separator. Where
  // the status does not fit one line, its parts are written short ("0/8 right") and, in a short
  // window, the page number goes beside a picker only as wide as its text: in a narrow column the
  // status took three lines, which the page's last question needed (fp8's page 2 at 1024x768 in
  // presentation mode scrolled).
  const auto it = c.progress.find(ch.id);
  const int right = it == c.progress.end() ? 0 : it->second.correct;
  char status[3][64];
  const float avail = ImGui::GetContentRegionAvail().x, status_gap = ImGui::CalcTextSize("  ").x;
  auto write_status = [&](bool short_form) {
    std::snprintf(status[0], sizeof status[0], "page %d of %zu", c.page + 1, ch.pages.size());
    if (short_form) std::snprintf(status[1], sizeof status[1], "|  %d/%zu right", right, ch.question_count());
    else std::snprintf(status[1], sizeof status[1], "|  %d of %zu answered right", right, ch.question_count());
    std::snprintf(status[2], sizeof status[2], "|  seed %llu", (unsigned long long)c.seed);
    return ImGui::CalcTextSize(status[0]).x + ImGui::CalcTextSize(status[1]).x + ImGui::CalcTextSize(status[2]).x +
           2 * status_gap;
  };
  const bool short_status = write_status(false) > avail;
  if (short_status) write_status(true);
  // The chapter's title under the picker where the window is tall enough; in a short one (a
  // 720-line projector) its lines go to the page, and the title to the picker's tooltip.
  const bool title_shown = ImGui::GetIO().DisplaySize.y >= 900;
  char preview[160];
  ChapterPreview(c, preview, sizeof preview);
  const float picker_w = ChapterPickerFitW(preview);
  const bool page_beside =
      short_status && !title_shown && picker_w + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(status[0]).x <= avail;
  DrawChapterPicker(s, page_beside ? picker_w : -1.0f, title_shown);
  if (title_shown) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(ch.title.c_str());
    ImGui::PopTextWrapPos();
  } else if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%s", ch.title.c_str());
  }
  ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
  // In a short window where the short status takes more than a line (font scale 2.5 at 1024x768:
  // three, which left the page no line at all), the answers and the seed go to the page number's
  // tooltip.
  const bool status_tip = !title_shown && short_status && write_status(true) > avail;
  for (int k = 0; k < (status_tip ? 1 : 3); ++k) {
    bool same_line = false;
    if (k == 0 && page_beside) ImGui::SameLine(), same_line = true;
    else if (k > 0) same_line = SameLineIfWidthFits(ImGui::CalcTextSize(status[k]).x, status_gap);
    ImGui::TextUnformatted(k > 0 && !same_line ? status[k] + 3 : status[k]);  // "|  " dropped at a line's start
  }
  if (status_tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s, %s", status[1] + 3, status[2] + 3);
  ImGui::PopStyleColor();
  ImGui::Separator();
  // The page scrolls on its own; the navigation stays at the bottom. Where the column is too narrow
  // for its three buttons (1024x768 in presentation mode cut "New problem"), Back is written "<";
  // where even that is too wide, the buttons take two lines (a second line takes the page's room:
  // questions that fitted the last part scrolled).
  const char* next_label = c.on_last_page() && c.part + 1 >= c.parts ? "Next chapter >" : "Next >";
  const float nav_gap = ImGui::GetStyle().ItemSpacing.x, nav_avail = ImGui::GetContentRegionAvail().x;
  const auto nav_w = [&](const char* back) {
    return ButtonWidth(back) + ButtonWidth(next_label) + ButtonWidth("New problem") + 2 * nav_gap;
  };
  const bool short_back = nav_w("< Back") > nav_avail;
  const char* back_label = short_back ? "<###back" : "< Back";
  const bool nav_one_line = nav_w(back_label) <= nav_avail;
  const float nav_h = ImGui::GetFrameHeightWithSpacing() * (nav_one_line ? 1.6f : 2.6f);
  ImGui::BeginChild("page", ImVec2(0, -nav_h), false);
  c.page_view_h = ImGui::GetWindowHeight();
  static uint64_t seen = 0;  // a new page starts at the top
  if (seen != c.version) {
    ImGui::SetScrollY(0);
    seen = c.version;
  }
  // A page taller than the column is shown in parts (Next and Space go through them first): the
  // text's wrapped lines are cut where the column ends, the questions come with the last part.
  const float line_h = ImGui::GetTextLineHeightWithSpacing(), avail_h = ImGui::GetWindowHeight();
  static PageLines pl;  // the wrapped lines, remade when the page, the width or the font changes
  // The wrap width leaves the scrollbar's room whether or not one shows, so that the lines (and the
  // parts) do not change when it comes and goes.
  const float wrap_w = ImGui::GetWindowWidth() - ImGui::GetStyle().ScrollbarSize - 2 * ImGui::GetCursorPosX();
  pl.update(p.text.c_str(), std::max(wrap_w, ImGui::GetFontSize() * 4), c.version, ImGui::GetFontSize());
  // The outline's note and the questions as tall as they were drawn; a new page's first frame
  // draws it whole to measure them (tail_h empty until then).
  // The title, wrapped, with room for "(part 2 of 3)"; the part's note and two lines to spare (a
  // question's height is known from the frames it was drawn in, and can grow by a line).
  // "(part k of n)" follows the title on its line where both fit, else it takes a line of its own
  // (wrapped with the title, "(part 1 of" and "3)" landed on two lines).
  char title[320];
  std::snprintf(title, sizeof title, "%s  (part 99 of 99)", p.title.c_str());
  const bool part_apart = ImGui::CalcTextSize(title).x > wrap_w;
  const float title_h = ImGui::CalcTextSize(p.title.c_str(), nullptr, false, wrap_w).y + (part_apart ? line_h : 0) +
                        ImGui::GetStyle().ItemSpacing.y;
  const float room = avail_h - title_h - 3 * line_h;
  const size_t n_tail = 1 + p.questions.size();
  if (c.tail_h.size() != n_tail) {
    c.tail_h.assign(n_tail, 0.0f);
    c.part_first.assign(1, 0);
    c.parts = 1;
  } else {
    c.parts = PlanParts(pl, line_h, room, c.tail_h, &c.part_first);
  }
  if (c.parts > 1) c.want_w = 1e9f;  // first the widest column the layout allows (ComputeCourseLayout clamps)
  c.part = std::min(c.part, c.parts - 1);
  ImGui::PushStyleColor(ImGuiCol_Text, kBoundText);
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap_w);
  if (c.parts > 1 && !part_apart) {
    ImGui::Text("%s  (part %d of %d)", p.title.c_str(), c.part + 1, c.parts);
  } else {
    ImGui::TextUnformatted(p.title.c_str());
    if (c.parts > 1) ImGui::Text("(part %d of %d)", c.part + 1, c.parts);
  }
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
  const int n_lines = int(pl.lines.size());
  const int first = c.part_first[size_t(c.part)];
  const int last = c.part + 1 < c.parts ? c.part_first[size_t(c.part + 1)] : n_lines + int(n_tail);
  for (int k = first; k < last; ++k) {
    if (k < n_lines) {
      ImGui::TextUnformatted(pl.lines[size_t(k)].first, pl.lines[size_t(k)].second);
      continue;
    }
    const size_t t = size_t(k - n_lines);
    const float y0 = ImGui::GetCursorPosY();
    if (t == 0 && p.scene.outline != course::Panel::none) {
      ImGui::Spacing();
      char look[256];
      std::snprintf(look, sizeof look, "Outlined: %s.", course::panel_title(p.scene.outline));
      DimText(look);
    } else if (t > 0) {
      DrawQuestion(s, int(t - 1), p.questions[t - 1]);
    }
    c.tail_h[t] = std::max(c.tail_h[t], ImGui::GetCursorPosY() - y0);  // only growing: the parts settle
  }
  if (c.part + 1 < c.parts) DimText("(continued: Next > or Space)");
  else if (!c.message.empty()) ErrorText(c.message);
  c.page_overflow = ImGui::GetScrollMaxY();  // what a reader would have to scroll to
  c.page_overflow_x_px = PanelOverflowPx();
  ImGui::EndChild();
  ImGui::Separator();
  if (ImGui::Button(back_label)) c.back(s);
  if (short_back && ImGui::IsItemHovered()) ImGui::SetTooltip("Back (Left)");
  ImGui::SameLine();
  if (ImGui::Button(next_label)) c.next(s);
  SameLineIfButtonFits("New problem");
  if (ImGui::Button("New problem")) c.new_problem(s);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The next seed: other sizes and inputs, other answers");
  const char* keys = "Space/Right: next, Left: back";
  if (SameLineIfWidthFits(ImGui::CalcTextSize(keys).x)) ImGui::TextDisabled("%s", keys);
  c.column_overflow_px = PanelOverflowPx();
  ImGui::End();
}

void DrawCourseRoofline(AppState& s) {
  const CourseState& c = s.course;
  if (c.roofline.series.empty()) {
    DimText("This chapter has no roofline.");
    return;
  }
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (avail.x < 50) return;
  // At least a readable plot (8 lines of text tall; its legend has a dozen rows): the page scrolls.
  const float fs = ImGui::GetFontSize();
  avail.y = std::max(avail.y, plot::figure_height_for(c.roofline, avail.x, ImGui::GetFont(), fs, 8 * fs));
  const ImVec2 p1(p0.x + avail.x, p0.y + avail.y);
  const ImVec2 mouse = ImGui::IsWindowHovered() ? ImGui::GetIO().MousePos : ImVec2(-FLT_MAX, -FLT_MAX);
  const plot::FigureStyle st = ThemeFigureStyle(s);
  if (plot::DrawFigure(ImGui::GetWindowDrawList(), p0, p1, c.roofline, st, ImGui::GetFont(), ImGui::GetFontSize(), mouse,
                       s.bench.hover, sizeof s.bench.hover))
    ImGui::SetTooltip("%s", s.bench.hover);
  ImGui::Dummy(avail);
}

void DrawCourseIoExplorer(AppState& s) {
  IoExplorerState& io = s.course.io;
  // The sliders: N in powers of two, d in steps of 16, M in KiB. Each value is written before its
  // slider, not in it: ImGui centres a slider's text, and the grab covered it ("N = 16384" under
  // the grab at 1280x720). A label's column is as wide as its widest value, so that the sliders
  // stay put as the values change; the three go on one line where each slider keeps 4 font sizes.
  const float w = ImGui::GetContentRegionAvail().x, sp = ImGui::GetStyle().ItemSpacing.x;
  const float label_w[3] = {ImGui::CalcTextSize("N = 65536").x, ImGui::CalcTextSize("d = 256").x,
                            ImGui::CalcTextSize("M = 1024 KiB").x};
  const float labels_w = label_w[0] + label_w[1] + label_w[2];
  const bool one_line = labels_w + 5 * sp + 3 * ImGui::GetFontSize() * 4 <= w;
  const float column_w = std::max({label_w[0], label_w[1], label_w[2]});  // one under another: sliders aligned
  int d16 = io.d / 16;
  int* values[3] = {&io.log2_n, &d16, &io.kib};
  const int lo[3] = {8, int(course::kIoMinD / 16), int(course::kIoMinKiB)};
  const int hi[3] = {16, int(course::kIoMaxD / 16), int(course::kIoMaxKiB)};
  static const char* const kIds[3] = {"##io-n", "##io-d", "##io-m"};
  char label[48];
  bool moved = false;
  io.label_gap_px = FLT_MAX;
  for (int k = 0; k < 3; ++k) {
    if (k == 0) std::snprintf(label, sizeof label, "N = %lld", (long long)io.n());
    else if (k == 1) std::snprintf(label, sizeof label, "d = %d", io.d);
    else std::snprintf(label, sizeof label, "M = %d KiB", io.kib);
    if (k > 0 && one_line) ImGui::SameLine(0, sp);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(label);
    const ImVec2 t1 = ImGui::GetItemRectMax();
    ImGui::SameLine(0, sp + (one_line ? label_w[k] : column_w) - ImGui::GetItemRectSize().x);
    ImGui::SetNextItemWidth(one_line ? (w - labels_w - 5 * sp) / 3 : w - column_w - sp);
    if (ImGui::SliderInt(kIds[k], values[k], lo[k], hi[k], "")) {
      moved = true;
      if (k == 1) io.d = d16 * 16;
    }
    // For --dump-state: from the value's text to its slider (below 0: the text is on the slider).
    io.label_gap_px = std::min(io.label_gap_px, ImGui::GetItemRectMin().x - t1.x);
  }
  if (moved) io.rebuild();
  // The closed forms under the figure, wrapped to the width; the figure takes the rest.
  const float wrap = ImGui::GetContentRegionAvail().x;
  float forms_h = ImGui::GetStyle().ItemSpacing.y * 2;
  for (const std::string& f : io.forms)  // an upper bound of what TextWrappedAtSpaces takes (it breaks less often)
    forms_h += ImGui::CalcTextSize(f.c_str(), nullptr, false, wrap).y + ImGui::GetFontSize() +
               ImGui::GetStyle().ItemSpacing.y;
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float fs = ImGui::GetFontSize();
  const float fig_h = std::max(avail.y - forms_h, plot::figure_height_for(io.figure, avail.x, ImGui::GetFont(), fs, 8 * fs));
  if (avail.x >= 50) {
    const ImVec2 p1(p0.x + avail.x, p0.y + fig_h);
    const ImVec2 mouse = ImGui::IsWindowHovered() ? ImGui::GetIO().MousePos : ImVec2(-FLT_MAX, -FLT_MAX);
    const plot::FigureStyle st = ThemeFigureStyle(s);
    if (plot::DrawFigure(ImGui::GetWindowDrawList(), p0, p1, io.figure, st, ImGui::GetFont(), ImGui::GetFontSize(), mouse,
                         s.bench.hover, sizeof s.bench.hover))
      ImGui::SetTooltip("%s", s.bench.hover);
    ImGui::Dummy(ImVec2(avail.x, fig_h));
  }
  // Wrapped at spaces only: ImGui's wrapping also breaks after a '.', which cut "2.705e+08" in two.
  for (const std::string& f : io.forms) TextWrappedAtSpaces(f.c_str());
}

void DrawCourseOutline(const AppState& s, const Layout& l) {
  if (!s.course.active) return;
  ImVec2 a, b;
  switch (s.course.outline()) {
    case course::Panel::none: return;
    case course::Panel::algorithm: a = l.algo_pos; b = l.algo_size; break;
    case course::Panel::memory: a = l.memory_pos; b = l.memory_size; break;
    case course::Panel::softmax: a = l.softmax_pos; b = l.softmax_size; break;
    default: a = l.center_pos; b = l.center_size; break;  // tiles, lesson, bench, roofline: the centre
  }
  if (b.x <= 0 || b.y <= 0) return;
  const float t = 3.0f * std::max(1.0f, s.display.now.font_scale);
  ImGui::GetForegroundDrawList()->AddRect(ImVec2(a.x + t * 0.5f, a.y + t * 0.5f), ImVec2(a.x + b.x - t * 0.5f, a.y + b.y - t * 0.5f),
                                          kCourseOutlineCol, 0.0f, 0, t);
}

}  // namespace flashstep::gui
