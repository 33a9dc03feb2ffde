#include "core/progress.h"

#include <chrono>

namespace flashstep::progress {

namespace {
using Clock = std::chrono::steady_clock;
Sink g_sink = nullptr;
double g_delay = 2.0, g_last_report = 0;
int64_t g_total = 0;
bool g_shown = false;
Clock::time_point g_start;
double elapsed() { return std::chrono::duration<double>(Clock::now() - g_start).count(); }
}  // namespace

int64_t detail::g_ticks = 0;

void set_sink(Sink sink, double delay_s) {
  g_sink = sink;
  g_delay = delay_s;
}

void begin(int64_t total_ticks) {
  g_total = total_ticks > 0 ? total_ticks : 1;
  detail::g_ticks = 0;
  g_shown = false;
  g_last_report = 0;
  g_start = Clock::now();
}

void detail::report() {
  if (!g_sink) return;
  const double t = elapsed();
  if (t < g_delay || t - g_last_report < 0.2) return;
  g_last_report = t;
  g_shown = true;
  const double f = double(g_ticks) / double(g_total);
  g_sink(f < 1 ? f : 1, t, false);
}

void end() {
  if (g_sink && g_shown) g_sink(1, elapsed(), true);
  g_shown = false;
}

}  // namespace flashstep::progress
