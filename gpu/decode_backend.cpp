// Host side of flash-decoding on the GPU: checks, buffers, the two launches (gpu/decode.cu).
#include "gpu/decode.h"

#include "gpu/backend_internal.h"
#include "gpu/decode_kernels.h"

#include <climits>

namespace flashstep::gpu {

using namespace internal;

namespace {

// The decode buffers: Q, K, V, O in the storage type, lse and the float32 partials.
struct DecodeBuffers {
  FlashBuffers io;
  DeviceBuffer<float> lse, O_part, lse_part;
  DecodeBuffers(const Shape& s, Dtype t, int64_t S) : io(s, t), lse(s.heads() * s.nq) {
    if (S > 1) {
      O_part.allocate(S * s.heads() * s.nq * s.d);
      lse_part.allocate(S * s.heads() * s.nq);
    }
  }
  void poison() {
    io.O.bytes.poison();
    lse.poison();
    O_part.poison();
    lse_part.poison();
  }
  DecodeParams params(const Shape& s, const Tiling& t, float scale, int64_t S, const Extras& x) const {
    DecodeParams p;
    p.Q = io.Q.bytes.get(); p.K = io.K.bytes.get(); p.V = io.V.bytes.get(); p.O = io.O.bytes.get();
    p.lse = lse.get();
    p.O_part = O_part.get();
    p.lse_part = lse_part.get();
    p.heads = s.heads();
    p.nq = int(s.nq); p.nk = int(s.nk); p.d = int(s.d);
    p.Bc = int(t.Bc); p.Tc = int(t.Tc); p.S = int(S);
    p.scale = scale;
    p.dtype = Storage(int(io.Q.dtype));
    p.x = x;
    return p;
  }
};

void run_decode_launches(const DecodeParams& p) {
  decode_split_launch(p);                   // FD L2-L14 (S = 1: O and lse directly)
  if (p.S > 1) decode_combine_launch(p);    // FD L16-L20
}

void check_decode(const Shape& s, const Tiling& t, const DecodeOptions& opt) {
  check_shape(s);
  if (t.Bc < 1 || t.Tc != (s.nk + t.Bc - 1) / t.Bc)
    throw InputError("the tiling does not match the shape (Tc = ceil(Nk/Bc))");
  if (!decode_supports_d(int(s.d)))
    throw InputError("the GPU decode kernels take d = 16, 32, 64, 128 or 256 (got d = " + std::to_string(s.d) + ")");
  if (opt.splits < 1 || opt.splits > t.Tc)
    throw InputError("--splits " + std::to_string(opt.splits) + " is out of range 1..Tc = " + std::to_string(t.Tc));
  if (opt.splits > 8192) throw InputError("the GPU combine takes at most 8192 splits");
  if (s.heads() * ((s.nq + 3) / 4) > INT_MAX / 2) throw InputError("too many heads x query rows for the decode grid");
  check_features(opt.features, s);
  check_memory(decode_device_bytes(s, opt.features.dtype, opt.splits), "flash-decoding");
}

}  // namespace

int64_t decode_device_bytes(const Shape& s, Dtype dtype, int64_t splits) {
  const int64_t h = s.heads(), b = dtype_bytes(dtype);
  int64_t bytes = h * (2 * s.nq + 2 * s.nk) * s.d * b + 4 * h * s.nq;
  if (dtype != Dtype::fp32) bytes += 4 * h * std::max(s.nq, s.nk) * s.d;  // staging
  if (splits > 1) bytes += 4 * splits * h * s.nq * (s.d + 1);
  return bytes;
}

DecodeResult decode_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                            const Tiling& t, const DecodeOptions& opt) {
  check_decode(s, t, opt);
  DecodeResult r;
  const PeakSince peak;
  DeviceExtras ex(opt.features, s);
  DecodeBuffers b(s, opt.features.dtype, opt.splits);
  b.io.upload(Q, K, V);
  b.poison();
  run_decode_launches(b.params(s, t, scale, opt.splits, ex.x));
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = b.io.O.to_host(b.io.staging);
  r.lse = b.lse.to_host();
  r.O_part = b.O_part.to_host();
  r.lse_part = b.lse_part.to_host();
  r.device_bytes = peak.bytes();
  return r;
}

BenchTiming bench_decode(const Shape& s, float scale, const Tiling& t, const DecodeOptions& opt, int warmup,
                         int reps, uint64_t seed) {
  check_decode(s, t, opt);
  const PeakSince peak;
  DeviceExtras ex(opt.features, s);
  DecodeBuffers b(s, opt.features.dtype, opt.splits);
  b.io.fill_random_inputs(seed);
  const DecodeParams p = b.params(s, t, scale, opt.splits, ex.x);
  const TimingStats ts = median_ms([&] { run_decode_launches(p); }, warmup, reps);
  return timed(BenchTiming{}, ts, peak);
}

double measure_copy_bandwidth(int64_t bytes, int warmup, int reps) {
  check_memory(2 * bytes, "the copy-bandwidth measurement");
  DeviceBuffer<uint8_t> a(bytes), b(bytes);
  CUDA_CHECK(cudaMemset(a.get(), 1, size_t(bytes)));
  const TimingStats ts = median_ms(
      [&] { CUDA_CHECK(cudaMemcpy(b.get(), a.get(), size_t(bytes), cudaMemcpyDeviceToDevice)); }, warmup, reps);
  return 2.0 * double(bytes) / (ts.median_ms * 1e-3) * 1e-9;
}

}  // namespace flashstep::gpu
