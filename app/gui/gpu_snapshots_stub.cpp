// Built without CUDA: the button says why it is disabled.
#include "app/gui/gpu_snapshots.h"

namespace flashstep::gui {

bool gpu_snapshots_available(std::string* why) {
  if (why) *why = "this build has no GPU backend (nvcc was not found at configure time): load a folder "
                  "made by `flashstep gpu --snapshots DIR` on a GPU machine instead";
  return false;
}

SnapshotSet gpu_snapshots(const Trace&) {
  throw InputError("this build has no GPU backend (nvcc was not found at configure time)");
}

}  // namespace flashstep::gui
