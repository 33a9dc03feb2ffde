// What the hardening tests share: the state of a folder, to show that a refused command created,
// changed and deleted nothing (running the program under a time limit: tests/cli_helpers.h).
#pragma once
#include "tests/cli_helpers.h"
#include "tests/test_files.h"  // read_text, write_text

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

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

// Runs `flashstep ARGS` in `dir` under a time limit; checks the one short line naming `expect`,
// exit 2, the time and that nothing under `dir` was created, changed or deleted.
inline void check_refused(const std::filesystem::path& dir, const std::string& args, const std::string& expect) {
  CAPTURE(args);
  const auto before = tree(dir);
  const Outcome r = run_limited("cd " + dir.string() + " && " + kBin + " " + args, 60);
  CAPTURE(r.out);
  CHECK(r.rc == 2);
  CHECK(one_short_error_line(r.out));
  CHECK(r.out.find(expect) != std::string::npos);
  CHECK(r.seconds < 30);
  CHECK(tree(dir) == before);
}

}  // namespace fstest
