#include "core/trace.h"

#include <cstdio>
#include <limits>

namespace flashstep {

int line_number(Line l) {
  const int n = static_cast<int>(l);
  return n > 100 ? n % 100 : n;
}

const char* line_label(Line l) {
  if (is_backward_line(l)) return backward_line_label(l);
  if (is_decode_line(l)) return decode_line_label(l);
  switch (l) {
    case Line::A1_L2: return "Alg1 L2";
    case Line::A1_L6: return "Alg1 L6";
    case Line::A1_L8: return "Alg1 L8";
    case Line::A1_L9: return "Alg1 L9";
    case Line::A1_L10: return "Alg1 L10";
    case Line::A1_L11: return "Alg1 L11";
    case Line::A1_L12: return "Alg1 L12";
    case Line::A1_L13: return "Alg1 L13";
    case Line::A0_L1: return "Alg0 L1";
    case Line::A0_L2: return "Alg0 L2";
    case Line::A0_L3: return "Alg0 L3";
    case Line::A1_SKIP: return "Alg1 skip";
    case Line::A2_L4: return "FA2fwd L4";
    case Line::A2_L5: return "FA2fwd L5";
    case Line::A2_SKIP: return "FA2fwd skip";
    case Line::A2_L7: return "FA2fwd L7";
    case Line::A2_L8: return "FA2fwd L8";
    case Line::A2_L9: return "FA2fwd L9";
    case Line::A2_L10: return "FA2fwd L10";
    case Line::A2_L12: return "FA2fwd L12";
    case Line::A2_L13: return "FA2fwd L13";
    case Line::A2_L14: return "FA2fwd L14";
    case Line::A2_L15: return "FA2fwd L15";
    default: break;  // backward lines: handled above
  }
  return "?";
}

const char* line_pseudocode(Line l) {
  if (is_backward_line(l)) return backward_line_pseudocode(l);
  if (is_decode_line(l)) return decode_line_pseudocode(l);
  switch (l) {
    case Line::A1_L2: return "Initialize O = (0), l = (0), m = (-inf) in HBM.";
    case Line::A1_L6: return "Load K_j, V_j from HBM to on-chip SRAM.";
    case Line::A1_L8: return "Load Q_i, O_i, l_i, m_i from HBM to on-chip SRAM.";
    case Line::A1_L9: return "On chip, compute S_ij = tau Q_i K_j^T.";
    case Line::A1_L10:
      return "On chip, compute m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), "
             "l~_ij = rowsum(P~_ij).";
    case Line::A1_L11:
      return "On chip, compute m_i^new = max(m_i, m~_ij), "
             "l_i^new = e^(m_i - m_i^new) l_i + e^(m~_ij - m_i^new) l~_ij.";
    case Line::A1_L12:
      return "Write O_i <- diag(l_i^new)^-1 (diag(l_i) e^(m_i - m_i^new) O_i + "
             "e^(m~_ij - m_i^new) P~_ij V_j) to HBM.";
    case Line::A1_L13: return "Write l_i <- l_i^new, m_i <- m_i^new to HBM.";
    case Line::A0_L1: return "Load Q, K by blocks from HBM, compute S = tau Q K^T, write S to HBM.";
    case Line::A0_L2: return "Read S from HBM, compute P = softmax(S), write P to HBM.";
    case Line::A0_L3: return "Load P and V by blocks from HBM, compute O = PV, write O to HBM.";
    case Line::A1_SKIP: return "for 1 <= i <= Tr do  (block entirely masked: skipped)";
    case Line::A2_L4: return "Load Q_i from HBM to on-chip SRAM.";
    case Line::A2_L5: return "On chip, initialize O_i = (0), l_i = (0), m_i = (-inf).";
    case Line::A2_SKIP: return "for 1 <= j <= Tc do  (block entirely masked: skipped)";
    case Line::A2_L7: return "Load K_j, V_j from HBM to on-chip SRAM.";
    case Line::A2_L8: return "On chip, compute S_ij = tau Q_i K_j^T.";
    case Line::A2_L9:
      return "On chip, compute m_i^(j) = max(m_i^(j-1), rowmax(S_ij)), P~_ij = exp(S_ij - m_i^(j)), "
             "l_i^(j) = e^(m_i^(j-1) - m_i^(j)) l_i^(j-1) + rowsum(P~_ij).";
    case Line::A2_L10:
      return "On chip, compute O_i^(j) = diag(e^(m_i^(j-1) - m_i^(j))) O_i^(j-1) + P~_ij V_j.";
    case Line::A2_L12: return "On chip, compute O_i = diag(l_i^(Tc))^-1 O_i^(Tc).";
    case Line::A2_L13: return "On chip, compute L_i = m_i^(Tc) + log(l_i^(Tc)).";
    case Line::A2_L14: return "Write O_i to HBM as the i-th block of O.";
    case Line::A2_L15: return "Write L_i to HBM as the i-th block of L.";
    default: break;  // backward lines: handled above
  }
  return "?";
}

std::string Trace::explain(size_t k) const {
  const Step& s = steps.at(k);
  if (is_backward_line(s.line)) return explain_backward(k);
  if (is_decode_line(s.line)) return explain_decode(k);
  const int64_t br = s.i >= 0 ? tiling.rows_in_q_block(s.i, problem.nq) : 0;
  const int64_t bc = s.j >= 0 ? tiling.rows_in_kv_block(s.j, problem.nk) : 0;
  const int64_t r0 = s.i >= 0 ? s.i * tiling.Br : 0, c0 = s.j >= 0 ? s.j * tiling.Bc : 0;
  char buf[512];
  switch (s.line) {
    case Line::A1_L2:
      std::snprintf(buf, sizeof buf,
                    "Initialise O = 0 (%lld x %lld), l = 0 and m = -inf (%lld each) in HBM.",
                    (long long)problem.nq, (long long)problem.d, (long long)problem.nq);
      break;
    case Line::A1_L6:
      std::snprintf(buf, sizeof buf,
                    "Load K_j and V_j (rows %lld-%lld, %lld x %lld each) into SRAM; they stay "
                    "there for the whole inner loop over i.",
                    (long long)c0, (long long)(c0 + bc - 1), (long long)bc, (long long)problem.d);
      break;
    case Line::A1_L8:
      std::snprintf(buf, sizeof buf,
                    "Load Q_i with the running O_i, l_i and m_i (rows %lld-%lld) from HBM into "
                    "SRAM.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::A1_L9:
      std::snprintf(buf, sizeof buf,
                    "Compute the %lld x %lld score tile S_ij = tau Q_i K_j^T on chip; HBM is not "
                    "touched.",
                    (long long)br, (long long)bc);
      break;
    case Line::A1_L10:
      std::snprintf(buf, sizeof buf,
                    "Take each row's max m~_ij, exponentiate P~_ij = exp(S_ij - m~_ij) and sum "
                    "each row into l~_ij.");
      break;
    case Line::A1_L11:
      std::snprintf(buf, sizeof buf,
                    "Merge the statistics: m_i^new = max(m_i, m~_ij) and l_i^new rescales both "
                    "sums onto the new max.");
      break;
    case Line::A1_L12:
      std::snprintf(buf, sizeof buf,
                    "Rescale the old O_i, add P~_ij V_j, divide by l_i^new and write O_i (rows "
                    "%lld-%lld) back to HBM.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::A1_L13:
      std::snprintf(buf, sizeof buf, "Write l_i^new and m_i^new back to HBM as l_i and m_i.");
      break;
    case Line::A0_L1:
      std::snprintf(buf, sizeof buf,
                    "Load Q_i (rows %lld-%lld)%s, compute S_i = tau Q_i K^T and write it to HBM.",
                    (long long)r0, (long long)(r0 + br - 1), s.i == 0 ? " and all of K" : "");
      break;
    case Line::A0_L2:
      std::snprintf(buf, sizeof buf,
                    "Read S_i back from HBM, compute P_i = softmax(S_i) row by row and write it "
                    "to HBM.");
      break;
    case Line::A0_L3:
      std::snprintf(buf, sizeof buf, "Load P_i%s, compute O_i = P_i V and write it to HBM.",
                    s.i == 0 ? " and all of V" : "");
      break;
    case Line::A1_SKIP:
    case Line::A2_SKIP:
      if (s.i < 0)
        std::snprintf(buf, sizeof buf,
                      "Every query block masks K/V block j = %d entirely: K_j and V_j are never "
                      "loaded.", s.j);
      else
        std::snprintf(buf, sizeof buf,
                      "Block (i = %d, j = %d) is entirely masked: skipped, with no loads and no "
                      "FLOPs.", s.i, s.j);
      break;
    case Line::A2_L4:
      std::snprintf(buf, sizeof buf,
                    "Load Q_i (rows %lld-%lld) into SRAM; it stays there for the whole inner loop "
                    "over j.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::A2_L5:
      std::snprintf(buf, sizeof buf,
                    "Start O_i = 0, l_i = 0, m_i = -inf on chip: unlike Algorithm 1 they never "
                    "travel to HBM and back.");
      break;
    case Line::A2_L7:
      std::snprintf(buf, sizeof buf, "Load K_j and V_j (rows %lld-%lld) into SRAM.", (long long)c0,
                    (long long)(c0 + bc - 1));
      break;
    case Line::A2_L8:
      std::snprintf(buf, sizeof buf, "Compute the %lld x %lld score tile S_ij = tau Q_i K_j^T on chip%s.",
                    (long long)br, (long long)bc, s.masked ? ", masking entries element by element" : "");
      break;
    case Line::A2_L9:
      std::snprintf(buf, sizeof buf,
                    "Update the running max m_i, exponentiate against it and rescale the running "
                    "sum l_i by e^(m_old - m_new).");
      break;
    case Line::A2_L10:
      std::snprintf(buf, sizeof buf,
                    "Rescale the unnormalised O_i by e^(m_old - m_new) and add P~_ij V_j; no "
                    "division yet.");
      break;
    case Line::A2_L12:
      std::snprintf(buf, sizeof buf, "Divide O_i by l_i once, at the end (Algorithm 1 divides at every j).");
      break;
    case Line::A2_L13:
      std::snprintf(buf, sizeof buf, "Compute the logsumexp L_i = m_i + log l_i for the backward pass.");
      break;
    case Line::A2_L14:
      std::snprintf(buf, sizeof buf, "Write O_i (rows %lld-%lld) to HBM: its only write.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::A2_L15:
      std::snprintf(buf, sizeof buf, "Write L_i to HBM.");
      break;
    default:  // backward lines: handled above
      buf[0] = 0;
      break;
  }
  return buf;
}

size_t Trace::approx_bytes() const {
  size_t sum = steps.capacity() * sizeof(Step);
  for (const Step& s : steps) {
    sum += sizeof(float) * size_t(s.m_tilde.size() + s.l_tilde.size() + s.m_old.size() +
                                  s.l_old.size() + s.m_new.size() + s.l_new.size() +
                                  s.alpha.size() + s.beta.size() + s.tile.size() + s.O_i.size() +
                                  s.D_i.size() + s.dropout_keep.size());
    sum += s.writes.capacity() * sizeof(HbmWrite);
    for (const HbmWrite& w : s.writes) sum += sizeof(float) * size_t(w.data.size());
  }
  return sum;
}

Step& Recorder::begin(Line line, int64_t i, int64_t j) {
  Step& s = t_.steps.emplace_back();
  s.line = line;
  s.i = int32_t(i);
  s.j = int32_t(j);
  read_before_ = hbm_.traffic().total_read();
  write_before_ = hbm_.traffic().total_written();
  hbm_.set_write_log(&s.writes);
  return s;
}

void Recorder::end(int64_t flops) {
  Step& s = t_.steps.back();
  hbm_.set_write_log(nullptr);
  const Traffic& tr = hbm_.traffic();
  s.hbm_read_total = tr.total_read();
  s.hbm_write_total = tr.total_written();
  s.hbm_read = s.hbm_read_total - read_before_;
  s.hbm_write = s.hbm_write_total - write_before_;
  s.dram_read = s.hbm_read;  // the L2 model, when on, replaces these at the end of the run
  s.dram_write = s.hbm_write;
  s.dram_read_total = s.hbm_read_total;
  s.dram_write_total = s.hbm_write_total;
  const int64_t before = t_.steps.size() > 1 ? t_.steps[t_.steps.size() - 2].flops_total : 0;
  s.flops = flops;
  s.flops_total = before + flops;
  s.sram_elems = sram_.resident();
  s.sram_bytes = sram_.resident_bytes();
  s.tensor_read = tr.read;
  s.tensor_written = tr.written;
}

Cursor::Cursor(const Trace& trace, size_t budget) : trace_(trace) {
  const Problem& p = trace.problem;
  size_t state_bytes = sizeof(float) * size_t(p.nq) * size_t(p.d + 3);
  if (p.schedule == Schedule::standard) state_bytes += 2 * sizeof(float) * size_t(p.nq) * size_t(p.nk);
  if (trace.has_backward)  // dQ, dK, dV, D; dP and dS for standard attention
    state_bytes = 2 * state_bytes + sizeof(float) * size_t(p.nk) * size_t(2 * p.d);
  const size_t max_checkpoints = std::max<size_t>(1, budget / state_bytes);
  spacing_ = std::max<size_t>(64, (trace.steps.size() + max_checkpoints - 1) / max_checkpoints);
  reset();
}

void Cursor::reset() {
  k_ = 0;
  has_.fill(false);
}

void Cursor::apply(const Step& s) {
  const Problem& p = trace_.problem;
  for (const HbmWrite& w : s.writes) {
    const int t = static_cast<int>(w.tensor);
    if (!has_[t]) {  // first write allocates; unwritten rows read as NaN ("nothing here yet")
      state_[t].setConstant(tensor_rows(w.tensor, p.nq, p.nk, p.splits), tensor_cols(w.tensor, p.nk, p.d),
                            std::numeric_limits<float>::quiet_NaN());
      has_[t] = true;
    }
    state_[t].middleRows(w.row0, w.data.rows()) = w.data;
  }
}

void Cursor::forward() {
  if (k_ >= size()) return;
  apply(trace_.steps[k_++]);
  if (k_ % spacing_ == 0 && (checkpoints_.empty() || checkpoints_.back().k < k_))
    checkpoints_.push_back(Checkpoint{k_, state_, has_});
}

void Cursor::backward() {
  if (k_ > 0) seek(k_ - 1);
}

void Cursor::seek(size_t k) {
  k = std::min(k, size());
  if (k < k_) {
    reset();
    for (auto it = checkpoints_.rbegin(); it != checkpoints_.rend(); ++it)
      if (it->k <= k) {
        k_ = it->k;
        state_ = it->state;
        has_ = it->has;
        break;
      }
  }
  while (k_ < k) forward();
}

}  // namespace flashstep
