// Snapshot folders of flash-decoding (core/snapshot.h): the partials O^(s), lse^(s) one snapshot
// per split, their round trip through the writer and the reader (-inf lse of a row a split keeps
// no key of included), the reader's checks of the partials and of version 1 folders, and
// `compare` finding a perturbed partial.
#include "core/schedules/decode/decode.h"
#include "core/npy.h"
#include "core/snapshot.h"
#include "core/tolerance.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

// Ragged blocks, Nq != Nk; `causal`: causal with a window of 6 keys to the left (rows see keys
// r + 30 .. r + 36 of 47), so the first splits keep no key of any row: lse^(s) = -inf there.
Trace decode_run(int64_t splits, bool causal, uint64_t seed, Dtype dtype = Dtype::fp32) {
  ProblemSpec s;
  s.nq = 11;
  s.nk = 47;
  s.d = 6;
  s.br = 4;
  s.bc = 5;  // Tc = 10
  s.schedule = Schedule::decode;
  s.splits = splits;
  s.seed = seed;
  s.options.mask.causal = causal;
  if (causal) s.options.mask.window_left = 6;
  s.options.dtype = dtype;
  const Problem p = make_problem(s);
  RunOptions opt;
  opt.record = true;
  return run_problem(p, make_tiling(p), opt);
}

nlohmann::json read_manifest(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j;
  in >> j;
  return j;
}
void write_manifest(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(1) << "\n"; }

using fstest::kBin;
int flashstep_cmd(const std::string& args, std::string& out) { return fstest::run_command(kBin + " " + args, out); }

}  // namespace

TEST_CASE("decode's snapshots hold one partial per split, as phase 1 left it in HBM", "[snapshot][decode]") {
  const int64_t S = GENERATE(2, 3, 10);
  const bool causal = GENERATE(false, true);
  CAPTURE(S, causal);
  const Trace tr = decode_run(S, causal, 40 + uint64_t(S));
  const SnapshotSet set = cpu_snapshots(tr);
  REQUIRE(set.problem.splits == S);
  const std::vector<const SnapshotEntry*> parts = set.phase(SnapshotPhase::partials);
  REQUIRE(int64_t(parts.size()) == S);
  REQUIRE(set.snapshots.size() == parts.size());  // decode has no per-j state
  const int64_t nq = tr.problem.nq;
  int64_t neg_inf = 0;
  for (int64_t s = 0; s < S; ++s) {
    const SnapshotEntry& e = *parts[size_t(s)];
    CHECK(e.split == s);
    const Mat& O = *e.find("O");
    const Mat& lse = *e.find("lse");
    REQUIRE(O.rows() == nq);
    REQUIRE(lse.rows() == nq);
    CHECK_FALSE(O.array().isNaN().any());
    CHECK_FALSE(lse.array().isNaN().any());
    // Against the split computed here from the inputs: lse^(s) = log sum over the split's kept
    // keys of e^(tau q k); a row the split keeps no key of has -inf and O^(s) = 0.
    const SplitRange J = split_range(tr.tiling.Tc, S, s);
    for (int64_t r = 0; r < nq; ++r) {
      double m = -INFINITY;
      std::vector<double> x;
      for (int64_t c = J.j0 * tr.tiling.Bc; c < std::min(J.j1 * tr.tiling.Bc, tr.problem.nk); ++c) {
        if (!tr.problem.mask.allowed(r, c, tr.problem.nk)) continue;
        x.push_back(double(tr.problem.scale) * tr.problem.Q.row(r).cast<double>().dot(tr.problem.K.row(c).cast<double>()));
        m = std::max(m, x.back());
      }
      if (x.empty()) {
        ++neg_inf;
        CHECK(lse(r, 0) == -INFINITY);
        CHECK((O.row(r).array() == 0).all());
        continue;
      }
      double l = 0;
      for (double v : x) l += std::exp(v - m);
      CHECK(lse(r, 0) == Approx(m + std::log(l)).epsilon(1e-5).margin(1e-5));
    }
  }
  if (causal) CHECK(neg_inf > 0);  // the case the files must carry without NaN
  else CHECK(neg_inf == 0);
  // The combine of the partials is the final state.
  const Mat& Of = *set.final_state.find("O");
  for (int64_t r = 0; r < nq; ++r) {
    const double L = tr.lse(r);
    Eigen::RowVectorXd o = Eigen::RowVectorXd::Zero(tr.problem.d);
    for (const SnapshotEntry* e : parts) {
      const double ls = (*e->find("lse"))(r, 0);
      if (ls == -INFINITY) continue;
      o += std::exp(ls - L) * e->find("O")->row(r).cast<double>();
    }
    CHECK((o - Of.row(r).cast<double>()).cwiseAbs().maxCoeff() < 1e-5);
  }
}

TEST_CASE("decode with one split is fa2: no partials", "[snapshot][decode]") {
  const SnapshotSet set = cpu_snapshots(decode_run(1, true, 3));
  CHECK(set.problem.splits == 1);
  CHECK(set.snapshots.empty());
  CHECK(snapshot_count(set.problem, SnapshotPhase::partials) == 0);
}

