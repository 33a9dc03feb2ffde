// --dtype fp8 on the CPU engine (docs/fp8.md): e4m3 rounding against hand-computed values and a
// brute-force oracle over all 256 codes, block quantisation by hand, traffic against the closed
// forms, the error against float64 within a bound derived from the format, the rotation's
// invariance, and the command line's refusals.
#include "core/closed_form.h"
#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/fp8_inputs.h"
#include "core/reference.h"
#include "core/schedule_registry.h"
#include "core/verify.h"
#include "e4m3_oracle.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <random>

using namespace flashstep;
using Catch::Matchers::WithinAbs;

namespace {

using fstest::decode_e4m3;
float oracle_round(float x) { return fstest::oracle_round_e4m3(x); }

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

ProblemSpec fp8_spec(int64_t nq, int64_t nk, int64_t d, int64_t M, Schedule s, Fp8Scale scale) {
  ProblemSpec spec = sizes_spec(nq, nk, d, M);
  spec.schedule = s;
  spec.options.dtype = Dtype::fp8;
  spec.options.fp8_scale = scale;
  spec.seed = uint64_t(nq * 131 + nk * 7 + d);
  return spec;
}

}  // namespace

TEST_CASE("e4m3: hand-computed roundings", "[fp8]") {
  const auto r = round_e4m3;
  const double s = std::ldexp(1.0, -9);  // the smallest subnormal
  // exact values and the format's landmarks
  CHECK(r(1.0f) == 1.0f);
  CHECK(r(448.0f) == 448.0f);                      // the largest: 1.75 x 2^8
  CHECK(r(416.0f) == 416.0f);                      // the one below it: 1.625 x 2^8
  CHECK(r(float(s)) == float(s));                  // 2^-9
  CHECK(r(float(7 * s)) == float(7 * s));          // the largest subnormal
  CHECK(r(0.015625f) == 0.015625f);                // 2^-6, the smallest normal
  // ties go to the even mantissa
  CHECK(r(1.0625f) == 1.0f);     // between 1 (M=0) and 1.125 (M=1)
  CHECK(r(1.1875f) == 1.25f);    // between 1.125 (M=1) and 1.25 (M=2)
  CHECK(r(2.125f) == 2.0f);      // between 2 (M=0) and 2.25 (M=1)
  CHECK(r(2.375f) == 2.5f);      // between 2.25 (M=1) and 2.5 (M=2)
  CHECK(r(432.0f) == 448.0f);    // between 416 (M=5) and 448 (M=6)
  CHECK(r(float(s / 2)) == 0.0f);                // between 0 and 2^-9
  CHECK(r(float(3 * s / 2)) == float(2 * s));    // between 2^-9 (M=1) and 2^-8 (M=2)
  CHECK(r(float(7.5 * s)) == 0.015625f);         // between 7 x 2^-9 (M=7) and 2^-6 (E=1, M=0)
  // off ties: to the nearest
  CHECK(r(1.07f) == 1.125f);
  CHECK(r(1.05f) == 1.0f);
  CHECK(r(424.0f) == 416.0f);
  CHECK(r(float(1.4 * s)) == float(s));
  CHECK(r(float(s / 4)) == 0.0f);
  // just below and above binades
  CHECK(r(1.9375f) == 2.0f);     // tie between 1.875 (M=7) and 2 (next binade, M=0)
  CHECK(r(1.93f) == 1.875f);
  CHECK(r(2.1f) == 2.0f);
  CHECK(r(0.9999f) == 1.0f);
  CHECK(r(1.0001f) == 1.0f);
  CHECK(r(248.0f) == 256.0f);    // tie between 240 (M=7) and 256
  CHECK(r(247.0f) == 240.0f);
  CHECK(r(257.0f) == 256.0f);
  CHECK(r(0.0155f) == 0.015625f);                // just below 2^-6: nearest is 2^-6
  CHECK(r(float(6.6 * s)) == float(7 * s));       // subnormal
  // saturation: no infinities in e4m3
  CHECK(r(449.0f) == 448.0f);
  CHECK(r(464.0f) == 448.0f);
  CHECK(r(1e30f) == 448.0f);
  CHECK(r(-1e30f) == -448.0f);
  CHECK(r(INFINITY) == 448.0f);
  CHECK(r(-INFINITY) == -448.0f);
  // signs and zeros
  CHECK(r(-1.0625f) == -1.0f);
  CHECK(r(-3.1f) == -3.0f);
  CHECK(same_bits(r(-0.0f), -0.0f));
  CHECK(same_bits(r(float(-s / 4)), -0.0f));  // a negative value that rounds to zero is -0
  CHECK(same_bits(r(0.0f), 0.0f));
  CHECK(std::isnan(r(NAN)));
  // codes
  CHECK(e4m3_code(1.0f) == 0x38);
  CHECK(e4m3_code(448.0f) == 0x7E);
  CHECK(e4m3_code(-448.0f) == 0xFE);
  CHECK(e4m3_code(float(s)) == 0x01);
  CHECK(e4m3_code(-0.0f) == 0x80);
  CHECK(e4m3_code(NAN) == 0x7F);
}

