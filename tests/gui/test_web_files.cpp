// The web page's files, natively: a file from the user's computer loaded into a view, the
// problem editor's .npy inputs or the memory panel's measurement (AppState::load_local_file,
// what the page's "Open..." buttons call), the display
// settings and course progress kept between visits (web/stored_settings.h), and the Export PNG's
// picture made smaller to the layout's size (app/gui/image_scale.h). The page itself is checked
// in headless Chromium by .ci/web-check.sh.
#include "app/gui/app_state.h"
#include "app/gui/image_scale.h"
#include "app/gui/options.h"
#include "core/npy.h"
#include "core/run.h"
#include "core/trace_file.h"
#include "gui_test_helpers.h"
#include "web/stored_settings.h"
#include "web/url_state.h"

#include <cstdlib>
#include <filesystem>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

void put_file_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

gui::AppState tiny_app() {
  gui::AppState s;
  gui::GuiOptions o;
  o.preset = "tiny";
  gui::prepare_state(s, o);
  return s;
}

}  // namespace

TEST_CASE("web files: a bench JSON from the computer loads into the Bench view, and a broken one changes nothing",
          "[gui][web]") {
  gui::AppState s = tiny_app();
  const std::string dir = fresh_dir("web-files-bench");
  const std::string good = dir + "/mine.json", broken = dir + "/broken.json";
  put_file_text(good, file_text(std::string(FLASHSTEP_ASSET_DIR) + "/bench/h200.json"));
  put_file_text(broken, "{\"runs\": [");
  s.bench = gui::BenchState{};  // nothing loaded, as a page that has not opened the shipped file
  s.load_local_file(gui::LocalFile::bench, good);
  REQUIRE(s.bench.loaded);
  CHECK(s.bench.error.empty());
  CHECK(std::string(s.bench.path) == good);
  CHECK(s.view == gui::View::bench);
  const std::string title = s.bench.shown.title;
  REQUIRE_FALSE(title.empty());
  s.load_local_file(gui::LocalFile::bench, broken);
  CHECK(s.bench.loaded);  // the figure from the good file stays, with its path
  CHECK(std::string(s.bench.path) == good);
  CHECK(s.bench.shown.title == title);
  CHECK_THAT(s.bench.error, Contains("broken.json"));
  CHECK(s.bench.error.find('\n') == std::string::npos);  // one line
}

TEST_CASE("web files: O and lse from the computer load into the compare view, and a bad one leaves the fields as they were",
          "[gui][web]") {
  gui::AppState s = tiny_app();
  const std::string dir = fresh_dir("web-files-compare");
  const std::string o = dir + "/O.npy", lse = dir + "/lse.npy", wrong = dir + "/wrong.npy";
  write_npy(o, s.run->trace.O);
  write_npy(lse, s.run->trace.lse);
  write_npy(wrong, Mat(Mat::Ones(3, 2)));
  s.load_local_file(gui::LocalFile::compare_lse, lse);  // lse first: nothing to compare yet
  CHECK(s.view == gui::View::compare);
  CHECK_FALSE(s.compare.loaded);
  CHECK(s.compare.error.empty());
  CHECK_THAT(s.compare.message, Contains("now choose the O file"));
  s.load_local_file(gui::LocalFile::compare_o, o);
  REQUIRE(s.compare.loaded);
  CHECK(s.compare.passed());
  CHECK(s.compare.lse.size() == s.run->trace.lse.size());
  s.load_local_file(gui::LocalFile::compare_o, wrong);
  CHECK_THAT(s.compare.error, Contains("3 x 2"));
  CHECK(std::string(s.compare.o_path) == o);  // the field names the file whose result is shown
  CHECK(s.compare.passed());
}

