// `run --snapshots` and `compare` as a user runs them (issue 13): CPU snapshots compare equal to
// themselves, a perturbed value is found at its j with exit 1, and every bad input gets one
// `flashstep: error:` line with exit 2. `gpu --snapshots` refuses bad input before it looks for a
// GPU (a build without CUDA answers with its stub's line).
#include "core/npy.h"
#include "core/snapshot.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <fstream>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

const std::string kBin = FLASHSTEP_BIN;

struct Answer {
  int rc;
  std::string out;
};
Answer flashstep_cmd(const std::string& args) {
  Answer a;
  a.rc = fstest::run_command(kBin + " " + args, a.out);
  return a;
}

bool one_error_line(const std::string& out) {
  return out.rfind("flashstep: error: ", 0) == 0 && out.find('\n') == out.size() - 1;
}

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
  Answer r = flashstep_cmd("run " + flags + " --snapshots " + a);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("snapshots  written to " + a) != std::string::npos);
  REQUIRE(flashstep_cmd("run " + flags + " --snapshots " + b).rc == 0);
  r = flashstep_cmd("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("PASS: every tensor within tolerance") != std::string::npos);
  CHECK(r.out.find(sched == std::string("fa1") ? "after outer step j" : "after inner step j") != std::string::npos);
  CHECK((r.out.find("backward: dQ in HBM after K/V block j") != std::string::npos) == backward);
  r = flashstep_cmd("compare --snapshots " + a + " " + flags);
  CHECK(r.rc == 0);
  CHECK(r.out.find("against the CPU engine on the run flags") != std::string::npos);
  // Every file the manifest names is in the folder, and nothing else is.
  const SnapshotSet s = read_snapshots(a);
  size_t named = 1;
  for (const Snapshot& sn : s.snapshots) named += sn.tensors.size();
  named += s.final_state.tensors.size();
  CHECK(size_t(std::distance(fsys::directory_iterator(a), fsys::directory_iterator())) == named);
}

TEST_CASE("compare finds one perturbed value at its j and exits 1", "[cli][snapshot]") {
  const fstest::TempDir tmp;
  const std::string sched = GENERATE("fa1", "fa2");
  const std::string flags = std::string("--schedule ") + sched + " " + kFlags[1];
  const std::string a = (tmp.path / "a").string(), b = (tmp.path / "b").string();
  REQUIRE(flashstep_cmd("run " + flags + " --snapshots " + a).rc == 0);
  REQUIRE(flashstep_cmd("run " + flags + " --snapshots " + b).rc == 0);
  // One element of O after j = 3 (of Tc = 6), moved by 1e-3 of the largest value.
  const std::string file = a + "/forward_j0003_O.npy";
  NpyArray o = read_npy(file);
  float big = 0;
  for (float x : o.data) big = std::max(big, std::abs(x));
  o.data[5 * 8 + 2] += 1e-3f * big;
  write_npy(file, o.data.data(), o.shape);
  const Answer r = flashstep_cmd("compare --snapshots " + a + " --against " + b);
  CAPTURE(r.out);
  CHECK(r.rc == 1);
  CHECK(r.out.find("the first at forward j = 3: O rel") != std::string::npos);
  CHECK(r.out.find("     3 |") != std::string::npos);
  CHECK(r.out.find("OVER") != std::string::npos);
  // fa1 carries O into the next j, fa2's O_i^(j) too; both sides were written from the same
  // trace, so only the edited file differs: one tensor over.
  CHECK(r.out.find("FAIL: 1 over tolerance") != std::string::npos);
}

TEST_CASE("compare and run --snapshots refuse bad input with one line and exit 2", "[cli][snapshot][errors]") {
  const fstest::TempDir tmp;
  const std::string flags = std::string("--schedule fa1 ") + kFlags[0];
  const std::string good = (tmp.path / "good").string();
  REQUIRE(flashstep_cmd("run " + flags + " --snapshots " + good).rc == 0);
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
  REQUIRE(flashstep_cmd("run --schedule fa1 --nq 45 --nk 39 --d 12 --br 8 --bc 7 --causal --snapshots " + other).rc == 0);
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
       "another problem than the run flags': seed (1 in the folder, 2 from the run flags)"},
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
    const Answer r = flashstep_cmd(b.args);
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
    const Answer r = flashstep_cmd(b[0]);
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(one_error_line(r.out));
    CHECK((r.out.find(b[1]) != std::string::npos ||
           (!FLASHSTEP_BIN_HAS_CUDA && r.out.find("this build has no GPU backend") != std::string::npos)));
  }
  CHECK_FALSE(fsys::exists(dir));
}
