// libFuzzer target: the app's script syntax (`gui --script`, the web page's links;
// app/gui/script.h). Any text must give commands or an InputError; every command it gives is a
// known action with no control character in it, so that nothing of the text is dropped.
#include "app/gui/script.h"
#include "core/types.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    for (const gui::ScriptCommand& c : gui::parse_script(std::string(reinterpret_cast<const char*>(data), size))) {
      if (c.verb.empty()) std::abort();
      for (const std::string& a : c.args)
        for (char ch : a)
          if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') std::abort();
    }
  } catch (const InputError&) {
  }
  return 0;
}
