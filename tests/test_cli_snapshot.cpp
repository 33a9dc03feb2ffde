// `run --snapshots` and `compare` as a user runs them: CPU snapshots compare equal to
// themselves, a perturbed value is found at its j with exit 1, and every bad input gets one
// `flashstep: error:` line with exit 2. `gpu --snapshots` refuses bad input before it looks for a
// GPU, with the same line in a build without CUDA (app/gpu_requests.cpp).
#include "core/npy.h"
#include "core/snapshot.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::one_error_line;
using fstest::Outcome;
using fstest::run_flashstep;

// Ragged (neither Nq nor Nk a multiple of its block), Nq != Nk, with a mask.
const char* kFlags[] = {
    "--nq 45 --nk 38 --d 12 --br 8 --bc 7 --causal",                           // rows 0..6 see no key
    "--nq 33 --nk 50 --d 8 --br 6 --bc 9 --window 9,3 --dropout 0.15",          // window and dropout
    "--nq 29 --nk 41 --d 16 --br 8 --bc 8 --kv-len 30 --dtype bf16 --seed 7",  // key padding, bf16
};

}  // namespace

TEST_CASE("CPU snapshots compare equal to themselves, against a folder and against the run flags", "[cli][snapshot]") {
  const fstest::TempDir tmp;
  const std::string sched = GENERATE("fa1", "fa2");
  const int which = GENERATE(0, 1, 2);
  const bool backward = GENERATE(false, true);
  const std::string flags = std::string("--schedule ") + sched + " " + kFlags[which] + (backward ? " --backward" : "");
  CAPTURE(flags);
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  Outcome r = run_flashstep("run " + flags + " --snapshots " + a);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("snapshots  written to " + a) != std::string::npos);
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + b).rc == 0);
  r = run_flashstep("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("PASS: every tensor within tolerance") != std::string::npos);
  CHECK(r.out.find(sched == std::string("fa1") ? "after outer step j" : "after inner step j") != std::string::npos);
  CHECK((r.out.find("backward: dQ in HBM after K/V block j") != std::string::npos) == backward);
  r = run_flashstep("compare --snapshots " + a + " " + flags);
  CHECK(r.rc == 0);
  CHECK(r.out.find("against the CPU engine on the run flags") != std::string::npos);
  // Every file the manifest names is in the folder, and nothing else is.
  const SnapshotSet s = read_snapshots(a);
  size_t named = 1;
  for (const SnapshotEntry& sn : s.snapshots) named += sn.tensors.size();
  named += s.final_state.tensors.size();
  CHECK(size_t(std::distance(fsys::directory_iterator(a), fsys::directory_iterator())) == named);
}

TEST_CASE("compare finds one perturbed value at its j and exits 1", "[cli][snapshot]") {
  const fstest::TempDir tmp;
  const std::string sched = GENERATE("fa1", "fa2");
  const std::string flags = std::string("--schedule ") + sched + " " + kFlags[1];
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + a).rc == 0);
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + b).rc == 0);
  // One element of O after j = 3 (of Tc = 6), moved by 1e-3 of the largest value.
  const std::string file = a + "/forward_j0003_O.npy";
  NpyArray o = read_npy(file);
  float big = 0;
  for (float x : o.data) big = std::max(big, std::abs(x));
  o.data[5 * 8 + 2] += 1e-3f * big;
  write_npy(file, o.data.data(), o.shape);
  const Outcome r = run_flashstep("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  CHECK(r.rc == 1);
  CHECK(r.out.find("the first at forward j = 3: O rel") != std::string::npos);
  CHECK(r.out.find("     3 |") != std::string::npos);
  CHECK(r.out.find("OVER") != std::string::npos);
  // fa1 carries O into the next j, fa2's O_i^(j) too; both sides were written from the same
  // trace, so only the edited file differs: one tensor over.
  CHECK(r.out.find("FAIL: 1 over tolerance") != std::string::npos);
}

TEST_CASE("compare names a NaN where it is, and prints no inf for it", "[cli][snapshot]") {
  const fstest::TempDir tmp;
  const std::string flags = std::string("--schedule fa2 ") + kFlags[1];
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + a).rc == 0);
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + b).rc == 0);
  const std::string file = a + "/forward_j0003_O.npy";
  NpyArray o = read_npy(file);
  REQUIRE(o.shape.size() == 2);
  REQUIRE(o.shape[1] == 8);
  o.data[5 * 8 + 2] = std::numeric_limits<float>::quiet_NaN();
  write_npy(file, o.data.data(), o.shape);
  const Outcome r = run_flashstep("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  CHECK(r.rc == 1);
  CHECK(r.out.find("FAIL: 1 over tolerance; the first at forward j = 3: O holds a NaN at row 5, column 2") != std::string::npos);
  CHECK(r.out.find("NaN        NaN |") != std::string::npos);
  CHECK(r.out.find("inf") == std::string::npos);
}

