// What the flash kernels (fa1, fa2; every variant) share around their pseudocode lines: where a
// thread block works (its Q block i and head h, with that head's mask and tensor rows), and how
// a kernel is launched over (i, head) for a storage type.
#pragma once
#include "gpu/common.cuh"
#include "gpu/device_mask.h"
#include "gpu/kernels.h"
#include "gpu/storage.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu {

// Thread block (i = blockIdx.x, h = blockIdx.y): Q block i of head h. Q, O point at row row0
// of the head (Q_i, O_i); K, V at the head's first row (K_j starts at K + col0 * d).
template <typename ST>
struct QBlock {
  int64_t h;
  int row0, br;  // first row and number of valid rows of Q block i
  KeyMask mask;  // the mask of h's batch entry (its own key length with kv_lens)
  const ST *Q, *K, *V;
  ST* O;
  template <typename Params>
  __device__ QBlock(const Params& p, int Br)
      : h(blockIdx.y),
        row0(int(blockIdx.x) * Br),
        br(min(Br, p.nq - row0)),
        mask(p.x.mask.for_batch(h / p.x.heads_per_batch)),
        Q(static_cast<const ST*>(p.Q) + (h * p.nq + row0) * p.d),
        K(static_cast<const ST*>(p.K) + h * p.nk * p.d),
        V(static_cast<const ST*>(p.V) + h * p.nk * p.d),
        O(static_cast<ST*>(p.O) + (h * p.nq + row0) * p.d) {}
};

// The plain variants' (1) shared tiles, in this order: Q_i (Br x d), K_j (Bc x kld with
// kld = d + 1, so threads of one S row hit different banks), V_j (Bc x d), S_ij then P~_ij
// (Br x Bc). The kernel's own per-row arrays start at `rest`.
struct PlainTiles {
  int kld;
  float *Qi, *Kj, *Vj, *S, *rest;
  __device__ PlainTiles(float* smem, int Br, int Bc, int d)
      : kld(d + 1), Qi(smem), Kj(Qi + Br * d), Vj(Kj + Bc * kld), S(Vj + Bc * d), rest(S + Br * Bc) {}
  static int64_t floats(int Br, int Bc, int d) {
    return int64_t(Br) * d + int64_t(Bc) * (d + 1) + int64_t(Bc) * d + int64_t(Br) * Bc;
  }
};

// Calls f(ST{}) with ST the C++ type of storage type t (float, __half, __nv_bfloat16).
template <typename F>
void with_storage(Storage t, F&& f) {
  switch (t) {
    case Storage::fp32: return f(float{});
    case Storage::fp16: return f(__half{});
    case Storage::bf16: return f(__nv_bfloat16{});
  }
}

// One thread block per (Q block i, head), `bytes` of dynamic shared memory (opted in past the
// default 48 KiB once per kernel: `opted` is the caller's static for this kernel).
template <typename Kernel, typename Params, typename... Args>
void launch_per_q_block(Kernel kernel, const Params& p, int threads, int64_t bytes, int64_t& opted,
                        Args... args) {
  opt_in_shared(kernel, bytes, opted);
  const dim3 grid(unsigned(p.Tr), unsigned(p.heads));
  kernel<<<grid, threads, size_t(bytes)>>>(p, args...);
  CUDA_CHECK_LAUNCH();
}

// A flash kernel's variants: 1 (plain) takes any block sizes that fit in shared memory; 2
// (register-tiled) has an instance for each (Br, Bc, d) in its file's compiled list, which
// `v2` looks up (launch null: no instance for these sizes).
template <typename Params, typename... Args>
struct Variants {
  struct V2 {
    int64_t smem_bytes = -1;
    void (*launch)(const Params&, Args...) = nullptr;
  };
  int64_t (*v1_smem_bytes)(int Br, int Bc, int d);
  void (*launch_v1)(const Params&, Args...);
  V2 (*v2)(int Br, int Bc, int d);
  const char* name;

  // Shared memory a variant needs per thread block; -1 where it has no kernel for the sizes.
  int64_t smem_bytes(int variant, int Br, int Bc, int d) const {
    return variant == 1 ? v1_smem_bytes(Br, Bc, d) : variant == 2 ? v2(Br, Bc, d).smem_bytes : -1;
  }
  void launch(int variant, const Params& p, Args... args) const {
    if (variant == 1) return launch_v1(p, args...);
    const V2 k = v2(p.Br, p.Bc, p.d);
    if (!k.launch)  // resolve_variant (backend.cpp) checks this before any work
      throw std::runtime_error(std::string(name) + " variant 2 has no instance for these block sizes");
    k.launch(p, args...);
  }
};

}  // namespace flashstep::gpu
