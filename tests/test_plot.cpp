// The benchmark figures' model (app/plot): the shipped H200 file read back point for point
// against its JSON, the axes on random data, and every class of bad file.
#include "app/plot/figures.h"
#include "core/types.h"
#include "tests/bench_files.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace flashstep;
using namespace flashstep::plot;

namespace {

using fstest::kBench;
using fstest::kResults;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The raw file's values, keyed by the label the figure must give them, read without the model:
// label -> N -> value, for one d and one figure.
using Expected = std::map<std::string, std::map<double, double>>;
Expected expected_series(const nlohmann::json& file, int64_t d, bool tflops) {
  Expected e;
  for (const auto& run : file["runs"]) {
    const bool tc = run.value("tensor_cores", false), bwd = run.value("backward", false);
    const std::string run_prec = run["dtype"] == "float32" ? "fp32" : run["dtype"].get<std::string>();
    for (const auto& row : run["rows"]) {
      if (row["d"] != d) continue;
      for (const auto& [key, v] : row.items()) {
        if (!v.is_object() || v.contains("skipped")) continue;
        if (tc && bwd) {  // the tensor-core backward: fa2_tc alone (fp32 beside it is not drawn), two series
          if (key != "fa2_tc") continue;
          const std::string label = "fa2 TC " + run_prec + (run.value("causal", false) ? ", causal" : "");
          const double n = row["n"].get<double>(), mib = v["peak_bytes"].get<double>() / 1048576.0;
          e[label + ", backward"][n] = tflops ? v["backward_tflops"].get<double>() : mib;
          e[label + ", forward + backward"][n] = tflops ? v["total_tflops"].get<double>() : mib;
          continue;
        }
        std::string sched = key.substr(0, key.find('_'));
        std::string prec = run_prec;
        bool causal = run.value("causal", false);
        if (key == "fa2" && !bwd) {
          prec = v["dtype"];
          causal = v["causal"];
        }
        const std::string label = sched + (tc ? " TC " : " ") + prec + (causal ? ", causal" : "") + (bwd ? ", backward" : "");
        e[label][row["n"].get<double>()] =
            tflops ? v[bwd ? "backward_tflops" : "tflops"].get<double>() : v["peak_bytes"].get<double>() / 1048576.0;
      }
    }
  }
  return e;
}

Expected figure_series(const Figure& f) {
  Expected got;
  for (const Series& s : f.series) {
    REQUIRE(s.x.size() == s.y.size());
    REQUIRE(std::is_sorted(s.x.begin(), s.x.end()));
    for (size_t k = 0; k < s.x.size(); ++k) got[s.label][s.x[k]] = s.y[k];
  }
  return got;
}

void require_axis_holds(const Axis& a, const std::vector<double>& values) {
  REQUIRE(a.lo < a.hi);
  REQUIRE(a.ticks.size() >= 2);
  for (double v : values) {
    REQUIRE(a.fraction(v) >= 0);
    REQUIRE(a.fraction(v) <= 1);
  }
  for (size_t k = 0; k < a.ticks.size(); ++k) {
    REQUIRE(a.ticks[k].value >= a.lo * (1 - 1e-12));
    REQUIRE(a.ticks[k].value <= a.hi * (1 + 1e-12));
    REQUIRE_FALSE(a.ticks[k].label.empty());
    if (k > 0) REQUIRE(a.ticks[k].value > a.ticks[k - 1].value);
  }
}

}  // namespace