TEST_CASE("e4m3: round_e4m3 agrees with a brute-force nearest-code search", "[fp8]") {
  // Every finite code is a fixed point, and its code decodes back to it.
  for (int code = 0; code < 256; ++code) {
    const double v = decode_e4m3(code);
    if (std::isnan(v)) continue;
    CAPTURE(code, v);
    CHECK(double(round_e4m3(float(v))) == v);
    CHECK(decode_e4m3(e4m3_code(float(v))) == v);
  }
  // Midpoints between neighbouring values: exact ties, each to the even mantissa.
  std::vector<std::pair<double, int>> values;
  for (int code = 0; code < 0x7F; ++code) values.push_back({decode_e4m3(code), code});
  for (size_t k = 0; k + 1 < values.size(); ++k) {
    const float mid = float((values[k].first + values[k + 1].first) / 2);
    const int even = (values[k].second & 1) == 0 ? values[k].second : values[k + 1].second;
    CAPTURE(mid);
    CHECK(double(round_e4m3(mid)) == decode_e4m3(even));
    CHECK(double(round_e4m3(-mid)) == -decode_e4m3(even));
  }
  // Fresh random floats over every binade and beyond 448.
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> log2_mag(-13.0, 10.0);
  for (int n = 0; n < 20000; ++n) {
    const float x = float((rng() & 1 ? -1.0 : 1.0) * std::exp2(log2_mag(rng)));
    CAPTURE(x);
    const float want = oracle_round(x), got = round_e4m3(x);
    REQUIRE(same_bits(got, want));
    REQUIRE(decode_e4m3(e4m3_code(x)) == double(want));
  }
}

TEST_CASE("e4m3 quantisation of a tile, by hand", "[fp8]") {
  Mat X(2, 3);
  X << 0.5f, -3.0f, 1.5f, 7.0f, 0.1f, 0.0f;
  SECTION("one scale for the tile: amax 7, scale 7/448 = 1/64") {
    const Fp8Tensor q = quantise_e4m3(X, 2);
    REQUIRE(q.scales.rows() == 1);
    CHECK(q.scales(0, 0) == 0.015625f);
    // X * 64 = [32, -192, 96; 448, 6.4, 0]; 6.4 lies in [4, 8), step 0.5: 6.5
    Mat want(2, 3);
    want << 32, -192, 96, 448, 6.5f, 0;
    CHECK(q.values == want);
  }
  SECTION("a scale per row block: amax 3 and 7") {
    const Fp8Tensor q = quantise_e4m3(X, 1);
    REQUIRE(q.scales.rows() == 2);
    CHECK(q.scales(0, 0) == 3.0f / 448.0f);
    CHECK(q.scales(1, 0) == 0.015625f);
    // row 0 / (3/448): 74.67 (in [64, 128), step 8: 72), -448, 224
    CHECK(q.values(0, 0) == 72.0f);
    CHECK(q.values(0, 1) == -448.0f);
    CHECK(q.values(0, 2) == 224.0f);
    CHECK(q.values(1, 1) == 6.5f);
  }
  SECTION("a block of zeros gets scale 1 and stays zero") {
    Mat Z = Mat::Zero(3, 2);
    Z(2, 1) = -5.0f;
    const Fp8Tensor q = quantise_e4m3(Z, 2);
    CHECK(q.scales(0, 0) == 1.0f);
    CHECK(q.values.topRows(2).isZero());
    CHECK(q.scales(1, 0) == 5.0f / 448.0f);
    CHECK(q.values(2, 1) == -448.0f);
  }
}

