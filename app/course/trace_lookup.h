// Where the course finds things in a trace: "the step where O_i is updated for (i, j)", "the
// steps of the S = QK^T kernel". Every reference the chapters make to a schedule's pseudocode
// line goes through here, by the line's role, so that a schedule registry with line roles
// replaces one table and nothing else.
#pragma once
#include "core/trace.h"

#include <string>

namespace flashstep::course {

enum class Role {
  init,       // O, l, m (or dQ, dK, dV) set up in HBM
  load_kv,    // K_j, V_j from HBM to SRAM
  load_q,     // Q_i (fa1: with O_i, l_i, m_i) from HBM to SRAM
  scores,     // S_ij = tau Q_i K_j^T (standard: S = QK^T, written to HBM)
  softmax,    // P~_ij = exp(S_ij - m~_ij), m~_ij, l~_ij (standard: P = softmax(S))
  merge,      // m_i^new, l_i^new
  update_o,   // O_i updated with P~_ij V_j (standard: O = PV)
  write_o,    // O_i written to HBM
  skip,       // a block the mask hides entirely
  rowsum_d,   // backward: D_i = rowsum(dO_i o O_i)
};
const char* role_name(Role r);

// Whether a step plays this role in its schedule.
bool has_role(const Trace& t, const Step& s, Role r);
// The first step (index into t.steps) with this role at (i, j); -1 matches any i or j. Searches
// the forward only unless `backward`. Throws InputError when there is none.
int64_t find_step(const Trace& t, Role r, int64_t i = -1, int64_t j = -1, bool backward = false);
// How many forward steps have this role.
int64_t count_steps(const Trace& t, Role r);
// The pseudocode line label of a role in the trace's schedule ("Alg1 L12").
std::string role_label(const Trace& t, Role r);
// A role's line number in its algorithm (the sources name kernels by it: trace.R.line.N.flops).
int role_line_number(const Trace& t, Role r);

}  // namespace flashstep::course
