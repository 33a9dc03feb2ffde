// Trace: one Step per numbered pseudocode line and (i, j), recorded by a schedule.
// Readers (CLI printer, exporters, the desktop app, the GPU verifier) only read it.
#pragma once
#include "core/accuracy.h"
#include "core/l2_cache.h"
#include "core/lines.h"
#include "core/memory.h"
#include "core/problem.h"

#include <memory>
#include <vector>

namespace flashstep {

struct Step {
  Line line;
  int32_t i = -1, j = -1;  // -1 where the loop variable is not in scope
  int32_t split = -1;      // decode: the split s the step works for (0-based), -1 elsewhere
  int64_t hbm_read = 0, hbm_write = 0;              // bytes moved by this step
  int64_t hbm_read_total = 0, hbm_write_total = 0;  // bytes moved up to and including it
  // Between L2 and DRAM (l2_cache.h): equal to the HBM bytes without an L2 model.
  int64_t dram_read = 0, dram_write = 0, dram_read_total = 0, dram_write_total = 0;
  // With the L2 model: head 0's load bytes served by the L2 up to and including this step, and
  // the L2's lines (every head's) held and dirty when the step's last access is replayed (a
  // step that moves nothing repeats the previous step's). The replay runs in the GPU's order,
  // so the occupancy is where the L2 stands when this step happens on the GPU.
  int64_t l2_hit_total = 0, l2_lines = 0, l2_dirty_lines = 0;
  int64_t flops = 0, flops_total = 0;
  std::array<int64_t, kSlots> sram_elems{};  // what sits in SRAM after the step
  int64_t sram_bytes = 0;                    // all resident slots, bytes
  std::array<int64_t, kTensors> tensor_read{}, tensor_written{};  // cumulative per tensor

  // Values the step produced (empty where the line produces none).
  Vec m_tilde, l_tilde;          // L10
  Vec m_old, l_old, m_new, l_new;  // L11
  Vec alpha, beta;               // L11: e^(m_i - m_i^new), e^(m~_ij - m_i^new) (fa2 L9: alpha)
  Mat tile;                      // L9: S_ij, L10: P~_ij; Alg0: S_i / P_i row block; fa2 L8/L9
  Mat O_i;                       // fa2 L10: O_i^(j) on chip after the update (not yet / l_i)
  bool masked = false;           // the block was partly masked, element by element
  std::vector<int32_t> pages;    // a paged load of K_j, V_j: the physical page of each logical page
  Mat dropout_keep;              // the line that applies dropout: 1 kept, 0 dropped
  // --dtype fp8 (docs/fp8.md): the scales the line applied (scores: s_Q_i, s_K_j; P~ V: 1 for
  // P~_ij, s_V_j) and its largest rounding error (scores: |S_ij - tau Q_i K_j^T| against the
  // unquantised inputs; P~ V: |P~_ij in e4m3 - P~_ij|). 0 where the line applies none.
  float fp8_scale_a = 0, fp8_scale_b = 0;
  double fp8_error = 0;
  // Backward: `tile` is what the line computed on chip (S_ij, P_ij, dP_ij, dS_ij, or the
  // accumulators dV~_j after L16 and dK~_j after L22); D_i = rowsum(dO_i o O_i) where computed.
  Vec D_i;
  std::vector<HbmWrite> writes;  // L2, L12, L13 (fa1); L1, L2, L3 (standard)
};

struct Totals {
  int64_t hbm_read_bytes = 0, hbm_write_bytes = 0, flops = 0;
  int64_t peak_sram_bytes = 0, peak_tile_bytes = 0;
  int64_t steps = 0;
  Traffic traffic;
  // Between L2 and DRAM; equal to hbm_*_bytes without an L2 model. With one, dram_write_bytes
  // includes l2.final_writeback_bytes, which no step carries.
  int64_t dram_read_bytes = 0, dram_write_bytes = 0;
  L2Totals l2;  // l2.enabled before the run asks the schedule for the L2 model
};

struct Trace {
  Problem problem;  // includes Q, K, V
  Tiling tiling;
  std::vector<Step> steps;  // empty for an unrecorded (fast-path) run
  Totals totals;
  Mat O;    // final output (from HBM)
  Vec lse;  // m + log(l) per row (natural log)
  // What HBM held before the first step beyond the inputs, written by no step: a puzzle's setup
  // (Algorithm 1's O = 0, l = 0, m = -inf; decode's partials; the backward's O, L, dO, D) in a
  // trace read from a file (core/trace_file.h). A Cursor starts from it. Empty for a run.
  std::vector<HbmWrite> hbm_before;

