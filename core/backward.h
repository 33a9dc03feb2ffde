// The backward pass (Dao et al. 2022, Appendix B; Dao 2023, Algorithm 2), stepped through the
// same memory model as the forward and recorded on the same trace: the forward's steps, then
// the backward's. Each schedule's backward runs on the HBM its forward left behind:
//   fa1       Algorithm 4: outer j over K/V blocks, inner i; P_ij recomputed from the l and m
//             the forward wrote; D_i = rowsum(dO_i o O_i) recomputed at every (i, j);
//             dQ_i makes a read-modify-write round trip through HBM at every (i, j).
//   fa2       FlashAttention-2's Algorithm 2: D = rowsum(dO o O) first, written to HBM; then
//             outer j, inner i with P_ij = exp(S_ij - L_i) from the logsumexp L.
//   standard  Algorithm 3: P (from the forward), dP and dS all go through HBM.
// Derivations, the SRAM budget and Theorem 5 are in docs/backward.md.
#pragma once
#include "core/trace.h"

#include <string>

namespace flashstep {

// The backward's SRAM budget, in elements. Its d-wide tiles are K_j, V_j, dK~_j, dV~_j,
// Q_i, O_i, dO_i, dQ_i: twice the forward's four at the same Br, Bc, so twice the forward's
// budget. make_tiling's check 2(Br + Bc)d <= budget is therefore the same condition as
// 4(Br + Bc)d <= 2 budget: any tiling the forward accepts (the paper's sizes or an override)
// fits the backward's budget, and the peak against M is reported rather than refused.
inline int64_t backward_tile_capacity(const Tiling& t) { return 2 * t.tile_capacity; }

// Runs the backward of trace.problem.schedule (its ScheduleInfo::run_backward, in the schedule's
// folder: core/schedules/fa1/backward.cpp, ...) after its forward (which must have run with
// trace.keep_hbm set, as run_problem does when RunOptions::dO is given). Appends the steps,
// fills dO, dQ, dK, dV, the phase totals, and extends `totals` to the whole run.
void run_backward(Trace& trace, const Mat& dO, bool record);

// dO generated from the seed: the pattern of Q, K, V ("random" for inputs read from files),
// the fourth stream after Q, K, V.
Mat make_grad_output(const Problem& p, const std::string& pattern);
// A user's dO: Nq x d, finite, and within fp16's range when stored as fp16 (InputError).
void check_grad_output(const Problem& p, const Mat& dO);
// After the backward: dQ, dK and dV are finite, else an InputError naming the first that
// overflowed float32 (the inputs or dO too large for the problem).
void check_gradients_finite(const Trace& t);

// The most steps the backward records (fewer when masked blocks are skipped).
size_t backward_step_bound(const Problem& p, const Tiling& t);
// Bytes the backward adds to a recorded trace and to the simulated HBM (estimates).
size_t estimate_backward_trace_bytes(const Problem& p, const Tiling& t);
size_t estimate_backward_hbm_bytes(const Problem& p);

}  // namespace flashstep
