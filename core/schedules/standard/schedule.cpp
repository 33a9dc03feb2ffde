// standard's registry entry (core/schedule_registry.h): the line tables of Algorithms 0 and 3
// (the only place their pseudocode is written), the closed forms, the estimates and what the
// readers print. The steps are forward.cpp and backward.cpp beside this file.
#include "core/schedules/standard/standard.h"

#include "core/backward.h"
#include "core/checked.h"
#include "core/schedule_registry.h"
#include "core/schedules/common.h"

namespace flashstep {

// [SECTION] Closed forms (declared with their derivation in standard.h)

// Each form is first estimated in doubles, in bytes: Nq, Nk, d and Tc are each within their
// limits, but their product need not be, and then the caller gets an InputError.
TrafficForm standard_traffic(int64_t nq, int64_t nk, int64_t d) {
  checked::fits_int64((double(nq + nk) * double(d) + 3.0 * double(nq) * double(nk)) * 4.0, "standard attention's HBM traffic");
  TrafficForm f;
  f.read_elems = (nq * d + nk * d) + nq * nk + (nq * nk + nk * d);
  f.write_elems = nq * nk + nq * nk + nq * d;
  f.read_out_elems = 2 * nq * nk;   // S, P: stored at the output type as O is
  f.write_out_elems = 2 * nq * nk + nq * d;
  return f;
}

TrafficForm standard_backward_traffic(int64_t nq, int64_t nk, int64_t d) {
  TrafficForm f;
  f.read_elems = 5 * nq * nk + 3 * nq * d + 2 * nk * d;
  f.write_elems = 2 * nq * nk + nq * d + 2 * nk * d;
  f.write_stat_elems = nq * d;  // dQ
  return f;
}

namespace {

using R = LineRole;

const LineInfo kAlg0Lines[] = {
    {Line::A0_L1, "Alg0 L1", 1, R::scores, "Load Q, K by blocks from HBM, compute S = tau Q K^T, write S to HBM."},
    {Line::A0_L2, "Alg0 L2", 2, R::probabilities, "Read S from HBM, compute P = softmax(S), write P to HBM."},
    {Line::A0_L3, "Alg0 L3", 3, R::write_o, "Load P and V by blocks from HBM, compute O = PV, write O to HBM."},
};

const ListingRow kAlg0Listing[] = {
    {0, 0, "Require: matrices Q, K, V in HBM.", Line::A0_L1},
    {1, 0, nullptr, Line::A0_L1},
    {2, 0, nullptr, Line::A0_L2},
    {3, 0, nullptr, Line::A0_L3},
    {4, 0, "Return O.", Line::A0_L1},
};

const LineInfo kAlg3Lines[] = {
    {Line::A3_L1, "Alg3 L1", 1, R::grad_v, "Load P, dO by blocks from HBM, compute dV = P^T dO, write dV to HBM."},
    {Line::A3_L2, "Alg3 L2", 2, R::grad_p, "Load dO, V by blocks from HBM, compute dP = dO V^T, write dP to HBM."},
    {Line::A3_L3, "Alg3 L3", 3, R::grad_s,
     "Read P, dP from HBM, compute dS where dS_ij = P_ij (dP_ij - sum_l P_il dP_il), write dS to HBM."},
    {Line::A3_L4, "Alg3 L4", 4, R::grad_q, "Load dS and K by blocks from HBM, compute dQ = dS K, write dQ to HBM."},
    {Line::A3_L5, "Alg3 L5", 5, R::grad_k, "Load dS and Q by blocks from HBM, compute dK = dS^T Q, write dK to HBM."},
};

const ListingRow kAlg3Listing[] = {
    {0, 0, "Require: Q, K, V, dO (Nq x d, Nk x d) and P (Nq x Nk) in HBM.", Line::A3_L1},
    {1, 0, nullptr, Line::A3_L1},
    {2, 0, nullptr, Line::A3_L2},
    {3, 0, nullptr, Line::A3_L3},
    {4, 0, nullptr, Line::A3_L4},
    {5, 0, nullptr, Line::A3_L5},
    {6, 0, "Return dQ, dK, dV.", Line::A3_L1},
};

const AlgorithmInfo kAlg0 = {"Algorithm 0 (standard attention)", "Alg 0", false, kAlg0Lines, std::size(kAlg0Lines),
                             kAlg0Listing, std::size(kAlg0Listing)};
const AlgorithmInfo kAlg3 = {"Algorithm 3 (standard attention backward)", "Alg 3", true, kAlg3Lines, std::size(kAlg3Lines),
                             kAlg3Listing, std::size(kAlg3Listing)};

// One step per line and Q row block.
int64_t steps(const Tiling& t) { return 3 * t.Tr; }

size_t trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = sizeof(float);
  const size_t w = sizeof(HbmWrite) + kAllocOverhead;
  return recorded_tiles_bytes(p) + size_t(steps(t)) * sizeof(Step)  // S_i, P_i tiles kept for display
         + (2 * nq * nk + nq * d) * f                                // S, P, O writes
         + 3 * size_t(t.Tr) * (w + kAllocOverhead);
}

// L1-L5 per row block.
size_t backward_steps(const Tiling& t) { return 5 * size_t(t.Tr); }

size_t backward_trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = sizeof(float);
  const size_t w = sizeof(HbmWrite) + kAllocOverhead;
  const size_t dropout = p.dropout > 0 ? 2 * nq * nk * f : 0;  // keep masks and P^dropped tiles
  return backward_steps(t) * sizeof(Step) + 5 * size_t(t.Tr) * w + (4 * nq * nk + nq * d + 2 * nk * d + nq) * f +
         dropout;
}

