// The classroom features, in-process and without a display: the display settings (theme, font
// scale, hidden panels) as flags and as the remembered settings file, and the checks of the
// animation export (--frames, --from, --to, --gif, --video). The window's part (the light,
// larger screenshot; the PNGs per step) is tested under Xvfb in test_gui.cpp.
#include "app/gui/animation.h"
#include "app/gui/options.h"
#include "app/gui/settings.h"
#include "app/gui/state_dump.h"
#include "gui_test_helpers.h"
#include "tests/test_files.h"

#include <cstdlib>

using namespace flashstep;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using fstest::write_text;

// Sets an environment variable for one scope and puts the old value back.
struct ScopedEnv {
  std::string name, old;
  bool had = false;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    const char* v = std::getenv(n.c_str());
    had = v != nullptr;
    if (had) old = v;
    if (value) setenv(n.c_str(), value, 1);
    else unsetenv(n.c_str());
  }
  ~ScopedEnv() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

gui::GuiOptions with_settings(const std::string& path) {
  gui::GuiOptions o;
  o.settings = path;
  return o;
}

nlohmann::json display_after(const gui::GuiOptions& o) {
  gui::AppState s;
  gui::prepare_state(s, o);
  return gui::state_to_json(s)["display"];
}

}  // namespace

TEST_CASE("display flags: each bad value gets one clear message naming the flag", "[gui][present]") {
  CHECK(gui::parse_font_scale("0.75") == 0.75f);
  CHECK(gui::parse_font_scale("2.5") == 2.5f);
  CHECK(gui::parse_font_scale("1.3") == 1.3f);
  for (const char* bad : {"0.74", "2.51", "0", "-1", "abc", "1.5x", "", "nan", "inf", "1e9", "0x1.8", " 1.5"}) {
    INFO("--font-scale '" << bad << "'");
    REQUIRE_THROWS_WITH(gui::parse_font_scale(bad), StartsWith("--font-scale must be a number from 0.75 to 2.5"));
  }
  CHECK(gui::parse_theme("light") == gui::Theme::light);
  CHECK(gui::parse_theme("dark") == gui::Theme::dark);
  REQUIRE_THROWS_WITH(gui::parse_theme("Light"), "--theme must be dark or light (got 'Light')");
  CHECK(gui::parse_panels("memory,softmax") == (gui::kPanelMemory | gui::kPanelSoftmax));
  CHECK(gui::parse_panels("controls,algorithm,problem,memory,softmax,legend") == gui::kAllPanels);
  CHECK(gui::parse_panels("none") == 0u);
  CHECK(gui::panel_list(gui::kPanelAlgorithm | gui::kPanelSoftmax) == "algorithm,softmax");
  REQUIRE_THROWS_WITH(gui::parse_panels("memory,tiles"), Contains("--hide takes panels from") && Contains("(got 'tiles')"));
  // Through the options, before the preset's run: the same messages.
  gui::GuiOptions o = with_settings(out_path("settings-none.json"));
  o.font_scale = "3";
  gui::AppState s;
  REQUIRE_THROWS_WITH(gui::prepare_state(s, o), StartsWith("--font-scale must be"));
}

TEST_CASE("presentation and display flags set this run's display and are not saved", "[gui][present]") {
  const std::string dir = fresh_dir("present-flags"), file = dir + "/settings.json";
  gui::GuiOptions o = with_settings(file);
  const nlohmann::json plain = display_after(o);
  CHECK(plain["theme"] == "dark");
  CHECK(plain["font_scale"].get<double>() == 1.0);
  CHECK(plain["hidden"] == "");
  CHECK(plain["settings_path"] == file);
  o.presentation = true;
  const nlohmann::json pres = display_after(o);
  CHECK(pres["theme"] == "light");
  CHECK(pres["font_scale"].get<double>() == 1.5);
  CHECK(pres["hidden"] == "problem");
  // Each flag overrides its part of --presentation.
  o.theme = "dark";
  o.font_scale = "2";
  o.hide = "memory,softmax";
  const nlohmann::json mixed = display_after(o);
  CHECK(mixed["theme"] == "dark");
  CHECK(mixed["font_scale"].get<double>() == 2.0);
  CHECK(mixed["hidden"] == "memory,softmax");
  REQUIRE_FALSE(fs::exists(file));  // flags are for one run
}

