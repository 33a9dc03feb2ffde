// Host side of the CUDA backend: checks every user-caused problem before touching the device,
// allocates, uploads, runs the schedules (one launch per j for Algorithm 1), copies results
// back. Kernels live in the .cu files, one operation each; see kernels.h.
#include "gpu/backend.h"

#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"
#include "gpu/backend_internal.h"

#include <climits>
#include <cmath>
#include <sstream>

namespace flashstep::gpu {

namespace {
using namespace internal;  // the shared checks and buffers (backend_internal.h)

// What fa1_forward and fa2_forward do once every check has passed: the features on the device,
// the buffers with the inputs uploaded and the outputs poisoned (NaN), and the peak memory count.
template <typename Buffers>
struct FlashRun {
  PeakSince peak;  // first: counts every allocation below
  DeviceExtras ex;
  Buffers b;
  FlashRun(const float* Q, const float* K, const float* V, const Shape& s, const Features& f)
      : ex(f, s), b(s, f.dtype) {
    b.upload(Q, K, V);
    b.poison_outputs();
  }
};

void check_tiling(const Shape& s, const Tiling& t) {
  if (t.Br < 1 || t.Bc < 1 || t.Tr != (s.nq + t.Br - 1) / t.Br || t.Tc != (s.nk + t.Bc - 1) / t.Bc)
    throw InputError("the tiling does not match the shape (Tr = ceil(Nq/Br), Tc = ceil(Nk/Bc))");
  if (t.Tr > INT_MAX || t.Br > INT_MAX || t.Bc > INT_MAX)
    throw InputError("block sizes too large for the GPU kernels");
}

// The checks of every flash run (fa1, fa2), in this order and before any device memory is
// touched: shape, tiling, features, the variant (compiled sizes, the device's shared memory),
// the device memory (device_bytes for the storage type). Returns the variant that will run.
int check_flash(const Shape& s, const Tiling& t, const Features& f, int variant,
                int (*resolve)(int, const Tiling&, int64_t), int64_t (*device_bytes)(const Shape&, Dtype),
                const char* what) {
  check_shape(s);
  check_tiling(s, t);
  check_features(f, s);
  int v = resolve(variant, t, s.d);
  if (v == 2 && f.dtype != Dtype::fp32 && !v2_takes_16bit(t.Br, t.Bc, s.d)) {  // gpu/common.cuh
    if (variant == 2)
      throw InputError(std::string(what) + " variant 2 in " + dtype_name(f.dtype) +
                       " storage is compiled only for (Br, Bc, d) in " FS_V2_16BIT_NAMES "; got (" +
                       std::to_string(t.Br) + ", " + std::to_string(t.Bc) + ", " + std::to_string(s.d) +
                       "): use --variant 1 or 0, or float32 storage");
    v = resolve(1, t, s.d);  // automatic: the plain variant takes any sizes
  }
  check_memory(device_bytes(s, f.dtype), what);
  return v;
}

// Alg1 L2, then L5: for each j one launch over all (i, head); with snap_into, O, l, m are
// copied back (O as float32) after every j.
void run_fa1_launches(const Fa1Params& p, int variant, Result* snap_into, Fa1Buffers* b = nullptr) {
  fa1_init(p);
  for (int j = 0; j < p.Tc; ++j) {
    fa1_launch_j(variant, p, j);
    if (snap_into) {
      ForwardSnapshot sn;
      sn.j = j;
      sn.O = b->O.to_host(b->staging);
      sn.l = b->l.to_host();
      sn.m = b->m.to_host();
      snap_into->snapshots.push_back(std::move(sn));
    }
  }
}

void run_standard_launches(const StandardBuffers& b, const Shape& s, float scale, const Extras& x) {
  const int64_t h = s.heads();
  // Alg0 L1: S = tau Q K^T, written to HBM
  matmul_batched(b.Q.get(), b.K.get(), b.S.get(), h, int(s.nq), int(s.nk), int(s.d), scale, true);
  // Alg0 L2: P = softmax(S), read S and write P
  row_softmax(b.S.get(), b.P.get(), b.lse.get(), h * s.nq, int(s.nk), int(s.nq), x);
  // Alg0 L3: O = P V
  matmul_batched(b.P.get(), b.V.get(), b.O.get(), h, int(s.nq), int(s.d), int(s.nk), 1.0f, false);
}

// The shared-memory check of both flash kernels: variant 0 picks 2 where it is compiled.
int resolve_variant(const char* name, int requested, int64_t smem2, int64_t smem1, const Tiling& t,
                    int64_t d, const std::string& configs) {
  if (requested < 0 || requested > 2)
    throw InputError("--variant must be 0 (automatic), 1 or 2 (got " + std::to_string(requested) + ")");
  const DeviceInfo info = device_info();
  const int v = requested == 0 ? (smem2 > 0 ? 2 : 1) : requested;
  const int64_t need = v == 2 ? smem2 : smem1;
  std::ostringstream os;
  if (need < 0) {
    os << name << " variant 2 is compiled only for (Br, Bc, d) in " << configs << "; got ("
       << t.Br << ", " << t.Bc << ", " << d << "): use --variant 1 or 0";
    throw InputError(os.str());
  }
  if (need > info.smem_per_block_optin) {
    os << "block sizes Br = " << t.Br << ", Bc = " << t.Bc << " with d = " << d
       << " need " << need / 1024.0 << " KiB of shared memory per block in " << name << " variant " << v
       << ", but " << info.name << " allows " << info.smem_per_block_optin / 1024.0
       << " KiB: lower --M, --br or --bc";
    throw InputError(os.str());
  }
  return v;
}

}  // namespace

Features features_of(const AttentionOptions& o, uint64_t seed, std::vector<int64_t> kv_lens) {
  Features f;
  static_cast<AttentionOptions&>(f) = o;
  f.seed = seed;
  f.kv_lens = std::move(kv_lens);
  return f;
}

void check_features(const Features& f, const Shape& s) {
  validate_options(f, s.nk);
  if (!f.kv_lens.empty()) {
    if (int64_t(f.kv_lens.size()) != s.B)
      throw InputError("kv_lens needs one valid key length per batch entry: " + std::to_string(s.B) +
                       " values, got " + std::to_string(f.kv_lens.size()));
    for (size_t b = 0; b < f.kv_lens.size(); ++b)
      if (f.kv_lens[b] < 0 || f.kv_lens[b] > s.nk)
        throw InputError("kv_lens[" + std::to_string(b) + "] = " + std::to_string(f.kv_lens[b]) +
                         " is out of range 0.." + std::to_string(s.nk));
  }
}

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

// Shared bytes from a kernel file's smem function; -1 for sizes no kernel takes.
static int64_t shared_bytes(int64_t (*smem)(int, int, int, int), int variant, const Tiling& t, int64_t d) {
  if (t.Br > INT_MAX || t.Bc > INT_MAX || d > INT_MAX) return -1;
  return smem(variant, int(t.Br), int(t.Bc), int(d));
}

int64_t fa1_shared_bytes(int variant, const Tiling& t, int64_t d) {
  return shared_bytes(fa1_smem_bytes, variant, t, d);
}

int resolve_fa1_variant(int requested, const Tiling& t, int64_t d) {
  return resolve_variant("fa1", requested, fa1_shared_bytes(2, t, d), fa1_shared_bytes(1, t, d), t, d,
                         fa1_v2_configs());
}

std::string fa2_v2_configs() { return fa2_v2_config_list(); }

int64_t fa2_shared_bytes(int variant, const Tiling& t, int64_t d) {
  return shared_bytes(fa2_smem_bytes, variant, t, d);
}

int resolve_fa2_variant(int requested, const Tiling& t, int64_t d) {
  return resolve_variant("fa2", requested, fa2_shared_bytes(2, t, d), fa2_shared_bytes(1, t, d), t, d,
                         fa2_v2_configs());
}

// Q, K, V, O in the storage type, float32 statistics per row, the staging buffer (16-bit only).
static int64_t flash_device_bytes(const Shape& s, Dtype dtype, int stats_per_row) {
  const int64_t staging = dtype == Dtype::fp32 ? 0 : 4 * s.heads() * std::max(s.nq, s.nk) * s.d;
  return dtype_bytes(dtype) * s.heads() * (2 * s.nq * s.d + 2 * s.nk * s.d) +
         4 * stats_per_row * s.heads() * s.nq + staging;
}

int64_t fa2_device_bytes(const Shape& s, Dtype dtype) { return flash_device_bytes(s, dtype, 1); }  // lse
int64_t fa1_device_bytes(const Shape& s, Dtype dtype) { return flash_device_bytes(s, dtype, 2); }  // l, m

int64_t standard_device_bytes(const Shape& s) {
  return 4 * s.heads() * (2 * s.nq * s.d + 2 * s.nk * s.d + 2 * s.nq * s.nk + s.nq);
}

Result fa1_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                   const Tiling& t, const Fa1Options& opt) {
  Result r;
  r.variant = check_flash(s, t, opt.features, opt.variant, resolve_fa1_variant, fa1_device_bytes, "Algorithm 1");
  FlashRun<Fa1Buffers> run(Q, K, V, s, opt.features);
  Fa1Buffers& b = run.b;
  run_fa1_launches(b.params(s, t, scale, run.ex.x), r.variant, opt.snapshots ? &r : nullptr, &b);
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = b.O.to_host(b.staging);
  r.l = b.l.to_host();
  r.m = b.m.to_host();
  // Alg1 L16: lse = m + log l from the final l and m in HBM, as the CPU schedule does.
  r.lse.resize(r.l.size());
  for (size_t k = 0; k < r.l.size(); ++k) r.lse[k] = row_logsumexp(r.m[k], r.l[k]);
  r.device_bytes = run.peak.bytes();
  return r;
}

