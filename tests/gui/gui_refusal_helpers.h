// What the desktop app's adversarial tests share (test_gui_hardening.cpp,
// test_gui_settings_file.cpp): `flashstep gui` in a folder under Xvfb, and the check that it was
// refused and left the folder as it was.
#pragma once
#include "tests/hardening_helpers.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace fstest {

// The shell command running `flashstep gui ARGS` in `dir` under xvfb-run, with `env`
// (VAR=value ...) before it.
inline std::string gui_cmd(const std::filesystem::path& dir, const std::string& args, const std::string& env = "") {
  return "cd " + dir.string() + " && " + env + " " + FLASHSTEP_XVFB_RUN + " -a -s \"-screen 0 1600x1000x24\" " +
         FLASHSTEP_BIN + " gui " + args;
}

// `flashstep gui ARGS` in `dir`: one short error line naming `expect`, exit 2, and the folder
// as it was.
inline void check_gui_refused(const std::filesystem::path& dir, const std::string& args, const std::string& expect,
                              const std::string& env = "") {
  CAPTURE(args, env);
  const auto before = tree(dir);
  const Outcome r = run_limited(gui_cmd(dir, args, env), 90);
  CAPTURE(r.out);
  CHECK(r.rc == 2);
  CHECK(one_short_error_line(r.out));
  CHECK(r.out.find(expect) != std::string::npos);
  CHECK(tree(dir) == before);
}

// check_gui_refused for each (ARGS, expected text) of a table, in the same folder.
struct GuiRefusal {
  std::string args, expect;
};
inline void check_gui_refused_each(const std::filesystem::path& dir, const std::vector<GuiRefusal>& cases) {
  for (const GuiRefusal& c : cases) check_gui_refused(dir, c.args, c.expect);
}

}  // namespace fstest
