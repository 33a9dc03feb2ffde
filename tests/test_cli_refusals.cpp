// Command lines that must be refused whole: one short `flashstep: error:` line, exit code 2, and
// every file in the folder as it was (tests/hardening_helpers.h's check_refused): outputs that
// collide with the snapshot folder or cannot be written, integer flags typed with a leading
// zero, results that overflow, work past the limits, malformed .npy files and manifests.
#include "core/npy.h"
#include "core/snapshot.h"
#include "hardening_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

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

TEST_CASE("whole-number flags read decimal: a leading zero is not octal", "[cli][refusals][numbers]") {
  struct Case {
    const char* cmd;  // X stands for the value
    const char* padded;
    const char* plain;
  };
  const Case cases[] = {{"run --n X", "010", "10"},
                        {"run --n X", "08", "8"},
                        {"run --seed X", "010", "10"},
                        {"run --n 16 --kv-len X", "010", "10"},
                        {"run --d X", "08", "8"},
                        {"run --n 32 --br X", "08", "8"},
                        {"run --schedule decode --splits X", "03", "3"},
                        {"run --schedule decode --page-size X", "016", "16"},
                        {"run --gpu h200 --heads X", "010", "10"},
                        {"explain --heads X", "010", "10"},
                        {"explain --pipeline --n X", "0256", "256"},
                        {"lesson softmax --block X", "03", "3"},
                        {"learn tiling --seed X < /dev/null", "010", "10"}};
  for (const Case& c : cases) {
    const auto with = [&](const std::string& value) {
      std::string cmd = c.cmd;
      cmd.replace(cmd.find('X'), 1, value);
      return fstest::run_flashstep(cmd);
    };
    const fstest::Outcome padded = with(c.padded), plain = with(c.plain);
    CAPTURE(c.cmd, c.padded, padded.out);
    CHECK(padded.rc == 0);
    CHECK(padded.out == plain.out);
  }
  // Out of a narrower flag's range: the flag named, not CLI11's "Could not convert".
  const fstest::TempDir tmp;
  check_refused(tmp.path, "bench-gpu --reps 99999999999", "--reps is out of the range this flag takes");
  check_refused(tmp.path, "run --backward=xyz", "--backward is a flag");
  for (const char* args : {"bench-gpu --reps 99999999999", "run --backward=xyz", "run --n 08x"}) {
    const fstest::Outcome r = fstest::run_flashstep(args);
    CAPTURE(args, r.out);
    CHECK(r.out.find("Could not convert") == std::string::npos);
  }
}

