#include "app/course/roofline.h"

#include "app/course/trace_lookup.h"
#include "core/data_dir.h"
#include "core/run.h"
#include "core/schedule_registry.h"

#include <algorithm>
#include <cmath>
#include <fstream>

namespace flashstep::course {

namespace {

// The flops and bytes of every step of one role: one of standard attention's kernels.
RooflineKernel kernel_of(const Trace& t, const std::string& run, Role role, const std::string& label) {
  RooflineKernel k;
  k.label = label;
  for (const Step& s : t.steps)
    if (has_role(t, s, role)) {
      k.flops += double(s.flops);
      k.bytes += double(s.hbm_read + s.hbm_write);
    }
  const std::string line = "trace." + run + ".line." + std::to_string(role_line_number(t, role));
  k.flops_source = line + ".flops";
  k.bytes_source = line + ".bytes";
  return k;
}

RooflineKernel fused(const Trace& t, const std::string& run, const std::string& label) {
  RooflineKernel k;
  k.label = label;
  k.flops = double(t.totals.flops);
  k.bytes = double(t.totals.hbm_read_bytes + t.totals.hbm_write_bytes);
  k.flops_source = "trace." + run + ".totals.flops";
  k.bytes_source = "trace." + run + ".totals.bytes";
  return k;
}

}  // namespace

Roofline make_roofline(const Trace& standard, const std::string& sn, const Trace& fa1, const std::string& f1,
                       const Trace& fa2, const std::string& f2) {
  Roofline r;
  r.n = standard.problem.nq;
  r.d = standard.problem.d;
  r.kernels.push_back(kernel_of(standard, sn, Role::scores, "S = QK^T (standard)"));
  r.kernels.push_back(kernel_of(standard, sn, Role::softmax, "P = softmax(S) (standard)"));
  r.kernels.push_back(kernel_of(standard, sn, Role::update_o, "O = PV (standard)"));
  r.kernels.push_back(fused(fa1, f1, "fused, Algorithm 1"));
  r.kernels.push_back(fused(fa2, f2, "fused, FlashAttention-2"));
  return r;
}

void add_measured(Roofline& r, const nlohmann::json& bench, const std::string& bench_name) {
  r.bench_name = bench_name;
  if (!bench.is_object() || !bench.contains("runs") || !bench["runs"].is_array()) return;
  const nlohmann::json& runs = bench["runs"];
  // The kernels a run's rows time, and the labels of their points.
  const std::pair<const char*, const char*> kinds[] = {
      {"fa1", "fa1 fp32"}, {"standard", "standard fp32"}, {"fa2_tc", "fa2 TC bf16"}, {"standard_tc", "standard TC bf16"}};  // registry-exempt: the roofline compares these kernels
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const nlohmann::json& run = runs[ri];
    if (run.value("backward", false) || run.value("causal", false) || !run.contains("rows")) continue;
    for (size_t k = 0; k < run["rows"].size(); ++k) {
      const nlohmann::json& row = run["rows"][k];
      if (row.value("d", int64_t(0)) != r.d || !row.contains("flops")) continue;
      for (const auto& [key, label] : kinds) {
        if (!row.contains(key)) continue;
        const nlohmann::json& e = row[key];
        if (!e.contains("hbm_bytes_predicted") || !e.contains("tflops")) continue;
        const std::string at = "bench:/runs/" + std::to_string(ri) + "/rows/" + std::to_string(k);
        MeasuredPoint p;
        p.label = label;
        p.n = row.value("n", int64_t(0));
        p.d = r.d;
        p.intensity = row["flops"].get<double>() / e["hbm_bytes_predicted"].get<double>();
        p.tflops = e["tflops"].get<double>();
        p.intensity_source = at + "/flops / " + at + "/" + key + "/hbm_bytes_predicted";
        p.tflops_source = at + "/" + key + "/tflops";
        r.measured.push_back(p);
      }
    }
  }
}

Roofline simulate_roofline(int64_t n, int64_t d, int64_t M) {
  ProblemSpec s = sizes_spec(n, n, d, M);
  RunOptions rec;
  s.schedule = baseline_schedule().id;  // standard attention, recorded: its three kernels' steps
  const Trace st = run_spec(s, rec);
  RunOptions fast;
  fast.record = false;
  s.schedule = Schedule::fa1;  // registry-exempt: the roofline compares these kernels
  const Trace a = run_spec(s, fast);
  s.schedule = Schedule::fa2;  // registry-exempt: the roofline compares these kernels
  const Trace b = run_spec(s, fast);
  return make_roofline(st, "standard", a, "fa1", b, "fa2");  // registry-exempt: the roofline compares these kernels
}

