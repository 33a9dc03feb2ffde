// Host side of the tensor-core path (gpu/tensor_core.h): request checks, device buffers,
// uploads in the 16-bit type, the launches (gpu/fa2_tc.cu; cuBLAS and gpu/standard_tc.cu for
// standard attention) and timing.
#include "gpu/tensor_core.h"

#include "gpu/common.cuh"
#include "gpu/kernels.h"
#include "gpu/tc_launch.h"
#include "gpu/tc_params.h"

#include <cublas_v2.h>

#include <dlfcn.h>

#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

namespace flashstep::gpu {

namespace {

using tc::Elem;

// cuBLAS is opened on first use, not linked: loading libcublasLt (over 500 MB) and running its
// initialisers took about 0.35 s at every start of the program, `flashstep --version` included,
// though only standard attention on tensor cores calls it. The library is looked for as the
// dynamic loader finds it (LD_LIBRARY_PATH, the system's cache), then in the CUDA toolkit's folder
// found when the program was built.
struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long int,
                                         const void*, cudaDataType, int, long long int, const void*, void*,
                                         cudaDataType, int, long long int, int, cublasComputeType_t,
                                         cublasGemmAlgo_t) = nullptr;
};

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef FLASHSTEP_CUDA_LIBRARY_DIR
    if (!lib) lib = dlopen((std::string(FLASHSTEP_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) {
      const char* why = dlerror();
      throw InputError("standard attention on tensor cores needs cuBLAS, and " + name + " could not be opened (" +
                               (why ? why : "no reason given") + "): add its folder to LD_LIBRARY_PATH");
    }
    CublasApi a;
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn) throw InputError(name + " has no " + symbol + ": not the cuBLAS this program was built for");
    };
    bind(a.create, "cublasCreate_v2");
    bind(a.status_string, "cublasGetStatusString");
    bind(a.gemm_strided_batched, "cublasGemmStridedBatchedEx");
    return a;
  }();
  return api;
}

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cublasStatus_t st_ = (call);                                                      \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                       \
      throw std::runtime_error(std::string("cuBLAS error at " __FILE__ ":") +               \
                               std::to_string(__LINE__) + ": " #call ": " +                 \
                               cublas_api().status_string(st_));                            \
  } while (0)

Elem elem_of(Dtype t) { return t == Dtype::fp16 ? Elem::fp16 : Elem::bf16; }
Storage storage_of(Dtype t) { return t == Dtype::fp16 ? Storage::fp16 : Storage::bf16; }
cudaDataType cuda_type(Dtype t) { return t == Dtype::fp16 ? CUDA_R_16F : CUDA_R_16BF; }

std::string mib(int64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

void check_device_memory(int64_t need, const char* what) {
  const DeviceInfo info = device_info();
  if (need + (int64_t(64) << 20) > info.free_bytes)
    throw InputError(std::string("not enough device memory: ") + what + " needs " + mib(need) +
                     ", " + mib(info.free_bytes) + " free on " + info.name);
}

int resolve(int variant, int64_t d, bool causal) { return variant == 0 ? tc_default_variant(d, causal) : variant; }

// Q, K, V, O in the 16-bit type, lse float32, kv_lens (int) on the device.
struct TcBuffers {
  DeviceBuffer<uint16_t> Q, K, V, O;
  DeviceBuffer<float> lse;
  DeviceBuffer<int> kv_lens;
  TcBuffers(const Shape& s, const TcOptions& o)
      : Q(s.heads() * s.nq * s.d), K(s.heads() * s.nk * s.d), V(s.heads() * s.nk * s.d),
        O(s.heads() * s.nq * s.d), lse(s.heads() * s.nq) {
    if (!o.kv_lens.empty()) {
      const std::vector<int> lens(o.kv_lens.begin(), o.kv_lens.end());
      kv_lens.allocate(int64_t(lens.size()));
      kv_lens.upload(lens.data(), int64_t(lens.size()));
    }
  }
  // float32 values rounded to the type on the device (the same round-to-nearest-even as
  // core/types.h's round_to), through one float32 staging buffer.
  void upload_float(const float* q, const float* k, const float* v, Dtype t) {
    DeviceBuffer<float> stage(std::max(Q.size(), K.size()));
    for (auto [src, dst] : {std::pair{q, &Q}, std::pair{k, &K}, std::pair{v, &V}}) {
      stage.upload(src, dst->size());
      to_storage(stage.get(), dst->get(), dst->size(), storage_of(t));
    }
  }
  void upload_bits(const uint16_t* q, const uint16_t* k, const uint16_t* v) {
    Q.upload(q, Q.size());
    K.upload(k, K.size());
    V.upload(v, V.size());
  }
  void fill_random(uint64_t seed, Dtype t) {
    DeviceBuffer<float> stage(std::max(Q.size(), K.size()));
    uint64_t n = 0;
    for (DeviceBuffer<uint16_t>* dst : {&Q, &K, &V}) {
      ::flashstep::gpu::fill_random(stage.get(), dst->size(), seed * 3 + n++);
      to_storage(stage.get(), dst->get(), dst->size(), storage_of(t));
    }
  }
  tc::TcParams params(const Shape& s, float scale, const TcOptions& o) const {
    return make_tc_params(Q.get(), K.get(), V.get(), O.get(), lse.get(), kv_lens.get(), s, scale, o);
  }
  TcResult result(Dtype t) const {
    TcResult r;
    DeviceBuffer<float> Of(O.size());
    from_storage(O.get(), Of.get(), O.size(), storage_of(t));
    r.O = Of.to_host();
    r.lse = lse.to_host();
    return r;
  }
};

// Standard attention's two N^2 buffers and the cuBLAS handle.
cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    CUBLAS_CHECK(cublas_api().create(&x));
    return x;
  }();
  return h;
}

