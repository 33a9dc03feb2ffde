// What the memory panel shows of the L2 model (core/l2_cache.h, docs/l2-model.md) and of a
// measurement: the L2 at the current step, each schedule's DRAM bytes, and the DRAM bytes that
// Nsight Compute measured, read from the JSON that tools/device/ncu_dram.sh writes. The panel and the
// --dump-state JSON both take their numbers from here, so the tests check what is drawn.
//
// Measurement JSON (tools/device/ncu_dram.sh; extra keys are ignored):
//   { "gpu": "h200", "method": "...",
//     "points": [ { "schedule": "fa1" | "fa2" | "standard", "n": N, "d": D, "heads": H,
//                   "dtype": "fp32" | "fp16" | "bf16" (default fp32),
//                   "M": elements (default 32768 = 128 KiB, the script's default),
//                   "measured": { "dram_read_bytes": B, "dram_write_bytes": B,
//                                 "kernel_ms": T (optional) },
//                   "error": "why it failed" (then "measured" may be absent; skipped) } ] }
// A point stands for the problem Nq = Nk = n, d, M, dtype, run by `heads` heads together; its
// bytes are every head's.
#pragma once
#include "core/l2_cache.h"
#include "core/trace.h"

#include <optional>
#include <string>
#include <vector>

namespace flashstep::gui {

struct DramPoint {
  std::string schedule;  // as the file names it; points of other kernels match nothing here
  int64_t n = 0, d = 0, heads = 1;
  Dtype dtype = Dtype::fp32;
  int64_t M = 32768;
  double read_bytes = 0, write_bytes = 0;
  double kernel_ms = -1;  // -1: not in the file
};

struct DramMeasurements {
  std::string path, gpu;  // gpu: the file's "gpu" (default h200)
  std::vector<DramPoint> points;
  int64_t failed = 0;     // points the script marked with "error"
};

// Throws InputError with one line naming the file and the first bad key.
DramMeasurements load_dram_measurements(const std::string& path);
DramMeasurements parse_dram_measurements(const std::string& text, const std::string& path);

// The point measured for this problem, schedule and L2 configuration (same GPU and heads), or
// null. M is compared for fa1 and fa2 only: standard attention's kernels have no tiles.
const DramPoint* find_dram_point(const DramMeasurements& m, Schedule s, const Problem& p,
                                 const L2Config& l2);

// The L2 at the current step (Step::l2_*, head 0's counts; lines of every head).
struct L2StepView {
  int64_t dram_read_total = 0, dram_write_total = 0, dram_read = 0, dram_write = 0;
  int64_t hbm_read_total = 0;
  int64_t lines = 0, dirty_lines = 0, capacity_lines = 0;
  int64_t hit_total = 0;
  double hit_rate = 0;  // hit_total / hbm_read_total (0 before any read)
};
L2StepView l2_step_view(const Trace& tr, const Step* cur);

// One schedule's column in the side-by-side table: its DRAM bytes with the L2 model and, when
// a measurement is loaded and has the problem, the measured ones.
struct DramColumn {
  bool model = false;  // the L2 model ran
  int64_t read = 0, write = 0;                  // head 0 (= HBM bytes without the model)
  int64_t all_heads_read = 0, all_heads_write = 0;
  bool ncu = false;
  int64_t ncu_read = 0, ncu_write = 0;          // every head, as Nsight Compute counts
  const DramPoint* measured = nullptr;
};
DramColumn dram_column(const Totals& t, Schedule s, const Problem& p, const DramMeasurements* m);

}  // namespace flashstep::gui