plot::Figure roofline_figure(const Roofline& r) {
  plot::Figure f;
  f.kind = plot::FigureKind::tflops;  // drawn like the throughput figure: log axes
  f.title = "Roofline: attention's kernels against the " + std::string(r.device.name) + "'s ceilings";
  f.subtitle = "N = " + std::to_string(r.n) + ", d = " + std::to_string(r.d) +
               ": simulated kernels (discs) on the float32 roof, FLOPs / HBM bytes of the simulator" +
               (r.measured.empty() ? "" : "; measured runs of " + r.bench_name + " (diamonds)") +
               "; 2 FLOPs per multiply-add";
  std::vector<double> xs, ys;
  for (const RooflineKernel& k : r.kernels) xs.push_back(k.intensity());
  for (const MeasuredPoint& p : r.measured) {
    xs.push_back(p.intensity);
    ys.push_back(p.tflops);
  }
  const double bw = r.device.hbm_bytes_per_s / 1e12;  // TFLOP/s per FLOP/byte
  const double x_lo = std::max(0.05, *std::min_element(xs.begin(), xs.end()) / 2);
  const double x_hi = std::max(2 * ridge_point(r.device.bf16_tc_flops, r.device), *std::max_element(xs.begin(), xs.end()) * 2);
  xs.push_back(x_lo);
  xs.push_back(x_hi);
  auto roof = [&](double peak_tflops, const std::string& label, int colour) {
    plot::Series s;
    s.label = label;
    s.colour = colour;
    s.dashed = true;
    const double ridge = peak_tflops / bw;
    for (double x : {x_lo, ridge, x_hi}) {
      s.x.push_back(x);
      s.y.push_back(std::min(peak_tflops, bw * x));
    }
    ys.insert(ys.end(), s.y.begin(), s.y.end());
    f.series.push_back(std::move(s));
    // The ridge: where this ceiling's bandwidth roof meets its compute roof, drawn down to the floor.
    plot::Series v;
    char lab[96];
    std::snprintf(lab, sizeof lab, "ridge: %s, %.4g FLOP/B", label.substr(label.find(':') + 2).c_str(), ridge);
    v.label = lab;
    v.colour = colour;
    v.dashed = true;
    v.x = {ridge, ridge * (1 + 1e-9)};
    v.y = {bw * x_lo, peak_tflops};
    f.series.push_back(std::move(v));
  };
  // Eight colours: the ceilings share one (the bf16 one, and its ridge, with diamond markers: the
  // palette's second round); each kernel has its own, and a measured kernel takes its simulated
  // counterpart's (fa1, fa2), the standard ones the last two.
  roof(r.device.fp32_flops / 1e12, "ceiling: float32 CUDA cores", 0);
  roof(r.device.bf16_tc_flops / 1e12, "ceiling: bf16 tensor cores", 8);
  // The measured points first, so that the simulated kernels are drawn over them.
  const size_t simulated_at = f.series.size();
  int colour = 1;
  for (const RooflineKernel& k : r.kernels) {
    plot::Series s;
    s.label = k.label + " (simulated, N = " + std::to_string(r.n) + ")";
    s.points = true;
    s.colour = colour++;
    s.x.push_back(k.intensity());
    s.y.push_back(std::min(r.device.fp32_flops / 1e12, bw * k.intensity()));
    ys.push_back(s.y.back());
    f.series.push_back(std::move(s));
  }
  // One series per measured kernel, its points over N ascending.
  std::vector<std::string> labels;
  for (const MeasuredPoint& p : r.measured)
    if (std::find(labels.begin(), labels.end(), p.label) == labels.end()) labels.push_back(p.label);
  int standard_colour = 6;
  for (const std::string& l : labels) {
    plot::Series s;
    s.points = true;
    s.marker = plot::Marker::diamond;  // measured: diamonds; simulated: discs
    s.colour = l.rfind("fa1", 0) == 0 ? 4 : l.rfind("fa2", 0) == 0 ? 5 : standard_colour++;  // registry-exempt: the roofline compares these kernels
    int64_t lo = 0, hi = 0;
    for (const MeasuredPoint& p : r.measured)
      if (p.label == l) {
        s.x.push_back(p.intensity);
        s.y.push_back(p.tflops);
        lo = lo == 0 ? p.n : std::min(lo, p.n);
        hi = std::max(hi, p.n);
      }
    s.label = l + " (measured, N = " + std::to_string(lo) + (hi > lo ? " to " + std::to_string(hi) : "") + ")";
    f.series.push_back(std::move(s));
  }
  std::rotate(f.series.begin() + long(simulated_at), f.series.begin() + long(simulated_at + r.kernels.size()), f.series.end());
  f.x = plot::make_axis("arithmetic intensity (FLOP per HBM byte)", xs, false);
  f.y = plot::make_axis("TFLOP/s", ys, false);
  f.notes.push_back("Ceilings: " + std::string(r.device.name) +
                    " data sheet (HBM bandwidth, float32 and dense bf16 peaks). Below the ridge a kernel is memory-bound.");
  return f;
}

std::string default_bench_path() { return data_path("assets/bench/h200.json"); }

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw InputError(path + " is not valid JSON: " + e.what());
  }
}

}  // namespace flashstep::course
