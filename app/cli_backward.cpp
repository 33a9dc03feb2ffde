#include "app/cli_backward.h"

#include "core/schedule_registry.h"

#include "core/backward.h"
#include "core/closed_form.h"
#include "core/npy.h"
#include "core/reference.h"
#include "core/run.h"

#include <cstdio>

namespace flashstep {

void add_backward_flags(CLI::App* run, BackwardFlags& f) {
  auto* b = run->add_flag("--backward", f.backward,
                          "run the schedule's backward pass after the forward (Algorithm 4, "
                          "FlashAttention-2's Algorithm 2 or Algorithm 3)");
  run->add_option("--do", f.do_path, "dO, the loss gradient w.r.t. O, from a .npy file (Nq x d; default: from --seed)")
      ->needs(b);
  run->add_option("--out-dq", f.out_dq, "write dQ (Nq x d, float32) to a .npy file")->needs(b);
  run->add_option("--out-dk", f.out_dk, "write dK (Nk x d, float32) to a .npy file")->needs(b);
  run->add_option("--out-dv", f.out_dv, "write dV (Nk x d, float32) to a .npy file")->needs(b);
}

Mat backward_grad_output(const BackwardFlags& f, const Problem& p, const std::string& pattern) {
  Mat dO = f.do_path.empty() ? make_grad_output(p, pattern) : read_npy_matrix(f.do_path);
  check_grad_output(p, dO);
  return dO;
}

void add_backward_outputs(const BackwardFlags& f, const Trace& t, OutputFiles& out) {
  if (!f.backward) return;
  check_gradients_finite(t);
  const std::pair<const std::string*, const Mat*> outs[] = {
      {&f.out_dq, &t.dQ}, {&f.out_dk, &t.dK}, {&f.out_dv, &t.dV}};
  for (const auto& [path, g] : outs)
    if (!path->empty()) out.bytes(*path) = npy_bytes(g->data(), {int64_t(g->rows()), int64_t(g->cols())});
}

void print_backward_summary(const Trace& t, const Accuracy& a) {
  const Problem& p = t.problem;
  const Tiling& ti = t.tiling;
  const Totals& B = t.backward_totals;
  const int bpe = p.bytes_per_elem;
  const ScheduleInfo& info = schedule_info(p.schedule);
  std::printf("backward   %s: %lld steps (from step %zu)\n", info.backward_title,
              (long long)B.steps, t.backward_first_step);
  const TrafficForm cf = schedule_backward_traffic(p.schedule, p.nq, p.nk, p.d, ti.Tr, ti.Tc);
  const bool skips = p.mask.any() && info.tiled;
  auto verdict = [&](int64_t form, int64_t sim) {
    return form == sim ? "equal" : skips && sim < form ? "less: masked blocks skipped" : "DIFFERENT";
  };
  std::printf("  HBM read   %lld B  (closed form %lld B: %s)\n", (long long)B.hbm_read_bytes,
              (long long)cf.read_bytes(bpe), verdict(cf.read_bytes(bpe), B.hbm_read_bytes));
  std::printf("  HBM write  %lld B  (closed form %lld B: %s)\n", (long long)B.hbm_write_bytes,
              (long long)cf.write_bytes(bpe), verdict(cf.write_bytes(bpe), B.hbm_write_bytes));
  std::printf("  FLOPs      %lld (%.3g GFLOP, %.2fx the forward's)\n", (long long)B.flops, B.flops / 1e9,
              double(B.flops) / double(std::max<int64_t>(1, t.forward_totals.flops)));
  const int64_t budget = backward_tile_capacity(ti);
  std::printf("  peak SRAM  %lld B in all; tiles %lld B = %.2f x M (%lld B)", (long long)B.peak_sram_bytes,
              (long long)B.peak_tile_bytes, double(B.peak_tile_bytes) / double(p.M * bpe), (long long)(p.M * bpe));
  if (!info.tiled)
    std::printf("; Algorithm 3 is not tiled against M\n");
  else
    std::printf(", within the backward budget 2M = %lld B (docs/backward.md)\n", (long long)(budget * bpe));
  if (a.backward) {
    const BackwardAccuracy& g = *a.backward;
    std::printf("  vs float64 dQ max abs %.3g, max rel %.3g; dK max abs %.3g, max rel %.3g; dV max abs "
                "%.3g, max rel %.3g\n", g.dQ.max_abs, g.dQ.max_rel, g.dK.max_abs, g.dK.max_rel, g.dV.max_abs,
                g.dV.max_rel);
  } else {
    std::printf("  vs float64 skipped (Nq*Nk*d over %.0e multiply-adds)\n", kMaxReferenceWork);
  }
}

void print_explain_backward(int64_t nq, int64_t nk, int64_t d, int64_t M, const Tiling& t) {
  struct Column {
    const ScheduleInfo* info;
    TrafficForm form;
    int64_t sim_read = -1, sim_write = -1;  // elements; -1: not simulated
  };
  std::vector<Column> cols;
  for (const ScheduleInfo* si : schedules())
    if (has_backward(*si)) cols.push_back({si, si->backward_traffic(nq, nk, d, t)});  // decode has none
  // The backward does about 2.5x the forward's work and standard attention keeps four N x N
  // matrices (S, P, dP, dS): simulate only where that stays small.
  const bool simulate = double(nq) * double(nk) * double(d) <= 2e9 && double(nq) * double(nk) <= double(1 << 24);
  bool same = true;
  for (Column& c : cols) {
    if (!simulate) break;
    ProblemSpec s = sizes_spec(nq, nk, d, M, t.overridden ? t.Br : 0, t.overridden ? t.Bc : 0);
    s.schedule = c.info->id;
    const Problem p = make_problem(s);
    const Mat dO = make_grad_output(p, "random");
    RunOptions opt;
    opt.record = false;
    opt.dO = &dO;
    const Trace tr = run_problem(p, t, opt);
    c.sim_read = tr.backward_totals.hbm_read_bytes / 4;  // float32: bytes / 4 = elements
    c.sim_write = tr.backward_totals.hbm_write_bytes / 4;
    same = same && c.sim_read == c.form.read_elems && c.sim_write == c.form.write_elems;
  }
  std::printf("\nBackward pass, HBM traffic in elements (closed form | simulated):\n");
  for (const Column& c : cols) {
    std::printf("  %-24s read %14lld | %14lld   write %14lld | %14lld   total %lld B\n", c.info->backward_column,
                (long long)c.form.read_elems, (long long)c.sim_read, (long long)c.form.write_elems,
                (long long)c.sim_write, (long long)(4 * (c.form.read_elems + c.form.write_elems)));
  }
  if (simulate)
    std::printf("  backward equals closed form  %s\n", same ? "yes" : "NO");
  else
    std::printf("  simulated backward skipped (Nq*Nk*d over 2e9 or Nq*Nk over 2^24; shown as -1)\n");
  std::printf("  Theorem 5 order: N^2 d^2 / M = %.4g (flash)  vs  N d + N^2 = %.4g (standard)\n",
              theorem5_flash(nq, nk, d, M), theorem5_standard(nq, nk, d));
  const Column& base = cols[size_t(schedule_index(baseline_schedule().id))];
  const double std_bytes = double(base.form.read_elems + base.form.write_elems);
  std::string ratios;
  for (const Column& c : cols) {
    if (c.info->baseline) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3gx", double(c.form.read_elems + c.form.write_elems) / std_bytes);
    ratios += std::string(ratios.empty() ? "" : " and ") + c.info->backward_short + (ratios.empty() ? " moves " : " ") + buf;
  }
  std::printf("\n%s the bytes of %s here.\n", ratios.c_str(), base.info->backward_short);
}

}  // namespace flashstep
