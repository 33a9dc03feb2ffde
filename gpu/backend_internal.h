// Host-side pieces the GPU backend's files share (backend.cpp, decode_backend.cpp): the checks
// made before any device memory is touched, the storage-type buffers and the peak-memory count.
// Host code only (CUDA runtime API, no device code).
#pragma once
#include "gpu/backend.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"

#include <climits>
#include <sstream>

namespace flashstep::gpu::internal {

inline std::string gib(int64_t bytes) {
  std::ostringstream os;
  os.precision(3);
  os << double(bytes) / double(int64_t(1) << 30) << " GiB";
  return os.str();
}

inline void check_shape(const Shape& s) {
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
inline void check_memory(int64_t need, const char* what) {
  const DeviceInfo info = device_info();
  const int64_t margin = int64_t(64) << 20;  // the runtime and the kernels' own needs
  if (need + margin > info.free_bytes)
    throw InputError(std::string("not enough device memory: ") + what + " needs " + gib(need) +
                     ", but only " + gib(info.free_bytes) + " of " + gib(info.total_bytes) +
                     " is free on " + info.name);
}

static_assert(int(Dtype::fp32) == int(Storage::fp32) && int(Dtype::fp16) == int(Storage::fp16) &&
                  int(Dtype::bf16) == int(Storage::bf16),
              "kernels.h's Storage follows core/types.h's Dtype");

// Algorithm 2's additions as the kernels take them; kv_lens copied to the device.
struct DeviceExtras {
  DeviceBuffer<int64_t> kv_lens;
  Extras x;
  DeviceExtras(const Features& f, const Shape& s) {
    static_cast<Mask&>(x.mask) = f.mask;
    x.mask.offset = s.nk - s.nq;
    if (!f.kv_lens.empty()) {
      kv_lens.allocate(int64_t(f.kv_lens.size()));
      kv_lens.upload(f.kv_lens.data(), kv_lens.size());
      x.mask.kv_lens = kv_lens.get();
    }
    x.dropout = float(f.dropout);
    x.seed = f.seed;
    x.heads_per_batch = s.H;
  }
};

inline void require_fp32(const Features& f) {
  if (f.dtype != Dtype::fp32)
    throw InputError(std::string("--dtype ") + dtype_name(f.dtype) + " on the GPU is implemented for "
                     "--schedule fa1 and fa2; the standard-attention baseline runs in float32 "
                     "(use --dtype fp32)");
}

// A tensor in the storage type on the device (raw bytes; 0xFF.. is NaN in every type).
struct Stored {
  DeviceBuffer<uint8_t> bytes;
  int64_t count = 0;
  Dtype dtype = Dtype::fp32;
  void allocate(int64_t n, Dtype t) {
    count = n;
    dtype = t;
    bytes.allocate(n * dtype_bytes(t));
  }
  // Float32 values already on the device, rounded to nearest even for a 16-bit type.
  void store_from_device(const float* src) {
    if (dtype == Dtype::fp32)
      CUDA_CHECK(cudaMemcpy(bytes.get(), src, size_t(count) * 4, cudaMemcpyDeviceToDevice));
    else
      to_storage(src, bytes.get(), count, Storage(int(dtype)));
  }
  // Float32 host data, rounded the same way (through `staging` for a 16-bit type).
  void upload(const float* host, DeviceBuffer<float>& staging) {
    if (dtype == Dtype::fp32) {
      CUDA_CHECK(cudaMemcpy(bytes.get(), host, size_t(count) * 4, cudaMemcpyHostToDevice));
      return;
    }
    staging.upload(host, count);
    store_from_device(staging.get());
  }
  std::vector<float> to_host(DeviceBuffer<float>& staging) const {
    std::vector<float> h(static_cast<size_t>(count));
    if (dtype == Dtype::fp32) {
      CUDA_CHECK(cudaMemcpy(h.data(), bytes.get(), size_t(count) * 4, cudaMemcpyDeviceToHost));
      return h;
    }
    from_storage(bytes.get(), staging.get(), count, Storage(int(dtype)));
    staging.download(h.data(), count);
    return h;
  }
};

// Q, K, V, O of the flash schedules in the storage type, and a float32 staging buffer for the
// conversions (16-bit types only). Inputs come from the host or, for benchmarks, from
// fill_random on the device.
struct FlashBuffers {
  Stored Q, K, V, O;
  DeviceBuffer<float> staging;
  FlashBuffers(const Shape& s, Dtype t) {
    const int64_t h = s.heads();
    Q.allocate(h * s.nq * s.d, t);
    K.allocate(h * s.nk * s.d, t);
    V.allocate(h * s.nk * s.d, t);
    O.allocate(h * s.nq * s.d, t);
    if (t != Dtype::fp32) staging.allocate(h * std::max(s.nq, s.nk) * s.d);
  }
  void upload(const float* q, const float* k, const float* v) {
    Q.upload(q, staging);
    K.upload(k, staging);
    V.upload(v, staging);
  }
  // Random inputs made in float32 on the device (in place, or in staging and then rounded).
  void fill_random_inputs(uint64_t seed) {
    Stored* dst[3] = {&Q, &K, &V};
    for (int w = 0; w < 3; ++w) {
      if (dst[w]->dtype == Dtype::fp32) {
        fill_random(reinterpret_cast<float*>(dst[w]->bytes.get()), dst[w]->count, seed * 3 + uint64_t(w));
      } else {
        fill_random(staging.get(), dst[w]->count, seed * 3 + uint64_t(w));
        dst[w]->store_from_device(staging.get());
      }
    }
  }
  template <typename Params>
  void set(Params& p, const Shape& s, const Tiling& t, float scale, const Extras& x) const {
    p.Q = Q.bytes.get(); p.K = K.bytes.get(); p.V = V.bytes.get(); p.O = O.bytes.get();
    p.heads = s.heads();
    p.nq = int(s.nq); p.nk = int(s.nk); p.d = int(s.d);
    p.Br = int(t.Br); p.Bc = int(t.Bc); p.Tr = int(t.Tr); p.Tc = int(t.Tc);
    p.scale = scale;
    p.dtype = Storage(int(Q.dtype));
    p.x = x;
  }
};

struct Fa1Buffers : FlashBuffers {
  DeviceBuffer<float> l, m;
  Fa1Buffers(const Shape& s, Dtype t) : FlashBuffers(s, t), l(s.heads() * s.nq), m(s.heads() * s.nq) {}
  void poison_outputs() {
    O.bytes.poison();
    l.poison();
    m.poison();
  }
  Fa1Params params(const Shape& s, const Tiling& t, float scale, const Extras& x) const {
    Fa1Params p;
    set(p, s, t, scale, x);
    p.l = l.get();
    p.m = m.get();
    return p;
  }
};

struct Fa2Buffers : FlashBuffers {
  DeviceBuffer<float> lse;
  Fa2Buffers(const Shape& s, Dtype t) : FlashBuffers(s, t), lse(s.heads() * s.nq) {}
  void poison_outputs() {
    O.bytes.poison();
    lse.poison();
  }
  Fa2Params params(const Shape& s, const Tiling& t, float scale, const Extras& x) const {
    Fa2Params p;
    set(p, s, t, scale, x);
    p.lse = lse.get();
    return p;
  }
};

struct StandardBuffers {
  DeviceBuffer<float> Q, K, V, S, P, O, lse;
};

inline StandardBuffers alloc_standard(const Shape& s) {
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

// The peak device memory allocated from construction on (Result::device_bytes, bench peaks).
struct PeakSince {
  int64_t live0;
  PeakSince() {
    MemoryTracker::get().reset_peak();
    live0 = MemoryTracker::get().live;
  }
  int64_t bytes() const { return MemoryTracker::get().peak - live0; }
};

// A benchmark's timing and peak device memory as BenchTiming.
inline BenchTiming timed(BenchTiming bt, const TimingStats& ts, const PeakSince& peak) {
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.peak_bytes = peak.bytes();
  return bt;
}

}  // namespace flashstep::gpu::internal
