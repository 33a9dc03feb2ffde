// What every schedule sets up the same way: the memory model with Q, K, V in HBM, the
// optional Recorder, and the step and FLOP counters; finish() copies the totals to the trace.
#pragma once
#include "core/fp8_inputs.h"
#include "core/paged_kv.h"
#include "core/trace.h"

#include <optional>

namespace flashstep {

class ScheduleContext {
 public:
  // sram_capacity: elements for the d-wide tiles; 0 = not enforced (standard attention).
  ScheduleContext(Trace& tr, bool record, int64_t sram_capacity)
      : tr_(tr), hbm(tr.problem.dtype), sram(sram_capacity, tr.problem.dtype) {
    if (tr.problem.dtype == Dtype::fp8) {  // e4m3 values and their scales (core/fp8_inputs.h)
      put_fp8_inputs(hbm, tr.problem, tr.tiling);
    } else {
      hbm.put(Tensor::Q, tr.problem.Q);
      hbm.put(Tensor::K, tr.problem.K);
      hbm.put(Tensor::V, tr.problem.V);
    }
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
// --dtype fp8: Q_i, K_j hold e4m3 values and s_q, s_k are their scales (1 otherwise); the kernel
// applies them with tau as one factor, S_ij = (Q_i K_j^T) (tau s_q s_k), as FlashAttention-3
// folds the descales into the softmax scale. The step records the scales and the largest error
// of S_ij against tau Q_i K_j^T of the unquantised inputs, in float64.
inline void score_tile(Mat& S, const Mat& Qi, const Mat& Kj, const Problem& p, Mask::Block kind,
                       int64_t row0, int64_t col0, Step* step, float s_q = 1.0f, float s_k = 1.0f) {
  S.noalias() = Qi * Kj.transpose();
  S *= p.dtype == Dtype::fp8 ? p.scale * s_q * s_k : p.scale;
  if (kind == Mask::Block::partial) apply_mask(S, p.mask, row0, col0, p.nk);
  if (step) {
    step->tile = S;
    step->masked = kind == Mask::Block::partial;
    if (p.dtype == Dtype::fp8) {
      step->fp8_scale_a = s_q;
      step->fp8_scale_b = s_k;
      const MatD exact = double(p.scale) * (p.Q.middleRows(row0, S.rows()).cast<double>() *
                                            p.K.middleRows(col0, S.cols()).cast<double>().transpose());
      double worst = 0;
      for (int64_t r = 0; r < S.rows(); ++r)
        for (int64_t c = 0; c < S.cols(); ++c)
          if (std::isfinite(S(r, c))) worst = std::max(worst, std::abs(double(S(r, c)) - exact(r, c)));
      step->fp8_error = worst;
    }
  }
}

// FA2fwd L10 / Alg1 L12 under --dtype fp8: P~_ij in e4m3 with scale 1 (P~ <= 1 fits without one),
// as FlashAttention-3 converts it in registers; the step records the scales of the product
// (1 for P~, s_v for V_j) and the largest rounding error of P~_ij. Decode keeps P~ in float32
// (p_dtype fp32, core/problem.cpp): the step records the scales and an error of 0. Other types:
// --p-dtype's rounding.
inline void round_p_tile(Mat& P, const Problem& p, Step* step, float s_v) {
  if (step && p.dtype == Dtype::fp8 && p.p_dtype != Dtype::fp8) {
    step->fp8_scale_a = 1.0f;
    step->fp8_scale_b = s_v;
    step->fp8_error = 0;
  }
  if (step && p.p_dtype == Dtype::fp8) {
    double worst = 0;
    for (int64_t k = 0; k < P.size(); ++k)
      worst = std::max(worst, std::abs(double(round_e4m3(P.data()[k])) - double(P.data()[k])));
    step->fp8_scale_a = 1.0f;
    step->fp8_scale_b = s_v;
    step->fp8_error = worst;
  }
  round_in_place(p.p_dtype, P.data(), P.size());
}

}  // namespace flashstep
