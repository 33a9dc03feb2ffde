#include "app/plot/bench_data.h"

#include "core/input_files.h"
#include "core/types.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace flashstep::plot {

namespace {

// Limits of a bench file (docs/limits.md): a real one has a few runs of tens of points; more
// would only make the figures slow and unreadable.
constexpr int64_t kMaxBenchBytes = int64_t(16) << 20;
constexpr size_t kMaxRuns = 64, kMaxPoints = 2048;  // points: timings and sweep entries, all runs
constexpr size_t kMaxText = 512;                     // "device", "source", "skipped": drawn in figures
constexpr size_t kMaxDeviceText = 200;               // the devices of all runs joined
constexpr int64_t kMaxCount = int64_t(1) << 40;      // n, d, Br, Bc, peak_bytes
// Times, TFLOP/s and bytes: near float64's largest value an axis's margin above the data (x 1.5
// on a log axis, figures.cpp's make_axis) overflows to infinity; 1e300 keeps it finite, and
// holds any figure a benchmark could measure.
constexpr double kMaxValue = 1e300;

// Reads one JSON object's fields; every failure names the file and the field's path.
struct Fields {
  const nlohmann::json& obj;
  std::string where;  // "runs[1].rows[3].fa1"
  const std::string& name;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(name + ": " + (where.empty() ? key : where + "." + key) + " " + what);
  }
  const nlohmann::json& at(const std::string& key) const {
    if (!obj.contains(key)) fail(key, "is missing");
    return obj[key];
  }
  double positive(const std::string& key) const {
    const nlohmann::json& v = at(key);
    // A NaN cannot come from JSON text, but an infinite or negative time is not a measurement.
    if (!v.is_number() || !(v.get<double>() > 0)) fail(key, "must be a positive number");
    if (v.get<double>() > kMaxValue)
      fail(key, "is " + json_excerpt(v) + ", beyond the range the figures take (at most 1e300)");
    return v.get<double>();
  }
  int64_t count(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > kMaxCount)
      fail(key, "must be a positive integer up to 2^40");
    return v.get<int64_t>();
  }
  std::string text(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_string()) fail(key, "must be a string");
    const std::string& t = v.get_ref<const std::string&>();
    if (t.size() > kMaxText) fail(key, "is " + std::to_string(t.size()) + " characters long; at most " + std::to_string(kMaxText));
    return t;
  }
  bool flag(const std::string& key) const {  // absent means false
    if (!obj.contains(key)) return false;
    if (!obj[key].is_boolean()) fail(key, "must be true or false");
    return obj[key].get<bool>();
  }
  const nlohmann::json& array(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_array()) fail(key, "must be an array");
    return v;
  }
  Fields object(const nlohmann::json& v, const std::string& sub) const {
    const std::string path = where.empty() ? sub : where + "." + sub;
    if (!v.is_object()) throw InputError(name + ": " + path + " must be an object");
    return Fields{v, path, name};
  }
};

std::string precision_name(const std::string& dtype) {
  if (dtype == "float32" || dtype == "fp32") return "fp32";
  if (dtype == "fp16" || dtype == "bf16") return dtype;
  return "";
}

std::string series_label(const Timing& t) {
  std::string s = t.schedule + (t.tensor_cores ? " TC " : " ") + t.precision;
  if (t.causal) s += ", causal";
  if (t.with_forward) s += ", forward + backward";
  else if (t.backward) s += ", backward";
  return s;
}

// The entries a run's rows carry, by kind of run.
struct Entry {
  const char* key;
  const char* schedule;
};
// registry-exempt (these lines): the keys of bench-gpu's stored result files, as they were written
constexpr Entry kForward[] = {{"fa1", "fa1"}, {"standard", "standard"}, {"fa2", "fa2"}};  // registry-exempt: file keys
constexpr Entry kTensorCores[] = {{"fa2_tc", "fa2"}, {"standard_tc", "standard"}};  // registry-exempt: file keys
constexpr Entry kTensorCoresBackward[] = {{"fa2_tc", "fa2"}};  // registry-exempt: file keys (bench-gpu --backward --tensor-cores)

