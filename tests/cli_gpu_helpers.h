// How the command-line tests judge verify, gpu and bench-gpu (built into flashstep_tests only:
// FLASHSTEP_BIN_HAS_CUDA says whether the flashstep program has the CUDA backend).
//   Bad input: its own one-line error, exit 2, on every build: the checks run before any GPU is
//   looked for, in the build without CUDA too (app/gpu_requests.cpp).
//   A good request: in a build without CUDA, the stub's one line "this build has no GPU
//   backend"; in a CUDA build, a real run, unless no GPU is usable here (one line saying so),
//   which FLASHSTEP_REQUIRE_GPU=1 (set on the GPU machine) turns into a failure.
#pragma once
#include "tests/cli_helpers.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

namespace fstest {

inline bool gpu_required() {
  const char* env = std::getenv("FLASHSTEP_REQUIRE_GPU");
  return env && std::string(env) == "1";
}

// Checks the answer to a good request when no run could happen; returns whether the command
// ran on a GPU (then the caller checks its result).
inline bool gpu_command_ran(int rc, const std::string& out) {
  INFO(out);
  if (!FLASHSTEP_BIN_HAS_CUDA) {
    CHECK(rc == 2);
    CHECK(one_error_line(out));
    CHECK(out.find("this build has no GPU backend") != std::string::npos);
    return false;
  }
  if (rc == 2 && !gpu_required() && out.find("CUDA GPU") != std::string::npos) {
    CHECK(one_error_line(out));
    return false;
  }
  return true;
}

}  // namespace fstest
