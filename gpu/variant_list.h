// The variant lists the tensor-core paths print in their errors, derived from the predicates that
// decide which variants exist (bwd_variant_for_d, fp8_ladder_rung) so that the two cannot drift.
#pragma once
#include <string>

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

}  // namespace flashstep::gpu
