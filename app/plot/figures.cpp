#include "app/plot/figures.h"

#include "core/input_files.h"
#include "core/types.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace flashstep::plot {

namespace {

std::string number_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);  // 6 digits: 0.3 rather than 0.30000000000000004
  return buf;
}

// The smallest 1, 2 or 5 x 10^k at least `raw`.
double nice_step(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

std::string d_text(int64_t d) { return "d = " + std::to_string(d); }

std::string gb_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
  return buf;
}

// The first kernel swept (Algorithm 1 in the forward table's run) gives the bars and its runtime;
// each further sweep (FlashAttention-2 on tensor cores) adds its runtime, its HBM bytes in a note.
Figure block_size_figure(const BenchData& b) {
  Figure f;
  f.kind = FigureKind::bc;
  f.title = "Block size: HBM traffic and runtime (the paper's Figure 2, middle)";
  if (b.sweep.empty()) {
    f.empty = b.name + " has no Bc sweep (bench-gpu --json records one unless --no-sweep or --backward)";
    return f;
  }
  std::vector<std::string> kernels;  // in the file's order
  for (const SweepPoint& p : b.sweep)
    if (std::find(kernels.begin(), kernels.end(), p.series) == kernels.end()) kernels.push_back(p.series);
  const bool several = kernels.size() > 1;
  std::vector<double> bcs, runtimes;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<SweepPoint> pts;
    for (const SweepPoint& p : b.sweep)
      if (p.series == kernels[k]) pts.push_back(p);
    std::sort(pts.begin(), pts.end(), [](const SweepPoint& p, const SweepPoint& q) { return p.Bc < q.Bc; });
    const SweepPoint& first = pts.front();
    const std::string where = "N = " + std::to_string(first.n) + ", " + d_text(first.d) + ", Br = " +
                              std::to_string(first.Br);
    Series hbm, ms;
    hbm.label = (several ? kernels[k] + ": " : "") + "HBM traffic (simulated)";
    hbm.bars = true;
    ms.label = (several ? kernels[k] + ": " : "") + "runtime (measured)";
    ms.right = true;
    ms.colour = int(k) + 1;
    for (const SweepPoint& p : pts) {
      hbm.x.push_back(double(p.Bc));
      hbm.y.push_back(p.hbm_bytes / 1e9);
      bcs.push_back(double(p.Bc));
      if (p.timed) {
        ms.x.push_back(double(p.Bc));
        ms.y.push_back(p.median_ms);
        runtimes.push_back(p.median_ms);
      } else {
        f.notes.push_back(kernels[k] + ", Bc = " + std::to_string(p.Bc) + " not timed: " + p.skipped);
      }
    }
    if (k == 0) {
      f.subtitle = b.device + ": " + kernels[k] + ", forward pass, " + where;
      f.y = make_axis("HBM traffic (GB)", hbm.y, false);
      f.series.push_back(std::move(hbm));
    } else {
      const auto [lo, hi] = std::minmax_element(pts.begin(), pts.end(), [](const SweepPoint& p, const SweepPoint& q) {
        return p.hbm_bytes < q.hbm_bytes;
      });
      f.notes.push_back(kernels[k] + " (" + where + "): simulated HBM traffic " +
                        (lo->hbm_bytes == hi->hbm_bytes ? gb_text(lo->hbm_bytes) + " at every Bc"
                                                        : gb_text(lo->hbm_bytes) + " to " + gb_text(hi->hbm_bytes)));
    }
    if (!ms.x.empty()) f.series.push_back(std::move(ms));
  }
  f.x = make_axis("block size Bc", bcs, true);
  f.has_y2 = !runtimes.empty();
  if (f.has_y2) f.y2 = make_axis("runtime (ms)", runtimes, false);
  return f;
}