TEST_CASE("the Display menu's choices are remembered between runs in the settings file", "[gui][present]") {
  const std::string dir = fresh_dir("present-remember"), file = dir + "/sub/settings.json";
  {
    gui::AppState s;  // first run: the menu (here its script verb) changes the display
    gui::GuiOptions o = with_settings(file);
    o.script = "display theme light; display font-scale 1.75; display hide softmax; display hide memory; display show memory";
    gui::prepare_state(s, o);
    REQUIRE(s.display.now.theme == gui::Theme::light);
    REQUIRE(s.display.message == "remembered in " + file);
  }
  REQUIRE(fs::exists(file));  // the folder is made on first use
  const nlohmann::json saved = load_json(file);
  CHECK(saved["theme"] == "light");
  CHECK(saved["font_scale"].get<double>() == 1.75);
  CHECK(saved["hidden"] == nlohmann::json::array({"softmax"}));
  // Second run, no flags: the remembered settings; a flag still wins for its run only.
  const nlohmann::json again = display_after(with_settings(file));
  CHECK(again["theme"] == "light");
  CHECK(again["font_scale"].get<double>() == 1.75);
  CHECK(again["hidden"] == "softmax");
  gui::GuiOptions dark = with_settings(file);
  dark.theme = "dark";
  CHECK(display_after(dark)["theme"] == "dark");
  CHECK(load_json(file)["theme"] == "light");
  // "display default" goes back and is remembered too.
  {
    gui::AppState s;
    gui::GuiOptions o = with_settings(file);
    o.script = "display default";
    gui::prepare_state(s, o);
  }
  CHECK(display_after(with_settings(file))["theme"] == "dark");
  CHECK(load_json(file)["hidden"] == nlohmann::json::array());
  gui::AppState s;
  gui::GuiOptions bad = with_settings(file);
  bad.script = "display colour red";
  REQUIRE_THROWS_WITH(gui::prepare_state(s, bad), StartsWith("script: display knows theme dark|light"));
}

TEST_CASE("a settings file that is not the format is refused with its path, a missing one is the default", "[gui][present]") {
  const std::string dir = fresh_dir("present-badfile");
  CHECK(gui::load_settings(dir + "/missing.json") == gui::DisplaySettings{});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ not json", "is not valid"},
      {"[1, 2]", "not a JSON object"},
      {R"({"theme": "blue"})", "--theme must be dark or light"},
      {R"({"font_scale": 7})", "--font-scale must be a number"},
      {R"({"font_scale": "big"})", "is not valid"},
      {R"({"hidden": ["tiles"]})", "--hide takes panels from"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string file = dir + "/bad" + std::to_string(k) + ".json";
    write_text(file, cases[k].first);
    INFO(cases[k].first);
    REQUIRE_THROWS_WITH(gui::load_settings(file), Contains("the settings file " + file) && Contains(cases[k].second));
  }
}

TEST_CASE("the settings file: --settings, then $FLASHSTEP_SETTINGS, $XDG_CONFIG_HOME, $HOME", "[gui][present]") {
  ScopedEnv a("FLASHSTEP_SETTINGS", "/tmp/a.json"), b("XDG_CONFIG_HOME", "/tmp/xdg"), c("HOME", "/tmp/home");
  CHECK(gui::settings_path("mine.json") == "mine.json");
  CHECK(gui::settings_path("") == "/tmp/a.json");
  {
    ScopedEnv none("FLASHSTEP_SETTINGS", nullptr);
    CHECK(gui::settings_path("") == "/tmp/xdg/flashstep/settings.json");
    ScopedEnv no_xdg("XDG_CONFIG_HOME", nullptr);
    CHECK(gui::settings_path("") == "/tmp/home/.config/flashstep/settings.json");
    ScopedEnv no_home("HOME", nullptr);
    CHECK(gui::settings_path("").empty());
    gui::DisplayState d;  // nowhere to remember: the change applies and says so
    d.run_command("theme light");
    CHECK(d.now.theme == gui::Theme::light);
    CHECK_THAT(d.message, StartsWith("not remembered"));
  }
}

