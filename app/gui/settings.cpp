#include "app/gui/settings.h"

#include "core/checked.h"
#include "core/input_files.h"
#include "core/output_files.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep::gui {

namespace fs = std::filesystem;

DisplaySettings presentation_settings() {
  DisplaySettings d;
  d.theme = Theme::light;
  d.font_scale = kPresentationFontScale;
  d.hidden = kPanelProblem;  // the editor is for preparing a lecture, not for giving it
  return d;
}

Theme parse_theme(const std::string& name) {
  if (name == "dark") return Theme::dark;
  if (name == "light") return Theme::light;
  throw InputError("--theme must be dark or light (got '" + excerpt(name) + "')");
}

float parse_font_scale(const std::string& text) {
  double x = 0;
  bool number = true;
  try {
    x = checked::parse_double(text, "--font-scale");  // decimal only: strtod would read 0x1.8 as 1.5
  } catch (const InputError&) {
    number = false;
  }
  char range[64];
  std::snprintf(range, sizeof range, "from %.2g to %.2g", double(kMinFontScale), double(kMaxFontScale));
  if (!number || x < kMinFontScale || x > kMaxFontScale)
    throw InputError("--font-scale must be a number " + std::string(range) + " (got '" + excerpt(text) + "')");
  return float(x);
}

const char* panel_name(PanelBit p) {
  switch (p) {
    case kPanelControls: return "controls";
    case kPanelAlgorithm: return "algorithm";
    case kPanelProblem: return "problem";
    case kPanelMemory: return "memory";
    case kPanelSoftmax: return "softmax";
    case kPanelLegend: return "legend";
  }
  return "";
}

unsigned parse_panels(const std::string& list) {
  unsigned set = 0;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty() || name == "none") continue;
    unsigned bit = 0;
    for (PanelBit p : kPanels)
      if (name == panel_name(p)) bit = p;
    if (!bit)
      throw InputError("--hide takes panels from controls, algorithm, problem, memory, softmax, legend, or none (got '" + excerpt(name) + "')");
    set |= bit;
  }
  return set;
}

const char* theme_name(Theme t) { return t == Theme::light ? "light" : "dark"; }

std::string panel_list(unsigned panels) {
  std::string out;
  for (PanelBit p : kPanels)
    if (panels & p) out += (out.empty() ? "" : ",") + std::string(panel_name(p));
  return out;
}

std::string settings_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (!env("FLASHSTEP_SETTINGS").empty()) return env("FLASHSTEP_SETTINGS");
  if (!env("XDG_CONFIG_HOME").empty()) return env("XDG_CONFIG_HOME") + "/flashstep/settings.json";
  if (!env("HOME").empty()) return env("HOME") + "/.config/flashstep/settings.json";
  return "";
}

DisplaySettings load_settings(const std::string& path) {
  // A missing file is the first run: the defaults. Anything else there must be a regular file
  // (a FIFO must not hang the app) of at most a few KiB.
  if (path.empty() || !check_input_file(path, "the settings file", true)) return DisplaySettings{};
  return parse_settings(read_input_file(path, "the settings file", kMaxSettingsBytes), path);
}

DisplaySettings parse_settings(const std::string& text, const std::string& path) {
  DisplaySettings d;
  const std::string fix = " (fix or delete it, or pass --settings another.json)";
  const std::string where = "the settings file " + excerpt(path, 512);
  try {
    const nlohmann::json j = parse_json_input(text, where);
    if (!j.is_object()) throw InputError("not a JSON object");
    auto word = [](const nlohmann::json& v, const char* key) {
      if (!v.is_string()) throw InputError(std::string(key) + " must be a string, not " + json_excerpt(v));
      return excerpt(v.get<std::string>(), 64);  // quoted by the parsers' messages
    };
    if (j.contains("theme")) d.theme = parse_theme(word(j.at("theme"), "theme"));
    if (j.contains("font_scale")) {
      const nlohmann::json& v = j.at("font_scale");
      if (!v.is_number()) throw InputError("font_scale must be a number, not " + json_excerpt(v));
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", v.get<double>());
      d.font_scale = parse_font_scale(text);
    }
    if (j.contains("hidden")) {
      const nlohmann::json& v = j.at("hidden");
      if (!v.is_array() || v.size() > 64) throw InputError("hidden must be an array of panel names, not " + json_excerpt(v));
      for (const auto& name : v) d.hidden |= parse_panels(word(name, "hidden"));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + " is not valid: " + excerpt(e.what(), 120) + fix);
  } catch (const InputError& e) {
    std::string why = e.what();
    if (why.rfind(where + ": ", 0) == 0) why = why.substr(where.size() + 2);  // named once
    throw InputError(where + " is not valid: " + why + fix);
  }
  return d;
}

