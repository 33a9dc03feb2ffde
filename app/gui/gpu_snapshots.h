// The compare view's "Run on this GPU": the snapshots of the app's problem made in-process by
// the CUDA backend (gpu/backend.h). gpu_snapshots_cuda.cpp when the build has CUDA,
// gpu_snapshots_stub.cpp otherwise; app/ is the only layer that sees both core/ and gpu/.
#pragma once
#include "core/snapshot.h"

#include <string>

namespace flashstep::gui {

// Whether this build has the GPU backend and a GPU can be used; if not, `why` says why.
bool gpu_snapshots_available(std::string* why);

// The trace's problem on the GPU, with its Br, Bc: fa1's O, l, m in HBM after every j; fa2's
// on-chip O_i, l_i, m_i after every j (variant 1's snapshot kernel); standard the final O and
// lse only. Throws InputError (no GPU, sizes the kernels cannot take, ...).
SnapshotSet gpu_snapshots(const Trace& tr);

}  // namespace flashstep::gui