TrafficForm forward_form(int64_t nq, int64_t nk, int64_t d, const Tiling&) { return standard_traffic(nq, nk, d); }
TrafficForm backward_form(int64_t nq, int64_t nk, int64_t d, const Tiling&) {
  return standard_backward_traffic(nq, nk, d);
}

// Row blocks, not block pairs: the simulator's overhead is per row block; three passes tick.
double work_blocks(const Tiling& t) { return double(t.Tr); }
int64_t progress_ticks(const Tiling& t) { return 3 * t.Tr; }

// Each pass (Alg0 L1, L2, L3) is its own kernel (batched GEMM or row softmax) streaming over
// the heads one after another, each head in program order.
L2OrderKey l2_order(const L2StepPlace& s) {
  if (line_algorithm(s.line).backward) return {kL2Later, s.h, s.k, 0};
  return {line_number(s.line) + 100, s.h, s.k, 0};
}

}  // namespace

extern const ScheduleInfo kStandardSchedule;  // listed in core/schedule_registry.cpp
const ScheduleInfo kStandardSchedule = {
    Schedule::standard,
    "standard",
    "Algorithm 0",
    "Algorithm 0, standard attention",
    "standard",
    "standard attention",
    "Algorithm 3, standard attention backward",
    "Algorithm 3 (standard)",
    "Algorithm 3 (standard)",
    "Algorithm 3",
    "Algorithm 0: S and P are whole Nq x Nk matrices, written to HBM and read back.",
    "Algorithm 3: P (from the forward), dP and dS are whole Nq x Nk matrices in HBM.",
    "S and P (Nq x Nk each) go to HBM and back: %s of the forward's %s.",
    Schedule::standard,
    &kAlg0,
    &kAlg3,
    /*tiled=*/false,
    /*baseline=*/true,
    run_standard,
    run_backward_standard,
    explain_paper_step,
    explain_paper_backward_step,
    forward_form,
    backward_form,
    steps,
    trace_bytes,
    backward_steps,
    backward_trace_bytes,
    2,
    2,
    work_blocks,
    progress_ticks,
    /*o_storage_ulps=*/1,
    nullptr,
    false,
    "forward: none (no j loop)",
    /*backward_snapshots=*/false,
    l2_order,
    {Tensor::Q, Tensor::K, Tensor::V, Tensor::S, Tensor::P, Tensor::O},
    {Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV, Tensor::dP, Tensor::dS},
    {},
    {},
    {Tensor::S, Tensor::P},
    {},
    nullptr,  // [FP8]
};

}  // namespace flashstep
