// The ladder's rung tables (gpu/ladder/fa3_rungs.cu, fp8_rungs.cu): one entry per (rung, head
// dimension) with its description, its tile information and its launch, looked up by both.
#pragma once

namespace flashstep::gpu::tc {

template <class Info, class Params>
struct RungEntry {
  int variant, d;
  const char* what;
  Info (*info)(const char*);
  void (*launch)(const Params&);
};

// The entry of rung `variant` at head dimension d in `table`, or nullptr.
template <class Info, class Params, int K>
const RungEntry<Info, Params>* find_rung(const RungEntry<Info, Params> (&table)[K], int variant, int d) {
  for (const RungEntry<Info, Params>& e : table)
    if (e.variant == variant && e.d == d) return &e;
  return nullptr;
}

}  // namespace flashstep::gpu::tc