TEST_CASE("fp8 traffic equals the closed form (unmasked), bytes at e4m3 and bf16 plus the scales", "[fp8]") {
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::decode);
  const auto scale = GENERATE(Fp8Scale::per_tensor, Fp8Scale::per_block);
  const auto [nq, nk, d, M] = GENERATE(std::array<int64_t, 4>{97, 97, 16, 1024}, std::array<int64_t, 4>{33, 97, 16, 600},
                                       std::array<int64_t, 4>{97, 40, 32, 2048}, std::array<int64_t, 4>{1, 130, 8, 256},
                                       std::array<int64_t, 4>{64, 64, 64, 16384});
  ProblemSpec spec = fp8_spec(nq, nk, d, M, sched, scale);
  CAPTURE(schedule_name(sched), fp8_scale_name(scale), nq, nk, d, M);
  const Trace t = fstest::run_spec(spec, false);
  const TrafficForm f = fp8_traffic(sched, nq, nk, d, t.tiling);
  CHECK(t.totals.hbm_read_bytes == f.read_bytes(1, 2));
  CHECK(t.totals.hbm_write_bytes == f.write_bytes(1, 2));
  // Q, K, V at one byte: the input part of the bytes is a quarter of float32's
  spec.options = AttentionOptions{};
  const Trace t32 = fstest::run_spec(spec, false);
  CHECK(t.totals.traffic.read[size_t(Tensor::K)] * 4 == t32.totals.traffic.read[size_t(Tensor::K)]);
  CHECK(t.totals.traffic.written[size_t(Tensor::O)] * 2 == t32.totals.traffic.written[size_t(Tensor::O)]);
  CHECK(t.totals.traffic.read[size_t(Tensor::sK)] == 4 * t.tiling.Tr * t.tiling.Tc * (sched == Schedule::fa1 ? 0 : 1) +
                                                        4 * t.tiling.Tc * (sched == Schedule::fa1 ? 1 : 0));
}

TEST_CASE("fp8 flash-decoding with splits and a paged KV cache: traffic equals the closed form", "[fp8]") {
  const auto [splits, page] = GENERATE(std::array<int64_t, 2>{1, 7}, std::array<int64_t, 2>{3, 7}, std::array<int64_t, 2>{4, 16});
  ProblemSpec spec = fp8_spec(50, 300, 16, 1024, Schedule::decode, Fp8Scale::per_block);
  spec.splits = splits;
  spec.page_size = page;
  CAPTURE(splits, page);
  const Trace t = fstest::run_spec(spec, false);
  REQUIRE(t.tiling.S == splits);
  const TrafficForm f = fp8_traffic(Schedule::decode, 50, 300, 16, t.tiling);
  CHECK(t.totals.hbm_read_bytes == f.read_bytes(1, 2));
  CHECK(t.totals.hbm_write_bytes == f.write_bytes(1, 2));
  CHECK(compare(t.O, reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale).O).max_abs < 0.1);
}

