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

namespace flashstep::gui {

// The page's panel: a violet no other outline of the app uses (reads, writes, compute, SRAM,
// dropped entries have theirs).
constexpr ImU32 kCourseOutlineCol = IM_COL32(150, 80, 255, 255);

Layout ComputeCourseLayout(ImVec2 d, float controls_h, const DisplaySettings& ds, float want_w) {
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
  const float ha = std::floor(body * wa / total), hm = std::floor(body * wm / total);
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

// Text wrapped at spaces only (ImGui's own wrapping also breaks after '.', which splits a number
// such as 29.39 across two lines). Draws line by line without allocating.
void WrappedWords(const char* text) {
  const float width = std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 4);
  const char* p = text;
  const char* end = text + std::strlen(text);
  while (p <= end) {
    const char* nl = std::find(p, end, '\n');
    const char* line = p;
    while (true) {  // one wrapped line of the paragraph [line, nl)
      const char* cut = nullptr;
      for (const char* q = line; q <= nl; ++q) {
        if (q != nl && *q != ' ') continue;
        if (cut && ImGui::CalcTextSize(line, q).x > width) break;
        cut = q;
        if (q == nl) break;
      }
      ImGui::TextUnformatted(line, cut);
      if (cut >= nl) break;
      line = cut + 1;
    }
    if (nl == end) break;
    p = nl + 1;
  }
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
    for (size_t c = 0; c < q.choices.size(); ++c) {
      char label[16];
      std::snprintf(label, sizeof label, "%c)", char('a' + c));
      if (ImGui::RadioButton(label, a.choice == int(c)) && !locked) a.choice = int(c);
      ImGui::SameLine();
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(q.choices[c].c_str());
      ImGui::PopTextWrapPos();
    }
  } else {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
    const ImGuiInputTextFlags f = ImGuiInputTextFlags_EnterReturnsTrue | (locked ? ImGuiInputTextFlags_ReadOnly : 0);
    submit |= ImGui::InputText("##answer", a.text, sizeof a.text, f);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", q.kind == course::Question::Kind::budget ? "Br,Bc,M" : q.tolerance_text.c_str());
  }
  if (!locked) {
    if (ImGui::Button("Check")) submit = true;
    ImGui::SameLine();
    ImGui::TextDisabled("try %d; the answer shows after %d", a.tries + 1, kRevealAfterTries);
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

// The chapter picker: every chapter with its remembered progress.
void DrawChapterPicker(AppState& s) {
  CourseState& c = s.course;
  const auto& list = course::chapter_list();
  const int cur = course::chapter_index(c.chapter->id);
  char preview[160];
  std::snprintf(preview, sizeof preview, "%d. %s", cur + 1, list[size_t(cur)].id);
  ImGui::SetNextItemWidth(-1);
  if (!ImGui::BeginCombo("##chapter", preview)) return;
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
  PlaceWindow(l.course_pos, l.course_size);
  ImGui::Begin("Course", nullptr, kPanelFlags);
  const course::Chapter& ch = *c.chapter;
  const course::Page& p = *c.current_page();
  DrawChapterPicker(s);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(ch.title.c_str());
  ImGui::PopTextWrapPos();
  const auto it = c.progress.find(ch.id);
  char status[160];
  std::snprintf(status, sizeof status, "page %d of %zu  |  %d of %zu answered right  |  seed %llu", c.page + 1,
                ch.pages.size(), it == c.progress.end() ? 0 : it->second.correct, ch.question_count(),
                (unsigned long long)c.seed);
  DimText(status);
  ImGui::Separator();
  // The page scrolls on its own; the navigation stays at the bottom.
  const float nav_h = ImGui::GetFrameHeightWithSpacing() * 1.6f;
  ImGui::BeginChild("page", ImVec2(0, -nav_h), false);
  static uint64_t seen = 0;  // a new page starts at the top
  if (seen != c.version) {
    ImGui::SetScrollY(0);
    seen = c.version;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, kBoundText);
  ImGui::TextUnformatted(p.title.c_str());
  ImGui::PopStyleColor();
  WrappedWords(p.text.c_str());
  if (p.scene.outline != course::Panel::none) {
    ImGui::Spacing();
    char look[256];
    std::snprintf(look, sizeof look, "Outlined: %s.", course::panel_title(p.scene.outline));
    DimText(look);
  }
  for (size_t q = 0; q < p.questions.size(); ++q) DrawQuestion(s, int(q), p.questions[q]);
  if (!c.message.empty()) ErrorText(c.message);
  c.page_overflow = ImGui::GetScrollMaxY();  // what a reader would have to scroll to
  // When it scrolls, ask for a wider column next frame: a page's height falls about as its width
  // grows (text wraps into fewer lines). Only widening, so the layout settles in a few frames.
  if (c.page_overflow > 0.5f) {
    const float visible = std::max(ImGui::GetWindowHeight(), 1.0f);
    c.want_w = std::max(c.want_w, std::ceil(l.course_size.x * (visible + c.page_overflow) / visible * 1.03f));
  }
  ImGui::EndChild();
  ImGui::Separator();
  if (ImGui::Button("< Back")) c.back(s);
  ImGui::SameLine();
  if (ImGui::Button(c.on_last_page() ? "Next chapter >" : "Next >")) c.next(s);
  ImGui::SameLine();
  if (ImGui::Button("New problem")) c.new_problem(s);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The next seed: other sizes and inputs, other answers");
  const char* keys = "Space/Right: next, Left: back";
  ImGui::SameLine();
  if (ImGui::CalcTextSize(keys).x <= ImGui::GetContentRegionAvail().x) ImGui::TextDisabled("%s", keys);
  else ImGui::NewLine();
  ImGui::End();
}

void DrawCourseRoofline(AppState& s) {
  const CourseState& c = s.course;
  if (c.roofline.series.empty()) {
    DimText("This chapter has no roofline.");
    return;
  }
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  if (avail.x < 50 || avail.y < 50) return;
  const ImVec2 p1(p0.x + avail.x, p0.y + avail.y);
  const ImVec2 mouse = ImGui::IsWindowHovered() ? ImGui::GetIO().MousePos : ImVec2(-FLT_MAX, -FLT_MAX);
  const plot::FigureStyle st = s.display.now.theme == Theme::light ? plot::light_figure_style() : plot::dark_figure_style();
  if (plot::DrawFigure(ImGui::GetWindowDrawList(), p0, p1, c.roofline, st, ImGui::GetFont(), ImGui::GetFontSize(), mouse,
                       s.bench.hover, sizeof s.bench.hover))
    ImGui::SetTooltip("%s", s.bench.hover);
  ImGui::Dummy(avail);
}

void DrawCourseIoExplorer(AppState& s) {
  IoExplorerState& io = s.course.io;
  // The sliders: N in powers of two, d in steps of 16, M in KiB; each labelled with its value.
  const float w = ImGui::GetContentRegionAvail().x;
  const float sw = std::max(ImGui::GetFontSize() * 5, (w - ImGui::GetStyle().ItemSpacing.x * 2) / 3);
  char label[48];
  bool moved = false;
  std::snprintf(label, sizeof label, "N = %lld", (long long)io.n());
  ImGui::SetNextItemWidth(sw);
  moved |= ImGui::SliderInt("##io-n", &io.log2_n, 8, 16, label);
  ImGui::SameLine();
  int d16 = io.d / 16;
  std::snprintf(label, sizeof label, "d = %d", io.d);
  ImGui::SetNextItemWidth(sw);
  if (ImGui::SliderInt("##io-d", &d16, int(course::kIoMinD / 16), int(course::kIoMaxD / 16), label)) {
    io.d = d16 * 16;
    moved = true;
  }
  ImGui::SameLine();
  std::snprintf(label, sizeof label, "M = %d KiB", io.kib);
  ImGui::SetNextItemWidth(sw);
  moved |= ImGui::SliderInt("##io-m", &io.kib, int(course::kIoMinKiB), int(course::kIoMaxKiB), label);
  if (moved) io.rebuild();
  // The closed forms under the figure, wrapped to the width; the figure takes the rest.
  const float wrap = ImGui::GetContentRegionAvail().x;
  float forms_h = ImGui::GetStyle().ItemSpacing.y * 2;
  for (const std::string& f : io.forms)
    forms_h += ImGui::CalcTextSize(f.c_str(), nullptr, false, wrap).y + ImGui::GetStyle().ItemSpacing.y;
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float fig_h = std::max(avail.y - forms_h, ImGui::GetFontSize() * 8);
  if (avail.x >= 50) {
    const ImVec2 p1(p0.x + avail.x, p0.y + fig_h);
    const ImVec2 mouse = ImGui::IsWindowHovered() ? ImGui::GetIO().MousePos : ImVec2(-FLT_MAX, -FLT_MAX);
    const plot::FigureStyle st = s.display.now.theme == Theme::light ? plot::light_figure_style() : plot::dark_figure_style();
    if (plot::DrawFigure(ImGui::GetWindowDrawList(), p0, p1, io.figure, st, ImGui::GetFont(), ImGui::GetFontSize(), mouse,
                         s.bench.hover, sizeof s.bench.hover))
      ImGui::SetTooltip("%s", s.bench.hover);
    ImGui::Dummy(ImVec2(avail.x, fig_h));
  }
  ImGui::PushTextWrapPos(0.0f);
  for (const std::string& f : io.forms) ImGui::TextUnformatted(f.c_str());
  ImGui::PopTextWrapPos();
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
