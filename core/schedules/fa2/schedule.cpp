// fa2's registry entry (core/schedule_registry.h): the line tables of the FlashAttention-2
// paper's Algorithms 1 and 2 (the only place their pseudocode is written), the closed forms, the
// estimates and what the readers print. The loops are forward.cpp (with row_block.h) and
// backward.cpp beside this file.
#include "core/schedules/fa2/fa2.h"

#include "core/backward.h"
#include "core/checked.h"
#include "core/schedule_registry.h"
#include "core/schedules/common.h"
#include "core/snapshot.h"

#include <cmath>

namespace flashstep {

// [SECTION] Closed forms (declared with their derivation in fa2.h)

// Each form is first estimated in doubles, in bytes: Nq, Nk, d and Tc are each within their
// limits, but their product need not be, and then the caller gets an InputError.
TrafficForm fa2_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tr) {
  checked::fits_int64((double(nq) * double(d) + double(Tr) * 2.0 * double(nk) * double(d)) * 4.0, "FlashAttention-2's HBM traffic");
  TrafficForm f;
  f.read_elems = nq * d + Tr * 2 * nk * d;
  f.write_elems = nq * d + nq;
  f.write_stat_elems = nq;
  f.write_out_elems = nq * d;
  return f;
}

TrafficForm fa2_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  TrafficForm f;
  f.read_elems = 2 * nq * d + 2 * nk * d + Tc * nq * (2 * d + 2) + Tc * nq * d;
  f.write_elems = nq * d + nq + Tc * nq * d + 2 * nk * d;
  f.read_stat_elems = Tc * nq * 2 + Tc * nq * d;  // L_i, D_i; dQ_i
  f.write_stat_elems = nq * d + nq + Tc * nq * d;  // dQ, D
  return f;
}

