// What the desktop app's two test programs share: a folder for their files, and JSON reading.
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

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}