TEST_CASE("web storage: the settings file's display and course parts, stored and written back", "[gui][web]") {
  const std::string dir = fresh_dir("web-storage");
  const std::string path = dir + "/settings/settings.json";
  SECTION("the parts of a saved file") {
    const web::StoredParts p = web::stored_parts(
        R"({"theme":"light","font_scale":1.5,"hidden":["problem"],"course":{"memory-bound":{"pages_seen":2}},"x":1})");
    CHECK(nlohmann::json::parse(p.display) == nlohmann::json::parse(R"({"theme":"light","font_scale":1.5,"hidden":["problem"]})"));
    CHECK(nlohmann::json::parse(p.course) == nlohmann::json::parse(R"({"memory-bound":{"pages_seen":2}})"));
    CHECK(web::stored_parts("not json").display.empty());
    CHECK(web::stored_parts(R"({"course":{}})").display.empty());
  }
  SECTION("both parts written back; the app reads the display settings from them") {
    web::StoredParts refused;
    const web::StoredParts kept = web::restore_settings_file(
        path, {R"({"theme":"light","font_scale":1.25,"hidden":["memory"],"course":{"x":{}}})", R"({"memory-bound":{"pages_seen":2}})"},
        &refused);
    CHECK(refused.display.empty());
    CHECK(refused.course.empty());
    CHECK(nlohmann::json::parse(kept.display).count("course") == 0);  // nothing rides in with the display keys
    const gui::DisplaySettings d = gui::load_settings(path);
    CHECK(d.theme == gui::Theme::light);
    CHECK(d.font_scale == 1.25f);
    CHECK(d.hidden == gui::kPanelMemory);
    CHECK(gui::load_course_progress(path)["memory-bound"]["pages_seen"] == 2);
  }
  SECTION("a part the app would refuse is left out, the other kept") {
    web::StoredParts refused;
    web::restore_settings_file(path, {R"({"font_scale":9})", R"({"memory-bound":{"pages_seen":2}})"}, &refused);
    CHECK_THAT(refused.display, Contains("font-scale must be a number"));
    CHECK(refused.course.empty());
    CHECK(gui::load_settings(path) == gui::DisplaySettings{});
    refused = {};
    web::restore_settings_file(path, {R"({"theme":"light"})", R"({"memory-bound":{"pages_seen":-1}})"}, &refused);
    CHECK(refused.display.empty());
    CHECK_THAT(refused.course, Contains("pages_seen"));
    CHECK(gui::load_settings(path).theme == gui::Theme::light);
    CHECK(gui::load_course_progress(path).empty());
    refused = {};
    web::restore_settings_file(path, {"[1]", "nope"}, &refused);
    CHECK(refused.display == "not a JSON object");
    CHECK(refused.course == "not a JSON object");
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("a link's display parameters override the stored ones; without them the stored ones apply") {
    web::StoredParts refused;
    web::restore_settings_file(path, {R"({"theme":"light","font_scale":1.5})", ""}, &refused);
    ::setenv("FLASHSTEP_SETTINGS", path.c_str(), 1);
    gui::AppState plain, linked;
    web::apply_request(plain, web::parse_query({{"preset", "tiny"}}));
    web::apply_request(linked, web::parse_query({{"preset", "tiny"}, {"theme", "dark"}}));
    ::unsetenv("FLASHSTEP_SETTINGS");
    CHECK(plain.display.now.theme == gui::Theme::light);
    CHECK(plain.display.now.font_scale == 1.5f);
    CHECK(linked.display.now.theme == gui::Theme::dark);
    CHECK(linked.display.now.font_scale == 1.5f);  // what the link does not name stays stored
  }
}

TEST_CASE("image scale: a picture shrunk by averaging the pixels each output pixel covers", "[gui][web]") {
  // 2x: each output pixel the mean of a 2x2 block (RGB).
  const std::vector<unsigned char> four = {0, 10, 20, 40, 50, 60, 100, 100, 100, 200, 200, 200,
                                           80, 90, 100, 120, 130, 140, 0, 0, 0, 255, 255, 255};
  const std::vector<unsigned char> two = gui::shrink_pixels(four, 4, 2, 3, 2, 1);
  CHECK(two == std::vector<unsigned char>{60, 70, 80, 139, 139, 139});
  // 1.5x: the middle pixel is shared, half to each side.
  CHECK(gui::shrink_pixels({0, 90, 180}, 3, 1, 1, 2, 1) == std::vector<unsigned char>{30, 150});
  // The same size is the picture itself; growing or a wrong buffer is refused.
  CHECK(gui::shrink_pixels(four, 4, 2, 3, 4, 2) == four);
  CHECK_THROWS_AS(gui::shrink_pixels(four, 4, 2, 3, 8, 2), InputError);
  CHECK_THROWS_AS(gui::shrink_pixels(four, 4, 3, 3, 2, 1), InputError);
}

TEST_CASE("web files: a saved trace from the computer becomes the run, and a file that is not one changes nothing",
          "[gui][web]") {
  gui::AppState s = tiny_app();
  const std::string dir = fresh_dir("web-files-trace");
  // A trace as the Python module saves it: FlashAttention-2 on another problem than the preset's.
  ProblemSpec spec = sizes_spec(12, 20, 8, 128);
  spec.schedule = Schedule::fa2;
  spec.seed = 3;
  RunOptions opt;
  opt.record = true;
  const Trace t = run_spec(spec, opt);
  const std::string good = dir + "/student.json", broken = dir + "/notes.json";
  put_file_text(good, trace_to_replay_json(t).dump() + "\n");
  put_file_text(broken, "{\"phases\": {}}\n");
  const size_t preset_steps = s.run->trace.steps.size();
  REQUIRE(preset_steps != t.steps.size());

  s.load_local_file(gui::LocalFile::trace, good);
  CHECK(s.apply_error.empty());
  CHECK(s.preset_name == "trace");
  REQUIRE(s.run->trace.steps.size() == t.steps.size());
  CHECK(s.run->trace.problem.nq == 12);
  CHECK(s.run->trace.problem.nk == 20);
  CHECK(s.view == gui::View::tiles);

  s.load_local_file(gui::LocalFile::trace, broken);
  CHECK_THAT(s.apply_error, Contains(broken));
  CHECK(s.apply_error.find(broken) == s.apply_error.rfind(broken));  // the file named once
  CHECK(s.preset_name == "trace");  // the good trace stays the run
  CHECK(s.run->trace.steps.size() == t.steps.size());
  CHECK(s.run->trace.problem.nk == 20);
  s.load_local_file(gui::LocalFile::trace, dir + "/missing.json");
  CHECK_THAT(s.apply_error, Contains("missing.json"));
  CHECK(s.run->trace.steps.size() == t.steps.size());
}

TEST_CASE("web files: Q, K and V from the computer fill the editor's fields and make the run, and a bad one keeps the run",
          "[gui][web]") {
  gui::AppState s = tiny_app();
  const std::string dir = fresh_dir("web-files-inputs");
  const std::string q = dir + "/q.npy", k = dir + "/k.npy", v = dir + "/v.npy";
  write_npy(q, Mat(Mat::Random(12, 4)));
  write_npy(k, Mat(Mat::Random(8, 4)));
  write_npy(v, Mat(Mat::Random(8, 4)));
  const std::string wrong = dir + "/wrong-v.npy", broken = dir + "/broken.npy", ints = dir + "/ints.npy";
  write_npy(wrong, Mat(Mat::Random(5, 4)));  // V must have K's rows
  put_file_text(broken, file_text(q).substr(0, 100));
  std::string int_bytes = file_text(q);  // the same header with an integer dtype
  const size_t descr = int_bytes.find("<f");
  REQUIRE(descr != std::string::npos);
  int_bytes[descr + 1] = 'i';
  put_file_text(ints, int_bytes);
  const size_t tiny_steps = s.run->trace.steps.size();

  s.load_local_file(gui::LocalFile::input_q, q);
  s.load_local_file(gui::LocalFile::input_k, k);
  CHECK(s.form.use_files);
  CHECK(std::string(s.form.q_path) == q);
  CHECK(std::string(s.form.k_path) == k);
  CHECK(s.run->spec.q_path.empty());  // two of three: not applied yet, and the form says so
  CHECK(s.run->trace.steps.size() == tiny_steps);
  CHECK(s.form.error_field == gui::Field::files);
  s.load_local_file(gui::LocalFile::input_v, v);
  CHECK(s.apply_error.empty());
  CHECK(std::string(s.form.v_path) == v);
  REQUIRE(s.run->spec.q_path == q);
  CHECK(s.run->spec.v_path == v);
  CHECK(s.run->trace.problem.nq == 12);
  CHECK(s.run->trace.problem.nk == 8);
  CHECK(s.run->trace.problem.pattern == "npy");
  const size_t steps = s.run->trace.steps.size();

  SECTION("V with other rows than K: the run stays, the error names the file") {
    s.load_local_file(gui::LocalFile::input_v, wrong);
    CHECK_THAT(s.apply_error, Contains("wrong-v.npy"));
    CHECK_THAT(s.apply_error, Contains("mismatched shapes"));
    CHECK(s.apply_error.find('\n') == std::string::npos);
    CHECK(s.run->spec.v_path == v);
    CHECK(s.run->trace.steps.size() == steps);
  }
  SECTION("a broken file, or integers: refused, the field and the run as they were") {
    for (const std::string& bad : {broken, ints}) {
      s.load_local_file(gui::LocalFile::input_q, bad);
      CHECK_THAT(s.apply_error, Contains(bad));
      CHECK(s.apply_error.find('\n') == std::string::npos);
      CHECK(std::string(s.form.q_path) == q);
      CHECK(s.run->spec.q_path == q);
      CHECK(s.run->trace.problem.nq == 12);
    }
  }
}

TEST_CASE("web files: a DRAM measurement from the computer loads, and a bad one leaves the one loaded", "[gui][web]") {
  gui::AppState s = tiny_app();
  const std::string dir = fresh_dir("web-files-dram");
  const std::string good = dir + "/ncu.json", broken = dir + "/broken-ncu.json";
  const std::string text = file_text(std::string(FLASHSTEP_SOURCE_DIR) + "/gpu/results/dram/ncu.json");
  put_file_text(good, text);
  put_file_text(broken, text.substr(0, 200));
  s.load_local_file(gui::LocalFile::dram, good);
  REQUIRE(s.dram.loaded);
  CHECK(s.dram.error.empty());
  CHECK(std::string(s.dram.path) == good);
  const size_t points = s.dram.data.points.size();
  REQUIRE(points > 0);
  s.load_local_file(gui::LocalFile::dram, broken);
  CHECK_THAT(s.dram.error, Contains("broken-ncu.json"));
  CHECK(s.dram.error.find('\n') == std::string::npos);
  CHECK(s.dram.loaded);
  CHECK(std::string(s.dram.path) == good);  // the field names the measurement shown
  CHECK(s.dram.data.points.size() == points);
}
