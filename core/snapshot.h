// Snapshots as files: the state of a tiled forward pass after every j, and of the
// backward's dQ, written by `flashstep run --snapshots DIR` (the CPU engine) and
// `flashstep gpu --snapshots DIR` (the GPU), read by `flashstep compare` and the app. The
// format is a contract (docs/trace-formats.md, "SnapshotEntry folders"):
//
//   DIR/manifest.json   format, version, source (cpu | gpu), device, schedule, the problem
//                       (sizes, tiling, dtype, seed, mask, dropout, scale, inputs' hash, ...),
//                       the snapshots (phase, j, the file of each tensor) and the final state
//   DIR/*.npy           float32, C order, readable by numpy.load; one per tensor per snapshot
//
// What a snapshot of step j holds:
//   fa1 forward   O (Nq x d), l, m (Nq) in HBM after outer step j (after the last Alg1 L13 of j)
//   fa2 forward   O_i^(j), l_i^(j), m_i^(j) on chip after inner step j (FA2fwd L9, L10) of every
//                 Q block i, gathered over i into (Nq x d) and (Nq): O is not yet divided by l
//   backward      dQ (Nq x d) in HBM after all Q blocks of K/V block j (fa1 and fa2, with the
//                 backward)
//   standard      no j loop: no per-j snapshots, the final state only
//   decode        no j loop that keeps a state: per split s (S >= 2) the partial O^(s) (Nq x d)
//                 and lse^(s) (Nq) in HBM after phase 1 (FD L13, L14), float32; a row the split
//                 keeps no key of has O^(s) = 0, lse^(s) = -inf. S = 1 is fa2: no partials.
//   final         O (Nq x d) and lse (Nq); with the backward also dQ (Nq x d)
// A j whose blocks the mask skips leaves the state as it was (for fa2 at j = 0: O = 0, l = 0,
// m = -inf). Vectors (l, m, lse) are 1-D (Nq) in the files and (Nq x 1) in memory.
//
// The writer is all or nothing (OutputFolder) and refuses a folder over kMaxSnapshotBytes
// before anything is written; the reader checks everything (manifest fields and their types,
// sizes against the tiling, file names, every file's presence, dtype and shape) and throws
// InputError with one line naming the folder, file or field.
#pragma once
#include "core/problem.h"
#include "core/trace.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flashstep {

class OutputFolder;  // core/output_files.h

constexpr const char* kSnapshotFormat = "flashstep-snapshots";  // manifest.json's "format"
// Version 2 added problem.splits and the partials phase; version 1 folders stay readable
// (splits 1, or 0 = "not recorded" for decode, and no partials).
constexpr int kSnapshotVersion = 2;
constexpr const char* kSnapshotManifest = "manifest.json";
// Bytes of all the .npy files of one folder (docs/limits.md): Tc snapshots of an Nq x d O
// grow as Nq Nk d / Bc, so a long sequence with small blocks would fill a disk.
constexpr int64_t kMaxSnapshotBytes = int64_t(1) << 30;  // 1 GiB

// What identifies the problem a folder belongs to: two folders compare only if these agree.
struct SnapshotProblem {
  int64_t nq = 0, nk = 0, d = 0, M = 0;
  int64_t Br = 0, Bc = 0, Tr = 0, Tc = 0;
  Schedule schedule = Schedule::fa1;
  Dtype dtype = Dtype::fp32, p_dtype = Dtype::fp32;
  uint64_t seed = 0;
  std::string pattern;  // the generated inputs' pattern, or "npy"
  double scale = 0;     // tau, as the float32 the engines use
  double dropout = 0;
  Mask mask;            // causal, window_left, window_right, kv_len (offset = Nk - Nq)
  int64_t splits = 1;   // decode's S; 1 for the others; 0: a version 1 decode folder (S not recorded)
  bool backward = false;
  // FNV-1a (64 bit) of the float32 bytes of Q, K, V (and dO with the backward), 16 hex digits:
  // the inputs themselves, whatever produced them.
  std::string inputs_hash;
};
SnapshotProblem snapshot_problem(const Problem& p, const Tiling& t, const Mat* dO = nullptr);
// The first field where a and b differ, as "nk (130 here, 77 there)" with the given names for
// the two sides; empty when they agree.
std::string first_difference(const SnapshotProblem& a, const SnapshotProblem& b, const char* a_name = "here",
                             const char* b_name = "there");

struct SnapshotTensor {
  std::string name;  // O, l, m, lse, dQ
  std::string file;  // file name inside the folder (set by the writer and the reader)
  Mat data;          // (rows x cols); vectors are (Nq x 1)
};

// What a snapshot is of. Strings only at the file format's boundary: the manifest's "phase"
// and the file names spell them snapshot_phase_name's way.
enum class SnapshotPhase { forward, backward, partials, final };
const char* snapshot_phase_name(SnapshotPhase p);  // "forward", "backward", "partials", "final"