TEST_CASE("fp8 causal traffic (Nq = Nk, Br = Bc) equals its hand-derived form", "[fp8]") {
  // Causal, offset 0: tile (i, j) is needed iff j <= i; T blocks of B rows, the last r rows.
  // fa2: row block i reads K, V blocks 0..i, sum_i min((i+1)B, N) = B T(T-1)/2 + N rows; one s_Q
  //   per i and s_K, s_V per needed (i, j): T + T(T+1) scales; writes O (bf16) and L once.
  // fa1: every K_j, V_j is needed (the last row block sees all keys): 2 N d bytes and 2T scales;
  //   each needed (i, j) reads Q_i (1 B), O_i (bf16), l_i, m_i, s_Q and writes O_i, l_i, m_i,
  //   over R = sum_i rows_i (i + 1) = B T(T-1)/2 + r T rows; L2 writes O, l, m once.
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2);
  const auto scale = GENERATE(Fp8Scale::per_tensor, Fp8Scale::per_block);
  const auto [n, B] = GENERATE(std::array<int64_t, 2>{97, 16}, std::array<int64_t, 2>{64, 16}, std::array<int64_t, 2>{130, 32});
  const int64_t d = 16;
  ProblemSpec spec = fp8_spec(n, n, d, 4 * d * 2 * B, sched, scale);
  spec.br = spec.bc = B;
  spec.options.mask.causal = true;
  CAPTURE(schedule_name(sched), fp8_scale_name(scale), n, B);
  const Trace t = fstest::run_spec(spec, false);
  const int64_t T = t.tiling.Tr, r = n - B * (T - 1);
  REQUIRE(t.tiling.Tc == T);
  if (sched == Schedule::fa2) {
    const int64_t kv_rows = B * T * (T - 1) / 2 + n;
    CHECK(t.totals.hbm_read_bytes == n * d + 2 * kv_rows * d + 4 * (T + T * (T + 1)));
    CHECK(t.totals.hbm_write_bytes == 2 * n * d + 4 * n);
  } else {
    const int64_t R = B * T * (T - 1) / 2 + r * T;
    CHECK(t.totals.hbm_read_bytes == 2 * n * d + 4 * 2 * T + R * (d + 2 * d + 8) + 4 * (T * (T + 1) / 2));
    CHECK(t.totals.hbm_write_bytes == 2 * n * d + 8 * n + R * (2 * d + 8));
  }
  CHECK(t.totals.hbm_read_bytes < fp8_traffic(sched, n, n, d, t.tiling).read_bytes(1, 2));
}


TEST_CASE("fp8 error against float64 stays within the format's bound (ragged, Nq != Nk)", "[fp8]") {
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::decode);
  const auto [nq, nk] = GENERATE(std::array<int64_t, 2>{97, 97}, std::array<int64_t, 2>{50, 97}, std::array<int64_t, 2>{97, 33});
  const int64_t d = 16;
  ProblemSpec spec = fp8_spec(nq, nk, d, 1024, sched, Fp8Scale::per_tensor);
  spec.seed = std::random_device{}();
  CAPTURE(schedule_name(sched), nq, nk, spec.seed);
  const Trace t = fstest::run_spec(spec, false);
  const Problem& p = t.problem;
  const MatD Q = p.Q.cast<double>(), K = p.K.cast<double>(), V = p.V.cast<double>();
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale);
  const double sq = Q.cwiseAbs().maxCoeff() / 448, sk = K.cwiseAbs().maxCoeff() / 448, sv = V.cwiseAbs().maxCoeff() / 448;
  const int64_t stores = sched == Schedule::fa1 ? t.tiling.Tc : 1;
  double worst_ratio = 0;
  for (int64_t r = 0; r < nq; ++r) {
    const double bound = fp8_row_bound(Q, K, V, p.scale, sq, sk, sv, r, 0, nk, stores, p.p_dtype == Dtype::fp8);
    const double err = (t.O.row(r).cast<double>() - ref.O.row(r)).cwiseAbs().maxCoeff();
    worst_ratio = std::max(worst_ratio, err / bound);
    REQUIRE(err <= bound);
  }
  const ErrorStats e = compare(t.O, ref.O);
  CHECK(e.max_abs > 1e-3);  // the rounding really happened (bf16 alone would give about 1e-3 less)
  // The bound takes every rounding error pointing the same way; the errors seen are 100 to 250
  // times smaller (docs/fp8.md), not a million.
  CHECK(worst_ratio > 1e-3);
}

