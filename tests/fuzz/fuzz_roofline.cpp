// libFuzzer target: the bench file as `flashstep plot --figure roofline` reads it
// (plot::parse_roofline_bench: every bench file's rules, then the fields the roofline takes),
// then the measured points taken from what it accepted (course::add_measured) and the figure.
// Any input must give a figure or an InputError; every point it gives must be finite and positive.
#include "app/course/roofline.h"
#include "app/plot/bench_data.h"
#include "core/types.h"

#include <cmath>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    const nlohmann::json j =
        plot::parse_roofline_bench(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    // The simulated kernels once (a small N: their numbers do not matter here), then each
    // input's measured points on a copy, as `plot --figure roofline` adds them.
    static const course::Roofline base[2] = {course::simulate_roofline(128, 64, 16384),
                                             course::simulate_roofline(128, 128, 16384)};
    for (const course::Roofline& b : base) {
      course::Roofline r = b;
      course::add_measured(r, j, "fuzz.json");
      for (const course::MeasuredPoint& p : r.measured)
        if (!(std::isfinite(p.intensity) && p.intensity > 0 && std::isfinite(p.tflops) && p.tflops > 0)) std::abort();
      course::roofline_figure(r);
    }
  } catch (const InputError&) {
  }
  return 0;
}