// TFLOP/s or peak memory against N, one series per label, in the file's order.
Figure against_n_figure(const BenchData& b, FigureKind kind, int64_t d) {
  Figure f;
  f.kind = kind;
  const bool tflops = kind == FigureKind::tflops;
  f.title = tflops ? "Throughput against sequence length N" : "Peak device memory against sequence length N";
  f.subtitle = b.device + ", " + d_text(d) +
               (tflops ? "; TFLOP/s = 4 B H N^2 d / time (causal: kept scores; backward: 2.5 x that / its time; "
                         "forward + backward: 3.5 x)"
                       : "; B x H x N fixed, so standard attention's N x N scores grow with N");
  std::map<std::string, size_t> index;      // label -> position in f.series
  // A colour per kernel and precision ("fa2 TC bf16"): its causal runs share it, dashed, and its
  // passes share it with their own markers. With a colour per label, 14 series went round the
  // palette's 8 and "standard fp32" and "fa2 TC bf16, forward + backward" were both orange.
  std::map<std::string, int> colour_of;
  for (const Timing& t : b.timings) {
    if (t.d != d) continue;
    auto [it, fresh] = index.try_emplace(t.series, f.series.size());
    if (fresh) {
      Series s;
      s.label = t.series;
      s.dashed = t.causal;
      s.marker = !t.backward ? Marker::disc : t.with_forward ? Marker::triangle : Marker::square;
      const std::string kernel = t.series.substr(0, t.series.find(", "));
      s.colour = colour_of.try_emplace(kernel, int(colour_of.size())).first->second;
      f.series.push_back(std::move(s));
    }
    Series& s = f.series[it->second];
    s.x.push_back(double(t.n));
    s.y.push_back(tflops ? t.tflops : double(t.peak_bytes) / 1048576.0);
  }
  if (f.series.empty()) {
    f.empty = b.name + " has no timing at " + d_text(d);
    return f;
  }
  std::vector<double> xs, ys;
  for (Series& s : f.series) {
    std::vector<size_t> order(s.x.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t p, size_t q) { return s.x[p] < s.x[q]; });
    Series sorted = s;
    for (size_t k = 0; k < order.size(); ++k) {
      sorted.x[k] = s.x[order[k]];
      sorted.y[k] = s.y[order[k]];
    }
    s = std::move(sorted);
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  f.x = make_axis("sequence length N", xs, true);
  f.y = make_axis(tflops ? "TFLOP/s" : "peak device memory (MiB)", ys, false);
  // Equal series draw on top of each other (fa1 and fa2 allocate the same): say which is hidden.
  std::string hidden;
  for (size_t i = 0; i < f.series.size(); ++i)
    for (size_t j = i + 1; j < f.series.size(); ++j) {
      const Series &p = f.series[i], &q = f.series[j];
      bool same = p.x == q.x;
      for (size_t k = 0; same && k < p.y.size(); ++k) same = std::fabs(p.y[k] - q.y[k]) <= 0.01 * std::fabs(q.y[k]);
      if (same) hidden += (hidden.empty() ? "" : "; ") + p.label + " under " + q.label;
    }
  if (!hidden.empty()) f.notes.push_back("Hidden under a later line (equal within 1%): " + hidden);
  for (int64_t other : b.dims)
    if (other != d) f.notes.push_back(d_text(other) + " is measured too (the view's d selector, or plot --d)");
  if (b.skipped > 0)
    f.notes.push_back(std::to_string(b.skipped) + " entries of the file were skipped by bench-gpu (no time)");
  return f;
}

}  // namespace

const char* figure_name(FigureKind k) {
  switch (k) {
    case FigureKind::bc: return "bc";
    case FigureKind::tflops: return "tflops";
    case FigureKind::memory: return "memory";
  }
  return "?";
}

FigureKind parse_figure(const std::string& s) {
  for (FigureKind k : kFigureKinds)
    if (s == figure_name(k)) return k;
  throw InputError("unknown figure '" + excerpt(s) + "' (expected bc, tflops or memory; flashstep plot also draws all and roofline)");
}

double Axis::fraction(double v) const {
  if (log) return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  return (v - lo) / (hi - lo);
}

Axis make_axis(const std::string& label, const std::vector<double>& values, bool powers_of_two) {
  Axis a;
  a.label = label;
  if (values.empty()) return a;
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  const double lo = *mn, hi = *mx;
  if (powers_of_two && lo > 0) {
    a.log = true;
    a.lo = lo / std::sqrt(2.0);
    a.hi = hi * std::sqrt(2.0);
    const int k0 = int(std::ceil(std::log2(lo) - 1e-9)), k1 = int(std::floor(std::log2(hi) + 1e-9));
    const int every = k1 - k0 >= 9 ? 2 : 1;  // at most about eight labels side by side
    for (int k = k0; k <= k1; k += every) a.ticks.push_back({std::ldexp(1.0, k), number_label(std::ldexp(1.0, k))});
    return a;
  }
  if (lo > 0 && hi / lo >= 10) {  // a decade or more: equal ratios at equal distances
    a.log = true;
    a.lo = lo / 1.5;
    a.hi = hi * 1.5;
    const int e0 = int(std::floor(std::log10(a.lo))), e1 = int(std::ceil(std::log10(a.hi)));
    const bool only_decades = e1 - e0 > 4;
    for (int e = e0; e <= e1; ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if ((m == 1.0 || !only_decades) && v >= a.lo && v <= a.hi) a.ticks.push_back({v, number_label(v)});
      }
    return a;
  }
  // Linear from 0, so that bars and throughputs read as proportions.
  const double top = hi > 0 ? hi * 1.08 : 1.0;
  const double step = nice_step(top / 5);
  a.lo = 0;
  a.hi = std::ceil(top / step - 1e-9) * step;
  for (int k = 0; k * step <= a.hi * (1 + 1e-9); ++k) a.ticks.push_back({k * step, number_label(k * step)});
  return a;
}

Figure make_figure(const BenchData& b, FigureKind kind, int64_t d) {
  if (kind == FigureKind::bc) return block_size_figure(b);
  return against_n_figure(b, kind, d);
}

}  // namespace flashstep::plot
