// Host side of the GPU backward pass (gpu/backward.h): checks, buffers, the forward launches
// (gpu/kernels.h) and then the backward's (gpu/backward_kernels.h), all on device-resident
// data, so that the timed path and the checked path are the same code.
#include "gpu/backward.h"

#include "core/online_softmax.h"
#include "core/schedule_registry.h"
#include "gpu/backward_kernels.h"
#include "gpu/common.cuh"

#include <algorithm>
#include <climits>
#include <functional>
#include <sstream>

namespace flashstep::gpu {

namespace {

void check_request(const Shape& s, const Tiling* t, const Features& f) {
  if (s.B < 1 || s.H < 1 || s.nq < 1 || s.nk < 1 || s.d < 1)
    throw InputError("GPU shapes must be positive: B, H, Nq, Nk, d >= 1");
  if (s.heads() > 65535)
    throw InputError("the GPU backward kernels take at most 65535 heads (B x H = " + std::to_string(s.heads()) + ")");
  if (s.nq > INT_MAX / 2 || s.nk > INT_MAX / 2 || s.d > 65536 || s.heads() * s.nq > INT_MAX)
    throw InputError("sizes too large for the GPU backward kernels (Nq, Nk < 2^30, d <= 65536, B H Nq < 2^31)");
  if (t && (t->Br < 1 || t->Bc < 1 || t->Tr != (s.nq + t->Br - 1) / t->Br || t->Tc != (s.nk + t->Bc - 1) / t->Bc))
    throw InputError("the tiling does not match the shape (Tr = ceil(Nq/Br), Tc = ceil(Nk/Bc))");
  check_features(f, s);
  if (f.dtype != Dtype::fp32)
    throw InputError(std::string("--dtype ") + dtype_name(f.dtype) +
                     ": the GPU backward is implemented in float32 only (use --dtype fp32)");
}

// Not enough device memory is one clear error, before anything is allocated.
void check_memory(int64_t need) {
  const DeviceInfo info = device_info();
  if (need + (int64_t(64) << 20) > info.free_bytes) {
    std::ostringstream os;
    os.precision(3);
    os << "not enough device memory: forward + backward needs " << double(need) / double(int64_t(1) << 30)
       << " GiB, but only " << double(info.free_bytes) / double(int64_t(1) << 30) << " GiB is free on "
       << info.name;
    throw InputError(os.str());
  }
}

// What a schedule's device path does, from its registry entry (core/schedule_registry.h):
// untiled (standard attention: S, P and dS in HBM, cuBLAS-style products, no j loop), or
// tiled with the forward's row statistics in HBM as l and m (Algorithm 1, whose backward,
// Algorithm 4, also zeroes dK and dV first) or as lse (FlashAttention-2).
struct Path {
  bool tiled = true;
  bool keeps_l_m = false;
};
constexpr Path kAlgorithm1{true, true}, kFlash2{true, false}, kUntiled{false, false};
Path path_of(Schedule sc) {
  const ScheduleInfo& info = schedule_info(sc);
  const std::vector<Tensor>& stats = info.stat_tensors;
  return {info.tiled, std::find(stats.begin(), stats.end(), Tensor::l) != stats.end()};
}

// One forward + backward on the device: buffers, the forward's statistics, the gradients.
class Run {
 public:
  Run(Path path, const Shape& s, float scale, const Tiling* t, const BackwardOptions& o)
      : path_(path), s_(s), scale_(scale) {
    if (t) t_ = *t;
    const int64_t h = s.heads(), q = h * s.nq * s.d, k = h * s.nk * s.d, rows = h * s.nq;
    for (auto* b : {&Q, &O, &dO, &dQ}) b->allocate(q);
    for (auto* b : {&K, &V, &dK, &dV}) b->allocate(k);
    st0.allocate(rows);  // l (fa1), lse (fa2, standard)
    st1.allocate(rows);  // m (fa1), D (fa2)
    if (!path.tiled)
      for (auto* b : {&S, &P, &dS}) b->allocate(h * s.nq * s.nk);
    x_.mask.causal = o.features.mask.causal;
    x_.mask.window_left = o.features.mask.window_left;
    x_.mask.window_right = o.features.mask.window_right;
    x_.mask.kv_len = o.features.mask.kv_len;
    x_.mask.offset = s.nk - s.nq;
    if (!o.features.kv_lens.empty()) {
      kv_lens_.allocate(int64_t(o.features.kv_lens.size()));
      kv_lens_.upload(o.features.kv_lens.data(), kv_lens_.size());
      x_.mask.kv_lens = kv_lens_.get();
    }
    x_.dropout = o.features.dropout;
    x_.seed = o.features.seed;
    x_.heads_per_batch = s.H;
    if (path.tiled) {
      fwd_variant_ = path.keeps_l_m ? resolve_fa1_variant(o.forward_variant, t_, s.d)
                                    : resolve_fa2_variant(o.forward_variant, t_, s.d);
      bwd_variant_ = resolve_backward_variant(o.variant, t_, s.d);
    }
  }

