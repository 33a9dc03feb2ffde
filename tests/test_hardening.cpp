// Inputs an adversarial user tried, kept refused: run against the real program. Each
// gives one `flashstep: error:` line and exit code 2 (or the behaviour docs/limits.md states),
// quickly, and leaves no file behind.
#include "core/checked.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sys/stat.h>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::kBin;

std::string npy_header(const std::string& shape, const std::string& descr = "<f4") {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

size_t files_in(const fsys::path& dir) {
  return size_t(std::distance(fsys::directory_iterator(dir), fsys::directory_iterator()));
}

struct RefusedCase {
  std::string args, expect;
};

// Runs each case with outputs asked for in an empty folder; checks the one error line, exit
// code 2, the time taken and that the folder is still empty.
void check_cases_refused(const std::vector<RefusedCase>& cases, const fsys::path& out_dir) {
  for (const RefusedCase& c : cases) {
    CAPTURE(c.args);
    const bool is_run = c.args.rfind("run", 0) == 0;
    const std::string outs = is_run ? " --out-o " + (out_dir / "o.npy").string() + " --trace " + (out_dir / "t.json").string() : "";
    std::string output;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = fstest::run_command(kBin + " " + c.args + outs, output);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CAPTURE(output);
    CHECK(rc == 2);
    CHECK(output.rfind("flashstep: error: ", 0) == 0);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    CHECK(output.find(c.expect) != std::string::npos);
    CHECK(seconds < 20);  // refused before the work, not after (generous for sanitizer builds)
    CHECK(files_in(out_dir) == 0);
  }
}

}  // namespace

TEST_CASE("sizes that overflow are refused with the quantity named", "[cli][hardening]") {
  const fstest::TempDir out_tmp;
  const fsys::path out = out_tmp.path;
  check_cases_refused({
      {"explain --d 2305843009213693952", "d must be in 1..65536"},
      {"run --M 9223372036854775807", "M (SRAM elements) must be in"},
      {"run --bc 9223372036854775807", "Bc must be in 0..268435456"},
      {"run --bc 288230376151711744", "Bc must be in 0..268435456"},
      {"run --M 99999999999999999KiB", "M in KiB must be in"},
      {"run --M 9223372036854775807KiB", "M in KiB must be in"},
      {"explain --n 3037000500 --d 64", "Nq must be in 1..268435456"},
      {"run --window 0,9223372036854775807 --causal", "window RIGHT must be in -1..268435456"},
      {"run --max-trace-mib 17592186044416", "--max-trace-mib must be in 1..1048576"},
      {"run --max-trace-mib 0", "--max-trace-mib must be in 1..1048576"},
      {"run --n 99999999999999999999", "N is out of range"},
      {"explain --n 268435456 --d 65536 --M 262144 --bc 1", "overflows int64"},
  }, out);
}

TEST_CASE("the .npy reader is strict and checks sizes before allocating", "[cli][hardening][npy]") {
  const fstest::TempDir dir_tmp, out_tmp;
  const fsys::path dir = dir_tmp.path, out = out_tmp.path;
  const std::string D = dir.string() + "/";
  write_npy((dir / "k.npy").string(), make_input("random", 8, 4, 3, 1));
  fstest::write_npy_text(dir / "spaces.npy", "{'descr':" + std::string(40, ' '), "");
  fstest::write_npy_text(dir / "wrap.npy", npy_header("(4611686018427387904, 4)"), std::string(64, '\1'));
  fstest::write_npy_text(dir / "wrapbytes.npy", npy_header("(1152921504606846976, 4)", "<f4"), std::string(64, '\1'));
  fstest::write_npy_text(dir / "empty.npy", npy_header("(0, 4)"), "");
  fstest::write_npy_text(dir / "hex.npy", npy_header("(8x, 4L)"), std::string(128, '\1'));
  fstest::write_npy_text(dir / "float.npy", npy_header("(8.9, 4e0)"), std::string(128, '\1'));
  fstest::write_npy_text(dir / "nested.npy", "{'x': {'descr': '<f4'}, 'descr': '<i4', 'fortran_order': False, 'shape': (8, 4), }",
                   std::string(128, '\1'));
  fstest::write_npy_text(dir / "extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), 'x': 1}", std::string(128, '\1'));
  fstest::write_npy_text(dir / "twice.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (8, 4)}", std::string(128, '\1'));
  fstest::write_npy_text(dir / "tail.npy", npy_header("(8, 4)") + " junk", std::string(128, '\1'));
  fsys::create_directory(dir / "adir");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const std::string kv = " --k " + D + "k.npy --v " + D + "k.npy";
  check_cases_refused({
      {"run --q " + D + "spaces.npy" + kv, "malformed .npy header"},
      {"run --q " + D + "wrap.npy" + kv, "the .npy element count overflows"},
      {"run --q " + D + "wrapbytes.npy" + kv, "the .npy data size in bytes overflows"},
      {"run --q " + D + "empty.npy" + kv, "array is empty"},
      {"run --q " + D + "hex.npy" + kv, "malformed .npy header"},
      {"run --q " + D + "float.npy" + kv, "malformed .npy header"},
      {"run --q " + D + "nested.npy" + kv, "unexpected or repeated key 'x'"},
      {"run --q " + D + "extra.npy" + kv, "unexpected or repeated key 'x'"},
      {"run --q " + D + "twice.npy" + kv, "unexpected or repeated key 'descr'"},
      {"run --q " + D + "tail.npy" + kv, "text after the header"},
      {"run --q " + D + "adir" + kv, "not a regular file (a directory)"},
      {"run --q /dev/zero" + kv, "not a regular file (a character device)"},
      {"run --q " + D + "fifo" + kv, "not a regular file (a FIFO)"},
  }, out);
  // An empty array read directly: no null memcpy (UBSan), an empty result.
  const NpyArray e = read_npy(D + "empty.npy");
  CHECK(e.shape == std::vector<int64_t>{0, 4});
  CHECK(e.data.empty());
}

