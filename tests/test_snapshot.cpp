// Snapshot folders (core/snapshot.h): what the CPU engine's snapshots hold, the writer's
// round trip through the reader, and the reader's one-line errors for each bad folder.
#include "core/snapshot.h"
#include "core/npy.h"
#include "core/reference.h"
#include "test_helpers.h"
#include "test_files.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <random>
#include <nlohmann/json.hpp>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

struct Run {
  Trace tr;
  Mat dO;
};

// A ragged problem (Nq != Nk, neither divisible by its block size) with fresh random inputs.
Run run(Schedule sched, bool backward, const AttentionOptions& o, uint64_t seed) {
  ProblemSpec s;
  s.nq = 37;
  s.nk = 29;
  s.d = 8;
  s.br = 8;
  s.bc = 6;
  s.schedule = sched;
  s.seed = seed;
  s.options = o;
  const Problem p = make_problem(s);
  Run r;
  RunOptions opt;
  if (backward) {
    r.dO = make_input("random", p.nq, p.d, seed + 101, 0);
    opt.dO = &r.dO;
  }
  r.tr = run_problem(p, make_tiling(p), opt);
  return r;
}

AttentionOptions masked(int which) {
  AttentionOptions o;
  if (which == 1) o.mask.causal = true;  // Nq > Nk, bottom-right: the first 8 rows see no key
  if (which == 2) o.mask.window_left = 5, o.mask.window_right = 2, o.dropout = 0.2;  // rows 0..5 see no key
  if (which == 3) o.mask.kv_len = 17, o.dtype = Dtype::bf16;
  return o;
}

using fstest::read_text;
using fstest::write_text;

