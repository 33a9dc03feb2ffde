// FlashAttention-2 loop order and masks (causal, sliding window, key padding) on the CPU.
#include "core/closed_form.h"
#include "core/philox.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

namespace {

ProblemSpec golden_spec(const std::string& name, double scale) {
  ProblemSpec s;
  s.q_path = fstest::golden(name + ".q.npy");
  s.k_path = fstest::golden(name + ".k.npy");
  s.v_path = fstest::golden(name + ".v.npy");
  s.scale = scale;
  s.d = read_npy_matrix(s.q_path).cols();
  return s;
}

// HBM elements moved, counted block by block from the mask: what skipping must give.
TrafficForm expected_traffic(const Problem& p, const Tiling& t) {
  TrafficForm f;
  const int64_t d = p.d;
  if (p.schedule == Schedule::fa2) {
    f.read_elems = p.nq * d;
    f.write_elems = p.nq * d + p.nq;
  } else {
    f.write_elems = p.nq * (d + 2);
  }
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t bc = t.rows_in_kv_block(j, p.nk);
    bool needed = false;
    for (int64_t i = 0; i < t.Tr; ++i) {
      const int64_t br = t.rows_in_q_block(i, p.nq);
      if (p.mask.classify(i * t.Br, i * t.Br + br, j * t.Bc, j * t.Bc + bc, p.nk) == Mask::Block::empty) continue;
      needed = true;
      if (p.schedule == Schedule::fa2) {
        f.read_elems += 2 * bc * d;
      } else {
        f.read_elems += br * (2 * d + 2);
        f.write_elems += br * (d + 2);
      }
    }
    if (needed && p.schedule == Schedule::fa1) f.read_elems += 2 * bc * d;
  }
  return f;
}

}  // namespace

TEST_CASE("FA2 order matches the golden cases and the reference to 1e-5", "[fa2][golden]") {
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{7, 13},
                               std::pair<int64_t, int64_t>{32, 5});
  for (const auto& [name, scale] : {std::pair<std::string, double>{"n100_d32_ragged", 0.17677669529663687},
                                    {"cross_nq77_nk130_d40", 0.15811388300841897},
                                    {"n96_d32_large_logits", 0.17677669529663687}}) {
    CAPTURE(name, blocks.first, blocks.second);
    ProblemSpec s = golden_spec(name, scale);
    s.schedule = Schedule::fa2;
    s.M = 4096;
    s.br = blocks.first;
    s.bc = blocks.second;
    const Trace t = fstest::run_spec(s, true);
    CHECK(compare(t.O, read_npy_matrix(fstest::golden(name + ".o.npy")).cast<double>()).max_rel < 1e-5);
    const NpyArray lse = read_npy(fstest::golden(name + ".lse.npy"));
    CHECK(compare(t.lse, Eigen::Map<const Vec>(lse.data.data(), int64_t(lse.data.size())).cast<double>()).max_rel < 1e-5);
  }
}

TEST_CASE("FA2 traffic equals its closed form exactly and writes no l or m", "[fa2][traffic]") {
  struct Size { int64_t nq, nk, d, M, br, bc; };
  const Size sizes[] = {{64, 64, 16, 1024, 0, 0}, {100, 100, 32, 1000, 0, 0}, {77, 130, 40, 2048, 0, 0},
                        {130, 77, 8, 100, 0, 0},  {1, 1, 4, 16, 0, 0},        {50, 70, 12, 4096, 7, 9},
                        {1024, 1024, 64, 16384, 0, 0}};
  for (const Size& z : sizes) {
    CAPTURE(z.nq, z.nk, z.d, z.M, z.br, z.bc);
    ProblemSpec s;
    s.nq = z.nq; s.nk = z.nk; s.d = z.d; s.M = z.M; s.br = z.br; s.bc = z.bc;
    s.schedule = Schedule::fa2;
    const Trace t = fstest::run_spec(s, z.nq < 1000);
    const TrafficForm f = fa2_traffic(z.nq, z.nk, z.d, t.tiling.Tr);
    CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
    CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
    CHECK(t.totals.traffic.written[int(Tensor::l)] == 0);
    CHECK(t.totals.traffic.written[int(Tensor::m)] == 0);
    CHECK(t.totals.traffic.read[int(Tensor::O)] == 0);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale);
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
  }
}