TEST_CASE("partials survive the writer and the reader bit for bit, -inf included", "[snapshot][decode]") {
  const fstest::TempDir tmp;
  const Dtype dtype = GENERATE(Dtype::fp32, Dtype::bf16);
  const SnapshotSet a = cpu_snapshots(decode_run(4, true, 77, dtype));
  const std::string dir = (tmp.path / "d").string();
  write_snapshots(dir, a);
  const SnapshotSet b = read_snapshots(dir);
  CHECK(first_difference(a.problem, b.problem).empty());
  REQUIRE(b.snapshots.size() == 4);
  for (size_t k = 0; k < 4; ++k) {
    const SnapshotEntry& x = a.snapshots[k];
    const SnapshotEntry& y = b.snapshots[k];
    CHECK(y.phase == SnapshotPhase::partials);
    CHECK(y.split == int64_t(k));
    CHECK(y.j == -1);
    for (const char* t : {"O", "lse"}) CHECK((x.find(t)->array() == y.find(t)->array()).all());
  }
  const nlohmann::json m = read_manifest(dir + "/manifest.json");
  CHECK(m["version"] == 2);
  CHECK(m["problem"]["splits"] == 4);
  CHECK(m["snapshots"][2]["phase"] == "partials");
  CHECK(m["snapshots"][2]["s"] == 2);
  CHECK_FALSE(m["snapshots"][2].contains("j"));
  CHECK(m["snapshots"][2]["files"]["lse"] == "partials_s0002_lse.npy");
  const NpyArray lse = read_npy(dir + "/partials_s0003_lse.npy");
  CHECK(lse.shape == std::vector<int64_t>{11});
  CHECK(std::count(lse.data.begin(), lse.data.end(), -INFINITY) > 0);
  // A folder of another S is another problem.
  const SnapshotSet c = cpu_snapshots(decode_run(5, true, 77, dtype));
  CHECK(first_difference(a.problem, c.problem).rfind("splits (4 here, 5 there)", 0) == 0);
}

