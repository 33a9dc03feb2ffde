// What the desktop app's two test programs share: a folder for their files, and reading them.
#pragma once
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

inline std::string out_path(const std::string& name) {
  std::filesystem::create_directories(FLASHSTEP_GUI_TEST_OUT);
  return std::string(FLASHSTEP_GUI_TEST_OUT) + "/" + name;
}

// A fresh, empty folder for one test's files.
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = out_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A file's whole text ("" when it cannot be read).
inline std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}