TEST_CASE("the causal golden case matches for every schedule and block size", "[mask][golden]") {
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{16, 16},
                               std::pair<int64_t, int64_t>{5, 11}, std::pair<int64_t, int64_t>{32, 7});
  CAPTURE(schedule_name(sched), blocks.first, blocks.second);
  ProblemSpec s = golden_spec("n128_d64_causal", 0.125);
  s.causal = true;
  s.schedule = sched;
  s.M = 16384;
  s.br = blocks.first;
  s.bc = blocks.second;
  const Trace t = fstest::run_spec(s, true);
  CHECK(compare(t.O, read_npy_matrix(fstest::golden("n128_d64_causal.o.npy")).cast<double>()).max_rel < 1e-5);
  const NpyArray lse = read_npy(fstest::golden("n128_d64_causal.lse.npy"));
  CHECK(compare(t.lse, Eigen::Map<const Vec>(lse.data.data(), 128).cast<double>()).max_rel < 1e-5);
  if (sched != Schedule::standard) {
    // Blocks above the diagonal are skipped: no traffic, no FLOPs, and the totals say so.
    size_t skipped = 0;
    for (const Step& st : t.steps)
      if (st.line == Line::A1_SKIP || st.line == Line::A2_SKIP) {
        ++skipped;
        CHECK(st.hbm_read == 0);
        CHECK(st.hbm_write == 0);
        CHECK(st.flops == 0);
      }
    CHECK(skipped > 0);
    const TrafficForm f = expected_traffic(t.problem, t.tiling);
    CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
    CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
  }
}

TEST_CASE("masks match the masked float64 reference on fresh inputs", "[mask]") {
  struct Case { int64_t nq, nk; bool causal; int64_t wl, wr, kv; };
  const Case cases[] = {{40, 40, true, -1, -1, -1},  {30, 70, true, -1, -1, -1},  {70, 30, true, -1, -1, -1},
                        {50, 50, false, 8, 3, -1},   {50, 50, true, 10, -1, -1},  {45, 60, false, -1, -1, 33},
                        {45, 60, true, 5, 0, 50},    {20, 20, false, 0, 0, -1},   {33, 17, false, -1, -1, 0}};
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  static uint64_t seed = 777;
  for (const Case& c : cases) {
    ProblemSpec s;
    s.nq = c.nq; s.nk = c.nk; s.d = 8; s.M = 96; s.seed = ++seed;
    s.causal = c.causal; s.window_left = c.wl; s.window_right = c.wr; s.kv_len = c.kv;
    s.schedule = sched;
    CAPTURE(schedule_name(sched), c.nq, c.nk, c.causal, c.wl, c.wr, c.kv, s.seed);
    const Trace t = fstest::run_spec(s, true);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale, t.problem.mask);
    CHECK(t.O.allFinite());  // never NaN, also for rows that keep no key
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
    CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);
    for (int64_t r = 0; r < c.nq; ++r)
      if (ref.lse(r) == -INFINITY) {  // a row whose keys are all masked: O = 0, lse = -inf
        CHECK(t.lse(r) == -INFINITY);
        CHECK(t.O.row(r).isZero(0));
      }
    if (sched != Schedule::standard) {
      const TrafficForm f = expected_traffic(t.problem, t.tiling);
      CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
      CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
    }
  }
}

TEST_CASE("causal with Nq greater than Nk leaves the first rows fully masked", "[mask]") {
  ProblemSpec s;
  s.nq = 12; s.nk = 5; s.d = 4; s.M = 64; s.causal = true;  // offset -7: rows 0..6 keep nothing
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    s.schedule = sc;
    const Trace t = fstest::run_spec(s, true);
    for (int64_t r = 0; r < 7; ++r) {
      CHECK(t.lse(r) == -INFINITY);
      CHECK(t.O.row(r).isZero(0));
    }
    for (int64_t r = 7; r < 12; ++r) CHECK(std::isfinite(t.lse(r)));
  }
}