  DeviceBuffer<float> Q, K, V, O, dO, dQ, dK, dV, st0, st1, S, P, dS;

  int variant() const { return bwd_variant_; }

  void forward() {
    const int64_t h = s_.heads();
    if (path_.tiled && path_.keeps_l_m) {  // Algorithm 1
      Fa1Params p;
      fill(p);
      p.O = O.get();
      p.l = st0.get();
      p.m = st1.get();
      fa1_init(p);  // Alg1 L2
      for (int j = 0; j < p.Tc; ++j) fa1_launch_j(fwd_variant_, p, j);
    } else if (path_.tiled) {  // FlashAttention-2
      Fa2Params p;
      fill(p);
      p.O = O.get();
      p.lse = st0.get();
      fa2_launch(fwd_variant_, p);
    } else {
      // Alg0 L1-L3 with the undropped P kept for Algorithm 3 (the CPU keeps P undropped too);
      // with dropout, O = (P o Z) V through S's buffer (S is dead once P exists).
      Extras undropped = x_;
      undropped.dropout = 0.0f;
      matmul_batched(Q.get(), K.get(), S.get(), h, int(s_.nq), int(s_.nk), int(s_.d), scale_, true);
      row_softmax(S.get(), P.get(), st0.get(), h * s_.nq, int(s_.nk), int(s_.nq), undropped);
      if (x_.dropout > 0.0f) standard_drop(P.get(), S.get(), h * s_.nq, int(s_.nk), int(s_.nq), x_);
      matmul_batched(dropped_P(), V.get(), O.get(), h, int(s_.nq), int(s_.d), int(s_.nk), 1.0f, false);
    }
  }

  // `after_j` switches to one launch per j (fa1, fa2) and is called after each.
  void backward(const std::function<void(int)>& after_j = nullptr) {
    const int64_t h = s_.heads(), qbytes = 4 * h * s_.nq * s_.d, kbytes = 4 * h * s_.nk * s_.d;
    if (!path_.tiled) return standard();
    BwdParams p;
    fill(p);
    p.O = O.get();
    p.dO = dO.get();
    p.dQ = dQ.get();
    p.dK = dK.get();
    p.dV = dV.get();
    // Alg4 L5 / FA2b L3: dQ = 0 in HBM (the atomic adds accumulate into it). Algorithm 4 also
    // zeroes dK and dV (its snapshots show them); FA2 writes every dK_j, dV_j once.
    CUDA_CHECK(cudaMemsetAsync(dQ.get(), 0, size_t(qbytes)));
    const auto by_j = [&](void (*launch)(int, const BwdParams&, int, int)) {
      if (!after_j) return launch(bwd_variant_, p, 0, p.Tc);
      for (int j = 0; j < p.Tc; ++j) {
        launch(bwd_variant_, p, j, 1);
        after_j(j);
      }
    };
    if (path_.keeps_l_m) {  // Algorithm 4
      CUDA_CHECK(cudaMemsetAsync(dK.get(), 0, size_t(kbytes)));
      CUDA_CHECK(cudaMemsetAsync(dV.get(), 0, size_t(kbytes)));
      p.l = st0.get();
      p.m = st1.get();
      return by_j(fa1_backward_launch);
    }
    p.lse = st0.get();
    p.D = st1.get();
    fa2_backward_rowsum(p, st1.get());  // FA2b L4
    by_j(fa2_backward_launch);
  }

 private:
  const float* dropped_P() const { return x_.dropout > 0.0f ? S.get() : P.get(); }

