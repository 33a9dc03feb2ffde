// Built when Dear ImGui or stb is missing (`flashstep plot` draws with ImGui's draw lists).
#include "app/commands.h"

namespace flashstep {

void add_plot_command(CLI::App& app, const SetAction& set_action) {
  auto* p = app.add_subcommand("plot", "draw a bench-gpu --json file's figures to a PNG (not in this build)");
  p->allow_extras();
  p->callback([&set_action] {
    set_action([]() -> int {
      throw InputError("this build has no plot (configure with libimgui-dev and libstb-dev installed)");
    });
  });
}

}  // namespace flashstep
