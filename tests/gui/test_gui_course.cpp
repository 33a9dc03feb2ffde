// The course as a mode of the app, in-process: --course opens a chapter's page on its scene (the
// run the page's numbers come from, the step, the view, the side panels, the outline), the pages
// and chapters follow each other, a wrong answer gets its hint and, after two tries, the answer,
// and the progress is remembered in the settings file beside the display settings.
#include "app/course/builder.h"
#include "app/gui/options.h"
#include "app/gui/settings.h"
#include "gui_test_helpers.h"

using namespace flashstep;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string fresh_settings(const std::string& name) { return fresh_dir("course-" + name) + "/settings.json"; }

gui::GuiOptions course_options(const std::string& settings, const std::string& chapter, int64_t page = 0) {
  gui::GuiOptions o;
  o.settings = settings;
  o.course = true;
  o.course_chapter = chapter;
  o.course_page = page;
  o.course_page_given = page != 0;
  return o;
}

}  // namespace

TEST_CASE("gui --course: every page of every chapter moves the app to its run, step, view and panels", "[gui][course]") {
  const std::string settings = fresh_settings("scenes");
  for (const course::ChapterInfo& ci : course::chapter_list()) {
    gui::AppState s;
    gui::prepare_state(s, course_options(settings, ci.id, 1));
    REQUIRE(s.course.active);
    const course::Chapter& ch = *s.course.chapter;
    for (size_t p = 0; p < ch.pages.size(); ++p) {
      INFO(ci.id << " page " << p + 1);
      if (p > 0) s.course.next(s);
      REQUIRE(s.course.page == int(p));
      const course::Scene& sc = ch.pages[p].scene;
      const course::RunDecl& r = ch.run(sc.run);
      // The app's trace is the run the page's numbers were taken from.
      const Problem& pr = s.run->trace.problem;
      CHECK(pr.nq == r.spec.nq);
      CHECK(pr.nk == r.spec.nk);
      CHECK(pr.d == r.spec.d);
      CHECK(pr.M == r.spec.M);
      CHECK(pr.seed == r.spec.seed);
      CHECK(pr.schedule == r.spec.schedule);
      CHECK(s.run->backward == r.backward);
      CHECK(int64_t(s.index()) == sc.step);
      if (sc.view == course::CentreView::lesson) CHECK(s.view == gui::View::lesson);
      if (sc.view == course::CentreView::bench) CHECK(s.view == gui::View::bench);
      if (sc.view == course::CentreView::tiles) CHECK(s.view == gui::View::tiles);
      const unsigned shown = s.course.shown_panels();
      for (course::Panel x : sc.panels) {
        if (x == course::Panel::memory) CHECK((shown & gui::kPanelMemory) != 0);
        if (x == course::Panel::algorithm) CHECK((shown & gui::kPanelAlgorithm) != 0);
        if (x == course::Panel::softmax) CHECK((shown & gui::kPanelSoftmax) != 0);
      }
      CHECK((shown & gui::kPanelProblem) == 0);  // the editor is not a page's panel
      // An outlined side panel is one the page shows.
      if (sc.outline == course::Panel::memory) CHECK((shown & gui::kPanelMemory) != 0);
      if (sc.outline == course::Panel::softmax) CHECK((shown & gui::kPanelSoftmax) != 0);
      if (sc.outline == course::Panel::algorithm) CHECK((shown & gui::kPanelAlgorithm) != 0);
      if (sc.view == course::CentreView::roofline) CHECK_FALSE(s.course.roofline.series.empty());
    }
  }
}

