// libFuzzer target: the command line of `flashstep run` (one argument per line), through to the
// validated sizes and the work estimate, without running anything. Any input must parse or
// give a CLI11 error or an InputError.
#include "app/commands.h"
#include "core/work.h"

#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  std::vector<std::string> args;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line);) args.push_back(line);
  CLI::App app{"fuzz"};
  RunFlags flags;
  add_run_flags(&app, flags);
  std::vector<const char*> argv{"flashstep"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(int(argv.size()), const_cast<char**>(argv.data()));
    const ProblemSpec s = flags.to_spec();
    if (!s.q_path.empty()) return 0;  // files are the npy target's business
    validate_sizes(s);
    const Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
    check_work(estimate_work(s.nq, s.nk, s.d, t, s.schedule, dtype_bytes(s.options.dtype)), WorkLimits{});
  } catch (const CLI::Error&) {
  } catch (const InputError&) {
  }
  return 0;
}
