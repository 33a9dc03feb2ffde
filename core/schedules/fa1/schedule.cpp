// fa1's registry entry (core/schedule_registry.h): the line tables of Algorithms 1 and 4 (the
// only place their pseudocode is written), the closed forms, the estimates and what the readers
// print. The loops are forward.cpp and backward.cpp beside this file.
#include "core/schedules/fa1/fa1.h"

#include "core/backward.h"
#include "core/checked.h"
#include "core/schedule_registry.h"
#include "core/schedules/common.h"
#include "core/snapshot.h"
#include "core/trace_align.h"

namespace flashstep {

// [SECTION] Closed forms (declared with their derivation in fa1.h)

// Each form is first estimated in doubles, in bytes: Nq, Nk, d and Tc are each within their
// limits, but their product need not be, and then the caller gets an InputError.
TrafficForm fa1_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  checked::fits_int64(2.0 * double(nk) * double(d) + double(Tc) * double(nq) * (2.0 * double(d) + 2.0) * 4.0, "Algorithm 1's HBM traffic");
  TrafficForm f;
  f.read_elems = 2 * nk * d + Tc * nq * (2 * d + 2);
  f.write_elems = nq * (d + 2) + Tc * nq * (d + 2);
  f.read_stat_elems = Tc * nq * 2;
  f.write_stat_elems = nq * 2 + Tc * nq * 2;
  f.read_out_elems = Tc * nq * d;              // O_i at L8
  f.write_out_elems = nq * d + Tc * nq * d;    // O at L2, O_i at L12
  return f;
}

TrafficForm fa1_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  TrafficForm f;
  f.read_elems = 2 * nk * d + Tc * nq * (4 * d + 2);
  f.write_elems = (nq + 2 * nk) * d + Tc * nq * d + 2 * nk * d;
  f.read_stat_elems = Tc * nq * (d + 2);   // dQ_i, l_i, m_i
  f.write_stat_elems = nq * d + Tc * nq * d;  // dQ
  return f;
}