TEST_CASE("outputs are checked, written all or nothing, never replace a non-file", "[cli][hardening][output]") {
  const fstest::TempDir dir_tmp;
  const fsys::path dir = dir_tmp.path;
  const std::string D = dir.string() + "/", small = kBin + " run --n 8 --d 4 --M 64";
  std::string output;
  SECTION("a device, a FIFO or a directory is refused and left as it is") {
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    fsys::create_directory(dir / "sub");
    for (const auto& [target, kind] : {std::pair<std::string, std::string>{"/dev/null", "a character device"},
                                       {D + "fifo", "a FIFO"}, {D + "sub", "a directory"}}) {
      CAPTURE(target);
      CHECK(fstest::run_command(small + " --out-o " + target, output) == 2);
      CHECK(output.find("is " + kind + ", not a regular file") != std::string::npos);
    }
    struct stat st;
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    REQUIRE(::lstat((dir / "fifo").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
  }
  SECTION("a symlink is written through; the link stays; a dangling one is refused") {
    { std::ofstream(dir / "real.npy") << "old"; }
    fsys::create_symlink(dir / "real.npy", dir / "link.npy");
    REQUIRE(fstest::run_command(small + " --out-o " + D + "link.npy", output) == 0);
    CHECK(fsys::is_symlink(dir / "link.npy"));
    CHECK(read_npy_matrix(D + "real.npy").rows() == 8);
    fsys::create_symlink(dir / "missing.npy", dir / "dangling.npy");
    CHECK(fstest::run_command(small + " --out-o " + D + "dangling.npy", output) == 2);
    CHECK(output.find("symlink to a missing file") != std::string::npos);
    CHECK_FALSE(fsys::exists(dir / "missing.npy"));
  }
  SECTION("one failed output means no output at all, and no temporary") {
    CHECK(fstest::run_command(small + " --trace " + D + "good.json --out-o /nonexistent/o.npy", output) == 2);
    CHECK(output.find("/nonexistent") != std::string::npos);
    CHECK(files_in(dir) == 0);
    REQUIRE(fstest::run_command(small + " --trace " + D + "good.json --out-o " + D + "o.npy", output) == 0);
    CHECK(files_in(dir) == 2);  // exactly the two outputs: no temporary left beside them
  }
  SECTION("two outputs naming one file, or an output naming an input, are refused") {
    CHECK(fstest::run_command(small + " --out-o " + D + "same.npy --out-lse " + D + "./same.npy", output) == 2);
    CHECK(output.find("--out-o and --out-lse name the same file") != std::string::npos);
    { std::ofstream(dir / "a.npy") << "x"; }
    fsys::create_hard_link(dir / "a.npy", dir / "b.npy");
    CHECK(fstest::run_command(small + " --out-o " + D + "a.npy --out-lse " + D + "b.npy", output) == 2);
    CHECK(output.find("name the same file") != std::string::npos);
    write_npy(D + "q.npy", make_input("random", 8, 4, 1, 0));
    const auto before = fsys::file_size(dir / "q.npy");
    const std::string files = " --q " + D + "q.npy --k " + D + "q.npy --v " + D + "q.npy";
    CHECK(fstest::run_command(kBin + " run" + files + " --out-o " + D + "q.npy", output) == 2);
    CHECK(output.find("refusing to overwrite an input") != std::string::npos);
    CHECK(fsys::file_size(dir / "q.npy") == before);
    CHECK(files_in(dir) == 3);
  }
  SECTION("a write error on standard output is an error") {
    const int rc = fstest::run_command("(" + kBin + " lesson softmax > /dev/full)", output);
    CHECK(rc == 2);
    CHECK(output.find("flashstep: error: writing standard output failed") != std::string::npos);
  }
  SECTION("an interrupted run leaves no file") {
    // Long enough (tens of seconds) to be interrupted during the run, however fast the machine.
    const int rc = fstest::run_command("timeout -s INT 1 " + kBin + " run --n 12000 --d 64 --M 16384 --out-o " + D +
                                           "o.npy --out-lse " + D + "lse.npy", output);
    CAPTURE(output);
    CHECK(rc == 124);  // timeout's code: the program was still running and got SIGINT
    CHECK(files_in(dir) == 0);
  }
}

TEST_CASE("work is estimated and refused before inputs are made", "[cli][hardening][work]") {
  const fstest::TempDir out_tmp;
  const fsys::path out = out_tmp.path;
  check_cases_refused({
      {"run --n 300000 --d 64", "raise --max-gflop"},
      {"run --n 268435456 --d 65536 --M 262144", "simulated HBM would need"},
      {"run --n 268435456 --d 1 --M 4", "simulated HBM would need"},
      {"run --n 100000 --d 1 --M 4", "raise --max-gflop"},
      {"run --n 2048 --d 64 --max-gflop 0.1", "limit 0.1 GFLOP"},
      {"run --max-gflop -1", "--max-gflop must be in (0, 1e9]"},
  }, out);
  // explain with a huge block count answers at once and says it skipped the simulation.
  std::string output;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(fstest::run_command(kBin + " explain --n 100000 --d 1 --M 4 --br 1 --bc 1", output) == 0);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 20);
  CHECK(output.find("skipped") != std::string::npos);
  // A run the limit allows still runs.
  CHECK(fstest::run_command(kBin + " run --n 64 --d 16 --max-gflop 0.01", output) == 0);
}

// Only where the desktop app is built (tests/gui's configure then requires xvfb-run): a test
// that skipped itself would pass without running its body.
#if FLASHSTEP_HAVE_GUI_CLI
TEST_CASE("gui --script with a huge step count does not hang", "[cli][hardening][gui]") {
  std::string output;
  REQUIRE(fstest::run_command("command -v xvfb-run", output) == 0);
  const fstest::TempDir dir_tmp;
  const fsys::path dir = dir_tmp.path;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = fstest::run_command("timeout 120 xvfb-run -a " + kBin + " gui --preset tiny --script 'step 99999999999; back 99999999999' --step 99999999999 --screenshot " +
                                         (dir / "s.png").string(), output);
  CAPTURE(output);
  CHECK(rc == 0);
  CHECK(fsys::is_regular_file(dir / "s.png"));  // the body ran: the app drew and wrote its screenshot
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 120);
}

