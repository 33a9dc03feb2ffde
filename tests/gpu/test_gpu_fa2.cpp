// GPU backend [gpu]: FlashAttention-2 on the GPU against the CPU fa2 engine and
// float64 on ragged shapes (final O and lse: its per-j state never leaves the chip).
//
// Fresh random inputs per test (the seed is printed on failure); the backend poisons every
// device output with NaN before a run. Without a GPU each test prints "SKIPPED: <reason>" and
// ctest reports it as skipped.
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

TEST_CASE("GPU FA2 equals the CPU FA2 engine and float64 on ragged shapes", "[gpu][fa2]") {
  REQUIRE_GPU_OR_SKIP();
  struct C { int64_t nq, nk, d, br, bc; int variant; };
  const C c = GENERATE(C{64, 64, 16, 16, 16, 1}, C{100, 100, 32, 8, 8, 1}, C{77, 130, 40, 13, 13, 1},
                       C{50, 40, 24, 7, 5, 1}, C{97, 1025, 128, 64, 64, 1},
                       C{1000, 700, 64, 64, 128, 2}, C{300, 513, 128, 64, 64, 2}, C{129, 77, 64, 128, 64, 2},
                       C{200, 333, 64, 64, 64, 2}, C{1, 1, 64, 64, 128, 2});
  const uint64_t seed = fresh_seed();
  INFO("Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Br " << c.br << " Bc " << c.bc << " variant "
             << c.variant << " seed " << seed);
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = c.d;
  s.seed = seed;
  s.schedule = Schedule::fa2;
  check_schedule(s, c.br, c.bc, c.variant);
}
