// The third hardening round, kept fixed: the pipeline model's explain, the roofline's and
// bench-gpu --decode's readers, decode's partials in the work estimate, JSON with a NUL byte;
// run's files after its report, float64 .npy values past float32, the summary's float64 figures.
// Each bad input gives one short `flashstep: error:` line and exit code 2, at once (FIFOs and
// quadratic work under a time limit), and leaves every file in its folder as it was.
#include "hardening_helpers.h"
#include "test_helpers.h"

#include "core/accuracy.h"
#include "core/npy.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <limits>
#include <sys/stat.h>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::check_refused;
using fstest::kBin;

using fstest::read_text;
using fstest::write_text;

nlohmann::json shipped_bench() {
  std::ifstream in(FLASHSTEP_BENCH_FILE);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("explain --pipeline: sizes, flags it does not model, variants and its work", "[cli][hardening3][pipeline]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  check_refused(dir, "explain --pipeline --n 0", "--n must be from 1 to 4194304 for the pipeline model (got 0)");
  check_refused(dir, "explain --pipeline --nq 0", "--nq must be from 1 to 4194304");
  check_refused(dir, "explain --pipeline --nk 0", "--nk must be from 1 to 4194304");
  check_refused(dir, "explain --pipeline --n 8388608", "(got 8388608)");
  for (const char* flag : {"--M 1024", "--splits 2", "--dtype bf16", "--page-size 16", "--br 64", "--bc 64",
                           "--p-dtype bf16", "--gpu a100"})
    check_refused(dir, std::string("explain --pipeline ") + flag, "is not an input of the pipeline model");
  check_refused(dir, "explain --pipeline --variant 0", "--variant 0 has no row in the pipeline model");
  check_refused(dir, "explain --pipeline --variant 19 --n 1024", "rows are techniques (14 fa2-wgmma");
  check_refused(dir, "explain --pipeline --heads 0", "--heads must be in [1, 65535]");
  // Quadratic in Nk when causal, and Tr x heads tiles placed: refused before the work, at once.
  check_refused(dir, "explain --pipeline --n 262144 --d 128 --causal", "the pipeline model would simulate");
  check_refused(dir, "explain --pipeline --nq 4194304 --heads 65535", "the pipeline model would simulate");
  // --n 1: the default grid (B x H x N = 131072 rows) is not blamed on --heads, which was not given.
  const fstest::Outcome one = fstest::run_limited(kBin + " explain --pipeline --n 1", 60);
  CAPTURE(one.out);
  CHECK(one.rc == 0);
  CHECK(one.out.find("--heads") == std::string::npos);
  CHECK(one.out.find("131072 heads") != std::string::npos);
  // A shape the limit allows still runs, and --variant picks the technique measured as that rung.
  const fstest::Outcome ok = fstest::run_limited(kBin + " explain --pipeline --n 4096 --d 128 --causal --variant 18", 60);
  CAPTURE(ok.out);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("technique persistent") != std::string::npos);
  CHECK(ok.seconds < 30);
}

TEST_CASE("plot --figure roofline reads its bench file as every bench file is read", "[cli][hardening3][plot]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  REQUIRE(::mkfifo((dir / "fifo.json").c_str(), 0600) == 0);
  fsys::create_directories(dir / "folder.json");
  const nlohmann::json good = shipped_bench();
  auto variant = [&](const std::string& name, auto&& change) {
    nlohmann::json j = good;
    change(j);
    write_text(dir / name, j.dump());
  };
  variant("negative.json", [](nlohmann::json& j) { j["runs"][0]["rows"][0]["fa1"]["tflops"] = -3.5; });
  variant("zero-bytes.json", [](nlohmann::json& j) { j["runs"][0]["rows"][0]["fa1"]["hbm_bytes_predicted"] = 0; });
  variant("flops.json", [](nlohmann::json& j) { j["runs"][0]["rows"][0]["flops"] = "many"; });
  variant("many-runs.json", [](nlohmann::json& j) {
    for (int k = 0; k < 70; ++k) j["runs"].push_back(j["runs"][0]);
  });
  write_text(dir / "array.json", "[1,2,3]");
  write_text(dir / "nul.json", good.dump() + std::string(1, '\0') + "garbage");
  {  // 17 MiB: refused from its size, before it is read
    std::ofstream big(dir / "big.json", std::ios::binary);
    big << good.dump();
    big << std::string((size_t(17) << 20), ' ');
  }
  const std::string plot = "plot --figure roofline --out r.png --bench ";
  check_refused(dir, plot + "fifo.json", "is a FIFO, not a regular file");
  check_refused(dir, plot + "folder.json", "is a directory, not a regular file");
  check_refused(dir, plot + "negative.json", "runs[0].rows[0].fa1.tflops must be a positive number");
  check_refused(dir, plot + "zero-bytes.json", "hbm_bytes_predicted must be a positive number");
  check_refused(dir, plot + "flops.json", "runs[0].rows[0].flops must be a positive number");
  check_refused(dir, plot + "many-runs.json", "at most 64");
  check_refused(dir, plot + "array.json", "the top level must be an object");
  check_refused(dir, plot + "nul.json", "a NUL byte at byte");
  check_refused(dir, plot + "big.json", "big.json");
  check_refused(dir, "plot --figure roofline --out r.png --d 0", "--d for the roofline must be from 1 to 256 (got 0)");
  check_refused(dir, "plot --out r.png --bench " + std::string(FLASHSTEP_BENCH_FILE) + " --d 0", "--d 0");
  // The shipped file still draws.
  const fstest::Outcome r = fstest::run_limited("cd " + dir.string() + " && " + kBin + " " + plot + FLASHSTEP_BENCH_FILE, 120);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(fsys::is_regular_file(dir / "r.png"));
}

