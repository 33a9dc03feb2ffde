// Host side of the tensor-core backward (gpu/backward_tc.h): request checks, device buffers, the
// forward (gpu/fa2_tc.cu or gpu/fa2_wgmma.cu), the backward's three launches (gpu/fa2_bwd_tc.cu)
// and timing.
#include "gpu/backward_tc.h"

#include "gpu/bwd_tc_launch.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"
#include "gpu/tc_launch.h"
#include "gpu/tc_params.h"
#include "gpu/variant_list.h"

#include <climits>

namespace flashstep::gpu {

namespace {

Storage storage_of(Dtype t) { return t == Dtype::fp16 ? Storage::fp16 : Storage::bf16; }
int resolve(int variant, int64_t d) { return variant == 0 ? tc_backward_default_variant(d) : variant; }
int64_t rows_pad(int64_t nq) {
  const int64_t k = tc::fa2_bwd_tc_row_pad();
  return (nq + k - 1) / k * k;
}

// Every buffer of forward + backward: inputs, O, lse, dO, D and L2, the float32 dQ accumulator,
// dQ, dK, dV in the type.
struct Buffers {
  DeviceBuffer<uint16_t> Q, K, V, O, dO, dQ, dK, dV;
  DeviceBuffer<float> lse, D, L2, dq_acc;
  DeviceBuffer<int> kv_lens;
  Buffers(const Shape& s, const TcOptions& o)
      : Q(s.heads() * s.nq * s.d), K(s.heads() * s.nk * s.d), V(s.heads() * s.nk * s.d),
        O(s.heads() * s.nq * s.d), dO(s.heads() * s.nq * s.d), dQ(s.heads() * s.nq * s.d),
        dK(s.heads() * s.nk * s.d), dV(s.heads() * s.nk * s.d), lse(s.heads() * s.nq),
        D(s.heads() * rows_pad(s.nq)), L2(s.heads() * rows_pad(s.nq)), dq_acc(s.heads() * s.nq * s.d) {
    if (!o.kv_lens.empty()) {
      const std::vector<int> lens(o.kv_lens.begin(), o.kv_lens.end());
      kv_lens.allocate(int64_t(lens.size()));
      kv_lens.upload(lens.data(), int64_t(lens.size()));
    }
  }
  void upload(const float* q, const float* k, const float* v, const float* dout, Dtype t) {
    DeviceBuffer<float> stage(std::max(Q.size(), K.size()));
    for (auto [src, dst] : {std::pair{q, &Q}, std::pair{k, &K}, std::pair{v, &V}, std::pair{dout, &dO}}) {
      stage.upload(src, dst->size());
      to_storage(stage.get(), dst->get(), dst->size(), storage_of(t));
    }
  }
  void fill_random(uint64_t seed, Dtype t) {
    DeviceBuffer<float> stage(std::max(Q.size(), K.size()));
    uint64_t n = 0;
    for (DeviceBuffer<uint16_t>* dst : {&Q, &K, &V, &dO}) {
      ::flashstep::gpu::fill_random(stage.get(), dst->size(), seed * 4 + n++);
      to_storage(stage.get(), dst->get(), dst->size(), storage_of(t));
    }
  }
  tc::TcParams forward_params(const Shape& s, float scale, const TcOptions& o) const {
    return make_tc_params(Q.get(), K.get(), V.get(), O.get(), lse.get(), kv_lens.get(), s, scale, o);
  }
  tc::TcBwdParams backward_params(const Shape& s, float scale, const TcOptions& o) {
    tc::TcBwdParams p;
    p.fwd = forward_params(s, scale, o);
    p.dO = dO.get();
    p.L2 = L2.get();
    p.D = D.get();
    p.dq_acc = dq_acc.get();
    p.dK = dK.get();
    p.dV = dV.get();
    p.rows_pad = int(rows_pad(s.nq));
    return p;
  }
};

// One request: checked before any device memory is allocated, then its buffers.
struct Run {
  Shape s;
  float scale;
  TcBackwardOptions o;
  int64_t live0;
  Buffers b;
  int forward_variant, variant;
  bool dq_swizzled, dq_quads;
  static int64_t check_and_mark(const Shape& s, float scale, const TcBackwardOptions& o) {
    check_tc_backward_request(s, scale, o);
    const int64_t need = fa2_tc_backward_device_bytes(s);
    const DeviceInfo info = device_info();
    if (need + (int64_t(64) << 20) > info.free_bytes)
      throw InputError("not enough device memory: the tensor-core backward needs " +
                       std::to_string((need + (1 << 20) - 1) >> 20) + " MiB, " +
                       std::to_string(info.free_bytes >> 20) + " MiB free on " + info.name);
    MemoryTracker::get().reset_peak();
    return MemoryTracker::get().live;
  }
  Run(const Shape& s_, float scale_, const TcBackwardOptions& o_)
      : s(s_), scale(scale_), o(o_), live0(check_and_mark(s_, scale_, o_)), b(s_, o_.forward),
        forward_variant(o_.forward.variant ? o_.forward.variant : tc_default_variant(s_.d, o_.forward.causal)),
        variant(resolve(o_.variant, s_.d)), dq_swizzled(tc::fa2_bwd_tc_variant(variant, int(s_.d)).dq_swizzled),
        dq_quads(tc::fa2_bwd_tc_variant(variant, int(s_.d)).dq_quads) {}
  void forward() { tc::fa2_tc_launch(forward_variant, b.forward_params(s, scale, o.forward)); }
  // FA2b L3 (dQ = 0), L4 (D, and L2 for the loop), L5-L18, then dQ to the type.
  void backward() {
    const tc::TcBwdParams p = b.backward_params(s, scale, o.forward);
    tc::fa2_bwd_tc_prepare(b.dO.get(), b.O.get(), b.lse.get(), b.D.get(), b.L2.get(), b.dq_acc.get(), p.fwd.heads,
                           p.fwd.nq, p.rows_pad, p.fwd.d, p.fwd.elem);
    tc::fa2_bwd_tc_launch(variant, p);
    if (dq_swizzled)  // v7's accumulator layout
      tc::fa2_bwd_tc_dq_to_type(b.dq_acc.get(), b.dQ.get(), p.fwd.heads, p.fwd.nq, p.fwd.d, true, p.fwd.elem);
#if defined(FLASHSTEP_LADDER)
    else if (dq_quads)  // the ladder's rungs 34 and 35
      tc::fa2_bwd_tc_dq_quads_to_type(b.dq_acc.get(), b.dQ.get(), p.fwd.heads, p.fwd.nq, p.fwd.d, p.fwd.elem);
#endif
    else
      to_storage(b.dq_acc.get(), b.dQ.get(), b.dq_acc.size(), storage_of(o.forward.dtype));
  }
  int64_t peak() const { return MemoryTracker::get().peak - live0; }
};

std::vector<float> to_float_host(const DeviceBuffer<uint16_t>& x, Dtype t) {
  DeviceBuffer<float> f(x.size());
  from_storage(x.get(), f.get(), x.size(), storage_of(t));
  return f.to_host();
}

BenchTiming timing_of(const TimingStats& ts, int variant, int64_t peak) {
  BenchTiming bt;
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.variant = variant;
  bt.peak_bytes = peak;
  return bt;
}

}  // namespace

int tc_backward_variant_count() { return tc::fa2_bwd_tc_variant_count(); }

// The backward's kernel: on compute capability 9.0 with the sm_90a kernels built, the wgmma
// default (configuration 26 at d = 64 and 46 at d = 128: gpu/fa2_bwd_wgmma.cu, which says what it
// rests on); elsewhere mma.sync's configuration 2 (gpu/fa2_bwd_tc.cu).
int tc_backward_default_variant(int64_t d) {
  static const bool sm90 = [] {
    if (!available()) return false;
    const DeviceInfo info = device_info();
    return info.cc_major == 9 && info.cc_minor == 0;
  }();
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (sm90 && tc::bwd_config_sm90(int(d)) != 0) return tc::bwd_config_sm90(int(d));
#endif
  return 2;
}

TcBackwardVariant tc_backward_variant(int variant, int64_t d) {
  const tc::TcBwdVariantInfo i = tc::fa2_bwd_tc_variant(variant, int(d));
  if (!i.compiled && variant <= tc_backward_variant_count() && tc::bwd_variant_for_d(variant, int(d)))
    throw InputError("tensor-core backward variant " + std::to_string(variant) +
                     " is a rung of the kernel ladder, not built here: configure with -DFLASHSTEP_LADDER=ON "
                     "(gpu/ladder/); variant 0 picks the default");
  if (!i.compiled)
    throw InputError("no tensor-core backward variant " + std::to_string(variant) + " for d = " + std::to_string(d) +
                     " (variants 1-" + std::to_string(tc_backward_variant_count()) +
                     "; d = 64 or 128; " + bwd_variants_of_one_d(64) + " are d = 64 only, " + bwd_variants_of_one_d(128) +
                     " d = 128 only; " +
                     std::to_string(tc::kBwdWgmmaVariant) + "-" +
                     std::to_string(tc::kBwdWgmmaLast) + ", wgmma, need a build with sm_90a)");
  return TcBackwardVariant{i.variant, i.what, i.Br, i.Bc, i.warps, i.smem_bytes, i.sm90_only, i.ds_from_rounded_p};
}

bool tc_backward_variant_compiled(int variant, int64_t d) { return tc::fa2_bwd_tc_variant(variant, int(d)).compiled; }

void check_tc_backward_request(const Shape& s, float scale, const TcBackwardOptions& o) {
  if (o.forward.dtype != Dtype::fp32 && (s.d == 64 || s.d == 128) && o.variant != 0)
    tc_backward_variant(o.variant, s.d);  // before the device is looked for
  check_tc_request(s, scale, o.forward);  // the forward's checks, then the device's
  if (s.heads() * rows_pad(s.nq) > INT_MAX)
    throw InputError("sizes too large for the tensor-core backward (B x H x Nq < 2^31)");
  if ((s.nk + 63) / 64 > 65535)
    throw InputError("the tensor-core backward takes Nk <= 65535 x 64 (K/V blocks are the grid's second dimension)");
  const TcBackwardVariant v = tc_backward_variant(resolve(o.variant, s.d), s.d);
  const DeviceInfo info = device_info();
  if (v.sm90_only && !(info.cc_major == 9 && info.cc_minor == 0))
    throw InputError("tensor-core backward variant " + std::to_string(v.variant) +
                     " (wgmma) runs only on compute capability 9.0 (H100, H200); " + info.name + " is " +
                     std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor));
  if (v.smem_bytes > info.smem_per_block_optin)
    throw InputError("tensor-core backward variant " + std::to_string(v.variant) + " needs " +
                     std::to_string(v.smem_bytes) + " bytes of shared memory per block; " + info.name + " allows " +
                     std::to_string(info.smem_per_block_optin));
}