Result fa2_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                   const Tiling& t, const Fa2Options& opt) {
  Result r;
  // Snapshots come from variant 1's snapshot instantiation: automatic means 1 there.
  const int requested = opt.snapshots && opt.variant == 0 ? 1 : opt.variant;
  r.variant = check_flash(s, t, opt.features, requested, resolve_fa2_variant, fa2_device_bytes,
                          "FlashAttention-2");
  if (!opt.snapshots) {
    FlashRun<Fa2Buffers> run(Q, K, V, s, opt.features);
    fa2_launch(r.variant, run.b.params(s, t, scale, run.ex.x));
    CUDA_CHECK(cudaDeviceSynchronize());
    r.O = run.b.O.to_host(run.b.staging);
    r.lse = run.b.lse.to_host();
    r.device_bytes = run.peak.bytes();
    return r;
  }
  // The snapshot instantiation of variant 1: O_i, l_i, m_i after every j, poisoned first so
  // that a (j, row) the kernel misses stays NaN.
  if (r.variant != 1)
    throw InputError("fa2 snapshots are made by variant 1's snapshot kernel: use --variant 0 or 1");
  const int64_t rows = s.heads() * s.nq, per_j = rows * (s.d + 2);
  check_memory(fa2_device_bytes(s, opt.features.dtype) + 4 * t.Tc * per_j, "FlashAttention-2 with snapshots");
  FlashRun<Fa2Buffers> run(Q, K, V, s, opt.features);
  DeviceBuffer<float> sO(t.Tc * rows * s.d), sl(t.Tc * rows), sm(t.Tc * rows);
  sO.poison();
  sl.poison();
  sm.poison();
  Fa2Params p = run.b.params(s, t, scale, run.ex.x);
  p.snap_O = sO.get();
  p.snap_l = sl.get();
  p.snap_m = sm.get();
  fa2_snapshot_launch(p);
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = run.b.O.to_host(run.b.staging);
  r.lse = run.b.lse.to_host();
  const std::vector<float> O = sO.to_host(), l = sl.to_host(), m = sm.to_host();
  for (int64_t j = 0; j < t.Tc; ++j) {
    ForwardSnapshot sn;
    sn.j = j;
    sn.O.assign(O.begin() + j * rows * s.d, O.begin() + (j + 1) * rows * s.d);
    sn.l.assign(l.begin() + j * rows, l.begin() + (j + 1) * rows);
    sn.m.assign(m.begin() + j * rows, m.begin() + (j + 1) * rows);
    r.snapshots.push_back(std::move(sn));
  }
  r.device_bytes = run.peak.bytes();
  return r;
}

