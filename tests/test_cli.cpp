// The flashstep program as a user runs it: outputs, and one clear error line for bad input.
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

using namespace flashstep;
namespace fsys = std::filesystem;

namespace {

using fstest::kBin;

// A .npy file with an arbitrary dtype string and payload (for the bad-file cases).
void write_raw_npy(const fsys::path& path, const std::string& descr, const std::string& shape,
                   size_t payload_bytes) {
  std::string payload(payload_bytes, '\0');
  for (size_t k = 0; k < payload_bytes; ++k) payload[k] = char(k * 37 % 251);
  fstest::write_npy_text(path, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }", payload);
}

struct Failure {
  std::string args, expect;
};

}  // namespace

TEST_CASE("bad input gives one clear error line and a non-zero exit and no output file", "[cli][errors]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const Mat q = make_input("random", 10, 4, 1, 0), k = make_input("random", 12, 4, 1, 1);
  write_npy((dir / "q.npy").string(), q);
  write_npy((dir / "k.npy").string(), k);
  write_npy((dir / "v.npy").string(), k);
  write_npy((dir / "k5.npy").string(), make_input("random", 12, 5, 1, 1));
  write_npy((dir / "v11.npy").string(), make_input("random", 11, 4, 1, 1));
  Mat qnan = q;
  qnan(3, 2) = std::nanf("");
  write_npy((dir / "qnan.npy").string(), qnan);
  Mat vinf = k;
  vinf(11, 0) = -INFINITY;
  write_npy((dir / "vinf.npy").string(), vinf);
  write_raw_npy(dir / "int.npy", "<i4", "(10, 4)", 160);
  write_raw_npy(dir / "3d.npy", "<f4", "(2, 10, 4)", 320);
  write_raw_npy(dir / "trunc.npy", "<f4", "(10, 4)", 100);
  {  // Q as float64: finite values, each a float32 exactly, so the run must give the float32 run's O
    std::string payload(size_t(q.size()) * 8, '\0');
    for (int64_t r = 0; r < q.rows(); ++r)
      for (int64_t c = 0; c < q.cols(); ++c) {
        const double x = q(r, c);
        std::memcpy(&payload[size_t(r * q.cols() + c) * 8], &x, 8);
      }
    fstest::write_npy_text(dir / "f64.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (10, 4), }", payload);
  }
  {
    std::ofstream junk(dir / "junk.npy");
    junk << "hello";
  }
  const std::string D = dir.string() + "/";
  const std::string files = " --k " + D + "k.npy --v " + D + "v.npy";
  const Failure cases[] = {
      {"run --d 0", "d must be at least 1"},
      {"run --n 0", "Nq must be at least 1"},
      {"run --nq 8 --nk 0", "Nk must be at least 1"},
      {"run --d 64 --M 100", "smaller than 4d = 256"},
      {"run --n 64 --d 16 --M 1024 --br 64 --bc 64", "Br = 64, Bc = 64 do not fit"},
      {"run --q " + D + "3d.npy" + files, "expected a 2-D array"},
      {"run --q " + D + "int.npy" + files, "dtype '<i4' not supported"},
      {"run --q " + D + "trunc.npy" + files, "truncated"},
      {"run --q " + D + "junk.npy" + files, "not a .npy file"},
      {"run --q " + D + "missing.npy" + files, "cannot open"},
      {"run --q " + D + "q.npy --k " + D + "k5.npy --v " + D + "v.npy", "mismatched shapes"},
      {"run --q " + D + "q.npy --k " + D + "k.npy --v " + D + "v11.npy", "mismatched shapes"},
      {"run --q " + D + "qnan.npy" + files, "input Q has NaN at row 3, column 2"},
      {"run --q " + D + "q.npy --k " + D + "k.npy --v " + D + "vinf.npy", "input V has Inf at row 11, column 0"},
      {"run --q " + D + "q.npy", "give all three"},
      {"run --schedule fa9", "unknown schedule 'fa9'"},
      {"run --window -2,0", "window sizes must be >= 0, or -1"},
      {"run --window 3", "--window must be LEFT,RIGHT"},
      {"run --n 64 --kv-len 65", "key length 65 is out of range 0..64"},
      {"run --dropout 1", "dropout probability must be in [0, 1)"},
      {"run --dtype fp4", "unknown dtype 'fp4'"},
      {"run --dropout -0.1", "dropout probability must be in [0, 1)"},
      {"run --pattern zebra", "unknown input pattern 'zebra'"},
      {"run --M lots", "M must be a number"},
      {"run --n 1024 --d 64 --M 16384 --steps --max-trace-mib 4", "refusing to record"},
      {"run --n 20000 --d 64 --M 16384 --trace " + D + "t.json", "refusing to record"},
      {"run --n 100000 --d 16 --schedule standard", "simulated HBM would need"},
      {"run --n 8 --d abc", "--d"},
      {"lesson softmax --values 1,x,3", "'x' is not a number"},
      {"lesson softmax --block 0", "--block must be at least 1"},
      {"lesson softmax --v 10,20,30", "V needs one value per entry of x: 4 values, V has 3"},
      {"lesson softmax --v 10,y,30,40", "--v: 'y' is not a number"},
      {"lesson softmax --values 1,0x10,3", "'0x10' is not a number"},
      {"lesson softmax --values 1,inf", "'inf' is not a number"},
      {"run --M 0x10", "M: unknown unit 'x10'"},
      {"run --M ' 64'", "M must be a number"},
      {"run --M +64", "M must be a number"},
      {"explain --n 64 --d 32 --M 64", "smaller than 4d"},
      {"nosuch", "unknown subcommand 'nosuch' (the subcommands: lesson, run, explain,"},
      {"lesson", "lesson needs one of its subcommands: softmax; flashstep lesson --help"},
      {"lesson nosuch", "lesson needs one of its subcommands: softmax (got 'nosuch')"},
      {"run nosuch", "The following argument was not expected: nosuch"},
  };
  for (const Failure& f : cases) {
    CAPTURE(f.args);
    const fsys::path out = dir / "out_o.npy";
    // run's cases also ask for an output file, which must not appear; --out-o is not a lesson or
    // explain option, so those run as given (one call each, and its exit code is the one checked).
    const bool is_run = f.args.rfind("run", 0) == 0;
    std::string output;
    const int rc = fstest::run_command(kBin + " " + f.args + (is_run ? " --out-o " + out.string() : ""), output);
    CAPTURE(output);
    CHECK(rc != 0);
    CHECK(output.find(f.expect) != std::string::npos);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    CHECK(output.rfind("flashstep: error: ", 0) == 0);
    CHECK_FALSE(fsys::exists(out));
    CHECK_FALSE(fsys::exists(dir / "t.json"));
  }
  // A float64 .npy is accepted, converted to float32: the same O as Q given in float32.
  std::string output;
  REQUIRE(fstest::run_command(kBin + " run --q " + D + "f64.npy" + files + " --out-o " + D + "o64.npy", output) == 0);
  REQUIRE(fstest::run_command(kBin + " run --q " + D + "q.npy" + files + " --out-o " + D + "o32.npy", output) == 0);
  const Mat o64 = read_npy_matrix(D + "o64.npy"), o32 = read_npy_matrix(D + "o32.npy");
  REQUIRE(o64.rows() == 10);
  CHECK(o64 == o32);
}

