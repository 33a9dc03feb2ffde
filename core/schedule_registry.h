// The schedule registry: one ScheduleInfo per schedule, holding everything the rest of the
// program needs to know about it. The CLI, explain, the summary, the exporters, snapshots,
// compare, the work limits, the app's panels and the GPU commands ask here; none of them
// switches on a schedule. Each schedule lives in its own folder, core/schedules/NAME/: its loops,
// its description (schedule.cpp: this struct, with the line tables of its algorithms, core/lines.h,
// and its closed forms) and the header of what it offers the rest of core/;
// schedule_registry.cpp lists them.
// docs/internals.md has the checklist for adding one.
#pragma once
#include "core/closed_form.h"
#include "core/lines.h"
#include "core/memory.h"
#include "core/problem.h"

#include <string>
#include <vector>

namespace flashstep {

struct Trace;
struct SnapshotEntry;

// Sort key of a step in the L2 model's replay (l2_cache.h): accesses are replayed by
// (kernel, a, b, c), ties in program order.
struct L2OrderKey {
  int64_t kernel = 0, a = 0, b = 0, c = 0;
  bool operator<(const L2OrderKey& o) const {
    if (kernel != o.kernel) return kernel < o.kernel;
    if (a != o.a) return a < o.a;
    if (b != o.b) return b < o.b;
    return c < o.c;
  }
};
constexpr int64_t kL2Later = int64_t(1) << 40;  // after everything else
// Step (line, i, j) number k of head h; the grids are (Tr, heads), `slots` blocks in flight.
struct L2StepPlace {
  Line line;
  int64_t i, j, k, h, Tr, Tc, slots;
};

struct ScheduleInfo {
  Schedule id;
  const char* name;  // --schedule NAME, and the JSON/CSV/snapshot "schedule" field
  const char* paper_name;  // "Algorithm 1": the app's schedule menu and --schedule's help

  // [Names in the output]
  const char* title;               // run's summary: "Algorithm 1, FlashAttention"
  const char* column;              // explain's column header: "Algorithm 1"
  const char* device_title;        // gpu's first line and the app's sentences: "Algorithm 1"
  const char* backward_title;      // run's summary of the backward
  const char* backward_column;     // explain's backward table: "Algorithm 4 (fa1)"
  const char* backward_device_title;  // gpu --backward: "Algorithm 4 (fa1)"
  const char* backward_short;      // explain's backward comparison: "Algorithm 4"
  const char* tiles_note;          // the app's tiles view: the loop order in one sentence
  const char* backward_note;       // the app's backward view
  // The app's memory panel: what this schedule's loop order does to its state in HBM, a printf
  // format with two %s: the bytes of state_tensors over the forward, then those of the
  // contrast schedule's state_tensors (or, without one, the forward's whole traffic).
  const char* traffic_note;
  Schedule contrast;               // == id: none

  // [Algorithms] the line tables of the forward and the backward
  const AlgorithmInfo* forward_lines;
  const AlgorithmInfo* backward_lines;

  // [Shape] tiled: blocks Br x Bc charged to M, blocks the mask hides are skipped, one state
  // per j. Untiled (standard attention): whole row blocks, M not enforced, no j loop.
  bool tiled;
  bool baseline;  // the standard-attention baseline the others are compared with

  // [Runners] fill trace.O, lse and the totals; record every step when `record` is true. The
  // backward runs on the HBM its forward left (core/backward.h).
  void (*run_forward)(Trace& trace, bool record);
  void (*run_backward)(Trace& trace, bool record);
  // One sentence for step k of the forward / the backward (run --steps, JSON "text", the app).
  std::string (*explain_forward)(const Trace& trace, size_t k);
  std::string (*explain_backward)(const Trace& trace, size_t k);

  // [Closed forms] HBM traffic in elements, unmasked (core/closed_form.h)
  TrafficForm (*forward_traffic)(int64_t nq, int64_t nk, int64_t d, const Tiling& t);
  TrafficForm (*backward_traffic)(int64_t nq, int64_t nk, int64_t d, const Tiling& t);