// verify --tensor-cores --dtype fp8's check (core/verify.h) without a GPU: the CPU emulation's
// own output stands in for the GPU's. Equal outputs pass with zero difference and the float64
// figures computed here; one element moved by 50 (the format's bound is about 10 here: a worst
// case) fails the float64 checks and nothing else; a NaN
// fails; an lse off by 1e-3 fails the lse check alone.
TEST_CASE("fp8_forward_check: an equal engine passes, a moved element, a NaN and a moved lse fail", "[fp8][verify]") {
  const Trace t = fstest::run_spec(fp8_spec(70, 90, 16, 1024, Schedule::fa2, Fp8Scale::per_block), false);
  const Problem& p = t.problem;
  std::vector<float> O(t.O.data(), t.O.data() + t.O.size()), lse(t.lse.data(), t.lse.data() + t.lse.size());
  const Fp8ForwardCheck same = fp8_forward_check(t, O.data(), lse.data(), {}, 0.0, 0.0);
  CHECK(same.identical == t.O.size());
  CHECK(same.O.max_abs == 0);
  CHECK(same.lse.max_abs == 0);
  REQUIRE(same.measured);
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask);
  double err = 0;
  for (int64_t r = 0; r < p.nq; ++r)
    for (int64_t c = 0; c < p.d; ++c) err = std::max(err, std::abs(double(t.O(r, c)) - ref.O(r, c)));
  CHECK(same.cpu_O.max_abs == err);
  CHECK(same.gpu_O.max_abs == err);
  CHECK(same.allowed == 2 * err);
  CHECK(same.gpu_ratio == same.cpu_ratio);
  CHECK(same.cpu_ratio > 0);
  CHECK(same.cpu_ratio <= 1);
  CHECK(same.pass());

  O[size_t(5 * 16 + 3)] += 50.0f;
  const Fp8ForwardCheck moved = fp8_forward_check(t, O.data(), lse.data(), {}, 0.0, 0.0);
  CHECK(moved.identical == t.O.size() - 1);
  CHECK(moved.O.max_abs == Approx(50.0).margin(1e-5));
  CHECK(moved.lse_ok());
  CHECK_FALSE(moved.sharp_ok());
  CHECK_FALSE(moved.bound_ok());
  CHECK(moved.gpu_ratio > 1);
  CHECK(moved.cpu_ratio == same.cpu_ratio);
  CHECK_FALSE(moved.pass());

  O[size_t(5 * 16 + 3)] = NAN;
  CHECK(fp8_forward_check(t, O.data(), lse.data(), {}, 0.0, 0.0).nan);
  CHECK_FALSE(fp8_forward_check(t, O.data(), lse.data(), {}, 0.0, 0.0).pass());

  O[size_t(5 * 16 + 3)] = t.O(5, 3);
  lse[7] += 1e-3f;  // over 4 dS + 1e-5 max(1, max|lse|) with dS = 0
  const Fp8ForwardCheck lse_moved = fp8_forward_check(t, O.data(), lse.data(), {}, 0.0, 0.0);
  CHECK_FALSE(lse_moved.lse_ok());
  CHECK(lse_moved.sharp_ok());
  CHECK(lse_moved.bound_ok());
  CHECK_FALSE(lse_moved.pass());
}

TEST_CASE("fp8 with one K/V block equals a direct emulation of the format", "[fp8]") {
  // With Bc >= Nk there is one K/V block, so P~ = exp(S - rowmax S) as a plain emulation computes
  // it: quantise Q, K, V per tensor (the oracle's rounding), S = Qq Kq^T tau s_q s_k, P~ in e4m3
  // (fa2; decode keeps it in float32), O = (P~ Vq) s_v / rowsum(P~ before rounding), O in bf16
  // (checked to a bf16 step).
  const int64_t nq = 37, nk = 29, d = 16;
  const Schedule sched = GENERATE(Schedule::fa2, Schedule::decode);
  ProblemSpec spec = fp8_spec(nq, nk, d, 4 * d * 32, sched, Fp8Scale::per_tensor);
  spec.bc = 32;
  spec.seed = std::random_device{}();
  const Trace t = fstest::run_spec(spec, false);
  const Problem& p = t.problem;
  auto quant = [](const Mat& X, float& s) {
    s = X.cwiseAbs().maxCoeff() / 448.0f;
    Mat q = X;
    for (int64_t k = 0; k < q.size(); ++k) q.data()[k] = oracle_round(X.data()[k] / s);
    return q;
  };
  float sq = 0, sk = 0, sv = 0;
  const MatD Qq = quant(p.Q, sq).cast<double>(), Kq = quant(p.K, sk).cast<double>(), Vq = quant(p.V, sv).cast<double>();
  const MatD S = (Qq * Kq.transpose()) * double(p.scale * sq * sk);
  for (int64_t r = 0; r < nq; ++r) {
    const double m = S.row(r).maxCoeff();
    double l = 0;
    Eigen::RowVectorXd Pq(nk);
    for (int64_t c = 0; c < nk; ++c) {
      const double w = std::exp(S(r, c) - m);
      l += w;
      Pq(c) = sched == Schedule::fa2 ? oracle_round(float(w)) : w;
    }
    const Eigen::RowVectorXd O = (Pq * Vq) * double(sv) / l;
    for (int64_t c = 0; c < d; ++c) {
      CAPTURE(schedule_name(sched), r, c, spec.seed);
      REQUIRE_THAT(double(t.O(r, c)), WithinAbs(O(c), std::ldexp(std::fabs(O(c)), -8) + 1e-6));
    }
  }
}