TEST_CASE("gui --course: a Pipeline page's measured figures are at the view's shape, and the view's own is quoted",
          "[gui][course][pipeline]") {
  // fp8's last page quoted the FP8 forward against bf16 at N = 16384 while the view beside it
  // stood at N = 4096, its "default" row measured 553 where the text said 643.6: a student saw
  // two numbers for one kernel. Each figure a Pipeline page reads from a bench file must be at
  // the view's N and d, and a page that names the default kernel's measurement quotes the view's.
  const std::string assets = FLASHSTEP_ASSET_DIR;
  const nlohmann::json fp8 = load_json(assets + "/bench/h200_fp8.json"), hop = load_json(assets + "/bench/h200_hopper.json");
  const std::string settings = fresh_settings("pipeline-shape");
  size_t checked = 0;
  for (uint64_t seed : {uint64_t(1), uint64_t(2)})
    for (const course::ChapterInfo& ci : course::chapter_list()) {
      gui::AppState s;
      gui::GuiOptions o = course_options(settings, ci.id, 1);
      o.course_seed = seed;
      gui::prepare_state(s, o);
      REQUIRE(s.course.active);
      const course::Chapter& ch = *s.course.chapter;
      for (size_t p = 0; p < ch.pages.size(); ++p) {
        if (p > 0) s.course.next(s);
        if (ch.pages[p].scene.view != course::CentreView::pipeline) continue;
        INFO(ci.id << " seed " << seed << " page " << p + 1 << ": the view at d = " << s.pipeline.d << ", N = " << s.pipeline.n);
        bool quotes_default = false;
        for (const course::Number& n : ch.pages[p].numbers) {
          INFO("'" << n.text << "' from " << n.source);
          const nlohmann::json* row = nullptr;
          if (n.source.rfind("fp8bench:/rows/", 0) == 0) row = &fp8["rows"][std::stoul(n.source.substr(15))];
          if (n.source.rfind("hopper:/points/", 0) == 0) row = &hop["points"][std::stoul(n.source.substr(15))];
          if (row) {
            CHECK((*row)["n"].get<int>() == s.pipeline.n);
            CHECK((*row)["d"].get<int>() == s.pipeline.d);
            ++checked;
          }
          quotes_default |= n.source.find("bf16_default") != std::string::npos;
        }
        if (!quotes_default) continue;
        const auto def = std::find_if(s.pipeline.rows.begin(), s.pipeline.rows.end(),
                                      [](const auto& r) { return r.kernel.key == "default"; });
        REQUIRE(def != s.pipeline.rows.end());
        REQUIRE(def->measured.found);
        bool quoted = false;  // the view's figure, as the page prints it (one decimal)
        for (const course::Number& n : ch.pages[p].numbers) quoted |= std::abs(n.value - def->measured.value) < 0.05;
        CHECK(quoted);
      }
    }
  CHECK(checked >= 4);
}

TEST_CASE("gui --course: the page a number names is the step the app stands on", "[gui][course]") {
  gui::AppState s;
  gui::prepare_state(s, course_options(fresh_settings("step"), "algorithm-1", 2));
  const course::Page& p = *s.course.current_page();
  // The page's step reference is "step n" with n steps applied: the app's slider shows the same n.
  bool found = false;
  for (const course::Number& n : p.numbers)
    if (n.source.find(".applied.") != std::string::npos) {
      CHECK(int64_t(n.value) == int64_t(s.index()));
      found = true;
    }
  CHECK(found);
  // And the O value the page derives is what the current step wrote to HBM.
  const Step* cur = s.cursor->current();
  REQUIRE(cur != nullptr);
  REQUIRE_FALSE(cur->writes.empty());
  bool o_value = false;
  for (const course::Number& n : p.numbers)
    if (n.source == course::src_step("tiny", int64_t(s.index()) - 1, "write.O", 0, 0)) {
      CHECK(n.value == Approx(double(cur->writes.front().data(0, 0))));
      o_value = true;
    }
  CHECK(o_value);
}

