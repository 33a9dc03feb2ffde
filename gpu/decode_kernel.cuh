// The split-KV kernel template of flash-decoding (its description: gpu/decode.cu), shared by
// gpu/decode.cu (the defaults: variants 3, 5, 9) and gpu/ladder/decode_rungs.cu (the ladder's
// variants 4, 6, 7, 8). Everything is in an anonymous namespace: each including file gets its own
// copies of what it instantiates.
#pragma once
#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/decode_kernels.h"
#include "gpu/flash_block.cuh"
#include "gpu/mbarrier_ptx.cuh"
#include "gpu/register_tile.cuh"
#include "gpu/tc_ptx.cuh"

#include <cuda_fp8.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace flashstep::gpu {

namespace {

// cp.async of 16 bytes, zero-filled past src_bytes; with kPrefetch256 the .L2::256B hint.
template <bool kPrefetch256>
__device__ __forceinline__ void cp_async16_hint(uint32_t dst, const void* src, int src_bytes) {
  if constexpr (kPrefetch256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  else
    tc::cp_async16(dst, src, src_bytes);
}

// A bulk copy global -> shared completing on mbarrier `bar`; with kHint under the L2 cache
// policy `policy`.
template <bool kHint>
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, uint64_t policy) {
  if constexpr (kHint) tc::bulk_copy_g2s_hint(dst, src, bytes, bar, policy);
  else tc::bulk_copy_g2s(dst, src, bytes, bar);
}

// Eight consecutive elements of a row as float32 (src aligned to 16 bytes).
template <typename T>
__device__ __forceinline__ void load8(const T* src, float (&v)[8]);
template <>
__device__ __forceinline__ void load8<float>(const float* src, float (&v)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(src));
  const float4 b = __ldg(reinterpret_cast<const float4*>(src) + 1);
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
template <typename H2, typename Conv>
__device__ __forceinline__ void unpack8(uint4 u, float (&v)[8], Conv conv) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = conv(*reinterpret_cast<const H2*>(&w[k]));
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}
template <>
__device__ __forceinline__ void load8<__half>(const __half* src, float (&v)[8]) {
  unpack8<__half2>(__ldg(reinterpret_cast<const uint4*>(src)), v, [](__half2 h) { return __half22float2(h); });
}
template <>
__device__ __forceinline__ void load8<__nv_bfloat16>(const __nv_bfloat16* src, float (&v)[8]) {
  unpack8<__nv_bfloat162>(__ldg(reinterpret_cast<const uint4*>(src)), v,
                          [](__nv_bfloat162 h) { return __bfloat1622float2(h); });
}

// Eight e4m3 codes (one per byte, the first in the lowest) as float32: e4m3 -> f16 pairs by
// cvt.rn.f16x2.e4m3x2, then f16 -> f32; both exact (every e4m3 value is an f16 value).
__device__ __forceinline__ void e4m3x8_to_float(uint2 u, float (&v)[8]) {
  const uint32_t w[2] = {u.x, u.y};
#pragma unroll
  for (int k = 0; k < 2; ++k) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w[k] >> (16 * h)), __NV_E4M3);
      const float2 f = __half22float2(__half2(r));
      v[4 * k + 2 * h] = f.x;
      v[4 * k + 2 * h + 1] = f.y;
    }
  }
}
template <>
__device__ __forceinline__ void load8<__nv_fp8_e4m3>(const __nv_fp8_e4m3* src, float (&v)[8]) {
  e4m3x8_to_float(__ldg(reinterpret_cast<const uint2*>(src)), v);
}

