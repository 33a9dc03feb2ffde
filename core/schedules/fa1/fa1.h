// fa1: Algorithm 1 of the FlashAttention paper (Dao et al. 2022) forward, Algorithm 4 backward.
// Outer j over K/V blocks, inner i over Q blocks; O, l, m live in HBM and travel there and back
// at every (i, j). This folder holds the whole schedule:
//   forward.cpp   the loops of Algorithm 1        backward.cpp  the loops of Algorithm 4
//   schedule.cpp  its registry entry: the line tables (the pseudocode, written there only),
//                 the closed forms below, the estimates, the names readers print
#pragma once
#include "core/closed_form.h"
#include "core/trace.h"

namespace flashstep {

// Algorithm 1 in the paper's loop order. Fills trace.O, trace.lse and totals; records every
// step when `record` is true.
void run_fa1(Trace& trace, bool record);
// Algorithm 4, on the HBM the forward left (core/backward.h's run_backward calls it).
void run_backward_fa1(Trace& trace, bool record);

// The HBM traffic in elements, unmasked (derived in docs/algorithm.md, docs/backward.md).
// Algorithm 1:
//   L2  writes O, l, m once:                       Nq (d + 2)
//   L6  reads K_j, V_j once per j:                 2 Nk d
//   L8  reads Q_i, O_i, l_i, m_i for every (i,j):  Tc Nq (2d + 2)
//   L12, L13 write O_i, l_i, m_i for every (i,j):  Tc Nq (d + 2)
TrafficForm fa1_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc);
// Algorithm 4:
//   reads  = 2 Nk d [L7] + Tc Nq (4d + 2) [L10: Q_i, O_i, dO_i, dQ_i, l_i, m_i per (i, j)]
//   writes = (Nq + 2 Nk) d [L5] + Tc Nq d [L21] + 2 Nk d [L24]
TrafficForm fa1_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc);

}  // namespace flashstep