TEST_CASE("run writes O and lse that match the float64 reference", "[cli]") {
  const fstest::TempDir tmp;
  const fsys::path& dir = tmp.path;
  const std::string D = dir.string() + "/";
  for (const char* sched : {"fa1", "standard"}) {
    CAPTURE(sched);
    std::string output;
    const int rc = fstest::run_command(kBin + " run --nq 37 --nk 53 --d 12 --M 200 --seed 5 --schedule " +
                                           sched + " --out-o " + D + "o.npy --out-lse " + D + "lse.npy --trace " +
                                           D + "t.json --csv " + D + "t.csv --chrome " + D + "c.json",
                                       output);
    CAPTURE(output);
    REQUIRE(rc == 0);
    // The printed HBM bytes, simulated and closed form, against the paper's counts written out
    // here: M = 200, d = 12 give Bc = ceil(M / 4d) = 5, Tc = ceil(53 / 5) = 11 (float32, 4 B).
    const int64_t nq = 37, nk = 53, d = 12, Tc = fstest::ceil_div(nk, fstest::ceil_div(200, 4 * d));
    const bool fa1 = std::string(sched) == "fa1";
    const long long want_read = 4 * (fa1 ? 2 * nk * d + Tc * nq * (2 * d + 2) : 2 * nq * nk + nq * d + 2 * nk * d);
    const long long want_write = 4 * (fa1 ? (1 + Tc) * nq * (d + 2) : 2 * nq * nk + nq * d);
    const std::vector<long long> rd = fstest::numbers_after(output, "HBM read"), wr = fstest::numbers_after(output, "HBM write");
    REQUIRE(rd.size() == 2);  // "N B (x KiB)  (closed form N B: equal)"
    REQUIRE(wr.size() == 2);
    CHECK(rd[0] == want_read);
    CHECK(rd[1] == want_read);
    CHECK(wr[0] == want_write);
    CHECK(wr[1] == want_write);
    CHECK(output.find("DIFFERENT") == std::string::npos);
    ProblemSpec s;
    s.nq = 37; s.nk = 53; s.d = 12; s.M = 200; s.seed = 5;
    const Problem p = make_problem(s);
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale);
    const Mat o = read_npy_matrix(D + "o.npy");
    const NpyArray lse = read_npy(D + "lse.npy");
    REQUIRE(lse.shape == std::vector<int64_t>{37});
    CHECK(compare(o, ref.O).max_rel < 1e-5);
    CHECK(compare(Vec(Eigen::Map<const Vec>(lse.data.data(), 37)), ref.lse).max_rel < 1e-5);
    for (const char* f : {"t.json", "t.csv", "c.json"}) CHECK(fsys::file_size(dir / f) > 100);
  }
}

