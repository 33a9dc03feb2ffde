// Shared by the [gpu] test files: skipping without a GPU, fresh seeds, golden files, float
// comparisons, the tolerances of app/cmd_verify.cpp, and running one problem on both sides.
#pragma once
#include "core/reference.h"
#include "core/run.h"
#include "core/tolerance.h"
#include "gpu/backend.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace gputest {

using namespace flashstep;

using flashstep::kFloat64Tol;  // either vs float64 (core/tolerance.h)
using flashstep::kTiledTol;    // CPU tiled vs GPU tiled, max_rel

// Catch2 v2 has no SKIP: a test that cannot run says "SKIPPED: <why>" (SKIP_TEST), counts itself
// and returns; the binary's main (test_main.cpp) exits with kSkipExitCode when every test case
// that ran was skipped and none failed (ctest runs one case at a time), and ctest reports the test as skipped (SKIP_RETURN_CODE in tests/gpu/CMakeLists.txt),
// whatever the test printed. A failing test that printed "SKIPPED" still fails. Run directly, as
// the device scripts do, FLASHSTEP_REQUIRE_GPU=1 turns a missing GPU or driver into a failure.
constexpr int kSkipExitCode = 77;
inline int& skipped_cases() {  // SKIP_TEST calls (each is followed by the test's return)
  static int n = 0;
  return n;
}
#define SKIP_TEST(why)                      \
  do {                                      \
    ++::gputest::skipped_cases();           \
    WARN("SKIPPED: " << why);               \
  } while (0)
inline bool gpu_required() {
  const char* env = std::getenv("FLASHSTEP_REQUIRE_GPU");
  return env && std::string(env) == "1";
}
#define REQUIRE_GPU_OR_SKIP()                                          \
  do {                                                                 \
    std::string why_;                                                  \
    if (!::flashstep::gpu::available(&why_)) {                         \
      if (::gputest::gpu_required()) FAIL("FLASHSTEP_REQUIRE_GPU=1 but " << why_); \
      SKIP_TEST(why_);                                                 \
      return;                                                          \
    }                                                                  \
  } while (0)

// The variants an environment variable lists ("13" or "2,4"); empty when it is unset or empty.
inline std::vector<int> variants_from_env(const char* name) {
  std::vector<int> v;
  if (const char* only = std::getenv(name)) {
    for (const char* c = only; *c;) {
      char* end = nullptr;
      const long k = std::strtol(c, &end, 10);
      if (end == c) break;
      v.push_back(int(k));
      c = *end == ',' ? end + 1 : end;
    }
  }
  return v;
}

// A fresh seed for each problem; each test prints it in its failure message (INFO). To reproduce
// a failure, run the test again with FLASHSTEP_TEST_SEED set to the printed seed: every problem
// then takes that seed, the failing one included (its shape comes from the test's own sweep).
inline uint64_t fresh_seed() {
  if (const char* env = std::getenv("FLASHSTEP_TEST_SEED"); env && *env) {
    char* end = nullptr;
    const unsigned long long s = std::strtoull(env, &end, 10);
    if (*end == '\0') return uint64_t(s);
    FAIL("FLASHSTEP_TEST_SEED is not a whole number: " << env);
  }
  static std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

// The golden files: $FLASHSTEP_GOLDEN_DIR if set (a binary carried to another machine), else
// the source tree's tests/golden.
inline std::string golden(const std::string& file) {
  const char* env = std::getenv("FLASHSTEP_GOLDEN_DIR");
  return std::string(env && *env ? env : FLASHSTEP_GOLDEN_DIR) + "/" + file;
}

inline Mat to_mat(const std::vector<float>& v, int64_t rows, int64_t cols, int64_t offset = 0) {
  REQUIRE(int64_t(v.size()) >= offset + rows * cols);
  Mat m(rows, cols);
  std::copy(v.begin() + offset, v.begin() + offset + rows * cols, m.data());
  return m;
}

// Relative error with verify's floor (gpu/tc_check.cpp, app/cmd_tensor_cores.cpp):
// max|x - ref| / max(1, max|ref|). A reference whose entries are all near 0 (the lse of one key
// whose score is near 0, a block's m of small scores) is not held to a relative bound that its
// float32 inputs cannot meet; above 1 it is compare()'s normwise max_rel. -inf on both sides (a
// fully masked row) agrees and is left out of the maximum; any NaN in x gives +inf.
template <class X, class R>
double floored_rel(const X& x, const R& ref) {
  double ref_max = 1.0;
  for (int64_t k = 0; k < ref.size(); ++k)
    if (std::isfinite(ref.data()[k])) ref_max = std::max(ref_max, std::abs(double(ref.data()[k])));
  return compare(x, ref).max_abs / ref_max;
}

inline double rel(const Mat& x, const Mat& ref) { return floored_rel(x, ref.cast<double>().eval()); }

// Equal bit for bit (a NaN equals the same NaN; -0 and +0 differ).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline bool no_nan(const std::vector<float>& v) {
  for (float x : v)
    if (std::isnan(x)) return false;
  return true;
}

