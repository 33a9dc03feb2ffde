// `flashstep run --backward` and `explain` as a user runs them: the contract's spellings, the
// gradients written, and one clear error line for bad input.
#include "core/backward.h"
#include "core/output_files.h"
#include "core/reference.h"
#include "cli_gpu_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {
using fstest::kBin;

std::string line_with(const std::string& text, const std::string& start) {
  const size_t at = text.find(start);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}
}  // namespace

TEST_CASE("run --backward: bad dO and misplaced flags give one error line and no output", "[cli][backward][errors]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  const std::string D = dir.string() + "/";
  write_npy(D + "do.npy", make_input("random", 10, 4, 2, 3));
  write_npy(D + "do_shape.npy", make_input("random", 10, 3, 2, 3));
  write_npy(D + "do_rows.npy", make_input("random", 11, 4, 2, 3));
  Mat bad = make_input("random", 10, 4, 2, 3);
  bad(4, 1) = std::nanf("");
  write_npy(D + "do_nan.npy", bad);
  bad(4, 1) = INFINITY;
  write_npy(D + "do_inf.npy", bad);
  bad(4, 1) = 1e6f;
  write_npy(D + "do_big.npy", bad);
  const std::string run = "run --nq 10 --nk 12 --d 4 --M 64 ";
  const std::pair<std::string, std::string> cases[] = {
      {run + "--do " + D + "do.npy", "--do requires --backward"},
      {run + "--out-dk " + D + "dk.npy", "requires --backward"},  // --out-dq (below) is named first
      {run + "--out-dv " + D + "dv.npy", "requires --backward"},
      {run + "--backward --do " + D + "do_shape.npy", "dO is 10 x 3 but must be Nq x d = 10 x 4"},
      {run + "--backward --do " + D + "do_rows.npy", "dO is 11 x 4 but must be Nq x d = 10 x 4"},
      {run + "--backward --do " + D + "do_nan.npy", "input dO has NaN at row 4, column 1"},
      {run + "--backward --do " + D + "do_inf.npy", "input dO has Inf at row 4, column 1"},
      {run + "--backward --dtype fp16 --do " + D + "do_big.npy", "input dO has a value beyond fp16's range"},
      {run + "--backward --do " + D + "missing.npy", "cannot open"},
      {run + "--backward --schedule fa9", "unknown schedule"},
  };
  for (const auto& [args, expect] : cases) {
    CAPTURE(args);
    std::string output;
    const int rc = fstest::run_command(kBin + " " + args + " --out-dq " + D + "dq.npy", output);
    CAPTURE(output);
    CHECK(rc == 2);
    CHECK(output.find(expect) != std::string::npos);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    CHECK(output.rfind("flashstep: error: ", 0) == 0);
    for (const char* f : {"dq.npy", "dk.npy", "dv.npy"}) CHECK_FALSE(fsys::exists(dir / f));
  }
}

TEST_CASE("run --backward writes dQ, dK, dV that match the float64 reference", "[cli][backward]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  const std::string D = dir.string() + "/";
  ProblemSpec s;
  s.nq = 37; s.nk = 53; s.d = 12; s.M = 200; s.seed = 5; s.options.mask.causal = true;
  const Problem p = make_problem(s);
  const Mat dO = make_input("uniform", 37, 12, 99, 0);
  write_npy(D + "do.npy", dO);
  const ReferenceGrad ref = reference_backward(p.Q, p.K, p.V, dO, p.scale, p.mask);
  for (const char* sched : {"fa1", "fa2", "standard"}) {
    CAPTURE(sched);
    std::string output;
    const int rc = fstest::run_command(
        kBin + " run --nq 37 --nk 53 --d 12 --M 200 --seed 5 --causal --schedule " + sched + " --backward --do " + D +
            "do.npy --out-dq " + D + "dq.npy --out-dk " + D + "dk.npy --out-dv " + D + "dv.npy --trace " + D + "t.json",
        output);
    CAPTURE(output);
    REQUIRE(rc == 0);
    CHECK(output.find("DIFFERENT") == std::string::npos);
    CHECK(line_with(output, "  HBM read").find("closed form") != std::string::npos);
    CHECK(line_with(output, "  peak SRAM").find("x M") != std::string::npos);
    CHECK(line_with(output, "  FLOPs").find("the forward's") != std::string::npos);
    CHECK(line_with(output, "  vs float64 dQ").find("dV max abs") != std::string::npos);
    CHECK(compare(read_npy_matrix(D + "dq.npy"), ref.dQ).max_rel < 1e-5);
    CHECK(compare(read_npy_matrix(D + "dk.npy"), ref.dK).max_rel < 1e-5);
    CHECK(compare(read_npy_matrix(D + "dv.npy"), ref.dV).max_rel < 1e-5);
    std::ifstream in(D + "t.json");
    const nlohmann::json j = nlohmann::json::parse(in);
    const auto& ph = j.at("phases");
    CHECK(ph.at("forward").at("hbm_read_bytes").get<int64_t>() + ph.at("backward").at("hbm_read_bytes").get<int64_t>() ==
          j.at("totals").at("hbm_read_bytes").get<int64_t>());
    CHECK(ph.at("backward").at("first_step").get<size_t>() < j.at("steps").size());
    CHECK(j.at("problem").at("backward") == true);
  }
  // dO from the seed when --do is not given: the same as make_grad_output's
  std::string output;
  REQUIRE(fstest::run_command(kBin + " run --nq 37 --nk 53 --d 12 --M 200 --seed 5 --causal --backward --out-dq " +
                                  D + "dq2.npy", output) == 0);
  const ReferenceGrad ref2 = reference_backward(p.Q, p.K, p.V, make_grad_output(p, "random"), p.scale, p.mask);
  CHECK(compare(read_npy_matrix(D + "dq2.npy"), ref2.dQ).max_rel < 1e-5);
}

