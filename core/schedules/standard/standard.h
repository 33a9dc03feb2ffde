// standard: standard attention, Algorithm 0 of the FlashAttention paper (Dao et al. 2022)
// forward and Algorithm 3 backward: S and P (and dP, dS) go through HBM. The baseline every
// tiled schedule is compared with. This folder holds the whole schedule:
//   forward.cpp   the steps of Algorithm 0         backward.cpp  the steps of Algorithm 3
//   schedule.cpp  its registry entry: the line tables (the pseudocode, written there only),
//                 the closed forms below, the estimates, the names readers print
#pragma once
#include "core/closed_form.h"
#include "core/trace.h"

namespace flashstep {

// Algorithm 0: S = tau Q K^T written to HBM, read back for P = softmax(S), P written and read
// back for O = P V; one step per line and Q row block.
void run_standard(Trace& trace, bool record);
// Algorithm 3, on the HBM the forward left (core/backward.h's run_backward calls it).
void run_backward_standard(Trace& trace, bool record);

// The HBM traffic in elements (derived in docs/algorithm.md, docs/backward.md).
// Algorithm 0: L1 reads Q, K and writes S; L2 reads S and writes P; L3 reads P, V, writes O.
TrafficForm standard_traffic(int64_t nq, int64_t nk, int64_t d);
// Algorithm 3:
//   reads  = 5 Nq Nk + 3 Nq d + 2 Nk d;  writes = 2 Nq Nk + Nq d + 2 Nk d
TrafficForm standard_backward_traffic(int64_t nq, int64_t nk, int64_t d);

}  // namespace flashstep
