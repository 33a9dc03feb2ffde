// One-sentence explanations of the backward passes' steps: Algorithm 4 ("Alg4 Ln", fa1),
// FlashAttention-2's Algorithm 2 ("FA2b Ln", fa2: the b keeps it apart from the FA2 forward's
// lines) and Algorithm 3 ("Alg3 Ln", standard). Labels and pseudocode: the line tables in
// core/schedules/.
#include "core/trace.h"

#include <cstdio>

namespace flashstep {

std::string explain_paper_backward_step(const Trace& t, size_t k) {
  const Problem& problem = t.problem;
  const Tiling& tiling = t.tiling;
  const Step& s = t.steps.at(k);
  const int64_t br = s.i >= 0 ? tiling.rows_in_q_block(s.i, problem.nq) : 0;
  const int64_t bc = s.j >= 0 ? tiling.rows_in_kv_block(s.j, problem.nk) : 0;
  const long long r0 = s.i >= 0 ? s.i * tiling.Br : 0, c0 = s.j >= 0 ? s.j * tiling.Bc : 0;
  const long long r1 = r0 + br - 1, c1 = c0 + bc - 1;
  char buf[512];
  switch (s.line) {
    case Line::A3_L1:
      std::snprintf(buf, sizeof buf, "Load P_i and dO_i (rows %lld-%lld) and add P_i^T dO_i to dV, "
                    "held on chip%s.", r0, r1, s.writes.empty() ? "" : "; dV is complete: write it");
      break;
    case Line::A3_L2:
      std::snprintf(buf, sizeof buf, "Load dO_i%s, compute dP_i = dO_i V^T and write it to HBM.",
                    s.i == 0 ? " and all of V" : "");
      break;
    case Line::A3_L3:
      std::snprintf(buf, sizeof buf, "Read P_i and dP_i back, compute dS_i = P_i o (dP_i - rowsum(P_i o "
                    "dP_i)) and write it to HBM.");
      break;
    case Line::A3_L4:
      std::snprintf(buf, sizeof buf, "Load dS_i%s, compute dQ_i = tau dS_i K and write it to HBM.",
                    s.i == 0 ? " and all of K" : "");
      break;
    case Line::A3_L5:
      std::snprintf(buf, sizeof buf, "Load dS_i and Q_i (rows %lld-%lld) and add tau dS_i^T Q_i to dK, "
                    "held on chip%s.", r0, r1, s.writes.empty() ? "" : "; dK is complete: write it");
      break;
    case Line::A4_L5:
    case Line::FA2B_L3:
      std::snprintf(buf, sizeof buf, "Initialise %s in HBM: dQ_i collects a share from every "
                    "K/V block.", s.line == Line::A4_L5 ? "dQ = 0, dK = 0 and dV = 0" : "dQ = 0");
      break;
    case Line::A4_L7:
    case Line::FA2B_L6:
      std::snprintf(buf, sizeof buf, "Load K_j and V_j (rows %lld-%lld) into SRAM; they stay for the "
                    "whole inner loop over i.", c0, c1);
      break;
    case Line::A4_L8:
    case Line::FA2B_L7:
      std::snprintf(buf, sizeof buf, "Start the accumulators dK~_j = dV~_j = 0 (%lld x %lld each) on "
                    "chip: they reach HBM once, at the end of the loop.", (long long)bc, (long long)problem.d);
      break;
    case Line::A4_SKIP:
    case Line::FA2B_SKIP:
      if (s.i < 0)
        std::snprintf(buf, sizeof buf, "Every query block masks K/V block j = %d entirely: its "
                      "gradients stay 0 and K_j, V_j are never loaded.", s.j);
      else
        std::snprintf(buf, sizeof buf, "Block (i = %d, j = %d) is entirely masked: P_ij = 0, so it "
                      "adds nothing; skipped.", s.i, s.j);
      break;
    case Line::A4_L10:
      std::snprintf(buf, sizeof buf, "Load Q_i, O_i, dO_i, dQ_i, l_i and m_i (rows %lld-%lld): six "
                    "loads at every (i, j).", r0, r1);
      break;
    case Line::FA2B_L9:
      std::snprintf(buf, sizeof buf, "Load Q_i, dO_i, L_i and D_i (rows %lld-%lld): O_i is not needed, "
                    "D_i already holds what it gave.", r0, r1);
      break;
    case Line::A4_L11:
    case Line::FA2B_L10:
      std::snprintf(buf, sizeof buf, "Recompute the %lld x %lld score tile S_ij = tau Q_i K_j^T "
                    "instead of reading it: the forward never stored it.", (long long)br, (long long)bc);
      break;
    case Line::A4_L12:
      std::snprintf(buf, sizeof buf, "Mask the tile element by element (the block is partly masked).");
      break;
    case Line::A4_L13:
      std::snprintf(buf, sizeof buf, "Recompute P_ij = exp(S_ij - m_i) / l_i from the statistics the "
                    "forward wrote; a row with no visible key gets P = 0.");
      break;
    case Line::FA2B_L11:
      std::snprintf(buf, sizeof buf, "Recompute P_ij = exp(S_ij - L_i) with one statistic, the "
                    "logsumexp; a row with no visible key (L_i = -inf) gets P = 0.");
      break;
    case Line::A4_L14:
      std::snprintf(buf, sizeof buf, "Draw Z_ij again from Philox at the same (row, column) keys as the "
                    "forward: the identical dropout mask, never stored.");
      break;
    case Line::A4_L16:
    case Line::FA2B_L12:
      std::snprintf(buf, sizeof buf, "Add (P_ij^dropped)^T dO_i to dV~_j on chip.");
      break;
    case Line::A4_L17:
    case Line::FA2B_L13:
      std::snprintf(buf, sizeof buf, "Compute dP_ij = dO_i V_j^T (%lld x %lld) on chip.", (long long)br,
                    (long long)bc);
      break;
    case Line::A4_L18:
      std::snprintf(buf, sizeof buf, "Apply the same Z_ij to dP_ij: dropped weights get no gradient.");
      break;
    case Line::A4_L19:
      std::snprintf(buf, sizeof buf, "D_i = rowsum(dO_i o O_i): the softmax Jacobian's correction, "
                    "recomputed here at every j (FlashAttention-2 does it once, up front).");
      break;
    case Line::FA2B_L4:
      std::snprintf(buf, sizeof buf, "Load O_i and dO_i (rows %lld-%lld), compute D_i = rowsum(dO_i o "
                    "O_i) once and write it to HBM.", r0, r1);
      break;
    case Line::A4_L20:
    case Line::FA2B_L14:
      std::snprintf(buf, sizeof buf, "dS_ij = P_ij o (dP_ij - D_i): the gradient of the scores.");
      break;
    case Line::A4_L21:
    case Line::FA2B_L15:
      std::snprintf(buf, sizeof buf, "Add tau dS_ij K_j to dQ_i (rows %lld-%lld) and write it back: a "
                    "read-modify-write, an atomic add on a GPU where the j blocks run in parallel.",
                    r0, r1);
      break;
    case Line::A4_L22:
    case Line::FA2B_L16:
      std::snprintf(buf, sizeof buf, "Add tau dS_ij^T Q_i to dK~_j on chip.");
      break;
    case Line::A4_L24:
    case Line::FA2B_L18:
      std::snprintf(buf, sizeof buf, "dK_j and dV_j (rows %lld-%lld) are complete: write them to HBM, "
                    "once.", c0, c1);
      break;
    default:
      buf[0] = 0;
      break;
  }
  return buf;
}

}  // namespace flashstep
