// Shared by the [gpu] test files: skipping without a GPU, fresh seeds, golden files, float
// comparisons and the tolerances of gpu/commands.cpp.
#pragma once
#include "core/reference.h"
#include "gpu/backend.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace gputest {

using namespace flashstep;

constexpr double kTiledTol = 5e-6;    // CPU tiled vs GPU tiled, max_rel (see gpu/commands.cpp)
constexpr double kFloat64Tol = 1e-5;  // either vs float64

// Catch2 v2 has no SKIP: the test prints why and passes.
#define REQUIRE_GPU_OR_SKIP()                       \
  do {                                              \
    std::string why_;                               \
    if (!::flashstep::gpu::available(&why_)) {      \
      WARN("SKIPPED: " << why_);                    \
      return;                                       \
    }                                               \
  } while (0)

inline uint64_t fresh_seed() {
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

inline double rel(const Mat& x, const Mat& ref) { return compare(x, ref.cast<double>().eval()).max_rel; }

inline bool no_nan(const std::vector<float>& v) {
  for (float x : v)
    if (std::isnan(x)) return false;
  return true;
}

// lse against a reference (compare() counts -inf on both sides, a fully masked row, as agreement).
inline double lse_rel(const std::vector<float>& g, const Vec& c, int64_t offset = 0) {
  REQUIRE(int64_t(g.size()) >= offset + c.size());
  const Vec a = Eigen::Map<const Vec>(g.data() + offset, c.size());
  return compare(a, c.cast<double>().eval()).max_rel;
}

// M large enough for the overridden blocks: 2(Br + Bc)d <= M.
inline int64_t fit_M(int64_t br, int64_t bc, int64_t d) { return 2 * (br + bc) * d; }

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
