// Every problem with what the user gave us (sizes, files, options, environment) is an
// InputError: the command line prints its message as one `flashstep: error:` line and exits
// with 2. Apart from core/types.h so that headers with no other use for core (gpu/warmup_env.h)
// can throw it without Eigen.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace flashstep {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value as an error line quotes it: six significant digits ("1e+300", "70000"), where
// std::to_string would print 1e300 as 301 digits and 1e-9 as 0.000000.
inline std::string error_value(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace flashstep