struct StandardBuffers {
  DeviceBuffer<uint16_t> S, P;
  explicit StandardBuffers(const Shape& s) : S(s.heads() * s.nq * s.nk), P(s.heads() * s.nq * s.nk) {}
};

// Alg0 on tensor cores. Row-major X (r x c) is column-major X^T, so S^T (Nk x Nq) = K Q^T
// with K^T as stored (d x Nk) transposed, and O^T (d x Nq) = V^T P^T, both as stored.
void standard_run(const TcBuffers& b, StandardBuffers& sb, const Shape& s, float scale,
                  const TcOptions& o) {
  const tc::TcParams p = b.params(s, scale, o);
  const int nq = int(s.nq), nk = int(s.nk), d = int(s.d);
  const cudaDataType t = cuda_type(o.dtype);
  const float zero = 0.0f, one = 1.0f;
  // Alg0 L1: S = tau Q K^T, float32 accumulation, stored in the input type.
  CUBLAS_CHECK(cublas_api().gemm_strided_batched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, nk, nq, d, &scale,
                                                 b.K.get(), t, d, int64_t(nk) * d, b.Q.get(), t, d,
                                                 int64_t(nq) * d, &zero, sb.S.get(), t, nk,
                                                 int64_t(nq) * nk, int(s.heads()), CUBLAS_COMPUTE_32F,
                                                 CUBLAS_GEMM_DEFAULT));
  // Alg0 L2: P = softmax(S), read S and write P.
  tc::softmax_rows_tc(sb.S.get(), sb.P.get(), b.lse.get(), s.heads() * s.nq, nq, nk, p.elem, p.mask);
  // Alg0 L3: O = P V.
  CUBLAS_CHECK(cublas_api().gemm_strided_batched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, d, nq, nk, &one,
                                                 b.V.get(), t, d, int64_t(nk) * d, sb.P.get(), t, nk,
                                                 int64_t(nq) * nk, &zero, b.O.get(), t, d,
                                                 int64_t(nq) * d, int(s.heads()), CUBLAS_COMPUTE_32F,
                                                 CUBLAS_GEMM_DEFAULT));
}

int64_t check_and_mark(bool standard, const Shape& s, float scale, const TcOptions& o) {
  check_tc_request(s, scale, o);
  if (standard)
    check_device_memory(standard_tc_device_bytes(s), "standard attention (S and P are B x H x Nq x Nk each)");
  else
    check_device_memory(fa2_tc_device_bytes(s), "FlashAttention-2 (tensor cores)");
  MemoryTracker::get().reset_peak();
  return MemoryTracker::get().live;
}