struct SnapshotEntry {
  SnapshotPhase phase = SnapshotPhase::final;
  int64_t j = -1;     // forward, backward: the K/V block j; -1 for the others
  std::vector<SnapshotTensor> tensors;
  int64_t split = -1;  // partials: the split s (0-based); -1 for the others
  const Mat* find(const std::string& name) const;  // null when the snapshot has no such tensor
};

struct SnapshotSet {
  std::string source = "cpu";  // "cpu" or "gpu"
  std::string device;          // "CPU engine" or the GPU's name
  SnapshotProblem problem;
  // forward j = 0..Tc-1, then backward j = 0..Tc-1, then partials s = 0..S-1 (each if any)
  std::vector<SnapshotEntry> snapshots;
  SnapshotEntry final_state;             // phase "final": O, lse (and dQ)
  // With the backward: the least denominator of dQ's error (core/tolerance.h's
  // grad_scale_floor from the writer's inputs and dO); 0 without. Written to the manifest for
  // the record, but read_snapshots leaves it 0: a tolerance never comes from a file.
  double dq_scale_floor = 0;
  // Snapshots of one phase, in order of j (partials: of s).
  std::vector<const SnapshotEntry*> phase(SnapshotPhase ph) const;
};

// The tensors a snapshot of a phase holds for a problem: name, rows, cols, whether 1-D.
struct TensorSpec {
  std::string name;
  int64_t rows = 0, cols = 0;
  bool vector = false;
};
std::vector<TensorSpec> snapshot_tensors(const SnapshotProblem& p, SnapshotPhase phase);
// Whether a problem has per-j snapshots of a phase (forward: fa1, fa2; backward: fa1, fa2 with
// the backward).
bool has_per_j(const SnapshotProblem& p, SnapshotPhase phase);
// How many snapshots of a phase a problem's folder holds: Tc per j phase it has, S partials
// (decode with S >= 2), 0 otherwise (final: not counted, it is apart).
int64_t snapshot_count(const SnapshotProblem& p, SnapshotPhase phase);
// The phases of the list SnapshotSet::snapshots, in its order.
constexpr SnapshotPhase kListedPhases[3] = {SnapshotPhase::forward, SnapshotPhase::backward, SnapshotPhase::partials};

// Bytes the .npy files of a complete folder for p take (headers included).
int64_t snapshot_bytes(const SnapshotProblem& p);
// InputError when snapshot_bytes(p) is over kMaxSnapshotBytes: call before running.
void check_snapshot_size(const SnapshotProblem& p);

// SnapshotSet::dq_scale_floor for a problem and its dO (core/tolerance.h's grad_scale_floor).
double snapshot_dq_floor(const Problem& p, const Mat& dO);

// Decode's partials snapshots (s = 0..S-1) from one head's float32 buffers O^(s) (S, Nq, d) and
// lse^(s) (S, Nq), as the GPU's split kernel writes them; none when p has no partials.
std::vector<SnapshotEntry> partial_snapshots(const SnapshotProblem& p, const std::vector<float>& O_part,
                                             const std::vector<float>& lse_part);

// Whether cpu_snapshots needs the run recorded (RunOptions::record): the per-j states and
// decode's partials come from the steps.
bool snapshots_need_record(const Problem& p);

// The CPU engine's snapshots from a recorded trace (RunOptions::record; with the backward,
// RunOptions::dO). Throws InputError if the trace was not recorded.
SnapshotSet cpu_snapshots(const Trace& tr, const Mat* dO = nullptr);

// Writes DIR/manifest.json and the .npy files, all or nothing (see above). Checks that every
// tensor has its spec's shape (a logic_error otherwise: a bug, not bad input).
void write_snapshots(const std::string& dir, const SnapshotSet& s);
// The same in two steps, for a folder written together with other outputs (run's --out-o,
// --trace, ...: OutputFiles::add_folder): the writer for DIR, which may replace only a
// snapshot folder, and the manifest and .npy files of s planned into it (size and shapes
// checked as above). Nothing is written until the writer is committed.
std::unique_ptr<OutputFolder> snapshot_folder(const std::string& dir);
void stage_snapshots(OutputFolder& out, const SnapshotSet& s);
// Checks the target folder only (OutputFolder::check), so that a bad DIR fails before a run.
void check_snapshot_target(const std::string& dir);
// Reads and validates a folder; InputError with one line on any problem.
SnapshotSet read_snapshots(const std::string& dir);

// The tolerance `flashstep compare` and the app's compare view apply to one tensor of a
// snapshot of `phase`: core/tolerance.h's rules.
double snapshot_tolerance(const SnapshotProblem& p, SnapshotPhase phase, const std::string& tensor);

}  // namespace flashstep
