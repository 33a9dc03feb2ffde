// The settings file and the script, as an adversarial user tries them, in a real window under
// Xvfb: a refused run writes nothing; a save keeps what this version does not know (other keys,
// chapters, keys inside a chapter's entry), stays compact and within the reader's 64 KiB; a
// read-only file is left alone with a message; a --screenshot that is a hard link of the file is
// refused before anything is written; JSON with a NUL byte is refused; a script is run as
// written or refused (a newline, a fraction where a whole number goes).
#include "gui_test_helpers.h"
#include "gui_refusal_helpers.h"

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using fstest::read_text;
using fstest::write_text;

using fstest::check_gui_refused;
using fstest::gui_cmd;

fstest::Outcome run_ok(const fs::path& dir, const std::string& args) {
  CAPTURE(args);
  const fstest::Outcome r = fstest::run_limited(gui_cmd(dir, args), 90);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  return r;
}

// A settings file of another version: keys, a chapter and keys inside an entry this one does
// not know, padded with unknown chapters to `bytes` of compact JSON.
nlohmann::json foreign_settings(size_t bytes) {
  nlohmann::json j = {{"theme", "dark"},
                      {"font_scale", 1.0},
                      {"hidden", nlohmann::json::array()},
                      {"future_key", {{"kept", true}}},
                      {"course",
                       {{"future-chapter", {{"pages_seen", 3}, {"stars", 5}}},
                        {"tiling", {{"pages_seen", 1}, {"pages", 9}, {"questions", 2}, {"right", nlohmann::json::array()},
                                    {"hint_level", 2}}}}}};
  for (int k = 0; j.dump().size() < bytes; ++k)
    j["course"]["old-chapter-" + std::to_string(k)] = {{"pages_seen", k}, {"note", std::string(200, 'x')}};
  return j;
}

}  // namespace

TEST_CASE("gui: a refused run leaves the settings file as it was", "[gui][hardening3][settings]") {
  const fs::path dir = fresh_dir("settings-refused");
  write_text(dir / "s.json", foreign_settings(2000).dump());
  check_gui_refused(dir, "--course backward --page 42 --settings s.json --screenshot a.png", "--page 42");
  check_gui_refused(dir, "--course tiling --settings s.json --script \"display theme light; step 1 2\" --screenshot a.png",
                "does not take '2'");
  check_gui_refused(dir, "--settings s.json --script \"display theme light\" --screenshot a.png --size 1x1", "--size");
}

TEST_CASE("gui: a save keeps what it does not know, compactly, within the reader's limit", "[gui][hardening3][settings]") {
  const fs::path dir = fresh_dir("settings-merge");
  // 62 KB of compact JSON: pretty-printed it would be far over the reader's 64 KiB.
  const nlohmann::json before = foreign_settings(62000);
  REQUIRE(before.dump(1).size() > 65536);
  write_text(dir / "s.json", before.dump());
  run_ok(dir, "--course tiling --page 2 --settings s.json --script \"display theme light\" --screenshot a.png");
  const std::string text = read_text(dir / "s.json");
  CHECK(text.size() <= 65536);
  const nlohmann::json after = nlohmann::json::parse(text);
  CHECK(after["theme"] == "light");
  CHECK(after["future_key"] == before["future_key"]);
  CHECK(after["course"]["future-chapter"] == before["course"]["future-chapter"]);
  CHECK(after["course"]["old-chapter-7"] == before["course"]["old-chapter-7"]);
  CHECK(after["course"]["tiling"]["hint_level"] == 2);  // an unknown key inside a known chapter's entry
  CHECK(after["course"]["tiling"]["pages_seen"] == 2);  // the progress this run made
  // The file as saved is read again: the next run opens.
  run_ok(dir, "--settings s.json --screenshot b.png");
}

