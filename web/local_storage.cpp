// The settings file's display settings and course progress copied to and from the browser's
// localStorage, each under its own key for the page's origin. A reload, or a link with an empty
// course=, then opens the first chapter not finished, as the desktop app does; the Display menu's
// choices (theme, text size, hidden panels) hold on the next visit.
#include "web/local_storage.h"

#include "app/gui/settings.h"
#include "web/stored_settings.h"

#include <emscripten.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

// localStorage can be missing or refuse (storage disabled, a private window's quota): then the
// settings and the progress are the visit's only.
EM_JS(char*, web_load_stored, (const char* key), {
  try {
    const t = window.localStorage.getItem(UTF8ToString(key));
    return t === null ? 0 : allocateUTF8(t);
  } catch (e) {
    return 0;
  }
});

EM_JS(bool, web_store, (const char* key, const char* json), {
  try {
    window.localStorage.setItem(UTF8ToString(key), UTF8ToString(json));
    return true;
  } catch (e) {
    console.warn("flashstep: " + UTF8ToString(key) + " is kept for this visit only: " + e);
    return false;
  }
});

EM_JS(void, web_forget_stored, (const char* key, const char* why), {
  console.warn("flashstep: the stored " + UTF8ToString(key) + " was dropped: " + UTF8ToString(why));
  try {
    window.localStorage.removeItem(UTF8ToString(key));
  } catch (e) {
  }
});

namespace flashstep::web {

namespace {

constexpr const char* kDisplayKey = "flashstep-display";
constexpr const char* kCourseKey = "flashstep-course-progress";

struct FileSeen {
  ino_t ino = 0;
  off_t size = -1;
  long long mtime_ns = -1;
  bool operator==(const FileSeen& o) const { return ino == o.ino && size == o.size && mtime_ns == o.mtime_ns; }
};
FileSeen g_seen;       // the settings file as last read
StoredParts g_stored;  // the parts' texts as last stored

FileSeen file_seen(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_size, (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
}

std::string load_stored(const char* key) {
  char* text = web_load_stored(key);
  std::string s = text ? text : "";
  std::free(text);
  return s;
}

}  // namespace

void restore_stored_settings() {
  const std::string path = gui::settings_path("");
  const StoredParts stored{load_stored(kDisplayKey), load_stored(kCourseKey)};
  StoredParts refused;
  g_stored = restore_settings_file(path, stored, &refused);
  if (!refused.display.empty()) web_forget_stored(kDisplayKey, refused.display.c_str());
  if (!refused.course.empty()) web_forget_stored(kCourseKey, refused.course.c_str());
  g_seen = file_seen(path);
}

void keep_stored_settings(std::string* display_message) {
  static const std::string path = gui::settings_path("");
  const FileSeen now = file_seen(path);
  if (path.empty() || now == g_seen) return;
  g_seen = now;  // each save replaces the file (a new inode), so a change is never missed
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const StoredParts parts = stored_parts(text.str());
  if (!parts.display.empty() && parts.display != g_stored.display) {
    g_stored.display = parts.display;
    // The Display menu said "remembered in /home/web_user/...", a file of the page's memory.
    *display_message = web_store(kDisplayKey, parts.display.c_str())
                           ? "remembered in this browser"
                           : "not remembered: this browser keeps no data for the page (storage is off)";
  }
  if (!parts.course.empty() && parts.course != g_stored.course) {
    g_stored.course = parts.course;
    web_store(kCourseKey, parts.course.c_str());
  }
}

}  // namespace flashstep::web