TEST_CASE("plot model: the shipped file's Bc sweep is Figure 2 (middle), value for value", "[plot]") {
  const nlohmann::json raw = read_json(kBench);
  const BenchData b = load_bench(kBench);
  REQUIRE(b.device == "NVIDIA H200");
  REQUIRE(b.sources.size() == raw["runs"].size());
  const Figure f = make_figure(b, FigureKind::bc, 64);
  REQUIRE(f.empty.empty());
  REQUIRE(f.has_y2);
  REQUIRE(f.series.size() == 2);
  const Series &hbm = f.series[0], &ms = f.series[1];
  REQUIRE(hbm.bars);
  REQUIRE(ms.right);
  std::vector<double> bcs, gb, timed_bc, timed_ms;
  for (const auto& p : raw["runs"][0]["sweep"]) {
    if (p.contains("schedule")) continue;  // fa2's block sizes are not Figure 2
    bcs.push_back(p["Bc"].get<double>());
    gb.push_back(p["hbm_bytes_predicted"].get<double>() / 1e9);
    if (!p.contains("skipped")) {
      timed_bc.push_back(p["Bc"].get<double>());
      timed_ms.push_back(p["median_ms"].get<double>());
    }
  }
  REQUIRE(bcs == std::vector<double>{16, 32, 64, 128, 256, 512});
  REQUIRE(hbm.x == bcs);
  REQUIRE(hbm.y == gb);
  REQUIRE(ms.x == timed_bc);
  REQUIRE(ms.y == timed_ms);
  REQUIRE(timed_bc.size() == 5);  // Bc = 512 needs more shared memory than the H200 has
  REQUIRE(f.notes.size() == 1);
  REQUIRE(f.notes[0].find("Bc = 512 not timed") != std::string::npos);
  // HBM bytes fall as 1/Bc over a decade and more: a log axis; Bc is a log2 axis with a tick per point.
  REQUIRE(f.y.log);
  REQUIRE(f.x.log);
  REQUIRE(f.x.ticks.size() == 6);
  REQUIRE_FALSE(f.y2.log);
  require_axis_holds(f.x, hbm.x);
  require_axis_holds(f.y, hbm.y);
  require_axis_holds(f.y2, ms.y);
}

TEST_CASE("plot model: one series per schedule, precision, mask and pass, with the file's values", "[plot]") {
  const nlohmann::json raw = read_json(kBench);
  const BenchData b = load_bench(kBench);
  REQUIRE(b.dims == std::vector<int64_t>{64, 128});
  const int64_t d = GENERATE(64, 128);
  const FigureKind kind = GENERATE(FigureKind::tflops, FigureKind::memory);
  const Figure f = make_figure(b, kind, d);
  REQUIRE(f.empty.empty());
  const Expected want = expected_series(raw, d, kind == FigureKind::tflops);
  REQUIRE(figure_series(f) == want);
  std::set<std::string> labels;
  for (const Series& s : f.series) {
    labels.insert(s.label);
    REQUIRE(s.dashed == (s.label.find("causal") != std::string::npos));
  }
  REQUIRE(labels == std::set<std::string>{"fa1 fp32", "standard fp32", "fa2 fp32", "fa2 TC bf16", "standard TC bf16",
                                          "fa2 TC bf16, causal", "standard TC bf16, causal", "fa1 fp32, backward",
                                          "fa2 fp32, backward", "standard fp32, backward", "fa2 TC bf16, backward",
                                          "fa2 TC bf16, forward + backward", "fa2 TC bf16, causal, backward",
                                          "fa2 TC bf16, causal, forward + backward"});
  // A causal series wears its unmasked sibling's colour, dashed; the others differ.
  std::map<std::string, int> colour;
  for (const Series& s : f.series) colour[s.label] = s.colour;
  REQUIRE(colour["fa2 TC bf16, causal"] == colour["fa2 TC bf16"]);
  REQUIRE(colour["fa2 TC bf16"] != colour["fa2 fp32"]);
  REQUIRE(f.y.log);  // 12 to 343 TFLOP/s, 96 MiB to 17 GB: decades
  std::vector<double> ys;
  for (const Series& s : f.series) ys.insert(ys.end(), s.y.begin(), s.y.end());
  require_axis_holds(f.y, ys);
  REQUIRE(std::count_if(f.notes.begin(), f.notes.end(),
                        [](const std::string& n) { return n.find("is measured too") != std::string::npos; }) == 1);
  // fa1 and fa2 allocate the same (within 1%): the note names the line drawn over the other.
  const bool hidden = std::any_of(f.notes.begin(), f.notes.end(),
                                  [](const std::string& n) { return n.find("fa1 fp32 under fa2 fp32") != std::string::npos; });
  REQUIRE(hidden == (kind == FigureKind::memory));
}

