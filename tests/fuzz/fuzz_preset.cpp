// libFuzzer target: the preset (JSON) loader and the size validation it feeds. Any input must
// give a preset or an InputError.
#include "app/gui/preset.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    const gui::Preset p = gui::parse_preset(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    validate_sizes(p.spec);
    make_tiling(p.spec.nq, p.spec.nk, p.spec.d, p.spec.M, p.spec.br, p.spec.bc);
  } catch (const InputError&) {
  }
  return 0;
}
