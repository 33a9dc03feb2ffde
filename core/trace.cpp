#include "core/trace.h"

#include "core/schedule_registry.h"

#include <cstdio>
#include <limits>

namespace flashstep {

std::string Trace::explain(size_t k) const {
  const ScheduleInfo& info = schedule_info(problem.schedule);
  return is_backward_line(steps.at(k).line) ? info.explain_backward(*this, k) : info.explain_forward(*this, k);
}

std::string explain_paper_step(const Trace& t, size_t k) {
  const Problem& problem = t.problem;
  const Tiling& tiling = t.tiling;
  const Step& s = t.steps.at(k);
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
    case Line::FA2F_SKIP:
      if (s.i < 0)
        std::snprintf(buf, sizeof buf,
                      "Every query block masks K/V block j = %d entirely: K_j and V_j are never "
                      "loaded.", s.j);
      else
        std::snprintf(buf, sizeof buf,
                      "Block (i = %d, j = %d) is entirely masked: skipped, with no loads and no "
                      "FLOPs.", s.i, s.j);
      break;
    case Line::FA2F_L4:
      std::snprintf(buf, sizeof buf,
                    "Load Q_i (rows %lld-%lld) into SRAM; it stays there for the whole inner loop "
                    "over j.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::FA2F_L5:
      std::snprintf(buf, sizeof buf,
                    "Start O_i = 0, l_i = 0, m_i = -inf on chip: unlike Algorithm 1 they never "
                    "travel to HBM and back.");
      break;
    case Line::FA2F_L7:
      std::snprintf(buf, sizeof buf, "Load K_j and V_j (rows %lld-%lld) into SRAM.", (long long)c0,
                    (long long)(c0 + bc - 1));
      break;
    case Line::FA2F_L8:
      std::snprintf(buf, sizeof buf, "Compute the %lld x %lld score tile S_ij = tau Q_i K_j^T on chip%s.",
                    (long long)br, (long long)bc, s.masked ? ", masking entries element by element" : "");
      break;
    case Line::FA2F_L9:
      std::snprintf(buf, sizeof buf,
                    "Update the running max m_i, exponentiate against it and rescale the running "
                    "sum l_i by e^(m_old - m_new).");
      break;
    case Line::FA2F_L10:
      std::snprintf(buf, sizeof buf,
                    "Rescale the unnormalised O_i by e^(m_old - m_new) and add P~_ij V_j; no "
                    "division yet.");
      break;
    case Line::FA2F_L12:
      std::snprintf(buf, sizeof buf, "Divide O_i by l_i once, at the end (Algorithm 1 divides at every j).");
      break;
    case Line::FA2F_L13:
      std::snprintf(buf, sizeof buf, "Compute the logsumexp L_i = m_i + log l_i for the backward pass.");
      break;
    case Line::FA2F_L14:
      std::snprintf(buf, sizeof buf, "Write O_i (rows %lld-%lld) to HBM: its only write.",
                    (long long)r0, (long long)(r0 + br - 1));
      break;
    case Line::FA2F_L15:
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
  // S and P of standard attention (ScheduleInfo::nn_matrices_forward)
  state_bytes += size_t(schedule_info(p.schedule).nn_matrices_forward) * sizeof(float) * size_t(p.nq) * size_t(p.nk);
  if (trace.has_backward)  // dQ, dK, dV, D; dP and dS for standard attention
    state_bytes = 2 * state_bytes + sizeof(float) * size_t(p.nk) * size_t(2 * p.d);
  const size_t max_checkpoints = std::max<size_t>(1, budget / state_bytes);
  spacing_ = std::max<size_t>(64, (trace.steps.size() + max_checkpoints - 1) / max_checkpoints);
  reset();
}

void Cursor::reset() {
  k_ = 0;
  has_.fill(false);
  apply(trace_.hbm_before);
}

void Cursor::apply(const std::vector<HbmWrite>& writes) {
  const Problem& p = trace_.problem;
  for (const HbmWrite& w : writes) {
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
  apply(trace_.steps[k_++].writes);
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
