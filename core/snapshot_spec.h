#pragma once
// The ProblemSpec that makes a snapshot folder's problem again (compare regenerates a folder's
// inputs from it; the app's "Open snapshots" fills the problem editor with it).

#include "core/problem.h"
#include "core/snapshot.h"

namespace flashstep {

// Only what differs from the defaults: Br, Bc when they are not the paper's block sizes, tau
// when it is not 1/sqrt(d) (as float32), so that the editor shows "paper" and the default
// scale as such and the problem made from it is the folder's.
ProblemSpec snapshot_spec(const SnapshotProblem& p);

}  // namespace flashstep
