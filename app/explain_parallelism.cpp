// flashstep explain, the parallelism section: how many thread blocks each schedule can run at
// once against the GPU's SM count, and what flash-decoding's splits cost in bytes. For one query
// row (decoding) fa2 starts heads x Tr blocks, a few of the SMs; decode starts S times as many.
#include "app/explain_parallelism.h"

#include "core/closed_form.h"
#include "core/decode.h"
#include "core/l2_cache.h"

#include <algorithm>
#include <cstdio>

namespace flashstep {

namespace {
void print_blocks(const char* name, const char* formula, int64_t blocks, int64_t sms, const char* note) {
  const int64_t busy = std::min(blocks, sms);
  std::printf("  %-8s %-22s %10lld blocks  %5.1f%% of the SMs busy (%lld idle)%s\n", name, formula,
              (long long)blocks, 100.0 * double(busy) / double(sms), (long long)(sms - busy), note);
}
}  // namespace

void print_explain_parallelism(int64_t nq, int64_t nk, int64_t d, const Tiling& t, int64_t heads,
                               const std::string& gpu, int64_t splits, int bytes_per_elem) {
  const GpuSpec& g = find_gpu(gpu);
  const int64_t sms = g.sms;
  const int64_t S = splits != 0 ? splits : default_splits(heads * t.Tr, t.Tc, int(sms));
  if (S < 1 || S > t.Tc)
    throw InputError("--splits " + std::to_string(S) + " is out of range 1..Tc = " + std::to_string(t.Tc));
  std::printf("\nParallelism on %s (%lld SMs), B x H = %lld head%s: thread blocks that can run at once\n", g.name,
              (long long)sms, (long long)heads, heads > 1 ? "s" : "");
  const int64_t per = heads * t.Tr;
  print_blocks("fa1", "B H Tr (per j)", per, sms, ", one launch per j: Tc in a row");
  print_blocks("fa2", "B H Tr", per, sms, "");
  char formula[64];
  std::snprintf(formula, sizeof formula, "B H Tr S (S = %lld)", (long long)S);
  print_blocks("decode", formula, per * S, sms, ", then the combine: B H Nq rows");
  std::printf("  default S: %s (core/decode.h): S = 1 when B H Tr fills 80%% of 2 x %lld slots (two blocks per\n"
              "  SM), else the smallest S whose last wave is within 85%% of the best wave efficiency, S <= min(Tc, 128)\n",
              splits != 0 ? "overridden by --splits; the heuristic" : "FlashAttention's num_splits heuristic",
              (long long)sms);
  const TrafficForm f2 = fa2_traffic(nq, nk, d, t.Tr), fd = decode_traffic(nq, nk, d, t.Tr, S);
  const int64_t b2 = f2.read_bytes(bytes_per_elem) + f2.write_bytes(bytes_per_elem);
  const int64_t bd = fd.read_bytes(bytes_per_elem) + fd.write_bytes(bytes_per_elem);
  std::printf("  bytes: decode %lld, fa2 %lld (closed forms): the partials and the combine add %lld bytes, %.2f%%\n",
              (long long)bd, (long long)b2, (long long)(bd - b2), 100.0 * double(bd - b2) / double(b2));
}

}  // namespace flashstep
