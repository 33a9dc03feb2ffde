// The second hardening round, kept fixed: snapshot folders, compare, plot and run's outputs as
// an adversarial user tries them. Each bad input gives one short `flashstep: error:` line and
// exit code 2, at once (FIFOs under a time limit), and leaves every file in its folder as it was
// (the folder's listing and contents compared before and after).
#include "core/npy.h"
#include "core/snapshot.h"
#include "hardening_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::kBin;

using fstest::read_text;
using fstest::write_text;

using fstest::check_refused;

std::string deep_json(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A small snapshot folder made by the program itself.
std::string snapshot_folder(const fsys::path& dir, const std::string& name, const std::string& flags) {
  const std::string d = (dir / name).string();
  std::string out;
  REQUIRE(fstest::run_command(kBin + " run " + flags + " --snapshots " + d, out) == 0);
  return d;
}

const char* kSmall = "--schedule fa1 --nq 12 --nk 10 --d 4 --br 4 --bc 3 --M 64";

// A bench file of `points` sweep points and one row.
std::string bench_json(size_t points, const std::string& device = "NVIDIA H200") {
  nlohmann::json run = {{"device", device}, {"dtype", "float32"},
                        {"rows", {{{"n", 1024}, {"d", 64}, {"fa1", {{"median_ms", 1.0}, {"tflops", 2.0}, {"peak_bytes", 100}}}}}}};
  nlohmann::json sweep = nlohmann::json::array();
  for (size_t k = 0; k < points; ++k)
    sweep.push_back({{"Bc", 16 + k}, {"Br", 16}, {"n", 1024}, {"d", 64}, {"hbm_bytes_predicted", 1e6}, {"median_ms", 1.0}, {"tflops", 1.0}});
  run["sweep"] = sweep;
  return run.dump();
}

}  // namespace

TEST_CASE("hostile JSON: deep nesting, 1e999 and huge strings give one short line", "[cli][hardening2][json]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string good = snapshot_folder(dir, "good", kSmall);
  const auto variant = [&](const std::string& name, const std::string& field, const std::string& value) {
    const fsys::path d = dir / name;
    fsys::copy(good, d);
    std::string m = read_text(d / "manifest.json");
    const size_t at = m.find("\"" + field + "\":");
    REQUIRE(at != std::string::npos);
    const size_t from = at + field.size() + 3, to = m.find_first_of(",\n", from);
    m = m.substr(0, from) + value + m.substr(to);
    write_text(d / "manifest.json", m);
    return d.string();
  };
  const std::string deep = variant("deep", "device", deep_json(200000));
  const std::string deep63 = variant("deep63", "device", deep_json(63));
  const std::string huge = variant("huge", "scale", "1e999");
  const std::string longname = variant("long", "device", "\"" + std::string(1000000, 'x') + "\"");
  const std::string longhash = variant("hash", "inputs_hash", "\"" + std::string(100000, 'f') + "\"");
  write_text(dir / "bench-deep.json", "{\"rows\": " + deep_json(100000) + "}");
  write_text(dir / "bench-1e999.json", "{\"rows\": [{\"n\": 1e999}]}");
  write_text(dir / "bench-device.json", bench_json(1, std::string(1000000, 'D')));
  write_text(dir / "bench-utf.json", "{\"rows\": [], \"device\": \"\\u0000\\n" + std::string(5000, 'z') + "\"}");
  const std::string png = (dir / "p.png").string();
  check_refused(dir, "compare --snapshots " + deep + " --against " + good, "nested deeper than 64");
  check_refused(dir, "compare --snapshots " + deep63 + " --against " + good, "device: must be a string (got an array of 1 values)");
  check_refused(dir, "compare --snapshots " + huge + " --against " + good, "number overflow");
  check_refused(dir, "compare --snapshots " + longname + " --against " + good, "device: is 1000000 characters long");
  check_refused(dir, "compare --snapshots " + longhash + " --against " + good, "inputs_hash: is 100000 characters long");
  check_refused(dir, "plot --bench bench-deep.json --out " + png, "nested deeper than 64");
  check_refused(dir, "plot --bench bench-1e999.json --out " + png, "number overflow");
  check_refused(dir, "plot --bench bench-device.json --out " + png, "device is 1000000 characters long");
  check_refused(dir, "plot --bench bench-utf.json --out " + png, "bench-utf.json");
}

