// --p-dtype: the CPU engine's emulation of a tensor-core kernel's rounding: P~_ij is
// rounded to fp16 / bf16 before the P~_ij V_j product, as the kernel does in registers.
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <random>

using namespace flashstep;

namespace {

// A problem whose Q, K, V are already values of the storage type, so that the float64
// reference and a hand emulation see exactly what the engine sees.
Problem rounded_problem(int64_t nq, int64_t nk, int64_t d, Dtype dtype, Dtype p_dtype, uint64_t seed,
                        Schedule sched = Schedule::fa2, bool causal = false) {
  ProblemSpec s;
  s.nq = nq; s.nk = nk; s.d = d; s.M = 1 << 16; s.seed = seed; s.schedule = sched;
  s.options.dtype = dtype;
  s.options.p_dtype = p_dtype;
  s.options.mask.causal = causal;
  Problem p = make_problem(s);
  for (Mat* m : {&p.Q, &p.K, &p.V}) round_in_place(dtype, m->data(), m->size());
  return p;
}

Trace run_with_blocks(Problem p, int64_t br, int64_t bc) {
  p.br = br;
  p.bc = bc;
  RunOptions opt;
  opt.record = false;
  return run_problem(p, make_tiling(p), opt);
}

using fstest::fresh_seed;

double unit_roundoff(Dtype t) { return t == Dtype::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

}  // namespace

TEST_CASE("p_dtype: O moves by about the rounding of P~, no more", "[p_dtype]") {
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const auto sched = GENERATE(Schedule::fa2, Schedule::fa1);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), schedule_name(sched), seed);
  const Problem plain = rounded_problem(37, 53, 16, t, Dtype::fp32, seed, sched);
  const Problem emul = rounded_problem(37, 53, 16, t, t, seed, sched);
  const Trace a = run_with_blocks(plain, 8, 12), b = run_with_blocks(emul, 8, 12);  // ragged blocks
  const double u = unit_roundoff(t), max_v = plain.V.cwiseAbs().maxCoeff();
  const double moved = (a.O - b.O).cwiseAbs().maxCoeff();
  CHECK(moved > 0);  // the rounding happened
  // Rounding P~ moves O by at most u max|V| before O is stored; storing may then land one ulp
  // of O (2u |O| <= 2u max|V|) apart. fa1 stores O at every j: one such ulp per block.
  const double blocks = sched == Schedule::fa1 ? double(a.tiling.Tc) : 1.0;
  CHECK(moved <= (1 + 2 * blocks) * u * max_v);
  CHECK(moved >= 1e-3 * u * max_v);  // of the size of the type's rounding, not float32 noise
  // lse comes from l, summed from the float32 P~ on both sides: identical.
  CHECK((a.lse - b.lse).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("p_dtype: fa2 equals a direct emulation, bit for bit", "[p_dtype]") {
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const int64_t bc = GENERATE(int64_t(64), int64_t(16), int64_t(13));  // one K/V block, several, ragged
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), bc, seed);
  const int64_t nq = 9, nk = 41, d = 8;
  const Problem p = rounded_problem(nq, nk, d, t, t, seed);
  const Trace tr = run_with_blocks(p, nq, bc);  // one Q block: the same matrix shapes below
  // FA2fwd L8-L12 written out: running max, P~ in float32 for l, rounded for P~ V.
  Mat O = Mat::Zero(nq, d);
  Vec m = Vec::Constant(nq, -INFINITY), l = Vec::Zero(nq);
  for (int64_t col0 = 0; col0 < nk; col0 += bc) {
    const int64_t w = std::min(bc, nk - col0);
    const Mat Kj = p.K.middleRows(col0, w), Vj = p.V.middleRows(col0, w);
    Mat S(nq, w);
    S.noalias() = p.Q * Kj.transpose();
    S *= p.scale;
    for (int64_t r = 0; r < nq; ++r) {
      const float m_new = std::max(m(r), S.row(r).maxCoeff());
      const float alpha = m(r) == -INFINITY ? 0.0f : std::exp(m(r) - m_new);
      S.row(r) = S.row(r).unaryExpr([m_new](float x) { return std::exp(x - m_new); });
      l(r) = alpha * l(r) + 1.0f * S.row(r).sum();
      m(r) = m_new;
      O.row(r) *= alpha;
    }
    for (int64_t k = 0; k < S.size(); ++k) S.data()[k] = round_to(t, S.data()[k]);
    Mat PV(nq, d);
    PV.noalias() = S * Vj;
    O += PV;
  }
  for (int64_t r = 0; r < nq; ++r)
    for (int64_t c = 0; c < d; ++c) O(r, c) = round_to(t, O(r, c) / l(r));
  int64_t same = 0;
  for (int64_t k = 0; k < O.size(); ++k) same += O.data()[k] == tr.O.data()[k];
  CHECK(same == O.size());
}

TEST_CASE("p_dtype: error against float64 within FlashAttention's rule", "[p_dtype]") {
  // The flash output's error is at most about twice that of standard attention in the same
  // precision (S and P stored in the 16-bit type) on the same inputs.
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const bool causal = GENERATE(false, true);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), causal, seed);
  const int64_t nq = 97, nk = 131, d = 32;
  const Problem flash = rounded_problem(nq, nk, d, t, t, seed, Schedule::fa2, causal);
  const Problem standard = rounded_problem(nq, nk, d, t, Dtype::fp32, seed, Schedule::standard, causal);
  const Trace f = run_with_blocks(flash, 32, 24), s = run_with_blocks(standard, 0, 0);
  const Reference ref = reference_attention(flash.Q, flash.K, flash.V, flash.scale, flash.mask);
  const double ef = compare(f.O, ref.O).max_abs, es = compare(s.O, ref.O).max_abs;
  CAPTURE(ef, es);
  CHECK(ef > 0);
  CHECK(ef <= 2 * es + 1e-6 * flash.V.cwiseAbs().maxCoeff());
  // And the derived bound: P~ and O each rounded once, at most u max|V| each.
  CHECK(ef <= 2 * unit_roundoff(t) * flash.V.cwiseAbs().maxCoeff());
}

TEST_CASE("p_dtype: requests that emulate no kernel are refused", "[p_dtype][errors]") {
  ProblemSpec s;
  s.d = 16;
  s.schedule = Schedule::fa2;
  s.options.p_dtype = Dtype::bf16;  // with float32 storage
  CHECK_THROWS_WITH(validate_sizes(s), Catch::Contains("16-bit inputs"));
  s.options.dtype = Dtype::bf16;
  CHECK_NOTHROW(validate_sizes(s));
  s.schedule = Schedule::standard;
  CHECK_THROWS_WITH(validate_sizes(s), Catch::Contains("standard attention already"));
}
