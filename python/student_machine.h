// The puzzles' simulated machine (flashstep.puzzles, docs/python.md): the student's code moves
// data between a simulated HBM and SRAM, and core's memory model counts it. HBM is core's Hbm;
// every load goes through core's Sram::load_gathered and every store through Hbm::store, so
// the bytes are counted by the same code as the built-in schedules'. SRAM holds the tiles the
// student has loaded and not freed; the d-wide tiles (and the softmax puzzles' x, y) are
// charged to the SRAM budget, as core charges Q_i, K_j, V_j, O_i (core/memory.h); the row
// statistics (l, m, L, D, lse^(s)) are on-chip scratch, tracked but not charged.
#pragma once
#include "core/memory.h"
#include "core/row_trace.h"
#include "core/trace.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace flashstep {

// What one student step did: its label and loop indices, its bytes, and its HBM stores.
struct StudentStore {
  std::string tensor;  // the student's name ("O", "l", "y")
  int64_t r0 = 0, c0 = 0;
  int64_t i = -1, j = -1;  // the step's blocks when the store happened (named or loaded)
  Mat data;            // as stored (rounded to the storage type)
};
struct StudentLoad {
  std::string tensor;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};
struct StudentStep {
  std::string label;
  int64_t i = -1, j = -1;
  int64_t read = 0, write = 0;             // bytes moved by the step
  int64_t charged_bytes = 0, sram_bytes = 0;  // SRAM held at the step's end (charged, all)
  std::array<int64_t, kSlots> slot_elems{};   // at the step's end, by the paper's slot
  std::array<int64_t, kTensors> tensor_read{}, tensor_written{};  // cumulative, at the step's end
  std::vector<StudentLoad> loads;
  std::vector<StudentStore> stores;
  // On-chip values the student showed with m.note (the app draws them as the schedules'): the
  // step's tile (S or P; in a backward P, dP, dS or the accumulators dV, dK, named in
  // tile_name), the row statistics m_tilde, l_tilde, m_old, l_old, m_new, l_new, alpha, beta,
  // and the backward's D (D_i).
  Mat tile;
  std::string tile_name;
  std::map<std::string, Vec> values;
};

class StudentMachine {
 public:
  // capacity_elems: the SRAM budget M (float32 words) the charged tiles must fit in.
  StudentMachine(Problem problem, Tiling tiling, int64_t capacity_elems);

  // Places a tensor in HBM before the student runs (not counted). 1-D data: one column.
  void put(const std::string& name, Mat value);
  const Mat& peek(const std::string& name) const;  // HBM as it stands (for the judge)
  bool has(const std::string& name) const;
  // While the student's function runs, HBM moves only through load and store: the judge seals
  // the machine (put and peek are then an InputError) and unseals it with the token seal gave.
  uint64_t seal();
  void unseal(uint64_t token);
  bool sealed() const { return seal_ != 0; }

  // HBM -> SRAM: rows [r0, r1), columns [c0, c1) of `name` (c1 < 0: all); counted. Returns
  // the tile's id; InputError when the charged tiles would exceed the budget.
  int64_t load(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Mat& out);
  // SRAM -> HBM at rows [r0, r0 + rows), columns [c0, c0 + cols); counted.
  void store(const std::string& name, int64_t r0, int64_t r1, int64_t c0, const Mat& tile);
  void free(int64_t tile_id);  // InputError for an id that is not held
  // Charges `elems` of M from the start, for on-chip state the algorithm keeps that the student
  // holds as plain arrays (FlashAttention-2's O_i, the backward's dK_j and dV_j): without it their
  // share of M would be free room for tiles the schedule does not hold. Named by `what` when
  // SRAM is full. Only before the student's function runs (InputError while sealed).
  void reserve(int64_t elems, const std::string& what);
  // Names the pseudocode line the following work belongs to, with its loop indices i (Q block)
  // and j (K/V block); InputError for one outside the tiling. Left out (nullopt), an index is
  // that of the block of its loop the step loads, else of the last one loaded or named before.
  void step(const std::string& label, std::optional<int64_t> i, std::optional<int64_t> j);
  // Records an on-chip value in the current step (not HBM traffic): see StudentStep.
  void note(const std::string& name, const Mat& value);

  const std::vector<StudentStep>& steps() const { return steps_; }
  const Traffic& traffic() const { return hbm_.traffic(); }
  int64_t read_bytes() const { return hbm_.traffic().total_read(); }
  int64_t write_bytes() const { return hbm_.traffic().total_written(); }
  int64_t peak_charged_bytes() const { return peak_charged_; }
  int64_t peak_sram_bytes() const { return peak_sram_; }
  int64_t capacity_elems() const { return capacity_; }
  const Problem& problem() const { return problem_; }
  const Tiling& tiling() const { return tiling_; }
  // Bytes of `name` read / written so far; the tensor names the machine knows.
  int64_t tensor_read(const std::string& name) const;
  int64_t tensor_written(const std::string& name) const;
  static std::vector<std::string> tensor_names();

  // The student's run as a core Trace (the app opens it: core/trace_file.h). Every step's label
  // must be a line of the schedule's own forward listing, or every one of its backward's
  // (InputError naming the first that is not), at blocks its line can be drawn at
  // (step_placement_error). InputError while sealed: the trace holds the inputs. A backward's
  // steps follow core's own recorded forward of the same problem, whose O and L must be the
  // ones the puzzle placed in HBM: the app's backward view steps through a forward before its
  // backward.
  Trace to_trace() const;

  // The softmax puzzles: HBM holds a row x (with y, m, l), and the steps are labelled freely.
  // set_row_block names the block size the puzzle gave (N for one block); to_row_trace is the
  // run as core/row_trace.h keeps it (InputError without x or a block size, or while sealed).
  void set_row_block(int64_t block);
  bool is_row() const { return has("x"); }
  RowTrace to_row_trace() const;

 private:
  struct Tile {
    std::string name;
    Tensor tensor;
    int64_t r0, r1, elems;
    bool charged;
  };
  Tensor tensor_of(const std::string& name) const;  // InputError for an unknown name
  void open_step_if_none();
  void update_sram();

  Problem problem_;
  Tiling tiling_;
  int64_t capacity_;
  Hbm hbm_;
  Sram sram_;  // core's loading path (its occupancy is not used: the student holds any number of tiles)
  std::map<std::string, bool> present_;
  std::map<int64_t, Tile> tiles_;
  int64_t next_id_ = 1;
  int64_t charged_elems_ = 0, scratch_elems_ = 0, peak_charged_ = 0, peak_sram_ = 0;
  int64_t reserved_ = 0;  // reserve(): charged from the start, in charged_elems_ too
  std::string reserved_what_;
  int64_t last_i_ = -1, last_j_ = -1;  // the blocks last loaded or named (-1: none yet)
  bool infer_i_ = true, infer_j_ = true;  // the current step's i, j follow its loads
  std::vector<StudentStep> steps_;
  std::vector<std::vector<HbmWrite>> writes_;  // per step, full rows, for to_trace
  std::vector<HbmWrite> before_;               // what put() placed beyond Q, K, V (the trace's hbm_before)
  int64_t read_before_ = 0, write_before_ = 0;
  int64_t row_block_ = 0;
  uint64_t seal_ = 0;  // the token while sealed, else 0
};

}  // namespace flashstep
