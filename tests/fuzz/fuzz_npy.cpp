// libFuzzer target: the .npy reader on arbitrary bytes. Any input must give an array or an
// InputError; a crash, a sanitizer finding or another exception is a bug.
#include "core/npy.h"

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/flashstep_fuzz_npy_" + std::to_string(::getpid()) + ".npy";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const flashstep::Mat m = flashstep::read_npy_matrix(path);
    if (m.size() == 0) __builtin_trap();  // an empty matrix must have been refused
  } catch (const flashstep::InputError&) {
  }
  std::remove(path.c_str());
  return 0;
}
