// The GPU backend's entry per schedule: forward, backward and bench behind one signature each,
// so the GPU commands (gpu, verify, bench-gpu, gpu --snapshots, the app's GPU snapshots) ask
// here and never switch on a schedule. The kernels and their host code stay where they are
// (gpu/backend.h, gpu/backward.h); schedules.cpp adapts each to these signatures. A schedule
// with no kernels has no entry (device_schedule throws InputError naming it).
#pragma once
#include "core/problem.h"
#include "gpu/backend.h"
#include "gpu/backward.h"

#include <string>
#include <vector>

namespace flashstep::gpu {

// What every forward takes: the kernel variant (0 automatic), per-j snapshots, Features.
struct ForwardOptions {
  int variant = 0;
  bool snapshots = false;  // the state after every j (Result::snapshots), where the schedule has one
  Features features;
};

struct DeviceSchedule {
  Schedule id;
  // Tiled schedules use t (the CPU's Br, Bc); untiled ones ignore it.
  Result (*forward)(const float* Q, const float* K, const float* V, const Shape& s, float scale, const Tiling& t,
                    const ForwardOptions& o);
  BackwardResult (*backward)(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                             float scale, const Tiling& t, const BackwardOptions& o);
  // Timing on device-generated inputs; `f` is used where bench_options is set.
  BenchTiming (*bench)(const Shape& s, float scale, const Tiling& t, int variant, const Features& f, int warmup,
                       int reps, uint64_t seed);
  // The forward kernel variant that will run, or InputError; null: the schedule has no variants.
  int (*resolve_variant)(int requested, const Tiling& t, int64_t d);
  // Shared memory a forward variant needs per block (-1: no kernel for the sizes); null: none.
  int64_t (*shared_bytes)(int variant, const Tiling& t, int64_t d);
  bool storage_16bit;   // fp16 / bf16 storage (else float32 only)
  bool bench_options;   // bench-gpu's --dtype and --causal apply to it
  // verify compares the HBM state after every j (Result::snapshots, l and m) forward and the
  // gradients after every j backward; otherwise the final state, with this note.
  bool verify_per_j;
  const char* verify_note;
};

// Every schedule that has kernels, in the registry's order.
const std::vector<const DeviceSchedule*>& device_schedules();
const DeviceSchedule& device_schedule(Schedule s);  // InputError when the schedule has no kernels
// "fa1 and fa2": the schedules with 16-bit storage on the GPU, for error messages.
std::string storage_16bit_names();

}  // namespace flashstep::gpu