TEST_CASE("gui --course: pages and chapters follow each other, --page and the chapter are checked", "[gui][course]") {
  const std::string settings = fresh_settings("nav");
  gui::AppState s;
  gui::prepare_state(s, course_options(settings, "tiling", 0));
  CHECK(s.course.page == 0);
  const int pages = int(s.course.chapter->pages.size());
  for (int k = 1; k < pages; ++k) s.course.next(s);
  CHECK(s.course.on_last_page());
  s.course.next(s);  // past the last page: the next chapter
  CHECK(s.course.chapter->id == "algorithm-1");
  CHECK(s.course.page == 0);
  s.course.back(s);  // and back to the previous chapter's last page
  CHECK(s.course.chapter->id == "tiling");
  CHECK(s.course.page == pages - 1);
  s.run_script("course open online-softmax 2");
  CHECK(s.course.chapter->id == "online-softmax");
  CHECK(s.course.page == 1);
  CHECK(s.lesson.shown == 2);

  gui::AppState bad;
  REQUIRE_THROWS_WITH(gui::prepare_state(bad, course_options(settings, "no-such")), StartsWith("unknown chapter 'no-such'"));
  REQUIRE_THROWS_WITH(gui::prepare_state(bad, course_options(settings, "tiling", 9)),
                      "--page 9: chapter tiling has pages 1 to 3 (got 9)");
  gui::GuiOptions zero = course_options(settings, "tiling", 0);
  zero.course_page_given = true;  // --page 0: pages count from 1
  REQUIRE_THROWS_WITH(gui::prepare_state(bad, zero), StartsWith("--page 0: pages count from 1"));
  // The script's `course open` is checked the same way, and leaves the page as it was.
  for (const char* cmd : {"course open tiling 99", "course open tiling 0", "course open tiling x", "course open"}) {
    INFO(cmd);
    REQUIRE_THROWS_WITH(s.run_script(cmd), StartsWith("script: course open"));
    CHECK(s.course.chapter->id == "online-softmax");
    CHECK(s.course.page == 1);
  }
  gui::GuiOptions np;
  np.settings = settings;
  np.course_page = 2;
  np.course_page_given = true;
  REQUIRE_THROWS_WITH(gui::prepare_state(bad, np), "--page needs --course");
}

TEST_CASE("gui --course: a wrong answer gets the hint, two get the answer, progress is remembered", "[gui][course]") {
  const std::string settings = fresh_settings("answers");
  {
    gui::AppState s;
    gui::GuiOptions o = course_options(settings, "online-softmax", 1);
    o.script = "display theme light";  // a display setting in the same file, kept beside the progress
    gui::prepare_state(s, o);
    const course::Question& q0 = s.course.current_page()->questions[0];
    s.run_script("course answer 1 7");
    const gui::AnswerState& a = s.course.answers[0];
    CHECK_FALSE(a.correct);
    CHECK_FALSE(a.revealed);
    CHECK_THAT(a.feedback, Contains("Hint: ") && Contains(q0.hint));
    CHECK_THAT(a.feedback, !Contains("The answer:"));
    s.run_script("course answer 1 abc");  // a bad format is not a try
    CHECK(s.course.answers[0].tries == 1);
    CHECK_THAT(s.course.answers[0].feedback, Contains("is not a number"));
    s.run_script("course answer 1 8");
    CHECK(s.course.answers[0].revealed);
    CHECK_THAT(s.course.answers[0].feedback, Contains("The answer: " + q0.answer_text));
    // An answer longer than the field is refused, not cut (and not a try).
    REQUIRE_THROWS_WITH(s.run_script("course answer 2 " + std::string(200, '1')), Contains("longer than"));
    CHECK(s.course.answers[1].tries == 0);
    s.run_script("course answer 2 " + s.course.current_page()->questions[1].answer_text);
    CHECK(s.course.answers[1].correct);
    s.run_script("course next");
  }
  const nlohmann::json saved = load_json(settings);
  CHECK(saved["theme"] == "light");
  const nlohmann::json& pr = saved["course"]["online-softmax"];
  CHECK(pr["pages_seen"] == 2);
  CHECK(pr["right"] == nlohmann::json::array({"final-l"}));
  // The next run shows it: the picker's progress, and the question answered right stays right.
  gui::AppState s;
  gui::prepare_state(s, course_options(settings, "online-softmax", 1));
  CHECK(s.display.now.theme == gui::Theme::light);
  CHECK(s.course.progress["online-softmax"].correct == 1);
  CHECK(s.course.answers[1].correct);
  CHECK_FALSE(s.course.answers[0].correct);
  // --course without a chapter opens the first one not finished.
  gui::AppState first;
  gui::prepare_state(first, course_options(settings, ""));
  CHECK(first.course.chapter->id == "memory-bound");
}