TEST_CASE("gui --help names every preset in assets/presets", "[cli][gui]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " gui --help", output) == 0);
  int presets = 0;
  for (const auto& e : fsys::directory_iterator(fsys::path(FLASHSTEP_BENCH_FILE).parent_path().parent_path() / "presets"))
    if (e.path().extension() == ".json") {
      const std::string name = e.path().stem().string();
      CAPTURE(name);
      const bool listed = output.find(name + ",") != std::string::npos || output.find(name + ")") != std::string::npos;
      CHECK(listed);
      ++presets;
    }
  CHECK(presets >= 11);
}
#endif

TEST_CASE("values are checked in the type they are used in", "[cli][hardening][values]") {
  const fstest::TempDir dir_tmp, out_tmp;
  const fsys::path dir = dir_tmp.path, out = out_tmp.path;
  const std::string D = dir.string() + "/";
  Mat big = make_input("random", 8, 4, 2, 0);
  big *= 3e37f;  // finite inputs whose scores q.k overflow float32
  write_npy(D + "big.npy", big);
  Mat huge = Mat::Constant(8, 4, 3.0e38f);
  huge(0, 0) = -3.0e38f;
  write_npy(D + "huge.npy", huge);
  const std::string kv = " --k " + D + "big.npy --v " + D + "big.npy";
  check_cases_refused({
      {"run --scale 1e300", "scale must be a finite float32"},
      {"run --scale 1e39", "scale must be a finite float32"},
      {"run --scale 1e-46", "scale is too small for float32: it rounds to 0 (got 1e-46"},
      {"run --scale ''", "scale must be a finite decimal number"},
      {"run --q " + D + "big.npy" + kv, "overflows float32"},
      {"run --q " + D + "huge.npy --k " + D + "huge.npy --v " + D + "huge.npy", "overflows float32"},
      {"run --q " + D + "big.npy" + kv + " --schedule standard", "overflows float32"},
      {"run --dropout 0.99999999", "which rounds to 1"},
      {"run --seed -1", "seed must be a non-negative whole number"},
      {"run --seed 18446744073709551616", "seed is out of range"},
      {"lesson softmax --block -1", "--block must be at least 1"},
      {"explain --nq 5 --nk 0", "Nk must be at least 1"},
  }, out);
  // 0.9999999 is below 1 as a float32 too: accepted, and printed as it is used, not as "p = 1".
  std::string output;
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --dropout 0.9999999", output) == 0);
  CHECK(output.find("dropout p = 0.99999988") != std::string::npos);
  // The largest seed is accepted as it is.
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --seed 18446744073709551615", output) == 0);
  CHECK(output.find("seed 18446744073709551615") != std::string::npos);
}