namespace {

using R = LineRole;

const LineInfo kAlg1Lines[] = {
    {Line::A1_L2, "Alg1 L2", 2, R::init_hbm, "Initialize O = (0), l = (0), m = (-inf) in HBM."},
    {Line::A1_L6, "Alg1 L6", 6, R::load_kv, "Load K_j, V_j from HBM to on-chip SRAM."},
    {Line::A1_SKIP, "Alg1 skip", 7, R::skip, "for 1 <= i <= Tr do  (block entirely masked: skipped)"},
    {Line::A1_L8, "Alg1 L8", 8, R::load_q, "Load Q_i, O_i, l_i, m_i from HBM to on-chip SRAM."},
    {Line::A1_L9, "Alg1 L9", 9, R::scores, "On chip, compute S_ij = tau Q_i K_j^T."},
    {Line::A1_L10, "Alg1 L10", 10, R::probabilities,
     "On chip, compute m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij)."},
    {Line::A1_L11, "Alg1 L11", 11, R::merge_stats,
     "On chip, compute m_i^new = max(m_i, m~_ij), l_i^new = e^(m_i - m_i^new) l_i + e^(m~_ij - m_i^new) l~_ij."},
    {Line::A1_L12, "Alg1 L12", 12, R::write_o,
     "Write O_i <- diag(l_i^new)^-1 (diag(l_i) e^(m_i - m_i^new) O_i + e^(m~_ij - m_i^new) P~_ij V_j) to HBM."},
    {Line::A1_L13, "Alg1 L13", 13, R::write_stats, "Write l_i <- l_i^new, m_i <- m_i^new to HBM."},
};

const ListingRow kAlg1Listing[] = {
    {1, 0, "Set block sizes Bc = ceil(M/4d), Br = min(ceil(M/4d), d).", Line::A1_L2},
    {2, 0, nullptr, Line::A1_L2},
    {3, 0, "Divide Q into Tr = ceil(Nq/Br) blocks Q_i of Br x d, and K, V into Tc = ceil(Nk/Bc) blocks K_j, V_j of Bc x d.", Line::A1_L2},
    {4, 0, "Divide O into Tr blocks O_i (Br x d), l and m into Tr blocks l_i, m_i (Br each).", Line::A1_L2},
    {5, 0, "for 1 <= j <= Tc do", Line::A1_L2},
    {6, 1, nullptr, Line::A1_L6},
    {7, 1, "for 1 <= i <= Tr do", Line::A1_SKIP},
    {8, 2, nullptr, Line::A1_L8},
    {9, 2, nullptr, Line::A1_L9},
    {10, 2, nullptr, Line::A1_L10},
    {11, 2, nullptr, Line::A1_L11},
    {12, 2, nullptr, Line::A1_L12},
    {13, 2, nullptr, Line::A1_L13},
    {14, 1, "end for", Line::A1_L2},
    {15, 0, "end for", Line::A1_L2},
    {16, 0, "Return O.", Line::A1_L2},
};

const LineInfo kAlg4Lines[] = {
    {Line::A4_L5, "Alg4 L5", 5, R::init_hbm, "Initialize dQ = (0), dK = (0), dV = (0) in HBM."},
    {Line::A4_L7, "Alg4 L7", 7, R::load_kv, "Load K_j, V_j from HBM to on-chip SRAM."},
    {Line::A4_L8, "Alg4 L8", 8, R::init_chip, "Initialize dK~_j = (0), dV~_j = (0) on SRAM."},
    {Line::A4_SKIP, "Alg4 skip", 9, R::skip, "for 1 <= i <= Tr do  (block entirely masked: skipped)"},
    {Line::A4_L10, "Alg4 L10", 10, R::load_q, "Load Q_i, O_i, dO_i, dQ_i, l_i, m_i from HBM to on-chip SRAM."},
    {Line::A4_L11, "Alg4 L11", 11, R::recompute_scores, "On chip, compute S_ij = tau Q_i K_j^T."},
    {Line::A4_L12, "Alg4 L12", 12, R::mask_scores, "On chip, compute S_ij^masked = MASK(S_ij)."},
    {Line::A4_L13, "Alg4 L13", 13, R::recompute_probs, "On chip, compute P_ij = diag(l_i)^-1 exp(S_ij^masked - m_i)."},
    {Line::A4_L14, "Alg4 L14-15", 14, R::dropout,
     "On chip, compute the dropout mask Z_ij (1/(1-p) with probability 1-p, else 0) and P_ij^dropped = P_ij o Z_ij."},
    {Line::A4_L16, "Alg4 L16", 16, R::grad_v, "On chip, compute dV~_j <- dV~_j + (P_ij^dropped)^T dO_i."},
    {Line::A4_L17, "Alg4 L17", 17, R::grad_p, "On chip, compute dP_ij^dropped = dO_i V_j^T."},
    {Line::A4_L18, "Alg4 L18", 18, R::grad_p, "On chip, compute dP_ij = dP_ij^dropped o Z_ij."},
    {Line::A4_L19, "Alg4 L19", 19, R::grad_D, "On chip, compute D_i = rowsum(dO_i o O_i)."},
    {Line::A4_L20, "Alg4 L20", 20, R::grad_s, "On chip, compute dS_ij = P_ij o (dP_ij - D_i)."},
    {Line::A4_L21, "Alg4 L21", 21, R::grad_q, "Write dQ_i <- dQ_i + tau dS_ij K_j to HBM."},
    {Line::A4_L22, "Alg4 L22", 22, R::grad_k, "On chip, compute dK~_j <- dK~_j + tau dS_ij^T Q_i."},
    {Line::A4_L24, "Alg4 L24", 24, R::write_grads, "Write dK_j <- dK~_j, dV_j <- dV~_j to HBM."},
};

const ListingRow kAlg4Listing[] = {
    {1, 0, "Require: Q, K, V, O, dO in HBM (Nq x d, Nk x d), l, m in HBM, SRAM of size M, tau, MASK, p_drop.", Line::A4_L5},
    {2, 0, "Set the pseudo-random number generator state R as in the forward pass.", Line::A4_L5},
    {3, 0, "Set block sizes Bc = ceil(M/4d), Br = min(ceil(M/4d), d).", Line::A4_L5},
    {4, 0, "Divide Q, O, dO into Tr blocks of Br x d, l, m into Tr blocks; K, V into Tc blocks of Bc x d.", Line::A4_L5},
    {5, 0, nullptr, Line::A4_L5},
    {6, 0, "for 1 <= j <= Tc do", Line::A4_L5},
    {7, 1, nullptr, Line::A4_L7},
    {8, 1, nullptr, Line::A4_L8},
    {9, 1, "for 1 <= i <= Tr do", Line::A4_SKIP},
    {10, 2, nullptr, Line::A4_L10},
    {11, 2, nullptr, Line::A4_L11},
    {12, 2, nullptr, Line::A4_L12},
    {13, 2, nullptr, Line::A4_L13},
    {14, 2, nullptr, Line::A4_L14},
    {16, 2, nullptr, Line::A4_L16},
    {17, 2, nullptr, Line::A4_L17},
    {18, 2, nullptr, Line::A4_L18},
    {19, 2, nullptr, Line::A4_L19},
    {20, 2, nullptr, Line::A4_L20},
    {21, 2, nullptr, Line::A4_L21},
    {22, 2, nullptr, Line::A4_L22},
    {23, 1, "end for", Line::A4_L5},
    {24, 1, nullptr, Line::A4_L24},
    {25, 0, "end for", Line::A4_L5},
    {26, 0, "Return dQ, dK, dV.", Line::A4_L5},
};

const AlgorithmInfo kAlg1 = {"Algorithm 1 (FlashAttention)", "Alg 1", false, kAlg1Lines, std::size(kAlg1Lines),
                             kAlg1Listing, std::size(kAlg1Listing)};
const AlgorithmInfo kAlg4 = {"Algorithm 4 (FlashAttention backward)", "Alg 4", true, kAlg4Lines, std::size(kAlg4Lines),
                             kAlg4Listing, std::size(kAlg4Listing)};

// Alg1 L2; per j: L6 and per i: L8-L13 (six lines).
int64_t steps(const Tiling& t) { return 1 + t.Tc * (1 + 6 * t.Tr); }

size_t trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), d = size_t(p.d), Tc = size_t(t.Tc), f = sizeof(float);
  const size_t pairs = size_t(t.Tr) * Tc, w = sizeof(HbmWrite) + kAllocOverhead;
  return recorded_tiles_bytes(p) + size_t(steps(t)) * sizeof(Step)
         + Tc * nq * (d + 2) * f   // L12, L13 writes
         + nq * (d + 2) * f        // L2 writes
         + 8 * Tc * nq * f         // L10, L11 statistics
         + pairs * (3 * w + 10 * kAllocOverhead);
}

