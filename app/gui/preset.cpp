#include "app/gui/preset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace flashstep::gui {

namespace fs = std::filesystem;

std::vector<std::string> preset_names(const std::string& asset_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(asset_dir) / "presets", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_path(const std::string& name, const std::string& asset_dir) {
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) return name;
  const fs::path p = fs::path(asset_dir) / "presets" / (name + ".json");
  if (fs::exists(p)) return p.string();
  std::string known;
  for (const std::string& n : preset_names(asset_dir)) known += (known.empty() ? "" : ", ") + n;
  throw InputError("unknown preset '" + name + "' (known: " + (known.empty() ? "none found in " + asset_dir : known) + ")");
}

Preset load_preset(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open preset " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw InputError("preset " + path + " is not valid JSON: " + e.what());
  }
  Preset p;
  p.path = path;
  p.name = fs::path(path).stem().string();
  const char* key = "";
  try {
    key = "name"; if (j.contains(key)) p.name = j[key].get<std::string>();
    key = "title"; if (j.contains(key)) p.title = j[key].get<std::string>();
    key = "description"; if (j.contains(key)) p.description = j[key].get<std::string>();
    key = "view"; if (j.contains(key)) p.view = j[key].get<std::string>();
    if (p.view != "tiles" && p.view != "lesson" && p.view != "compare")
      throw InputError("preset " + path + ": view must be tiles, lesson or compare");
    if (j.contains("problem")) {
      const auto& q = j["problem"];
      ProblemSpec& s = p.spec;
      key = "nq"; if (q.contains(key)) s.nq = q[key].get<int64_t>();
      key = "nk"; if (q.contains(key)) s.nk = q[key].get<int64_t>();
      key = "d"; if (q.contains(key)) s.d = q[key].get<int64_t>();
      key = "M";
      if (q.contains(key))
        s.M = q[key].is_string() ? parse_sram_size(q[key].get<std::string>()) : q[key].get<int64_t>();
      key = "br"; if (q.contains(key)) s.br = q[key].get<int64_t>();
      key = "bc"; if (q.contains(key)) s.bc = q[key].get<int64_t>();
      key = "scale"; if (q.contains(key)) s.scale = q[key].get<double>();
      key = "seed"; if (q.contains(key)) s.seed = q[key].get<uint64_t>();
      key = "pattern"; if (q.contains(key)) s.pattern = q[key].get<std::string>();
      key = "q"; if (q.contains(key)) s.q_path = q[key].get<std::string>();
      key = "k"; if (q.contains(key)) s.k_path = q[key].get<std::string>();
      key = "v"; if (q.contains(key)) s.v_path = q[key].get<std::string>();
      key = "causal"; if (q.contains(key)) s.options.mask.causal = q[key].get<bool>();
      key = "schedule"; if (q.contains(key)) s.schedule = parse_schedule(q[key].get<std::string>());
      key = "window";
      if (q.contains(key)) {
        const auto w = q[key].get<std::vector<int64_t>>();
        if (w.size() != 2) throw InputError("preset " + path + ": \"window\" must be [LEFT, RIGHT]");
        s.options.mask.window_left = w[0];
        s.options.mask.window_right = w[1];
      }
      key = "kv_len"; if (q.contains(key)) s.options.mask.kv_len = q[key].get<int64_t>();
      key = "dropout"; if (q.contains(key)) s.options.dropout = q[key].get<double>();
      key = "dtype"; if (q.contains(key)) s.options.dtype = parse_dtype(q[key].get<std::string>());
    }
    if (j.contains("lesson")) {
      const auto& l = j["lesson"];
      key = "values"; if (l.contains(key)) p.lesson_values = l[key].get<std::vector<double>>();
      key = "block"; if (l.contains(key)) p.lesson_block = l[key].get<size_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError("preset " + path + ": bad value for \"" + key + "\" (" + e.what() + ")");
  }
  return p;
}

}  // namespace flashstep::gui
