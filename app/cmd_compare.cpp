// flashstep compare: a snapshot folder (core/snapshot.h) against a second one, or against the
// CPU engine run on the given run flags; every tensor after every j and at the end, judged by
// verify's tolerance rule (core/tolerance.h). Exit 0: all within tolerance; 1: something is
// over (the first j over it is named); 2: bad input (one line).
#include "app/cli_backward.h"
#include "app/commands.h"
#include "core/backward.h"
#include "core/reference.h"
#include "core/snapshot.h"
#include "core/snapshot_spec.h"
#include "core/tolerance.h"
#include "core/work.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace flashstep {

namespace {

// The CPU engine on the run flags, after checking they describe the problem of `a`.
SnapshotSet cpu_side(const RunFlags& rf, const BackwardFlags& bf, const SnapshotSet& a, const std::string& a_name) {
  const ProblemSpec spec = rf.to_spec();
  const Problem p = make_problem(spec);
  const Tiling t = make_tiling(p);
  Mat dO;
  if (bf.backward) dO = backward_grad_output(bf, p, rf.pattern);
  const std::string diff =
      first_difference(a.problem, snapshot_problem(p, t, bf.backward ? &dO : nullptr), "in the folder", "from the run flags");
  if (!diff.empty()) throw InputError(a_name + " holds snapshots of another problem than the run flags give: " + diff);
  WorkEstimate w = estimate_work(p.nq, p.nk, p.d, t, p.schedule, p.bytes_per_elem);
  if (bf.backward) add_backward_work(w);  // as `run --backward` counts it
  check_work(w, WorkLimits{kDefaultMaxGflop});
  RunOptions opt;
  opt.record = true;  // the per-j states come from the trace
  opt.dO = bf.backward ? &dO : nullptr;
  return cpu_snapshots(run_problem(p, t, opt), opt.dO);
}

// The least denominator of dQ's error (core/tolerance.h's grad_scale_floor) for a folder's
// problem, from the problem alone: a tolerance never comes from a file. With generated inputs,
// Q, K, V and dO are made again from the seed and must match the folder's hash; inputs from
// files cannot be made again, and then the floor is 0 (the strictest rule: relative to the
// final dQ's size only).
double regenerated_dq_floor(const SnapshotProblem& sp) {
  if (!sp.backward || sp.pattern == "npy") return 0;
  const Problem p = make_problem(snapshot_spec(sp));
  const Mat dO = make_grad_output(p, sp.pattern);
  if (snapshot_problem(p, make_tiling(p), &dO).inputs_hash != sp.inputs_hash) return 0;
  return snapshot_dq_floor(p, dO);
}

struct Over {
  std::string where, tensor;
  double rel = 0, tol = 0;
  std::string nan;  // "NaN at row r, column c" where a side held one (rel is then inf)
};

// Where entry k (row-major) of a tensor of `cols` columns is, in words.
std::string nan_place(const ErrorStats& e, int64_t cols) {
  if (e.nan_at < 0) return "";
  return cols > 1 ? "NaN at row " + std::to_string(e.nan_at / cols) + ", column " + std::to_string(e.nan_at % cols)
                  : "NaN at entry " + std::to_string(e.nan_at);
}

class Comparer {
 public:
  Comparer(const SnapshotSet& a, const SnapshotSet& b) : a_(a), b_(b) {
    if (const Mat* dq = b.final_state.find("dQ"))  // verify's rule: relative to the final dQ's size
      dq_scale_ = std::max(double(dq->cwiseAbs().maxCoeff()), b.dq_scale_floor);
  }
  // One line per snapshot of a phase (all when Tc <= 64, else the first and last four and every
  // one over tolerance). Returns whether all were within tolerance.
  bool phase(SnapshotPhase name, const char* title) {
    // The problems agree, so the reader gave both sides the same snapshots of each phase.
    const std::vector<const SnapshotEntry*> xs = a_.phase(name), ys = b_.phase(name);
    if (xs.empty()) return true;
    std::printf("%s\n%6s |", title, name == SnapshotPhase::partials ? "s" : "j");
    for (const SnapshotTensor& t : xs[0]->tensors) std::printf(" %6s abs %10s |", t.name.c_str(), "rel");
    std::printf("\n");
    bool all = true;
    const size_t n = xs.size();
    for (size_t k = 0; k < n; ++k) {
      const bool ok = row(*xs[k], *ys[k], k < 4 || k + 4 >= n || n <= 64);
      all = all && ok;
      if (k == 4 && n > 64)
        std::printf("%6s | (rows for j = 4 .. %zu not printed; each within tolerance unless listed)\n", "...", n - 5);
    }
    std::printf("\n");
    return all;
  }
  bool final_state() { return row(a_.final_state, b_.final_state, true); }
  const std::vector<Over>& overs() const { return overs_; }

