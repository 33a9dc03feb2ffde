// What every schedule sets up the same way: the memory model with Q, K, V in HBM, the
// optional Recorder, and the step and FLOP counters; finish() copies the totals to the trace.
#pragma once
#include "core/paged_kv.h"
#include "core/trace.h"

#include <optional>

namespace flashstep {

class ScheduleContext {
 public:
  // sram_capacity: elements for the d-wide tiles; 0 = not enforced (standard attention).
  ScheduleContext(Trace& tr, bool record, int64_t sram_capacity)
      : tr_(tr), hbm(tr.problem.dtype), sram(sram_capacity, tr.problem.dtype) {
    hbm.put(Tensor::Q, tr.problem.Q);
    hbm.put(Tensor::K, tr.problem.K);
    hbm.put(Tensor::V, tr.problem.V);
    if (tr.problem.page_size > 0) {  // the pools from the rounded K, V; the table in HBM
      paged.emplace(hbm.get(Tensor::K), hbm.get(Tensor::V), tr.problem.page_size, tr.problem.seed);
      hbm.put(Tensor::BT, Eigen::Map<const Eigen::VectorXi>(paged->table.data(), Eigen::Index(paged->pages)).cast<float>());
    }
    if (record) rec_.emplace(tr, hbm, sram);
    if (tr.totals.l2.enabled) hbm.set_access_log(&access_log_);
  }
  // The backward pass: continues on the HBM the forward left (Trace::hbm_after), so the
  // traffic, FLOP and step counts run on from the forward's. sram_capacity: elements for the
  // backward's d-wide tiles (twice the forward's; see backward.h), 0 = not enforced.
  ScheduleContext(Trace& tr, bool record, int64_t sram_capacity, Hbm&& forward_hbm)
      : tr_(tr), hbm(std::move(forward_hbm)), sram(sram_capacity, tr.problem.dtype),
        flops_(tr.totals.flops), steps_(tr.totals.steps) {
    if (record) rec_.emplace(tr, hbm, sram);
  }
  // Around each pseudocode line. begin returns the step to fill, or null on the fast path.
  Step* begin(Line line, int64_t i, int64_t j) {
    ++steps_;
    if (tr_.totals.l2.enabled) access_log_.begin_step(line, i, j);
    return rec_ ? &rec_->begin(line, i, j) : nullptr;
  }
  void end(int64_t flops) {
    flops_ += flops;
    if (rec_) rec_->end(flops);
  }
  void finish() {
    Totals& tot = tr_.totals;
    tot.traffic = hbm.traffic();
    tot.hbm_read_bytes = tot.traffic.total_read();
    tot.hbm_write_bytes = tot.traffic.total_written();
    tot.flops = flops_;
    tot.peak_sram_bytes = std::max(tot.peak_sram_bytes, sram.peak_bytes());
    tot.peak_tile_bytes = std::max(tot.peak_tile_bytes, sram.peak_tile_bytes());
    tot.steps = steps_;
    tot.dram_read_bytes = tot.hbm_read_bytes;
    tot.dram_write_bytes = tot.hbm_write_bytes;
    if (tot.l2.enabled) apply_l2_model(tr_, access_log_);
    if (tr_.keep_hbm) tr_.hbm_after = std::make_shared<Hbm>(std::move(hbm));
  }

 private:
  Trace& tr_;

 public:
  Hbm hbm;
  Sram sram;
  std::optional<PagedKv> paged;  // --page-size: K, V read through the block table (core/paged_kv.h)

 private:
  std::optional<Recorder> rec_;
  AccessLog access_log_;  // filled only with the L2 model on
  int64_t flops_ = 0, steps_ = 0;
};

// Alg1 L9 / FA2fwd L8: S_ij = tau Q_i K_j^T into S (already sized Br x Bc); in a partly masked
// block the masked entries become -inf. Records the tile on the step when recording.
inline void score_tile(Mat& S, const Mat& Qi, const Mat& Kj, const Problem& p, Mask::Block kind,
                       int64_t row0, int64_t col0, Step* step) {
  S.noalias() = Qi * Kj.transpose();
  S *= p.scale;
  if (kind == Mask::Block::partial) apply_mask(S, p.mask, row0, col0, p.nk);
  if (step) {
    step->tile = S;
    step->masked = kind == Mask::Block::partial;
  }
}

}  // namespace flashstep
