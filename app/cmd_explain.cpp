// flashstep explain: block sizes and HBM traffic of every schedule for one problem size: the
// closed forms, Theorem 2's orders, the simulation (when affordable), the parallelism on a GPU
// and the backward's rows; with --pipeline, the tensor-core pipeline model instead.
#include "app/cli_backward.h"
#include "app/cmd_pipeline.h"
#include "app/commands.h"
#include "app/explain_parallelism.h"
#include "app/flag_checks.h"
#include "core/checked.h"
#include "core/closed_form.h"
#include "core/schedules/decode/decode.h"
#include "core/input_files.h"
#include "core/l2_cache.h"
#include "core/schedule_registry.h"

#include <cstdio>
#include <string>
#include <vector>

namespace flashstep {

namespace {

// explain simulates the schedules unrecorded up to this much work (Nq Nk d): a few seconds.
// The float64 reference has its own, smaller limit (kMaxReferenceWork).
constexpr double kMaxExplainWork = 1.5e10;

// One row of the traffic table: a label, then one column per schedule.
void print_row(const char* label, const std::vector<int64_t>& v) {
  std::printf("  %-30s", label);
  for (int64_t x : v) std::printf(" %16lld", (long long)x);
  std::printf("\n");
}

struct ExplainCommand {
  int64_t n = 1024, d = 64, nq = 0, nk = 0, br = 0, bc = 0;
  std::string M = "16384", dtype = "fp32", p_dtype = "fp32";
  PipelineFlags pipe;
  std::string gpu = "h200";
  int64_t heads = 1, splits = 0, page = 0;
  CLI::Option *nq_opt = nullptr, *nk_opt = nullptr, *page_opt = nullptr;

  void add_flags(CLI::App* ex) {
    ex->add_option("--n", n, "sequence length N (default 1024)")->check(whole_number("N"));
    nq_opt = ex->add_option("--nq", nq, "Nq, if different from N")->check(whole_number("Nq"));
    nk_opt = ex->add_option("--nk", nk, "Nk, if different from N")->check(whole_number("Nk"));
    ex->add_option("--d", d, "head dimension d (default 64)")->check(whole_number("d"));
    auto& unused = pipe.not_modelled;  // flags the pipeline model has no use for
    unused.push_back(ex->add_option("--M", M, "SRAM size in elements or KiB (default 16384)"));
    unused.push_back(ex->add_option("--br", br, "override Br")->check(whole_number("Br")));
    unused.push_back(ex->add_option("--bc", bc, "override Bc")->check(whole_number("Bc")));
    unused.push_back(ex->add_option("--dtype", dtype, "storage type of Q, K, V, O, S, P: fp32 (default), fp16, bf16"));
    unused.push_back(ex->add_option("--p-dtype", p_dtype, "P~ rounded to fp16 or bf16 before P V, as a tensor-core kernel does "
                                         "(default fp32; needs a 16-bit --dtype)"));
    add_pipeline_flags(ex, pipe);
    unused.push_back(ex->add_option("--gpu", gpu, "GPU whose SM count the parallelism section uses: h200 (132 SMs, default) or a100"));
    pipe.heads_opt = ex->add_option("--heads", heads, "B x H heads: the parallelism section's (default 1); with "
                                                      "--pipeline, the grid's (default: B x H x N = 131072, H = 8)")
                         ->check(whole_number("heads"));
    unused.push_back(ex->add_option("--splits", splits, "decode's S (default: FlashAttention's num_splits heuristic for --heads on --gpu)")
                         ->check(at_least_one("splits")));
    page_opt = ex->add_option("--page-size", page, "decode's KV pages of P tokens (block-table reads)")
                   ->check(whole_number("page-size"));
    unused.push_back(page_opt);
  }