// One request on either path, FlashAttention-2 or standard attention: checked before any
// device memory is allocated, then its buffers.
struct Run {
  bool standard;
  Shape s;
  float scale;
  TcOptions o;
  int64_t live0;
  TcBuffers b;
  StandardBuffers sb;
  int variant;
  Run(bool standard_, const Shape& s_, float scale_, const TcOptions& o_)
      : standard(standard_), s(s_), scale(scale_), o(o_), live0(check_and_mark(standard_, s_, scale_, o_)),
        b(s_, o_), sb(standard_ ? s_ : Shape{}), variant(standard_ ? 0 : resolve(o_.variant, s_.d, o_.causal)) {}
  void launch() {
    if (standard) standard_run(b, sb, s, scale, o);
    else tc::fa2_tc_launch(variant, b.params(s, scale, o));
  }
  int64_t peak() const { return MemoryTracker::get().peak - live0; }
};

template <typename Upload>
TcResult run_path(bool standard, const Shape& s, float scale, const TcOptions& o, Upload&& upload) {
  Run run(standard, s, scale, o);
  upload(run.b);
  run.b.O.poison();
  run.b.lse.poison();
  run.launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  TcResult r = run.b.result(o.dtype);
  r.variant = run.variant;
  r.device_bytes = run.peak();
  return r;
}

// Timing of either path on device-generated inputs (gpu/common.cuh's median_ms).
BenchTiming bench_path(bool standard, const Shape& s, float scale, const TcOptions& o, int warmup,
                       int reps, uint64_t seed) {
  Run run(standard, s, scale, o);
  run.b.fill_random(seed, o.dtype);
  const TimingStats ts = median_ms([&] { run.launch(); }, warmup, reps);
  BenchTiming bt;
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.variant = run.variant;
  bt.peak_bytes = run.peak();
  return bt;
}

}  // namespace

int tc_variant_count() { return tc::fa2_tc_variant_count(); }

bool tc_variant_built(int variant, int64_t d) { return tc::fa2_tc_variant(variant, int(d)).compiled; }

int tc_hopper_default_variant(int64_t d, bool causal) {
#if defined(FLASHSTEP_HAVE_WGMMA)
  return tc::fwd_config_sm90(int(d), causal);
#else
  (void)d, (void)causal;
  return 0;
#endif
}

std::vector<int> tc_bc_sweep_variants() { return {101, 102, 103, 104}; }

// The forward's kernel: on compute capability 9.0 with the sm_90a kernels built, the Hopper
// default for (d, causal) (gpu/fa3_forward.cu's fwd_config_sm90); elsewhere mma.sync's
// configuration 11 (gpu/fa2_tc.cu).
int tc_default_variant(int64_t d, bool causal) {
  static const bool sm90 = [] {
    if (!available()) return false;
    const DeviceInfo info = device_info();
    return info.cc_major == 9 && info.cc_minor == 0;
  }();
#if defined(FLASHSTEP_HAVE_WGMMA)
  if (sm90) {
    const int v = tc::fwd_config_sm90(int(d), causal);
    if (v != 0) return v;
  }
#else
  (void)causal;
#endif
  return 11;
}

TcVariant tc_variant(int variant, int64_t d) {
  const tc::TcVariantInfo i = tc::fa2_tc_variant(variant, int(d));
  if (!i.compiled) {
    if (tc::tc_ladder_rung(variant) && (d == 64 || d == 128))
      throw InputError("tensor-core variant " + std::to_string(variant) +
                       " is a rung of the kernel ladder, not built here: configure with -DFLASHSTEP_LADDER=ON "
                       "(gpu/ladder/); variant 0 picks the default");
    throw InputError("no tensor-core variant " + std::to_string(variant) + " for d = " +
                     std::to_string(d) + " (variants 1-" + std::to_string(tc_variant_count()) +
                     ", d = 64 or 128)");
  }
  return TcVariant{i.variant, i.what, i.Br, i.Bc, i.warps, i.stages, i.smem_bytes};
}

