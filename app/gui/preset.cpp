#include "app/gui/preset.h"

#include "core/checked.h"
#include "core/input_files.h"

#include <algorithm>
#include <filesystem>
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
  throw InputError("unknown preset '" + excerpt(name) + "' (known: " + (known.empty() ? "none found in " + asset_dir : known) + ")");
}

// A JSON number that must be a whole number in [lo, hi] (1e300, 2.5 and 2^64 are errors, not
// wrapped integers); the ranges of the sizes themselves are checked by validate_sizes.
static int64_t whole(const nlohmann::json& v, const std::string& what, int64_t lo = INT64_MIN,
                     int64_t hi = INT64_MAX) {
  if (!v.is_number()) throw InputError(what + " must be a number, not " + json_excerpt(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw InputError(what + " must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
  if (v.is_number_integer()) return checked::in_range(v.get<int64_t>(), lo, hi, what.c_str());
  return checked::to_int(v.get<double>(), lo, hi, what.c_str());
}

Preset load_preset(const std::string& path) {
  return parse_preset(read_input_file(path, "preset"), path);
}

namespace {

// The preset's text fields: strings of bounded length (the app draws the title and the
// description; a path longer than the editor's field would be cut).
constexpr size_t kMaxName = 100, kMaxTitle = 200, kMaxDescription = 2000, kMaxWord = 64;
constexpr size_t kMaxLessonValues = 16;  // what the lesson's values field shows in full

struct Reader {
  const std::string& where;  // "preset PATH: "
  const nlohmann::json& section(const nlohmann::json& j, const char* key) const {
    const nlohmann::json& v = j[key];
    if (!v.is_object()) throw InputError(where + "\"" + key + "\" must be an object ({...}), not " + json_excerpt(v));
    return v;
  }
  std::string text(const nlohmann::json& v, const char* key, size_t max) const {
    if (!v.is_string()) throw InputError(where + "\"" + key + "\" must be a string, not " + json_excerpt(v));
    const std::string& t = v.get_ref<const std::string&>();
    check_text_length(t, max, where.substr(0, where.size() - 2), "\"" + std::string(key) + "\"");
    return t;
  }
  bool flag(const nlohmann::json& v, const char* key) const {
    if (!v.is_boolean()) throw InputError(where + "\"" + key + "\" must be true or false, not " + json_excerpt(v));
    return v.get<bool>();
  }
  double real(const nlohmann::json& v, const char* key) const {
    if (!v.is_number()) throw InputError(where + "\"" + key + "\" must be a number, not " + json_excerpt(v));
    return v.get<double>();
  }
};

}  // namespace

Preset parse_preset(const std::string& text, const std::string& path) {
  const std::string where = "preset " + excerpt(path, 512) + ": ";
  const nlohmann::json j = parse_json_input(text, "preset " + excerpt(path, 512));
  // Anything but an object ({...}) is an error: 42 or [] must not run the default problem.
  if (!j.is_object()) throw InputError(where + "must be a JSON object ({...}), not " + json_excerpt(j));
  const Reader r{where};
  Preset p;
  p.path = path;
  p.name = fs::path(path).stem().string();
  const char* key = "";
  try {
    key = "name"; if (j.contains(key)) p.name = r.text(j[key], key, kMaxName);
    key = "title"; if (j.contains(key)) p.title = r.text(j[key], key, kMaxTitle);
    key = "description"; if (j.contains(key)) p.description = r.text(j[key], key, kMaxDescription);
    key = "view"; if (j.contains(key)) p.view = r.text(j[key], key, kMaxWord);
    if (p.view != "tiles" && p.view != "lesson" && p.view != "compare" && p.view != "bench")
      throw InputError(where + "view must be tiles, lesson, compare or bench");
    key = "start";
    if (j.contains(key)) {
      if (j[key].is_string() && j[key].get<std::string>() == "backward") p.start_backward = true;
      else if (j[key].is_number()) p.start_step = whole(j[key], where + key, 0);
      else throw InputError(where + "start must be \"backward\" or a step count >= 0");
    }
    if (j.contains("problem")) {
      const auto& q = r.section(j, "problem");
      ProblemSpec& s = p.spec;
      key = "nq"; if (q.contains(key)) s.nq = whole(q[key], where + key);
      key = "nk"; if (q.contains(key)) s.nk = whole(q[key], where + key);
      key = "d"; if (q.contains(key)) s.d = whole(q[key], where + key);
      key = "M";
      if (q.contains(key))
        s.M = q[key].is_string() ? parse_sram_size(r.text(q[key], key, kMaxWord)) : whole(q[key], where + key);
      key = "br"; if (q.contains(key)) s.br = whole(q[key], where + key);
      key = "bc"; if (q.contains(key)) s.bc = whole(q[key], where + key);
      key = "scale"; if (q.contains(key)) s.scale = r.real(q[key], key);
      key = "seed";
      if (q.contains(key)) {  // 0..2^64-1: a negative seed or a fraction is an error, not wrapped
        if (!q[key].is_number_unsigned() && !(q[key].is_number_integer() && q[key].get<int64_t>() >= 0))
          throw InputError(where + "seed must be a whole number in 0..18446744073709551615");
        s.seed = q[key].get<uint64_t>();
      }
      key = "pattern"; if (q.contains(key)) s.pattern = r.text(q[key], key, kMaxWord);
      key = "q"; if (q.contains(key)) s.q_path = r.text(q[key], key, kMaxPathChars);
      key = "k"; if (q.contains(key)) s.k_path = r.text(q[key], key, kMaxPathChars);
      key = "v"; if (q.contains(key)) s.v_path = r.text(q[key], key, kMaxPathChars);
      key = "causal"; if (q.contains(key)) s.options.mask.causal = r.flag(q[key], key);
      key = "schedule"; if (q.contains(key)) s.schedule = parse_schedule(r.text(q[key], key, kMaxWord));
      key = "splits";  // 0 is not "the default": leave the key out for that
      if (q.contains(key) && (s.splits = whole(q[key], where + key)) < 1) throw InputError(where + "\"splits\" must be at least 1");
      key = "page_size"; if (q.contains(key)) s.page_size = whole(q[key], where + key);
      key = "window";
      if (q.contains(key)) {
        const auto& w = q[key];
        if (!w.is_array() || w.size() != 2) throw InputError(where + "\"window\" must be [LEFT, RIGHT]");
        s.options.mask.window_left = whole(w[0], where + "window LEFT");
        s.options.mask.window_right = whole(w[1], where + "window RIGHT");
      }
      key = "kv_len"; if (q.contains(key)) s.options.mask.kv_len = whole(q[key], where + key);
      key = "dropout"; if (q.contains(key)) s.options.dropout = r.real(q[key], key);
      key = "dtype"; if (q.contains(key)) s.options.dtype = parse_dtype(r.text(q[key], key, kMaxWord));
      key = "fp8_scale"; if (q.contains(key)) s.options.fp8_scale = parse_fp8_scale(r.text(q[key], key, kMaxWord));
      key = "rotate"; if (q.contains(key)) s.options.rotate = r.flag(q[key], key);
      key = "backward"; if (q.contains(key)) p.backward = r.flag(q[key], key);
      std::string l2_size, gpu;  // checked as `run --l2 --gpu --heads --ncu` checks them
      int64_t heads = 1;
      bool ncu = false;
      key = "l2";
      if (q.contains(key)) l2_size = q[key].is_number() ? std::to_string(whole(q[key], where + key, 0)) : r.text(q[key], key, kMaxWord);
      key = "gpu"; if (q.contains(key)) gpu = r.text(q[key], key, kMaxWord);
      key = "heads"; if (q.contains(key)) heads = whole(q[key], where + key);
      key = "ncu"; if (q.contains(key)) ncu = r.flag(q[key], key);
      try {
        p.l2 = l2_config_from_flags(l2_size, gpu, heads, q.contains("heads"), ncu);
      } catch (const InputError& e) {
        throw InputError(where + e.what());
      }
    }
    if (j.contains("lesson")) {
      const auto& l = r.section(j, "lesson");
      key = "values";
      if (l.contains(key)) {
        const auto& v = l[key];
        if (!v.is_array() || v.empty() || v.size() > kMaxLessonValues)
          throw InputError(where + "lesson values must be an array of 1 to " + std::to_string(kMaxLessonValues) +
                           " numbers, not " + json_excerpt(v));
        p.lesson_values.clear();
        for (const auto& x : v) p.lesson_values.push_back(r.real(x, "a lesson value"));
      }
      key = "block"; if (l.contains(key)) p.lesson_block = size_t(whole(l[key], where + "lesson block", 1, int64_t(kMaxLessonBlock)));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + "bad value for \"" + key + "\" (" + excerpt(e.what(), 120) + ")");
  }
  if (p.backward && p.l2)
    throw InputError(where + "the L2 model (\"l2\", \"gpu\") covers the forward pass only: not with \"backward\"");
  if (p.start_backward && !p.backward)
    throw InputError(where + "start \"backward\" needs \"backward\": true in \"problem\"");
  return p;
}

}  // namespace flashstep::gui
