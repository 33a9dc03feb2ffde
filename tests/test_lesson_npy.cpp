// The online-softmax lesson and the .npy reader/writer.
#include "core/checked.h"
#include "core/lesson.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace flashstep;

TEST_CASE("lesson 1 2 3 4 in blocks of 2 gives the seed chapter numbers", "[lesson]") {
  const Lesson L = run_lesson({1, 2, 3, 4}, 2);
  REQUIRE(L.blocks.size() == 2);
  CHECK(L.blocks[0].local_max == 2);
  CHECK(L.blocks[0].local_sum == Approx(1 + std::exp(-1.0)).epsilon(1e-15));
  CHECK(L.blocks[1].local_max == 4);
  CHECK(L.blocks[1].alpha == Approx(std::exp(-2.0)).epsilon(1e-15));
  CHECK(L.blocks[1].beta == 1);
  const double total = std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0;
  CHECK(L.blocks[1].l_new == Approx(total).epsilon(1e-15));
  for (int k = 0; k < 4; ++k) CHECK(L.online[k] == Approx(std::exp(k + 1 - 4.0) / total).epsilon(1e-14));
  CHECK(L.max_diff < 1e-15);
}

TEST_CASE("lesson with any vector and block size ends equal to the direct softmax", "[lesson]") {
  const size_t n = GENERATE(1, 2, 5, 13);
  const size_t block = GENERATE(1, 2, 3, 4, 20);
  std::vector<double> v;
  for (size_t k = 0; k < n; ++k) v.push_back(37.0 * std::sin(double(k * k + 3 * n + block)));
  const Lesson L = run_lesson(v, block);
  CHECK(L.blocks.size() == (n + block - 1) / block);
  CHECK(L.max_diff < 1e-14);
  double sum = 0;
  for (double x : L.online) sum += x;
  CHECK(sum == Approx(1.0).epsilon(1e-14));
}

TEST_CASE("lesson with a value vector carries O block by block to softmax(x) . V", "[lesson]") {
  const size_t n = GENERATE(1, 2, 5, 13);
  const size_t block = GENERATE(1, 2, 3, 4, 20);
  std::vector<double> x, v;
  for (size_t k = 0; k < n; ++k) {
    x.push_back(11.0 * std::sin(double(k * k + 3 * n + block)));
    v.push_back(5.0 * std::cos(double(7 * k + n)) + 2.0);
  }
  const Lesson L = run_lesson(x, block, v);
  // The direct sum, written out here: e^(x_k - max) v_k / sum e^(x_k - max).
  double mx = x[0], num = 0, den = 0;
  for (double a : x) mx = std::max(mx, a);
  for (size_t k = 0; k < n; ++k) {
    num += std::exp(x[k] - mx) * v[k];
    den += std::exp(x[k] - mx);
  }
  CHECK(L.blocks.back().o_new == Approx(num / den).epsilon(1e-13));
  CHECK(L.o_direct == Approx(num / den).epsilon(1e-13));
  // After each block, O is the softmax-weighted mean of the values seen so far.
  for (const LessonBlock& B : L.blocks) {
    double m = x[0], a = 0, b = 0;
    for (size_t k = 0; k < B.end; ++k) m = std::max(m, x[k]);
    for (size_t k = 0; k < B.end; ++k) {
      a += std::exp(x[k] - m) * v[k];
      b += std::exp(x[k] - m);
    }
    CHECK(B.o_new == Approx(a / b).epsilon(1e-13));
  }
  CHECK(L.blocks.front().o_old == 0);
  // Without V nothing is carried; a V of the wrong length is refused.
  CHECK(run_lesson(x, block).blocks.back().o_new == 0);
  std::vector<double> longer = v;
  longer.push_back(1.0);
  CHECK_THROWS_WITH(run_lesson(x, block, longer), Catch::Matchers::Contains("V needs one value per entry of x"));
}

TEST_CASE("the lesson takes as many values as a row trace's row, and refuses more", "[lesson][limits]") {
  // 2^20: the longest row the app shows beside the lesson; 10^7 values took 14 s before the limit.
  REQUIRE(kMaxLessonValues == size_t(1) << 20);
  const std::vector<double> most(kMaxLessonValues, 1.0);
  CHECK(run_lesson(most, 1 << 12).blocks.size() == 256);
  std::vector<double> over = most;
  over.push_back(1.0);
  CHECK_THROWS_WITH(run_lesson(over, 2), "the lesson takes at most 1048576 values (got 1048577)");
  CHECK_THROWS_WITH(check_lesson_size(size_t(100000000)), "the lesson takes at most 1048576 values (got 100000000)");
  CHECK_NOTHROW(check_lesson_size(kMaxLessonValues));
}

TEST_CASE("npy round trip with 4-D and float64 files", "[npy]") {
  const fstest::TempDir tmp;
  const auto& dir = tmp.path;
  const Mat m = make_input("random", 7, 3, 42, 0);
  write_npy((dir / "m.npy").string(), m);
  CHECK(read_npy_matrix((dir / "m.npy").string()) == m);
  const float* p = m.data();
  write_npy((dir / "m4.npy").string(), p, {1, 1, 7, 3});
  CHECK(read_npy_matrix((dir / "m4.npy").string()) == m);
  write_npy((dir / "bad4.npy").string(), p, {1, 7, 1, 3});
  CHECK_THROWS_WITH(read_npy_matrix((dir / "bad4.npy").string()), Catch::Contains("expected a 2-D array"));
  // A golden float64 file reads as float32.
  const NpyArray g = read_npy(fstest::golden("n64_d16.o.npy"));
  CHECK(g.shape == std::vector<int64_t>{64, 16});
}