TEST_CASE("the Hadamard rotation leaves the scores unchanged", "[fp8]") {
  const int64_t d = GENERATE(1, 2, 16, 64, 128);
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<double> normal;
  MatD Q(23, d), K(31, d);
  for (int64_t k = 0; k < Q.size(); ++k) Q.data()[k] = normal(rng);
  for (int64_t k = 0; k < K.size(); ++k) K.data()[k] = normal(rng);
  const MatD R = hadamard_rotation(d, rng());
  CHECK((R * R.transpose() - MatD::Identity(d, d)).cwiseAbs().maxCoeff() < 1e-14);
  const MatD S = Q * K.transpose(), Sr = (Q * R) * (K * R).transpose();
  CHECK((S - Sr).cwiseAbs().maxCoeff() < 1e-12 * std::max(1.0, S.cwiseAbs().maxCoeff()));
  if (d >= 16) {  // the rotation spreads a lone outlier over every column
    MatD x = MatD::Zero(1, d);
    x(0, 3) = 20;
    CHECK((x * R).cwiseAbs().maxCoeff() == Approx(20 / std::sqrt(double(d))));
  }
  CHECK_THROWS_AS(hadamard_rotation(48, 1), InputError);
}

TEST_CASE("the fp8 steps record their scales and rounding errors", "[fp8]") {
  ProblemSpec spec = fp8_spec(40, 50, 16, 1024, Schedule::fa2, Fp8Scale::per_block);
  spec.options.rotate = true;
  const Trace t = fstest::run_spec(spec, true);
  const Problem& p = t.problem;
  const Mat Qr = rotated_input(p, p.Q);
  const auto block_scale = [](const Mat& X, int64_t row0, int64_t rows) {
    return X.middleRows(row0, std::min(rows, X.rows() - row0)).cwiseAbs().maxCoeff() / 448.0f;
  };
  int scores = 0, updates = 0;
  for (const Step& s : t.steps) {
    CAPTURE(s.i, s.j);
    if (line_role(s.line) == LineRole::scores) {
      ++scores;
      CHECK(s.fp8_scale_a == block_scale(Qr, s.i * t.tiling.Br, t.tiling.Br));
      CHECK(s.fp8_scale_b == block_scale(rotated_input(p, p.K), s.j * t.tiling.Bc, t.tiling.Bc));
      CHECK(s.fp8_error > 0);
      CHECK(s.fp8_error < 0.5);
    } else if (line_role(s.line) == LineRole::accumulate_o) {
      ++updates;
      CHECK(s.fp8_scale_a == 1.0f);
      CHECK(s.fp8_scale_b == block_scale(p.V, s.j * t.tiling.Bc, t.tiling.Bc));
      CHECK(s.fp8_error > 0);
      CHECK(s.fp8_error <= 1.0 / 32);  // P~ <= 1: half of e4m3's step 2^-4 in [0.5, 1)
    }
  }
  CHECK(scores == t.tiling.Tr * t.tiling.Tc);
  CHECK(updates == scores);
}

