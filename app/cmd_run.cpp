// flashstep run: a schedule on the CPU engine; its step log or summary, and the files asked for
// (trace JSON, CSV, Chrome trace, O, lse, the gradients, a snapshot folder).
#include "app/cli_backward.h"
#include "app/commands.h"
#include "app/flag_checks.h"
#include "app/run_printer.h"
#include "core/checked.h"
#include "core/export.h"
#include "core/input_files.h"
#include "core/l2_cache.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/schedule_registry.h"
#include "core/snapshot.h"
#include "core/work.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace flashstep {

namespace {

struct RunCommand {
  RunFlags rf;
  BackwardFlags bf;
  bool steps = false, summary = false;
  std::string out_o, out_lse, trace_json, trace_csv, trace_chrome, snapshots;
  int64_t max_trace_mib = 1024;
  double max_gflop = kDefaultMaxGflop;
  std::string l2_size, l2_gpu;
  int64_t l2_heads = 1;
  bool l2_ncu = false;
  CLI::Option* heads_opt = nullptr;

  void add_flags(CLI::App* run) {
    add_run_flags(run, rf);
    auto* so = run->add_flag("--steps", steps, "print every step");
    run->add_flag("--summary", summary, "print only the summary (default)")->excludes(so);
    run->add_option("--out-o", out_o, "write O (Nq x d, float32) to a .npy file");
    run->add_option("--out-lse", out_lse, "write lse = m + log l (Nq, float32) to a .npy file");
    run->add_option("--trace", trace_json, "write the trace as JSON");
    run->add_option("--csv", trace_csv, "write the trace as CSV, one row per step");
    run->add_option("--chrome", trace_chrome, "write a Chrome trace-event file (Perfetto, chrome://tracing)");
    run->add_option("--snapshots", snapshots, "write the state after every j (fa1: O, l, m in HBM; fa2: O_i, l_i, m_i "
                                              "on chip; standard: final only) to a snapshot folder for compare");
    add_backward_flags(run, bf);
    run->add_option("--max-trace-mib", max_trace_mib, "refuse to record a trace larger than this (default 1024)")
        ->check(whole_number("--max-trace-mib"));
    run->add_option("--max-gflop", max_gflop, "refuse a run estimated at more simulated work than this (default 1000)")
        ->check(real_number("--max-gflop"));
    run->add_option("--l2", l2_size, "L2 cache between HBM and SRAM in bytes, or KiB/MiB (e.g. 50MiB): adds DRAM bytes (docs/l2-model.md)");
    run->add_option("--gpu", l2_gpu, "GPU whose SMs and shared memory set the L2 model's concurrency: h200 or a100 (alone: its L2 size)");
    heads_opt = run->add_option("--heads", l2_heads, "heads (B x H) the GPU runs together, sharing the L2 (default 1)");
    run->add_flag("--ncu", l2_ncu, "with the L2 model, also count DRAM bytes as Nsight Compute does (L2 flushed before each kernel)");
  }

  // The simulated work of the run: the backward does about 2.5 times the forward's FLOPs over
  // the same blocks twice more; the L2 model replays every head's accesses.
  WorkEstimate work(int64_t nq, int64_t nk, int64_t d, const Tiling& t, Schedule s, int bpe,
                    const std::optional<L2Config>& l2) const {
    WorkEstimate w = estimate_work(nq, nk, d, t, s, bpe);
    if (bf.backward) add_backward_work(w);
    if (l2) add_l2_replay_work(w, s, nq, nk, d, t, bpe, l2->heads);
    return w;
  }

  // The output targets, checked before the work so that a bad path fails at once.
  void plan_outputs(const ProblemSpec& spec, OutputFiles& out) const {
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
  }