TEST_CASE("gui: a save that would pass 64 KiB, or a read-only file, leaves the file alone", "[gui][hardening3][settings]") {
  const fs::path dir = fresh_dir("settings-alone");
  // 20 bytes below the limit: the display keys a save adds (about 50 bytes) would pass it.
  nlohmann::json full = foreign_settings(60000);
  full.erase("theme");
  full.erase("font_scale");
  full.erase("hidden");
  full["pad"] = "";
  full["pad"] = std::string(65536 - 20 - full.dump().size(), 'p');
  REQUIRE(full.dump().size() == 65536 - 20);
  write_text(dir / "full.json", full.dump());
  const std::string full_text = read_text(dir / "full.json");
  REQUIRE(full_text.size() <= 65536);
  fstest::Outcome r = run_ok(dir, "--settings full.json --script \"display theme light\" --screenshot a.png");
  CHECK(r.out.find("over the 64 KiB") != std::string::npos);
  CHECK(read_text(dir / "full.json") == full_text);

  write_text(dir / "ro.json", "{\"theme\":\"dark\"}");
  REQUIRE(::chmod((dir / "ro.json").c_str(), 0444) == 0);
  r = run_ok(dir, "--settings ro.json --course tiling --script \"display theme light\" --screenshot b.png");
  CHECK(r.out.find("ro.json is read-only: left as it is") != std::string::npos);
  CHECK(read_text(dir / "ro.json") == "{\"theme\":\"dark\"}");
  struct stat st{};
  REQUIRE(::stat((dir / "ro.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0444);
}

TEST_CASE("gui: a screenshot that is a hard link of the settings file is refused before any write", "[gui][hardening3][settings]") {
  const fs::path dir = fresh_dir("settings-hardlink");
  write_text(dir / "s.json", foreign_settings(1000).dump());
  REQUIRE(::link((dir / "s.json").c_str(), (dir / "a.png").c_str()) == 0);
  check_gui_refused(dir, "--course tiling --settings s.json --screenshot a.png", "refusing to overwrite an input");
  check_gui_refused(dir, "--settings s.json --script \"display theme light\" --screenshot a.png",
                "refusing to overwrite an input");
}

TEST_CASE("gui: JSON with a NUL byte, or a field of the wrong type, is refused naming file and field", "[gui][hardening3][json]") {
  const fs::path dir = fresh_dir("settings-json");
  write_text(dir / "nul.json", std::string("{\"theme\":\"dark\"}\0{garbage", 26));
  write_text(dir / "preset.json", std::string("{\"problem\": {\"nq\": 8}}\0junk", 28));
  write_text(dir / "type.json", "{\"course\": {\"tiling\": {\"pages_seen\": \"three\"}}}");
  check_gui_refused_each(dir, {
      {"--settings nul.json --screenshot a.png", "a NUL byte at byte 16"},
      {"--preset preset.json --screenshot a.png", "a NUL byte at byte 22"},
      {"--settings type.json --course tiling --screenshot a.png", "type.json: course.tiling.pages_seen"},
  });
}

TEST_CASE("gui --script: run as written or refused", "[gui][hardening3][script]") {
  const fs::path dir = fresh_dir("script");
  write_text(dir / "newline.txt", "step 3\nstep 3\nfoo bar");  // "$(cat ...)" keeps the inner newlines
  check_gui_refused_each(dir, {
      {"--script \"$(cat newline.txt)\" --screenshot a.png", "control character (code 10)"},
      {"--script \"set nq 12.7\" --screenshot a.png", "script: set nq"},
      {"--script \"set heads 2.5\" --screenshot a.png", "script: set heads"},
      {"--script \"step 1 2\" --screenshot a.png", "'step' does not take '2'"},
      {"--script \"set seed 18446744073709551616\" --screenshot a.png", "out of range"},
      {"--script \"set seed -1\" --screenshot a.png", "set seed"},
  });
  // The documented largest seed is taken as it is, with no double in between.
  run_ok(dir, "--script \"set seed 18446744073709551615; apply\" --screenshot a.png --dump-state d.json");
  const nlohmann::json d = load_json((dir / "d.json").string());
  CHECK(d["problem"]["seed"].get<uint64_t>() == 18446744073709551615ull);
}
