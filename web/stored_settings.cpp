#include "web/stored_settings.h"

#include "app/gui/settings.h"
#include "core/input_error.h"

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

namespace flashstep::web {

namespace {

// The settings file's display keys (app/gui/settings.cpp writes all three on each save).
constexpr const char* kDisplayKeys[3] = {"theme", "font_scale", "hidden"};

nlohmann::json display_keys(const nlohmann::json& j) {
  nlohmann::json d = nlohmann::json::object();
  for (const char* k : kDisplayKeys)
    if (j.contains(k)) d[k] = j[k];
  return d;
}

void make_parent_dirs(const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
    ::mkdir(path.substr(0, at).c_str(), 0755);
}

void write_settings_text(const std::string& path, const std::string& text) {
  make_parent_dirs(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

StoredParts stored_parts(const std::string& file_text) {
  const nlohmann::json j = nlohmann::json::parse(file_text, nullptr, false);
  StoredParts p;
  if (!j.is_object()) return p;
  const nlohmann::json d = display_keys(j);
  if (!d.empty()) p.display = d.dump();
  if (j.contains("course") && j["course"].is_object()) p.course = j["course"].dump();
  return p;
}

StoredParts restore_settings_file(const std::string& path, const StoredParts& stored, StoredParts* refused) {
  StoredParts kept;
  if (path.empty() || (stored.display.empty() && stored.course.empty())) return kept;
  nlohmann::json file = nlohmann::json::object();
  if (!stored.display.empty()) {
    const nlohmann::json j = nlohmann::json::parse(stored.display, nullptr, false);
    if (!j.is_object()) {
      refused->display = "not a JSON object";
    } else {
      const nlohmann::json d = display_keys(j);  // nothing else rides in with them
      try {
        gui::parse_settings(d.dump(), "kept in this browser");  // names it "the settings file kept in ..."
        file.update(d);
        kept.display = d.dump();
      } catch (const InputError& e) {
        refused->display = e.what();
      }
    }
  }
  if (!stored.course.empty()) {
    const nlohmann::json c = nlohmann::json::parse(stored.course, nullptr, false);
    if (!c.is_object()) {
      refused->course = "not a JSON object";
    } else {
      nlohmann::json with = file;
      with["course"] = c;
      write_settings_text(path, with.dump());
      try {
        gui::load_course_progress(path);  // what the course will read: refused here, not there
        file = std::move(with);
        kept.course = c.dump();
      } catch (const InputError& e) {
        refused->course = e.what();
      }
    }
  }
  if (file.empty()) std::remove(path.c_str());
  else write_settings_text(path, file.dump());
  return kept;
}

}  // namespace flashstep::web