TEST_CASE("real numbers and windows are read as decimal text, whole", "[cli][refusals][numbers]") {
  const fstest::TempDir tmp;
  // strtod alone would read hexadecimal (0x10 = 16) and sscanf("%lld,%lld") skips spaces.
  check_refused(tmp.path, "run --scale 0x10", "scale must be a finite decimal number (got '0x10')");
  check_refused(tmp.path, "run --dropout 0x0.8", "dropout must be a finite decimal number (got '0x0.8')");
  check_refused(tmp.path, "run --max-gflop 0x10", "--max-gflop must be a finite decimal number (got '0x10')");
  check_refused(tmp.path, "verify --tol 0x10", "--tol must be a finite decimal number (got '0x10')");
  for (const char* window : {"'1, 2'", "'1 ,2'", "1,0x2", "1,2,3", "1", "1:2", "+1,2", "1e1,2", ",2", "1,"})
    check_refused(tmp.path, std::string("run --n 16 --window ") + window, "--window must be LEFT,RIGHT");
  // What is decimal still runs, the same as its plain spelling.
  const fstest::Outcome a = fstest::run_flashstep("run --n 16 --window 04,-1 --scale 0.50"),
                        b = fstest::run_flashstep("run --n 16 --window 4,-1 --scale .5");
  CAPTURE(a.out);
  CHECK(a.rc == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("no inf as a result: an overflowing companion is said in words, an overflowing lesson refused", "[cli][refusals][overflow]") {
  const fstest::Outcome r = fstest::run_flashstep("run --dtype fp16 --pattern outliers --scale 100");
  CAPTURE(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("standard   in fp16: the result overflows fp16 storage on these inputs") != std::string::npos);
  CHECK(r.out.find("inf") == std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  // The same run in bf16 keeps its figures.
  CHECK(fstest::run_flashstep("run --dtype bf16 --pattern outliers --scale 100").out.find("standard   in bf16: O max abs") !=
        std::string::npos);
  const fstest::TempDir tmp;
  check_refused(tmp.path, "lesson softmax --values 1e308,1e308 --v 1e308,1e308", "the lesson overflows double");
  check_refused(tmp.path, "lesson softmax --values 1,1,1 --block 1 --v 1e308,1e308,1e308", "the lesson overflows double");
  CHECK(fstest::run_flashstep("lesson softmax --values 1,2 --v 1e308,1e308").rc == 0);
}

TEST_CASE("bench-cpu estimates its work and memory before printing anything", "[cli][refusals][bench-cpu]") {
  const fstest::TempDir tmp;
  check_refused(tmp.path, "bench-cpu --reps 1000000", "--reps must be in 1..1000");
  check_refused(tmp.path, "bench-cpu --reps 0", "--reps must be in 1..1000");
  check_refused(tmp.path, "bench-cpu --n 268435456 --reps 1", "bench-cpu: these sizes and repetitions are about");
  check_refused(tmp.path, "bench-cpu --n 100000", "use smaller --n or --d, or fewer --reps");
  check_refused(tmp.path, "bench-cpu --n 64 4096 --reps 1000", "GFLOP of simulated work");
  check_refused(tmp.path, "bench-cpu --n 30000 --d 1 --M 4096 --reps 1", "standard attention would need about");
  check_refused(tmp.path, "bench-cpu --n 64 --d 64 --M 8", "smaller than 4d");
  const fstest::Outcome ok = fstest::run_flashstep("bench-cpu --n 8 12 --d 8 --M 64 --reps 3 --json");
  CAPTURE(ok.out);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("\"fa1_fast_s\"") != std::string::npos);
}

TEST_CASE("a .npy file holds exactly its shape's data, and its dimensions have no leading zero", "[cli][refusals][npy]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const auto header = [](const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const std::string floats32(32 * 4, '\0'), floats33(33 * 4, '\0');
  fstest::write_npy_text(dir / "exact.npy", header("(8, 4)"), floats32);
  fstest::write_npy_text(dir / "longer.npy", header("(8, 4)"), floats33);
  fstest::write_npy_text(dir / "zero.npy", header("(08, 4)"), floats32);
  fstest::write_npy_text(dir / "zero2.npy", header("(8, 04)"), floats32);
  CHECK(read_npy((dir / "exact.npy").string()).data.size() == 32);
  CHECK_THROWS_WITH(read_npy((dir / "longer.npy").string()), Catch::Contains("more than its shape holds"));
  CHECK_THROWS_WITH(read_npy((dir / "zero.npy").string()), Catch::Contains("dimension 08 has a leading zero"));
  CHECK_THROWS_WITH(read_npy((dir / "zero2.npy").string()), Catch::Contains("dimension 04 has a leading zero"));
  const std::string kv = " --k " + (dir / "exact.npy").string() + " --v " + (dir / "exact.npy").string();
  check_refused(dir, "run --q " + (dir / "longer.npy").string() + kv, "more than its shape holds");
  check_refused(dir, "run --q " + (dir / "zero.npy").string() + kv, "has a leading zero");
  // The fuzz corpus's seeds stay readable or a one-line InputError (tests/fuzz/fuzz_npy.cpp).
  for (const auto& e : fsys::directory_iterator(fsys::path(FLASHSTEP_FIXTURES_DIR) / ".." / "fuzz" / "corpus" / "npy")) {
    CAPTURE(e.path().string());
    try {
      read_npy(e.path().string());
    } catch (const InputError& err) {
      CHECK(std::string(err.what()).find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("compare refuses a manifest field it does not know, at every level", "[cli][refusals][compare]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string good = refusal_snapshots(dir, "good", kRefusalSmall);
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const Case cases[] = {
      {"schedule", [](nlohmann::json& m) { m["schedule"] = "xx"; }, "schedule: unknown schedule 'xx'"},
      {"problem-schedule", [](nlohmann::json& m) { m["problem"]["schedule"] = "xx"; }, "problem.schedule: is not a field of problem"},
      {"top", [](nlohmann::json& m) { m["extra"] = 1; }, "extra: is not a field of the manifest"},
      {"mask", [](nlohmann::json& m) { m["problem"]["mask"]["foo"] = true; }, "problem.mask.foo: is not a field"},
      {"entry", [](nlohmann::json& m) { m["snapshots"][0]["note"] = "x"; }, "snapshots[0].note: is not a field"},
      {"final", [](nlohmann::json& m) { m["final"]["x"] = 1; }, "final.x: is not a field"},
  };
  for (const Case& c : cases) {
    const fsys::path d = dir / c.name;
    fsys::copy(good, d);
    nlohmann::json m = nlohmann::json::parse(fstest::read_text(d / "manifest.json"));
    c.edit(m);
    fstest::write_text(d / "manifest.json", m.dump(1));
    check_refused(dir, "compare --snapshots " + d.string() + " --against " + good, c.expect);
  }
  std::string out;
  CHECK(fstest::run_command(kBin + " compare --snapshots " + good + " --against " + good, out) == 0);
}

TEST_CASE("a check's message that names its flag is printed without the flag again in front", "[cli][refusals][messages]") {
  const fstest::TempDir tmp;
  const std::pair<const char*, std::string> cases[] = {{"run --max-gflop x", "--max-gflop"},
                                                       {"run --gpu h200 --heads 99999999999999999999", "--heads"},
                                                       {"run --max-trace-mib 1e3", "--max-trace-mib"}};
  for (const auto& [args, flag] : cases) {
    check_refused(tmp.path, args, "flashstep: error: " + flag + " ");
    const fstest::Outcome r = fstest::run_flashstep(args);
    CAPTURE(r.out);
    CHECK(r.out.find(flag + ": " + flag) == std::string::npos);
  }
  // A message about the quantity keeps the flag in front: it names both.
  check_refused(tmp.path, "run --n 0x10", "--n: N must be a whole number (got '0x10')");
}

TEST_CASE("messages read as sentences: a hidden flag's check, one page, bench-cpu's --M in KiB", "[cli][refusals]") {
  // CLI11 gives a hidden option's check no name: its message is not ": --back must be ...".
  const fstest::TempDir tmp;
#if FLASHSTEP_HAVE_GUI_CLI
  check_refused(tmp.path, "gui --back -1", "--back must be >= 0 (got -1)");
  const fstest::Outcome back = fstest::run_flashstep("gui --back -1");
  CHECK(back.out.find(": :") == std::string::npos);
#endif
  // One page of K, V is "1 page".
  const fstest::Outcome one = fstest::run_flashstep("run --schedule decode --nq 1 --nk 64 --d 8 --page-size 64");
  CAPTURE(one.out);
  CHECK(one.out.find("K, V in 1 page at shuffled places") != std::string::npos);
  // bench-cpu reads --M as run does: 4KiB is 1024 elements; 0x10 is no size.
  const fstest::Outcome kib = fstest::run_flashstep("bench-cpu --n 128 --M 4KiB --reps 1 --json");
  CAPTURE(kib.out);
  REQUIRE(kib.rc == 0);
  CHECK(kib.out.find("\"M\": 1024") != std::string::npos);
  check_refused(tmp.path, "bench-cpu --n 128 --M 0x10 --reps 1", "M: unknown unit 'x10'");
}
