// The variant lists the tensor-core paths print in their errors and the CLI in its help, derived
// from the predicates that decide which variants exist (bwd_variant_for_d, fp8_ladder_rung) so that
// the two cannot drift. Plain C++: app/ includes it in builds with and without CUDA.
#pragma once
#include <string>

#include "gpu/bwd_tc_launch.h"
#include "gpu/tc_launch.h"

namespace flashstep::gpu {

// The variants v in 1..last with keep(v), in order: runs of three or more as a range, the last
// one after "and" ("3, 8, 18-20, 22 and 27"); "" when none is kept.
template <class Keep>
std::string variant_list(int last, Keep keep) {
  std::string out, prev;
  auto flush = [&](const std::string& item) {
    if (!prev.empty()) out += (out.empty() ? "" : ", ") + prev;
    prev = item;
  };
  for (int v = 1; v <= last; ++v) {
    if (!keep(v)) continue;
    int end = v;
    while (end + 1 <= last && keep(end + 1)) ++end;
    if (end - v >= 2) {
      flush(std::to_string(v) + "-" + std::to_string(end));
    } else {
      for (int k = v; k <= end; ++k) flush(std::to_string(k));
    }
    v = end;
  }
  if (prev.empty()) return out;
  return out.empty() ? prev : out + " and " + prev;
}

// The tensor-core backward's variants that exist at head dimension d (64 or 128) and not at the other.
inline std::string bwd_variants_of_one_d(int d) {
  const int other = d == 64 ? 128 : 64;
  return variant_list(tc::kBwdWgmmaLast,
                      [&](int v) { return tc::bwd_variant_for_d(v, d) && !tc::bwd_variant_for_d(v, other); });
}

// The ladder's FP8 forward rungs that exist at d = 64 and at d = 128 as asked.
inline std::string fp8_rungs_at(bool d64, bool d128) {
  return variant_list(tc::kFp8LadderLast, [=](int v) {
    return tc::fp8_ladder_rung(64, v) == d64 && tc::fp8_ladder_rung(128, v) == d128;
  });
}

}  // namespace flashstep::gpu