int64_t fa2_tc_backward_device_bytes(const Shape& s) {
  const int64_t h = s.heads();
  return 2 * h * (5 * s.nq + 4 * s.nk) * s.d  // Q, O, dO, dQ ; K, V, dK, dV (16-bit)
         + 4 * h * s.nq * (1 + s.d)            // lse, dQ's float32 accumulator
         + 8 * h * rows_pad(s.nq);             // D, L2
}

TcBackwardResult fa2_tc_backward(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                                 float scale, const TcBackwardOptions& o) {
  Run run(s, scale, o);
  run.b.upload(Q, K, V, dO, o.forward.dtype);
  for (DeviceBuffer<uint16_t>* x : {&run.b.O, &run.b.dQ, &run.b.dK, &run.b.dV}) x->poison();
  run.b.lse.poison();
  run.forward();
  run.backward();
  CUDA_CHECK(cudaDeviceSynchronize());
  TcBackwardResult r;
  const Dtype t = o.forward.dtype;
  r.O = to_float_host(run.b.O, t);
  r.lse = run.b.lse.to_host();
  r.dQ = to_float_host(run.b.dQ, t);
  r.dK = to_float_host(run.b.dK, t);
  r.dV = to_float_host(run.b.dV, t);
  r.forward_variant = run.forward_variant;
  r.variant = run.variant;
  r.device_bytes = run.peak();
  return r;
}

TcBackwardTiming bench_fa2_tc_backward(const Shape& s, float scale, const TcBackwardOptions& o, int warmup, int reps,
                                       uint64_t seed) {
  Run run(s, scale, o);
  run.b.fill_random(seed, o.forward.dtype);
  TcBackwardTiming t;
  t.forward = timing_of(median_ms([&] { run.forward(); }, warmup, reps), run.forward_variant, run.peak());
  t.backward = timing_of(median_ms([&] { run.backward(); }, warmup, reps), run.variant, run.peak());
  t.total = timing_of(median_ms([&] { run.forward(); run.backward(); }, warmup, reps), run.variant, run.peak());
  return t;
}

}  // namespace flashstep::gpu
