#include "app/gui/settings.h"

#include "core/input_files.h"
#include "core/output_files.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

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
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  char range[64];
  std::snprintf(range, sizeof range, "from %.2g to %.2g", double(kMinFontScale), double(kMaxFontScale));
  if (text.empty() || end == text.c_str() || *end || !std::isfinite(x) || x < kMinFontScale || x > kMaxFontScale)
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

// The file as it stands (its other keys are kept on a save), or an empty object.
nlohmann::json existing_settings(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return nlohmann::json::object();
  // Through the same reader as load_settings: a FIFO or a huge file is refused, not read.
  const nlohmann::json j = parse_json_input(read_input_file(path, "the settings file", kMaxSettingsBytes), path);
  return j.is_object() ? j : nlohmann::json::object();
}

void write_settings(const nlohmann::json& j, const std::string& path) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);  // ~/.config/flashstep on first use
  write_file_atomic(path, j.dump(1) + "\n");
}

}  // namespace

nlohmann::json load_course_progress(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return nlohmann::json::object();
  const nlohmann::json j = parse_json_input(read_input_file(path, "the settings file", kMaxSettingsBytes), path);
  if (!j.is_object())
    throw InputError("the settings file " + path + " is not valid JSON (fix or delete it, or pass --settings another.json)");
  const nlohmann::json c = j.value("course", nlohmann::json::object());
  return c.is_object() ? c : nlohmann::json::object();
}

void save_course_progress(const nlohmann::json& progress, const std::string& path) {
  nlohmann::json j = existing_settings(path);
  j["course"] = progress;
  write_settings(j, path);
}

void save_settings(const DisplaySettings& d, const std::string& path) {
  nlohmann::json j = existing_settings(path);
  j["theme"] = theme_name(d.theme);
  j["font_scale"] = double(d.font_scale);
  nlohmann::json hidden = nlohmann::json::array();
  for (PanelBit p : kPanels)
    if (d.hidden & p) hidden.push_back(panel_name(p));
  j["hidden"] = hidden;
  write_settings(j, path);
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
