// The compare view's snapshot side: a snapshot folder (core/snapshot.h, from
// `flashstep gpu --snapshots`, `run --snapshots` or the "run on this GPU" button) against the
// same states taken from the app's recorded trace (cpu_snapshots), judged by the tolerance rule
// of `flashstep compare` (core/tolerance.h). State only: no OpenGL or ImGui (the window draws
// it in snapshot_view.cpp; the tests read it in-process).
//
// Differences are drawn in units of the tolerance: an element's |x - ref| / (tol * max|ref|),
// with ref the CPU trace's tensor at that j. That is the normwise rule (max_rel = max|x - ref| /
// max|ref| <= tol) per element, so the largest value of a tensor is its max_rel / tol and
// anything above 1 is over tolerance.
#pragma once
#include "app/gui/text_field.h"
#include "core/snapshot.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::gui {

struct RunView;

// The per-j tensors compared, in their order in a forward snapshot (O, l, m).
constexpr int kSnapTensors = 3;
extern const char* const kSnapTensorNames[kSnapTensors];

// One Q block i at one j: the folder's tiles, the trace's, and their difference in units of the
// tolerance (rows of block i; O is rows x d, l and m rows x 1).
struct SnapshotTile {
  int64_t i = -1, j = -1;  // -1: the current step has no forward (i, j)
  int64_t row0 = 0, rows = 0;
  std::array<Mat, kSnapTensors> other, cpu, diff;
  std::array<double, kSnapTensors> max_diff{};  // over the tile, in units of the tolerance
};

struct SnapshotCompare {
  char dir[kPathField] = "";
  bool loaded = false;      // a folder of the app's problem is loaded and compared
  std::string error;        // why the last load failed (one line)
  std::string mismatch;     // the folder is of another problem: the first field that differs
  std::string message;      // what happened last (loaded, made on the GPU, ...)
  bool can_load_problem = false;  // the folder's problem can be made from its manifest
  SnapshotSet other;        // the folder (or the GPU run); kept while it is of another problem
  SnapshotSet cpu;          // the trace's states at the same points
  std::array<double, kSnapTensors> tol{};  // per-j tolerances of O, l, m
  // Per forward j: max_rel / tol of O, l, m, and the largest of the three.
  std::vector<std::array<double, kSnapTensors>> ratio;
  std::vector<double> worst;
  int64_t first_over_j = -1, first_over_i = -1;  // the first j over tolerance and its first Q block
  double final_o_ratio = 0, final_lse_ratio = 0;  // the final state, max_rel / tol
  // decode's partials per split s: max_rel / tol of O^(s) and lse^(s) (decode_view.cpp draws them)
  std::vector<std::array<double, 2>> partial_ratio;
  double partial_tol = 0;
  SnapshotTile tile;        // at the cursor (select())
  uint64_t version = 0;     // bumps on every load

  // Reads the folder `dir` and compares it with the run. On failure keeps what was loaded
  // before and sets `error`; a folder of another problem sets `mismatch` (nothing compared).
  void load(const RunView& run);
  // Compares a snapshot set made elsewhere (the GPU button) with the run.
  void set(SnapshotSet s, const RunView& run);
  // The run changed (Apply, a preset): compare the loaded folder with the new one.
  void run_changed(const RunView& run);
  // The folder's problem as a spec the app can run (can_load_problem): sizes, tiling, schedule,
  // seed and pattern, mask, dropout, dtypes, scale; and whether it has the backward.
  ProblemSpec manifest_spec(bool* backward) const;
  // Moves the tile to Q block i of step j (i, j < 0 or out of range: no tile). Cheap when
  // unchanged, so the view calls it every frame.
  void select(int64_t i, int64_t j);
  // The trace position (a Cursor index) at which the state of (i, j) is complete: after fa1's
  // Alg1 L13 or fa2's FA2fwd L10 of (i, j), or after the j if the mask skipped that tile.
  static size_t step_after(const RunView& run, int64_t i, int64_t j);

 private:
  void compare_with(const RunView& run);
};

}  // namespace flashstep::gui