TEST_CASE("the 1 2 3 4 lesson prints each block statistics and ends at the softmax", "[cli][lesson]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " lesson softmax", output) == 0);
  // block [1,2]: max 2, sum 1 + e^-1; block [3,4]: max 4, same sum; rescale e^(2-4)
  for (const char* want : {"local max  m~ = 2", "l~ = sum exp(x - m~) = 1.36787944", "local max  m~ = 4",
                           "e^(m - m_new) = 0.135335283", "l_new = 0.135335283 * 1.36787944 + 1 * 1.36787944 = 1.55300179",
                           "0.0320586033", "0.0871443187", "0.236882818", "0.64391426", "(equal)"})
    CHECK(output.find(want) != std::string::npos);
  REQUIRE(fstest::run_command(kBin + " lesson softmax --values 3,-1,10,0.5,7 --block 3", output) == 0);
  CHECK(output.find("(equal)") != std::string::npos);
  CHECK(output.find("Block 2: [0.5, 7]") != std::string::npos);
  // With V: O after block 1 is (10 e^-1 + 20) / (1 + e^-1); after block 2, softmax([1, 2, 3, 4]) . V.
  REQUIRE(fstest::run_command(kBin + " lesson softmax --v 10,20,30,40", output) == 0);
  const double e1 = std::exp(-1.0), o1 = (10 * e1 + 20) / (1 + e1);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0);
  const double o = (10 * std::exp(1.0) + 20 * std::exp(2.0) + 30 * std::exp(3.0) + 40 * std::exp(4.0)) / z;
  char want[160];
  std::snprintf(want, sizeof want, "= %.9g\n", o1);
  CHECK(output.find(want) != std::string::npos);
  std::snprintf(want, sizeof want, "O = sum softmax(x)_k v_k: online %.9g, direct %.9g  (equal)", o, o);
  CHECK(output.find(want) != std::string::npos);
}

TEST_CASE("run with steps prints the step log of Algorithm 1", "[cli]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " run --n 8 --d 4 --M 64 --steps", output) == 0);
  for (const char* want : {"Alg1 L2", "Alg1 L6", "Alg1 L8", "Alg1 L9", "Alg1 L10", "Alg1 L11", "Alg1 L12",
                           "Alg1 L13", "m~_ij", "e^(m_i - m_i^new)", "steps      27 (recorded)"})
    CHECK(output.find(want) != std::string::npos);
}

TEST_CASE("explain prints closed forms that equal the simulation", "[cli]") {
  std::string output;
  REQUIRE(fstest::run_command(kBin + " explain --n 300 --d 32 --M 2000 --splits 4", output) == 0);
  CAPTURE(output);
  // The paper's counts in elements: Bc = ceil(2000 / 128) = 16, Br = min(Bc, d) = 16,
  // Tr = Tc = ceil(300 / 16) = 19; columns Algorithm 1, FA2 order, standard, decode with S = 4
  // (Q per split, K and V per query block, the partials and their lse written and read back).
  const long long N = 300, d = 32, T = 19, S = 4;
  const std::vector<long long> read = {2 * N * d + T * N * (2 * d + 2), N * d + T * 2 * N * d, 2 * N * d + 2 * N * N + N * d,
                                       S * N * d + 2 * T * N * d + S * N * (d + 1)};
  const std::vector<long long> write = {(1 + T) * N * (d + 2), N * d + N, 2 * N * N + N * d, S * N * (d + 1) + N * (d + 1)};
  CHECK(fstest::numbers_after(output, "closed form, read") == read);
  CHECK(fstest::numbers_after(output, "closed form, write") == write);
  CHECK(fstest::numbers_after(output, "simulated, read") == read);
  CHECK(fstest::numbers_after(output, "simulated, write") == write);
  const size_t at = output.find("simulated equals closed form");
  REQUIRE(at != std::string::npos);
  CHECK(output.substr(at, output.find('\n', at) - at).find("yes") != std::string::npos);
  CHECK(output.find("Theorem 2") != std::string::npos);
}
