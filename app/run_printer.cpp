// run's printed output: the step log (--steps), the summary, the progress bar on a terminal.
#include "app/run_printer.h"

#include "app/cli_backward.h"
#include "core/closed_form.h"
#include "core/input_error.h"
#include "core/l2_cache.h"
#include "core/paged_kv.h"
#include "core/progress.h"
#include "core/reference.h"
#include "core/run.h"
#include "core/schedule_registry.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

namespace flashstep {

namespace {

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

}  // namespace

void show_progress_on_terminal() {
  if (::isatty(STDERR_FILENO)) progress::set_sink(progress_bar);
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
  if (s.fp8_scale_b > 0)  // --dtype fp8 (docs/fp8.md)
    std::printf("         e4m3: scales %s = %.6g, %s = %.6g; largest rounding error %.3g\n",
                line_role(s.line) == LineRole::scores ? "s_Q" : "P~", double(s.fp8_scale_a),
                line_role(s.line) == LineRole::scores ? "s_K" : "s_V", double(s.fp8_scale_b), s.fp8_error);
  // The rows of O a tiled schedule writes (Algorithm 0's whole O_i is not printed)
  if (line_role(s.line) == LineRole::write_o && schedule_info(t.problem.schedule).tiled)
    for (const HbmWrite& w : s.writes)
      for (int64_t r = 0; r < w.data.rows() && r < 4; ++r)
        std::printf("         O[%lld] = %s\n", (long long)(w.row0 + r),
                    vec_text(w.data.row(r).transpose()).c_str());
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
              p.p_dtype == Dtype::fp32   ? ""
              : p.p_dtype == Dtype::fp8  ? ""
              : p.p_dtype == Dtype::bf16 ? "; P~ rounded to bf16 before P V"
                                         : "; P~ rounded to fp16 before P V");
  if (p.dtype == Dtype::fp8)
    std::printf("fp8        Q, K, V in e4m3 with %s float32 scales (amax/448)%s; %s; "
                "S, softmax, l, m, O in float32; O stored in bf16\n",
                fp8_scale_name(p.fp8_scale), p.rotate ? ", Q and K rotated by a seeded Hadamard matrix first" : "",
                p.p_dtype == Dtype::fp8 ? "P~ in e4m3 (scale 1) before P V" : "P~ in float32 (decode: P V on CUDA cores)");
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
  if (ti.P > 0)
    std::printf("pages      P = %lld: K, V in %lld %s at shuffled places, block table read %s\n", (long long)ti.P,
                (long long)kv_pages(p.nk, ti.P), kv_pages(p.nk, ti.P) == 1 ? "page" : "pages",
                bytes_text(F.traffic.read[size_t(Tensor::BT)]).c_str());
  // fp8: the forward's form plus the scale reads, e4m3 inputs and a bf16 O (core/closed_form.h)
  const TrafficForm cf = forward_form(p.schedule, p.dtype, p.nq, p.nk, p.d, ti);
  const int64_t bpe = p.bytes_per_elem, out_bpe = dtype_bytes(output_dtype(p.dtype));
  // With a mask, skipped blocks move nothing, so the unmasked closed form is an upper bound.
  const bool skips = p.mask.any() && info.tiled;
  auto verdict = [&](int64_t form, int64_t sim) {
    return form == sim ? "equal" : skips && sim < form ? "less: masked blocks skipped" : "DIFFERENT";
  };
  const int64_t form_read = form_read_bytes(cf, p.dtype), form_write = form_write_bytes(cf, p.dtype);
  std::printf("HBM read   %s  (closed form %lld B: %s)\n", bytes_text(F.hbm_read_bytes).c_str(), (long long)form_read,
              verdict(form_read, F.hbm_read_bytes));
  std::printf("HBM write  %s  (closed form %lld B: %s)\n", bytes_text(F.hbm_write_bytes).c_str(), (long long)form_write,
              verdict(form_write, F.hbm_write_bytes));
  print_dram_summary(t);
  std::printf("peak SRAM  %s in all; Q_i, K_j, V_j, O_i tiles %s of the budget %s%s\n",
              bytes_text(F.peak_sram_bytes).c_str(), bytes_text(F.peak_tile_bytes).c_str(),
              // fp8: Q_i, K_j, V_j in e4m3 and O_i in bf16, a quarter of the elements each
              bytes_text(p.dtype == Dtype::fp8 ? ti.tile_capacity / 4 * (3 * bpe + out_bpe) : ti.tile_capacity * bpe).c_str(),
              !info.tiled ? " (not enforced for Algorithm 0)"
              : ti.tile_capacity != p.M ? " (M rounded up to whole tile rows)" : "");
  std::printf("FLOPs      %lld (%.3g GFLOP)\n", (long long)F.flops, F.flops / 1e9);
  const Accuracy a = accuracy_of(t, true);  // core/accuracy.h: the figures every reader shows
  if (a.measured) {
    const ErrorStats &eo = a.forward.O, &el = a.forward.lse;
    std::printf("vs float64 O max abs %.3g, max rel %.3g; lse max abs %.3g, max rel %.3g\n",
                eo.max_abs, eo.max_rel, el.max_abs, el.max_rel);
    // The companion holds S and P, or O, in the storage type: on inputs whose scores leave that
    // type's range its O is inf or NaN, which is said in words, as run --schedule standard
    // refuses the same run, never printed as an error figure.
    const bool companion_overflows =
        a.companion && !(std::isfinite(a.companion->O.max_abs) && std::isfinite(a.companion->O.max_rel) &&
                         std::isfinite(a.companion->O.rms));
    if (companion_overflows) {
      const char* dt = dtype_name(a.companion->dtype);
      std::printf("%-10s in %s: the result overflows %s storage on these inputs (%s stored in %s): no error figure\n",
                  schedule_info(a.companion->schedule).name, dt, dt,
                  p.dtype == Dtype::fp8 ? "Q, K, V, O" : "S and P", dt);
    } else if (a.companion && p.dtype == Dtype::fp8) {  // FP8 beside bf16 (docs/fp8.md has the table)
      std::printf("fp8 error  O RMSE %.3g, max abs %.3g (%s%s)\n", eo.rms, eo.max_abs, fp8_scale_name(p.fp8_scale),
                  p.rotate ? ", rotated" : "");
      std::printf("bf16 error O RMSE %.3g, max abs %.3g (%s with Q, K, V, O stored in bf16)\n", a.companion->O.rms,
                  a.companion->O.max_abs, info.name);
      // Every FP8 storage on these inputs, beside bf16: docs/fp8.md's table for this problem.
      std::printf("storages   O RMSE on these inputs: bf16 %.3g", a.companion->O.rms);
      bool rotated = false;
      for (const Fp8StorageAccuracy& s : a.fp8_storages) {
        std::printf("; fp8 %s%s %.3g%s", fp8_scale_name(s.scale), s.rotate ? " rotated" : "", s.O.rms,
                    s.own ? " (this run)" : "");
        rotated = rotated || s.rotate;
      }
      if (!rotated) std::printf("; no rotation (d = %lld is not a power of two)", (long long)p.d);
      std::printf("\n");
    } else if (a.companion) {  // standard attention in the same storage precision
      std::printf("%-10s in %s: O max abs %.3g, max rel %.3g (S and P stored in %s too)\n",
                  schedule_info(a.companion->schedule).name, dtype_name(p.dtype), a.companion->O.max_abs,
                  a.companion->O.max_rel, dtype_name(p.dtype));
    }
  } else {
    std::printf("vs float64 skipped (Nq*Nk*d over %.0e multiply-adds)\n", kMaxReferenceWork);
  }
  if (t.has_backward) print_backward_summary(t, a);
}

void print_check(const char* lead, const ForwardCheck& c) {
  std::printf("%s%-19s O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n", lead, c.name.c_str(), c.err.O.max_abs,
              c.err.O.max_rel, c.err.lse.max_abs, c.err.lse.max_rel, !c.judged ? "(reported)" : c.pass() ? "ok" : "OVER");
}

void print_float64_checks(const Float64Checks& c) {
  if (!c.measured) {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
    return;
  }
  for (const ForwardCheck& k : c.checks) print_check("           ", k);
}

void require_stdout_written() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw InputError(std::string("writing standard output failed: ") + (errno ? std::strerror(errno) : "write error"));
}

}  // namespace flashstep
