// Built when nvcc was not found: the GPU subcommands exist and say this build has none.
#include "app/commands.h"

namespace flashstep {

static void add_stub(CLI::App& app, const SetAction& set_action, const char* name) {
  auto* c = app.add_subcommand(name, std::string(name) + " (needs the CUDA backend; not in this build)");
  c->allow_extras();
  c->callback([&set_action] {
    set_action([]() -> int {
      throw InputError("this build has no GPU backend (nvcc was not found at configure time)");
    });
  });
}

void add_verify_command(CLI::App& app, const SetAction& set_action) { add_stub(app, set_action, "verify"); }
void add_gpu_run_command(CLI::App& app, const SetAction& set_action) { add_stub(app, set_action, "gpu"); }
void add_bench_gpu_command(CLI::App& app, const SetAction& set_action) { add_stub(app, set_action, "bench-gpu"); }

}  // namespace flashstep
