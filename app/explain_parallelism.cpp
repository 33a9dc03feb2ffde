// flashstep explain, the parallelism section: how many thread blocks each tiled schedule can
// run at once against the GPU's SM count, and what flash-decoding's splits cost in bytes. For
// one query row (decoding) fa2 starts heads x Tr blocks, a few of the SMs; decode starts S times
// as many.
#include "app/explain_parallelism.h"

#include "core/closed_form.h"
#include "core/schedules/decode/decode.h"
#include "core/l2_cache.h"
#include "core/schedule_registry.h"

#include <algorithm>
#include <cstdio>

namespace flashstep {

void print_explain_parallelism(const Tiling& t, int64_t heads, const std::string& gpu, int64_t nq, int64_t nk,
                               int64_t d, int bytes_per_elem) {
  const GpuSpec& g = find_gpu(gpu);
  const int64_t sms = g.sms;
  std::printf("\nParallelism on %s (%lld SMs), B x H = %lld head%s: thread blocks one launch can run at once\n",
              g.name, (long long)sms, (long long)heads, heads > 1 ? "s" : "");
  for (const ScheduleInfo* si : schedules()) {
    if (!si->tiled) continue;  // standard attention is matrix products, not one block per tile
    const bool split = schedule_splits_kv(si->id);
    const int64_t blocks = heads * t.Tr * (split ? t.S : 1), busy = std::min(blocks, sms);
    char formula[64];
    if (split) std::snprintf(formula, sizeof formula, "B H Tr S (S = %lld)", (long long)t.S);
    else std::snprintf(formula, sizeof formula, "B H Tr");
    std::printf("  %-16s %-20s %10lld blocks  %5.1f%% of the SMs busy (%lld idle)\n", si->column, formula,
                (long long)blocks, 100.0 * double(busy) / double(sms), (long long)(sms - busy));
    if (split) {
      const ScheduleInfo& c = schedule_info(si->contrast);
      const TrafficForm a = si->forward_traffic(nq, nk, d, t), b = c.forward_traffic(nq, nk, d, t);
      const int64_t ba = a.read_bytes(bytes_per_elem) + a.write_bytes(bytes_per_elem);
      const int64_t bb = b.read_bytes(bytes_per_elem) + b.write_bytes(bytes_per_elem);
      std::printf("  %-16s the partials and the combine add %lld bytes to %s's %lld (%.2f%%)\n", "", (long long)(ba - bb),
                  c.name, (long long)bb, 100.0 * double(ba - bb) / double(bb));
    }
  }
  std::printf("  default S (FlashAttention's num_splits heuristic, core/schedules/decode/decode.h): 1 when B H Tr\n"
              "  fills 80%% of 2 x %lld slots (two blocks per SM), else the smallest S whose last wave is within 85%%\n"
              "  of the best wave efficiency, S <= min(Tc, 128); --splits overrides it\n", (long long)sms);
}

}  // namespace flashstep