TEST_CASE("run --backward --steps prints the backward's lines after the forward's", "[cli][backward]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --backward --dropout 0.3 --steps", output) == 0);
  for (const char* want : {"Alg1 L13", "Alg4 L5", "Alg4 L7", "Alg4 L10", "Alg4 L14-15", "Alg4 L19", "D_i = rowsum",
                           "Alg4 L21", "Alg4 L24", "read-modify-write"})
    CHECK(output.find(want) != std::string::npos);
  CHECK(output.find("Alg1 L13") < output.find("Alg4 L5"));
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --schedule fa2 --backward --steps", output) == 0);
  for (const char* want : {"FA2b L3", "FA2b L4", "FA2b L9", "FA2b L15", "FA2b L18"})
    CHECK(output.find(want) != std::string::npos);
}

TEST_CASE("explain adds the backward closed forms, equal to the simulation, and Theorem 5", "[cli][backward]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " explain --nq 300 --nk 170 --d 32 --M 2000", output) == 0);
  CAPTURE(output);
  // Each backward's "read closed | simulated  write closed | simulated  total bytes", against
  // the counts of docs/backward.md written out here: Bc = ceil(2000 / 128) = 16,
  // Tc = ceil(170 / 16) = 11, in elements.
  const long long nq = 300, nk = 170, d = 32, Tc = 11;
  struct Want {
    const char* name;
    long long read, write;
  };
  const Want want[] = {
      {"Algorithm 4 (fa1)", 2 * nk * d + Tc * nq * (4 * d + 2), (nq + 2 * nk) * d + Tc * nq * d + 2 * nk * d},
      {"FA2 Algorithm 2 (fa2)", 2 * nq * d + 2 * nk * d + Tc * nq * (2 * d + 2) + Tc * nq * d,
       nq * d + nq + Tc * nq * d + 2 * nk * d},
      {"Algorithm 3 (standard)", 5 * nq * nk + 3 * nq * d + 2 * nk * d, 2 * nq * nk + nq * d + 2 * nk * d}};
  for (const Want& w : want) {
    CAPTURE(w.name);
    CHECK(fstest::numbers_after(output, std::string("  ") + w.name + " ") ==
          std::vector<long long>{w.read, w.read, w.write, w.write, 4 * (w.read + w.write)});
  }
  CHECK(line_with(output, "  backward equals closed form").find("yes") != std::string::npos);
  CHECK(line_with(output, "  simulated equals closed form").find("yes") != std::string::npos);
  CHECK(output.find("Theorem 5 order") != std::string::npos);
  CHECK(output.find("Algorithm 3") != std::string::npos);
}

// The GPU backward's commands (app/cmd_backward_gpu.cpp). Every input check runs before the
// first call that needs a GPU, in the build without CUDA too (app/gpu_requests.cpp), so these
// give their own error line on every build (tests/cli_gpu_helpers.h).