void check_tc_request(const Shape& s, float scale, const TcOptions& o) {
  if (o.dtype == Dtype::fp32)
    throw InputError("the tensor-core kernels take bf16 or fp16 inputs (--dtype bf16|fp16), not fp32");
  if (s.d != 64 && s.d != 128)
    throw InputError("the tensor-core kernels support d = 64 and d = 128 (got d = " +
                     std::to_string(s.d) + ")");
  if (s.B < 1 || s.H < 1 || s.nq < 1 || s.nk < 1)
    throw InputError("B, H, Nq and Nk must be at least 1");
  if (s.heads() > 65535) throw InputError("B x H must be at most 65535 (the grid's second dimension)");
  if (o.causal && (s.nq + 63) / 64 > 65535)  // causal grids of v11, v12 are (heads, Q blocks)
    throw InputError("causal tensor-core attention takes Nq <= 65535 x 64 (Q blocks are the grid's second dimension)");
  if (s.nq > INT_MAX / 2 || s.nk > INT_MAX / 2 || s.heads() * s.nq > INT_MAX)
    throw InputError("sizes too large for the tensor-core kernels (Nq, Nk < 2^30, B x H x Nq < 2^31)");
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw InputError("the softmax scale must be positive and finite");
  if (o.kv_len < -1 || o.kv_len > s.nk)
    throw InputError("kv_len must be in [0, Nk] (got " + std::to_string(o.kv_len) + ")");
  if (!o.kv_lens.empty()) {
    if (int64_t(o.kv_lens.size()) != s.B)
      throw InputError("kv_lens needs one length per batch entry (" + std::to_string(s.B) +
                       "), got " + std::to_string(o.kv_lens.size()));
    for (int64_t k : o.kv_lens)
      if (k < 0 || k > s.nk) throw InputError("each kv_lens value must be in [0, Nk]");
  }
  if (o.variant != 0) tc_variant(o.variant, s.d);
  const DeviceInfo info = device_info();  // InputError when there is no GPU
  if (info.cc_major < 8)
    throw InputError("the tensor-core kernels need compute capability 8.0 or newer (" + info.name +
                     " is " + std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) + ")");
  if (tc::fa2_tc_variant(resolve(o.variant, s.d, o.causal), int(s.d)).sm90_only && !(info.cc_major == 9 && info.cc_minor == 0))
    throw InputError("the wgmma kernels run only on compute capability 9.0 (H100, H200); " +
                     info.name + " is " + std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor));
  const int64_t smem = tc_variant(resolve(o.variant, s.d, o.causal), s.d).smem_bytes;
  if (smem > info.smem_per_block_optin)
    throw InputError("tensor-core variant needs " + std::to_string(smem) +
                     " bytes of shared memory per block; " + info.name + " allows " +
                     std::to_string(info.smem_per_block_optin));
}

int64_t fa2_tc_device_bytes(const Shape& s) {
  return 2 * s.heads() * (2 * s.nq + 2 * s.nk) * s.d + 4 * s.heads() * s.nq;
}
int64_t standard_tc_device_bytes(const Shape& s) {
  return fa2_tc_device_bytes(s) + 2 * 2 * s.heads() * s.nq * s.nk;
}

TcResult fa2_tc_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                        const TcOptions& o) {
  return run_path(false, s, scale, o, [&](TcBuffers& b) { b.upload_float(Q, K, V, o.dtype); });
}
TcResult fa2_tc_forward_bits(const uint16_t* Q, const uint16_t* K, const uint16_t* V, const Shape& s,
                             float scale, const TcOptions& o) {
  return run_path(false, s, scale, o, [&](TcBuffers& b) { b.upload_bits(Q, K, V); });
}
TcResult standard_tc_forward(const float* Q, const float* K, const float* V, const Shape& s,
                             float scale, const TcOptions& o) {
  return run_path(true, s, scale, o, [&](TcBuffers& b) { b.upload_float(Q, K, V, o.dtype); });
}
TcResult standard_tc_forward_bits(const uint16_t* Q, const uint16_t* K, const uint16_t* V,
                                  const Shape& s, float scale, const TcOptions& o) {
  return run_path(true, s, scale, o, [&](TcBuffers& b) { b.upload_bits(Q, K, V); });
}

BenchTiming bench_fa2_tc(const Shape& s, float scale, const TcOptions& o, int warmup, int reps,
                         uint64_t seed) {
  return bench_path(false, s, scale, o, warmup, reps, seed);
}
BenchTiming bench_standard_tc(const Shape& s, float scale, const TcOptions& o, int warmup, int reps,
                              uint64_t seed) {
  return bench_path(true, s, scale, o, warmup, reps, seed);
}

void open_cublas() { cublas_api(); }

}  // namespace flashstep::gpu