namespace {

using R = LineRole;

const LineInfo kFa2Lines[] = {
    {Line::FA2F_L4, "FA2fwd L4", 4, R::load_q, "Load Q_i from HBM to on-chip SRAM."},
    {Line::FA2F_L5, "FA2fwd L5", 5, R::init_chip, "On chip, initialize O_i = (0), l_i = (0), m_i = (-inf)."},
    {Line::FA2F_SKIP, "FA2fwd skip", 6, R::skip, "for 1 <= j <= Tc do  (block entirely masked: skipped)"},
    {Line::FA2F_L7, "FA2fwd L7", 7, R::load_kv, "Load K_j, V_j from HBM to on-chip SRAM."},
    {Line::FA2F_L8, "FA2fwd L8", 8, R::scores, "On chip, compute S_ij = tau Q_i K_j^T."},
    {Line::FA2F_L9, "FA2fwd L9", 9, R::online_softmax,
     "On chip, compute m_i^(j) = max(m_i^(j-1), rowmax(S_ij)), P~_ij = exp(S_ij - m_i^(j)), "
     "l_i^(j) = e^(m_i^(j-1) - m_i^(j)) l_i^(j-1) + rowsum(P~_ij)."},
    {Line::FA2F_L10, "FA2fwd L10", 10, R::accumulate_o,
     "On chip, compute O_i^(j) = diag(e^(m_i^(j-1) - m_i^(j))) O_i^(j-1) + P~_ij V_j."},
    {Line::FA2F_L12, "FA2fwd L12", 12, R::normalise, "On chip, compute O_i = diag(l_i^(Tc))^-1 O_i^(Tc)."},
    {Line::FA2F_L13, "FA2fwd L13", 13, R::logsumexp, "On chip, compute L_i = m_i^(Tc) + log(l_i^(Tc))."},
    {Line::FA2F_L14, "FA2fwd L14", 14, R::write_o, "Write O_i to HBM as the i-th block of O."},
    {Line::FA2F_L15, "FA2fwd L15", 15, R::write_stats, "Write L_i to HBM as the i-th block of L."},
};

const ListingRow kFa2Listing[] = {
    {1, 0, "Divide Q into Tr = ceil(Nq/Br) blocks Q_i of Br x d, and K, V into Tc = ceil(Nk/Bc) blocks K_j, V_j of Bc x d.", Line::FA2F_L4},
    {2, 0, "Divide O into Tr blocks O_i of Br x d, and the logsumexp L into Tr blocks L_i of Br.", Line::FA2F_L4},
    {3, 0, "for 1 <= i <= Tr do", Line::FA2F_L4},
    {4, 1, nullptr, Line::FA2F_L4},
    {5, 1, nullptr, Line::FA2F_L5},
    {6, 1, "for 1 <= j <= Tc do", Line::FA2F_SKIP},
    {7, 2, nullptr, Line::FA2F_L7},
    {8, 2, nullptr, Line::FA2F_L8},
    {9, 2, nullptr, Line::FA2F_L9},
    {10, 2, nullptr, Line::FA2F_L10},
    {11, 1, "end for", Line::FA2F_L4},
    {12, 1, nullptr, Line::FA2F_L12},
    {13, 1, nullptr, Line::FA2F_L13},
    {14, 1, nullptr, Line::FA2F_L14},
    {15, 1, nullptr, Line::FA2F_L15},
    {16, 0, "end for", Line::FA2F_L4},
    {17, 0, "Return the output O and the logsumexp L.", Line::FA2F_L4},
};

const LineInfo kFa2bLines[] = {
    {Line::FA2B_L3, "FA2b L3", 3, R::init_hbm, "Initialize dQ = (0) in HBM."},
    {Line::FA2B_L4, "FA2b L4", 4, R::grad_D, "Compute D = rowsum(dO o O), write D to HBM."},
    {Line::FA2B_L6, "FA2b L6", 6, R::load_kv, "Load K_j, V_j from HBM to on-chip SRAM."},
    {Line::FA2B_L7, "FA2b L7", 7, R::init_chip, "Initialize dK_j = (0), dV_j = (0) on SRAM."},
    {Line::FA2B_SKIP, "FA2b skip", 8, R::skip, "for 1 <= i <= Tr do  (block entirely masked: skipped)"},
    {Line::FA2B_L9, "FA2b L9", 9, R::load_q, "Load Q_i, dO_i, L_i, D_i from HBM to on-chip SRAM."},
    {Line::FA2B_L10, "FA2b L10", 10, R::recompute_scores, "On chip, compute S_ij = tau Q_i K_j^T."},
    {Line::FA2B_L11, "FA2b L11", 11, R::recompute_probs, "On chip, compute P_ij = exp(S_ij - L_i)."},
    {Line::FA2B_L12, "FA2b L12", 12, R::grad_v, "On chip, compute dV_j <- dV_j + (P_ij^dropped)^T dO_i."},
    {Line::FA2B_L13, "FA2b L13", 13, R::grad_p, "On chip, compute dP_ij = dO_i V_j^T (o Z_ij with dropout)."},
    {Line::FA2B_L14, "FA2b L14", 14, R::grad_s, "On chip, compute dS_ij = P_ij o (dP_ij - D_i)."},
    {Line::FA2B_L15, "FA2b L15", 15, R::grad_q,
     "Load dQ_i from HBM to SRAM, then on chip update dQ_i <- dQ_i + tau dS_ij K_j, and write back to HBM."},
    {Line::FA2B_L16, "FA2b L16", 16, R::grad_k, "On chip, compute dK_j <- dK_j + tau dS_ij^T Q_i."},
    {Line::FA2B_L18, "FA2b L18", 18, R::write_grads, "Write dK_j, dV_j to HBM."},
};

const ListingRow kFa2bListing[] = {
    {1, 0, "Require: Q, K, V, O, dO in HBM, the logsumexp L in HBM, block sizes Bc, Br.", Line::FA2B_L3},
    {2, 0, "Divide Q, O, dO, dQ into Tr blocks of Br x d, L, D into Tr blocks; K, V, dK, dV into Tc blocks of Bc x d.", Line::FA2B_L3},
    {3, 0, nullptr, Line::FA2B_L3},
    {4, 0, nullptr, Line::FA2B_L4},
    {5, 0, "for 1 <= j <= Tc do", Line::FA2B_L3},
    {6, 1, nullptr, Line::FA2B_L6},
    {7, 1, nullptr, Line::FA2B_L7},
    {8, 1, "for 1 <= i <= Tr do", Line::FA2B_SKIP},
    {9, 2, nullptr, Line::FA2B_L9},
    {10, 2, nullptr, Line::FA2B_L10},
    {11, 2, nullptr, Line::FA2B_L11},
    {12, 2, nullptr, Line::FA2B_L12},
    {13, 2, nullptr, Line::FA2B_L13},
    {14, 2, nullptr, Line::FA2B_L14},
    {15, 2, nullptr, Line::FA2B_L15},
    {16, 2, nullptr, Line::FA2B_L16},
    {17, 1, "end for", Line::FA2B_L3},
    {18, 1, nullptr, Line::FA2B_L18},
    {19, 0, "end for", Line::FA2B_L3},
    {20, 0, "Return dQ, dK, dV.", Line::FA2B_L3},
};

const AlgorithmInfo kFa2 = {"FlashAttention-2 (Dao 2023, Algorithm 1)", "FA2fwd", false, kFa2Lines, std::size(kFa2Lines),
                            kFa2Listing, std::size(kFa2Listing)};
const AlgorithmInfo kFa2b = {"FlashAttention-2 backward (Dao 2023, Algorithm 2)", "FA2b", true, kFa2bLines,
                             std::size(kFa2bLines), kFa2bListing, std::size(kFa2bListing)};

// Per i: L4, L5, L12-L15 (six lines) and per j: L7-L10.
int64_t steps(const Tiling& t) { return t.Tr * (6 + 4 * t.Tc); }

size_t trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), d = size_t(p.d), Tr = size_t(t.Tr), Tc = size_t(t.Tc), f = sizeof(float);
  const size_t w = sizeof(HbmWrite) + kAllocOverhead;
  return recorded_tiles_bytes(p) + size_t(steps(t)) * sizeof(Step)
         + nq * (d + 1) * f   // L14, L15 writes
         + 5 * Tc * nq * f    // L9 statistics
         + Tc * nq * d * f    // L10: O_i^(j)
         + Tr * Tc * 7 * kAllocOverhead + Tr * 2 * w;
}

