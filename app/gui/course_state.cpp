#include "app/gui/course_state.h"

#include "app/gui/app_state.h"
#include "app/course/answer.h"
#include "app/course/io_explorer.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace flashstep::gui {

namespace {

// The app's run for a course run: the preset's name when it is one, else the chapter's.
void describe_run(AppState& s, const course::Chapter& ch, const course::RunDecl& r, const course::Page& p) {
  s.preset_name = r.preset.empty() ? "course" : r.preset;
  s.preset_title = "Course, " + ch.id + ": " + p.title;
  s.preset_description = "The problem: " + ch.problem_text;
}

}  // namespace

void IoExplorerState::set(int64_t n_, int64_t d_, int64_t M_) {
  log2_n = 0;
  while ((int64_t(2) << log2_n) <= std::clamp(n_, course::kIoMinN, course::kIoMaxN)) ++log2_n;
  d = int(std::clamp<int64_t>(d_ / 16 * 16, course::kIoMinD, course::kIoMaxD));
  kib = int(std::clamp<int64_t>(M_ / 256, course::kIoMinKiB, course::kIoMaxKiB));
  rebuild();
}

void IoExplorerState::rebuild() {
  figure = course::io_figure(d, M(), n());
  forms = course::io_forms(course::io_row(n(), d, M()));
}

const course::Page* CourseState::current_page() const {
  if (!chapter || chapter->pages.empty()) return nullptr;
  return &chapter->pages[size_t(std::clamp(page, 0, int(chapter->pages.size()) - 1))];
}

bool CourseState::on_last_page() const { return chapter && page + 1 >= int(chapter->pages.size()); }

course::Panel CourseState::outline() const {
  const course::Page* p = current_page();
  return p ? p->scene.outline : course::Panel::none;
}

course::CentreView CourseState::centre() const {
  const course::Page* p = current_page();
  return p ? p->scene.view : course::CentreView::tiles;
}

unsigned CourseState::shown_panels() const {
  unsigned bits = kPanelControls;
  const course::Page* p = current_page();
  if (!p) return bits;
  for (course::Panel x : p->scene.panels) {
    if (x == course::Panel::algorithm) bits |= kPanelAlgorithm;
    if (x == course::Panel::memory) bits |= kPanelMemory;
    if (x == course::Panel::softmax) bits |= kPanelSoftmax;
  }
  return bits;
}

void CourseState::open(AppState& s, const std::string& id, int pg, bool strict) {
  auto ch = std::make_shared<const course::Chapter>(course::make_chapter(id, seed));  // throws before a change
  if (strict && (pg < 0 || pg >= int(ch->pages.size())))
    throw InputError("chapter " + id + " has pages 1 to " + std::to_string(ch->pages.size()) + " (got " +
                     std::to_string(int64_t(pg) + 1) + ")");
  chapter = std::move(ch);
  roofline = chapter->roofline ? course::roofline_figure(*chapter->roofline) : plot::Figure{};
  active = true;
  run_key.clear();
  go(s, pg);
}

void CourseState::go(AppState& s, int pg) {
  if (!chapter) return;
  page = std::clamp(pg, 0, int(chapter->pages.size()) - 1);
  answers.assign(current_page()->questions.size(), AnswerState{});
  // Questions answered right before stay right (the progress remembers them).
  const ChapterProgress& pr = progress[chapter->id];
  for (size_t q = 0; q < answers.size(); ++q) {
    const course::Question& qq = current_page()->questions[q];
    if (std::find(pr.right.begin(), pr.right.end(), qq.id) != pr.right.end()) {
      answers[q].correct = true;
      answers[q].feedback = "answered right before: " + qq.answer_text;
      std::snprintf(answers[q].text, sizeof answers[q].text, "%s", qq.answer_text.c_str());
      if (qq.kind == course::Question::Kind::choice) answers[q].choice = qq.correct;
    }
  }
  apply_scene(s);
  note_progress();
  ++version;
  want_w = 0;
  part = 0;
  parts = 1;
  tail_h.clear();
}

void CourseState::next(AppState& s) {
  if (!chapter) return;
  if (part + 1 < parts) {
    ++part;
    ++version;  // the column scrolls to the top
    return;
  }
  if (!on_last_page()) return go(s, page + 1);
  const int k = course::chapter_index(chapter->id);
  if (k + 1 < int(course::chapter_list().size())) open(s, course::chapter_list()[size_t(k + 1)].id, 0);
}