TEST_CASE("the outliers pattern (--pattern outliers): a few large entries per row, the rest standard normal", "[fp8]") {
  const Mat X = make_input("outliers", 200, 64, 5, 0);
  for (int64_t r = 0; r < X.rows(); ++r) {
    int large = 0;
    for (int64_t c = 0; c < X.cols(); ++c) large += std::fabs(X(r, c)) >= 10.0f;
    CAPTURE(r);
    CHECK(large >= 1);
    CHECK(large <= 2);
    CHECK(X.row(r).cwiseAbs().maxCoeff() <= 30.0f);
  }
}

TEST_CASE("fp8 per-block with rotation beats per-tensor on outliers", "[fp8]") {
  ProblemSpec spec = fp8_spec(256, 256, 64, 16384, Schedule::fa2, Fp8Scale::per_tensor);
  spec.pattern = "outliers";
  const auto err = [&](Fp8Scale scale, bool rotate) {
    ProblemSpec s = spec;
    s.options.fp8_scale = scale;
    s.options.rotate = rotate;
    const Trace t = fstest::run_spec(s, false);
    return compare(t.O, reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale).O).rms;
  };
  const double tensor = err(Fp8Scale::per_tensor, false), rotated = err(Fp8Scale::per_block, true);
  CAPTURE(tensor, rotated);
  CHECK(rotated < tensor);
}

TEST_CASE("fp8 on the command line: the storages line lists what each storage's own run prints", "[fp8][cli]") {
  // Each run prints its own error ("fp8 error  O RMSE v (per-block, rotated)") and, on one line,
  // every storage's on the same inputs. Run each storage alone: the line of any one lists them all.
  using fstest::run_flashstep;
  const std::string base = "run --schedule fa2 --n 96 --d 32 --M 4096 --pattern outliers --dtype fp8";
  const std::vector<std::pair<std::string, std::string>> storages = {
      {"", "per-tensor"},
      {" --fp8-scale per-block", "per-block"},
      {" --fp8-scale per-block --rotate", "per-block rotated"}};
  auto number_after = [](const std::string& out, const std::string& label) {
    const size_t at = out.find(label);
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(at + label.size()));
  };
  std::vector<double> own;
  std::vector<std::string> outs;
  for (const auto& [flags, name] : storages) {
    const auto r = run_flashstep(base + flags);
    REQUIRE(r.rc == 0);
    own.push_back(number_after(r.out, "fp8 error  O RMSE "));
    outs.push_back(r.out);
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    CAPTURE(storages[k].second, outs[k]);
    for (size_t e = 0; e < storages.size(); ++e) {
      const std::string label = "; fp8 " + storages[e].second + " ";
      CHECK(number_after(outs[k], label) == Approx(own[e]).epsilon(2e-3));  // printed to 3 digits
      const size_t at = outs[k].find(label), end = outs[k].find_first_of(";\n", at + 1);
      CHECK((outs[k].substr(at, end - at).find("(this run)") != std::string::npos) == (e == k));
    }
    CHECK(number_after(outs[k], "storages   O RMSE on these inputs: bf16 ") ==
          Approx(number_after(outs[k], "bf16 error O RMSE ")).epsilon(1e-9));
  }
  // A run per tensor with the rotation is none of the three: the line adds it, marked.
  const auto pt_rot = run_flashstep(base + " --rotate");
  REQUIRE(pt_rot.rc == 0);
  const std::string rot_label = "; fp8 per-tensor rotated ";
  REQUIRE(pt_rot.out.find(rot_label) != std::string::npos);
  CHECK(number_after(pt_rot.out, rot_label) == Approx(number_after(pt_rot.out, "fp8 error  O RMSE ")).epsilon(1e-9));
  CHECK(pt_rot.out.find("(this run)", pt_rot.out.find(rot_label)) != std::string::npos);
  for (size_t e = 0; e < storages.size(); ++e)
    CHECK(number_after(pt_rot.out, "; fp8 " + storages[e].second + " ") == Approx(own[e]).epsilon(2e-3));
  for (const std::string& out : outs)  // only where it is the run's own
    CHECK(out.find(rot_label) == std::string::npos);
  // The rotation needs d a power of two: without it the line says why there is no rotated row.
  const auto odd = run_flashstep("run --n 40 --d 12 --M 4096 --dtype fp8");
  REQUIRE(odd.rc == 0);
  CHECK(odd.out.find("fp8 per-block rotated") == std::string::npos);
  CHECK(odd.out.find("no rotation (d = 12 is not a power of two)") != std::string::npos);
}

