// The app's files and exports as an adversarial user tries them, in a real window under Xvfb:
// every bad input gives one short `flashstep: error:` line and exit code 2 within a time limit
// (a FIFO must not hang the app), and nothing in the folder is created, changed or deleted.
#include "core/npy.h"
#include "core/run.h"
#include "gui_test_helpers.h"
#include "gui_refusal_helpers.h"

#include <csignal>
#include <string>
#include <sys/stat.h>

using namespace flashstep;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the test output folder.
fs::path fresh(const std::string& name) {
  const fs::path d = out_path("hardening-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

using fstest::check_gui_refused;
using fstest::gui_cmd;
using fstest::write_text;

}  // namespace

TEST_CASE("gui: FIFOs, folders and devices given as files are refused at once", "[gui][hardening2]") {
  const fs::path dir = fresh("fifo");
  for (const char* name : {"fifo.json", "settings-fifo"}) REQUIRE(::mkfifo((dir / name).c_str(), 0600) == 0);
  fs::create_directories(dir / "folder.json");
  fs::create_symlink("/dev/zero", dir / "zero.json");
  const std::string shot = " --screenshot s.png";
  check_gui_refused(dir, "--settings settings-fifo" + shot, "is a FIFO, not a regular file");
  check_gui_refused(dir, shot, "is a FIFO, not a regular file", "FLASHSTEP_SETTINGS=settings-fifo");
  check_gui_refused_each(dir, {
      {"--preset fifo.json" + shot, "is a FIFO, not a regular file"},
      {"--preset folder.json" + shot, "is a directory, not a regular file"},
      {"--preset zero.json" + shot, "is a character device, not a regular file"},
      {"--dram fifo.json" + shot, "--dram: measurement file fifo.json: is a FIFO, not a regular file"},
      {"--bench fifo.json" + shot, "is a FIFO, not a regular file"},
      {"--snapshots fifo.json" + shot, "is a FIFO, not a snapshot folder"},
  });
}

TEST_CASE("gui: presets that are not an object, too deep, too long or out of range", "[gui][hardening2]") {
  const fs::path dir = fresh("preset");
  const std::pair<std::string, std::string> bad[] = {
      {"42", "must be a JSON object ({...}), not 42"},
      {"[]", "must be a JSON object ({...}), not an array of 0 values"},
      {"\"tiny\"", "must be a JSON object"},
      {"{\"problem\": [1, 2, 3]}", "\"problem\" must be an object ({...}), not an array of 3 values"},
      {"{\"lesson\": 5}", "\"lesson\" must be an object"},
      {"{\"title\": \"" + std::string(100000, 'T') + "\"}", "\"title\" is 100000 characters long; at most 200"},
      {"{\"problem\": {\"q\": \"" + std::string(5000, 'q') + "\"}}", "\"q\" is 5000 characters long"},
      {"{\"problem\": {\"nq\": 1e999}}", "number overflow"},
      {"{\"problem\": {\"scale\": " + std::string(100000, '[') + "}}", "nested deeper than 64"},
      {"{\"problem\": {\"schedule\": \"" + std::string(50, 'x') + "\"}}", "unknown schedule"},
      {"{\"problem\": {\"causal\": \"yes\"}}", "\"causal\" must be true or false, not the string \"yes\""},
      {"{\"lesson\": {\"values\": [1" + [] { std::string t; for (int k = 0; k < 40; ++k) t += ", 1"; return t; }() + "]}}",
       "lesson values must be an array of 1 to 16 numbers"},
  };
  int k = 0;
  for (const auto& [text, expect] : bad) {
    const std::string name = "p" + std::to_string(k++) + ".json";
    write_text(dir / name, text);
    check_gui_refused(dir, "--preset " + name + " --screenshot s.png", expect);
  }
}

TEST_CASE("gui: flags that wrap, huge counts and a missing display", "[gui][hardening2]") {
  const fs::path dir = fresh("flags");
  check_gui_refused_each(dir, {
      {"--size 4294968496x700 --screenshot s.png", "--size must be between 320x240 and 8192x8192"},
      {"--size 1600x1000x3 --screenshot s.png", "--size must look like"},
      {"--step -1 --screenshot s.png", "--step must be >= 0 (got -1)"},
      {"--step 99999999999999999999 --screenshot s.png", "(got '99999999999999999999')"},
      {"--bench-frames 2000000000", "--bench-frames must be in 0..100000"},
      {"--screenshot \"\"", "--screenshot: the value is empty"},
      {"--frames \"\"", "--frames: the value is empty"},
      {"--gif \"\"", "--gif: the value is empty"},
      // decode has no backward: asking for one crashed the app (its bounds were asked for first)
      {"--preset decode --backward --screenshot s.png", "decode has no backward pass"},
  });
  // Without a display, and with one that cannot be reached: one line each.
  const auto before = fstest::tree(dir);
  for (const std::string& env : {std::string("env -u DISPLAY -u WAYLAND_DISPLAY"), std::string("env -u WAYLAND_DISPLAY DISPLAY=:4321")}) {
    CAPTURE(env);
    const fstest::Outcome r = fstest::run_limited("cd " + dir.string() + " && " + env + " " + FLASHSTEP_BIN + " gui --screenshot s.png", 60);
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(fstest::one_short_error_line(r.out));
  }
  CHECK(fstest::tree(dir) == before);
}

TEST_CASE("gui: outputs never replace the app's own inputs, a device or a FIFO, and go together", "[gui][hardening2]") {
  const fs::path dir = fresh("outputs");
  write_text(dir / "p.json", "{\"title\": \"mine\", \"problem\": {\"nq\": 8, \"nk\": 8, \"d\": 4, \"M\": 64}}");
  fs::copy_file(fs::path(FLASHSTEP_SOURCE_DIR) / "assets/bench/h200.json", dir / "bench.json");
  REQUIRE(::mkfifo((dir / "fifo.gif").c_str(), 0600) == 0);
  fs::create_symlink(dir / "missing.gif", dir / "dangling.gif");
  fs::create_directories(dir / "dumpdir");
  fs::create_symlink("/dev/null", dir / "null.gif");
  check_gui_refused_each(dir, {
      {"--preset p.json --screenshot p.json", "refusing to overwrite an input"},
      {"--bench bench.json --screenshot bench.json", "refusing to overwrite an input"},
      {"--settings p.json --screenshot p.json", "refusing to overwrite an input"},  // read as settings
      {"--screenshot s.png --dump-state dumpdir", "is a directory, not a regular file"},
      {"--screenshot s.png --dump-state s.png", "name the same file"},
      {"--gif fifo.gif", "is a FIFO, not a regular file"},
      {"--gif null.gif", "is a character device, not a regular file"},
      {"--gif dangling.gif", "symlink to a missing file"},
      {"--video /dev/full", "is a character device, not a regular file"},
  });
}

TEST_CASE("gui: --frames writes through a symlinked folder, and SIGTERM leaves no staging folder", "[gui][hardening2]") {
  const fs::path dir = fresh("frames");
  fs::create_directories(dir / "real");
  fs::create_symlink(dir / "real", dir / "link");
  const fstest::Outcome r = fstest::run_limited(gui_cmd(dir, "--preset tiny --frames link --from 0 --to 2"), 120);
  CAPTURE(r.out);
  REQUIRE(r.rc == 0);
  CHECK(fs::is_symlink(dir / "link"));
  CHECK(fs::exists(dir / "real" / "step-00002.png"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().rfind(".flashstep", 0) != 0);
  // Stopped by SIGTERM in the middle of a long export: no frames folder, no staging folder.
  const fs::path stop = fresh("frames-stop");
  const fstest::Outcome s = fstest::run_limited(
      "cd " + stop.string() + " && " + FLASHSTEP_XVFB_RUN + " -a timeout -s TERM 12 " + FLASHSTEP_BIN +
          " gui --preset gpt2-medium --frames out", 120);
  CAPTURE(s.out);
  CHECK(s.rc != 0);
  CHECK(fstest::tree(stop).empty());
}

TEST_CASE("gui: a path longer than 512 characters is used whole, not cut", "[gui][hardening2]") {
  fs::path dir = fresh("longpath");
  fs::path deep = dir;
  for (int k = 0; k < 6; ++k) deep /= std::string(100, char('a' + k));
  fs::create_directories(deep);
  REQUIRE(fstest::run_limited(std::string(FLASHSTEP_BIN) + " run --nq 8 --nk 8 --d 4 --M 64 --snapshots " + (deep / "s").string()).rc == 0);
  REQUIRE((deep / "s").string().size() > 600);
  const fstest::Outcome r = fstest::run_limited(
      gui_cmd(dir, "--preset tiny --snapshots " + (deep / "s").string() + " --view compare --screenshot s.png"), 90);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(fs::exists(dir / "s.png"));
}

TEST_CASE("gui: a script's apply that the editor or the run refuses is one error line, exit 2, no screenshot", "[gui][hardening2][script]") {
  const fs::path dir = fresh("script-apply");
  const std::string out = " --screenshot s.png --dump-state d.json";
  check_gui_refused_each(dir, {
      {"--script \"set nq 0; apply\"" + out, "flashstep: error: script: apply: Nq must be at least 1 (got 0)"},
      {"--script \"step 3; set M 8; apply; step 2\"" + out, "script: apply: M = 8 elements is smaller than 4d"},
      {"--script \"set window -2 0; apply\"" + out, "script: apply: window sizes must be >= 0"},
      // The form is valid, the run is refused: the window's "Not applied" line.
      {"--script \"files missing-q.npy missing-k.npy missing-v.npy; apply\"" + out, "script: apply: "},
  });
  // A value corrected before apply is taken, and the run it makes is drawn.
  const fstest::Outcome r = fstest::run_limited(gui_cmd(dir, "--script \"set nq 0; set nq 12; apply\"" + out), 90);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(fs::exists(dir / "s.png"));
  const nlohmann::json d = nlohmann::json::parse(fstest::read_text(dir / "d.json"));
  CHECK(d["form_error"] == "");
  CHECK(d["problem"]["nq"] == 12);
}
