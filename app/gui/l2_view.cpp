#include "app/gui/l2_view.h"

#include "core/input_files.h"
#include "core/schedule_registry.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace flashstep::gui {

namespace {

constexpr int64_t kMaxFileBytes = int64_t(16) << 20;  // a few hundred points take kilobytes
constexpr size_t kMaxL2Word = 64;                      // "gpu", "schedule", "dtype": short names

using nlohmann::json;

// The value at `key` of object `o`, which must be there (where: for the message).
const json& need(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key)) throw InputError(where + ": \"" + key + "\" is missing");
  return o[key];
}

int64_t whole_at(const json& o, const char* key, const std::string& where, int64_t lo, int64_t hi) {
  const json& v = need(o, key, where);
  const std::string bad = where + ": \"" + key + "\" must be a whole number in " + std::to_string(lo) +
                          ".." + std::to_string(hi);
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    throw InputError(bad);
  const double x = v.get<double>();
  if (!(x >= double(lo) && x <= double(hi))) throw InputError(bad);
  return int64_t(x);
}

double bytes_at(const json& o, const char* key, const std::string& where) {
  const json& v = need(o, key, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw InputError(where + ": \"" + key + "\" must be a number of bytes >= 0");
  return v.get<double>();
}

std::string text_at(const json& o, const char* key, const std::string& where) {
  const json& v = need(o, key, where);
  if (!v.is_string()) throw InputError(where + ": \"" + key + "\" must be a string");
  check_text_length(v.get_ref<const std::string&>(), kMaxL2Word, where, key);
  return v.get<std::string>();
}

DramMeasurements parse_dram_json(const json& j, const std::string& path);

}  // namespace

DramMeasurements load_dram_measurements(const std::string& path) {
  return parse_dram_measurements(read_input_file(path, "measurement file", kMaxFileBytes), path);
}

DramMeasurements parse_dram_measurements(const std::string& text, const std::string& path) {
  try {
    return parse_dram_json(parse_json_input(text, "measurement file " + excerpt(path, 512)), path);
  } catch (const json::exception& e) {  // a type nlohmann refuses: bad input, never an internal error
    throw InputError("measurement file " + excerpt(path, 512) + ": " + excerpt(e.what(), 120));
  }
}

namespace {

DramMeasurements parse_dram_json(const json& j, const std::string& path) {
  const std::string file = "measurement file " + excerpt(path, 512);
  if (!j.is_object()) throw InputError(file + ": expected an object with \"points\" (tools/device/ncu_dram.sh's format)");
  DramMeasurements m;
  m.path = path;
  m.gpu = j.contains("gpu") ? text_at(j, "gpu", file) : "h200";
  const json& points = need(j, "points", file);
  if (!points.is_array()) throw InputError(file + ": \"points\" must be an array");
  for (size_t k = 0; k < points.size(); ++k) {
    const std::string where = file + ": point " + std::to_string(k);
    const json& q = points[k];
    if (!q.is_object()) throw InputError(where + " must be an object");
    DramPoint pt;
    pt.schedule = text_at(q, "schedule", where);
    pt.n = whole_at(q, "n", where, 1, int64_t(1) << 31);
    pt.d = whole_at(q, "d", where, 1, int64_t(1) << 20);
    pt.heads = whole_at(q, "heads", where, 1, L2Config::kMaxHeads);
    if (q.contains("dtype")) {
      try {
        pt.dtype = parse_dtype(text_at(q, "dtype", where));
      } catch (const InputError& e) {
        throw InputError(where + ": " + e.what());
      }
    }
    if (q.contains("M")) pt.M = whole_at(q, "M", where, 1, int64_t(1) << 40);
    if (q.contains("error")) {  // the script logged a failed measurement: nothing to compare
      ++m.failed;
      continue;
    }
    const json& meas = need(q, "measured", where);
    if (!meas.is_object()) throw InputError(where + ": \"measured\" must be an object");
    const std::string mw = where + " measured";
    pt.read_bytes = bytes_at(meas, "dram_read_bytes", mw);
    pt.write_bytes = bytes_at(meas, "dram_write_bytes", mw);
    if (meas.contains("kernel_ms")) pt.kernel_ms = bytes_at(meas, "kernel_ms", mw);
    m.points.push_back(std::move(pt));
  }
  if (m.points.empty())
    throw InputError(file + ": no measured point" + (m.failed ? " (every one failed)" : ""));
  return m;
}

}  // namespace

const DramPoint* find_dram_point(const DramMeasurements& m, Schedule s, const Problem& p, const L2Config& l2) {
  if (m.gpu != l2.gpu || p.nq != p.nk) return nullptr;
  for (const DramPoint& pt : m.points)
    if (pt.schedule == schedule_name(s) && pt.n == p.nq && pt.d == p.d && pt.heads == l2.heads &&
        pt.dtype == p.dtype && (pt.M == p.M || !schedule_info(s).tiled))  // Algorithm 0 has no tiles
      return &pt;
  return nullptr;
}

L2StepView l2_step_view(const Trace& tr, const Step* cur) {
  L2StepView v;
  const L2Totals& l2 = tr.totals.l2;
  v.capacity_lines = l2.enabled ? l2.config.bytes / L2Config::kLineBytes : 0;
  if (!cur) return v;
  v.dram_read_total = cur->dram_read_total;
  v.dram_write_total = cur->dram_write_total;
  v.dram_read = cur->dram_read;
  v.dram_write = cur->dram_write;
  v.hbm_read_total = cur->hbm_read_total;
  v.lines = cur->l2_lines;
  v.dirty_lines = cur->l2_dirty_lines;
  v.hit_total = cur->l2_hit_total;
  v.hit_rate = cur->hbm_read_total > 0 ? double(cur->l2_hit_total) / double(cur->hbm_read_total) : 0.0;
  return v;
}

DramColumn dram_column(const Totals& t, Schedule s, const Problem& p, const DramMeasurements* m) {
  DramColumn c;
  c.model = t.l2.enabled;
  c.read = t.dram_read_bytes;
  c.write = t.dram_write_bytes;
  if (!c.model) return c;
  c.all_heads_read = t.l2.all_heads_read_bytes;
  c.all_heads_write = t.l2.all_heads_write_bytes;
  c.ncu = t.l2.config.ncu;
  c.ncu_read = t.l2.ncu_read_bytes;
  c.ncu_write = t.l2.ncu_write_bytes;
  if (m) c.measured = find_dram_point(*m, s, p, t.l2.config);
  return c;
}

}  // namespace flashstep::gui