// L3; L4; per j: L6, L7, L18; per (i, j): L9-L16.
size_t backward_steps(const Tiling& t) { return 1 + size_t(t.Tr) + size_t(t.Tc) * (3 + 8 * size_t(t.Tr)); }

TrafficForm forward_form(int64_t nq, int64_t nk, int64_t d, const Tiling& t) { return fa2_traffic(nq, nk, d, t.Tr); }
// FP8: s_Q_i with Q_i once per i (L4); s_K_j, s_V_j with K_j, V_j at each (i, j) (L7).
int64_t fa2_scale_reads(const Tiling& t) { return t.Tr * (1 + 2 * t.Tc); }
TrafficForm backward_form(int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  return fa2_backward_traffic(nq, nk, d, t.Tc);
}

// O_i^(j), l_i^(j), m_i^(j) of every Q block i after its inner step j (FA2fwd L9, L10), gathered
// over i. A skipped (i, j) keeps block i's state of j - 1 (at j = 0 the FA2fwd L5 initial
// O = 0, l = 0, m = -inf).
void forward_snapshots(const Trace& tr, std::vector<SnapshotEntry>& snaps) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  for (SnapshotEntry& s : snaps) s.tensors[2].data.setConstant(-INFINITY);  // FA2fwd L5: m_i = -inf
  const size_t end = tr.has_backward ? tr.backward_first_step : tr.steps.size();
  for (size_t k = 0; k < end; ++k) {
    const Step& s = tr.steps[k];
    if (s.j < 0 || s.i < 0) continue;
    const int64_t row0 = s.i * t.Br, br = t.rows_in_q_block(s.i, p.nq);
    std::vector<SnapshotTensor>& now = snaps[size_t(s.j)].tensors;
    const LineRole role = line_role(s.line);
    if (role == LineRole::online_softmax) {
      now[1].data.middleRows(row0, br) = s.l_new;
      now[2].data.middleRows(row0, br) = s.m_new;
    } else if (role == LineRole::accumulate_o) {
      now[0].data.middleRows(row0, br) = s.O_i;
    } else if (role == LineRole::skip && s.j > 0) {
      const std::vector<SnapshotTensor>& before = snaps[size_t(s.j - 1)].tensors;
      for (size_t n = 0; n < 3; ++n) now[n].data.middleRows(row0, br) = before[n].data.middleRows(row0, br);
    }
  }
}