std::string error_of(const std::string& dir) {
  try {
    read_snapshots(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("CPU snapshots hold the state after each j and end at the final O and lse", "[snapshot]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2);
  const int which = GENERATE(0, 1, 2, 3);
  const uint64_t seed = 1000 + uint64_t(which);
  const Run r = run(sched, false, masked(which), seed);
  const SnapshotSet s = cpu_snapshots(r.tr);
  const SnapshotProblem& p = s.problem;
  CAPTURE(schedule_name(sched), which);
  REQUIRE(p.Tc == 5);
  REQUIRE(s.snapshots.size() == 5);
  const SnapshotEntry& last = s.snapshots.back();
  const Mat& O = *last.find("O");
  const Mat& l = *last.find("l");
  const Mat& m = *last.find("m");
  int64_t unseen = 0;
  for (int64_t r0 = 0; r0 < p.nq; ++r0) {
    if (m(r0, 0) == -INFINITY) {  // a row that keeps no key: nothing accumulated
      ++unseen;
      CHECK(l(r0, 0) == 0);
      CHECK(O.row(r0).isZero());
      CHECK(r.tr.lse(r0) == -INFINITY);
      continue;
    }
    // lse = m + log l at the last j; fa1's O is normalised in HBM, fa2's O_i is divided by l_i
    // only after the loop (FA2fwd L12).
    CHECK(r.tr.lse(r0) == Approx(m(r0, 0) + std::log(l(r0, 0))).margin(1e-5));
    const Eigen::RowVectorXf o = sched == Schedule::fa1 ? Eigen::RowVectorXf(O.row(r0)) : Eigen::RowVectorXf(O.row(r0) / l(r0, 0));
    // fa1 stores O in bf16 at every j (which == 3), so compare to a ulp of bf16 there.
    CHECK((o - r.tr.O.row(r0)).cwiseAbs().maxCoeff() <= (which == 3 ? 2e-2 : 1e-5) * (1 + r.tr.O.row(r0).cwiseAbs().maxCoeff()));
  }
  CHECK(unseen == (which == 1 ? 8 : which == 2 ? 6 : 0));  // window 5,2 at offset -8: rows 0..5
  // Before the last j the state differs from the final one (the snapshots move with j).
  CHECK_FALSE(s.snapshots[1].find("m")->isApprox(m));
}

// Snapshot j holds the state after keys [0, (j+1) Bc): the float64 reference over that prefix of
// the keys (the mask cut at (j+1) Bc, dropout by the same Philox mask) gives O, and m + log l
// gives its lse; m is the largest kept score tau q_r k_c of the prefix. An off-by-one in j moves
// the prefix by Bc = 6 keys, far beyond these tolerances.
TEST_CASE("CPU snapshot j equals the float64 reference over the keys of blocks 0..j", "[snapshot]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2);
  const int which = GENERATE(0, 1, 2, 3);
  const Run r = run(sched, false, masked(which), std::random_device{}());
  const SnapshotSet s = cpu_snapshots(r.tr);
  const Problem& p = r.tr.problem;
  const int64_t Bc = r.tr.tiling.Bc;
  CAPTURE(schedule_name(sched), which, p.seed);
  REQUIRE(s.snapshots.size() == size_t(r.tr.tiling.Tc));
  // bf16 storage (which == 3): fa1 rounds O to bf16 (u = 2^-8) at every j; else float32 sums.
  const double tol = which == 3 ? 2e-2 : 1e-5;
  for (const SnapshotEntry& sn : s.snapshots) {
    CAPTURE(sn.j);
    const int64_t keys = std::min((sn.j + 1) * Bc, p.nk);
    Mask prefix = p.mask;
    prefix.kv_len = prefix.kv_len >= 0 ? std::min(prefix.kv_len, keys) : keys;
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, prefix, p.dropout, p.seed);
    const Mat& O = *sn.find("O");
    const Mat& l = *sn.find("l");
    const Mat& m = *sn.find("m");
    MatD o(p.nq, p.d);
    VecD lse(p.nq), mref(p.nq);
    for (int64_t row = 0; row < p.nq; ++row) {
      mref(row) = -INFINITY;
      for (int64_t c = 0; c < p.nk; ++c)
        if (prefix.allowed(row, c, p.nk))
          mref(row) = std::max(mref(row), double(p.scale) * p.Q.row(row).cast<double>().dot(p.K.row(c).cast<double>()));
      const bool none = m(row, 0) == -INFINITY;
      lse(row) = none ? -INFINITY : double(m(row, 0)) + std::log(double(l(row, 0)));
      // fa1's O in HBM is normalised at every j; fa2's O_i^(j) is divided by l_i after the loop.
      o.row(row) = (sched == Schedule::fa1 || none ? O.row(row) : Eigen::RowVectorXf(O.row(row) / l(row, 0))).cast<double>();
    }
    CHECK(compare(o.cast<float>(), ref.O).max_rel <= tol);
    CHECK(compare(Vec(lse.cast<float>()), ref.lse).max_rel <= tol);
    CHECK(compare(Vec(m.col(0)), mref).max_rel <= tol);
  }
}

TEST_CASE("a snapshot folder reads back exactly what was written, and names files that exist", "[snapshot]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const bool backward = GENERATE(false, true);
  CAPTURE(schedule_name(sched), backward);
  const Run r = run(sched, backward, masked(1), 77);
  const SnapshotSet s = cpu_snapshots(r.tr, backward ? &r.dO : nullptr);
  const fstest::TempDir tmp;
  const std::string dir = (tmp.path / "snaps").string();
  write_snapshots(dir, s);
  const SnapshotSet b = read_snapshots(dir);
  CHECK(first_difference(s.problem, b.problem).empty());
  CHECK(b.source == "cpu");
  const size_t per_j = sched == Schedule::standard ? 0 : (backward ? 10 : 5);
  REQUIRE(b.snapshots.size() == per_j);
  REQUIRE(s.snapshots.size() == per_j);
  size_t files = 1;  // the manifest
  for (size_t k = 0; k <= per_j; ++k) {
    const SnapshotEntry& x = k < per_j ? s.snapshots[k] : s.final_state;
    const SnapshotEntry& y = k < per_j ? b.snapshots[k] : b.final_state;
    CHECK(x.phase == y.phase);
    CHECK(x.j == y.j);
    REQUIRE(x.tensors.size() == y.tensors.size());
    for (size_t t = 0; t < x.tensors.size(); ++t) {
      CHECK(y.tensors[t].name == x.tensors[t].name);
      CHECK((y.tensors[t].data.array() == x.tensors[t].data.array()).all());  // -inf == -inf too
      // The manifest's names resolve to .npy files numpy can load (npy.cpp writes NumPy's header).
      const NpyArray a = read_npy(dir + "/" + y.tensors[t].file);
      CHECK(a.shape[0] == x.tensors[t].data.rows());
      ++files;
    }
  }
  CHECK((b.final_state.find("dQ") != nullptr) == backward);
  CHECK(size_t(std::distance(fsys::directory_iterator(dir), fsys::directory_iterator())) == files);
  // Written again over itself: replaced, not refused.
  write_snapshots(dir, s);
  CHECK(read_snapshots(dir).snapshots.size() == per_j);
}

TEST_CASE("the snapshot reader refuses each bad folder with one line naming the fault", "[snapshot][errors]") {
  const Run r = run(Schedule::fa1, false, masked(0), 5);
  const SnapshotSet s = cpu_snapshots(r.tr);
  const fstest::TempDir tmp;
  auto fresh = [&](const std::string& name) {
    const std::string dir = (tmp.path / name).string();
    write_snapshots(dir, s);
    return dir;
  };
  const fsys::path npy = "forward_j0002_O.npy";
  {
    const std::string d = fresh("missing");
    fsys::remove(d / npy);
    CHECK_THAT(error_of(d), Catch::Contains("forward_j0002_O.npy: cannot open file"));
  }
  {
    const std::string d = fresh("truncated");
    fsys::resize_file(d / npy, fsys::file_size(d / npy) - 7);
    CHECK_THAT(error_of(d), Catch::Contains("forward_j0002_O.npy") && Catch::Contains("truncated"));
  }
  {
    const std::string d = fresh("shape");
    const Mat wrong = Mat::Ones(3, 4);
    write_npy((fsys::path(d) / npy).string(), wrong);
    CHECK_THAT(error_of(d), Catch::Contains("shape (3, 4) disagrees with the manifest's problem, which needs (37, 8)"));
  }
  const auto edit = [&](const std::string& name, const std::function<void(nlohmann::json&)>& f) {
    const std::string d = fresh(name);
    nlohmann::json m = nlohmann::json::parse(read_text(fsys::path(d) / "manifest.json"));
    f(m);
    write_text(fsys::path(d) / "manifest.json", m.dump());
    return error_of(d);
  };
  CHECK_THAT(edit("nofield", [](auto& m) { m["problem"].erase("nk"); }), Catch::Contains("problem.nk: missing"));
  CHECK_THAT(edit("type", [](auto& m) { m["problem"]["d"] = "8"; }), Catch::Contains("problem.d: must be a whole number"));
  CHECK_THAT(edit("tc", [](auto& m) { m["problem"]["Tc"] = 4; }), Catch::Contains("problem.Tc: 4 is not ceil(nk / Bc) = 5"));
  CHECK_THAT(edit("sched", [](auto& m) { m["schedule"] = "fa3"; }), Catch::Contains("schedule: unknown schedule 'fa3'"));
  CHECK_THAT(edit("count", [](auto& m) { m["snapshots"].erase(4); }), Catch::Contains("snapshots: has 4 entries"));
  CHECK_THAT(edit("order", [](auto& m) { std::swap(m["snapshots"][0], m["snapshots"][1]); }),
             Catch::Contains("snapshots[0].j: must be 0 here"));
  CHECK_THAT(edit("escape", [](auto& m) { m["snapshots"][0]["files"]["O"] = "../x.npy"; }),
             Catch::Contains("snapshots[0].files.O: '../x.npy' is not a plain .npy file name"));
  CHECK_THAT(edit("version", [](auto& m) { m["version"] = 3; }), Catch::Contains("version: 3 is not supported"));
  CHECK_THAT(edit("huge", [](auto& m) { m["problem"]["nq"] = 1 << 26; m["problem"]["Tr"] = (1 << 26) / 8; }),
             Catch::Contains("over the cap of 1024 MiB"));
  {
    const std::string d = fresh("malformed");
    write_text(fsys::path(d) / "manifest.json", "{\"format\": \"flashstep-snapshots\", \"version\": ");
    CHECK_THAT(error_of(d), Catch::Contains("manifest.json: malformed JSON at byte"));
  }
  CHECK_THAT(error_of((tmp.path / "nowhere").string()), Catch::Contains("nowhere: cannot open the snapshot folder"));
}

TEST_CASE("the snapshot writer refuses a folder it did not write and an oversized problem, writing nothing", "[snapshot][errors]") {
  const Run r = run(Schedule::fa2, false, masked(2), 9);
  const SnapshotSet s = cpu_snapshots(r.tr);
  const fstest::TempDir tmp;
  const fsys::path mine = tmp.path / "mine";
  fsys::create_directories(mine);
  write_text(mine / "notes.txt", "keep me");
  CHECK_THROWS_WITH(write_snapshots(mine.string(), s), Catch::Contains("holds files but no manifest.json"));
  CHECK(read_text(mine / "notes.txt") == "keep me");
  CHECK_THROWS_WITH(write_snapshots((tmp.path / "a" / "b").string(), s), Catch::Contains("does not exist"));
  SnapshotProblem big = s.problem;
  big.nq = big.nk = 32768;
  big.d = 64;
  big.Br = big.Bc = 64;
  big.Tr = big.Tc = 512;
  CHECK_THROWS_WITH(check_snapshot_size(big), Catch::Contains("MiB") && Catch::Contains("over the cap"));
  // Only `mine` is in the temporary folder: no staging folder was left behind.
  CHECK(size_t(std::distance(fsys::directory_iterator(tmp.path), fsys::directory_iterator())) == 1);
}

TEST_CASE("first_difference names the field where two problems differ", "[snapshot]") {
  const Run a = run(Schedule::fa1, false, masked(1), 3);
  SnapshotProblem p = cpu_snapshots(a.tr).problem, q = p;
  CHECK(first_difference(p, q).empty());
  q.nk = 30;
  CHECK(first_difference(p, q, "in A", "in B") == "nk (29 in A, 30 in B)");
  q = p;
  q.mask.causal = false;
  CHECK(first_difference(p, q) == "mask.causal (true here, false there)");
  q = p;
  q.inputs_hash = "0000000000000000";
  CHECK_THAT(first_difference(p, q), Catch::StartsWith("inputs_hash"));
}