TEST_CASE("the reader checks the partials as strictly as the other phases", "[snapshot][decode][errors]") {
  const fstest::TempDir tmp;
  const std::string good = (tmp.path / "good").string();
  write_snapshots(good, cpu_snapshots(decode_run(3, false, 9)));
  struct Bad {
    const char* name;
    void (*edit)(nlohmann::json&);
    const char* says;
  };
  const Bad bad[] = {
      {"missing", [](nlohmann::json& m) { m["snapshots"].erase(2); }, "snapshots: has 2 entries"},
      {"order", [](nlohmann::json& m) { m["snapshots"][1]["s"] = 2; }, "snapshots[1].s: must be 1 here"},
      {"with_j", [](nlohmann::json& m) { m["snapshots"][0]["j"] = 0; }, "snapshots[0].j: a partials snapshot has s"},
      {"phase", [](nlohmann::json& m) { m["snapshots"][0]["phase"] = "forward"; }, "snapshots[0].phase: must be \"partials\""},
      {"splits", [](nlohmann::json& m) { m["problem"]["splits"] = 11; }, "problem.splits: must be in 1..10"},
      {"no_splits", [](nlohmann::json& m) { m["problem"].erase("splits"); }, "problem.splits: missing"},
      {"tensor", [](nlohmann::json& m) { m["snapshots"][0]["files"].erase("lse"); }, "snapshots[0].files: must name exactly O, lse"},
      {"v1", [](nlohmann::json& m) { m["version"] = 1; }, "problem.splits: is not a field of version 1"},
      {"v3", [](nlohmann::json& m) { m["version"] = 3; }, "version: 3 is not supported"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.name);
    const fsys::path d = tmp.path / b.name;
    fsys::copy(good, d);
    nlohmann::json m = read_manifest((d / "manifest.json").string());
    b.edit(m);
    write_manifest((d / "manifest.json").string(), m);
    try {
      read_snapshots(d.string());
      FAIL("read a bad folder");
    } catch (const InputError& e) {
      CAPTURE(e.what());
      CHECK(std::string(e.what()).find(b.says) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
  // A partial's file of the wrong shape names the file.
  const fsys::path d = tmp.path / "shape";
  fsys::copy(good, d);
  const float x[3] = {1, 2, 3};
  write_npy((d / "partials_s0001_lse.npy").string(), x, {3});
  CHECK_THROWS_WITH(read_snapshots(d.string()), Catch::Contains("partials_s0001_lse.npy: shape (3,)"));
}

TEST_CASE("version 1 folders stay readable", "[snapshot][decode]") {
  const fstest::TempDir tmp;
  // A version 1 folder as the writer of version 1 made it: no problem.splits, no partials.
  auto as_v1 = [&](const std::string& dir) {
    nlohmann::json m = read_manifest(dir + "/manifest.json");
    m["version"] = 1;
    m["problem"].erase("splits");
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& e : m["snapshots"])
      if (e["phase"] != "partials") kept.push_back(e);
      else for (const auto& [t, f] : e["files"].items()) fsys::remove(dir + "/" + f.get<std::string>());
    m["snapshots"] = kept;
    write_manifest(dir + "/manifest.json", m);
  };
  ProblemSpec spec;
  spec.nq = 9, spec.nk = 13, spec.d = 4, spec.br = 4, spec.bc = 4, spec.schedule = Schedule::fa2;
  const Problem p = make_problem(spec);
  RunOptions opt;
  opt.record = true;
  const std::string fa2 = (tmp.path / "fa2").string(), dec = (tmp.path / "decode").string();
  write_snapshots(fa2, cpu_snapshots(run_problem(p, make_tiling(p), opt)));
  as_v1(fa2);
  const SnapshotSet a = read_snapshots(fa2);
  CHECK(a.problem.splits == 1);
  CHECK(a.phase(SnapshotPhase::forward).size() == 4);
  write_snapshots(dec, cpu_snapshots(decode_run(3, true, 5)));
  as_v1(dec);
  const SnapshotSet b = read_snapshots(dec);
  CHECK(b.problem.splits == 0);  // not recorded
  CHECK(b.snapshots.empty());
  CHECK(b.final_state.find("lse") != nullptr);
}

TEST_CASE("compare finds a perturbed partial at its split, and takes -inf against -inf", "[cli][snapshot][decode]") {
  const fstest::TempDir tmp;
  const std::string flags = "run --schedule decode --nq 11 --nk 47 --d 6 --br 4 --bc 5 --splits 3 --causal --window 6,0 --seed 12";
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  std::string out;
  REQUIRE(flashstep_cmd(flags + " --snapshots " + a, out) == 0);
  REQUIRE(flashstep_cmd(flags + " --snapshots " + b, out) == 0);
  REQUIRE(flashstep_cmd("compare --snapshots " + a + " --against " + b, out) == 0);
  CAPTURE(out);
  CHECK(out.find("partials: O^(s), lse^(s)") != std::string::npos);
  CHECK(out.find("PASS: every tensor within tolerance") != std::string::npos);
  // Against the run flags (the CPU engine run again).
  const std::string run_flags = flags.substr(4);
  CHECK(flashstep_cmd("compare --snapshots " + a + " " + run_flags, out) == 0);
  // O^(1) moved by 0.9 and 1.1 times the float32 tolerance of its largest element.
  const SnapshotSet ref = read_snapshots(b);
  const Mat& O1 = *ref.snapshots[1].find("O");
  const double tol = snapshot_tolerance(ref.problem, SnapshotPhase::partials, "O");
  CHECK(tol == kTiledTol);
  for (double factor : {0.9, 1.1}) {
    CAPTURE(factor);
    NpyArray arr = read_npy(b + "/partials_s0001_O.npy");
    size_t at = 0;
    for (size_t k = 0; k < arr.data.size(); ++k)
      if (std::abs(arr.data[k]) > std::abs(arr.data[at])) at = k;
    arr.data[at] += float(factor * tol * O1.cwiseAbs().maxCoeff());
    const fsys::path c = tmp.path / ("c" + std::to_string(int(factor * 10)));
    fsys::copy(b, c);
    write_npy((c / "partials_s0001_O.npy").string(), arr.data.data(), arr.shape);
    const int rc = flashstep_cmd("compare --snapshots " + c.string() + " --against " + a, out);
    if (factor < 1) {
      CHECK(rc == 0);
    } else {
      CHECK(rc == 1);
      CHECK(out.find("FAIL: 1 over tolerance; the first at partials s = 1: O rel") != std::string::npos);
    }
  }
  // A -inf lse^(s) (a row the split keeps no key of) made finite, or NaN: over tolerance.
  for (float x : {0.0f, NAN}) {
    CAPTURE(x);
    NpyArray arr = read_npy(b + "/partials_s0000_lse.npy");
    const auto it = std::find(arr.data.begin(), arr.data.end(), -INFINITY);
    REQUIRE(it != arr.data.end());
    *it = x;
    const fsys::path c = tmp.path / (std::isnan(x) ? "nan" : "finite");
    fsys::copy(b, c);
    write_npy((c / "partials_s0000_lse.npy").string(), arr.data.data(), arr.shape);
    CHECK(flashstep_cmd("compare --snapshots " + c.string() + " --against " + a, out) == 1);
    CHECK(out.find(std::isnan(x) ? "the first at partials s = 0: lse holds a NaN at entry " : "the first at partials s = 0: lse rel") !=
          std::string::npos);
  }
  // Folders of another S are another problem.
  const std::string d = (tmp.path / "d").string();
  REQUIRE(flashstep_cmd("run --schedule decode --nq 11 --nk 47 --d 6 --br 4 --bc 5 --splits 4 --causal --window 6,0 --seed 12 "
                        "--snapshots " + d, out) == 0);
  CHECK(flashstep_cmd("compare --snapshots " + d + " --against " + a, out) == 2);
  CHECK(out.find("splits (4 in ") != std::string::npos);
}