TEST_CASE("fp8 on the command line: the summary and the refusals", "[fp8][cli]") {
  using fstest::run_flashstep;
  const auto ok = run_flashstep("run --n 97 --d 16 --dtype fp8 --fp8-scale per-block --rotate");
  REQUIRE(ok.rc == 0);
  CHECK(ok.out.find("per-block float32 scales") != std::string::npos);
  CHECK(ok.out.find("fp8 error  O RMSE") != std::string::npos);
  CHECK(ok.out.find("bf16 error O RMSE") != std::string::npos);
  CHECK(ok.out.find("DIFFERENT") == std::string::npos);
  CHECK(ok.out.find(": equal)") != std::string::npos);
  const std::pair<const char*, const char*> bad[] = {
      {"run --dtype fp8 --backward", "no backward"},
      {"run --dtype fp8 --schedule standard", "fa1, fa2 or decode"},
      {"run --fp8-scale per-block", "--fp8-scale is for --dtype fp8"},
      {"run --rotate", "--rotate is for --dtype fp8"},
      {"run --dtype bf16 --rotate", "--rotate is for --dtype fp8"},
      {"run --dtype fp8 --fp8-scale per-row", "per-tensor or per-block"},
      {"run --dtype fp8 --rotate --d 48", "power of two"},
      {"run --dtype fp8 --p-dtype bf16", "drop --p-dtype"},
      {"run --dtype bf16 --p-dtype fp8", "--p-dtype takes fp16 or bf16"},
      {"run --dtype fp8 --snapshots /tmp/fp8-never-written", "snapshot"},
      {"verify --dtype fp8", "on the GPU FP8 runs in flash-decoding"},
      {"gpu --dtype fp8", "on the GPU FP8 runs in flash-decoding"},
      {"bench-gpu --dtype fp8", "on the GPU FP8 runs in flash-decoding"},
      {"explain --dtype fp8", "run --dtype fp8"},
      {"run --dtype fp4", "fp32, fp16, bf16 or fp8"},
  };
  for (const auto& [args, words] : bad) {
    const auto o = run_flashstep(args);
    CAPTURE(args, o.out);
    CHECK(o.rc == 2);
    CHECK(fstest::one_error_line(o.out));
    CHECK(o.out.find(words) != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists("/tmp/fp8-never-written"));
}

TEST_CASE("missing_path: which schedule has which path, written out by hand", "[fp8]") {
  // The table the refusals and the memory panel's notes both read: decode has no backward,
  // standard attention no FP8 forward, and FP8 no backward anywhere.
  struct Row {
    Schedule s;
    Dtype dt;
    bool backward;
    MissingPath want;
  };
  const Row rows[] = {
      {Schedule::fa1, Dtype::fp32, true, MissingPath::none},
      {Schedule::fa2, Dtype::bf16, true, MissingPath::none},
      {Schedule::standard, Dtype::fp16, true, MissingPath::none},
      {Schedule::decode, Dtype::fp32, false, MissingPath::none},
      {Schedule::decode, Dtype::fp32, true, MissingPath::backward},
      {Schedule::decode, Dtype::fp8, false, MissingPath::none},
      {Schedule::decode, Dtype::fp8, true, MissingPath::backward},
      {Schedule::standard, Dtype::fp8, false, MissingPath::fp8_version},
      {Schedule::standard, Dtype::fp8, true, MissingPath::fp8_version},
      {Schedule::fa1, Dtype::fp8, false, MissingPath::none},
      {Schedule::fa2, Dtype::fp8, true, MissingPath::fp8_backward},
  };
  for (const Row& r : rows) {
    CAPTURE(schedule_info(r.s).name, dtype_name(r.dt), r.backward);
    CHECK(missing_path(schedule_info(r.s), r.dt, r.backward) == r.want);
  }
}