void CourseState::back(AppState& s) {
  if (!chapter) return;
  if (part > 0) {
    --part;
    ++version;
    return;
  }
  if (page > 0) return go(s, page - 1);
  const int k = course::chapter_index(chapter->id);
  if (k > 0) {
    open(s, course::chapter_list()[size_t(k - 1)].id, 0);
    go(s, int(chapter->pages.size()) - 1);
  }
}

void CourseState::new_problem(AppState& s) {
  if (!chapter) return;
  ++seed;
  const int pg = page;
  open(s, chapter->id, pg);
}

void CourseState::apply_scene(AppState& s) {
  const course::Page& p = *current_page();
  const course::Scene& sc = p.scene;
  const course::RunDecl& r = chapter->run(sc.run);
  const std::string key = chapter->id + "/" + r.name + "/" + std::to_string(seed);
  if (key != run_key || !s.run) {
    s.set_run(make_run_view(r.spec, r.backward));
    run_key = key;
    s.form.from_spec(r.spec);
    s.form.backward = r.backward;
    s.form.validate();
  }
  describe_run(s, *chapter, r, p);
  s.seek(size_t(std::clamp<int64_t>(sc.step, 0, int64_t(s.steps()))));
  s.playing = false;
  if (!sc.lesson.empty()) {
    for (const course::LessonDecl& l : chapter->lessons)
      if (l.name == sc.lesson) {
        std::string vals;
        char buf[32];
        for (double x : l.values) {
          std::snprintf(buf, sizeof buf, "%s%g", vals.empty() ? "" : ", ", x);
          vals += buf;
        }
        std::snprintf(s.lesson.values, sizeof s.lesson.values, "%s", vals.c_str());
        std::string vs;  // the value vector (empty for a lesson without one)
        for (double x : l.v) {
          std::snprintf(buf, sizeof buf, "%s%g", vs.empty() ? "" : ", ", x);
          vs += buf;
        }
        std::snprintf(s.lesson.v, sizeof s.lesson.v, "%s", vs.c_str());
        s.lesson.block = int(l.block);
        s.lesson.recompute();
        const int nb = int(s.lesson.lesson.blocks.size());
        s.lesson.shown = sc.lesson_shown < 0 ? nb : std::min(sc.lesson_shown, nb);
      }
  }
  switch (sc.view) {
    case course::CentreView::lesson: s.view = View::lesson; break;
    case course::CentreView::bench:
      s.view = View::bench;
      if (!sc.bench_figure.empty() && s.bench.loaded) s.bench.select(plot::parse_figure(sc.bench_figure), 64);
      break;
    case course::CentreView::pipeline:
      s.view = View::pipeline;
      s.pipeline.technique = sc.pipeline_technique;
      s.pipeline.d = sc.pipeline_d;
      s.pipeline.n = sc.pipeline_n;
      s.pipeline.causal = false;
      s.pipeline.rebuild();
      break;
    case course::CentreView::io_explorer:  // the centre panel draws it in place of the tabs
      io.set(sc.io_n, sc.io_d, sc.io_M);
      s.view = View::tiles;
      break;
    default: s.view = View::tiles; break;
  }
  s.view_changed = true;
}

bool CourseState::submit(int q) {
  const course::Page* p = current_page();
  if (!p || q < 0 || q >= int(answers.size())) return false;
  const course::Question& qq = p->questions[size_t(q)];
  AnswerState& a = answers[size_t(q)];
  if (a.correct || a.revealed) return a.correct;
  std::string typed = a.text;
  if (qq.kind == course::Question::Kind::choice) {
    if (a.choice < 0) {
      a.feedback = "pick one of the answers first";
      return false;
    }
    typed = std::string(1, char('a' + a.choice));
  }
  const course::Verdict v = course::check_answer(qq, typed);
  if (v.bad_format) {  // not counted as a try: say what the format is
    a.feedback = v.message;
    return false;
  }
  ++a.tries;
  if (v.correct) {
    a.correct = true;
    a.feedback = "Right." + (v.message.empty() || qq.kind != course::Question::Kind::budget ? std::string() : " " + v.message);
    ChapterProgress& pr = progress[chapter->id];
    if (std::find(pr.right.begin(), pr.right.end(), qq.id) == pr.right.end()) pr.right.push_back(qq.id);
    note_progress();
    return true;
  }
  a.feedback = "Not right: " + v.message + ". Hint: " + qq.hint;
  if (qq.hint_panel != course::Panel::none) a.feedback += std::string(" Look at ") + course::panel_title(qq.hint_panel) + ".";
  if (a.tries >= kRevealAfterTries) {
    a.revealed = true;
    a.feedback += " The answer: " + qq.answer_text + ".";
  }
  return false;
}

