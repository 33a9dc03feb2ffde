// The web page's links (web/url_state.h), natively: a query read into the app's state, the state
// written back as a query, and each kind of bad link refused with a message naming it. The page
// itself is checked in headless Chromium by .ci/web-check.sh.
#include "app/gui/state_dump.h"
#include "core/run.h"
#include "web/url_state.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

gui::AppState open_link(const web::Query& q) {
  gui::AppState s;
  web::apply_request(s, web::parse_query(q));
  return s;
}

std::string refusal(const web::Query& q) {
  try {
    gui::AppState s;
    web::apply_request(s, web::parse_query(q));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("web link: a preset at a step opens there and is written back the same", "[gui][web]") {
  gui::AppState s = open_link({{"preset", "tiny"}, {"step", "19"}});
  REQUIRE(s.index() == 19);
  const nlohmann::json j = gui::state_to_json(s);
  CHECK(j["line"] == "Alg1 L11");
  CHECK(j["i"] == 0);
  CHECK(j["j"] == 1);
  CHECK(web::query_for_state(s, "tiny") == "preset=tiny&step=19");
  s.step_forward();
  CHECK(web::query_for_state(s, "tiny") == "preset=tiny&step=20");
  s.view = gui::View::lesson;
  CHECK(web::query_for_state(s, "tiny") == "preset=tiny&step=20&view=lesson");
  s.view = gui::View::pipeline;
  CHECK(web::query_for_state(s, "tiny") == "preset=tiny&step=20&view=pipeline");
}

TEST_CASE("web link: the Display menu's settings stay in the link, so that a copy or a reload keeps them", "[gui][web]") {
  // They were applied and then dropped from the address bar at once.
  CHECK(web::query_for_state(open_link({{"preset", "tiny"}, {"step", "19"}, {"presentation", "1"}}), "tiny") ==
        "preset=tiny&step=19&presentation=1");
  CHECK(web::query_for_state(open_link({{"preset", "tiny"}, {"step", "19"}, {"theme", "light"}}), "tiny") ==
        "preset=tiny&step=19&theme=light");
  const web::Query q = {{"preset", "tiny"}, {"font", "1.5"}, {"hide", "memory,softmax"}};
  const std::string link = web::query_for_state(open_link(q), "tiny");
  CHECK(link == "preset=tiny&step=0&font=1.5&hide=memory,softmax");
  // Read back, the link gives the same display.
  web::Query back;
  for (size_t at = 0; at < link.size();) {
    const size_t amp = std::min(link.find('&', at), link.size()), eq = link.find('=', at);
    back.push_back({link.substr(at, eq - at), link.substr(eq + 1, amp - eq - 1)});
    at = amp + 1;
  }
  CHECK(open_link(back).display.now == open_link(q).display.now);
  CHECK_THAT(web::query_for_state(open_link({{"course", "online-softmax"}, {"presentation", "1"}}), "tiny"),
             Contains("&presentation=1"));
  // A course page sets its own problem and view: a preset or a view beside course= is refused.
  CHECK_THAT(refusal({{"course", "online-softmax"}, {"preset", "gpt2-medium"}}), Contains("drop preset or course"));
  CHECK_THAT(refusal({{"course", "online-softmax"}, {"view", "bench"}}), Contains("drop view or course"));
}

TEST_CASE("web link: view=pipeline opens the Pipeline view, alone or with a problem", "[gui][web]") {
  CHECK(open_link({{"preset", "tiny"}, {"view", "pipeline"}}).view == gui::View::pipeline);
  gui::AppState s = open_link({{"preset", "tiny"}, {"nq", "12"}, {"view", "pipeline"}, {"step", "3"}});
  CHECK(s.view == gui::View::pipeline);
  CHECK(s.run->trace.problem.nq == 12);
  CHECK(web::query_for_state(s, "tiny") == "preset=tiny&nq=12&step=3&view=pipeline");
}

TEST_CASE("web link: the editor's fields change the preset's problem and stay in the link", "[gui][web]") {
  gui::AppState s = open_link({{"preset", "tiny"}, {"schedule", "fa2"}, {"nq", "12"}, {"causal", "1"},
                               {"step", "5"}});
  CHECK(s.run->trace.problem.schedule == Schedule::fa2);
  CHECK(s.run->trace.problem.nq == 12);
  CHECK(s.run->trace.problem.mask.causal);
  CHECK(s.index() == 5);
  // The same problem run by core: the same number of steps.
  ProblemSpec spec;
  spec.nq = 12, spec.nk = 8, spec.d = 4, spec.M = 64, spec.schedule = Schedule::fa2;
  spec.options.mask.causal = true;
  const Problem p = make_problem(spec);
  CHECK(s.steps() == run_problem(p, make_tiling(p), RunOptions{}).steps.size());
  const std::string q = web::query_for_state(s, "tiny");
  CHECK(q == "preset=tiny&nq=12&schedule=fa2&causal=1&step=5");
  // And the written link opens the same state again.
  web::Query again;
  for (size_t at = 0; at < q.size();) {
    const size_t amp = std::min(q.find('&', at), q.size()), eq = q.find('=', at);
    again.emplace_back(q.substr(at, eq - at), q.substr(eq + 1, amp - eq - 1));
    at = amp + 1;
  }
  gui::AppState t = open_link(again);
  CHECK(gui::state_to_json(t)["hbm"] == gui::state_to_json(s)["hbm"]);
}

TEST_CASE("web link: each bad parameter is refused with a message naming it", "[gui][web]") {
  CHECK_THAT(refusal({{"preset", "nope"}}), Contains("nope"));
  CHECK_THAT(refusal({{"preset", "../../etc/passwd"}}), Contains("preset"));
  CHECK_THAT(refusal({{"step", "x"}}), Contains("step must be a whole number"));
  CHECK_THAT(refusal({{"step", "-1"}}), Contains("step must be a whole number"));
  CHECK_THAT(refusal({{"step", "28"}}), Contains("past the last step"));  // tiny has 27
  CHECK_THAT(refusal({{"schedule", "fa9"}}), Contains("fa9"));
  CHECK_THAT(refusal({{"view", "3d"}}), Contains("view must be"));
  CHECK_THAT(refusal({{"nq", "0"}}), Contains("Nq must be at least 1"));  // the editor's own validation
  CHECK_THAT(refusal({{"nq", "0"}}), !Contains("script"));  // a link names no script: the reason alone
  CHECK_THAT(refusal({{"d", "8;step 3"}}), Contains("character a link cannot carry"));
  CHECK_THAT(refusal({{"window", "4"}}), Contains("LEFT,RIGHT"));
  CHECK_THAT(refusal({{"step", "1"}, {"step", "2"}}), Contains("twice"));
  CHECK_THAT(refusal({{"colour", "red"}}), Contains("unknown link parameter 'colour'"));
  CHECK_THAT(refusal({{"theme", "pink"}}), Contains("pink"));
  CHECK(refusal({{"preset", "gpt2-medium"}, {"step", "1553"}}).empty());
}

TEST_CASE("web link: a course chapter and page open there, and the link follows the page", "[gui][web]") {
  gui::AppState s = open_link({{"course", "online-softmax"}, {"page", "2"}});
  REQUIRE(s.course.active);
  CHECK(s.course.chapter->id == "online-softmax");
  CHECK(s.course.page == 1);
  const std::string q = web::query_for_state(s, "tiny");
  CHECK_THAT(q, Contains("course=online-softmax&page=2&step="));
  s.course.next(s);
  CHECK_THAT(web::query_for_state(s, "tiny"), Contains("course=online-softmax&page=3&step="));
  CHECK_THAT(refusal({{"course", "no-such-chapter"}}), Contains("no-such-chapter"));
  CHECK_THAT(refusal({{"page", "2"}}), Contains("need course"));
  CHECK_THAT(refusal({{"course", "online-softmax"}, {"page", "999"}}), Contains("page"));
  CHECK_THAT(refusal({{"course", "online-softmax"}, {"nq", "16"}}), Contains("sets its own problem"));
}

// The app's own checks (prepare_display, the course loader, core/run.cpp) phrase their errors
// for the desktop's flags; on the page they must name what the reader can change: the link's
// parameter ("font", "page=99", "backward=1"), never a flag the link does not have.
TEST_CASE("web link: errors from the app's checks name the link's parameters, not flags", "[gui][web]") {
  const std::string font = refusal({{"font", "9"}});
  CHECK_THAT(font, Contains("font must be a number"));
  CHECK_THAT(refusal({{"theme", "blue"}}), Contains("theme must be dark or light"));
  CHECK_THAT(refusal({{"hide", "foo"}}), Contains("hide takes"));
  const std::string page = refusal({{"course", "online-softmax"}, {"page", "99"}});
  CHECK_THAT(page, Contains("page=99"));
  const std::string fp8 = refusal({{"dtype", "fp8"}, {"schedule", "fa2"}, {"backward", "1"}});
  CHECK_THAT(fp8, Contains("backward=1"));
  const std::string l2 = refusal({{"preset", "l2-fa1-vs-fa2"}, {"schedule", "decode"}});
  CHECK_THAT(l2, Contains("schedule=decode"));
  for (const std::string& m : {font, page, fp8, l2, refusal({{"hide", "foo"}}), refusal({{"theme", "blue"}})}) {
    INFO(m);
    CHECK(!m.empty());
    CHECK(m.find("--") == std::string::npos);
  }
  // The rewording itself: a value joins its flag, a sentence's next word does not.
  CHECK(web::link_wording("--page 99: chapter x has pages 1 to 4") == "page=99: chapter x has pages 1 to 4");
  CHECK(web::link_wording("--theme must be dark or light") == "theme must be dark or light");
  CHECK(web::link_wording("drop --backward, or use --dtype fp32") == "drop backward=1, or use dtype=fp32");
  CHECK(web::link_wording("--splits is for --schedule decode") == "--splits is for schedule=decode");
}