namespace {

const std::string kFix = " (fix or delete it, or pass --settings another.json)";

// The file as it stands, or an empty object when there is none. A save merges into it, so that
// what this version does not know (other keys, other chapters) is kept.
nlohmann::json existing_settings(const std::string& path) {
  if (path.empty() || !check_input_file(path, "the settings file", true)) return nlohmann::json::object();
  // Through the same reader as load_settings: a FIFO or a huge file is refused, not read.
  const nlohmann::json j = parse_json_input(read_input_file(path, "the settings file", kMaxSettingsBytes), path);
  if (!j.is_object()) throw InputError("the settings file " + path + " is not a JSON object" + kFix);
  return j;
}

// The course's progress (course_state.h) merged into the file's "course": a chapter's entry is
// updated key by key, chapters not in `progress` stay as they were.
void merge_course(nlohmann::json& j, const nlohmann::json& progress) {
  nlohmann::json& c = j["course"];
  if (!c.is_object()) c = nlohmann::json::object();
  for (auto it = progress.begin(); it != progress.end(); ++it) {
    nlohmann::json& entry = c[it.key()];
    if (entry.is_object() && it.value().is_object()) entry.update(it.value());
    else entry = it.value();
  }
}

void merge_display(nlohmann::json& j, const DisplaySettings& d) {
  j["theme"] = theme_name(d.theme);
  j["font_scale"] = double(d.font_scale);
  nlohmann::json hidden = nlohmann::json::array();
  for (PanelBit p : kPanels)
    if (d.hidden & p) hidden.push_back(panel_name(p));
  j["hidden"] = hidden;
}

// One save: read, merge, write compactly (so that the file stays within what the reader takes),
// all or nothing. A read-only file is left as it is.
void save_merged(const std::string& path, const DisplaySettings* display, const nlohmann::json* progress) {
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(path.c_str(), W_OK) != 0))
    throw InputError("the settings file " + path + " is read-only: left as it is");
  nlohmann::json j = existing_settings(path);
  if (display) merge_display(j, *display);
  if (progress) merge_course(j, *progress);
  const std::string text = j.dump() + "\n";
  if (int64_t(text.size()) > kMaxSettingsBytes)
    throw InputError("the settings file " + path + " would grow to " + std::to_string(text.size()) +
                     " bytes, over the " + std::to_string(kMaxSettingsBytes / 1024) + " KiB it may hold: left as it is");
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);  // ~/.config/flashstep on first use
  write_file_atomic(path, text);
}

// Saves made while a hold is in force wait here (the latest of each kind).
struct PendingSaves {
  int holds = 0;
  std::string path;
  std::optional<DisplaySettings> display;
  std::optional<nlohmann::json> progress;
};
PendingSaves g_pending;

// The whole file is checked as load_settings checks it; then each chapter's known fields.
void check_course_entry(const nlohmann::json& entry, const std::string& where) {
  for (const char* key : {"pages_seen", "pages", "questions"})
    if (entry.contains(key) && (!entry[key].is_number_integer() || entry[key].get<int64_t>() < 0 ||
                                entry[key].get<int64_t>() > 1000000))
      throw InputError(where + "." + key + " must be a whole number >= 0, not " + json_excerpt(entry[key]) + kFix);
  if (!entry.contains("right")) return;
  const nlohmann::json& right = entry["right"];
  if (!right.is_array()) throw InputError(where + ".right must be an array of strings, not " + json_excerpt(right) + kFix);
  for (const auto& r : right)
    if (!r.is_string()) throw InputError(where + ".right must be an array of strings, not one holding " + json_excerpt(r) + kFix);
}

}  // namespace

SettingsWriteHold::SettingsWriteHold() { ++g_pending.holds; }

SettingsWriteHold::~SettingsWriteHold() {
  if (held_ && --g_pending.holds == 0) g_pending = PendingSaves{};  // refused: nothing is written
}

void SettingsWriteHold::release() {
  if (!held_) return;
  held_ = false;
  if (--g_pending.holds > 0) return;
  PendingSaves p = std::move(g_pending);
  g_pending = PendingSaves{};
  if (p.display || p.progress)
    save_merged(p.path, p.display ? &*p.display : nullptr, p.progress ? &*p.progress : nullptr);
}

nlohmann::json load_course_progress(const std::string& path) {
  const nlohmann::json j = existing_settings(path);
  const nlohmann::json c = j.value("course", nlohmann::json::object());
  if (!c.is_object()) throw InputError("the settings file " + path + ": course must be an object, not " + json_excerpt(c) + kFix);
  for (auto it = c.begin(); it != c.end(); ++it)
    if (it.value().is_object()) check_course_entry(it.value(), "the settings file " + path + ": course." + excerpt(it.key()));
  return c;
}

void save_course_progress(const nlohmann::json& progress, const std::string& path) {
  if (g_pending.holds > 0) {
    g_pending.path = path;
    g_pending.progress = progress;
    return;
  }
  save_merged(path, nullptr, &progress);
}

void save_settings(const DisplaySettings& d, const std::string& path) {
  if (g_pending.holds > 0) {
    g_pending.path = path;
    g_pending.display = d;
    return;
  }
  save_merged(path, &d, nullptr);
}

void DisplayState::change(const DisplaySettings& next) {
  if (next == now) return;
  now = next;
  ++version;
  if (path.empty()) {
    message = "not remembered: no settings file (set HOME, FLASHSTEP_SETTINGS or --settings)";
    return;
  }
  try {
    save_settings(now, path);
    message = "remembered in " + path;
  } catch (const InputError& e) {
    message = std::string("not remembered: ") + e.what();
  }
}

void DisplayState::run_command(const std::string& command) {
  std::istringstream cs(command);
  std::string verb, arg;
  cs >> verb >> arg;
  DisplaySettings next = now;
  if (verb == "theme") next.theme = parse_theme(arg);
  else if (verb == "font-scale") next.font_scale = parse_font_scale(arg);
  else if (verb == "hide") next.hidden |= parse_panels(arg);
  else if (verb == "show") next.hidden &= ~parse_panels(arg);
  else if (verb == "presentation") next = presentation_settings();
  else if (verb == "default") next = DisplaySettings{};
  else if (verb == "menu") menu_open = true;  // opens the Display menu (for screenshots of it)
  else
    throw InputError("script: display knows theme dark|light, font-scale X, hide PANELS, show PANELS, "
                     "presentation, default, menu (got '" + excerpt(verb) + "')");
  change(next);
}

}  // namespace flashstep::gui
