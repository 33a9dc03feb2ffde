// Labels, pseudocode and one-sentence explanations of the backward passes' lines: Algorithm 4
// ("Alg4 Ln", fa1), FlashAttention-2's Algorithm 2 ("FA2b Ln", fa2: the b keeps it apart from
// the FA2 forward's lines) and Algorithm 3 ("Alg3 Ln", standard), numbered as in the papers.
#include "core/trace.h"

#include <cstdio>

namespace flashstep {

const char* backward_line_label(Line l) {
  switch (l) {
    case Line::A3_L1: return "Alg3 L1";
    case Line::A3_L2: return "Alg3 L2";
    case Line::A3_L3: return "Alg3 L3";
    case Line::A3_L4: return "Alg3 L4";
    case Line::A3_L5: return "Alg3 L5";
    case Line::A4_L5: return "Alg4 L5";
    case Line::A4_L7: return "Alg4 L7";
    case Line::A4_L8: return "Alg4 L8";
    case Line::A4_SKIP: return "Alg4 skip";
    case Line::A4_L10: return "Alg4 L10";
    case Line::A4_L11: return "Alg4 L11";
    case Line::A4_L12: return "Alg4 L12";
    case Line::A4_L13: return "Alg4 L13";
    case Line::A4_L14: return "Alg4 L14-15";
    case Line::A4_L16: return "Alg4 L16";
    case Line::A4_L17: return "Alg4 L17";
    case Line::A4_L18: return "Alg4 L18";
    case Line::A4_L19: return "Alg4 L19";
    case Line::A4_L20: return "Alg4 L20";
    case Line::A4_L21: return "Alg4 L21";
    case Line::A4_L22: return "Alg4 L22";
    case Line::A4_L24: return "Alg4 L24";
    case Line::B2_L3: return "FA2b L3";
    case Line::B2_L4: return "FA2b L4";
    case Line::B2_L6: return "FA2b L6";
    case Line::B2_L7: return "FA2b L7";
    case Line::B2_SKIP: return "FA2b skip";
    case Line::B2_L9: return "FA2b L9";
    case Line::B2_L10: return "FA2b L10";
    case Line::B2_L11: return "FA2b L11";
    case Line::B2_L12: return "FA2b L12";
    case Line::B2_L13: return "FA2b L13";
    case Line::B2_L14: return "FA2b L14";
    case Line::B2_L15: return "FA2b L15";
    case Line::B2_L16: return "FA2b L16";
    case Line::B2_L18: return "FA2b L18";
    default: return "?";
  }
}

const char* backward_line_pseudocode(Line l) {
  switch (l) {
    case Line::A3_L1: return "Load P, dO by blocks from HBM, compute dV = P^T dO, write dV to HBM.";
    case Line::A3_L2: return "Load dO, V by blocks from HBM, compute dP = dO V^T, write dP to HBM.";
    case Line::A3_L3:
      return "Read P, dP from HBM, compute dS where dS_ij = P_ij (dP_ij - sum_l P_il dP_il), "
             "write dS to HBM.";
    case Line::A3_L4: return "Load dS and K by blocks from HBM, compute dQ = dS K, write dQ to HBM.";
    case Line::A3_L5: return "Load dS and Q by blocks from HBM, compute dK = dS^T Q, write dK to HBM.";
    case Line::A4_L5: return "Initialize dQ = (0), dK = (0), dV = (0) in HBM.";
    case Line::A4_L7: return "Load K_j, V_j from HBM to on-chip SRAM.";
    case Line::A4_L8: return "Initialize dK~_j = (0), dV~_j = (0) on SRAM.";
    case Line::A4_SKIP: return "for 1 <= i <= Tr do  (block entirely masked: skipped)";
    case Line::A4_L10: return "Load Q_i, O_i, dO_i, dQ_i, l_i, m_i from HBM to on-chip SRAM.";
    case Line::A4_L11: return "On chip, compute S_ij = tau Q_i K_j^T.";
    case Line::A4_L12: return "On chip, compute S_ij^masked = MASK(S_ij).";
    case Line::A4_L13: return "On chip, compute P_ij = diag(l_i)^-1 exp(S_ij^masked - m_i).";
    case Line::A4_L14:
      return "On chip, compute the dropout mask Z_ij (1/(1-p) with probability 1-p, else 0) and "
             "P_ij^dropped = P_ij o Z_ij.";
    case Line::A4_L16: return "On chip, compute dV~_j <- dV~_j + (P_ij^dropped)^T dO_i.";
    case Line::A4_L17: return "On chip, compute dP_ij^dropped = dO_i V_j^T.";
    case Line::A4_L18: return "On chip, compute dP_ij = dP_ij^dropped o Z_ij.";
    case Line::A4_L19: return "On chip, compute D_i = rowsum(dO_i o O_i).";
    case Line::A4_L20: return "On chip, compute dS_ij = P_ij o (dP_ij - D_i).";
    case Line::A4_L21: return "Write dQ_i <- dQ_i + tau dS_ij K_j to HBM.";
    case Line::A4_L22: return "On chip, compute dK~_j <- dK~_j + tau dS_ij^T Q_i.";
    case Line::A4_L24: return "Write dK_j <- dK~_j, dV_j <- dV~_j to HBM.";
    case Line::B2_L3: return "Initialize dQ = (0) in HBM.";
    case Line::B2_L4: return "Compute D = rowsum(dO o O), write D to HBM.";
    case Line::B2_L6: return "Load K_j, V_j from HBM to on-chip SRAM.";
    case Line::B2_L7: return "Initialize dK_j = (0), dV_j = (0) on SRAM.";
    case Line::B2_SKIP: return "for 1 <= i <= Tr do  (block entirely masked: skipped)";
    case Line::B2_L9: return "Load Q_i, dO_i, L_i, D_i from HBM to on-chip SRAM.";
    case Line::B2_L10: return "On chip, compute S_ij = tau Q_i K_j^T.";
    case Line::B2_L11: return "On chip, compute P_ij = exp(S_ij - L_i).";
    case Line::B2_L12: return "On chip, compute dV_j <- dV_j + (P_ij^dropped)^T dO_i.";
    case Line::B2_L13: return "On chip, compute dP_ij = dO_i V_j^T (o Z_ij with dropout).";
    case Line::B2_L14: return "On chip, compute dS_ij = P_ij o (dP_ij - D_i).";
    case Line::B2_L15:
      return "Load dQ_i from HBM to SRAM, then on chip update dQ_i <- dQ_i + tau dS_ij K_j, and "
             "write back to HBM.";
    case Line::B2_L16: return "On chip, compute dK_j <- dK_j + tau dS_ij^T Q_i.";
    case Line::B2_L18: return "Write dK_j, dV_j to HBM.";
    default: return "?";
  }
}

std::string Trace::explain_backward(size_t k) const {
  const Step& s = steps.at(k);
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
    case Line::B2_L3:
      std::snprintf(buf, sizeof buf, "Initialise %s in HBM: dQ_i collects a share from every "
                    "K/V block.", s.line == Line::A4_L5 ? "dQ = 0, dK = 0 and dV = 0" : "dQ = 0");
      break;
    case Line::A4_L7:
    case Line::B2_L6:
      std::snprintf(buf, sizeof buf, "Load K_j and V_j (rows %lld-%lld) into SRAM; they stay for the "
                    "whole inner loop over i.", c0, c1);
      break;
    case Line::A4_L8:
    case Line::B2_L7:
      std::snprintf(buf, sizeof buf, "Start the accumulators dK~_j = dV~_j = 0 (%lld x %lld each) on "
                    "chip: they reach HBM once, at the end of the loop.", (long long)bc, (long long)problem.d);
      break;
    case Line::A4_SKIP:
    case Line::B2_SKIP:
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
    case Line::B2_L9:
      std::snprintf(buf, sizeof buf, "Load Q_i, dO_i, L_i and D_i (rows %lld-%lld): O_i is not needed, "
                    "D_i already holds what it gave.", r0, r1);
      break;
    case Line::A4_L11:
    case Line::B2_L10:
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
    case Line::B2_L11:
      std::snprintf(buf, sizeof buf, "Recompute P_ij = exp(S_ij - L_i) with one statistic, the "
                    "logsumexp; a row with no visible key (L_i = -inf) gets P = 0.");
      break;
    case Line::A4_L14:
      std::snprintf(buf, sizeof buf, "Draw Z_ij again from Philox at the same (row, column) keys as the "
                    "forward: the identical dropout mask, never stored.");
      break;
    case Line::A4_L16:
    case Line::B2_L12:
      std::snprintf(buf, sizeof buf, "Add (P_ij^dropped)^T dO_i to dV~_j on chip.");
      break;
    case Line::A4_L17:
    case Line::B2_L13:
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
    case Line::B2_L4:
      std::snprintf(buf, sizeof buf, "Load O_i and dO_i (rows %lld-%lld), compute D_i = rowsum(dO_i o "
                    "O_i) once and write it to HBM.", r0, r1);
      break;
    case Line::A4_L20:
    case Line::B2_L14:
      std::snprintf(buf, sizeof buf, "dS_ij = P_ij o (dP_ij - D_i): the gradient of the scores.");
      break;
    case Line::A4_L21:
    case Line::B2_L15:
      std::snprintf(buf, sizeof buf, "Add tau dS_ij K_j to dQ_i (rows %lld-%lld) and write it back: a "
                    "read-modify-write, an atomic add on a GPU where the j blocks run in parallel.",
                    r0, r1);
      break;
    case Line::A4_L22:
    case Line::B2_L16:
      std::snprintf(buf, sizeof buf, "Add tau dS_ij^T Q_i to dK~_j on chip.");
      break;
    case Line::A4_L24:
    case Line::B2_L18:
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
