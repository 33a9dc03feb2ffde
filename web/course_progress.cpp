// The course's progress across visits: the settings file's "course" object (app/gui/settings.h:
// per chapter, the pages seen and the questions answered right) copied to and from the browser's
// localStorage, under one key for the page's origin. A reload, or a link with an empty course=,
// then opens the first chapter not finished, as the desktop app does.
#include "web/course_progress.h"

#include "app/gui/settings.h"
#include "core/input_error.h"

#include <emscripten.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

// localStorage can be missing or refuse (storage disabled, a private window's quota): then the
// progress is the visit's only, as before.
EM_JS(char*, web_load_progress, (), {
  try {
    const t = window.localStorage.getItem("flashstep-course-progress");
    return t === null ? 0 : allocateUTF8(t);
  } catch (e) {
    return 0;
  }
});

EM_JS(void, web_store_progress, (const char* json), {
  try {
    window.localStorage.setItem("flashstep-course-progress", UTF8ToString(json));
  } catch (e) {
    console.warn("flashstep: the course progress is kept for this visit only: " + e);
  }
});

EM_JS(void, web_forget_progress, (const char* why), {
  console.warn("flashstep: the stored course progress was dropped: " + UTF8ToString(why));
  try {
    window.localStorage.removeItem("flashstep-course-progress");
  } catch (e) {
  }
});

namespace flashstep::web {

namespace {

struct FileSeen {
  ino_t ino = 0;
  off_t size = -1;
  long long mtime_ns = -1;
  bool operator==(const FileSeen& o) const { return ino == o.ino && size == o.size && mtime_ns == o.mtime_ns; }
};
FileSeen g_seen;          // the settings file as last read
std::string g_stored;     // the "course" text last stored

FileSeen file_seen(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_size, (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
}

void make_parents(const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
    ::mkdir(path.substr(0, at).c_str(), 0755);
}

}  // namespace

void restore_course_progress() {
  const std::string path = gui::settings_path("");
  char* text = web_load_progress();
  if (path.empty() || !text) {
    std::free(text);
    return;
  }
  const nlohmann::json course = nlohmann::json::parse(text, nullptr, false);
  std::free(text);
  if (!course.is_object()) {
    web_forget_progress("not a JSON object");
    return;
  }
  make_parents(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << nlohmann::json{{"course", course}}.dump();
  }
  try {
    gui::load_course_progress(path);  // what the course will read: refused here, not there
  } catch (const InputError& e) {
    std::remove(path.c_str());
    web_forget_progress(e.what());
    return;
  }
  g_seen = file_seen(path);
  g_stored = course.dump();
}

void keep_course_progress() {
  static const std::string path = gui::settings_path("");
  const FileSeen now = file_seen(path);
  if (path.empty() || now == g_seen) return;
  g_seen = now;  // each save replaces the file (a new inode), so a change is never missed
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("course") || !j["course"].is_object()) return;
  const std::string course = j["course"].dump();
  if (course == g_stored) return;  // a display setting changed, not the progress
  g_stored = course;
  web_store_progress(course.c_str());
}

}  // namespace flashstep::web