  // Algorithm 3, P (undropped) from the forward; dP in S's buffer.
  void standard() {
    const int64_t h = s_.heads();
    const int nq = int(s_.nq), nk = int(s_.nk), d = int(s_.d);
    // Alg3 L1: dV = (P o Z)^T dO (P o Z is still in S's buffer under dropout)
    matmul_batched_at(dropped_P(), dO.get(), dV.get(), h, nk, d, nq, 1.0f);
    // Alg3 L2: dP = dO V^T
    matmul_batched(dO.get(), V.get(), S.get(), h, nq, nk, d, 1.0f, true);
    // Alg3 L3: dS = P o (dP o Z - D), D = rowsum(P o dP o Z)
    standard_grad_scores(P.get(), S.get(), dS.get(), h * s_.nq, nk, nq, x_);
    // Alg3 L4: dQ = tau dS K; Alg3 L5: dK = tau dS^T Q
    matmul_batched(dS.get(), K.get(), dQ.get(), h, nq, d, nk, scale_, false);
    matmul_batched_at(dS.get(), Q.get(), dK.get(), h, nk, d, nq, scale_);
  }

  template <typename Params>
  void fill(Params& p) const {
    p.Q = Q.get();
    p.K = K.get();
    p.V = V.get();
    p.heads = s_.heads();
    p.nq = int(s_.nq);
    p.nk = int(s_.nk);
    p.d = int(s_.d);
    p.Br = int(t_.Br);
    p.Bc = int(t_.Bc);
    p.Tr = int(t_.Tr);
    p.Tc = int(t_.Tc);
    p.scale = scale_;
    p.x = x_;
  }