  // Serialises everything for out's all-or-nothing commit, the snapshot folder included
  // (core/output_files.h); nothing is written yet.
  void stage_outputs(const Trace& tr, const Mat* dO, OutputFiles& out, OutputFolder* folder) const {
    if (!trace_json.empty()) out.bytes(trace_json) = trace_to_json(tr).dump(1) + "\n";
    if (!trace_csv.empty()) out.bytes(trace_csv) = trace_to_csv(tr);
    if (!trace_chrome.empty()) out.bytes(trace_chrome) = trace_to_chrome(tr).dump() + "\n";
    if (!out_o.empty()) out.bytes(out_o) = npy_bytes(tr.O.data(), {int64_t(tr.O.rows()), int64_t(tr.O.cols())});
    if (!out_lse.empty()) out.bytes(out_lse) = npy_bytes(tr.lse.data(), {int64_t(tr.lse.size())});
    add_backward_outputs(bf, tr, out);
    if (folder) stage_snapshots(*folder, cpu_snapshots(tr, dO));
  }

  int execute() const {
    checked::in_range(max_trace_mib, 1, kMaxTraceMib, "--max-trace-mib");
    if (!(max_gflop > 0 && max_gflop <= kMaxWorkGflop))
      throw InputError("--max-gflop must be in (0, 1e9] (got " + error_value(max_gflop) + ")");
    const ProblemSpec spec = rf.to_spec();
    const WorkLimits limits{max_gflop};
    RunOptions opt;
    opt.l2 = l2_config_from_flags(l2_size, l2_gpu, l2_heads, heads_opt->count() > 0, l2_ncu);
    if (spec.options.dtype == Dtype::fp8 && (opt.l2 || !snapshots.empty()))  // docs/fp8.md
      throw InputError("--dtype fp8 runs without the L2 model and snapshot folders (they know fp32, fp16, bf16): "
                       "drop --l2/--gpu/--snapshots");
    if (spec.q_path.empty()) {  // generated inputs: refuse before generating them
      validate_sizes(spec);
      const Tiling t0 = spec_tiling(spec);  // with decode's S: its partials count towards the HBM
      check_work(work(spec.nq, spec.nk, spec.d, t0, spec.schedule, dtype_bytes(spec.options.dtype), opt.l2), limits);
    }
    OutputFiles out;
    std::unique_ptr<OutputFolder> folder;  // --snapshots: committed with the files
    if (!snapshots.empty()) {
      folder = snapshot_folder(snapshots);
      out.add_folder(*folder);
    }
    plan_outputs(spec, out);  // the folder's checks too
    const Problem p = make_problem(spec);
    const Tiling t = make_tiling(p);
    check_work(work(p.nq, p.nk, p.d, t, p.schedule, p.bytes_per_elem, opt.l2), limits);
    // fa1's and fa2's per-j states come from the recorded trace (core/snapshot.h); standard
    // attention's snapshot folder holds the final state only.
    opt.record = steps || !trace_json.empty() || !trace_csv.empty() || !trace_chrome.empty() ||
                 (!snapshots.empty() && snapshots_need_record(p));
    opt.max_trace_bytes = size_t(max_trace_mib) << 20;
    opt.accuracy = opt.accuracy_companion = true;  // the summary's lines against float64
    Mat dO;
    if (bf.backward) {  // dO from --do or the seed, checked against p's shape
      dO = backward_grad_output(bf, p, rf.pattern);
      opt.dO = &dO;
    }
    if (!snapshots.empty()) check_snapshot_size(snapshot_problem(p, t, opt.dO));
    show_progress_on_terminal();
    const Trace tr = run_problem(p, t, opt);
    check_result_finite(tr);
    stage_outputs(tr, opt.dO, out, folder.get());
    // The report between the files' writing and their renaming: a file that cannot be written
    // stops the run before any report, and a report that cannot be (a full disk, a closed pipe)
    // leaves none of the files.
    out.commit([&] {
      if (steps)
        for (size_t k = 0; k < tr.steps.size(); ++k) print_step(tr, k);
      print_summary(tr, opt.record);
      require_stdout_written();
    });
    if (!snapshots.empty()) std::printf("snapshots  written to %s\n", snapshots.c_str());
    return 0;
  }
};

}  // namespace

void add_run_command(CLI::App& app, const SetAction& set_action) {
  add_command<RunCommand>(app, set_action, "run", "run a schedule and print its step log or a summary");
}

}  // namespace flashstep
