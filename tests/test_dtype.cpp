// Storage precision (fp16, bf16) on the CPU: rounding, bytes moved, and the size of the errors.
#include "core/closed_form.h"
#include "core/reference.h"
#include "core/schedules/fa1/fa1.h"
#include "core/schedules/fa2/fa2.h"
#include "core/schedules/standard/standard.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

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
  s.nq = 70; s.nk = 90; s.d = 16; s.M = 600; s.seed = 31; s.options.dtype = dtype; s.schedule = sched;
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