  // The backward pass (RunOptions::dO set): its steps follow the forward's from
  // backward_first_step on; `totals` covers both passes, the phase totals each one alone.
  bool has_backward = false;
  size_t backward_first_step = 0;
  Totals forward_totals, backward_totals;
  Mat dO, dQ, dK, dV;  // the backward's input and its gradients (read from HBM)
  // Set before the forward runs when the backward follows: the forward hands over its final
  // HBM (O with l and m, L, or P) and the backward continues on it, counters and all.
  bool keep_hbm = false;
  std::shared_ptr<Hbm> hbm_after;
  // Against the float64 reference, when RunOptions::accuracy asked for it (core/accuracy.h).
  std::optional<Accuracy> accuracy;

  std::string explain(size_t k) const;  // one sentence for step k (its schedule's explain_*)
  size_t approx_bytes() const;          // memory the recorded trace takes
};

// The sentences of the paper's algorithms' steps (Algorithms 1, 0 and FlashAttention-2's forward;
// trace.cpp) and of their backwards (Algorithms 4, 3 and FlashAttention-2's; trace_backward.cpp):
// the explain_forward / explain_backward of fa1, fa2 and standard (core/schedule_registry.h).
std::string explain_paper_step(const Trace& t, size_t k);
std::string explain_paper_backward_step(const Trace& t, size_t k);

// Schedules call begin/end around each pseudocode line. A null Recorder* means "fast path":
// the schedule still moves data through the memory model, but nothing is recorded.
class Recorder {
 public:
  Recorder(Trace& trace, Hbm& hbm, const Sram& sram) : t_(trace), hbm_(hbm), sram_(sram) {}
  Step& begin(Line line, int64_t i, int64_t j);
  void end(int64_t flops);

 private:
  Trace& t_;
  Hbm& hbm_;
  const Sram& sram_;
  int64_t read_before_ = 0, write_before_ = 0;
};

// The HBM state (O, l, m for fa1; O, L for fa2; S, P, O for standard) after a given step,
// rebuilt by replaying the recorded writes. Moving backward restores the nearest earlier
// checkpoint (copies of the state taken every `spacing` steps on the way forward, within a
// memory budget) and replays from there, so stepping back and forward always lands on the
// identical state and a step back costs at most `spacing` replays. Index 0 is the trace's
// hbm_before (nothing written, for a run).
class Cursor {
 public:
  explicit Cursor(const Trace& trace, size_t checkpoint_budget_bytes = size_t(64) << 20);
  size_t index() const { return k_; }  // number of steps applied (0 = before the first)
  size_t size() const { return trace_.steps.size(); }
  void forward();
  void backward();
  void seek(size_t k);
  void run_to_end() { seek(size()); }
  const Mat& hbm(Tensor t) const { return state_[static_cast<int>(t)]; }
  // Whether rows of a tensor have been written yet (before L2, O/l/m do not exist).
  bool written(Tensor t) const { return has_[static_cast<int>(t)]; }
  const Step* current() const { return k_ == 0 ? nullptr : &trace_.steps[k_ - 1]; }

 private:
  void reset();
  void apply(const std::vector<HbmWrite>& writes);
  struct Checkpoint {
    size_t k;
    std::array<Mat, kTensors> state;
    std::array<bool, kTensors> has;
  };
  const Trace& trace_;
  size_t k_ = 0;
  std::array<Mat, kTensors> state_;
  std::array<bool, kTensors> has_{};
  std::vector<Checkpoint> checkpoints_;  // sorted by k, one per multiple of spacing_
  size_t spacing_ = 1;

 public:
  size_t checkpoint_spacing() const { return spacing_; }
};

}  // namespace flashstep
