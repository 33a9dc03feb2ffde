// run's printed output: the step log (--steps) and the summary, taken from the trace alone.
#pragma once
#include "core/trace.h"
#include "core/verify.h"

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
// Flushes standard output; if any of it could not be written (a full disk, /dev/full), throws
// InputError "writing standard output failed: ...". A command that prints its report and writes
// files calls it before committing them, so that a run whose report was lost writes no file.
void require_stdout_written();

// verify's lines (core/verify.h's results; the commands in app/cmd_verify.cpp and its GPU
// siblings): `lead` (the line's 11-character heading, "final      " or blanks), the check's
// name padded to 19 characters, O's and lse's abs and rel errors, and "ok" / "OVER" (or
// "(reported)" where the check is not judged).
void print_check(const char* lead, const ForwardCheck& c);
// Every float64 check, each line led by blanks; or the line saying the reference was skipped.
void print_float64_checks(const Float64Checks& c);

}  // namespace flashstep