  Path path_;
  Shape s_;
  float scale_;
  Tiling t_;
  DeviceBuffer<int64_t> kv_lens_;
  Extras x_;
  int fwd_variant_ = 0, bwd_variant_ = 0;
};

// Q, O, dO, dQ; K, V, dK, dV; two statistics per row; untiled: S (then dP), P, dS.
int64_t device_bytes(Path path, const Shape& s) {
  const int64_t h = s.heads();
  int64_t floats = h * (4 * s.nq * s.d + 4 * s.nk * s.d + 2 * s.nq);
  if (!path.tiled) floats += 3 * h * s.nq * s.nk;
  return 4 * floats + 8 * s.B;  // + kv_lens
}

BackwardResult run_backward(Path path, const float* Q, const float* K, const float* V, const float* dO,
                            const Shape& s, float scale, const Tiling* t, const BackwardOptions& opt) {
  check_request(s, t, opt.features);
  if (opt.snapshots && !path.tiled)
    throw InputError("per-j gradient snapshots exist for the tiled schedules (standard attention has no j loop)");
  if (t && !(t->Tc <= 65535)) throw InputError("more than 65535 K/V blocks for the GPU backward's grid");
  if (path.tiled) resolve_backward_variant(opt.variant, *t, s.d);
  check_memory(device_bytes(path, s));
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Run run(path, s, scale, t, opt);
  run.Q.upload(Q, run.Q.size());
  run.K.upload(K, run.K.size());
  run.V.upload(V, run.V.size());
  run.dO.upload(dO, run.dO.size());
  for (auto* b : {&run.O, &run.dQ, &run.dK, &run.dV, &run.st0, &run.st1, &run.S, &run.P, &run.dS}) b->poison();
  run.forward();
  BackwardResult r;
  if (opt.snapshots) {
    run.backward([&](int j) {
      GradSnapshot sn;
      sn.j = j;
      sn.dQ = run.dQ.to_host();
      sn.dK = run.dK.to_host();
      sn.dV = run.dV.to_host();
      r.snapshots.push_back(std::move(sn));
    });
  } else {
    run.backward();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = run.O.to_host();
  if (path.keeps_l_m) {  // Alg1 L16: lse = m + log l, as the CPU does
    const std::vector<float> l = run.st0.to_host(), m = run.st1.to_host();
    r.lse.resize(l.size());
    for (size_t k = 0; k < l.size(); ++k) r.lse[k] = row_logsumexp(m[k], l[k]);
  } else {
    r.lse = run.st0.to_host();
  }
  r.dQ = run.dQ.to_host();
  r.dK = run.dK.to_host();
  r.dV = run.dV.to_host();
  r.variant = run.variant();
  r.device_bytes = MemoryTracker::get().peak - live0;
  return r;
}

}  // namespace

int64_t backward_shared_bytes(int variant, const Tiling& t, int64_t d) {
  if (t.Br > INT_MAX || t.Bc > INT_MAX || d > INT_MAX) return -1;
  return bwd_smem_bytes(variant, int(t.Br), int(t.Bc), int(d));
}

std::string backward_v2_configs() { return bwd_v2_config_list(); }
std::string backward_v3_configs() { return bwd_v3_config_list(); }

int resolve_backward_variant(int requested, const Tiling& t, int64_t d) {
  if (requested < 0 || requested > 3)
    throw InputError("backward --variant must be 0 (automatic), 1, 2 or 3 (got " + std::to_string(requested) + ")");
  // Automatic: the leanest register-tiled kernel compiled for these sizes, else the plain one.
  int v = requested;
  if (v == 0) v = backward_shared_bytes(3, t, d) > 0 ? 3 : backward_shared_bytes(2, t, d) > 0 ? 2 : 1;
  const int64_t need = backward_shared_bytes(v, t, d);
  std::ostringstream os;
  if (need < 0) {
    os << "backward variant " << v << " is compiled only for (Br, Bc, d) in "
       << (v == 2 ? backward_v2_configs() : backward_v3_configs()) << "; got (" << t.Br << ", " << t.Bc << ", " << d
       << "): use --variant 1 or 0";
    throw InputError(os.str());
  }
  const DeviceInfo info = device_info();
  if (need > info.smem_per_block_optin) {
    os << "block sizes Br = " << t.Br << ", Bc = " << t.Bc << " with d = " << d << " need " << need / 1024.0
       << " KiB of shared memory per block in the backward's variant " << v << ", but " << info.name
       << " allows " << info.smem_per_block_optin / 1024.0 << " KiB: lower --M, --br or --bc";
    throw InputError(os.str());
  }
  return v;
}

int64_t backward_device_bytes(Schedule schedule, const Shape& s) { return device_bytes(path_of(schedule), s); }

BackwardResult fa1_backward(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                            float scale, const Tiling& t, const BackwardOptions& opt) {
  return run_backward(kAlgorithm1, Q, K, V, dO, s, scale, &t, opt);
}

BackwardResult fa2_backward(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                            float scale, const Tiling& t, const BackwardOptions& opt) {
  return run_backward(kFlash2, Q, K, V, dO, s, scale, &t, opt);
}

BackwardResult standard_backward(const float* Q, const float* K, const float* V, const float* dO,
                                 const Shape& s, float scale, const Features& f) {
  BackwardOptions opt;
  opt.features = f;
  return run_backward(kUntiled, Q, K, V, dO, s, scale, nullptr, opt);
}

BackwardTiming bench_backward(Schedule schedule, const Shape& s, float scale, const Tiling& t,
                              const BackwardOptions& opt, int warmup, int reps, uint64_t seed) {
  const Path path = path_of(schedule);
  check_request(s, path.tiled ? &t : nullptr, opt.features);
  check_memory(device_bytes(path, s));
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Run run(path, s, scale, &t, opt);
  fill_random(run.Q.get(), run.Q.size(), seed * 4 + 0);
  fill_random(run.K.get(), run.K.size(), seed * 4 + 1);
  fill_random(run.V.get(), run.V.size(), seed * 4 + 2);
  fill_random(run.dO.get(), run.dO.size(), seed * 4 + 3);
  const TimingStats f = median_ms([&] { run.forward(); }, warmup, reps);
  const TimingStats b = median_ms([&] { run.backward(); }, warmup, reps);  // after a forward
  const TimingStats fb = median_ms([&] { run.forward(); run.backward(); }, warmup, reps);
  BackwardTiming bt;
  const int64_t peak = MemoryTracker::get().peak - live0;
  for (auto [into, ts] : {std::pair{&bt.forward, f}, std::pair{&bt.backward, b}, std::pair{&bt.total, fb}}) {
    into->median_ms = ts.median_ms;
    into->min_ms = ts.min_ms;
    into->max_ms = ts.max_ms;
    into->reps = ts.reps;
    into->variant = run.variant();
    into->peak_bytes = peak;
  }
  return bt;
}

}  // namespace flashstep::gpu