void parse_run(const Fields& run, int index, BenchData& out) {
  const bool tc = run.flag("tensor_cores"), backward = run.flag("backward");
  const std::string device = run.text("device");
  if (out.device.empty()) out.device = device;
  else if (out.device.find(device) == std::string::npos && out.device.size() <= kMaxDeviceText)
    out.device += out.device.size() + device.size() > kMaxDeviceText ? " / ..." : " / " + device;
  const std::string run_precision = precision_name(run.text("dtype"));
  if (run_precision.empty()) run.fail("dtype", "must be float32, fp32, fp16 or bf16");
  const bool run_causal = run.flag("causal");
  out.sources.push_back(run.obj.contains("source") ? run.text("source") : "run " + std::to_string(index + 1));

  const nlohmann::json& rows = run.array("rows");
  const nlohmann::json* sweep = run.obj.contains("sweep") ? &run.array("sweep") : nullptr;
  if (out.timings.size() + out.sweep.size() + out.skipped + rows.size() * 3 + (sweep ? sweep->size() : 0) > kMaxPoints)
    throw InputError(out.name + ": more than " + std::to_string(kMaxPoints) + " points; a bench file holds a few runs of tens");
  for (size_t r = 0; r < rows.size(); ++r) {
    const Fields row = run.object(rows[r], "rows[" + std::to_string(r) + "]");
    const int64_t n = row.count("n"), d = row.count("d");
    int entries = 0;
    const Entry* begin = tc && backward ? std::begin(kTensorCoresBackward)
                         : tc           ? std::begin(kTensorCores)
                                        : std::begin(kForward);
    const Entry* end = tc && backward ? std::end(kTensorCoresBackward) : tc ? std::end(kTensorCores) : std::end(kForward);
    for (const Entry* e = begin; e != end; ++e) {
      if (!row.obj.contains(e->key)) continue;
      ++entries;
      const Fields f = row.object(row.obj[e->key], e->key);
      if (f.obj.contains("skipped")) {
        f.text("skipped");
        ++out.skipped;
        continue;
      }
      Timing t;
      t.schedule = e->schedule;
      t.tensor_cores = tc;
      t.backward = backward;
      t.n = n;
      t.d = d;
      t.run = index;
      t.precision = run_precision;
      t.causal = run_causal;
      if (!tc && !backward && t.schedule == "fa2") {  // registry-exempt: fa2's entries carry their dtype and mask
        t.precision = precision_name(f.text("dtype"));
        if (t.precision.empty()) f.fail("dtype", "must be fp32, fp16 or bf16");
        t.causal = f.flag("causal");
      }
      t.median_ms = f.positive(backward ? "backward_ms" : "median_ms");
      t.tflops = f.positive(backward ? "backward_tflops" : "tflops");
      t.peak_bytes = f.count("peak_bytes");
      t.series = series_label(t);
      out.timings.push_back(t);
      if (tc && backward) {  // the same kernels' forward + backward, a series of its own
        t.with_forward = true;
        t.median_ms = f.positive("total_ms");
        t.tflops = f.positive("total_tflops");
        t.series = series_label(t);
        out.timings.push_back(t);
      }
    }
    if (entries == 0)
      throw InputError(out.name + ": " + row.where + " has none of " +
                       (tc && backward ? "fa2_tc" : tc ? "fa2_tc, standard_tc" : "fa1, fa2, standard"));
  }

  if (!sweep) return;
  for (size_t k = 0; k < sweep->size(); ++k) {
    const Fields p = run.object((*sweep)[k], "sweep[" + std::to_string(k) + "]");
    if (p.obj.contains("schedule")) continue;  // fa2 at a few (Br, Bc): not part of Figure 2
    SweepPoint s;
    Timing who;  // the swept kernel, named as the timings are
    who.schedule = tc ? "fa2" : "fa1";  // registry-exempt: the swept kernels of the stored files
    who.tensor_cores = tc;
    who.precision = run_precision;
    who.causal = tc && run_causal;
    s.series = series_label(who);
    s.Bc = p.count("Bc");
    s.Br = p.count("Br");
    s.n = p.count("n");
    s.d = p.count("d");
    s.hbm_bytes = p.positive("hbm_bytes_predicted");
    if (p.obj.contains("skipped")) {
      s.skipped = p.text("skipped");
    } else {
      s.timed = true;
      s.median_ms = p.positive("median_ms");
      s.tflops = p.positive("tflops");
    }
    out.sweep.push_back(s);
  }
}

}  // namespace