TEST_CASE("gpu/verify/bench-gpu --backward: bad input gives its error line before any GPU is needed",
          "[cli][backward][errors]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  const std::string D = dir.string() + "/";
  write_npy(D + "do.npy", make_input("random", 10, 4, 2, 3));
  write_npy(D + "do_shape.npy", make_input("random", 10, 3, 2, 3));
  Mat bad = make_input("random", 10, 4, 2, 3);
  bad(4, 1) = std::nanf("");
  write_npy(D + "do_nan.npy", bad);
  // 4-D inputs (B, H, N, d) = (2, 3, 10, 4) and (2, 3, 12, 4)
  const Mat q = make_input("random", 60, 4, 1, 0), kv = make_input("random", 72, 4, 1, 1);
  write_file_atomic(D + "q4.npy", npy_bytes(q.data(), {2, 3, 10, 4}));
  write_file_atomic(D + "k4.npy", npy_bytes(kv.data(), {2, 3, 12, 4}));
  write_file_atomic(D + "v4.npy", npy_bytes(kv.data(), {2, 3, 12, 4}));
  const std::string gpu = "gpu --nq 10 --nk 12 --d 4 --M 64 ", ver = "verify --nq 10 --nk 12 --d 4 --M 64 ";
  const std::string out = " --out-dq " + D + "dq.npy";
  const std::string files4 = "gpu --q " + D + "q4.npy --k " + D + "k4.npy --v " + D + "v4.npy --M 64 ";
  const std::pair<std::string, std::string> cases[] = {
      {gpu + "--do " + D + "do.npy" + out, "--do requires --backward"},
      {gpu + "--out-dk " + D + "dk.npy" + out, "requires --backward"},
      {ver + "--do " + D + "do.npy", "--do requires --backward"},
      {gpu + "--backward --do " + D + "do_shape.npy" + out, "dO is 10 x 3 but must be Nq x d = 10 x 4"},
      {ver + "--backward --do " + D + "do_shape.npy", "dO is 10 x 3 but must be Nq x d = 10 x 4"},
      {gpu + "--backward --do " + D + "do_nan.npy" + out, "input dO has NaN at row 4, column 1"},
      {ver + "--backward --schedule fa2 --do " + D + "do_nan.npy", "input dO has NaN at row 4, column 1"},
      {files4 + "--backward --do " + D + "do.npy" + out, "dO has shape (10, 4) but must be (B, H, Nq, d) = (2, 3, 10, 4)"},
      {gpu + "--backward --dtype fp16" + out, "the GPU backward runs in float32 only: --dtype fp16"},
      {ver + "--backward --schedule fa2 --dtype bf16", "the GPU backward runs in float32 only: --dtype bf16"},
      {"bench-gpu --backward --dtype fp16", "the GPU backward runs in float32 only"},
      {"bench-gpu --backward --causal", "bench-gpu --backward times unmasked attention"},
      {gpu + "--backward --do " + D + "do.npy --out-dq " + D + "do.npy", "refusing to overwrite an input"},
      {gpu + "--backward --out-dk " + D + "dq.npy" + out, "name the same file"},
  };
  for (const auto& [args, expect] : cases) {
    CAPTURE(args);
    std::string output;
    const int rc = fstest::run_command(kBin + " " + args, output);
    CAPTURE(output);
    CHECK(rc == 2);
    CHECK(output.find(expect) != std::string::npos);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    CHECK(output.rfind("flashstep: error: ", 0) == 0);
    for (const char* f : {"dq.npy", "dk.npy"}) CHECK_FALSE(fsys::exists(dir / f));
  }
}

TEST_CASE("gpu and verify --backward: gradients from the GPU, or one line saying there is none", "[cli][backward]") {
  const fstest::TempDir tmp;
  const std::string D = tmp.path.string() + "/";
  ProblemSpec s;
  s.nq = 37; s.nk = 53; s.d = 16; s.M = 512; s.seed = 5; s.options.mask.causal = true;
  const Problem p = make_problem(s);
  const ReferenceGrad ref = reference_backward(p.Q, p.K, p.V, make_grad_output(p, "random"), p.scale, p.mask);
  for (const char* sched : {"fa1", "fa2", "standard"}) {
    CAPTURE(sched);
    const std::string flags = " --nq 37 --nk 53 --d 16 --M 512 --seed 5 --causal --schedule " + std::string(sched);
    std::string output;
    int rc = fstest::run_command(kBin + " verify --backward" + flags, output);
    CAPTURE(output);
    if (fstest::gpu_command_ran(rc, output)) {
      CHECK(rc == 0);
      CHECK(output.find("\nPASS\n") != std::string::npos);
      CHECK(line_with(output, "final      GPU vs CPU").find("ok") != std::string::npos);
      if (std::string(sched) == "fa1") CHECK(output.find("worst over j") != std::string::npos);
    }
    rc = fstest::run_command(kBin + " gpu --backward" + flags + " --out-dq " + D + "dq.npy --out-dk " + D +
                                 "dk.npy --out-dv " + D + "dv.npy --out-o " + D + "o.npy",
                             output);
    if (!fstest::gpu_command_ran(rc, output)) {
      for (const char* f : {"dq.npy", "dk.npy", "dv.npy", "o.npy"}) CHECK_FALSE(fsys::exists(D + f));
    } else {
      REQUIRE(rc == 0);
      CHECK(compare(read_npy_matrix(D + "dq.npy"), ref.dQ).max_rel < 2e-5);
      CHECK(compare(read_npy_matrix(D + "dk.npy"), ref.dK).max_rel < 2e-5);
      CHECK(compare(read_npy_matrix(D + "dv.npy"), ref.dV).max_rel < 2e-5);
      CHECK(compare(read_npy_matrix(D + "o.npy"), reference_attention(p.Q, p.K, p.V, p.scale, p.mask).O).max_rel < 1e-5);
    }
  }
}