// L5; per j: L7, L8, L24; per (i, j): L10-L22.
size_t backward_steps(const Tiling& t) { return 1 + size_t(t.Tc) * (3 + 12 * size_t(t.Tr)); }

TrafficForm forward_form(int64_t nq, int64_t nk, int64_t d, const Tiling& t) { return fa1_traffic(nq, nk, d, t.Tc); }
// FP8: s_K_j, s_V_j with K_j, V_j at each j (L6); s_Q_i with Q_i at each (i, j) (L8).
int64_t fa1_scale_reads(const Tiling& t) { return t.Tc * (2 + t.Tr); }
TrafficForm backward_form(int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  return fa1_backward_traffic(nq, nk, d, t.Tc);
}

// Alg1: O, l, m in HBM after the last Alg1 L13 of each j.
void forward_snapshots(const Trace& tr, std::vector<SnapshotEntry>& snaps) {
  const std::vector<size_t> at = fa1_steps_after_each_j(tr);
  Cursor c(tr);
  for (size_t j = 0; j < snaps.size(); ++j) {
    c.seek(at[j]);
    snaps[j].tensors = {{"O", "", c.hbm(Tensor::O)}, {"l", "", c.hbm(Tensor::l)}, {"m", "", c.hbm(Tensor::m)}};
  }
}

// Alg1 L2's initialisation is a launch of its own; then one launch per j over every block
// (i, head), in waves of `slots` blocks that load (L8) before they store (L12, L13). K_j, V_j
// (L6, loaded once per head here) come with the head's first block.
L2OrderKey l2_order(const L2StepPlace& s) {
  if (line_algorithm(s.line).backward) return {kL2Later, s.h, s.k, 0};
  if (s.j < 0) return {0, s.h, 0, 0};
  const int64_t b = s.h * s.Tr + std::max<int64_t>(s.i, 0);
  const int64_t phase = s.i < 0 ? -1 : line_role(s.line) == LineRole::load_q ? 0 : 1;
  return {1 + s.j, b / s.slots, phase, b};
}

}  // namespace

extern const ScheduleInfo kFa1Schedule;  // listed in core/schedule_registry.cpp
const ScheduleInfo kFa1Schedule = {
    Schedule::fa1,
    "fa1",
    "Algorithm 1",
    "Algorithm 1, FlashAttention",
    "Algorithm 1",
    "Algorithm 1",
    "Algorithm 4, FlashAttention backward",
    "Algorithm 4 (fa1)",
    "Algorithm 4 (fa1)",
    "Algorithm 4",
    "Algorithm 1: j outer, i inner. O_i, l_i, m_i are read from HBM and written back at every (i, j).",
    "Algorithm 4: j outer, i inner. P_ij is recomputed from l_i, m_i; dK~_j, dV~_j grow on chip "
    "and are written once (L24); dQ_i goes to HBM and back at every (i, j) (L10, L21).",
    "O_i, l_i, m_i go to HBM and back at every (i, j): %s over the run. "
    "FlashAttention-2 keeps them on chip and writes only O and L once (%s).",
    Schedule::fa2,
    &kAlg1,
    &kAlg4,
    /*tiled=*/true,
    /*baseline=*/false,
    run_fa1,
    run_backward_fa1,
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
    /*o_storage_ulps=*/2,
    forward_snapshots,
    /*forward_snapshot_on_chip=*/false,
    "forward: O, l, m in HBM after outer step j (Alg1 L13)",
    /*backward_snapshots=*/true,
    l2_order,
    {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::l, Tensor::m},
    {Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV},
    {Tensor::l, Tensor::m},
    {Tensor::l, Tensor::m},
    {Tensor::O, Tensor::l, Tensor::m},
    {"S, P"},
    fa1_scale_reads,  // [FP8]
};

}  // namespace flashstep
