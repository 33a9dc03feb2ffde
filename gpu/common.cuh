// The one check-and-time harness shared by every kernel file and by the host code in gpu/.
//
//   CUDA_CHECK(call)        every runtime call; throws std::runtime_error naming file:line
//   CUDA_CHECK_LAUNCH()     after every kernel launch (cudaGetLastError, file:line)
//   DeviceBuffer<T>         cudaMalloc'd array; the MemoryTracker records live and peak bytes
//   median_ms(fn, w, r)     CUDA events around each of r runs after w warm-up runs (and at least
//                           warmup_ms() of them); the median
//
// Host-only code (backend.cpp) includes this header too: it needs the CUDA
// runtime API but no device code.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/warmup_env.h"

namespace flashstep::gpu {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error at ") + file + ":" + std::to_string(line) +
                           ": " + what + ": " + cudaGetErrorName(e) + " (" +
                           cudaGetErrorString(e) + ")");
}

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t fs_err_ = (call);                                                     \
    if (fs_err_ != cudaSuccess) ::flashstep::gpu::cuda_fail(fs_err_, #call, __FILE__, __LINE__); \
  } while (0)

// A launch reports configuration errors (too much shared memory, bad grid) only through
// cudaGetLastError; faults inside the kernel show up at the next synchronising call.
#define CUDA_CHECK_LAUNCH()                                                           \
  do {                                                                                \
    cudaError_t fs_err_ = cudaGetLastError();                                         \
    if (fs_err_ != cudaSuccess) ::flashstep::gpu::cuda_fail(fs_err_, "kernel launch", __FILE__, __LINE__); \
  } while (0)

// Opts a kernel in to `bytes` of dynamic shared memory (past the default 48 KiB) unless it
// already has that much; `opted` is the caller's per-kernel record (a function-local static).
template <typename Kernel>
void opt_in_shared(Kernel kernel, int64_t bytes, int64_t& opted) {
  if (bytes <= opted) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  opted = bytes;
}

// One (Br, Bc, d) of a kernel's compiled list, as text: "(64, 128, 64) ".
#define FS_CONFIG_NAME(br, bc, dd) "(" #br ", " #bc ", " #dd ") "

// The register-tiled variant 2 of fa1 and fa2 in 16-bit storage: compiled at the paper's blocks
// at M = 128 KiB alone (d = 64: Br = 64, Bc = 128; d = 128: Br = Bc = 64). Its other sizes (the
// Bc sweep of bench-gpu, which runs in float32) are float32 only: a 16-bit kernel for each would
// double the binary's instantiations for sizes no default picks.
constexpr bool v2_takes_16bit(int64_t br, int64_t bc, int64_t d) {
  return (br == 64 && bc == 128 && d == 64) || (br == 64 && bc == 64 && d == 128);
}
#define FS_V2_16BIT_NAMES "(64, 128, 64) (64, 64, 128)"

// Live and peak bytes of device memory this process allocated through DeviceBuffer.
struct MemoryTracker {
  int64_t live = 0, peak = 0;
  static MemoryTracker& get() {
    static MemoryTracker t;
    return t;
  }
  void reset_peak() { peak = live; }
};

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t count) { allocate(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }

  void allocate(int64_t count) {
    release();
    if (count <= 0) return;
    CUDA_CHECK(cudaMalloc(&p_, size_t(count) * sizeof(T)));
    n_ = count;
    auto& t = MemoryTracker::get();
    t.live += bytes();
    t.peak = std::max(t.peak, t.live);
  }
  void release() {
    if (!p_) return;
    cudaFree(p_);  // never throws from a destructor; a failed free is reported by the next call
    MemoryTracker::get().live -= bytes();
    p_ = nullptr;
    n_ = 0;
  }
  // Fills every byte with 0xFF: as float32 that is a NaN, so an element no kernel wrote
  // stays NaN and fails every comparison.
  void poison() {
    if (p_) CUDA_CHECK(cudaMemset(p_, 0xFF, bytes()));
  }
  void upload(const T* host, int64_t count) {
    CUDA_CHECK(cudaMemcpy(p_, host, size_t(count) * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* host, int64_t count) const {
    CUDA_CHECK(cudaMemcpy(host, p_, size_t(count) * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(static_cast<size_t>(n_));
    if (n_) download(h.data(), n_);
    return h;
  }
  T* get() const { return p_; }
  int64_t size() const { return n_; }
  int64_t bytes() const { return n_ * int64_t(sizeof(T)); }

 private:
  T* p_ = nullptr;
  int64_t n_ = 0;
};

class EventPair {
 public:
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&a_));
    CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~EventPair() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void start() { CUDA_CHECK(cudaEventRecord(a_)); }
  float stop_ms() {
    CUDA_CHECK(cudaEventRecord(b_));
    CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return ms;
  }

 private:
  cudaEvent_t a_{}, b_{};
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
};

int timing_batch();  // gpu/backend.h: calls per timed sample

// GPU time the warm-up runs take at least (FLASHSTEP_WARMUP_MS, default 25; 0: the count
// alone): the SM clock leaves its idle state (345 MHz on the H200) only under load, and a few
// runs of a short kernel after host work or a copy (which leaves the SMs idle) end before it has.
inline double warmup_ms() {
  static const double ms = parse_warmup_ms(std::getenv("FLASHSTEP_WARMUP_MS"));
  return ms;
}

// Times fn() with CUDA events: `warmup` untimed runs (module load, caches, clocks), continued
// until they have taken warmup_ms() of GPU time (when warmup > 0), then `reps` timed samples,
// each timing_batch() runs between their own pair of events (the time per run); returns the
// median and the spread.
template <typename F>
TimingStats median_ms(F&& fn, int warmup, int reps) {
  for (int w = 0; w < warmup; ++w) fn();
  CUDA_CHECK(cudaDeviceSynchronize());
  EventPair ev;
  double warm = 0;
  for (int k = 0; warmup > 0 && warm < warmup_ms() && k < 100000; ++k) {
    ev.start();
    fn();
    warm += ev.stop_ms();
  }
  std::vector<double> t;
  const int batch = timing_batch();
  for (int r = 0; r < reps; ++r) {
    ev.start();
    for (int b = 0; b < batch; ++b) fn();
    t.push_back(ev.stop_ms() / batch);
  }
  std::sort(t.begin(), t.end());
  TimingStats s;
  s.reps = reps;
  if (!t.empty()) {
    s.median_ms = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
    s.min_ms = t.front();
    s.max_ms = t.back();
  }
  return s;
}

}  // namespace flashstep::gpu
