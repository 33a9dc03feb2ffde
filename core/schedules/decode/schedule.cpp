// decode's registry entry (core/schedule_registry.h): the line table of flash-decoding (the only
// place its pseudocode is written), the closed form, the estimates and what the readers print.
// The loops are forward.cpp beside this file; the sizes every reader needs, decode.h.
#include "core/schedules/decode/decode.h"

#include "core/checked.h"
#include "core/paged_kv.h"
#include "core/schedule_registry.h"
#include "core/schedules/common.h"
#include "core/schedules/fa2/fa2.h"

namespace flashstep {

// [SECTION] Closed form and step count (declared with their derivation in decode.h)

TrafficForm decode_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tr, int64_t S) {
  if (S <= 1) return fa2_traffic(nq, nk, d, Tr);
  checked::fits_int64((double(S) * double(nq) * (3.0 * double(d) + 3.0) + double(Tr) * 2.0 * double(nk) * double(d)) * 4.0,
                      "flash-decoding's HBM traffic");
  TrafficForm f;
  f.read_elems = S * nq * d + 2 * Tr * nk * d + S * nq * (d + 1);
  f.write_elems = S * nq * (d + 1) + nq * (d + 1);
  f.read_stat_elems = S * nq * (d + 1);
  f.write_stat_elems = S * nq * (d + 1) + nq;
  f.write_out_elems = nq * d;
  return f;
}

TrafficForm with_block_table_reads(TrafficForm f, int64_t nk, const Tiling& t) {
  if (t.P <= 0) return f;
  const int64_t entries = t.Tr * block_table_entries(nk, t.Bc, t.Tc, t.P);
  f.read_elems += entries;
  f.read_stat_elems += entries;
  return f;
}

int64_t decode_steps(const Tiling& t, int64_t S) {
  if (S <= 1) return t.Tr * (6 + 4 * t.Tc);
  return t.Tr * (7 * S + 4 * t.Tc + 3);
}

namespace {

using R = LineRole;

const LineInfo kDecodeLines[] = {
    {Line::FD_L3, "FD L3", 3, R::load_q, "Load Q_i from HBM to on-chip SRAM."},
    {Line::FD_L4, "FD L4", 4, R::init_chip, "On chip, initialize O_i = (0), l_i = (0), m_i = (-inf)."},
    {Line::FD_SKIP, "FD skip", 5, R::skip, "for j in J_s do  (block entirely masked: skipped)"},
    {Line::FD_L6, "FD L6", 6, R::load_kv, "Load K_j, V_j from HBM to on-chip SRAM."},
    {Line::FD_L7, "FD L7", 7, R::scores, "On chip, compute S_ij = tau Q_i K_j^T."},
    {Line::FD_L8, "FD L8", 8, R::online_softmax,
     "On chip, compute m_i^new = max(m_i, rowmax(S_ij)), P~_ij = exp(S_ij - m_i^new), "
     "l_i = e^(m_i - m_i^new) l_i + rowsum(P~_ij)."},
    {Line::FD_L9, "FD L9", 9, R::accumulate_o, "On chip, compute O_i = diag(e^(m_i - m_i^new)) O_i + P~_ij V_j."},
    {Line::FD_L11, "FD L11", 11, R::normalise, "On chip, compute O_i^(s) = diag(l_i)^-1 O_i."},
    {Line::FD_L12, "FD L12", 12, R::logsumexp, "On chip, compute lse_i^(s) = m_i + log(l_i)."},
    {Line::FD_L13, "FD L13", 13, R::write_o, "Write O_i^(s) to HBM (float32)."},
    {Line::FD_L14, "FD L14", 14, R::write_stats, "Write lse_i^(s) to HBM (float32)."},
    {Line::FD_L17, "FD L17", 17, R::combine,
     "Load lse_i^(1..S) from HBM; on chip, m = max_s lse_i^(s), lse_i = m + log sum_s e^(lse_i^(s) - m), O_i = (0)."},
    {Line::FD_L18, "FD L18", 18, R::combine,
     "Load O_i^(s) from HBM; on chip, O_i = O_i + e^(lse_i^(s) - lse_i) O_i^(s)."},
    {Line::FD_L19, "FD L19", 19, R::write_o, "Write O_i to HBM as the i-th block of O."},
    {Line::FD_L20, "FD L20", 20, R::write_stats, "Write lse_i to HBM as the i-th block of L."},
};

const ListingRow kDecodeListing[] = {
    {1, 0, "Divide Q into Tr blocks Q_i of Br x d and K, V into Tc blocks of Bc x d; group the Tc blocks into S "
           "contiguous splits J_1 .. J_S (the first Tc mod S one block longer).", Line::FD_L3},
    {2, 0, "for 1 <= s <= S and 1 <= i <= Tr (in parallel) do", Line::FD_L3},
    {3, 1, nullptr, Line::FD_L3},
    {4, 1, nullptr, Line::FD_L4},
    {5, 1, "for j in J_s do", Line::FD_SKIP},
    {6, 2, nullptr, Line::FD_L6},
    {7, 2, nullptr, Line::FD_L7},
    {8, 2, nullptr, Line::FD_L8},
    {9, 2, nullptr, Line::FD_L9},
    {10, 1, "end for", Line::FD_L11},
    {11, 1, nullptr, Line::FD_L11},
    {12, 1, nullptr, Line::FD_L12},
    {13, 1, nullptr, Line::FD_L13},
    {14, 1, nullptr, Line::FD_L14},
    {15, 0, "end for", Line::FD_L14},
    {16, 0, "for 1 <= i <= Tr (in parallel) do  (the combine)", Line::FD_L17},
    {17, 1, nullptr, Line::FD_L17},
    {18, 1, nullptr, Line::FD_L18},
    {19, 1, nullptr, Line::FD_L19},
    {20, 1, nullptr, Line::FD_L20},
    {21, 0, "end for", Line::FD_L20},
    {22, 0, "Return the output O and the logsumexp L.", Line::FD_L20},
};

const AlgorithmInfo kDecode = {"Flash-decoding (Dao, Haziza, Massa, Sizov 2023)", "FD", false, kDecodeLines,
                               std::size(kDecodeLines), kDecodeListing, std::size(kDecodeListing)};

int64_t steps(const Tiling& t) { return decode_steps(t, t.S); }

size_t trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), d = size_t(p.d), Tr = size_t(t.Tr), Tc = size_t(t.Tc), f = sizeof(float);
  const size_t S = size_t(std::max<int64_t>(1, t.S)), w = sizeof(HbmWrite) + kAllocOverhead;
  return recorded_tiles_bytes(p) + size_t(steps(t)) * sizeof(Step)
         + (S + 1) * nq * (d + 1) * f              // FD L13, L14, L19, L20 writes
         + 5 * Tc * nq * f + Tc * nq * d * f       // FD L8 statistics, FD L9 O_i
         + S * nq * (3 * d + 4) * f                // FD L17, L18: weights, O_i^(s), O_i
         + (Tr * Tc + S * Tr) * 7 * kAllocOverhead + (S + 1) * Tr * 2 * w
         + (t.P > 0 ? Tr * (size_t(block_table_entries(p.nk, t.Bc, t.Tc, t.P)) * sizeof(int32_t)
                            + Tc * kAllocOverhead) : 0);  // the pages of each paged load
}

