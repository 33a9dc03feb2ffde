// Host side of the CUDA backend: checks every user-caused problem before touching the device,
// allocates, uploads, runs the schedules (one launch per j for Algorithm 1), copies results
// back. Kernels live in the .cu files, one operation each; see kernels.h.
#include "gpu/backend.h"

#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"

#include <climits>
#include <cmath>
#include <sstream>

namespace flashstep::gpu {

namespace {

std::string gib(int64_t bytes) {
  std::ostringstream os;
  os.precision(3);
  os << double(bytes) / double(int64_t(1) << 30) << " GiB";
  return os.str();
}

void check_shape(const Shape& s) {
  if (s.B < 1 || s.H < 1 || s.nq < 1 || s.nk < 1 || s.d < 1)
    throw InputError("GPU shapes must be positive: B, H, Nq, Nk, d >= 1");
  if (s.heads() > 65535)
    throw InputError("the GPU kernels take at most 65535 heads (B x H = " +
                     std::to_string(s.heads()) + ")");
  if (s.nq > INT_MAX / 2 || s.nk > INT_MAX / 2 || s.d > 65536)
    throw InputError("sizes too large for the GPU kernels (Nq, Nk < 2^30, d <= 65536)");
  if (s.heads() * s.nq > INT_MAX)
    throw InputError("B x H x Nq = " + std::to_string(s.heads() * s.nq) +
                     " rows is more than the softmax kernel's grid takes (2^31 - 1)");
}

// Not enough device memory is a clear error, checked before allocating: an allocation that
// fails half-way through would leave a worse message and a half-built state.
void check_memory(int64_t need, const char* what) {
  const DeviceInfo info = device_info();
  const int64_t margin = int64_t(64) << 20;  // the runtime and the kernels' own needs
  if (need + margin > info.free_bytes)
    throw InputError(std::string("not enough device memory: ") + what + " needs " + gib(need) +
                     ", but only " + gib(info.free_bytes) + " of " + gib(info.total_bytes) +
                     " is free on " + info.name);
}

struct Fa1Buffers {
  DeviceBuffer<float> Q, K, V, O, l, m;
  Fa1Params params(const Shape& s, const Tiling& t, float scale) const {
    Fa1Params p;
    p.Q = Q.get(); p.K = K.get(); p.V = V.get();
    p.O = O.get(); p.l = l.get(); p.m = m.get();
    p.heads = s.heads();
    p.nq = int(s.nq); p.nk = int(s.nk); p.d = int(s.d);
    p.Br = int(t.Br); p.Bc = int(t.Bc); p.Tr = int(t.Tr); p.Tc = int(t.Tc);
    p.scale = scale;
    return p;
  }
};

Fa1Buffers alloc_fa1(const Shape& s) {
  Fa1Buffers b;
  const int64_t h = s.heads();
  b.Q.allocate(h * s.nq * s.d);
  b.K.allocate(h * s.nk * s.d);
  b.V.allocate(h * s.nk * s.d);
  b.O.allocate(h * s.nq * s.d);
  b.l.allocate(h * s.nq);
  b.m.allocate(h * s.nq);
  return b;
}

struct StandardBuffers {
  DeviceBuffer<float> Q, K, V, S, P, O, lse;
};

StandardBuffers alloc_standard(const Shape& s) {
  StandardBuffers b;
  const int64_t h = s.heads();
  b.Q.allocate(h * s.nq * s.d);
  b.K.allocate(h * s.nk * s.d);
  b.V.allocate(h * s.nk * s.d);
  b.S.allocate(h * s.nq * s.nk);
  b.P.allocate(h * s.nq * s.nk);
  b.O.allocate(h * s.nq * s.d);
  b.lse.allocate(h * s.nq);
  return b;
}

void check_tiling(const Shape& s, const Tiling& t) {
  if (t.Br < 1 || t.Bc < 1 || t.Tr != (s.nq + t.Br - 1) / t.Br || t.Tc != (s.nk + t.Bc - 1) / t.Bc)
    throw InputError("the tiling does not match the shape (Tr = ceil(Nq/Br), Tc = ceil(Nk/Bc))");
  if (t.Tr > INT_MAX || t.Br > INT_MAX || t.Bc > INT_MAX)
    throw InputError("block sizes too large for the GPU kernels");
}

// Alg1 L2, then L5: for each j one launch over all (i, head).
void run_fa1_launches(const Fa1Params& p, int variant, Result* snap_into, const Shape& s) {
  fa1_init(p);
  for (int j = 0; j < p.Tc; ++j) {
    fa1_launch_j(variant, p, j);
    if (snap_into) {
      Snapshot sn;
      sn.j = j;
      const int64_t rows = s.heads() * s.nq;
      sn.O.resize(size_t(rows * s.d));
      sn.l.resize(size_t(rows));
      sn.m.resize(size_t(rows));
      CUDA_CHECK(cudaMemcpy(sn.O.data(), p.O, sn.O.size() * 4, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(sn.l.data(), p.l, sn.l.size() * 4, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(sn.m.data(), p.m, sn.m.size() * 4, cudaMemcpyDeviceToHost));
      snap_into->snapshots.push_back(std::move(sn));
    }
  }
}

void run_standard_launches(const StandardBuffers& b, const Shape& s, float scale) {
  const int64_t h = s.heads();
  // Alg0 L1: S = tau Q K^T, written to HBM
  matmul_batched(b.Q.get(), b.K.get(), b.S.get(), h, int(s.nq), int(s.nk), int(s.d), scale, true);
  // Alg0 L2: P = softmax(S), read S and write P
  row_softmax(b.S.get(), b.P.get(), b.lse.get(), h * s.nq, int(s.nk));
  // Alg0 L3: O = P V
  matmul_batched(b.P.get(), b.V.get(), b.O.get(), h, int(s.nq), int(s.d), int(s.nk), 1.0f, false);
}

}  // namespace

bool available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA GPU (") + cudaGetErrorString(e) + ")";
    cudaGetLastError();  // reset the runtime's last-error state so later calls start clean
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA GPU on this machine";
    return false;
  }
  return true;
}

DeviceInfo device_info() {
  std::string why;
  if (!available(&why)) throw InputError(why);
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  DeviceInfo info;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.smem_per_block_optin = int64_t(prop.sharedMemPerBlockOptin);
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  info.free_bytes = int64_t(free_b);
  info.total_bytes = int64_t(total_b);
  return info;
}

std::string fa1_v2_configs() { return fa1_v2_config_list(); }

int64_t fa1_shared_bytes(int variant, const Tiling& t, int64_t d) {
  if (t.Br > INT_MAX || t.Bc > INT_MAX || d > INT_MAX) return -1;
  return fa1_smem_bytes(variant, int(t.Br), int(t.Bc), int(d));
}

int resolve_fa1_variant(int requested, const Tiling& t, int64_t d) {
  if (requested < 0 || requested > 2)
    throw InputError("--variant must be 0 (automatic), 1 or 2 (got " + std::to_string(requested) + ")");
  const DeviceInfo info = device_info();
  int v = requested;
  if (v == 0) v = fa1_shared_bytes(2, t, d) > 0 ? 2 : 1;
  const int64_t need = fa1_shared_bytes(v, t, d);
  std::ostringstream os;
  if (need < 0) {
    os << "fa1 variant 2 is compiled only for (Br, Bc, d) in " << fa1_v2_configs() << "; got ("
       << t.Br << ", " << t.Bc << ", " << d << "): use --variant 1 or 0";
    throw InputError(os.str());
  }
  if (need > info.smem_per_block_optin) {
    os << "block sizes Br = " << t.Br << ", Bc = " << t.Bc << " with d = " << d
       << " need " << need / 1024.0 << " KiB of shared memory per block in fa1 variant " << v
       << ", but " << info.name << " allows " << info.smem_per_block_optin / 1024.0
       << " KiB: lower --M, --br or --bc";
    throw InputError(os.str());
  }
  return v;
}

int64_t fa1_device_bytes(const Shape& s) {
  return 4 * s.heads() * (2 * s.nq * s.d + 2 * s.nk * s.d + 2 * s.nq);
}

int64_t standard_device_bytes(const Shape& s) {
  return 4 * s.heads() * (2 * s.nq * s.d + 2 * s.nk * s.d + 2 * s.nq * s.nk + s.nq);
}

Result fa1_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                   const Tiling& t, const Fa1Options& opt) {
  check_shape(s);
  check_tiling(s, t);
  Result r;
  r.variant = resolve_fa1_variant(opt.variant, t, s.d);
  check_memory(fa1_device_bytes(s), "Algorithm 1");
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Fa1Buffers b = alloc_fa1(s);
  b.Q.upload(Q, b.Q.size());
  b.K.upload(K, b.K.size());
  b.V.upload(V, b.V.size());
  b.O.poison();
  b.l.poison();
  b.m.poison();
  run_fa1_launches(b.params(s, t, scale), r.variant, opt.snapshots ? &r : nullptr, s);
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = b.O.to_host();
  r.l = b.l.to_host();
  r.m = b.m.to_host();
  // Alg1 L16: lse = m + log l from the final l and m in HBM, as the CPU schedule does.
  r.lse.resize(r.l.size());
  for (size_t k = 0; k < r.l.size(); ++k) r.lse[k] = row_logsumexp(r.m[k], r.l[k]);
  r.device_bytes = MemoryTracker::get().peak - live0;
  return r;
}