// The tolerance compare applies (snapshot_tolerance, core/tolerance.h's rule), written out here
// from the rule itself: O as stored in bf16 one ulp (2^-7), two for fa1 which stores O at every
// j; fa2's on-chip O_i^(j) float32 (5e-6); dQ 2e-5 of max(|final dQ|, floor).
TEST_CASE("snapshot_tolerance is the rule of core/tolerance.h for each phase, tensor, dtype", "[snapshot]") {
  SnapshotProblem p;
  p.dtype = Dtype::bf16;
  p.schedule = Schedule::fa1;
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "O") == 2 * std::ldexp(1.0, -7));
  CHECK(snapshot_tolerance(p, SnapshotPhase::forward, "O") == 2 * std::ldexp(1.0, -7));
  CHECK(snapshot_tolerance(p, SnapshotPhase::forward, "l") == 5e-6);
  p.schedule = Schedule::fa2;
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "O") == std::ldexp(1.0, -7));
  CHECK(snapshot_tolerance(p, SnapshotPhase::forward, "O") == 5e-6);
  p.dtype = Dtype::fp16;
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "O") == std::ldexp(1.0, -10));
  p.dtype = Dtype::fp32;
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "O") == 5e-6);
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "lse") == 5e-6);
  CHECK(snapshot_tolerance(p, SnapshotPhase::backward, "dQ") == 2e-5);
  CHECK(snapshot_tolerance(p, SnapshotPhase::final, "dQ") == 2e-5);
}

// compare on two folders of the same run, one element of one tensor of the first moved by 0.9
// and by 1.1 times its tolerance (relative to max|tensor| of the second, or for dQ to max(|final
// dQ|, floor)): within tolerance, exit 0; over it, exit 1 naming that snapshot.
TEST_CASE("compare passes a difference of 0.9x the tolerance and fails 1.1x, bf16 and backward", "[cli][snapshot]") {
  struct Case {
    std::string flags;
    SnapshotPhase phase;
    std::string tensor;
    int64_t j;
    double tol;
  };
  const double bf16_ulp = std::ldexp(1.0, -7);
  const std::string bf16 = " --nq 29 --nk 41 --d 16 --br 8 --bc 8 --kv-len 30 --dtype bf16 --seed 7";
  const std::string bwd = " --nq 33 --nk 50 --d 8 --br 6 --bc 9 --window 9,3 --dropout 0.15 --backward";
  using P = SnapshotPhase;
  const Case c = GENERATE_COPY(Case{"--schedule fa1" + bf16, P::final, "O", -1, 2 * bf16_ulp},
                               Case{"--schedule fa1" + bf16, P::forward, "O", 2, 2 * bf16_ulp},
                               Case{"--schedule fa2" + bf16, P::final, "O", -1, bf16_ulp},
                               Case{"--schedule fa2" + bf16, P::forward, "O", 2, 5e-6},
                               Case{"--schedule fa1" + bwd, P::backward, "dQ", 3, 2e-5},
                               Case{"--schedule fa2" + bwd, P::final, "dQ", -1, 2e-5});
  const double factor = GENERATE(0.9, 1.1);
  CAPTURE(c.flags, snapshot_phase_name(c.phase), c.tensor, c.j, factor);
  const fstest::TempDir tmp;
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  REQUIRE(run_flashstep("run " + c.flags + " --snapshots " + a).rc == 0);
  REQUIRE(run_flashstep("run " + c.flags + " --snapshots " + b).rc == 0);
  const SnapshotSet ref = read_snapshots(b);
  const SnapshotEntry* sn = &ref.final_state;
  for (const SnapshotEntry& x : ref.snapshots)
    if (x.phase == c.phase && x.j == c.j) sn = &x;
  REQUIRE(sn->phase == c.phase);
  const SnapshotTensor* t = nullptr;
  for (const SnapshotTensor& x : sn->tensors)
    if (x.name == c.tensor) t = &x;
  REQUIRE(t != nullptr);
  double scale = t->data.cwiseAbs().maxCoeff();
  if (c.tensor == "dQ") scale = std::max(double(ref.final_state.find("dQ")->cwiseAbs().maxCoeff()), ref.dq_scale_floor);
  // The largest element of the tensor is moved: its float32 rounding is smallest relative to it.
  NpyArray arr = read_npy(a + "/" + t->file);
  size_t at = 0;
  for (size_t k = 0; k < arr.data.size(); ++k)
    if (std::abs(arr.data[k]) > std::abs(arr.data[at])) at = k;
  arr.data[at] += float(factor * c.tol * scale);
  write_npy(a + "/" + t->file, arr.data.data(), arr.shape);
  const Outcome r = run_flashstep("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  if (factor < 1) {
    CHECK(r.rc == 0);
    CHECK(r.out.find("PASS: every tensor within tolerance") != std::string::npos);
  } else {
    CHECK(r.rc == 1);
    const std::string where = c.phase == P::final ? "the final state"
                                                  : snapshot_phase_name(c.phase) + (" j = " + std::to_string(c.j));
    CHECK(r.out.find("FAIL: 1 over tolerance; the first at " + where + ": " + c.tensor + " rel") != std::string::npos);
  }
}

