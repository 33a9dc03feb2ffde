// The app state's L2 parts: the editor's L2 fields (as `run --l2 --gpu --heads --ncu`) and
// loading a measurement file for the memory panel.
#include "app/gui/app_state.h"

#include "core/closed_form.h"

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

std::optional<L2Config> ProblemForm::l2_config() const {
  if (!l2) return std::nullopt;
  return l2_config_from_flags(l2_size, kGpuNames[std::clamp(gpu, 0, 1)], heads, true, ncu);
}

void ProblemForm::set_l2(const std::optional<L2Config>& c) {
  l2 = c.has_value();
  const L2Config d = c.value_or(L2Config{});
  gpu = d.gpu == kGpuNames[1] ? 1 : 0;
  heads = d.heads;
  ncu = d.ncu;
  // The size as the flag would take it: the GPU's own size shows as empty.
  const int64_t b = d.bytes;
  if (!c || b == find_gpu(d.gpu).l2_bytes) l2_size[0] = 0;
  else if (b % (int64_t(1) << 20) == 0) std::snprintf(l2_size, sizeof l2_size, "%lldMiB", (long long)(b >> 20));
  else if (b % 1024 == 0) std::snprintf(l2_size, sizeof l2_size, "%lldKiB", (long long)(b >> 10));
  else std::snprintf(l2_size, sizeof l2_size, "%lld", (long long)b);
}

void check_l2_cost(const ProblemSpec& s, const Tiling& t, const L2Config& l2) {
  const int bpe = dtype_bytes(s.options.dtype);
  double bytes = 0;  // every schedule's HBM bytes (unmasked: an upper bound with a mask)
  for (Schedule sc : kSchedules) {
    const TrafficForm f = schedule_traffic(sc, s.nq, s.nk, s.d, t.Tr, t.Tc);
    bytes += double(f.read_bytes(bpe)) + double(f.write_bytes(bpe));
  }
  const double ops = double(l2.heads) * bytes / L2Config::kLineBytes;
  if (ops > kMaxL2LineOps) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the L2 model would replay about %.3g cache lines for the three schedules (the app "
                  "allows %.3g, a few seconds): fewer heads or a smaller problem",
                  ops, kMaxL2LineOps);
    throw InputError(buf);
  }
}

void AppState::load_dram() {
  dram.error.clear();
  try {
    dram.data = load_dram_measurements(dram.path);
    dram.loaded = true;
  } catch (const InputError& e) {
    dram.error = e.what();  // what was loaded before stays
  }
}

}  // namespace flashstep::gui
