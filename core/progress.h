// Progress of a long run, for a progress bar. The schedules tick once per block pair (or row
// block); a sink, installed by the program when stderr is a terminal, is called at most a few
// times a second once the run has taken longer than `delay_s`. Core never prints.
#pragma once
#include <cstdint>

namespace flashstep::progress {

// fraction done in [0, 1], seconds since begin(); done = true once at the end.
using Sink = void (*)(double fraction, double elapsed_s, bool done);
void set_sink(Sink sink, double delay_s = 2.0);

void begin(int64_t total_ticks);
void end();

namespace detail {
extern int64_t g_ticks;  // since begin(); checked every 256 ticks
void report();
}  // namespace detail

inline void tick() {
  if ((++detail::g_ticks & 255) == 0) detail::report();
}

}  // namespace flashstep::progress
