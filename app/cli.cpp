// The headless subcommands: lesson, run, explain.
#include "app/cli_backward.h"
#include "app/cmd_pipeline.h"
#include "app/explain_parallelism.h"
#include "core/decode.h"
#include "core/l2_cache.h"
#include "app/commands.h"
#include "core/checked.h"
#include "core/closed_form.h"
#include "core/export.h"
#include "core/input_files.h"
#include "core/lesson.h"
#include "core/npy.h"
#include "core/progress.h"
#include "core/reference.h"
#include "core/schedule_registry.h"
#include "core/snapshot.h"
#include "core/work.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace flashstep {

// Strict text checks that run before CLI11 converts a flag's text: otherwise "-1" for an
// unsigned flag wraps around, and "" or "1e999" for a number becomes 0 or inf silently.
template <class Parse>
static CLI::Validator strict(const char* what, Parse parse) {
  return CLI::Validator(
      [what, parse](std::string& text) {
        try {
          parse(text, what);
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", what);
}
static CLI::Validator whole_number(const char* what) { return strict(what, checked::parse_int); }
static CLI::Validator real_number(const char* what) { return strict(what, checked::parse_double); }

ProblemSpec RunFlags::to_spec() const {
  ProblemSpec s;
  const bool have_files = !q.empty() || !k.empty() || !v.empty();
  if (n_opt->count() && (nq_opt->count() || nk_opt->count()))
    throw InputError("give either --n or --nq/--nk, not both");
  if (have_files && (n_opt->count() || nq_opt->count() || nk_opt->count() || d_opt->count()))
    throw InputError("sizes come from the .npy files: drop --n/--nq/--nk/--d");
  s.nq = nq_opt->count() ? nq : (n_opt->count() ? n : 64);
  s.nk = nk_opt->count() ? nk : (n_opt->count() ? n : (nq_opt->count() ? nq : 64));
  s.d = d;
  s.M = parse_sram_size(M);
  if (scale_opt->count()) s.scale = scale;
  s.br = br;
  s.bc = bc;
  s.schedule = parse_schedule(schedule);
  s.splits = splits;
  s.seed = seed;
  s.pattern = pattern;
  s.q_path = q;
  s.k_path = k;
  s.v_path = v;
  s.options = options;
  s.options.dtype = parse_dtype(excerpt(dtype));  // quoted cut if refused
  s.options.p_dtype = parse_dtype(excerpt(p_dtype));
  if (!window.empty()) {
    long long left = 0, right = 0;
    char extra = 0;
    if (std::sscanf(window.c_str(), "%lld,%lld%c", &left, &right, &extra) != 2)
      throw InputError("--window must be LEFT,RIGHT (e.g. 64,0; -1 for no limit), got '" + excerpt(window) + "'");
    s.options.mask.window_left = left;
    s.options.mask.window_right = right;
  }
  return s;
}

void add_run_flags(CLI::App* c, RunFlags& f) {
  f.n_opt = c->add_option("--n", f.n, "sequence length, Nq = Nk = N (default 64)")->check(whole_number("N"));
  f.nq_opt = c->add_option("--nq", f.nq, "number of queries Nq")->check(whole_number("Nq"));
  f.nk_opt = c->add_option("--nk", f.nk, "number of keys/values Nk")->check(whole_number("Nk"));
  f.d_opt = c->add_option("--d", f.d, "head dimension d (default 16)")->check(whole_number("d"));
  c->add_option("--M", f.M, "SRAM size: elements (float32 words), or KiB as in 64KiB (default 1024)");
  c->add_option("--br", f.br, "override the Q block size Br")->check(whole_number("Br"));
  c->add_option("--bc", f.bc, "override the K/V block size Bc")->check(whole_number("Bc"));
  f.scale_opt = c->add_option("--scale", f.scale, "softmax scale tau (default 1/sqrt(d); 1 = Algorithm 1 as printed)")
                    ->check(real_number("scale"));
  std::string schedule_help;  // "fa1 (Algorithm 1), fa2 (FlashAttention-2) or standard (Algorithm 0)"
  const auto& all = schedules();
  for (size_t k = 0; k < all.size(); ++k)
    schedule_help += std::string(k == 0 ? "" : k + 1 == all.size() ? " or " : ", ") + all[k]->name + " (" +
                     all[k]->paper_name + ")";
  c->add_option("--schedule", f.schedule, schedule_help);
  c->add_option("--splits", f.splits, "decode's number of K/V splits S, 1 <= S <= Tc (default: enough to fill "
                                      "132 SMs, FlashAttention's heuristic; docs/decode.md)")
      ->check(whole_number("splits"));
  c->add_flag("--causal", f.options.mask.causal, "causal mask (bottom-right aligned when Nq != Nk)");
  c->add_option("--window", f.window, "sliding window LEFT,RIGHT around the aligned key (-1 = no limit)");
  c->add_option("--kv-len", f.options.mask.kv_len, "key padding: only the first KV_LEN keys are valid")->check(whole_number("kv-len"));
  c->add_option("--dtype", f.dtype, "storage precision of Q, K, V, O in HBM: fp32, fp16 or bf16 (arithmetic is float32)");
  c->add_option("--p-dtype", f.p_dtype, "round P~ to fp16 or bf16 before the P V product, as a tensor-core kernel does (default fp32: not rounded)");
  c->add_option("--dropout", f.options.dropout, "dropout probability p in [0, 1) (Philox 4x32-10 keyed by --seed)")
      ->check(real_number("dropout"));
  c->add_option("--seed", f.seed, "seed for generated inputs (default 1)")->check(strict("seed", checked::parse_uint));
  c->add_option("--pattern", f.pattern, "generated inputs: random, uniform, large, ramp");
  c->add_option("--q", f.q, "Q from a .npy file (Nq x d, float32 or float64)");
  c->add_option("--k", f.k, "K from a .npy file (Nk x d)");
  c->add_option("--v", f.v, "V from a .npy file (Nk x d)");
}

namespace {

// explain simulates the three schedules unrecorded up to this much work (Nq Nk d): a few
// seconds. The float64 reference has its own, smaller limit (kMaxReferenceWork).
constexpr double kMaxExplainWork = 1.5e10;
// A progress bar with an ETA on stderr (progress.h calls it only for runs over about 2 s).
void progress_bar(double fraction, double elapsed_s, bool done) {
  if (done) {
    std::fputs("\r\033[K", stderr);  // erase the bar
    return;
  }
  const int width = 30, filled = int(fraction * width);
  const double eta = fraction > 0 ? elapsed_s * (1 - fraction) / fraction : 0;
  std::fprintf(stderr, "\r[%-*s] %3.0f%%  %.0f s elapsed, about %.0f s left ", width,
               std::string(size_t(filled), '#').c_str(), 100 * fraction, elapsed_s, eta);
}

void show_progress_on_terminal() {
  if (::isatty(STDERR_FILENO)) progress::set_sink(progress_bar);
}

std::string vec_text(const Vec& v, int limit = 8) {
  std::string s = "[";
  char buf[32];
  for (int64_t k = 0; k < v.size() && k < limit; ++k) {
    std::snprintf(buf, sizeof buf, "%s%.6g", k ? ", " : "", v(k));
    s += buf;
  }
  if (v.size() > limit) s += ", ...";
  return s + "]";
}

void print_step(const Trace& t, size_t k) {
  const Step& s = t.steps[k];
  char ij[32];
  std::snprintf(ij, sizeof ij, "%s%s", s.i >= 0 ? ("i=" + std::to_string(s.i)).c_str() : "",
                s.j >= 0 ? ((s.i >= 0 ? " j=" : "j=") + std::to_string(s.j)).c_str() : "");
  std::printf("%5zu  %-11s %-9s read %8lld B (total %10lld)  write %8lld B (total %10lld)  "
              "SRAM %7lld B  FLOPs %9lld  %s\n",
              k, line_label(s.line), ij, (long long)s.hbm_read, (long long)s.hbm_read_total,
              (long long)s.hbm_write, (long long)s.hbm_write_total, (long long)s.sram_bytes,
              (long long)s.flops, t.explain(k).c_str());
  std::string sram;
  for (int sl = 0; sl < kSlots; ++sl)
    if (s.sram_elems[sl] > 0)
      sram += std::string(sram.empty() ? "" : ", ") + slot_name(Slot(sl)) + " " +
              std::to_string(s.sram_elems[sl] * slot_elem_bytes(Slot(sl), t.problem.bytes_per_elem)) + " B";
  std::printf("         SRAM holds %s\n", sram.empty() ? "nothing" : sram.c_str());
  if (t.totals.l2.enabled && (s.hbm_read || s.hbm_write || s.dram_read || s.dram_write))
    std::printf("         DRAM read %lld B (total %lld), write %lld B (total %lld) through the L2\n",
                (long long)s.dram_read, (long long)s.dram_read_total, (long long)s.dram_write,
                (long long)s.dram_write_total);
  if (line_role(s.line) == LineRole::combine) {  // decode's combine: the statistics are the splits' lse
    if (s.alpha.size()) {
      std::printf("         lse_i^(%d) = %s, lse_i = %s\n", s.split + 1, vec_text(s.m_old).c_str(), vec_text(s.m_new).c_str());
      std::printf("         rescale factors e^(lse_i^(%d) - lse_i) = %s\n", s.split + 1, vec_text(s.alpha).c_str());
    } else {
      std::printf("         max_s lse_i^(s) = %s, lse_i = %s\n", vec_text(s.m_tilde).c_str(), vec_text(s.m_new).c_str());
    }
    return;
  }
  if (s.m_tilde.size()) std::printf("         m~_ij = rowmax(S_ij) = %s\n", vec_text(s.m_tilde).c_str());
  if (s.l_tilde.size()) std::printf("         l~_ij = rowsum(P~_ij) = %s\n", vec_text(s.l_tilde).c_str());
  if (s.m_old.size()) {
    std::printf("         m_i = %s -> m_i^new = %s\n", vec_text(s.m_old).c_str(),
                vec_text(s.m_new).c_str());
    std::printf("         l_i = %s -> l_i^new = %s\n", vec_text(s.l_old).c_str(),
                vec_text(s.l_new).c_str());
    std::printf("         e^(m_i - m_i^new) = %s\n", vec_text(s.alpha).c_str());
  }
  if (s.beta.size()) std::printf("         e^(m~_ij - m_i^new) = %s\n", vec_text(s.beta).c_str());
  if (s.D_i.size()) std::printf("         D_i = rowsum(dO_i o O_i) = %s\n", vec_text(s.D_i).c_str());
  if (s.dropout_keep.size())
    std::printf("         dropout dropped %lld of %lld entries of P~ (kept ones scaled by 1/(1-p))\n",
                (long long)(s.dropout_keep.size() - (long long)s.dropout_keep.sum()),
                (long long)s.dropout_keep.size());
  // The rows of O a tiled schedule writes (Algorithm 0's whole O_i is not printed)
  if (line_role(s.line) == LineRole::write_o && schedule_info(t.problem.schedule).tiled)
    for (const HbmWrite& w : s.writes)
      for (int64_t r = 0; r < w.data.rows() && r < 4; ++r)
        std::printf("         O[%lld] = %s\n", (long long)(w.row0 + r),
                    vec_text(w.data.row(r).transpose()).c_str());
}

std::string bytes_text(int64_t b) {
  char buf[64];
  if (b >= (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%lld B (%.2f MiB)", (long long)b, b / 1048576.0);
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%lld B (%.2f KiB)", (long long)b, b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", (long long)b);
  return buf;
}

// The L2 model's lines of the summary (docs/l2-model.md): DRAM bytes beside the HBM bytes.
void print_dram_summary(const Trace& t) {
  const Totals& T = t.totals;
  if (!T.l2.enabled) {
    std::printf("DRAM       = HBM bytes (no L2 modelled; --l2 SIZE or --gpu h200 adds one)\n");
    return;
  }
  const L2Config& c = T.l2.config;
  const L2Plan& pl = T.l2.plan;
  const GpuSpec& g = find_gpu(c.gpu);
  std::printf("L2 model   %s L2, %s (%lld SMs), %lld-byte LRU lines, shared by %lld head%s",
              bytes_text(c.bytes).c_str(), g.name, (long long)g.sms, (long long)L2Config::kLineBytes,
              (long long)c.heads, c.heads > 1 ? "s" : "");
  if (schedule_info(t.problem.schedule).tiled)
    std::printf("; %lld blocks per SM: %lld in flight", (long long)pl.blocks_per_sm, (long long)pl.slots);
  std::printf("\n");
  const double hit = T.hbm_read_bytes > 0 ? 100.0 * double(T.l2.hit_bytes) / double(T.hbm_read_bytes) : 0;
  std::printf("DRAM read  %s  (head 0; L2 hit rate %.1f%% of the HBM bytes read)\n",
              bytes_text(T.dram_read_bytes).c_str(), hit);
  std::printf("DRAM write %s  (head 0; %s of it written back from L2 at the end)\n",
              bytes_text(T.dram_write_bytes).c_str(), bytes_text(T.l2.final_writeback_bytes).c_str());
  if (c.heads > 1)
    std::printf("%lld heads  DRAM read %.4g GB, write %.4g GB; HBM read %.4g GB, write %.4g GB\n",
                (long long)c.heads, 1e-9 * double(T.l2.all_heads_read_bytes),
                1e-9 * double(T.l2.all_heads_write_bytes), 1e-9 * double(T.hbm_read_bytes * c.heads),
                1e-9 * double(T.hbm_write_bytes * c.heads));
  if (c.ncu)
    std::printf("as ncu     DRAM read %.4g GB, write %.4g GB, all heads (L2 flushed and emptied "
                "before each kernel; write-backs between kernels not counted)\n",
                1e-9 * double(T.l2.ncu_read_bytes), 1e-9 * double(T.l2.ncu_write_bytes));
}

void print_summary(const Trace& t, bool recorded) {
  const Problem& p = t.problem;
  const Tiling& ti = t.tiling;
  const ScheduleInfo& info = schedule_info(p.schedule);
  std::printf("schedule   %s (%s)\n", info.name, info.title);
  std::printf("mask       %s; dropout p = %.9g\n", p.mask.describe().c_str(), p.dropout);
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), "
              "stored as %s%s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype),
              p.p_dtype == Dtype::fp32 ? ""
              : p.p_dtype == Dtype::bf16 ? "; P~ rounded to bf16 before P V"
                                         : "; P~ rounded to fp16 before P V");
  std::printf("tiling     M = %lld elements (%s), Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld%s\n",
              (long long)p.M, bytes_text(p.M * p.bytes_per_elem).c_str(), (long long)ti.Br,
              (long long)ti.Bc, (long long)ti.Tr, (long long)ti.Tc,
              ti.overridden ? " (overridden)" : " (paper's block sizes)");
  const Totals& F = t.has_backward ? t.forward_totals : t.totals;  // the forward alone
  std::printf("steps      %lld%s\n", (long long)F.steps,
              recorded ? " (recorded)" : " (fast path, not recorded)");
  if (ti.S > 1)
    std::printf("splits     S = %lld: K/V blocks in %lld contiguous ranges, each a partial O^(s), lse^(s) "
                "(float32), then the combine\n", (long long)ti.S, (long long)ti.S);
  const TrafficForm cf = info.forward_traffic(p.nq, p.nk, p.d, ti);
  const int64_t bpe = p.bytes_per_elem;
  // With a mask, skipped blocks move nothing, so the unmasked closed form is an upper bound.
  const bool skips = p.mask.any() && info.tiled;
  auto verdict = [&](int64_t form, int64_t sim) {
    return form == sim ? "equal" : skips && sim < form ? "less: masked blocks skipped" : "DIFFERENT";
  };
  std::printf("HBM read   %s  (closed form %lld B: %s)\n", bytes_text(F.hbm_read_bytes).c_str(),
              (long long)cf.read_bytes(bpe), verdict(cf.read_bytes(bpe), F.hbm_read_bytes));
  std::printf("HBM write  %s  (closed form %lld B: %s)\n", bytes_text(F.hbm_write_bytes).c_str(),
              (long long)cf.write_bytes(bpe), verdict(cf.write_bytes(bpe), F.hbm_write_bytes));
  print_dram_summary(t);
  std::printf("peak SRAM  %s in all; Q_i, K_j, V_j, O_i tiles %s of the budget %s%s\n",
              bytes_text(F.peak_sram_bytes).c_str(), bytes_text(F.peak_tile_bytes).c_str(),
              bytes_text(ti.tile_capacity * bpe).c_str(),
              !info.tiled ? " (not enforced for Algorithm 0)"
              : ti.tile_capacity != p.M ? " (M rounded up to whole tile rows)" : "");
  std::printf("FLOPs      %lld (%.3g GFLOP)\n", (long long)F.flops, F.flops / 1e9);
  if (reference_affordable(p.nq, p.nk, p.d)) {
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    const ErrorStats eo = compare(t.O, ref.O), el = compare(t.lse, ref.lse);
    std::printf("vs float64 O max abs %.3g, max rel %.3g; lse max abs %.3g, max rel %.3g\n",
                eo.max_abs, eo.max_rel, el.max_abs, el.max_rel);
    const ScheduleInfo& base = baseline_schedule();
    if (p.dtype != Dtype::fp32 && !info.baseline) {
      Problem ps = p;  // standard attention in the same storage precision, for comparison
      ps.schedule = base.id;
      RunOptions opt;
      opt.record = false;
      const Trace st = run_problem(ps, t.tiling, opt);
      const ErrorStats so = compare(st.O, ref.O);
      std::printf("%-10s in %s: O max abs %.3g, max rel %.3g (S and P stored in %s too)\n",
                  base.name, dtype_name(p.dtype), so.max_abs, so.max_rel, dtype_name(p.dtype));
    }
  } else {
    std::printf("vs float64 skipped (Nq*Nk*d over %.0e multiply-adds)\n", kMaxReferenceWork);
  }
  if (t.has_backward) print_backward_summary(t);
}

}  // namespace

void add_core_commands(CLI::App& app, const SetAction& set_action) {
  // flashstep lesson softmax
  auto* lesson = app.add_subcommand("lesson", "step-by-step lessons");
  lesson->require_subcommand(1);
  auto* sm = lesson->add_subcommand("softmax", "online softmax of a vector split into blocks");
  static std::string values = "1,2,3,4";
  static size_t block = 2;
  sm->add_option("--values", values, "comma-separated values (default 1,2,3,4)");
  sm->add_option("--block", block, "block size (default 2)")
      ->check(strict("--block", [](const std::string& text, const char* what) {
        const int64_t b = checked::parse_int(text, what);
        if (b < 1) throw InputError("--block must be at least 1");
        checked::in_range(b, 1, int64_t(kMaxLessonBlock), what);
      }));
  sm->callback([&set_action] {
    set_action([] {
      std::fputs(format_lesson(run_lesson(parse_values(values), block)).c_str(), stdout);
      return 0;
    });
  });

  // flashstep run
  static RunFlags rf;
  static bool steps = false, summary = false;
  static std::string out_o, out_lse, trace_json, trace_csv, trace_chrome;
  static int64_t max_trace_mib = 1024;
  static double max_gflop = kDefaultMaxGflop;
  auto* run = app.add_subcommand("run", "run a schedule and print its step log or a summary");
  add_run_flags(run, rf);
  auto* so = run->add_flag("--steps", steps, "print every step");
  run->add_flag("--summary", summary, "print only the summary (default)")->excludes(so);
  run->add_option("--out-o", out_o, "write O (Nq x d, float32) to a .npy file");
  run->add_option("--out-lse", out_lse, "write lse = m + log l (Nq, float32) to a .npy file");
  run->add_option("--trace", trace_json, "write the trace as JSON");
  run->add_option("--csv", trace_csv, "write the trace as CSV, one row per step");
  run->add_option("--chrome", trace_chrome, "write a Chrome trace-event file (Perfetto, chrome://tracing)");
  static std::string snapshots;
  run->add_option("--snapshots", snapshots, "write the state after every j (fa1: O, l, m in HBM; fa2: O_i, l_i, m_i "
                                            "on chip; standard: final only) to a snapshot folder for compare");
  static BackwardFlags bf;
  add_backward_flags(run, bf);
  run->add_option("--max-trace-mib", max_trace_mib, "refuse to record a trace larger than this (default 1024)")
      ->check(whole_number("--max-trace-mib"));
  run->add_option("--max-gflop", max_gflop, "refuse a run estimated at more simulated work than this (default 1000)")
      ->check(real_number("--max-gflop"));
  static std::string l2_size, l2_gpu;
  static int64_t l2_heads = 1;
  run->add_option("--l2", l2_size, "L2 cache between HBM and SRAM in bytes, or KiB/MiB (e.g. 50MiB): adds DRAM bytes (docs/l2-model.md)");
  run->add_option("--gpu", l2_gpu, "GPU whose SMs and shared memory set the L2 model's concurrency: h200 or a100 (alone: its L2 size)");
  auto* heads_opt = run->add_option("--heads", l2_heads, "heads (B x H) the GPU runs together, sharing the L2 (default 1)");
  static bool l2_ncu = false;
  run->add_flag("--ncu", l2_ncu, "with the L2 model, also count DRAM bytes as Nsight Compute does (L2 flushed before each kernel)");
  run->callback([&set_action, heads_opt] {
    set_action([heads_opt] {
      checked::in_range(max_trace_mib, 1, kMaxTraceMib, "--max-trace-mib");
      if (!(max_gflop > 0 && max_gflop <= kMaxWorkGflop))
        throw InputError("--max-gflop must be in (0, 1e9] (got " + std::to_string(max_gflop) + ")");
      const ProblemSpec spec = rf.to_spec();
      const WorkLimits limits{max_gflop};
      RunOptions opt;
      opt.l2 = l2_config_from_flags(l2_size, l2_gpu, l2_heads, heads_opt->count() > 0, l2_ncu);
      // The backward does about 2.5 times the forward's FLOPs over the same blocks twice more;
      // the L2 model replays every head's accesses.
      const auto work = [&opt](int64_t nq, int64_t nk, int64_t d, const Tiling& t, Schedule s, int bpe) {
        WorkEstimate w = estimate_work(nq, nk, d, t, s, bpe);
        if (bf.backward) w.gflop *= 3.5, w.block_pairs *= 3;
        if (opt.l2) add_l2_replay_work(w, s, nq, nk, d, t, bpe, opt.l2->heads);
        return w;
      };
      if (spec.q_path.empty()) {  // generated inputs: refuse before generating them
        validate_sizes(spec);
        const Tiling t0 = make_tiling(spec.nq, spec.nk, spec.d, spec.M, spec.br, spec.bc);
        check_work(work(spec.nq, spec.nk, spec.d, t0, spec.schedule, dtype_bytes(spec.options.dtype)), limits);
      }
      // The output targets are checked before the work, so a bad path fails at once.
      OutputFiles out;
      const std::pair<const std::string*, const char*> targets[] = {
          {&trace_json, "--trace"}, {&trace_csv, "--csv"},   {&trace_chrome, "--chrome"},
          {&out_o, "--out-o"},      {&out_lse, "--out-lse"}, {&bf.out_dq, "--out-dq"},
          {&bf.out_dk, "--out-dk"}, {&bf.out_dv, "--out-dv"}};
      for (const auto& [path, flag] : targets)
        if (!path->empty()) out.add(*path, flag);
      out.add_input(spec.q_path, "--q");
      out.add_input(spec.k_path, "--k");
      out.add_input(spec.v_path, "--v");
      out.add_input(bf.do_path, "--do");
      out.check();
      if (!snapshots.empty()) check_snapshot_target(snapshots);
      const Problem p = make_problem(spec);
      const Tiling t = make_tiling(p);
      check_work(work(p.nq, p.nk, p.d, t, p.schedule, p.bytes_per_elem), limits);
      // fa1's and fa2's per-j states come from the recorded trace (core/snapshot.h); standard
      // attention's snapshot folder holds the final state only.
      opt.record = steps || !trace_json.empty() || !trace_csv.empty() || !trace_chrome.empty() ||
                   (!snapshots.empty() && schedule_info(p.schedule).forward_snapshots != nullptr);
      opt.max_trace_bytes = size_t(max_trace_mib) << 20;
      Mat dO;
      if (bf.backward) {  // dO from --do or the seed, checked against p's shape
        dO = backward_grad_output(bf, p, rf.pattern);
        opt.dO = &dO;
      }
      if (!snapshots.empty()) check_snapshot_size(snapshot_problem(p, t, opt.dO));
      show_progress_on_terminal();
      const Trace tr = run_problem(p, t, opt);
      check_result_finite(tr);
      // Serialise everything, then write all or nothing (output_files.h).
      if (!trace_json.empty()) out.bytes(trace_json) = trace_to_json(tr).dump(1) + "\n";
      if (!trace_csv.empty()) out.bytes(trace_csv) = trace_to_csv(tr);
      if (!trace_chrome.empty()) out.bytes(trace_chrome) = trace_to_chrome(tr).dump() + "\n";
      if (!out_o.empty()) out.bytes(out_o) = npy_bytes(tr.O.data(), {int64_t(tr.O.rows()), int64_t(tr.O.cols())});
      if (!out_lse.empty()) out.bytes(out_lse) = npy_bytes(tr.lse.data(), {int64_t(tr.lse.size())});
      add_backward_outputs(bf, tr, out);
      if (!snapshots.empty()) write_snapshots(snapshots, cpu_snapshots(tr, opt.dO));  // the folder first: it is
      out.commit();                                                                   // the likelier to fail
      if (steps)
        for (size_t k = 0; k < tr.steps.size(); ++k) print_step(tr, k);
      print_summary(tr, opt.record);
      if (!snapshots.empty()) std::printf("snapshots  written to %s\n", snapshots.c_str());
      return 0;
    });
  });

  // flashstep explain
  static int64_t en = 1024, ed = 64, enq = 0, enk = 0, ebr = 0, ebc = 0;
  static std::string eM = "16384", edtype = "fp32", ep_dtype = "fp32";
  auto* ex = app.add_subcommand("explain", "block sizes and HBM traffic: closed forms, Theorem 2, simulation");
  ex->add_option("--n", en, "sequence length N (default 1024)")->check(whole_number("N"));
  static CLI::Option* enq_opt = ex->add_option("--nq", enq, "Nq, if different from N")->check(whole_number("Nq"));
  static CLI::Option* enk_opt = ex->add_option("--nk", enk, "Nk, if different from N")->check(whole_number("Nk"));
  ex->add_option("--d", ed, "head dimension d (default 64)")->check(whole_number("d"));
  ex->add_option("--M", eM, "SRAM size in elements or KiB (default 16384)");
  ex->add_option("--br", ebr, "override Br")->check(whole_number("Br"));
  ex->add_option("--bc", ebc, "override Bc")->check(whole_number("Bc"));
  ex->add_option("--dtype", edtype, "storage type of Q, K, V, O, S, P: fp32 (default), fp16, bf16");
  ex->add_option("--p-dtype", ep_dtype, "P~ rounded to fp16 or bf16 before P V, as a tensor-core kernel does "
                                        "(default fp32; needs a 16-bit --dtype)");
  static PipelineFlags epipe;
  add_pipeline_flags(ex, epipe);
  static std::string egpu = "h200";
  static int64_t eheads = 1, esplits = 0;
  ex->add_option("--gpu", egpu, "GPU whose SM count the parallelism section uses: h200 (132 SMs, default) or a100");
  epipe.heads_opt = ex->add_option("--heads", eheads, "B x H heads: the parallelism section's (default 1); with "
                                                      "--pipeline, the grid's (default: B x H x N = 131072, H = 8)")
                        ->check(whole_number("heads"));
  ex->add_option("--splits", esplits, "decode's S (default: core/decode.h's heuristic for --heads on --gpu)")
      ->check(whole_number("splits"));
  ex->callback([&set_action] {
    set_action([] {
      check_pipeline_flags(epipe);
      epipe.heads = eheads;
      if (epipe.on) return run_pipeline_explain(epipe, enq_opt->count() ? enq : en, enk_opt->count() ? enk : en, ed);
      const int64_t nq = enq_opt->count() ? enq : en, nk = enk_opt->count() ? enk : en, M = parse_sram_size(eM);
      AttentionOptions precision;
      precision.dtype = parse_dtype(excerpt(edtype));
      precision.p_dtype = parse_dtype(excerpt(ep_dtype));
      validate_options(precision, 0);
      const int eb = dtype_bytes(precision.dtype);
      Tiling t = make_tiling(nq, nk, ed, M, ebr, ebc);
      checked::in_range(eheads, 1, 65535, "--heads");
      // decode's S in the table and the parallelism section: --splits, or the default for the
      // heads on this GPU's SMs (core/decode.h)
      t.S = esplits != 0 ? esplits : default_splits(eheads * t.Tr, t.Tc, int(find_gpu(egpu).sms));
      if (t.S < 1 || t.S > t.Tc)
        throw InputError("--splits " + std::to_string(t.S) + " is out of range 1..Tc = " + std::to_string(t.Tc));
      // One column per schedule (the registry's order), the baseline (standard attention) last.
      const auto& all = schedules();
      const size_t n = all.size();
      std::vector<TrafficForm> forms;
      for (const ScheduleInfo* si : all) forms.push_back(si->forward_traffic(nq, nk, ed, t));
      std::printf("Nq = %lld, Nk = %lld, d = %lld, M = %lld elements (%lld KiB of float32)\n",
                  (long long)nq, (long long)nk, (long long)ed, (long long)M, (long long)(M * 4 / 1024));
      std::printf("Bc = ceil(M/4d) = %lld, Br = min(ceil(M/4d), d) = %lld%s; Tr = %lld, Tc = %lld\n",
                  (long long)t.Bc, (long long)t.Br, t.overridden ? " (overridden)" : "",
                  (long long)t.Tr, (long long)t.Tc);
      // p_dtype is a rounding point inside the chip: it changes the arithmetic, not the traffic.
      std::printf("precision: dtype %s (%d bytes per stored element; l, m, L in float32), p_dtype %s (%s)\n\n",
                  dtype_name(precision.dtype), eb, dtype_name(precision.p_dtype),
                  precision.p_dtype == Dtype::fp32 ? "P~_ij not rounded"
                                                   : "P~_ij rounded on chip before P~_ij V_j: no change in HBM bytes");
      auto row = [n](const char* label, const std::vector<int64_t>& v) {
        std::printf("  %-30s", label);
        for (size_t k = 0; k < n; ++k) std::printf(" %16lld", (long long)v[k]);
        std::printf("\n");
      };
      std::printf("HBM traffic in elements         ");
      for (const ScheduleInfo* si : all) std::printf(" %16s", si->column);
      std::printf("\n");
      std::vector<int64_t> rd(n), wr(n), by(n);
      for (size_t k = 0; k < n; ++k) {
        rd[k] = forms[k].read_elems;
        wr[k] = forms[k].write_elems;
        by[k] = forms[k].read_bytes(eb) + forms[k].write_bytes(eb);
      }
      row("closed form, read", rd);
      row("closed form, write", wr);
      row("closed form, total bytes", by);
      // Theorem 2's orders: the tiled schedules' N^2 d^2 / M in the first column, the baseline's.
      std::printf("  %-30s", "Theorem 2 order");
      for (size_t k = 0; k < n; ++k) {
        if (k == 0) std::printf(" %16.4g", theorem2_flash(nq, nk, ed, M));
        else if (all[k]->baseline) std::printf(" %16.4g", theorem2_standard(nq, nk, ed));
        else std::printf(" %16s", "");
      }
      std::printf("   (N^2 d^2 / M  vs  N d + N^2)\n");
      // The simulation is bounded: Tr Tc block pairs each cost the simulator a fixed overhead.
      const double work = double(nq) * double(nk) * double(ed), pairs = double(t.Tr) * double(t.Tc);
      if (work <= kMaxExplainWork && pairs <= 1e6) {
        ProblemSpec s = sizes_spec(nq, nk, ed, M, ebr, ebc);
        s.options.dtype = precision.dtype;
        s.options.p_dtype = precision.p_dtype;
        std::vector<int64_t> srd(n), swr(n), sby(n);
        bool same = true;
        for (size_t k = 0; k < n; ++k) {
          s.schedule = all[k]->id;
          s.splits = schedule_splits_kv(s.schedule) ? t.S : 0;
          // Standard attention rounds P when it stores it (--dtype); P~ rounding is the tiled schedules'.
          s.options.p_dtype = !all[k]->tiled ? Dtype::fp32 : precision.p_dtype;
          RunOptions opt;
          opt.record = false;
          const Trace tr = run_spec(s, opt);
          srd[k] = tr.totals.hbm_read_bytes / 4;  // elements, where every element is float32
          swr[k] = tr.totals.hbm_write_bytes / 4;
          sby[k] = tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes;
          same = same && tr.totals.hbm_read_bytes == forms[k].read_bytes(eb) &&
                 tr.totals.hbm_write_bytes == forms[k].write_bytes(eb);
        }
        if (eb == 4) {
          row("simulated, read", srd);
          row("simulated, write", swr);
        } else {
          row("simulated, total bytes", sby);
        }
        std::printf("  %-30s %16s\n", "simulated equals closed form", same ? "yes" : "NO");
      } else {
        std::printf("  simulated                      skipped (Nq*Nk*d = %.3g, Tr*Tc = %.3g: over %.2g or 1e6)\n",
                    work, pairs, kMaxExplainWork);
      }
      const ScheduleInfo& base = baseline_schedule();
      const double base_bytes = double(by[size_t(schedule_index(base.id))]);
      std::string ratios;
      for (size_t k = 0, shown = 0; k < n; ++k) {
        if (all[k]->baseline) continue;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.3gx", double(by[k]) / base_bytes);
        ratios += std::string(shown == 0 ? "" : " and ") + all[k]->column + (shown == 0 ? " moves " : " ") + buf;
        ++shown;
      }
      std::printf("\n%s the bytes of %s here.\n", ratios.c_str(), base.device_title);
      if (eb != 4) std::printf("\n(the backward below counts float32 storage, as its GPU kernels use)\n");
      print_explain_parallelism(t, eheads, egpu, nq, nk, ed, eb);  // app/explain_parallelism.cpp
      print_explain_backward(nq, nk, ed, M, t);
      return 0;
    });
  });
}

}  // namespace flashstep