TEST_CASE("bench-gpu --decode --sdpa reads through the checked reader, before any GPU work", "[cli][hardening3][gpu-flags]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  REQUIRE(::mkfifo((dir / "fifo.json").c_str(), 0600) == 0);
  fsys::create_directories(dir / "folder");
  write_text(dir / "rows.json", "{\"rows\": [{\"nk\": 4096, \"d\": 64, \"heads\": 32, \"dtype\": \"bf16\", \"best_ms\": -1, "
                                "\"best_backend\": \"flash\"}]}");
  write_text(dir / "type.json", "{\"rows\": [{\"nk\": \"4096\", \"d\": 64, \"heads\": 32, \"dtype\": \"bf16\"}]}");
  write_text(dir / "nul.json", std::string("{\"rows\": []}\0junk", 17));
  const std::string cmd = "bench-gpu --decode --sdpa ";
  check_refused(dir, cmd + "fifo.json", "is a FIFO, not a regular file");
  check_refused(dir, cmd + "folder", "is a directory, not a regular file");
  check_refused(dir, cmd + "rows.json", "--sdpa file rows.json: rows[0].best_ms must be a positive number");
  check_refused(dir, cmd + "type.json", "--sdpa file type.json: rows[0].nk must be a whole number");
  check_refused(dir, cmd + "nul.json", "a NUL byte at byte 12");
  check_refused(dir, "bench-gpu --decode --splits 0", "--splits: splits must be at least 1 (got 0)");
}

TEST_CASE("decode's partials count towards the simulated HBM, --splits 0 is refused", "[cli][hardening3][work]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  // S x Nq x (d + 1) x 4 B of partials: 8000 x 16384 x 257 x 4 = 135 GB.
  check_refused(dir, "run --schedule decode --nq 16384 --nk 8000 --d 256 --M 1024 --splits 8000",
                "the simulated HBM would need about");
  // 1100 x 8192 x 257 x 4 = 9.26 GB of partials, the rest a few MB: over the 8 GiB limit.
  check_refused(dir, "run --schedule decode --nq 8192 --nk 1100 --d 256 --M 1024 --splits 1100",
                "the simulated HBM would need about");
  check_refused(dir, "run --schedule decode --n 64 --d 16 --splits 0", "--splits: splits must be at least 1 (got 0)");
  check_refused(dir, "explain --n 64 --d 16 --splits 0", "--splits: splits must be at least 1 (got 0)");
  // A decode run with partials well inside the limit still runs.
  const fstest::Outcome ok = fstest::run_limited(kBin + " run --schedule decode --nq 4 --nk 256 --d 16 --M 256 --splits 8", 60);
  CAPTURE(ok.out);
  CHECK(ok.rc == 0);
}

TEST_CASE("JSON inputs stop at no NUL byte: the garbage after one is refused", "[cli][hardening3][json]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  std::string out;
  const std::string snap = (dir / "snap").string();
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --snapshots " + snap, out) == 0);
  const fsys::path manifest = dir / "snap" / "manifest.json";
  const std::string text = read_text(manifest);
  write_text(manifest, text + std::string(1, '\0') + "{\"anything\": [");
  check_refused(dir, "compare --snapshots snap --against snap", "a NUL byte at byte " + std::to_string(text.size()));
  write_text(dir / "bench.json", shipped_bench().dump() + std::string(1, '\0') + "]]]");
  check_refused(dir, "plot --bench bench.json --out p.png", "a NUL byte at byte");
}

TEST_CASE("run writes its files only once its report is out", "[cli][hardening3][outputs]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  // Standard output on a full device: the error line, exit 2, and none of the files.
  check_refused(dir, "run --n 8 --d 4 --out-o o.npy --trace t.json --snapshots snaps > /dev/full",
                "writing standard output failed");
  // A reader that stops early (head): the closed pipe is reported, and no file (not even a
  // temporary) is left.
  const fstest::Outcome cut = fstest::run_limited(
      "cd " + dir.string() + " && " + kBin + " run --n 256 --d 16 --steps --out-o o.npy --snapshots snaps | head -c 200", 60);
  CAPTURE(cut.out);
  CHECK(cut.out.find("flashstep: error: writing standard output failed") != std::string::npos);
  CHECK(fsys::is_empty(dir));
  // The same run with its report read in full writes every file.
  const fstest::Outcome ok = fstest::run_limited("cd " + dir.string() + " && " + kBin +
                                                 " run --n 8 --d 4 --out-o o.npy --trace t.json --snapshots snaps > /dev/null", 60);
  CAPTURE(ok.out);
  CHECK(ok.rc == 0);
  CHECK(fsys::exists(dir / "o.npy"));
  CHECK(fsys::exists(dir / "t.json"));
  CHECK(fsys::exists(dir / "snaps" / "manifest.json"));
}

