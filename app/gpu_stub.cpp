// Built when nvcc was not found: the GPU subcommands exist with their flags, check a request
// exactly as the real ones do (app/gpu_requests.cpp), and then say this build has no GPU backend.
#include "app/commands.h"
#include "app/gpu_requests.h"

namespace flashstep {

namespace {

const char* const kNoBackend = "this build has no GPU backend (nvcc was not found at configure time)";

std::string stub_description(const char* name) { return std::string(name) + " (needs the CUDA backend; not in this build)"; }

}  // namespace

void add_verify_command(CLI::App& app, const SetAction& set_action) {
  static VerifyRequest r;
  add_verify_subcommand(app, r, stub_description("verify"))->callback([&set_action] {
    set_action([]() -> int {
      check_verify_request(r);
      throw InputError(kNoBackend);
    });
  });
}

void add_gpu_run_command(CLI::App& app, const SetAction& set_action) {
  static GpuRequest r;
  add_gpu_subcommand(app, r, stub_description("gpu"))->callback([&set_action] {
    set_action([]() -> int {
      check_gpu_request(r);
      throw InputError(kNoBackend);
    });
  });
}

void add_bench_gpu_command(CLI::App& app, const SetAction& set_action) {
  static BenchGpuRequest r;
  add_bench_gpu_subcommand(app, r, stub_description("bench-gpu"))->callback([&set_action] {
    set_action([]() -> int {
      check_bench_gpu_request(r);
      throw InputError(kNoBackend);
    });
  });
}

}  // namespace flashstep
