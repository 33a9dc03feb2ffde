// fa2: the FlashAttention-2 paper's forward (Dao 2023, Algorithm 1) and backward (its
// Algorithm 2). Outer i over Q blocks, inner j; O_i, l_i, m_i stay on chip, 1/l is applied once,
// only O and the logsumexp L are written. This folder holds the whole schedule:
//   forward.cpp   the forward's loop over Q blocks   row_block.h  its inner loop (shared with decode)
//   backward.cpp  the loops of Algorithm 2
//   schedule.cpp  its registry entry: the line tables (the pseudocode, written there only),
//                 the closed forms below, the estimates, the names readers print
#pragma once
#include "core/closed_form.h"
#include "core/trace.h"

namespace flashstep {

// FlashAttention-2's forward pass: outer i over Q blocks, inner j over K/V blocks; O_i, l_i,
// m_i stay on chip; 1/l applied once; only O and the logsumexp L are written. Fills trace.O,
// trace.lse and totals; records every step when `record` is true.
void run_fa2(Trace& trace, bool record);
// Algorithm 2, on the HBM the forward left (core/backward.h's run_backward calls it).
void run_backward_fa2(Trace& trace, bool record);

// The HBM traffic in elements, unmasked (derived in docs/algorithm.md, docs/backward.md).
// Forward: Q read once, K and V once per Q block, O and L written once.
//   reads = Nq d + Tr 2 Nk d;  writes = Nq d + Nq
TrafficForm fa2_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tr);
// Algorithm 2:
//   reads  = 2 Nq d [L4: O, dO] + 2 Nk d [L6] + Tc Nq (2d + 2) [L9: Q_i, dO_i, L_i, D_i]
//            + Tc Nq d [L15: dQ_i]
//   writes = Nq d [L3: dQ = 0] + Nq [L4: D] + Tc Nq d [L15: dQ_i] + 2 Nk d [L18]
TrafficForm fa2_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc);

}  // namespace flashstep