TEST_CASE("inputs that are not regular files are refused at once, and sizes and work are capped", "[cli][hardening2][fifo]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  REQUIRE(::mkfifo((dir / "fifo.json").c_str(), 0600) == 0);
  const std::string good = snapshot_folder(dir, "good", kSmall);
  const fsys::path fifo_set = dir / "fifo-set";
  fsys::copy(good, fifo_set);
  fsys::remove(fifo_set / "manifest.json");
  REQUIRE(::mkfifo((fifo_set / "manifest.json").c_str(), 0600) == 0);
  { std::ofstream(dir / "big.json").close(); }
  fsys::resize_file(dir / "big.json", uintmax_t(2) << 30);  // sparse: 2 GiB that were never read
  write_text(dir / "many.json", bench_json(100000));
  const std::string png = (dir / "p.png").string();
  check_refused(dir, "plot --bench fifo.json --out " + png, "is a FIFO, not a regular file");
  check_refused(dir, "plot --bench /dev/zero --out " + png, "is a character device, not a regular file");
  check_refused(dir, "plot --bench " + dir.string() + " --out " + png, "is a directory, not a regular file");
  check_refused(dir, "compare --snapshots " + fifo_set.string() + " --against " + good, "is a FIFO, not a regular file");
  check_refused(dir, "plot --bench big.json --out " + png, "over the limit of 16 MiB");
  check_refused(dir, "plot --bench many.json --out " + png, "more than 2048 points");
  // The L2 model's replay counts every head: refused by the work estimate, before any work.
  check_refused(dir, "run --n 4096 --d 64 --gpu h200 --heads 4096", "raise --max-gflop");
  check_refused(dir, "run --n 256 --d 16 --gpu h200 --heads 4096 --max-gflop 1", "raise --max-gflop");
  std::string out;
  CHECK(fstest::run_command(kBin + " run --n 256 --d 16 --gpu h200 --heads 1 --max-gflop 1", out) == 0);
}

TEST_CASE("compare takes no tolerance from a folder", "[cli][hardening2][compare]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string flags = std::string(kSmall) + " --backward";
  const std::string a = snapshot_folder(dir, "a", flags), b = snapshot_folder(dir, "b", flags);
  std::string out;
  REQUIRE(fstest::run_command(kBin + " compare --snapshots " + a + " --against " + b, out) == 0);
  // The reference claims a huge dQ floor, and the other side's final dQ is wrong: FAIL, not PASS.
  nlohmann::json m = nlohmann::json::parse(read_text(fsys::path(b) / "manifest.json"));
  m["dq_scale_floor"] = 1e300;
  write_text(fsys::path(b) / "manifest.json", m.dump());
  Mat dq = read_npy_matrix(a + "/final_dQ.npy");
  dq(3, 1) += 0.5f * (1.0f + std::abs(dq(3, 1)));
  write_npy(a + "/final_dQ.npy", dq);
  CAPTURE(out);
  CHECK(fstest::run_command(kBin + " compare --snapshots " + a + " --against " + b, out) == 1);
  CHECK(out.find("FAIL") != std::string::npos);
  CHECK(out.find("dQ") != std::string::npos);
  // The floor printed is the one made from the problem, not the file's.
  CHECK(out.find("floor 1e+300") == std::string::npos);
}