 private:
  bool row(const SnapshotEntry& x, const SnapshotEntry& y, bool print) {
    bool ok = true;
    const bool final = x.phase == SnapshotPhase::final;
    std::string line = final ? "final " : "";
    char buf[96];
    if (!final) {
      std::snprintf(buf, sizeof buf, "%6lld |", (long long)(x.phase == SnapshotPhase::partials ? x.split : x.j));
      line = buf;
    }
    for (const SnapshotTensor& t : x.tensors) {
      const Mat& ref = *y.find(t.name);  // the reader checked both hold the phase's tensors
      ErrorStats e = compare(t.data, ref.cast<double>().eval());
      if (t.name == "dQ" && dq_scale_ > 0) e.max_rel = e.max_abs / dq_scale_;
      const double tol = snapshot_tolerance(b_.problem, x.phase, t.name);
      if (!(e.max_rel <= tol)) {
        ok = false;
        overs_.push_back({final ? "the final state"
                                : snapshot_phase_name(x.phase) + (x.phase == SnapshotPhase::partials
                                                                      ? " s = " + std::to_string(x.split)
                                                                      : " j = " + std::to_string(x.j)),
                          t.name,
                          e.max_rel, tol, nan_place(e, t.data.cols())});
      }
      // A NaN on either side has no error bound: the cells say NaN, not inf.
      if (final && e.nan_at >= 0)
        std::snprintf(buf, sizeof buf, " %s abs NaN rel NaN;", t.name.c_str());
      else if (final)
        std::snprintf(buf, sizeof buf, " %s abs %.3g rel %.3g;", t.name.c_str(), e.max_abs, e.max_rel);
      else if (e.nan_at >= 0)
        std::snprintf(buf, sizeof buf, " %10s %10s |", "NaN", "NaN");
      else
        std::snprintf(buf, sizeof buf, " %10.3g %10.3g |", e.max_abs, e.max_rel);
      line += buf;
    }
    if (print || !ok) std::printf("%s %s\n", line.c_str(), ok ? "ok" : "OVER");
    return ok;
  }
  const SnapshotSet &a_, &b_;
  double dq_scale_ = 0;
  std::vector<Over> overs_;
};

std::string describe(const SnapshotSet& s) { return s.source + ", " + s.device; }

int run_compare(const std::string& dir, const std::string& against, const RunFlags& rf, const BackwardFlags& bf) {
  const SnapshotSet a = read_snapshots(dir);
  SnapshotSet b;
  std::string b_name;
  if (!against.empty()) {
    b = read_snapshots(against);
    const std::string diff = first_difference(a.problem, b.problem, ("in " + dir).c_str(), ("in " + against).c_str());
    if (!diff.empty()) throw InputError(dir + " and " + against + " hold snapshots of different problems: " + diff);
    b_name = against + " (" + describe(b) + ")";
    b.dq_scale_floor = regenerated_dq_floor(b.problem);
  } else {
    b = cpu_side(rf, bf, a, dir);
    b_name = "the CPU engine on the run flags";
  }
  const SnapshotProblem& p = a.problem;
  std::printf("compare    %s (%s)\n           against %s\n", dir.c_str(), describe(a).c_str(), b_name.c_str());
  std::printf("problem    %s, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, dtype %s, inputs %s (seed %llu, hash %s)\n",
              schedule_name(p.schedule), (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale,
              dtype_name(p.dtype), p.pattern.c_str(), (unsigned long long)p.seed, p.inputs_hash.c_str());
  std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld; mask %s; dropout %g%s\n",
              (long long)p.M, (long long)p.Br, (long long)p.Bc, (long long)p.Tr, (long long)p.Tc,
              p.mask.describe().c_str(), p.dropout, p.backward ? "; with the backward" : "");
  std::printf("tolerance  max rel = max|x - ref| / max|ref| (ref: the second); O %.3g (per j: %.3g), l, m, lse and "
              "decode's float32 partials %.0e; dQ %.0e of max(|final dQ|, floor %.3g)\n\n",
              snapshot_tolerance(p, SnapshotPhase::final, "O"), snapshot_tolerance(p, SnapshotPhase::forward, "O"), kTiledTol, kGradTiledTol,
              b.dq_scale_floor);
  Comparer c(a, b);
  c.phase(SnapshotPhase::forward, schedule_info(p.schedule).forward_snapshot_title);
  c.phase(SnapshotPhase::backward, "backward: dQ in HBM after K/V block j");
  c.phase(SnapshotPhase::partials, "partials: O^(s), lse^(s) in HBM after split s (float32)");
  c.final_state();
  const std::vector<Over>& over = c.overs();
  if (over.empty()) {
    std::printf("PASS: every tensor within tolerance\n");
    return 0;
  }
  if (!over[0].nan.empty())
    std::printf("FAIL: %zu over tolerance; the first at %s: %s holds a %s\n", over.size(), over[0].where.c_str(),
                over[0].tensor.c_str(), over[0].nan.c_str());
  else
    std::printf("FAIL: %zu over tolerance; the first at %s: %s rel %.3g > %.3g\n", over.size(), over[0].where.c_str(),
                over[0].tensor.c_str(), over[0].rel, over[0].tol);
  return 1;
}

}  // namespace

void add_compare_command(CLI::App& app, const SetAction& set_action) {
  static RunFlags rf;
  static BackwardFlags bf;
  static std::string dir, against;
  auto* c = app.add_subcommand("compare", "compare a snapshot folder with another (--against) or with the CPU "
                                          "engine on the run flags, after every j; exit 0 within tolerance, 1 over");
  c->add_option("--snapshots", dir, "the snapshot folder (from run/gpu --snapshots)")->required();
  c->add_option("--against", against, "a second snapshot folder, the reference (instead of run flags)");
  add_run_flags(c, rf);
  c->add_flag("--backward", bf.backward, "the run flags' problem has the backward pass (as run --backward)");
  c->add_option("--do", bf.do_path, "dO from a .npy file, as run --do");
  c->callback([&set_action, c] {
    set_action([c] {
      if (!against.empty())
        for (const CLI::Option* o : c->get_options())
          if (o->count() > 0 && o->get_name() != "--snapshots" && o->get_name() != "--against")
            throw InputError("give --against DIR2 or run flags, not both (got " + o->get_name() + ")");
      if (!bf.do_path.empty() && !bf.backward) throw InputError("--do needs --backward");
      return run_compare(dir, against, rf, bf);
    });
  });
}

}  // namespace flashstep