std::vector<uint8_t> gpu_dropout_mask(int rows, int cols, int row0, int col0, int batch, int head,
                                      uint64_t seed, float p) {
  if (rows < 1 || cols < 1 || row0 < 0 || col0 < 0 || batch < 0 || head < 0)
    throw InputError("dropout mask: rows, cols >= 1 and non-negative offsets");
  AttentionOptions o;
  o.dropout = p;
  validate_options(o, 0);
  device_info();
  DeviceBuffer<uint8_t> out(int64_t(rows) * cols);
  out.poison();
  dropout_mask(out.get(), rows, cols, row0, col0, batch, head, seed, p);
  CUDA_CHECK(cudaDeviceSynchronize());
  return out.to_host();
}

Result standard_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                        const Features& f) {
  check_shape(s);
  check_features(f, s);
  require_fp32(f);
  device_info();
  check_memory(standard_device_bytes(s), "standard attention (S and P are B x H x Nq x Nk each)");
  const PeakSince peak;
  const DeviceExtras ex(f, s);
  StandardBuffers b = alloc_standard(s);
  b.Q.upload(Q, b.Q.size());
  b.K.upload(K, b.K.size());
  b.V.upload(V, b.V.size());
  b.S.poison();
  b.P.poison();
  b.O.poison();
  b.lse.poison();
  run_standard_launches(b, s, scale, ex.x);
  CUDA_CHECK(cudaDeviceSynchronize());
  Result r;
  r.O = b.O.to_host();
  r.lse = b.lse.to_host();
  r.device_bytes = peak.bytes();
  return r;
}

