// Where per-j snapshots of Algorithm 1 line up with the CPU trace: the number of steps to
// apply (a Cursor position) for the HBM state after each j. Used by the CPU snapshots
// (core/snapshot.h), verify and the GPU tests.
#pragma once
#include "core/trace.h"

#include <vector>

namespace flashstep {

// After the last Alg1 L13 of j (i = Tr - 1, or the last Q block the mask did not skip). A j
// whose blocks are all masked (Alg1 SKIP, no L13) leaves HBM as it was: the position of j - 1,
// or just after Alg1 L2 for j = 0.
inline std::vector<size_t> fa1_steps_after_each_j(const Trace& tr) {
  std::vector<size_t> at(size_t(tr.tiling.Tc), 0);
  size_t after_init = 0;
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    const Step& s = tr.steps[k];
    if (is_backward_line(s.line)) break;
    const LineRole role = line_role(s.line);
    if (role == LineRole::init_hbm) after_init = k + 1;
    if (role == LineRole::write_stats && s.j >= 0) at[size_t(s.j)] = k + 1;
  }
  for (size_t j = 0; j < at.size(); ++j)
    if (at[j] == 0) at[j] = j == 0 ? after_init : at[j - 1];
  return at;
}

// The backward's counterpart for Algorithm 4 (gpu/backward.h's per-j snapshots): after the last
// step of K/V block j, which is Alg4 L24 (dK_j, dV_j written; every dQ_i update of j done) or
// the Alg4 skip of a j no query keeps a key of (HBM unchanged since j - 1).
inline std::vector<size_t> fa1_backward_steps_after_each_j(const Trace& tr) {
  std::vector<size_t> at(size_t(tr.tiling.Tc), 0);
  for (size_t k = tr.backward_first_step; k < tr.steps.size(); ++k)
    if (tr.steps[k].j >= 0) at[size_t(tr.steps[k].j)] = k + 1;
  return at;
}

}  // namespace flashstep
