#include "app/gui/snapshot_compare.h"

#include "app/gui/app_state.h"
#include "core/reference.h"
#include "core/snapshot_spec.h"
#include "core/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace flashstep::gui {

const char* const kSnapTensorNames[kSnapTensors] = {"O", "l", "m"};

namespace {

// max|ref| over its finite entries, the denominator of the normwise rule (1 when there are
// none, as core's compare() then reports max_abs).
double ref_scale(const Mat& ref) {
  double m = 0;
  for (int64_t k = 0; k < ref.size(); ++k)
    if (std::isfinite(ref.data()[k])) m = std::max(m, double(std::abs(ref.data()[k])));
  return m > 0 ? m : 1.0;
}

// |x - ref| / (tol * scale) per element. An infinite ref matched exactly (m = -inf of a row no
// key reached yet) differs by 0; a NaN difference is infinitely far.
Mat unit_diff(const Mat& x, const Mat& ref, double tol, double scale) {
  Mat d(x.rows(), x.cols());
  for (int64_t k = 0; k < x.size(); ++k) {
    const double xv = x.data()[k], rv = ref.data()[k];
    const double a = std::isinf(rv) && xv == rv ? 0.0 : std::abs(xv - rv);
    d.data()[k] = std::isnan(a) ? std::numeric_limits<float>::infinity() : float(a / (tol * scale));
  }
  return d;
}

}  // namespace

void SnapshotCompare::load(const RunView& run) {
  error.clear();
  message.clear();
  try {
    SnapshotSet s = read_snapshots(dir);  // throws before anything loaded is replaced
    set(std::move(s), run);
    if (loaded) message = std::string("loaded ") + dir;
  } catch (const InputError& e) {
    error = e.what();
  }
}

void SnapshotCompare::set(SnapshotSet s, const RunView& run) {
  other = std::move(s);
  compare_with(run);
}

void SnapshotCompare::run_changed(const RunView& run) {
  if (!other.snapshots.empty() || !other.final_state.tensors.empty()) compare_with(run);
}

void SnapshotCompare::compare_with(const RunView& run) {
  const Trace& tr = run.trace;
  const Mat* dO = tr.has_backward ? &tr.dO : nullptr;
  ++version;
  loaded = false;
  ratio.clear();
  worst.clear();
  first_over_j = first_over_i = -1;
  tile = SnapshotTile{};
  mismatch = first_difference(other.problem, snapshot_problem(tr.problem, tr.tiling, dO), "in the folder", "in the app");
  can_load_problem = !mismatch.empty() && other.problem.pattern != "npy";
  if (!mismatch.empty()) return;
  cpu = cpu_snapshots(tr, dO);
  const SnapshotProblem& p = cpu.problem;
  for (int t = 0; t < kSnapTensors; ++t) tol[size_t(t)] = snapshot_tolerance(p, SnapshotPhase::forward, kSnapTensorNames[t]);
  const std::vector<const SnapshotEntry*> xs = other.phase(SnapshotPhase::forward), ys = cpu.phase(SnapshotPhase::forward);
  if (xs.size() == ys.size()) {  // the reader checked each holds its phase's tensors
    for (size_t k = 0; k < xs.size(); ++k) {
      std::array<double, kSnapTensors> r{};
      for (int t = 0; t < kSnapTensors; ++t) {
        const ErrorStats e = compare(*xs[k]->find(kSnapTensorNames[t]), ys[k]->find(kSnapTensorNames[t])->cast<double>().eval());
        r[size_t(t)] = e.max_rel / tol[size_t(t)];
      }
      ratio.push_back(r);
      worst.push_back(*std::max_element(r.begin(), r.end()));
      if (first_over_j < 0 && !(worst.back() <= 1)) first_over_j = int64_t(k);
    }
  }
  auto final_ratio = [&](const char* name) {
    const ErrorStats e = compare(*other.final_state.find(name), cpu.final_state.find(name)->cast<double>().eval());
    return e.max_rel / snapshot_tolerance(p, SnapshotPhase::final, name);
  };
  partial_ratio.clear();
  partial_tol = snapshot_tolerance(p, SnapshotPhase::partials, "O");
  const std::vector<const SnapshotEntry*> ps = other.phase(SnapshotPhase::partials), pc = cpu.phase(SnapshotPhase::partials);
  for (size_t k = 0; k < ps.size() && ps.size() == pc.size(); ++k) {
    std::array<double, 2> r{};
    for (int t = 0; t < 2; ++t) {
      const char* name = t == 0 ? "O" : "lse";
      r[size_t(t)] = compare(*ps[k]->find(name), pc[k]->find(name)->cast<double>().eval()).max_rel / partial_tol;
    }
    partial_ratio.push_back(r);
  }
  final_o_ratio = final_ratio("O");
  final_lse_ratio = final_ratio("lse");
  loaded = true;
  if (first_over_j >= 0) {  // its first Q block over tolerance
    for (int64_t i = 0; i < p.Tr && first_over_i < 0; ++i) {
      select(i, first_over_j);
      for (double m : tile.max_diff)
        if (!(m <= 1)) first_over_i = i;
    }
    tile = SnapshotTile{};
  }
}

ProblemSpec SnapshotCompare::manifest_spec(bool* backward) const {
  const SnapshotProblem& p = other.problem;
  const ProblemSpec s = snapshot_spec(p);
  if (backward) *backward = p.backward;
  return s;
}

void SnapshotCompare::select(int64_t i, int64_t j) {
  if (!loaded || j < 0 || j >= int64_t(ratio.size()) || i < 0 || i >= cpu.problem.Tr) i = j = -1;
  if (i == tile.i && j == tile.j) return;
  tile = SnapshotTile{};
  tile.i = i;
  tile.j = j;
  if (i < 0) return;
  const SnapshotEntry& x = *other.phase(SnapshotPhase::forward)[size_t(j)];
  const SnapshotEntry& y = *cpu.phase(SnapshotPhase::forward)[size_t(j)];
  tile.row0 = i * cpu.problem.Br;
  tile.rows = std::min(cpu.problem.Br, cpu.problem.nq - tile.row0);
  for (int t = 0; t < kSnapTensors; ++t) {
    const Mat &a = *x.find(kSnapTensorNames[t]), &b = *y.find(kSnapTensorNames[t]);
    const size_t u = size_t(t);
    tile.other[u] = a.middleRows(tile.row0, tile.rows);
    tile.cpu[u] = b.middleRows(tile.row0, tile.rows);
    tile.diff[u] = unit_diff(tile.other[u], tile.cpu[u], tol[u], ref_scale(b));
    tile.max_diff[u] = tile.diff[u].size() ? double(tile.diff[u].maxCoeff()) : 0.0;
  }
}

size_t SnapshotCompare::step_after(const RunView& run, int64_t i, int64_t j) {
  // The last forward step of (i, j) is fa1's Alg1 L13, fa2's FA2fwd L10, or the skip of a tile
  // the mask hides (the state is then that of j - 1, unchanged).
  const std::vector<Step>& steps = run.trace.steps;
  size_t at = 0;
  for (size_t k = 0; k < steps.size(); ++k)
    if (!is_backward_line(steps[k].line) && steps[k].i == i && steps[k].j == j) at = k + 1;
  return at;
}

}  // namespace flashstep::gui
