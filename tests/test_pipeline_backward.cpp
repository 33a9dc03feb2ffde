// The backward's pipeline model (core/pipeline_backward.h) against arithmetic done here from the
// FLOP and byte counts of the default tensor-core backward's tile (two warpgroups of 64 keys,
// Q blocks of 64 queries, five products of 2 x 64 x 64 x d FLOPs each per warpgroup), the
// measured time beside it read from its results file, and bad input refused with one line.
#include "app/pipeline_measured.h"
#include "core/pipeline_backward.h"
#include "core/types.h"
#include "tests/test_helpers.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <regex>

using namespace flashstep;
using namespace flashstep::pipeline;
using Catch::Matchers::WithinRel;

namespace {

// The H200's rates as the model states them (core/pipeline_model.h), written out here.
constexpr double kTensorPerClk = 4096 * 0.74, kExpPerClk = 16, kFp32PerClk = 128, kL2PerClk = 38.8,
                 kHbmPerClk = 16.45, kClkPerMs = 1.98e6;
constexpr int kSms = 132;

// The default backward's Q block by head dimension: 128 queries at d = 64 (configuration 26),
// 64 at d = 128 (configuration 46); each consumer warpgroup holds 64 keys.
double rows_of(double d) { return d == 64 ? 128 : 64; }

// One Q block of one thread block in the steady state: the two warpgroups run each step at once
// and share its unit, so each step takes twice one warpgroup's work; the loads of the next Q block
// and the copy engine's add of the last one's dQ_i come in under them (together, about 1700 clocks
// of the memory path against a period of 4100 or more, done before the dS^T barrier that waits
// for the add).
double period(double d) {
  const double r = rows_of(d);
  const double product = 2.0 * 64 * r * d / kTensorPerClk;
  const double p = 64.0 * r / kExpPerClk;  // exp2-bound: 4 clocks a score against 1 of float32 issue
  const double ds = 64.0 * r * 2.5 / kFp32PerClk;
  return 2 * (5 * product + p + ds);
}
double dq_add(double d) { return rows_of(d) * d * 4 / kL2PerClk; }

// A thread block over n Q blocks: K_j, V_j (HBM) and the first Q block's loads (L2) share the
// memory path first, then n periods, the last Q block's dQ_i added alone, then dK_j, dV_j written.
double block_clocks(double d, int n) {
  const double kv = 2.0 * 128 * d * 2 / kHbmPerClk;
  const double load_i = (2.0 * rows_of(d) * d * 2 + 2.0 * rows_of(d) * 4) / kL2PerClk;
  return kv + load_i + n * period(d) + dq_add(d) + kv;
}

}  // namespace

TEST_CASE("backward pipeline model: the per-block costs are the tile's FLOPs and bytes at the H200's rates", "[pipeline]") {
  const Rates h200;
  for (int64_t d : {64, 128}) {
    INFO("d " << d);
    const BackwardCosts c = backward_costs(d, h200);
    const double r = rows_of(double(d));
    const double product = 2.0 * 64 * r * double(d) / kTensorPerClk;
    for (double x : {c.s_clk, c.dp_clk, c.dv_clk, c.dk_clk, c.dq_clk}) REQUIRE_THAT(x, WithinRel(product, 1e-12));
    REQUIRE_THAT(c.p_clk, WithinRel(64.0 * r / kExpPerClk, 1e-12));
    REQUIRE_THAT(c.ds_clk, WithinRel(64.0 * r * 2.5 / kFp32PerClk, 1e-12));
    REQUIRE_THAT(c.load_i_clk, WithinRel((2.0 * r * double(d) * 2 + 8 * r) / kL2PerClk, 1e-12));
    REQUIRE_THAT(c.dq_add_clk, WithinRel(r * double(d) * 4 / kL2PerClk, 1e-12));
    REQUIRE_THAT(c.kv_clk, WithinRel(2.0 * 128 * double(d) * 2 / kHbmPerClk, 1e-12));
  }
}

TEST_CASE("backward pipeline model: one thread block adds up to its closed form", "[pipeline]") {
  const Rates h200;
  for (int64_t d : {64, 128})
    for (int n : {1, 2, 3, 9}) {
      INFO("d " << d << ", " << n << " Q blocks");
      const Timeline t = simulate_backward(d, n, h200);
      REQUIRE_THAT(t.end_clk, WithinRel(block_clocks(double(d), n), 1e-9));
      // Every warpgroup runs the five products, P and dS once per Q block; the order holds.
      int products = 0;
      for (const Segment& s : t.segments) {
        REQUIRE(s.end >= s.start);
        products += s.unit == Unit::tensor;
      }
      REQUIRE(products == n * 2 * 5);
    }
}

