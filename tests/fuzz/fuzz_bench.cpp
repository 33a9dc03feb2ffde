// libFuzzer target: the bench file reader of `flashstep plot` and the app's Bench view
// (app/plot/bench_data.cpp), then every figure made from what it accepted. Any input must give
// figures or an InputError.
#include "app/plot/bench_data.h"
#include "app/plot/figures.h"
#include "core/types.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  try {
    const plot::BenchData b = plot::parse_bench_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    for (plot::FigureKind k : plot::kFigureKinds)
      for (int64_t d : b.dims.empty() ? std::vector<int64_t>{0} : b.dims) plot::make_figure(b, k, d);
  } catch (const InputError&) {
  }
  return 0;
}
