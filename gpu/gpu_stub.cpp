// Built when nvcc was not found: the GPU subcommands exist and say this build has none.
#include "app/commands.h"

namespace flashstep {

void add_gpu_commands(CLI::App& app, const SetAction& set_action) {
  for (const char* name : {"verify", "gpu", "bench-gpu"}) {
    auto* c = app.add_subcommand(name, std::string(name) + " (needs the CUDA backend; not in this build)");
    c->allow_extras();
    c->callback([&set_action] {
      set_action([]() -> int {
        throw InputError("this build has no GPU backend (nvcc was not found at configure time)");
      });
    });
  }
}

}  // namespace flashstep