  // The simulated traffic of every schedule, as the table's rows; whether it equals the closed
  // forms of `forms` (in bytes of `precision.dtype`).
  bool print_simulation(int64_t Nq, int64_t Nk, int64_t M_elems, const Tiling& t, const AttentionOptions& precision,
                        const std::vector<TrafficForm>& forms) const {
    const auto& all = schedules();
    const size_t count = all.size();
    const int eb = dtype_bytes(precision.dtype);
    ProblemSpec s = sizes_spec(Nq, Nk, d, M_elems, br, bc);
    s.options.dtype = precision.dtype;
    s.options.p_dtype = precision.p_dtype;
    std::vector<int64_t> srd(count), swr(count), sby(count);
    bool same = true;
    for (size_t k = 0; k < count; ++k) {
      s.schedule = all[k]->id;
      s.splits = schedule_splits_kv(s.schedule) ? t.S : 0;
      if (schedule_splits_kv(s.schedule) && t.P > 0) s.page_size = t.P;
      else s.page_size.reset();
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
      print_row("simulated, read", srd);
      print_row("simulated, write", swr);
    } else {
      print_row("simulated, total bytes", sby);
    }
    return same;
  }

  // "fa1 moves 0.1x and fa2 0.1x the bytes of standard attention here."
  static void print_ratios(const std::vector<int64_t>& bytes) {
    const auto& all = schedules();
    const ScheduleInfo& base = baseline_schedule();
    const double base_bytes = double(bytes[size_t(schedule_index(base.id))]);
    std::string ratios;
    for (size_t k = 0, shown = 0; k < all.size(); ++k) {
      if (all[k]->baseline) continue;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.3gx", double(bytes[k]) / base_bytes);
      ratios += std::string(shown == 0 ? "" : " and ") + all[k]->column + (shown == 0 ? " moves " : " ") + buf;
      ++shown;
    }
    std::printf("\n%s the bytes of %s here.\n", ratios.c_str(), base.device_title);
  }

