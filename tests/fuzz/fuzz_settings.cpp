// libFuzzer target: the app's display settings file (app/gui/settings.cpp). Any input must
// give settings within their ranges or an InputError.
#include "app/gui/settings.h"
#include "core/types.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    const gui::DisplaySettings d = gui::parse_settings(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    if (!(d.font_scale >= gui::kMinFontScale && d.font_scale <= gui::kMaxFontScale)) std::abort();
  } catch (const InputError&) {
  }
  return 0;
}
