// Command lines that must be refused whole: one short `flashstep: error:` line, exit code 2, and
// every file in the folder as it was (tests/hardening_helpers.h's check_refused): outputs that
// collide with the snapshot folder or cannot be written, integer flags typed with a leading
// zero, results that overflow, work past the limits, malformed .npy files and manifests.
#include "core/snapshot.h"
#include "hardening_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::check_refused;
using fstest::kBin;

const char* kRefusalSmall = "--schedule fa1 --nq 12 --nk 10 --d 4 --br 4 --bc 3 --M 64";

// A snapshot folder DIR/NAME written by `flashstep run` with `flags`.
std::string refusal_snapshots(const fsys::path& dir, const std::string& name, const std::string& flags) {
  const std::string d = (dir / name).string();
  std::string out;
  REQUIRE(fstest::run_command(kBin + " run " + flags + " --snapshots " + d, out) == 0);
  return d;
}

}  // namespace

TEST_CASE("a run refused at its outputs leaves the snapshot folder as it was and creates none", "[cli][refusals][snapshots]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string run = std::string("run ") + kRefusalSmall;
  const std::string snap = refusal_snapshots(dir, "snapA", run.substr(4) + " --seed 1");
  // /proc takes no new file, even from root: the output passes the checks made before the run
  // and fails only when its temporary is created.
  check_refused(dir, run + " --seed 2 --snapshots " + snap + " --out-o /proc/flashstep_o.npy", "/proc");
  check_refused(dir, run + " --seed 2 --snapshots " + (dir / "fresh").string() + " --trace /proc/flashstep_t.json", "/proc");
  check_refused(dir, run + " --snapshots " + (dir / "ns3").string() + " --out-o " + (dir / "ns3").string(),
                "is the --snapshots folder");
  CHECK(read_snapshots(snap).problem.seed == 1);
}

TEST_CASE("no other output may be the snapshot folder or lie inside it", "[cli][refusals][snapshots]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string run = std::string("run ") + kRefusalSmall;
  const std::string s1 = refusal_snapshots(dir, "s1", kRefusalSmall);
  fsys::create_directory_symlink(s1, dir / "link");
  for (const std::string& out : {"--trace " + s1 + "/manifest.json", "--out-lse " + s1 + "/forward_j0003_O.npy",
                                 "--csv " + s1 + "/extra.csv", "--chrome " + (dir / "link" / "extra.json").string(),
                                 "--out-o " + s1 + "/./sub/../o.npy"})
    check_refused(dir, run + " --snapshots " + s1 + " " + out, "lies inside the --snapshots folder");
  check_refused(dir, run + " --snapshots " + s1 + " --trace " + (dir / "link").string(), "is the --snapshots folder");
  // Beside the folder (a name that only begins like it) is fine.
  std::string text;
  CHECK(fstest::run_command(kBin + " " + run + " --snapshots " + s1 + " --out-o " + s1 + "x.npy", text) == 0);
  CHECK(fsys::exists(s1 + "x.npy"));
}