void CourseState::note_progress() {
  if (!chapter) return;
  ChapterProgress& pr = progress[chapter->id];
  pr.pages = int(chapter->pages.size());
  pr.pages_seen = std::max(pr.pages_seen, page + 1);
  pr.questions = int(chapter->question_count());
  pr.correct = int(pr.right.size());
  save_progress();
}

void CourseState::load_progress(const std::string& path) {
  progress_path = path;
  const nlohmann::json j = load_course_progress(path);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_object() || course::chapter_index(it.key()) < 0) continue;  // another version's chapter
    ChapterProgress pr;
    pr.pages_seen = it.value().value("pages_seen", 0);
    pr.pages = it.value().value("pages", 0);
    pr.questions = it.value().value("questions", 0);
    const nlohmann::json right = it.value().value("right", nlohmann::json::array());
    for (const auto& r : right)
      if (r.is_string()) pr.right.push_back(r.get<std::string>());
    pr.correct = int(pr.right.size());
    progress[it.key()] = pr;
  }
}

void CourseState::save_progress() {
  if (progress_path.empty()) return;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, pr] : progress)
    j[id] = {{"pages_seen", pr.pages_seen}, {"pages", pr.pages}, {"questions", pr.questions}, {"right", pr.right}};
  try {
    save_course_progress(j, progress_path);
    message.clear();
  } catch (const InputError& e) {
    message = std::string("progress not remembered: ") + e.what();
  }
}

void CourseState::run_command(AppState& s, const std::string& command) {
  std::istringstream in(command);
  std::string verb;
  in >> verb;
  if (verb == "next") return next(s);
  if (verb == "back") return back(s);
  if (verb == "new-problem") return new_problem(s);
  if (verb == "open") {
    std::string id, pg_text, extra;
    in >> id >> pg_text >> extra;
    if (id.empty() || !extra.empty())
      throw InputError("script: course open ID [PAGE] (got 'open" + command.substr(std::min(command.size(), size_t(4))) + "')");
    int pg = 1;
    if (!pg_text.empty()) {
      const bool digits = pg_text.size() <= 6 && pg_text.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) throw InputError("script: course open " + id + " PAGE: a page number (got '" + course::quoted(pg_text) + "')");
      pg = std::stoi(pg_text);
    }
    try {
      return open(s, id, pg - 1, true);
    } catch (const InputError& e) {
      throw InputError(std::string("script: course open: ") + e.what());
    }
  }
  if (verb == "answer") {
    int q = 0;
    in >> q;
    std::string rest;
    std::getline(in, rest);
    if (q < 1 || q > int(answers.size()))
      throw InputError("script: course answer Q TEXT: this page has " + std::to_string(answers.size()) + " questions");
    AnswerState& a = answers[size_t(q - 1)];
    const size_t b = rest.find_first_not_of(' ');
    rest = b == std::string::npos ? "" : rest.substr(b);
    if (rest.size() >= sizeof a.text)  // the answer field's size: refused, not cut
      throw InputError("script: course answer Q TEXT: the text is longer than " + std::to_string(sizeof a.text - 1) +
                       " characters");
    const course::Question& qq = current_page()->questions[size_t(q - 1)];
    if (qq.kind == course::Question::Kind::choice) {
      const course::Reading r = course::read_answer(qq, rest);  // "b", "B", "b)" as typed in the terminal
      if (!r.ok) {
        a.feedback = r.slip;
        return;
      }
      a.choice = r.letter;
    } else {
      std::snprintf(a.text, sizeof a.text, "%s", rest.c_str());
    }
    submit(q - 1);
    return;
  }
  throw InputError("script: course knows next, back, new-problem, open ID [PAGE], answer Q TEXT (got '" + verb + "')");
}

}  // namespace flashstep::gui
