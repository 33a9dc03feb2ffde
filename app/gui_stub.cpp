// Built when the desktop app is not (no GLFW/ImGui, or FLASHSTEP_GUI=OFF).
#include "app/commands.h"

#include <cstdio>

namespace flashstep {

void add_gui_command(CLI::App& app, const SetAction& set_action) {
  auto* g = app.add_subcommand("gui", "the desktop teaching app (not in this build)");
  g->allow_extras();
  g->callback([&set_action] {
    set_action([]() -> int {
      throw InputError("this build has no desktop app (configure with GLFW and imgui, "
                       "FLASHSTEP_GUI=ON); use the headless subcommands: lesson, run, explain");
    });
  });
}

bool gui_available_for_default() { return false; }
int run_gui_default() { return 2; }

}  // namespace flashstep
