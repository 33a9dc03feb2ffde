// The app's state for flash-decoding (core/schedules/decode/), read from the trace only (no
// OpenGL or ImGui; the tiles view, the softmax panel and the tests read it): the split each K/V
// block belongs to (the tiles view's colours), the step at which each partial O_i^(s), lse_i^(s)
// reaches HBM, and the combine's rescale factors e^(lse_i^(s) - lse_i) at a step.
#pragma once
#include "core/trace.h"

#include <array>
#include <cstdint>
#include <vector>

namespace flashstep::gui {

// Whether the run writes partials (decode with S >= 2; S = 1 is fa2 and writes none).
bool has_partials(const Trace& tr);

// The split of K/V block j: the s with split_range(Tc, S, s).j0 <= j < j1
// (core/schedules/decode/decode.h);
// -1 when the run has no partials.
int64_t split_of_block(const Trace& tr, int64_t j);

// Per (split s, Q block i), at s * Tr + i: the step that writes O_i^(s) (FD L13) and lse_i^(s)
// (FD L14), -1 where none, kBeforeFirstStep where HBM held it before the first step (a trace's
// hbm_before: the decode-combine puzzle's partials); a row block of the partials is in HBM once
// the cursor has applied that step (partial_in_hbm).
constexpr int64_t kBeforeFirstStep = -2;
struct PartialWrites {
  int64_t S = 0, Tr = 0;
  std::vector<int64_t> o_step, lse_step;
};
PartialWrites partial_writes(const Trace& tr);
inline bool partial_in_hbm(int64_t step, size_t applied) {
  return step == kBeforeFirstStep || (step >= 0 && size_t(step) < applied);
}

// The memory panel's table of what the splits add against the contrast schedule (FA2's one
// pass): Q read, the partials written and read, the whole forward, each as decode's forward
// and the contrast's. Decode's figures are core's whole run of the problem where the trace
// holds the combine alone (RunView::whole_schedule: the decode-combine puzzle's, whose own
// totals are the combine's bytes), else the run's.
struct DecodeExtraRow {
  const char* name = "";
  int64_t decode = 0, contrast = 0;
};
struct DecodeExtraTraffic {
  std::array<DecodeExtraRow, 4> rows;
  int64_t extra = 0;     // the whole forward's bytes, decode's less the contrast's
  int64_t q_again = 0;   // Q read again per split
  int64_t partials = 0;  // 2 S Nq (d + 1) float32: O^(s), lse^(s) written and read back
  int64_t kv = 0;        // K and V read by decode
};
struct RunView;
// False where the run has no such table (no partials, or no run of either schedule).
bool decode_extra_traffic(const RunView& v, DecodeExtraTraffic& out);

// The combine of Q block i as it stands at the cursor `at` (a Cursor over tr), when its current
// step has the combine role: per row and split the lse_i^(s) loaded at FD L17, the
// rescale factor e^(lse_i^(s) - lse_i) once that split's FD L18 has run (NaN before), and lse_i.
// i = -1 when the current step is not a combine step.
struct CombineFactors {
  int64_t i = -1, row0 = 0, rows = 0, S = 0;
  int64_t current_split = -1;  // the split the current FD L18 adds; -1 at FD L17
  Mat lse_split;               // rows x S: lse_i^(s)
  Mat factor;                  // rows x S: e^(lse_i^(s) - lse_i), NaN until FD L18 of s
  Vec lse;                     // lse_i
};
CombineFactors combine_factors(const Trace& tr, const Cursor& at);

// The number of splits S when the cursor's current step has the combine role (the softmax panel
// then shows one table row per split), else 0. Cheap: reads one step.
int64_t combine_splits_at(const Trace& tr, const Cursor& at);

}  // namespace flashstep::gui