// lse against a reference, floored_rel (-inf on both sides, a fully masked row, agrees).
inline double lse_rel(const std::vector<float>& g, const Vec& c, int64_t offset = 0) {
  REQUIRE(int64_t(g.size()) >= offset + c.size());
  const Vec a = Eigen::Map<const Vec>(g.data() + offset, c.size());
  return floored_rel(a, c.cast<double>().eval());
}

// M large enough for the overridden blocks: 2(Br + Bc)d <= M.
inline int64_t fit_M(int64_t br, int64_t bc, int64_t d) { return 2 * (br + bc) * d; }

inline bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// The GPU's final O and lse against the CPU engine's (O to o_tol, lse to kTiledTol) and against
// float64 (kFloat64Tol); no output may be NaN (the backend poisons outputs before a run).
inline void check_final(const gpu::Result& g, const Problem& p, const Trace& tr, double o_tol = kTiledTol) {
  REQUIRE(no_nan(g.O));
  REQUIRE(no_nan(g.lse));
  CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= o_tol);
  CHECK(lse_rel(g.lse, tr.lse) <= kTiledTol);
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
  CHECK(floored_rel(to_mat(g.O, p.nq, p.d), ref.O) <= kFloat64Tol);
  CHECK(lse_rel(g.lse, ref.lse.cast<float>()) <= kFloat64Tol);
}

inline gpu::Shape shape_of(const Problem& p) {
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  return s;
}

// The CPU engine's final O and lse for a problem.
inline Trace cpu_run(const Problem& p, const Tiling& t, bool record = false) {
  RunOptions opt;
  opt.record = record;
  return run_problem(p, t, opt);
}

// The GPU's result for the problem's schedule, features and tiling.
inline gpu::Result gpu_run(const Problem& p, const Tiling& t, int variant) {
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  if (p.schedule == Schedule::fa2) {
    gpu::Fa2Options o;
    o.variant = variant;
    o.features = f;
    return gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o);
  }
  if (p.schedule == Schedule::fa1) {
    gpu::Fa1Options o;
    o.variant = variant;
    o.features = f;
    return gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o);
  }
  return gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, f);
}

// A mask case: sizes and core's Mask (offset is set by make_problem).
struct MaskCase {
  int64_t nq, nk;
  Mask mask;
};

inline ProblemSpec spec_of(const MaskCase& c, int64_t d, uint64_t seed) {
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = d;
  s.seed = seed;
  s.options.mask = c.mask;
  return s;
}

// GPU against the CPU engine (final O, lse to `tol`) and against float64 (1e-5).
inline void check_schedule(const ProblemSpec& spec, int64_t br, int64_t bc, int variant, double tol = kTiledTol) {
  ProblemSpec s = spec;
  s.M = fit_M(br, bc, s.d);
  s.br = br;
  s.bc = bc;
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p);
  check_final(gpu_run(p, t, variant), p, cpu_run(p, t), tol);
}

// N(0, 1) values for Q, K, V of a batched shape (heads x rows x d), from one seed.
struct RandomQKV {
  std::vector<float> Q, K, V;
  RandomQKV(const gpu::Shape& sh, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    Q.resize(size_t(sh.heads() * sh.nq * sh.d));
    K.resize(size_t(sh.heads() * sh.nk * sh.d));
    V.resize(K.size());
    for (auto* v : {&Q, &K, &V})
      for (float& x : *v) x = nd(rng);
  }
};

}  // namespace gputest
