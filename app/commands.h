// The flashstep program's subcommands. Each part of the project registers its own; a part
// that is not built (no GUI, no CUDA) registers a stub that says so.
#pragma once
#include "core/problem.h"
#include "core/run.h"
#include "core/schedule_registry.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

namespace flashstep {

// The run flags shared by run, verify and gpu (--n, --nq, --nk, --d, --M, --br, --bc, ...).
struct RunFlags {
  int64_t n = 0, nq = 0, nk = 0, d = 16;
  std::string M = "1024";
  int64_t br = 0, bc = 0;
  double scale = 0;
  std::string schedule = schedule_name(kDefaultSchedule), pattern = "random";
  uint64_t seed = 1;
  std::string q, k, v;
  AttentionOptions options;  // --causal, --kv-len, --dropout bind to it directly
  std::string window;        // "LEFT,RIGHT", parsed into options.mask by to_spec
  std::string dtype = "fp32";
  std::string p_dtype = "fp32";  // --p-dtype, parsed into options.p_dtype by to_spec
  std::string fp8_scale;         // --fp8-scale (with --dtype fp8), parsed into options.fp8_scale
  int64_t splits = 0;            // --splits (decode's S); 0 = the default
  int64_t page_size = 0;         // --page-size (decode's paged KV cache), when page_opt counts
  CLI::Option* page_opt = nullptr;
  CLI::Option* pattern_opt = nullptr;  // --pattern, refused beside --q/--k/--v
  CLI::Option *scale_opt = nullptr, *d_opt = nullptr, *n_opt = nullptr, *nq_opt = nullptr,
              *nk_opt = nullptr;
  ProblemSpec to_spec() const;  // throws InputError on conflicting flags
};
void add_run_flags(CLI::App* cmd, RunFlags& f);  // app/cli.cpp
// --dtype fp8 is the CPU engine's (docs/fp8.md), and on the GPU only flash-decoding's (verify
// --schedule decode, bench-gpu --decode): an InputError if another GPU subcommand or path (gpu,
// the tensor cores, the backward) was given it, naming what exists. app/cli.cpp; main() calls it
// after parsing.
void refuse_fp8_on_gpu(const CLI::App& app);

// A subcommand's work: returns the exit code. It may throw InputError, which main() prints
// as one line ("flashstep: error: ...") with exit code 2.
using Action = std::function<int()>;
using SetAction = std::function<void(Action)>;
// Registers subcommand `name` of `parent` run by a Command struct (add_flags(CLI::App*), int
// execute()): the callback CLI11 keeps owns the Command, so the flags bound to its fields live
// as long as the App. Returns the subcommand.
template <class Command>
CLI::App* add_command(CLI::App& parent, const SetAction& set_action, const char* name, const char* help) {
  CLI::App* sub = parent.add_subcommand(name, help);
  auto cmd = std::make_shared<Command>();
  cmd->add_flags(sub);
  sub->callback([&set_action, cmd] { set_action([cmd] { return cmd->execute(); }); });
  return sub;
}
void add_lesson_command(CLI::App& app, const SetAction& set_action);     // app/cmd_lesson.cpp
void add_run_command(CLI::App& app, const SetAction& set_action);        // app/cmd_run.cpp
void add_explain_command(CLI::App& app, const SetAction& set_action);    // app/cmd_explain.cpp
void add_bench_cpu_command(CLI::App& app, const SetAction& set_action);  // app/bench_cpu.cpp
void add_gui_command(CLI::App& app, const SetAction& set_action);        // app/gui/
void add_plot_command(CLI::App& app, const SetAction& set_action);       // app/plot/cmd_plot.cpp
void add_compare_command(CLI::App& app, const SetAction& set_action);    // app/cmd_compare.cpp
void add_learn_command(CLI::App& app, const SetAction& set_action);      // app/course/cmd_learn.cpp
// The GPU subcommands (verify, gpu, bench-gpu) on top of gpu/backend.h; app/gpu_stub.cpp
// registers all three when the build has no CUDA backend.
// Help of verify's and gpu's --variant: the float32 kernels' variants (gpu/backend.h,
// gpu/backward_tile.cuh); verify adds the tensor-core ladder's (gpu/fa2_tc.cu).
inline const char* const kFloat32VariantHelp =
    "kernel variant, 0 automatic (default). Float32 forward (fa1, fa2): 1 plain, 2 register-tiled; "
    "with --backward: 1 plain, 2 register-tiled, 3 register-tiled in less shared memory";
void add_verify_command(CLI::App& app, const SetAction& set_action);     // app/cmd_verify.cpp
void add_gpu_run_command(CLI::App& app, const SetAction& set_action);    // app/cmd_gpu_run.cpp
void add_bench_gpu_command(CLI::App& app, const SetAction& set_action);  // app/cmd_bench_gpu.cpp
// Whether `flashstep` with no arguments should open the window (a display is present and the
// app was built). Defined next to add_gui_command.
bool gui_available_for_default();
int run_gui_default();

}  // namespace flashstep