BenchData parse_bench(const nlohmann::json& j, const std::string& name) {
  BenchData out;
  out.name = name;
  if (!j.is_object()) throw InputError(name + " is not a bench-gpu JSON file: the top level must be an object");
  const Fields top{j, "", name};
  if (j.contains("runs")) {  // several runs combined
    if (!j.contains("flashstep_bench") || j["flashstep_bench"] != 1)
      top.fail("flashstep_bench", "must be 1 in a combined file (the format's version)");
    const nlohmann::json& runs = top.array("runs");
    if (runs.empty()) top.fail("runs", "is empty");
    if (runs.size() > kMaxRuns) top.fail("runs", "has " + std::to_string(runs.size()) + " runs; at most " + std::to_string(kMaxRuns));
    for (size_t r = 0; r < runs.size(); ++r)
      parse_run(top.object(runs[r], "runs[" + std::to_string(r) + "]"), int(r), out);
  } else if (j.contains("rows")) {
    parse_run(top, 0, out);
  } else {
    throw InputError(name + " is not a bench-gpu JSON file: it has neither \"rows\" (flashstep bench-gpu "
                            "--json) nor \"runs\" (several of them combined)");
  }
  if (out.timings.empty() && out.sweep.empty()) throw InputError(name + " has no timed point");

  // Two runs of one configuration would put two values at one point: keep one run per configuration.
  std::set<std::tuple<std::string, int64_t, int64_t>> seen;
  for (const Timing& t : out.timings)
    if (!seen.insert({t.series, t.n, t.d}).second)
      throw InputError(name + ": " + t.series + " at N = " + std::to_string(t.n) + ", d = " + std::to_string(t.d) +
                       " appears twice (" + out.sources[size_t(t.run)] + "): keep one run per configuration");
  std::set<int64_t> dims;
  for (const Timing& t : out.timings) dims.insert(t.d);
  out.dims.assign(dims.begin(), dims.end());
  std::set<std::pair<std::string, int64_t>> bcs;
  for (const SweepPoint& p : out.sweep)
    if (!bcs.insert({p.series, p.Bc}).second)
      throw InputError(name + ": the Bc sweep of " + p.series + " has Bc = " + std::to_string(p.Bc) +
                       " twice: keep one sweep per kernel");
  return out;
}

BenchData parse_bench_text(const std::string& text, const std::string& name) {
  const nlohmann::json j = parse_json_input(text, name);
  try {
    return parse_bench(j, name);
  } catch (const nlohmann::json::exception& e) {  // a type nlohmann refuses: bad input
    throw InputError(name + ": " + excerpt(e.what(), 120));
  }
}

BenchData load_bench(const std::string& path) {
  return parse_bench_text(read_input_file(path, "bench file", kMaxBenchBytes), path);
}

nlohmann::json parse_roofline_bench(const std::string& text, const std::string& name) {
  parse_bench_text(text, name);  // the top level, runs, rows, n, d, flags, sizes, limits
  nlohmann::json j = parse_json_input(text, name);
  if (!j.contains("runs")) return j;  // a single run: the roofline takes points from combined files only
  const Fields top{j, "", name};
  const nlohmann::json& runs = j["runs"];
  // registry-exempt: the kernels whose points the roofline draws (app/course/roofline.cpp)
  const char* const kinds[] = {"fa1", "standard", "fa2_tc", "standard_tc"};  // registry-exempt: file keys
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const Fields run = top.object(runs[ri], "runs[" + std::to_string(ri) + "]");
    const nlohmann::json& rows = run.array("rows");
    for (size_t k = 0; k < rows.size(); ++k) {
      const Fields row = run.object(rows[k], "rows[" + std::to_string(k) + "]");
      if (row.obj.contains("flops")) row.positive("flops");
      for (const char* key : kinds) {
        if (!row.obj.contains(key)) continue;
        const Fields e = row.object(row.obj[key], key);
        if (e.obj.contains("tflops")) e.positive("tflops");
        // A byte count: at least one byte, so that FLOPs / bytes stays finite.
        if (e.obj.contains("hbm_bytes_predicted") && e.positive("hbm_bytes_predicted") < 1)
          e.fail("hbm_bytes_predicted", "must be at least 1 (bytes)");
      }
    }
  }
  return j;
}

nlohmann::json load_roofline_bench(const std::string& path) {
  return parse_roofline_bench(read_input_file(path, "bench file", kMaxBenchBytes), path);
}

}  // namespace flashstep::plot