// One launch, in waves of `slots` blocks advancing j in lockstep: the Q_i loads (L4) before
// j = 0, the K_j, V_j loads of every block of the wave at each j, the O_i and L_i stores (L14,
// L15) after the last j.
L2OrderKey l2_order(const L2StepPlace& s) {
  if (line_algorithm(s.line).backward) return {kL2Later, s.h, s.k, 0};
  const int64_t b = s.h * s.Tr + s.i;
  const LineRole role = line_role(s.line);
  const bool before_loop = role == LineRole::load_q || role == LineRole::init_chip;
  const int64_t slot = s.j >= 0 ? 1 + s.j : (before_loop ? 0 : s.Tc + 1);
  return {0, b / s.slots, slot, b};
}

}  // namespace

extern const ScheduleInfo kFa2Schedule;  // listed in core/schedule_registry.cpp
const ScheduleInfo kFa2Schedule = {
    Schedule::fa2,
    "fa2",
    "FlashAttention-2",
    "FlashAttention-2 loop order",
    "FA2 order",
    "FlashAttention-2",
    "FlashAttention-2's Algorithm 2",
    "FA2 Algorithm 2 (fa2)",
    "FlashAttention-2's Algorithm 2 (fa2)",
    "FA2's backward",
    "FlashAttention-2: i outer, j inner. O_i, l_i, m_i stay on chip (the 'in SRAM' outline) for the whole j "
    "loop; HBM gets O_i once (L14) and the logsumexp L_i (L15).",
    "FlashAttention-2's backward: D = rowsum(dO o O) first (L4, in HBM); then j outer, i inner, "
    "P_ij = exp(S_ij - L_i); dQ_i is read, updated and written at every (i, j) (L15).",
    "No round trips: O_i, l_i, m_i stay on chip; O and L are written once (%s). "
    "Algorithm 1 moves O, l, m to HBM and back at every (i, j): %s.",
    Schedule::fa1,
    &kFa2,
    &kFa2b,
    /*tiled=*/true,
    /*baseline=*/false,
    run_fa2,
    run_backward_fa2,
    explain_paper_step,
    explain_paper_backward_step,
    forward_form,
    backward_form,
    steps,
    trace_bytes,
    backward_steps,
    tiled_backward_trace_bytes,
    0,
    0,
    tiled_work_blocks,
    tiled_progress_ticks,
    /*o_storage_ulps=*/1,
    forward_snapshots,
    /*forward_snapshot_on_chip=*/true,
    "forward: every Q block's on-chip O_i, l_i, m_i after inner step j (FA2fwd L10), O not / l",
    /*backward_snapshots=*/true,
    l2_order,
    {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::L},
    {Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV, Tensor::D},
    {Tensor::L},
    {Tensor::L, Tensor::D},
    {Tensor::O, Tensor::L},
    {"l, m", "S, P"},
    fa2_scale_reads,  // [FP8]
};

}  // namespace flashstep
