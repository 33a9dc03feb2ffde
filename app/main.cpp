// flashstep: an educational step-through simulator of FlashAttention.
// main() only dispatches; each subcommand lives with the part of the project it belongs to.
#include "app/commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

// Standard output may fail (a full disk, /dev/full, a closed pipe): that is an error too, not
// exit code 0 with the output lost.
static int flush_stdout(int rc) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "flashstep: error: writing standard output failed: %s\n",
                 errno ? std::strerror(errno) : "write error");
    return rc != 0 ? rc : 2;
  }
  return rc;
}

int main(int argc, char** argv) {
  using namespace flashstep;
  CLI::App app{"flashstep: step through FlashAttention (Dao et al. 2022) one pseudocode line "
               "at a time, with simulated HBM/SRAM traffic"};
  app.require_subcommand(0, 1);
  Action action;
  SetAction set_action = [&](Action f) { action = std::move(f); };
  add_core_commands(app, set_action);
  add_bench_cpu_command(app, set_action);
  add_gui_command(app, set_action);
  add_plot_command(app, set_action);
  add_compare_command(app, set_action);
  add_learn_command(app, set_action);
  add_verify_command(app, set_action);
  add_gpu_run_command(app, set_action);
  add_bench_gpu_command(app, set_action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return flush_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return flush_stdout(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "flashstep: error: %s\n", e.what());
    return 2;
  }
  try {
    if (!action) {
      if (argc == 1 && gui_available_for_default()) return run_gui_default();
      std::fputs(app.help().c_str(), stdout);
      return flush_stdout(argc == 1 ? 0 : 2);
    }
    return flush_stdout(action());
  } catch (const InputError& e) {
    std::fprintf(stderr, "flashstep: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "flashstep: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashstep: internal error: %s\n", e.what());
    return 4;
  }
  return 0;
}
