// The web page has no CUDA: the compare view's "Run on this GPU" says so, and points to what
// the page can compare instead: a folder made on a GPU machine, uploaded with the page's button.
#include "app/gui/gpu_snapshots.h"

namespace flashstep::gui {

namespace {
const char* kNoGpu = "no GPU run in a web page (a browser cannot reach CUDA): make a folder with "
                     "`flashstep gpu --snapshots DIR` on a GPU machine and load it with the page's "
                     "\"Upload snapshot folder\" button (top right)";
}

bool gpu_snapshots_available(std::string* why) {
  if (why) *why = kNoGpu;
  return false;
}

SnapshotSet gpu_snapshots(const Trace&) { throw InputError(kNoGpu); }

}  // namespace flashstep::gui