  // [Estimates] steps of an unmasked run (a mask only removes steps), bytes a recorded trace
  // takes, N x N matrices the simulated HBM holds (S, P; dP, dS), and the blocks that cost the
  // simulator its per-block overhead (core/work.h) and tick the progress meter.
  int64_t (*forward_steps)(const Tiling& t);
  size_t (*forward_trace_bytes)(const Problem& p, const Tiling& t);
  size_t (*backward_steps)(const Tiling& t);
  size_t (*backward_trace_bytes)(const Problem& p, const Tiling& t);
  int nn_matrices_forward, nn_matrices_backward;
  double (*work_blocks)(const Tiling& t);
  int64_t (*progress_ticks)(const Tiling& t);

  // [Tolerance] ulps of a 16-bit storage type by which two tiled engines' O may differ: 2 where
  // O is stored at every j (a one-ulp disagreement carries into the next update), else 1.
  int o_storage_ulps;

  // [Snapshots] (core/snapshot.h) the state after every j of the forward, filled into the
  // snapshots (O, l, m; one per j, already sized); null: none per j. forward_snapshot_on_chip:
  // the state is the on-chip float32 one (tolerance kTiledTol), else O as stored in HBM.
  // backward_snapshots: dQ in HBM after every K/V block j.
  void (*forward_snapshots)(const Trace& trace, std::vector<SnapshotEntry>& snapshots);
  bool forward_snapshot_on_chip;
  const char* forward_snapshot_title;  // compare's heading of the forward snapshots
  bool backward_snapshots;

  // [L2 replay] where a step's accesses fall in the GPU's order (core/l2_cache.cpp)
  L2OrderKey (*l2_order)(const L2StepPlace& s);

  // [HBM] the tensors the forward keeps in HBM (in the app's order), the backward's, the row
  // statistics among them (l, m; L; with the backward's D), the tensors whose traffic the
  // memory panel compares (traffic_note), and what never reaches HBM ("l, m": "on chip").
  std::vector<Tensor> hbm_tensors, backward_hbm_tensors, stat_tensors, backward_stat_tensors;
  std::vector<Tensor> state_tensors;
  std::vector<const char*> on_chip_only;

  // [FP8] --dtype fp8 (docs/fp8.md): the scale reads (4 bytes each) of an unmasked forward, one
  // with every load of a Q, K or V tile; null: the schedule has no FP8 version.
  int64_t (*fp8_scale_reads)(const Tiling& t);
};

// Whether a schedule has a backward pass (decode has none: its backward_* fields are null).
inline bool has_backward(const ScheduleInfo& s) { return s.run_backward != nullptr; }

// A path a schedule does not have, for a run in storage type dt with or without the backward: the
// one check that run_problem refuses by (its error lines) and the app's memory panel notes
// (a schedule it cannot show), so the two agree. Tried in this order; none when the run exists.
enum class MissingPath {
  none,
  backward,      // the schedule has no backward pass (decode is for inference)
  fp8_version,   // the schedule has no FP8 forward
  fp8_backward,  // FP8 has no backward pass on any schedule
};
MissingPath missing_path(const ScheduleInfo& s, Dtype dt, bool backward);

// Every schedule, in the order the CLI's help, explain and the app show them.
const std::vector<const ScheduleInfo*>& schedules();
const ScheduleInfo& schedule_info(Schedule s);
const ScheduleInfo& baseline_schedule();  // standard attention
int schedule_index(Schedule s);           // position in schedules()
// "fa1, fa2 or standard": the names for help texts and error messages.
std::string schedule_names(const char* last_sep = " or ");
std::string fp8_schedule_names();  // "fa1, fa2 or decode": those with an FP8 forward

// The schedule a default problem, the app and a preset start with.
constexpr Schedule kDefaultSchedule = Schedule::fa1;
// The schedule the tensor-core kernels implement (gpu/tensor_core.h, gpu/backward_tc.h): the
// GPU commands' --tensor-cores and the app's notes about them ask for it by this name.
constexpr Schedule kTensorCoreSchedule = Schedule::fa2;

}  // namespace flashstep
