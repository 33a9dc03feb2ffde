#include "app/gui/bench_state.h"

#include "app/gui/text_field.h"
#include "core/types.h"

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

bool BenchState::load(const std::string& file) {
  try {
    data = plot::load_bench(file);
  } catch (const InputError& e) {
    error = e.what();
    return false;
  }
  set_field(path, file, "--bench");
  loaded = true;
  error.clear();
  select(figure, d);
  return true;
}

void BenchState::select(plot::FigureKind k, int64_t want_d) {
  figure = k;
  const std::vector<int64_t>& dims = data.dims;
  d = std::find(dims.begin(), dims.end(), want_d) != dims.end() ? want_d : dims.empty() ? 0 : dims.front();
  if (loaded) shown = plot::make_figure(data, figure, d);
}

}  // namespace flashstep::gui