TEST_CASE("plot model: every series of a figure can be told apart: colour by kernel, marker by pass, dashes for causal",
          "[plot]") {
  // 14 series shared 8 colours in turn: "standard fp32" and "fa2 TC bf16, forward + backward"
  // were both orange, told apart only by a 3-pixel diamond. A colour now names one kernel and
  // precision ("fa2 TC bf16"), its passes each their own marker, its causal runs dashed.
  const BenchData b = load_bench(kBench);
  const int64_t d = GENERATE(64, 128);
  const FigureKind kind = GENERATE(FigureKind::tflops, FigureKind::memory);
  const Figure f = make_figure(b, kind, d);
  auto kernel_of = [](const std::string& label) { return label.substr(0, label.find(", ")); };
  for (size_t i = 0; i < f.series.size(); ++i)
    for (size_t j = i + 1; j < f.series.size(); ++j) {
      const Series &p = f.series[i], &q = f.series[j];
      INFO(p.label << " and " << q.label);
      CHECK((p.colour == q.colour) == (kernel_of(p.label) == kernel_of(q.label)));
      CHECK(p.colour < 8);  // the palette's eight, not a second round
      if (p.colour == q.colour) CHECK((p.marker != q.marker || p.dashed != q.dashed));
    }
  for (const Series& s : f.series) {
    const bool bwd = s.label.find("backward") != std::string::npos, both = s.label.find("forward + backward") != std::string::npos;
    CHECK(s.marker == (both ? Marker::triangle : bwd ? Marker::square : Marker::disc));
  }
}

TEST_CASE("plot model: single bench-gpu files load as they are", "[plot]") {
  const BenchData fwd = load_bench(kResults + "/forward-fp32/fa1-standard_bench.json");
  REQUIRE(fwd.sweep.size() == 6);
  const Figure t = make_figure(fwd, FigureKind::tflops, 128);
  REQUIRE(t.series.size() == 2);
  REQUIRE(t.series[0].label == "fa1 fp32");
  REQUIRE(t.series[0].x == std::vector<double>{1024, 2048, 4096, 8192, 16384});
  const BenchData tc = load_bench(kResults + "/tensor-core-forward/bench_bf16_causal.json");
  REQUIRE(tc.sweep.empty());
  const Figure bc = make_figure(tc, FigureKind::bc, 64);
  REQUIRE(bc.empty.find("has no Bc sweep") != std::string::npos);
  REQUIRE(make_figure(tc, FigureKind::tflops, 64).series.size() == 2);
  REQUIRE(make_figure(tc, FigureKind::memory, 32).empty.find("no timing at d = 32") != std::string::npos);
}

TEST_CASE("plot model: axes hold fresh random data, log where it spans decades", "[plot]") {
  std::mt19937_64 rng(GENERATE(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u));
  std::uniform_real_distribution<double> expo(-4, 6), spread(0, 3);
  const double base = std::pow(10.0, expo(rng)), width = std::pow(10.0, spread(rng));
  std::uniform_real_distribution<double> u(base, base * width);
  std::vector<double> v(1 + rng() % 12);
  for (double& x : v) x = u(rng);
  const Axis a = make_axis("value", v, false);
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  INFO("min " << *mn << " max " << *mx);
  REQUIRE(a.log == (*mx / *mn >= 10));
  if (!a.log) REQUIRE(a.lo == 0);
  if (*mx > *mn) require_axis_holds(a, v);
  std::vector<double> pow2;
  for (int k = int(rng() % 4); k < 6 + int(rng() % 10); ++k) pow2.push_back(std::ldexp(1.0, k));
  const Axis x = make_axis("N", pow2, true);
  REQUIRE(x.log);
  require_axis_holds(x, pow2);
  REQUIRE(x.ticks.size() <= 9);
}

