// Every problem with what the user gave us (sizes, files, options, environment) is an
// InputError: the command line prints its message as one `flashstep: error:` line and exits
// with 2. Apart from core/types.h so that headers with no other use for core (gpu/warmup_env.h)
// can throw it without Eigen.
#pragma once
#include <stdexcept>

namespace flashstep {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace flashstep
