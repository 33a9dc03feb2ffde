// The trace positions the GPU's per-j snapshots line up with: core/trace_align.h (the CPU
// snapshots use them too), here under gpu:: for the GPU code and tests that name them so.
#pragma once
#include "core/trace_align.h"

namespace flashstep::gpu {
using flashstep::fa1_backward_steps_after_each_j;
using flashstep::fa1_steps_after_each_j;
}  // namespace flashstep::gpu
