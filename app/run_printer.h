// run's printed output: the step log (--steps) and the summary, taken from the trace alone.
#pragma once
#include "core/trace.h"

#include <cstddef>

namespace flashstep {

// A progress bar with an ETA on stderr when stderr is a terminal (core/progress.h calls it
// only for runs over about 2 s).
void show_progress_on_terminal();
// Step k of the log: label, (i, j), bytes, SRAM, FLOPs, the explanation and the step's values.
void print_step(const Trace& t, size_t k);
// The summary: schedule, problem, tiling, traffic against the closed form, DRAM through the L2
// model, peak SRAM, FLOPs, errors against float64 (and the backward's, when it ran).
void print_summary(const Trace& t, bool recorded);

}  // namespace flashstep