// Sum over the G lanes of a group (G a power of two dividing 32; groups are lane-aligned).
template <int G>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// Eight consecutive elements of a row in shared memory, as float32 (16-byte aligned).
template <typename T>
__device__ __forceinline__ void smem_load8(const T* src, float (&v)[8]);
template <>
__device__ __forceinline__ void smem_load8<float>(const float* src, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(src)[0], b = reinterpret_cast<const float4*>(src)[1];
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
template <>
__device__ __forceinline__ void smem_load8<__half>(const __half* src, float (&v)[8]) {
  unpack8<__half2>(*reinterpret_cast<const uint4*>(src), v, [](__half2 h) { return __half22float2(h); });
}
template <>
__device__ __forceinline__ void smem_load8<__nv_bfloat16>(const __nv_bfloat16* src, float (&v)[8]) {
  unpack8<__nv_bfloat162>(*reinterpret_cast<const uint4*>(src), v, [](__nv_bfloat162 h) { return __bfloat1622float2(h); });
}
template <>
__device__ __forceinline__ void smem_load8<__nv_fp8_e4m3>(const __nv_fp8_e4m3* src, float (&v)[8]) {
  e4m3x8_to_float(*reinterpret_cast<const uint2*>(src), v);
}

// An FP8 KV cache: the storage type of Q, K, V is e4m3 and O is bf16 (core/types.h output_dtype).
template <typename T>
inline constexpr bool kIsE4m3 = std::is_same_v<T, __nv_fp8_e4m3>;
template <typename T>
using DecodeOut = std::conditional_t<kIsE4m3<T>, __nv_bfloat16, T>;

// The scale block of `key` (key / rows, rows >= 1), by a float reciprocal and one correction:
// exact for key < 2^24 (the host checks Nk): key is exact in a float, and the product's error is
// below one unit for rows >= 3 (rows 1, 2: inv is exact).
__device__ __forceinline__ int scale_block(int key, int rows, float inv_rows) {
  int b = __float2int_rz(__int2float_rz(key) * inv_rows);
  const int r = key - b * rows;
  b += (r >= rows ? 1 : 0) - (r < 0 ? 1 : 0);
  return b;
}

// The split kernel's sizes: G lanes per key (d = 8 G), R query rows, STAGES tiles in flight,
// variant V (the header's list).
template <typename T, int G, int R, int V>
struct SplitTraits {
  static constexpr int kThreads = V == 5 || V == 9 ? 256 : 128;
  static constexpr bool kPrefetch256 = V == 4 || V == 5;
  static constexpr bool kBulk = V >= 6;                   // stages by the bulk copy engine
  static constexpr bool kEvictFirst = V >= 8;             // bulk copies with an L2 evict_first policy
  static constexpr int NG = kThreads / G;                   // groups; each takes one key at a time
  static constexpr int D = 8 * G;
  static constexpr int TK = 8192 / (D * int(sizeof(T)));  // keys per tile: 8 KiB of K, 8 KiB of V
  static constexpr int KPG = TK / NG;                     // keys per group per tile
  static constexpr int CPK = D * int(sizeof(T)) / 16;     // 16-byte chunks per key row
  // A stage (one buffer of the ring) holds NSUB tiles; the arithmetic goes tile by tile.
  static constexpr int NSUB = V == 6 || V >= 8 ? 2 : 1;
  // 5 tiles (80 KiB) in flight per block (v6, v8, v9: 2 stages of 32 KiB); two blocks per SM.
  static constexpr int STAGES = V == 6 || V >= 8 ? 3 : 6;
  static_assert(TK % NG == 0 && KPG >= 1, "a tile gives every group the same number of keys");
  static constexpr int64_t kTileElems = int64_t(TK) * D;
  static constexpr int SK = NSUB * TK;                      // keys per stage
  static constexpr int64_t kStageElems = NSUB * kTileElems;
  static constexpr int64_t kRingBytes = 2 * STAGES * kStageElems * int64_t(sizeof(T));
  static constexpr int64_t kBarrierBytes = kBulk ? 8 * STAGES : 0;  // one "full" mbarrier per stage
  static int64_t smem_bytes(int d) {  // K and V stages, the mbarriers, the merge's m, l, O per group and row
    return kRingBytes + kBarrierBytes + int64_t(NG) * R * (d + 2) * 4;
  }
};

// Programmatic dependent launch (sm_90): the combine is launched as the split kernel's dependent
// (decode_combine_launch), so its launch and its blocks' start overlap the split kernel's last
// blocks; each combine block then waits in griddepcontrol.wait until the split kernel has
// finished and its partials are visible. Older GPUs run the two launches in stream order.
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <typename T, int G, int R, int V>
__global__ void __launch_bounds__(SplitTraits<T, G, R, V>::kThreads) decode_split_kernel(DecodeParams p) {
  // S > 1: float32 partials for the combine (a run-time switch: it only changes the epilogue).
  const bool partials = p.O_part != nullptr;
  if (partials) allow_dependent_launch();  // every block has started: the combine may launch
  using Tr = SplitTraits<T, G, R, V>;
  constexpr int NG = Tr::NG, D = Tr::D, TK = Tr::TK, KPG = Tr::KPG, CPK = Tr::CPK, STAGES = Tr::STAGES;
  constexpr int kThreads = Tr::kThreads;
  constexpr int SK = Tr::SK, NSUB = Tr::NSUB;
  extern __shared__ float4 smem4[];
  T* Ks = reinterpret_cast<T*>(smem4);          // STAGES stages of SK keys x d
  T* Vs = Ks + STAGES * Tr::kStageElems;
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + STAGES * Tr::kStageElems);  // kBulk: per stage
  float* merge = reinterpret_cast<float*>(reinterpret_cast<char*>(full) + Tr::kBarrierBytes);
  const int lane = threadIdx.x % G, group = threadIdx.x / G;
  const int64_t qblocks = (p.nq + R - 1) / R;
  const int64_t h = int64_t(blockIdx.x) / qblocks;
  const int row0 = int(int64_t(blockIdx.x) % qblocks) * R, rows = min(R, p.nq - row0);
  const int s = blockIdx.y;
  const KeyMask mask = p.x.mask.for_batch(h / p.x.heads_per_batch);
  constexpr bool kFp8 = kIsE4m3<T>;

  // FD L5: the keys of split s (core/schedules/decode/decode.h's split_range), clipped to what
  // any row keeps.
  const int base = p.Tc / p.S, longer = p.Tc % p.S;
  const int j0 = s * base + min(s, longer), j1 = j0 + base + (s < longer ? 1 : 0);
  int k0 = j0 * p.Bc, k1 = min(j1 * p.Bc, p.nk);
  const bool masked = mask.any();
  if (masked) {
    int64_t lo = INT64_MAX, hi = -1;
    for (int r = 0; r < rows; ++r) {
      lo = min(lo, mask.lo(row0 + r));
      hi = max(hi, mask.hi(row0 + r, p.nk));
    }
    if (lo > k0) k0 = int(lo);
    if (hi + 1 < k1) k1 = int(hi + 1);
  }
  // Unpaged: head h's rows. Paged: the whole pool, addressed through head h's block table.
  // Paged or not is a run-time switch (uniform over the grid): it changes an address, not the
  // arithmetic, and one kernel per (T, G, R, V) serves both.
  const bool paged = p.block_table != nullptr;
  const T* Kg = static_cast<const T*>(p.K) + (paged ? 0 : h * int64_t(p.nk) * D);
  const T* Vg = static_cast<const T*>(p.V) + (paged ? 0 : h * int64_t(p.nk) * D);
  const int32_t* table = paged ? p.block_table + h * int64_t(p.pages) : nullptr;

  // FD L3: Q_i (this lane's 8 columns of each row) into registers. FD L4: O_i = 0, l = 0, m = -inf.
  const T* Qh = static_cast<const T*>(p.Q) + (h * p.nq + row0) * D + lane * 8;
  float q[R][8], o[R][8], m[R], l[R];
  // fp8: the scores' factor (tau s_Q) s_K is applied after the dot product of the e4m3 values,
  // in this order, as the CPU's score_tile (core/schedule_context.h); qf = tau s_Q per row.
  float qf[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    qf[r] = kFp8 && r < rows ? p.scale * p.q_scale[h * p.nq + row0 + r] : p.scale;
    if (r < rows) load8(Qh + int64_t(r) * D, q[r]);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (r >= rows) q[r][e] = 0.0f;
      o[r][e] = 0.0f;
    }
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }

  // FD L6 as a pipeline: stage t (SK keys of K and of V) goes to buffer t % STAGES, STAGES - 1
  // stages ahead of the one being computed, so (STAGES - 1) x 16 KiB (v6: 32 KiB) per block are
  // in flight while the arithmetic runs. Keys past the split read nothing and count as zeros.
  const int nstages = k1 > k0 ? (k1 - k0 + SK - 1) / SK : 0;
  // Variants 3-5: every thread issues 16-byte cp.async chunks (zero-filled past the split).
  // The chunk loop is compiled once per layout (kPagedLoop) inside the one kernel, so that the
  // run-time switch is taken once per tile, not per chunk.
  auto issue_chunks_as = [&](auto paged_loop, int t) {
    constexpr bool kPagedLoop = decltype(paged_loop)::value;
    const int kt = k0 + t * TK;
    const uint32_t kd = tc::smem_addr(Ks + (t % STAGES) * Tr::kTileElems);
    const uint32_t vd = tc::smem_addr(Vs + (t % STAGES) * Tr::kTileElems);
    for (int c = threadIdx.x; c < TK * CPK; c += kThreads) {
      const int key = kt + c / CPK;
      const bool ok = key < k1;
      const int n = ok ? key : k0;  // a key past the split reads nothing (zero-filled)
      int64_t row = n;
      if constexpr (kPagedLoop) row = int64_t(__ldg(table + n / p.page_size)) * p.page_size + n % p.page_size;
      const int64_t off = row * D + (c % CPK) * (16 / int(sizeof(T)));
      cp_async16_hint<Tr::kPrefetch256>(kd + c * 16, Kg + off, ok ? 16 : 0);
      cp_async16_hint<Tr::kPrefetch256>(vd + c * 16, Vg + off, ok ? 16 : 0);
    }
  };
  auto issue_chunks = [&](int t) {
    if (paged) issue_chunks_as(std::true_type{}, t);
    else issue_chunks_as(std::false_type{}, t);
  };
  // Variants 6-9 (8, 9 under the evict_first policy), called by the 32 lanes of warp 0: lane 0
  // arms stage t's barrier with the bytes of its keys that exist (the stage is clipped at k1: nothing past it is copied), then the
  // copies: unpaged, K and V of the stage are one contiguous range each (lane 0); paged, one
  // copy per page piece (keys of the stage in one page: contiguous rows of the pool), spread
  // over the lanes, each reading its page's table entry once.
  uint64_t policy = 0;  // variants 8, 9: K and V lines first out of the L2
  if constexpr (Tr::kEvictFirst) policy = tc::evict_first_policy();
  auto issue_bulk = [&](int t) {
    const int kt = k0 + t * SK, nkeys = min(SK, k1 - kt), lane32 = threadIdx.x;
    const uint32_t kd = tc::smem_addr(Ks + (t % STAGES) * Tr::kStageElems);
    const uint32_t vd = tc::smem_addr(Vs + (t % STAGES) * Tr::kStageElems);
    const uint32_t bar = tc::smem_addr(full + t % STAGES);
    constexpr uint32_t kRowBytes = uint32_t(D * sizeof(T));  // 128 or 256: a multiple of 16
    if (lane32 == 0) tc::mbar_expect_tx(bar, 2 * uint32_t(nkeys) * kRowBytes);
    if (!paged) {
      if (lane32 == 0) {
        bulk_copy<Tr::kEvictFirst>(kd, Kg + int64_t(kt) * D, uint32_t(nkeys) * kRowBytes, bar, policy);
        bulk_copy<Tr::kEvictFirst>(vd, Vg + int64_t(kt) * D, uint32_t(nkeys) * kRowBytes, bar, policy);
      }
    } else {
      __syncwarp();  // the barrier is armed before any of its bytes can land
      const int P = p.page_size, pg0 = kt / P, pieces = (kt + nkeys - 1) / P - pg0 + 1;
      for (int i = lane32; i < pieces; i += 32) {
        const int a = max(kt, (pg0 + i) * P), b = min(kt + nkeys, (pg0 + i + 1) * P);  // keys [a, b)
        const int64_t row = int64_t(__ldg(table + pg0 + i)) * P + a % P;
        const uint32_t off = uint32_t(a - kt) * kRowBytes, bytes = uint32_t(b - a) * kRowBytes;
        bulk_copy<Tr::kEvictFirst>(kd + off, Kg + row * D, bytes, bar, policy);
        bulk_copy<Tr::kEvictFirst>(vd + off, Vg + row * D, bytes, bar, policy);
      }
    }
  };
  // The arithmetic of one tile (TK keys from kt, at Kb, Vb): FD L7-L9 for the first NR rows
  // (NR = R, or 1: see compute_tile).
  auto compute_rows = [&](auto nr, const T* Kb, const T* Vb, int kt) {
    constexpr int NR = decltype(nr)::value;
    // This group's KPG keys of the tile (consecutive groups, consecutive keys).
    float kv[KPG][8], vv[KPG][8];
    // fp8: each key's s_K and s_V (its block of scale_rows keys; one block: a uniform branch).
    [[maybe_unused]] float ks[KPG], vs[KPG];
    if constexpr (kFp8) {
      const float* sk = p.k_scale + h * int64_t(p.scale_blocks);
      const float* sv = p.v_scale + h * int64_t(p.scale_blocks);
      const float inv_rows = 1.0f / float(p.scale_rows);
#pragma unroll
      for (int u = 0; u < KPG; ++u) {
        const int b = p.scale_blocks == 1 ? 0 : min(scale_block(kt + u * NG + group, p.scale_rows, inv_rows), p.scale_blocks - 1);
        ks[u] = __ldg(sk + b);
        vs[u] = __ldg(sv + b);
      }
    }
    if (!Tr::kBulk || kt + TK <= k1) {
#pragma unroll
      for (int u = 0; u < KPG; ++u) {
        smem_load8(Kb + (u * NG + group) * D + lane * 8, kv[u]);
        smem_load8(Vb + (u * NG + group) * D + lane * 8, vv[u]);
      }
    } else {  // bulk copies stop at k1: keys past it are zeros, as version 3's zero-filled chunks
#pragma unroll
      for (int u = 0; u < KPG; ++u) {
        if (kt + u * NG + group < k1) {
          smem_load8(Kb + (u * NG + group) * D + lane * 8, kv[u]);
          smem_load8(Vb + (u * NG + group) * D + lane * 8, vv[u]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) kv[u][e] = vv[u][e] = 0.0f;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      // Rows past nq (a four-row kernel on fewer rows) keep m = -inf, l = 0, O = 0 untouched:
      // no work for them (rows is the same for the whole block, so the shuffles stay uniform).
      if (NR > 1 && r >= rows) break;
      // FD L7: S_ij = tau q K_j^T (masked keys and keys past the split -inf)
      float sc[KPG];
#pragma unroll
      for (int u = 0; u < KPG; ++u) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(q[r][e], kv[u][e], dot);
        dot = group_sum<G>(dot);
        const int key = kt + u * NG + group;
        const bool keep = key < k1 && r < rows && (!masked || mask.allowed(row0 + r, key, p.nk));
        if constexpr (kFp8) sc[u] = keep ? dot * (qf[r] * ks[u]) : -INFINITY;
        else sc[u] = keep ? dot * p.scale : -INFINITY;
      }
      // FD L8: m_new = max(m, rowmax), P~ = exp(S - m_new), l = e^(m - m_new) l + rowsum P~
      float mt = -INFINITY;
#pragma unroll
      for (int u = 0; u < KPG; ++u) mt = fmaxf(mt, sc[u]);
      const float mnew = merged_max(m[r], mt);
      const float alpha = rescale_factor(m[r], mnew);
      float lt = 0.0f;
#pragma unroll
      for (int u = 0; u < KPG; ++u) {
        sc[u] = softmax_weight(sc[u], mnew);  // 0 while nothing is kept (m_new = -inf)
        lt += sc[u];
        if (p.x.dropout > 0.0f && sc[u] != 0.0f)  // dropout before P~ V_j; l keeps the undropped sum
          sc[u] = dropout_weight(sc[u], p.x, h, row0 + r, kt + u * NG + group);
      }
      l[r] = merged_sum(alpha, l[r], 1.0f, lt);
      m[r] = mnew;
      // FD L9: O_i = diag(e^(m_old - m_new)) O_i + P~ V_j (fp8: P~ s_V, P~ in float32)
      if constexpr (kFp8) {
#pragma unroll
        for (int u = 0; u < KPG; ++u) sc[u] *= vs[u];
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float pv = 0.0f;
#pragma unroll
        for (int u = 0; u < KPG; ++u) pv = fmaf(sc[u], vv[u][e], pv);
        o[r][e] = accumulated_output(alpha, o[r][e], pv);
      }
    }
  };
  // Variant 3 runs a single query row in its four-row kernel (the only kernel it has): the tile's
  // arithmetic is compiled a second time for one row, taken when rows = 1 (uniform over the
  // block), so one row does not carry the four-row loop's code (measured 1.10x slower at Nq = 1,
  // gpu/results/device-checks/decode-rows/). Variants 5 and 9 launch a one-row kernel instead.
  auto compute_tile = [&](const T* Kb, const T* Vb, int kt) {
    if constexpr (R > 1 && V == 3) {
      if (rows == 1) {
        compute_rows(std::integral_constant<int, 1>{}, Kb, Vb, kt);
        return;
      }
    }
    compute_rows(std::integral_constant<int, R>{}, Kb, Vb, kt);
  };
  if constexpr (Tr::kBulk) {
    if (threadIdx.x == 0) {
      for (int st = 0; st < STAGES; ++st) tc::mbar_init(tc::smem_addr(full + st), 1);
      tc::mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x < 32) {
#pragma unroll
      for (int t = 0; t < STAGES - 1; ++t)
        if (t < nstages) issue_bulk(t);
    }
    for (int t = 0; t < nstages; ++t) {
      // Buffer (t - 1) % STAGES was released by every thread at the end of step t - 1.
      if (threadIdx.x < 32 && t + STAGES - 1 < nstages) issue_bulk(t + STAGES - 1);
      tc::mbar_wait(tc::smem_addr(full + t % STAGES), uint32_t((t / STAGES) & 1));  // stage t has landed
      const T* Kb = Ks + (t % STAGES) * Tr::kStageElems;
      const T* Vb = Vs + (t % STAGES) * Tr::kStageElems;
#pragma unroll
      for (int sub = 0; sub < NSUB; ++sub) {
        const int kt = k0 + t * SK + sub * TK;
        if (kt >= k1) break;  // the split's last stage may hold fewer tiles (the same tiles as v3)
        compute_tile(Kb + sub * Tr::kTileElems, Vb + sub * Tr::kTileElems, kt);
      }
      __syncthreads();  // everyone is done with buffer t % STAGES before it is refilled
    }
  } else {
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
      if (t < nstages) issue_chunks(t);
      tc::cp_async_commit();  // empty groups keep the count uniform
    }
    for (int t = 0; t < nstages; ++t) {
      if (t + STAGES - 1 < nstages) issue_chunks(t + STAGES - 1);
      tc::cp_async_commit();
      tc::cp_async_wait<STAGES - 1>();  // tile t has landed
      __syncthreads();
      compute_tile(Ks + (t % STAGES) * Tr::kTileElems, Vs + (t % STAGES) * Tr::kTileElems, k0 + t * TK);
      __syncthreads();  // everyone is done with buffer t % STAGES before it is refilled
    }
    tc::cp_async_wait<0>();
  }

  // Merge the NG groups' (m, l, O) with the same update (the lesson's merge of two blocks).
  const int d = D;
  float* sm = merge;
  float* sl = sm + NG * R;
  float* so = sl + NG * R;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (lane == 0) {
      sm[group * R + r] = m[r];
      sl[group * R + r] = l[r];
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) so[(group * R + r) * d + lane * 8 + e] = o[r][e];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < rows * d; e += kThreads) {
    const int r = e / d, c = e % d;
    float M = -INFINITY;
    for (int g = 0; g < NG; ++g) M = merged_max(M, sm[g * R + r]);
    float L = 0.0f, O = 0.0f;
    for (int g = 0; g < NG; ++g) {
      const float w = rescale_factor(sm[g * R + r], M);  // 0 for a group that kept nothing
      L += w * sl[g * R + r];
      O += w * so[(g * R + r) * d + c];
    }
    const int64_t row = h * p.nq + row0 + r;
    // FD L11, L12: O_i^(s) = O_i / l_i, lse_i^(s) = m_i + log l_i (O = 0, lse = -inf if empty)
    const float out = normalised_output(O, L), lse = row_logsumexp(M, L);
    if (partials) {  // FD L13, L14: the float32 partials of split s
      const int64_t prow = int64_t(s) * p.heads * p.nq + row;
      p.O_part[prow * d + c] = out;
      if (c == 0) p.lse_part[prow] = lse;
    } else {  // S = 1: O and lse directly, as FA2fwd L14, L15
      static_cast<DecodeOut<T>*>(p.O)[row * d + c] = from_float<DecodeOut<T>>(out);
      if (c == 0) p.lse[row] = lse;
    }
  }
}

