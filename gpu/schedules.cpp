// One entry per schedule with GPU kernels: adapters from the kernels' own options to the
// common signatures of gpu/schedules.h.
#include "gpu/schedules.h"

#include "core/schedule_registry.h"
#include "gpu/decode.h"

namespace flashstep::gpu {

namespace {

// Fa1Options and Fa2Options have the same three fields as ForwardOptions.
template <class Options>
Options options_of(const ForwardOptions& o) {
  Options f;
  f.variant = o.variant;
  f.snapshots = o.snapshots;
  f.features = o.features;
  return f;
}

Result fa1_fwd(const float* Q, const float* K, const float* V, const Shape& s, float scale, const Tiling& t,
               const ForwardOptions& o) {
  return fa1_forward(Q, K, V, s, scale, t, options_of<Fa1Options>(o));
}

Result fa2_fwd(const float* Q, const float* K, const float* V, const Shape& s, float scale, const Tiling& t,
               const ForwardOptions& o) {
  return fa2_forward(Q, K, V, s, scale, t, options_of<Fa2Options>(o));
}

Result standard_fwd(const float* Q, const float* K, const float* V, const Shape& s, float scale, const Tiling&,
                    const ForwardOptions& o) {
  return standard_forward(Q, K, V, s, scale, o.features);
}

BackwardResult standard_bwd(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                            float scale, const Tiling&, const BackwardOptions& o) {
  return standard_backward(Q, K, V, dO, s, scale, o.features);
}

BenchTiming fa1_bench(const Shape& s, float scale, const Tiling& t, int variant, const Features&, int warmup, int reps,
                      uint64_t seed) {
  return bench_fa1(s, scale, t, variant, warmup, reps, seed);
}

BenchTiming fa2_bench(const Shape& s, float scale, const Tiling& t, int variant, const Features& f, int warmup,
                      int reps, uint64_t seed) {
  return bench_fa2(s, scale, t, variant, f, warmup, reps, seed);
}

BenchTiming standard_bench(const Shape& s, float scale, const Tiling&, int, const Features&, int warmup, int reps,
                           uint64_t seed) {
  return bench_standard(s, scale, warmup, reps, seed);
}

// decode's S is the tiling's (Tiling::S, from --splits or core/schedules/decode/decode.h's default).
Result decode_fwd(const float* Q, const float* K, const float* V, const Shape& s, float scale, const Tiling& t,
                  const ForwardOptions& o) {
  DecodeOptions d;
  d.splits = t.S;
  d.page_size = t.P;  // --page-size: K, V through a block table (core/paged_kv.h)
  d.features = o.features;
  d.variant = o.variant;  // --variant: the split kernel's (gpu/decode.cu); 0 = the default
  DecodeResult dr = decode_forward(Q, K, V, s, scale, t, d);
  Result r;
  r.O = std::move(dr.O);
  r.lse = std::move(dr.lse);
  r.O_part = std::move(dr.O_part);
  r.lse_part = std::move(dr.lse_part);
  r.device_bytes = dr.device_bytes;
  return r;
}

BenchTiming decode_bench(const Shape& s, float scale, const Tiling& t, int, const Features& f, int warmup, int reps,
                         uint64_t seed) {
  DecodeOptions d;
  d.splits = t.S;
  d.features = f;
  return bench_decode(s, scale, t, d, warmup, reps, seed);
}

const DeviceSchedule kFa1 = {Schedule::fa1, fa1_fwd, fa1_backward, fa1_bench, resolve_fa1_variant, fa1_shared_bytes,
                             /*storage_16bit=*/true, /*bench_options=*/false, /*verify_per_j=*/true, ""};
const DeviceSchedule kFa2 = {Schedule::fa2, fa2_fwd, fa2_backward, fa2_bench, resolve_fa2_variant, fa2_shared_bytes,
                             /*storage_16bit=*/true, /*bench_options=*/true, /*verify_per_j=*/false,
                             "fa2 keeps O_i, l_i, m_i on chip for the whole inner loop: there is no per-j state in "
                             "HBM, so only the final O and lse are compared"};
const DeviceSchedule kStandard = {Schedule::standard, standard_fwd, standard_bwd, standard_bench, nullptr, nullptr,
                                  /*storage_16bit=*/false, /*bench_options=*/false, /*verify_per_j=*/false,
                                  "standard attention has no tiles: final O and lse compared"};
const DeviceSchedule kDecode = {Schedule::decode, decode_fwd, nullptr, decode_bench, nullptr, nullptr,
                                /*storage_16bit=*/true, /*bench_options=*/true, /*verify_per_j=*/false,
                                "flash-decoding: the partials O^(s), lse^(s) (one per split) and the final O and lse"};

}  // namespace

const std::vector<const DeviceSchedule*>& device_schedules() {
  static const std::vector<const DeviceSchedule*> all = [] {
    const DeviceSchedule* known[] = {&kFa1, &kFa2, &kStandard, &kDecode};
    std::vector<const DeviceSchedule*> v;
    for (const ScheduleInfo* s : schedules())
      for (const DeviceSchedule* d : known)
        if (d->id == s->id) v.push_back(d);
    return v;
  }();
  return all;
}

const DeviceSchedule& device_schedule(Schedule s) {
  for (const DeviceSchedule* d : device_schedules())
    if (d->id == s) return *d;
  throw InputError(std::string("--schedule ") + schedule_name(s) + " has no GPU kernels yet");
}

std::string storage_16bit_names() {
  std::vector<const char*> names;
  for (const DeviceSchedule* d : device_schedules())
    if (d->storage_16bit) names.push_back(schedule_name(d->id));
  std::string out;
  for (size_t k = 0; k < names.size(); ++k) out += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + std::string(names[k]);
  return out;
}

}  // namespace flashstep::gpu
