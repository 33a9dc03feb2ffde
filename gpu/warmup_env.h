// FLASHSTEP_WARMUP_MS, the GPU time every timed measurement's warm-up runs take at least
// (gpu/common.cuh's median_ms; gpu/tools/sdpa_timing.py reads it the same way). Plain C++, so
// that the CPU tests check the parsing.
#pragma once
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/input_error.h"

namespace flashstep::gpu {

constexpr double kDefaultWarmupMs = 25.0;

// The value of FLASHSTEP_WARMUP_MS (nullptr: unset, the default): milliseconds >= 0 and finite;
// anything else is an InputError, one line naming the variable and the value.
inline double parse_warmup_ms(const char* text) {
  if (!text) return kDefaultWarmupMs;
  char* end = nullptr;
  const double ms = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(ms) || ms < 0.0)
    throw InputError(std::string("FLASHSTEP_WARMUP_MS must be a number of milliseconds >= 0, not '") + text + "'");
  return ms;
}

}  // namespace flashstep::gpu