TEST_CASE("backward pipeline model: the whole problem, against the FLOP count and the grid", "[pipeline]") {
  const Rates h200;
  Shape s;
  s.heads = 40;
  s.nq = s.nk = 1024;
  s.d = 128;
  // 40 heads x 8 K/V blocks = 320 thread blocks on 132 SMs: three rounds of 16-Q-block blocks.
  const BackwardPrediction p = predict_backward(s, h200);
  REQUIRE(p.blocks == 320);
  REQUIRE_THAT(p.ms, WithinRel(3 * block_clocks(128, 16) / kClkPerMs, 1e-9));
  const double flops = 2.5 * 4 * 40 * 1024.0 * 1024 * 128;
  REQUIRE_THAT(p.flops, WithinRel(flops, 1e-12));
  REQUIRE_THAT(p.tflops, WithinRel(flops / (p.ms * 1e-3) * 1e-12, 1e-12));
  REQUIRE_THAT(p.clk_per_q_block, WithinRel(period(128), 1e-9));
  // Throughput bounds: each product is a fifth of the FLOPs at the tensor cores' rate on 132 SMs.
  for (double ms : p.product_ms) REQUIRE_THAT(ms, WithinRel(flops / 5 / (kTensorPerClk * kSms * kClkPerMs), 1e-9));
  REQUIRE_THAT(p.tensor_ms, WithinRel(flops / (kTensorPerClk * kSms * kClkPerMs), 1e-9));
  const double visits = 40.0 * 8 * 16;
  REQUIRE_THAT(p.dq_add_ms, WithinRel(visits * 64 * 128 * 4 / kL2PerClk / (kSms * kClkPerMs), 1e-9));
  REQUIRE(p.tensor_ms < p.ms);  // nothing runs faster than the tensor cores' work
  // Where the steady state's clocks go: the tensor cores during the products, the softmax unit
  // during P and dS; the memory path is never alone (the loads and dQ's adds come in under).
  const double product = 2.0 * 64 * 64 * 128 / kTensorPerClk;
  REQUIRE_THAT(p.share_tensor, WithinRel(2 * 5 * product / period(128), 1e-9));
  REQUIRE_THAT(p.share_softmax, WithinRel(2 * (64.0 * 64 / kExpPerClk + 64.0 * 64 * 2.5 / kFp32PerClk) / period(128), 1e-9));
  REQUIRE(std::abs(p.share_memory) < 1e-9);
  REQUIRE(std::abs(p.share_tensor + p.share_softmax + p.share_memory + p.share_idle - 1) < 1e-9);
  // Causal (bottom-right): K/V block j loops from Q block 2 j on, the kept half of the FLOPs.
  s.causal = true;
  const BackwardPrediction c = predict_backward(s, h200);
  REQUIRE_THAT(c.flops, WithinRel(2.5 * 4 * 40 * (1024.0 * 1025 / 2) * 128, 1e-12));
  REQUIRE_THAT(c.tensor_ms, WithinRel(40.0 * (16 + 14 + 12 + 10 + 8 + 6 + 4 + 2) * 2 * 5 * product / (kSms * kClkPerMs), 1e-9));
  REQUIRE(c.ms < p.ms);
  // d = 64: Q blocks of 128 queries, 8 of them, so causal K/V block j loops from Q block j on.
  s.d = 64;
  const BackwardPrediction c64 = predict_backward(s, h200);
  const double product64 = 2.0 * 64 * 128 * 64 / kTensorPerClk;
  REQUIRE_THAT(c64.tensor_ms,
               WithinRel(40.0 * (8 + 7 + 6 + 5 + 4 + 3 + 2 + 1) * 2 * 5 * product64 / (kSms * kClkPerMs), 1e-9));
  REQUIRE_THAT(c64.clk_per_q_block, WithinRel(period(64), 1e-9));
  REQUIRE_THROWS_AS(backward_costs(96, h200), InputError);
}

TEST_CASE("explain --pipeline --backward: the model beside the measured time, bad input in one line", "[pipeline][cli]") {
  std::string out;
  REQUIRE(fstest::run_command(fstest::kBin + " explain --pipeline --backward --n 4096 --d 128", out) == 0);
  // What each warpgroup does: the five products on its tensor lane.
  // (lower case: the two warpgroups share the tensor cores at once)
  REQUIRE(std::regex_search(out, std::regex(R"(wg1 tensor +\|[^|]*s[^|]*d[^|]*v[^|]*k[^|]*q)")));
  Shape s;
  s.heads = 256;
  s.nq = s.nk = 4096;
  s.d = 128;
  const BackwardPrediction p = predict_backward(s, Rates{});
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"(\n  ([0-9.]+) ms, ([0-9.]+) TFLOP/s \(2.5 x)")));
  REQUIRE_THAT(std::stod(m[1].str()), WithinRel(p.ms, 1e-3));
  // The measured time is the results file's, read here with the test's own JSON reading.
  std::ifstream in(std::string(FLASHSTEP_RESULTS_DIR) + "/../../" + kBackwardResultsFiles[0]);
  const nlohmann::json j = nlohmann::json::parse(in);
  double expected = 0;
  for (const auto& r : j["rows"])
    if (r["n"] == 4096 && r["d"] == 128 && r["B"].get<int>() * r["H"].get<int>() == 256)
      expected = r["fa2_tc"]["backward_ms"].get<double>();
  REQUIRE(expected > 0);
  REQUIRE(std::regex_search(out, m, std::regex(R"(measured on the H200: ([0-9.]+) ms)")));
  REQUIRE_THAT(std::stod(m[1].str()), WithinRel(expected, 1e-3));
  // Off the benchmarks' shapes: said, not made up.
  REQUIRE(fstest::run_command(fstest::kBin + " explain --pipeline --backward --n 3000 --d 64", out) == 0);
  REQUIRE(out.find("measured: none at this shape") != std::string::npos);
  for (const char* bad : {" explain --pipeline --backward --d 96", " explain --backward --n 4096",
                          " explain --pipeline --backward --technique default", " explain --pipeline --backward --tensor-in-turn",
                          " explain --pipeline --backward --heads 0"}) {
    INFO(bad);
    REQUIRE(fstest::run_command(fstest::kBin + bad, out) == 2);
    REQUIRE(out.rfind("flashstep: error: ", 0) == 0);
    REQUIRE(out.find('\n') == out.size() - 1);
  }
}