TEST_CASE("checked arithmetic names the quantity and catches every overflow", "[hardening][checked]") {
  CHECK(checked::mul(int64_t(3037000499), int64_t(3037000499), "x") == int64_t(9223372030926249001));
  CHECK_THROWS_WITH(checked::mul(int64_t(3037000500), int64_t(3037000500), "Nq * Nk"), Catch::Contains("Nq * Nk overflows"));
  CHECK_THROWS_AS(checked::add(INT64_MAX, int64_t(1), "s"), InputError);
  CHECK_THROWS_AS(checked::mul(size_t(1) << 32, size_t(1) << 32, "bytes"), InputError);
  CHECK(checked::ceil_div(INT64_MAX, 2, "t") == int64_t(1) << 62);
  CHECK(checked::ceil_div(7, 3, "t") == 3);
  CHECK_THROWS_AS(checked::ceil_div(1, 0, "t"), InputError);
  CHECK(checked::to_int(-9223372036854775808.0, INT64_MIN, INT64_MAX, "x") == INT64_MIN);
  CHECK_THROWS_AS(checked::to_int(9223372036854775808.0, INT64_MIN, INT64_MAX, "x"), InputError);
  CHECK_THROWS_AS(checked::to_int(std::nan(""), 0, 10, "x"), InputError);
  CHECK_THROWS_AS(checked::to_float(3.5e38, "x"), InputError);
  CHECK(checked::to_float(-3.4e38, "x") == -3.4e38f);
  CHECK(checked::parse_uint("18446744073709551615", "s") == UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "18446744073709551616"})
    CHECK_THROWS_AS(checked::parse_uint(bad, "s"), InputError);
  CHECK(checked::parse_int("-9223372036854775808", "n") == INT64_MIN);
  CHECK_THROWS_AS(checked::parse_int("9223372036854775808", "n"), InputError);
  for (const char* bad : {"", " 1", "1x", "nan", "inf", "1e999", "0x10", "0x1p3", "1e", ".", "-", "+.e1", "1 ", "1,5"})
    CHECK_THROWS_AS(checked::parse_double(bad, "f"), InputError);
  for (const auto& [text, value] : std::vector<std::pair<const char*, double>>{
           {"16", 16.0}, {"-2.5", -2.5}, {"+.5", 0.5}, {"3.", 3.0}, {"1e-3", 1e-3}, {"2E+2", 200.0}, {"010", 10.0}})
    CHECK(checked::parse_double(text, "f") == value);
}

#if defined(__GNUC__) && !defined(__clang__)  // GCC has _Float16 on x86-64: the oracle
#include <cstring>
#include <random>
TEST_CASE("fp16 rounding in plain arithmetic equals the compiler's _Float16", "[hardening][fp16]") {
  std::mt19937 rng(11);
  std::vector<float> xs = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 1e-8f, 2.98e-8f, 5.96e-8f,
                           6.1e-5f, 6.103515625e-05f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 3e38f, INFINITY};
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-30, 17);
  for (int k = 0; k < 200000; ++k) xs.push_back(std::ldexp(mant(rng), ex(rng)));
  for (float x : xs) {
    const float want = float(static_cast<_Float16>(x)), got = round_to(Dtype::fp16, x);
    if (std::memcmp(&want, &got, sizeof(float)) != 0) FAIL("x = " << x << ": _Float16 " << want << ", round_to " << got);
  }
}
#endif
