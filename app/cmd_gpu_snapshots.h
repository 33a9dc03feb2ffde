// flashstep gpu --snapshots DIR: the GPU's state after every j as a snapshot folder
// (core/snapshot.h), the counterpart of `run --snapshots` for `flashstep compare`.
#pragma once
#include "app/cli_backward.h"
#include "app/commands.h"

#include <string>

namespace flashstep {

// One head (2-D inputs). fa1: one launch per j, O, l, m copied back after each; fa2: variant
// 1's snapshot kernel; standard: the final state only. With --backward, dQ after every j for
// fa1 and fa2 (one backward launch per j), the final dQ only for standard.
int run_gpu_snapshots(const RunFlags& rf, int variant, const std::string& dir, const BackwardFlags& bf);

}  // namespace flashstep
