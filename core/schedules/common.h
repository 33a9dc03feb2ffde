// What the tiled schedules' descriptions share: the estimates that depend only on the tiling
// and the recorded tiles every schedule keeps for display.
#pragma once
#include "core/trace.h"

namespace flashstep {

// Each recorded vector or matrix is a heap block; count a little for the allocator too.
constexpr size_t kAllocOverhead = 32;

// The S and P~ tiles a recorded forward keeps for display (Nq x Nk each, over all tiles), and
// the dropout keep mask of every P~ tile (Alg1 L12, FA2fwd L10, Alg0 L3): Nq x Nk in all.
inline size_t recorded_tiles_bytes(const Problem& p) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), f = sizeof(float);
  return (p.dropout > 0 ? nq * nk * f : 0) + 2 * nq * nk * f;
}

// Per (i, j): tiles S, P, dP, dS (Br x Bc each) and dV~_j, dK~_j (Bc x d); dQ_i written; D_i.
// Per j: dK_j, dV_j written; once: dQ, dK, dV initialised (FA2: dQ and D).
size_t tiled_backward_trace_bytes(const Problem& p, const Tiling& t);

// The simulator's per-block overhead is paid per block pair; the progress meter ticks per pair.
inline double tiled_work_blocks(const Tiling& t) { return double(t.Tr) * double(t.Tc); }
inline int64_t tiled_progress_ticks(const Tiling& t) { return t.Tr * t.Tc; }

}  // namespace flashstep