BenchTiming bench_fa1(const Shape& s, float scale, const Tiling& t, int variant, int warmup,
                      int reps, uint64_t seed) {
  BenchTiming bt;
  bt.variant = check_flash(s, t, Features{}, variant, resolve_fa1_variant, fa1_device_bytes, "Algorithm 1");
  const PeakSince peak;
  Fa1Buffers b(s, Dtype::fp32);
  b.fill_random_inputs(seed);
  const Fa1Params p = b.params(s, t, scale, Extras{});
  const TimingStats ts = median_ms([&] { run_fa1_launches(p, bt.variant, nullptr); }, warmup, reps);
  return timed(bt, ts, peak);
}

namespace {
int g_timing_batch = 1;
}
void set_timing_batch(int batch) {
  if (batch < 1 || batch > 1000) throw InputError("--back-to-back must be between 1 and 1000, not " + std::to_string(batch));
  g_timing_batch = batch;
}
int timing_batch() { return g_timing_batch; }
double timing_warmup_ms(int warmup) { return warmup > 0 ? warmup_ms() : 0.0; }

BenchTiming bench_standard(const Shape& s, float scale, int warmup, int reps, uint64_t seed) {
  check_shape(s);
  device_info();
  check_memory(standard_device_bytes(s), "standard attention (S and P are B x H x Nq x Nk each)");
  const PeakSince peak;
  StandardBuffers b = alloc_standard(s);
  fill_random(b.Q.get(), b.Q.size(), seed * 3 + 0);
  fill_random(b.K.get(), b.K.size(), seed * 3 + 1);
  fill_random(b.V.get(), b.V.size(), seed * 3 + 2);
  const TimingStats ts = median_ms([&] { run_standard_launches(b, s, scale, Extras{}); }, warmup, reps);
  BenchTiming bt;
  return timed(bt, ts, peak);
}

BenchTiming bench_fa2(const Shape& s, float scale, const Tiling& t, int variant, const Features& f,
                      int warmup, int reps, uint64_t seed) {
  BenchTiming bt;
  bt.variant = check_flash(s, t, f, variant, resolve_fa2_variant, fa2_device_bytes, "FlashAttention-2");
  const PeakSince peak;
  const DeviceExtras ex(f, s);
  Fa2Buffers b(s, f.dtype);
  b.fill_random_inputs(seed);
  const Fa2Params p = b.params(s, t, scale, ex.x);
  const TimingStats ts = median_ms([&] { fa2_launch(bt.variant, p); }, warmup, reps);
  return timed(bt, ts, peak);
}

}  // namespace flashstep::gpu
