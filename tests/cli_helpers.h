// What the tests that run the flashstep program share: running a command and capturing its
// output and exit code (with or without a time limit), the one-line error the program promises
// for bad input, and a temporary folder that removes itself.
#pragma once
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fstest {

#ifdef FLASHSTEP_BIN
inline const std::string kBin = FLASHSTEP_BIN;  // the flashstep program under test
#endif

// A fresh temporary directory, removed with all it holds when the test that made it ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("flashstep_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;  // never throw from a destructor; a leftover folder is harmless
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Runs a shell command, returning its exit status; stdout+stderr go to `output`.
inline int run_command(const std::string& cmd, std::string& output) {
  output.clear();
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) output.append(buf, n);
  const int status = ::pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Outcome {
  int rc = -1;  // 124: the time limit ended it
  std::string out;
  double seconds = 0;
};

#ifdef FLASHSTEP_BIN
// `flashstep ARGS`, stdout and stderr together.
inline Outcome run_flashstep(const std::string& args) {
  Outcome o;
  o.rc = run_command(kBin + " " + args, o.out);
  return o;
}
#endif

// `cmd` in a shell under `timeout LIMIT`, stdout and stderr together, no standard input (a FIFO
// read with a plain open would hang the program).
inline Outcome run_limited(const std::string& cmd, int limit_s = 60) {
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* f = ::popen(("timeout -s KILL " + std::to_string(limit_s) + " sh -c '" + cmd + "' 2>&1 < /dev/null").c_str(), "r");
  if (!f) return o;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) o.out.append(buf, n);
  const int status = ::pclose(f);
  o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

// Exactly one line, `flashstep: error: ...` (docs/limits.md).
inline bool one_error_line(const std::string& out) {
  return out.rfind("flashstep: error: ", 0) == 0 && out.find('\n') == out.size() - 1;
}
// One error line, short: a message quotes at most a cut excerpt of its input.
inline bool one_short_error_line(const std::string& out) { return one_error_line(out) && out.size() < 1200; }

}  // namespace fstest