TEST_CASE("empty output names, empty input names and sizes that wrap are refused", "[cli][hardening2][names]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string good = snapshot_folder(dir, "good", kSmall);
  const std::string bench = FLASHSTEP_BENCH_FILE;
  for (const char* flag : {"--out-o", "--out-lse", "--trace", "--csv", "--chrome", "--snapshots", "--q", "--l2", "--schedule"})
    check_refused(dir, std::string("run --n 8 --d 4 --M 64 ") + flag + " \"\"", std::string(flag) + ": the value is empty");
  check_refused(dir, "run --n 8 --d 4 --M 64 --backward --out-dq \"\"", "--out-dq: the value is empty");
  check_refused(dir, "compare --snapshots " + good + " --against \"\"", "--against: the value is empty");
  check_refused(dir, "compare --snapshots \"\"", "--snapshots: the value is empty");
  check_refused(dir, "plot --bench " + bench + " --out \"\"", "--out: the value is empty");
  check_refused(dir, "plot --bench " + bench + " --out x.png --size 4294968496x700", "--size must be between 400x300");
  check_refused(dir, "plot --bench " + bench + " --out x.png --size 1200x-700", "--size must look like");
  check_refused(dir, "plot --bench " + bench + " --out x.png --size 99999999999999999999999x700", "--size must be between");
}

TEST_CASE("run --snapshots replaces only a snapshot folder that holds nothing else", "[cli][hardening2][snapshots]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string set = snapshot_folder(dir, "set", kSmall);
  // A web folder that happens to hold a manifest.json.
  const fsys::path web = dir / "web";
  fsys::create_directories(web);
  write_text(web / "manifest.json", "{\"name\": \"my app\", \"start_url\": \"/\"}");
  write_text(web / "index.html", "<html>mine</html>");
  // A real snapshot set that also holds the run's own inputs.
  const fsys::path with_inputs = dir / "with-inputs";
  fsys::copy(set, with_inputs);
  write_npy((with_inputs / "q.npy").string(), make_input("random", 12, 4, 3, 0));
  write_npy((with_inputs / "k.npy").string(), make_input("random", 10, 4, 3, 1));
  // A snapshot set with an extra folder, one with a symlink, and one whose manifest is another format.
  const fsys::path with_dir = dir / "with-dir", with_link = dir / "with-link", other = dir / "other-format";
  fsys::copy(set, with_dir);
  fsys::create_directories(with_dir / "notes");
  fsys::copy(set, with_link);
  fsys::create_symlink(dir / "elsewhere.npy", with_link / "forward_j0009_O.npy");
  fsys::copy(set, other);
  write_text(other / "manifest.json", "{\"format\": \"something-else\"}");
  const std::string in = " --q " + (with_inputs / "q.npy").string() + " --k " + (with_inputs / "k.npy").string() + " --v " +
                         (with_inputs / "k.npy").string();
  const std::string run = std::string("run ") + kSmall;
  check_refused(dir, run + " --snapshots " + web.string(), "not a flashstep snapshot manifest");
  check_refused(dir, "run --schedule fa1 --br 4 --bc 3 --M 64" + in + " --snapshots " + with_inputs.string(),
                "it holds k.npy, which is not a file of a snapshot folder");
  check_refused(dir, run + " --snapshots " + with_dir.string(), "it holds notes, which is not a regular file");
  check_refused(dir, run + " --snapshots " + with_link.string(), "which is not a regular file");
  check_refused(dir, run + " --snapshots " + other.string(), "not a flashstep snapshot manifest");
  check_refused(dir, run + " --snapshots " + (dir / "set" / "manifest.json").string(), "is a regular file, not a folder");
  // Its own folder is replaced, and still reads.
  std::string out;
  REQUIRE(fstest::run_command(kBin + " " + run + " --seed 5 --snapshots " + set, out) == 0);
  CHECK(read_snapshots(set).problem.seed == 5);
}

TEST_CASE("messages name the problem and quote what was typed", "[cli][hardening2][messages]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  write_text(dir / "file", "x");
  check_refused(dir, "compare --snapshots file --against file", "file: is a regular file, not a snapshot folder");
  check_refused(dir, "run --gpu h200 --heads 99999999999999999999", "(got '99999999999999999999')");
  check_refused(dir, "run --n -99999999999999999999", "(got '-99999999999999999999')");
  check_refused(dir, "run --n " + std::string(5000, '9'), "... (5000 characters)");
  check_refused(dir, "run --schedule " + std::string(5000, 'f'), "... (5000 characters)");
  check_refused(dir, "run --M " + std::string(3000, 'k'), "(3000 characters)");
}