TEST_CASE("compare and run --snapshots refuse bad input with one line and exit 2", "[cli][snapshot][errors]") {
  const fstest::TempDir tmp;
  const std::string flags = std::string("--schedule fa1 ") + kFlags[0];
  const std::string good = (tmp.path / "good").string();
  REQUIRE(run_flashstep("run " + flags + " --snapshots " + good).rc == 0);
  const auto copy = [&](const std::string& name) {
    const fsys::path d = tmp.path / name;
    fsys::copy(good, d);
    return d;
  };
  const fsys::path missing = copy("missing"), truncated = copy("truncated"), shape = copy("shape"),
                   malformed = copy("malformed");
  fsys::remove(missing / "forward_j0001_l.npy");
  fsys::resize_file(truncated / "final_O.npy", fsys::file_size(truncated / "final_O.npy") - 4);
  const Mat wrong = Mat::Constant(45, 11, 0.5f);
  write_npy((shape / "forward_j0004_O.npy").string(), wrong);
  std::ofstream(malformed / "manifest.json") << "{\"format\": \"flashstep-snapshots\", \"version\": 1,,}";
  const std::string other = (tmp.path / "other").string();
  REQUIRE(run_flashstep("run --schedule fa1 --nq 45 --nk 39 --d 12 --br 8 --bc 7 --causal --snapshots " + other).rc == 0);
  const fsys::path foreign = tmp.path / "foreign";
  fsys::create_directories(foreign);
  std::ofstream(foreign / "mine.txt") << "not a snapshot";

  struct Bad {
    std::string args, expect;
  };
  const Bad bad[] = {
      {"compare --snapshots " + missing.string() + " --against " + good, "forward_j0001_l.npy: cannot open file"},
      {"compare --snapshots " + truncated.string() + " --against " + good, "final_O.npy: truncated"},
      {"compare --snapshots " + shape.string() + " --against " + good,
       "forward_j0004_O.npy: shape (45, 11) disagrees with the manifest's problem, which needs (45, 12)"},
      {"compare --snapshots " + malformed.string() + " --against " + good, "manifest.json: malformed JSON at byte"},
      {"compare --snapshots " + other + " --against " + good, "hold snapshots of different problems: nk (39 in"},
      {"compare --snapshots " + good + " --schedule fa1 --nq 45 --nk 38 --d 12 --br 8 --bc 7 --causal --seed 2",
       "another problem than the run flags give: seed (1 in the folder, 2 from the run flags)"},
      {"compare --snapshots " + good + " --schedule fa1 --nq 45 --nk 38 --d 12 --br 8 --bc 7",
       "mask.causal (true in the folder, false from the run flags)"},
      {"compare --snapshots " + good + " --against " + good + " --nk 38", "give --against DIR2 or run flags, not both (got --nk)"},
      {"compare --snapshots " + (tmp.path / "nowhere").string() + " --against " + good, "cannot open the snapshot folder"},
      {"compare --against " + good, "--snapshots is required"},
      // 4096 x 64 with Bc = 4: Tc = 1024 snapshots of O, over the 1 GiB cap.
      {"run --n 4096 --d 64 --M 1024 --snapshots " + (tmp.path / "big").string(), "over the cap of 1024 MiB"},
      {"run " + flags + " --snapshots " + foreign.string(), "holds files but no manifest.json"},
      {"run " + flags + " --snapshots " + (tmp.path / "no" / "such").string(), "its parent folder"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.args);
    const Outcome r = run_flashstep(b.args);
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(one_error_line(r.out));
    CHECK(r.out.find(b.expect) != std::string::npos);
  }
  CHECK_FALSE(fsys::exists(tmp.path / "big"));
  CHECK(std::distance(fsys::directory_iterator(foreign), fsys::directory_iterator()) == 1);
}

TEST_CASE("gpu --snapshots refuses bad input before looking for a GPU", "[cli][snapshot][errors]") {
  const fstest::TempDir tmp;
  const std::string dir = (tmp.path / "g").string();
  const std::string bad[][2] = {
      {"gpu --n 4096 --d 64 --M 1024 --snapshots " + dir, "over the cap of 1024 MiB"},
      {"gpu --n 40 --d 8 --snapshots " + dir + " --out-o " + (tmp.path / "o.npy").string(), "drop --out-o"},
      {"gpu --n 40 --d 8 --snapshots " + (tmp.path / "no" / "such").string(), "its parent folder"},
      {"gpu --n 40 --d 8 --backward --dtype bf16 --snapshots " + dir, "the GPU backward runs in float32 only"},
  };
  for (const auto& b : bad) {
    CAPTURE(b[0]);
    const Outcome r = run_flashstep(b[0]);
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(one_error_line(r.out));
    CHECK(r.out.find(b[1]) != std::string::npos);  // in every build (app/gpu_requests.cpp)
  }
  CHECK_FALSE(fsys::exists(dir));
}