  int execute() const {
    check_pipeline_flags(pipe);
    PipelineFlags pipeline = pipe;
    pipeline.heads = heads;
    pipeline.nq_flag = nq_opt->count() ? "--nq" : "--n";
    pipeline.nk_flag = nk_opt->count() ? "--nk" : "--n";
    const int64_t Nq = nq_opt->count() ? nq : n, Nk = nk_opt->count() ? nk : n;
    if (pipeline.on) return run_pipeline_explain(pipeline, Nq, Nk, d);
    const int64_t M_elems = parse_sram_size(M);
    AttentionOptions precision;
    precision.dtype = parse_dtype(excerpt(dtype));
    precision.p_dtype = parse_dtype(excerpt(p_dtype));
    validate_options(precision, 0);
    if (precision.dtype == Dtype::fp8)  // its closed forms: `run --dtype fp8`'s summary (docs/fp8.md)
      throw InputError("explain's table covers fp32, fp16 and bf16 for every schedule; FP8 traffic (" +
                       fp8_schedule_names() + ") is in `flashstep run --dtype fp8`'s summary");
    const int eb = dtype_bytes(precision.dtype);
    Tiling t = make_tiling(Nq, Nk, d, M_elems, br, bc);
    checked::in_range(heads, 1, 65535, "--heads");
    // decode's S in the table and the parallelism section: --splits, or the default for the
    // heads on this GPU's SMs (core/schedules/decode/decode.h)
    t.S = splits != 0 ? splits : default_splits(heads * t.Tr, t.Tc, int(find_gpu(gpu).sms));
    if (t.S < 1 || t.S > t.Tc)
      throw InputError("--splits " + std::to_string(t.S) + " is out of range 1..Tc = " + std::to_string(t.Tc));
    if (page_opt->count() && (page < 1 || page > Nk))
      throw InputError("--page-size " + std::to_string(page) + " is out of range 1..Nk = " + std::to_string(Nk));
    t.P = page_opt->count() ? page : 0;  // decode's column adds the block-table reads
    // One column per schedule (the registry's order), the baseline (standard attention) last.
    const auto& all = schedules();
    const size_t count = all.size();
    std::vector<TrafficForm> forms;
    for (const ScheduleInfo* si : all) forms.push_back(si->forward_traffic(Nq, Nk, d, t));
    const int64_t m_bytes = M_elems * 4;
    char m_size[48];  // whole KiB as such, under 1 KiB in bytes, else two decimals
    if (m_bytes % 1024 == 0) std::snprintf(m_size, sizeof m_size, "%lld KiB", (long long)(m_bytes / 1024));
    else if (m_bytes < 1024) std::snprintf(m_size, sizeof m_size, "%lld B", (long long)m_bytes);
    else std::snprintf(m_size, sizeof m_size, "%.2f KiB", m_bytes / 1024.0);
    std::printf("Nq = %lld, Nk = %lld, d = %lld, M = %lld elements (%s of float32)\n", (long long)Nq, (long long)Nk,
                (long long)d, (long long)M_elems, m_size);
    std::printf("Bc = ceil(M/4d) = %lld, Br = min(ceil(M/4d), d) = %lld%s; Tr = %lld, Tc = %lld\n",
                (long long)t.Bc, (long long)t.Br, t.overridden ? " (overridden)" : "",
                (long long)t.Tr, (long long)t.Tc);
    // p_dtype is a rounding point inside the chip: it changes the arithmetic, not the traffic.
    std::printf("precision: dtype %s (%d bytes per stored element; l, m, L in float32), p_dtype %s (%s)\n\n",
                dtype_name(precision.dtype), eb, dtype_name(precision.p_dtype),
                precision.p_dtype == Dtype::fp32 ? "P~_ij not rounded"
                                                 : "P~_ij rounded on chip before P~_ij V_j: no change in HBM bytes");
    std::printf("HBM traffic in elements         ");
    for (const ScheduleInfo* si : all) std::printf(" %16s", si->column);
    std::printf("\n");
    std::vector<int64_t> rd(count), wr(count), by(count);
    for (size_t k = 0; k < count; ++k) {
      rd[k] = forms[k].read_elems;
      wr[k] = forms[k].write_elems;
      by[k] = forms[k].read_bytes(eb) + forms[k].write_bytes(eb);
    }
    print_row("closed form, read", rd);
    print_row("closed form, write", wr);
    print_row("closed form, total bytes", by);
    // Theorem 2's orders: the tiled schedules' N^2 d^2 / M in the first column, the baseline's.
    std::printf("  %-30s", "Theorem 2 order");
    for (size_t k = 0; k < count; ++k) {
      if (k == 0) std::printf(" %16.4g", theorem2_flash(Nq, Nk, d, M_elems));
      else if (all[k]->baseline) std::printf(" %16.4g", theorem2_standard(Nq, Nk, d));
      else std::printf(" %16s", "");
    }
    std::printf("   (N^2 d^2 / M  vs  N d + N^2)\n");
    // The simulation is bounded: Tr Tc block pairs each cost the simulator a fixed overhead.
    const double work = double(Nq) * double(Nk) * double(d), pairs = double(t.Tr) * double(t.Tc);
    if (work <= kMaxExplainWork && pairs <= 1e6) {
      const bool same = print_simulation(Nq, Nk, M_elems, t, precision, forms);
      std::printf("  %-30s %16s\n", "simulated equals closed form", same ? "yes" : "NO");
    } else {
      std::printf("  simulated                      skipped (Nq*Nk*d = %.3g, Tr*Tc = %.3g: over %.2g or 1e6)\n",
                  work, pairs, kMaxExplainWork);
    }
    print_ratios(by);
    if (eb != 4) std::printf("\n(the backward below counts float32 storage, as its GPU kernels use)\n");
    print_explain_parallelism(t, heads, gpu, Nq, Nk, d, eb);  // app/explain_parallelism.cpp
    print_explain_backward(Nq, Nk, d, M_elems, t);
    return 0;
  }
};

}  // namespace

void add_explain_command(CLI::App& app, const SetAction& set_action) {
  add_command<ExplainCommand>(app, set_action, "explain",
                              "block sizes and HBM traffic: closed forms, Theorem 2, simulation");
}

}  // namespace flashstep
