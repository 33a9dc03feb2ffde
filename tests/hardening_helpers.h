// What the hardening tests share: the state of a folder (to show that a refused command created,
// changed and deleted nothing), and running the program under a time limit (a FIFO read with a
// plain open would hang it).
#pragma once
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace fstest {

// Every entry under `root`, recursively, without following links: relative path -> its kind
// and content (a file's bytes, or over 16 MiB its size and time; a link's target).
inline std::map<std::string, std::string> tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(root, ec))) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), root);
    const fs::file_status st = it->symlink_status(ec);
    std::string v;
    if (fs::is_symlink(st)) {
      v = "link " + fs::read_symlink(it->path(), ec).string();
    } else if (fs::is_regular_file(st)) {
      const uintmax_t size = fs::file_size(it->path(), ec);
      if (size > (uintmax_t(16) << 20)) {  // a large (sparse) test file: its size and time
        v = "file of " + std::to_string(size) + " bytes, written " +
            std::to_string(fs::last_write_time(it->path(), ec).time_since_epoch().count());
      } else {
        std::ifstream in(it->path(), std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        v = "file " + ss.str();
      }
    } else if (fs::is_directory(st)) {
      v = "dir";
    } else {
      v = "special " + std::to_string(int(st.type()));
    }
    out[rel.string()] = v;
  }
  return out;
}

struct Outcome {
  int rc = -1;  // 124: the time limit ended it
  std::string out;
  double seconds = 0;
};

// `cmd` in a shell under `timeout LIMIT`, stdout and stderr together.
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

// One `flashstep: error:` line, short (a message quotes at most a cut excerpt of its input).
inline bool one_short_error_line(const std::string& out) {
  return out.rfind("flashstep: error: ", 0) == 0 && out.find('\n') == out.size() - 1 && out.size() < 1200;
}

}  // namespace fstest