TEST_CASE("a float64 .npy value beyond float32's range is named as such, not as an Inf", "[cli][hardening3][npy]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  Mat ones = Mat::Ones(8, 4);
  write_npy((dir / "g.npy").string(), ones);
  // float64 (8, 4): 1 everywhere, -4e38 at (3, 2) in one file and 1e300 at (0, 0) in another.
  std::string a(8 * 4 * sizeof(double), '\0'), b = a;
  double* pa = reinterpret_cast<double*>(a.data());
  double* pb = reinterpret_cast<double*>(b.data());
  for (int k = 0; k < 32; ++k) pa[k] = pb[k] = 1.0;
  pa[3 * 4 + 2] = -4e38;
  pb[0] = 1e300;
  const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (8, 4), }";
  fstest::write_npy_text(dir / "big.npy", header, a);
  fstest::write_npy_text(dir / "huge.npy", header, b);
  check_refused(dir, "run --q g.npy --k big.npy --v g.npy",
                "big.npy: the value -4e+38 at index (3, 2) is beyond float32's range");
  check_refused(dir, "run --q huge.npy --k g.npy --v g.npy", "huge.npy: the value 1e+300 at index (0, 0) is beyond float32's range");
  check_refused(dir, "run --n 8 --d 4 --backward --do huge.npy", "huge.npy: the value 1e+300 at index (0, 0)");
  // The largest float32 itself, written as float64, is read.
  pb[0] = 3.4028234663852886e38;
  fstest::write_npy_text(dir / "max.npy", header, b);
  CHECK(read_npy_matrix((dir / "max.npy").string())(0, 0) == std::numeric_limits<float>::max());
}

TEST_CASE("run's flags: --pattern beside .npy inputs, --M's and --max-gflop's messages, explain's M in bytes", "[cli][hardening3][flags]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  write_npy((dir / "g.npy").string(), Mat(Mat::Ones(8, 4)));
  check_refused(dir, "run --q g.npy --k g.npy --v g.npy --pattern ramp", "drop --pattern");
  check_refused(dir, "run --M 1.5", "M must be a whole number of elements or of KiB (got '1.5')");
  check_refused(dir, "run --M 99999999999999999999999", "M is out of range");
  check_refused(dir, "run --max-gflop -1", "(got -1)");
  // explain gives M's size in bytes under 1 KiB and in KiB with decimals past it, never "0 KiB".
  const fstest::Outcome small = fstest::run_limited(kBin + " explain --M 4 --d 1", 60);
  CHECK(small.out.find("M = 4 elements (16 B of float32)") != std::string::npos);
  const fstest::Outcome odd = fstest::run_limited(kBin + " explain --M 1000 --d 4", 60);
  CHECK(odd.out.find("M = 1000 elements (3.91 KiB of float32)") != std::string::npos);
  // --pattern alone still shapes the generated inputs.
  const fstest::Outcome ok = fstest::run_limited("cd " + dir.string() + " && " + kBin + " run --n 8 --d 4 --pattern ramp", 60);
  CHECK(ok.rc == 0);
}

TEST_CASE("the summary reuses the run's float64 figures instead of computing them again", "[accuracy][hardening3]") {
  ProblemSpec spec = sizes_spec(40, 56, 8, 256);
  for (const Dtype dt : {Dtype::fp32, Dtype::bf16}) {
    spec.options.dtype = dt;
    const Problem p = make_problem(spec);
    RunOptions opt;
    opt.accuracy = opt.accuracy_companion = true;
    Trace t = run_problem(p, make_tiling(p), opt);
    REQUIRE(t.accuracy);
    REQUIRE(t.accuracy->measured);
    // A mark no reference could give: accuracy_of must return the stored figures as they are.
    t.accuracy->forward.O.max_abs = 12345.0;
    CHECK(accuracy_of(t, true).forward.O.max_abs == 12345.0);
    CHECK(accuracy_of(t, false).forward.O.max_abs == 12345.0);
  }
  // Without the stored figures it measures them.
  ProblemSpec s32 = sizes_spec(40, 56, 8, 256);
  const Problem p = make_problem(s32);
  RunOptions opt;
  Trace t = run_problem(p, make_tiling(p), opt);
  REQUIRE(!t.accuracy);
  const Accuracy a = accuracy_of(t, true);
  CHECK(a.measured);
  CHECK(a.forward.O.max_abs < 1e-5);
}
