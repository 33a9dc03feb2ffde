// What the window tests share (test_gui.cpp, test_gui_layout.cpp): the flashstep program run
// under xvfb-run with its output captured, and the --dump-state JSON of a run with a screenshot.
#pragma once
#include "gui_test_helpers.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace fstest {

struct Result {
  int code = -1;
  std::string output;
};

// Runs a shell command, capturing stdout and stderr together.
inline Result sh(const std::string& cmd, const std::string& tag) {
  const std::string log = out_path(tag + ".log");
  const int status = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

// flashstep gui ... in a fresh Xvfb display.
inline Result run_gui(const std::string& args, const std::string& tag) {
  return sh(std::string(FLASHSTEP_XVFB_RUN) + " -a -s '-screen 0 1600x1000x24' " + FLASHSTEP_BIN +
                " gui " + args,
            tag);
}

// The app run with ARGS, a screenshot and --dump-state (files named by TAG): the state it dumped.
inline nlohmann::json dumped_state(const std::string& args, const std::string& tag) {
  const std::string png = out_path(tag + ".png"), js = out_path(tag + ".json");
  const Result r = run_gui(args + " --screenshot " + png + " --dump-state " + js, tag);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return load_json(js);
}

}  // namespace fstest
