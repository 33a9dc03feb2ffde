// libFuzzer target: the measured-DRAM file of the memory panel (tools/device/ncu_dram.sh's JSON, read by
// app/gui/l2_view.cpp). Any input must give measurements or an InputError.
#include "app/gui/l2_view.h"
#include "core/types.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    const gui::DramMeasurements m =
        gui::parse_dram_measurements(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    if (m.points.empty()) std::abort();  // accepted means at least one measured point
  } catch (const InputError&) {
  }
  return 0;
}