Result standard_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale) {
  check_shape(s);
  device_info();
  check_memory(standard_device_bytes(s), "standard attention (S and P are B x H x Nq x Nk each)");
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  StandardBuffers b = alloc_standard(s);
  b.Q.upload(Q, b.Q.size());
  b.K.upload(K, b.K.size());
  b.V.upload(V, b.V.size());
  b.S.poison();
  b.P.poison();
  b.O.poison();
  b.lse.poison();
  run_standard_launches(b, s, scale);
  CUDA_CHECK(cudaDeviceSynchronize());
  Result r;
  r.O = b.O.to_host();
  r.lse = b.lse.to_host();
  r.device_bytes = MemoryTracker::get().peak - live0;
  return r;
}

BenchTiming bench_fa1(const Shape& s, float scale, const Tiling& t, int variant, int warmup,
                      int reps, uint64_t seed) {
  check_shape(s);
  check_tiling(s, t);
  BenchTiming bt;
  bt.variant = resolve_fa1_variant(variant, t, s.d);
  check_memory(fa1_device_bytes(s), "Algorithm 1");
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Fa1Buffers b = alloc_fa1(s);
  fill_random(b.Q.get(), b.Q.size(), seed * 3 + 0);
  fill_random(b.K.get(), b.K.size(), seed * 3 + 1);
  fill_random(b.V.get(), b.V.size(), seed * 3 + 2);
  const Fa1Params p = b.params(s, t, scale);
  const TimingStats ts = median_ms([&] { run_fa1_launches(p, bt.variant, nullptr, s); }, warmup, reps);
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.peak_bytes = MemoryTracker::get().peak - live0;
  return bt;
}

BenchTiming bench_standard(const Shape& s, float scale, int warmup, int reps, uint64_t seed) {
  check_shape(s);
  device_info();
  check_memory(standard_device_bytes(s), "standard attention (S and P are B x H x Nq x Nk each)");
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  StandardBuffers b = alloc_standard(s);
  fill_random(b.Q.get(), b.Q.size(), seed * 3 + 0);
  fill_random(b.K.get(), b.K.size(), seed * 3 + 1);
  fill_random(b.V.get(), b.V.size(), seed * 3 + 2);
  const TimingStats ts = median_ms([&] { run_standard_launches(b, s, scale); }, warmup, reps);
  BenchTiming bt;
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.peak_bytes = MemoryTracker::get().peak - live0;
  return bt;
}

}  // namespace flashstep::gpu