TrafficForm forward_form(int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  return with_block_table_reads(decode_traffic(nq, nk, d, t.Tr, t.S), nk, t);
}
// FP8: s_Q_i with Q_i once per (i, split) (FD L3), s_K_j, s_V_j with K_j, V_j at each (i, j).
int64_t decode_scale_reads(const Tiling& t) { return t.Tr * (std::max<int64_t>(t.S, 1) + 2 * t.Tc); }

}  // namespace

extern const ScheduleInfo kDecodeSchedule;  // listed in core/schedule_registry.cpp
const ScheduleInfo kDecodeSchedule = {
    Schedule::decode,
    "decode",
    "flash-decoding",
    "flash-decoding: split-KV and a log-sum-exp combine",
    "decode (S)",
    "flash-decoding",
    nullptr,  // no backward: flash-decoding is for inference
    nullptr,
    nullptr,
    nullptr,
    "Flash-decoding: the K/V blocks in S splits (one colour each); every split runs FA2's inner loop "
    "for each Q block and writes a float32 partial O_i^(s), lse_i^(s) (FD L13, L14); the combine "
    "(FD L17, L18) adds the partials weighted by e^(lse_i^(s) - lse_i).",
    nullptr,
    "The splits cost partials: O^(s) and lse^(s) written, then read by the combine (%s). "
    "FlashAttention-2 without splits writes only O and L: %s.",
    Schedule::fa2,
    &kDecode,
    nullptr,
    /*tiled=*/true,
    /*baseline=*/false,
    run_decode,
    nullptr,
    explain_decode_step,
    nullptr,
    forward_form,
    nullptr,
    steps,
    trace_bytes,
    nullptr,
    nullptr,
    0,
    0,
    tiled_work_blocks,
    tiled_progress_ticks,
    /*o_storage_ulps=*/1,
    nullptr,  // no per-j snapshots; the partials are in HBM (Tensor::Op, Tensor::Lp)
    /*forward_snapshot_on_chip=*/false,
    "",
    /*backward_snapshots=*/false,
    nullptr,  // the L2 model does not take decode
    {Tensor::Q, Tensor::K, Tensor::V, Tensor::Op, Tensor::Lp, Tensor::O, Tensor::L},
    {},
    {Tensor::Lp, Tensor::L},
    {},
    {Tensor::Op, Tensor::Lp},
    {"l, m", "S, P"},
    decode_scale_reads,  // [FP8]
};

}  // namespace flashstep