TEST_CASE("animation export: the range, the folder and the tools are checked before any window", "[gui][present]") {
  const std::string dir = fresh_dir("present-anim");
  auto plan = [](gui::AnimationRequest r) { return gui::plan_animation(r, 27); };
  gui::AnimationRequest r;
  r.frames_dir = dir + "/frames";
  r.from = 3;
  r.to = 7;
  const gui::AnimationPlan p = plan(r);
  CHECK(p.count() == 5);
  CHECK(p.frames_dir == dir + "/frames");
  CHECK(fs::path(p.staging).parent_path() == fs::path(dir));  // beside it, renamed at the end
  CHECK(fs::path(p.frame_path(7)).filename() == "step-00007.png");
  REQUIRE_FALSE(fs::exists(p.staging));  // nothing is made by the check
  gui::AnimationRequest all = r;
  all.from = all.to = gui::AnimationRequest::kUnset;
  const gui::AnimationPlan whole = plan(all);
  CHECK(whole.from == 0);
  CHECK(whole.to == 27);

  const std::string range = "--from K --to L needs 0 <= K <= L <= 27";
  for (auto [from, to] : {std::pair<int64_t, int64_t>{7, 3}, {0, 28}, {-1, 5}, {0, -2}, {28, gui::AnimationRequest::kUnset}}) {
    gui::AnimationRequest b = r;
    b.from = from;
    b.to = to;
    INFO("--from " << from << " --to " << to);
    REQUIRE_THROWS_WITH(plan(b), StartsWith(range));
  }
  gui::AnimationRequest none;
  none.to = 3;
  REQUIRE_THROWS_WITH(plan(none), "--from and --to need --frames DIR, --gif FILE or --video FILE");
  gui::AnimationRequest b = r;
  b.fps = 0;
  REQUIRE_THROWS_WITH(plan(b), "--fps must be from 0.5 to 60");
  // The folder: new or empty, its parent must exist, not a file.
  fs::create_directories(dir + "/full");
  write_text(dir + "/full/x.png", "x");
  write_text(dir + "/file", "x");
  fs::create_directories(dir + "/empty");
  b = r;
  b.frames_dir = dir + "/full";
  REQUIRE_THROWS_WITH(plan(b), Contains("is not empty"));
  b.frames_dir = dir + "/file";
  REQUIRE_THROWS_WITH(plan(b), Contains("exists and is not a folder"));
  b.frames_dir = dir + "/nope/frames";
  REQUIRE_THROWS_WITH(plan(b), Contains("the folder " + dir + "/nope does not exist"));
  b.frames_dir = dir + "/empty/";
  CHECK(plan(b).frames_dir == dir + "/empty");
  // Output names.
  b = r;
  b.gif = dir + "/out.png";
  REQUIRE_THROWS_WITH(plan(b), Contains("must end in .gif"));
  b = r;
  b.video = dir + "/out.avi";
  REQUIRE_THROWS_WITH(plan(b), Contains("must end in .mp4, .webm, .mkv or .mov"));
  b.video = dir + "/nope/out.mp4";
  REQUIRE_THROWS_WITH(plan(b), Contains("does not exist"));
}

TEST_CASE("animation export: without ImageMagick or ffmpeg on PATH, --gif and --video say what to install", "[gui][present]") {
  const std::string bin = fresh_dir("present-path");
  // A program called convert that is not ImageMagick (as on some systems) does not count.
  write_text(bin + "/convert", "#!/bin/sh\necho 'not the convert you want' >&2\nexit 1\n");
  fs::permissions(bin + "/convert", fs::perms::owner_all);
  ScopedEnv path("PATH", bin.c_str());
  CHECK(gui::find_imagemagick().empty());
  CHECK(gui::find_ffmpeg().empty());
  gui::AnimationRequest r;
  r.gif = bin + "/out.gif";
  REQUIRE_THROWS_WITH(gui::plan_animation(r, 10), StartsWith("--gif needs ImageMagick (convert) or ffmpeg on PATH"));
  r.gif.clear();
  r.video = bin + "/out.mp4";
  REQUIRE_THROWS_WITH(gui::plan_animation(r, 10), StartsWith("--video needs ffmpeg on PATH"));
  // A stand-in that answers -version as ImageMagick does is found, and the GIF command lists
  // every frame in step order with the delay in hundredths of a second.
  write_text(bin + "/convert", "#!/bin/sh\necho 'Version: ImageMagick 6.9.11-60 Q16'\n");
  CHECK(gui::find_imagemagick() == bin + "/convert");
  r.video.clear();
  r.gif = bin + "/out.gif";
  r.from = 2;
  r.to = 5;
  r.fps = 5;
  const gui::AnimationPlan p = gui::plan_animation(r, 10);
  CHECK(p.gif_encoder.what == "ImageMagick");
  const std::vector<std::string> cmd = gui::gif_command(p, "x.gif");
  REQUIRE(cmd.size() == 1 + 4 + 4 + 1);
  CHECK(cmd[2] == "20");
  CHECK(cmd[5] == p.frame_path(2));
  CHECK(cmd[8] == p.frame_path(5));
  CHECK(cmd.back() == "x.gif");
}