TEST_CASE("Philox 4x32-10 reproduces the Random123 known-answer vectors", "[dropout]") {
  const Philox4 zero = philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const Philox4 ones = philox4x32_10(Philox4{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
}

TEST_CASE("dropout draws the same mask in every schedule and matches the reference", "[dropout]") {
  ProblemSpec s;
  s.nq = 37; s.nk = 45; s.d = 8; s.M = 96; s.dropout = 0.3; s.seed = 2024;
  Mat first;
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    s.schedule = sc;
    const Trace t = fstest::run_spec(s, true);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale,
                                              t.problem.mask, t.problem.dropout, t.problem.seed);
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
    CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);  // lse ignores dropout
    if (first.size() == 0) first = t.O;
    else CHECK(compare(t.O, first.cast<double>()).max_rel < 1e-6);
    // The recorded keep masks drop about p of the entries.
    double kept = 0, total = 0;
    for (const Step& st : t.steps)
      if (st.dropout_keep.size()) {
        kept += st.dropout_keep.sum();
        total += double(st.dropout_keep.size());
      }
    REQUIRE(total == double(37 * 45));
    CHECK(1.0 - kept / total == Approx(0.3).margin(0.05));
  }
  // The same seed gives the same result; another seed another.
  s.schedule = Schedule::fa1;
  CHECK(fstest::run_spec(s, false).O == first);
  s.seed = 2025;
  CHECK(fstest::run_spec(s, false).O != first);
}

TEST_CASE("storage rounding to fp16 and bf16 is round-to-nearest-even", "[dtype]") {
  CHECK(round_to(Dtype::bf16, 1.0f + 1.0f / 256) == 1.0f);            // tie: down to even
  CHECK(round_to(Dtype::bf16, 1.0f + 3.0f / 256) == 1.0f + 4.0f / 256);  // tie: up to even
  CHECK(round_to(Dtype::bf16, 1.0f + 1.5f / 256) == 1.0f + 2.0f / 256);
  CHECK(round_to(Dtype::fp16, 1.0f + 1.0f / 2048) == 1.0f);
  CHECK(round_to(Dtype::fp16, 1.0f / 3) == 0.333251953125f);
  CHECK(round_to(Dtype::fp16, 65504.0f) == 65504.0f);
  CHECK(round_to(Dtype::fp32, 0.1f) == 0.1f);
}

TEST_CASE("half-precision storage: bytes at the stored size and errors of the expected size", "[dtype]") {
  const auto dtype = GENERATE(Dtype::fp16, Dtype::bf16);
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  ProblemSpec s;
  s.nq = 70; s.nk = 90; s.d = 16; s.M = 600; s.seed = 31; s.dtype = dtype; s.schedule = sched;
  CAPTURE(dtype_name(dtype), schedule_name(sched));
  const Trace t = fstest::run_spec(s, true);
  const TrafficForm f = sched == Schedule::fa1   ? fa1_traffic(70, 90, 16, t.tiling.Tc)
                        : sched == Schedule::fa2 ? fa2_traffic(70, 90, 16, t.tiling.Tr)
                                                 : standard_traffic(70, 90, 16);
  CHECK(t.totals.hbm_read_bytes == f.read_bytes(2));
  CHECK(t.totals.hbm_write_bytes == f.write_bytes(2));
  // O is stored in the storage type: every element is representable in it.
  for (int64_t k = 0; k < t.O.size(); ++k) REQUIRE(round_to(dtype, t.O.data()[k]) == t.O.data()[k]);
  const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale);
  const double err = compare(t.O, ref.O).max_rel;
  // fp16 has 11 significant bits, bf16 8: errors near 2^-11 and 2^-8 relative.
  CHECK(err > 1e-5);  // the rounding really happened
  CHECK(err < (dtype == Dtype::fp16 ? 4e-3 : 3e-2));
}
