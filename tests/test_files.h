// Reading and writing a test's files, shared by the test programs (before unity builds, several
// test files had their own copies of these under the same names).
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fstest {

// A file's whole text, and a file written with exactly `text` (NUL bytes included).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

}  // namespace fstest