template <typename T, int G, int R, int V>
void launch_split_kernel(const DecodeParams& p) {
  using Tr = SplitTraits<T, G, R, V>;
  const int64_t smem = Tr::smem_bytes(p.d);
  const int64_t qblocks = (p.nq + R - 1) / R;
  const dim3 grid(unsigned(p.heads * qblocks), unsigned(p.S));
  static int64_t opted = 48 * 1024;  // one per kernel
  opt_in_shared(decode_split_kernel<T, G, R, V>, smem, opted);
  decode_split_kernel<T, G, R, V><<<grid, Tr::kThreads, size_t(smem)>>>(p);
  CUDA_CHECK_LAUNCH();
}

// One variant at one d: a single query row (decoding proper) or a few rows sharing each K/V tile.
// Variant 3, the kernel of the shapes no faster variant is built for (float32, d other than 64
// and 128), runs a single row in its four-row kernel: rows past nq score nothing, and the one
// row's arithmetic is the same, in the same order, bit for bit; one kernel instead of two per
// (T, d).
template <typename T, int G, int V>
void launch_variant(const DecodeParams& p) {
  if constexpr (V == 3) {
    launch_split_kernel<T, G, 4, V>(p);
  } else {
    if (p.nq == 1) launch_split_kernel<T, G, 1, V>(p);
    else launch_split_kernel<T, G, 4, V>(p);
  }
}

}  // namespace
}  // namespace flashstep::gpu