TEST_CASE("plot model: a bad or foreign file is one clear error naming the field", "[plot][errors]") {
  const nlohmann::json good = read_json(kBench);
  using Edit = void (*)(nlohmann::json&);
  const auto [edit, expect] = GENERATE(table<Edit, std::string>({
      {[](nlohmann::json& j) { j["runs"][0]["rows"][2]["fa1"].erase("tflops"); }, "runs[0].rows[2].fa1.tflops is missing"},
      {[](nlohmann::json& j) { j["runs"][1]["rows"][0]["n"] = "big"; }, "runs[1].rows[0].n must be a positive integer"},
      {[](nlohmann::json& j) { j["runs"][0]["rows"][0]["d"] = -64; }, "runs[0].rows[0].d must be a positive integer"},
      {[](nlohmann::json& j) { j["runs"][0]["rows"][0]["fa2"]["dtype"] = "fp8"; }, "runs[0].rows[0].fa2.dtype must be fp32, fp16 or bf16"},
      {[](nlohmann::json& j) { j["runs"][2]["rows"][1]["fa2_tc"]["median_ms"] = -1.5; }, "runs[2].rows[1].fa2_tc.median_ms must be a positive number"},
      {[](nlohmann::json& j) { j["runs"][3]["rows"][0]["fa1"].erase("backward_tflops"); }, "runs[3].rows[0].fa1.backward_tflops is missing"},
      {[](nlohmann::json& j) { j["runs"][0]["rows"][3] = {{"n", 8}, {"d", 64}}; }, "runs[0].rows[3] has none of fa1, fa2, standard"},
      {[](nlohmann::json& j) { j["runs"][0]["rows"][3]["fa1"] = 7; }, "runs[0].rows[3].fa1 must be an object"},
      {[](nlohmann::json& j) { j["runs"][0]["sweep"][0].erase("hbm_bytes_predicted"); }, "runs[0].sweep[0].hbm_bytes_predicted is missing"},
      {[](nlohmann::json& j) { j["runs"][0]["rows"] = 3; }, "runs[0].rows must be an array"},
      {[](nlohmann::json& j) { j["runs"][0].erase("device"); }, "runs[0].device is missing"},
      {[](nlohmann::json& j) { j["runs"][1]["dtype"] = "int8"; }, "runs[1].dtype must be float32, fp32, fp16 or bf16"},
      {[](nlohmann::json& j) { j["runs"] = nlohmann::json::array(); }, "runs is empty"},
      {[](nlohmann::json& j) { j.erase("flashstep_bench"); }, "flashstep_bench must be 1"},
      {[](nlohmann::json& j) { j["runs"].push_back(j["runs"][1]); }, "appears twice"},
      {[](nlohmann::json& j) { j = j["runs"][0]["rows"]; }, "the top level must be an object"},
      {[](nlohmann::json& j) { j = {{"gpu", "h200"}, {"points", nlohmann::json::array()}}; }, "is not a bench-gpu JSON file"},
  }));
  nlohmann::json j = good;
  edit(j);
  try {
    parse_bench(j, "f.json");
    FAIL("accepted: " << expect);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    REQUIRE(msg.rfind("f.json", 0) == 0);
    REQUIRE(msg.find(expect) != std::string::npos);
    REQUIRE(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("plot model: files that are not bench JSON at all", "[plot][errors]") {
  REQUIRE_THROWS_WITH(load_bench(kResults + "/forward-fp32/fa1-standard_bench.txt"), Catch::Contains("malformed JSON at byte"));
  REQUIRE_THROWS_WITH(load_bench(kResults + "/dram/ncu.json"), Catch::Contains("is not a bench-gpu JSON file"));
  REQUIRE_THROWS_WITH(load_bench(kResults + "/no-such.json"), Catch::Contains("cannot read"));
  REQUIRE_THROWS_WITH(load_bench(kResults), Catch::Contains("is a directory, not a regular file"));
  REQUIRE_THROWS_WITH(parse_figure("pie"), Catch::Contains("unknown figure 'pie'"));
}

TEST_CASE("plot model: a tensor-core run's Bc sweep adds its runtime to Figure 2", "[plot]") {
  // The format bench-gpu --tensor-cores writes with its sweep (Br = 128, Bc = 16 .. 128): no Tc.
  nlohmann::json file = read_json(kBench);
  nlohmann::json sweep = nlohmann::json::array();
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> ms(0.3, 0.9);
  std::vector<double> times;
  for (int64_t bc : {16, 32, 64, 128}) {
    times.push_back(ms(rng));
    sweep.push_back({{"variant", 7}, {"Br", 128}, {"Bc", bc}, {"n", 4096}, {"d", 64}, {"smem_bytes", 40000},
                     {"hbm_bytes_predicted", 1107820544}, {"median_ms", times.back()}, {"tflops", 137.4 / times.back()}});
  }
  file["runs"][2]["sweep"] = sweep;  // the causal bf16 run
  const BenchData b = parse_bench(file, "tc.json");
  const Figure f = make_figure(b, FigureKind::bc, 64);
  REQUIRE(f.series.size() == 3);
  REQUIRE(f.series[0].label == "fa1 fp32: HBM traffic (simulated)");
  REQUIRE(f.series[1].label == "fa1 fp32: runtime (measured)");
  REQUIRE(f.series[2].label == "fa2 TC bf16, causal: runtime (measured)");
  REQUIRE(f.series[2].right);
  REQUIRE(f.series[2].x == std::vector<double>{16, 32, 64, 128});
  REQUIRE(f.series[2].y == times);
  require_axis_holds(f.y2, f.series[2].y);
  const bool noted = std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) {
    return n.find("fa2 TC bf16, causal (N = 4096, d = 64, Br = 128): simulated HBM traffic 1.11 GB at every Bc") !=
           std::string::npos;
  });
  REQUIRE(noted);
  // A tensor-core run alone: its sweep is the figure.
  nlohmann::json alone = file["runs"][2];
  const Figure g = make_figure(parse_bench(alone, "alone.json"), FigureKind::bc, 64);
  REQUIRE(g.series.size() == 2);
  REQUIRE(g.series[0].bars);
  REQUIRE(g.subtitle.find("fa2 TC bf16, causal") != std::string::npos);
  file["runs"][2]["sweep"].push_back(sweep[1]);
  REQUIRE_THROWS_WITH(parse_bench(file, "tc.json"), Catch::Contains("has Bc = 32 twice"));
}

TEST_CASE("plot model: a tensor-core backward run gives a backward and a forward + backward series", "[plot]") {
  // The layout bench-gpu --backward --tensor-cores writes (app/cmd_backward_tc.cpp): per row the
  // kernels' figures under fa2_tc, the float32 kernels' under fp32 (not plotted), fresh values.
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> tf(150, 350);
  nlohmann::json rows = nlohmann::json::array();
  std::map<double, double> bwd, total;
  for (int64_t n : {4096, 16384}) {
    const double b = tf(rng), t = tf(rng);
    bwd[double(n)] = b;
    total[double(n)] = t;
    rows.push_back({{"n", n}, {"d", 128}, {"B", 16}, {"H", 16},
                    {"fa2_tc", {{"backward_ms", 1.5}, {"backward_tflops", b}, {"total_ms", 2.0}, {"total_tflops", t},
                                {"forward_ms", 0.5}, {"forward_tflops", 300.0}, {"peak_bytes", int64_t(3) << 30}}},
                    {"fp32", {{"backward_ms", 9.0}, {"backward_tflops", 30.0}, {"peak_bytes", int64_t(1) << 30}}}});
  }
  nlohmann::json run = {{"device", "NVIDIA H200"}, {"dtype", "bf16"}, {"tensor_cores", true}, {"backward", true},
                        {"causal", true}, {"rows", rows}};
  const Figure f = make_figure(parse_bench(run, "tc_bwd.json"), FigureKind::tflops, 128);
  REQUIRE(f.series.size() == 2);
  std::map<std::string, std::map<double, double>> got;
  for (const Series& s : f.series)
    for (size_t k = 0; k < s.x.size(); ++k) got[s.label][s.x[k]] = s.y[k];
  CHECK(got["fa2 TC bf16, causal, backward"] == bwd);
  CHECK(got["fa2 TC bf16, causal, forward + backward"] == total);
  run["rows"][1]["fa2_tc"].erase("total_tflops");
  REQUIRE_THROWS_WITH(parse_bench(run, "tc_bwd.json"), Catch::Contains("rows[1].fa2_tc.total_tflops"));
  run["rows"][1].erase("fa2_tc");
  REQUIRE_THROWS_WITH(parse_bench(run, "tc_bwd.json"), Catch::Contains("has none of fa2_tc"));
}

TEST_CASE("plot model: a positive value too large for an axis is refused saying so, and up to 1e300 is drawn", "[plot][errors]") {
  const nlohmann::json good = read_json(kBench);
  for (const double big : {1e301, 1e308, 1.7976931348623157e308}) {
    INFO(big);
    nlohmann::json j = good;
    j["runs"][0]["rows"][2]["fa1"]["tflops"] = big;
    try {
      parse_bench(j, "f.json");
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind("f.json: runs[0].rows[2].fa1.tflops is " + nlohmann::json(big).dump() +
                          ", beyond the range the figures take (at most 1e300)", 0) == 0);
      CHECK(msg.find("must be a positive number") == std::string::npos);  // it is positive
    }
  }
  // Why a limit: near float64's largest value the log axis's margin above the data (x 1.5) is
  // infinite, and make_axis is only handed values parse_bench has taken.
  nlohmann::json j = good;
  j["runs"][0]["rows"][2]["fa1"]["tflops"] = 1e300;
  const BenchData b = parse_bench(j, "f.json");
  const Figure f = make_figure(b, FigureKind::tflops, 64);
  CHECK(f.empty.empty());
  CHECK(std::isfinite(f.y.hi));
  CHECK(f.y.hi >= 1e300);
}
