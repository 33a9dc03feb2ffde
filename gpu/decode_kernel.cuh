// The split-KV kernel template of flash-decoding (its description and the variant list:
// gpu/decode.cu), shared by gpu/decode.cu (the defaults: variants 3, 5, 9; the FP8 cache's 9 and
// 10) and gpu/ladder/decode_rungs.cu (the ladder's variants 4, 6, 7, 8). Everything is in an
// anonymous namespace: each including file gets its own copies of what it instantiates.
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

// The 128-byte line at `src` (global memory) into the L2, without waiting for it.
__device__ __forceinline__ void prefetch_l2(const void* src) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(src)); }

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
// Sixteen e4m3 codes (one 16-byte word of shared memory) as float32, the same exact conversion.
__device__ __forceinline__ void e4m3x16_to_float(uint4 u, float (&v)[16]) {
  float a[8], b[8];
  e4m3x8_to_float(make_uint2(u.x, u.y), a);
  e4m3x8_to_float(make_uint2(u.z, u.w), b);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    v[e] = a[e];
    v[8 + e] = b[e];
  }
}
// E consecutive elements of a row (E a multiple of 8) as float32, by load8.
template <int E, typename T>
__device__ __forceinline__ void load_slice(const T* src, float (&v)[E]) {
#pragma unroll
  for (int c = 0; c < E / 8; ++c) {
    float t[8];
    load8(src + 8 * c, t);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[8 * c + e] = t[e];
  }
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

// The split kernel's sizes: d = 8 G, R query rows, STAGES tiles in flight, variant V (the
// header's list). Variants 3-9: G lanes per key, 8 elements each. Variant 10 (kBatched, e4m3):
// L = d / 16 lanes per key, 16 elements (one 16-byte word) each, KB keys per group per stage.
template <typename T, int G, int R, int V>
struct SplitTraits {
  static constexpr bool kBatched = V >= 10;
  static_assert(!kBatched || kIsE4m3<T>, "variants 10-12 are the FP8 cache's");
  // Variants 11 and 12: variant 10 whose paged stages take V by every thread's cp.async (11: all
  // of V; 12: each stage's second half of keys), K and the rest of V by the copy engine.
  static constexpr bool kLsuV = V == 11 || V == 12;
  static constexpr int kThreads = V == 5 || V >= 9 ? 256 : 128;
  static constexpr bool kPrefetch256 = V == 4 || V == 5;
  static constexpr bool kBulk = V >= 6;                   // stages by the bulk copy engine
  static constexpr bool kEvictFirst = V >= 8;             // bulk copies with an L2 evict_first policy
  static constexpr int D = 8 * G;
  static constexpr int E = kBatched ? 16 : 8;             // elements of a key row per lane
  static constexpr int L = D / E;                         // lanes per key (a group)
  static constexpr int NG = kThreads / L;                 // groups; variants 3-9: one key at a time each
  static constexpr int kMinBlocks = kBatched ? 2 : 1;     // two blocks per SM: at most 128 registers
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
  // Variant 10: a stage of SK keys gives each group KB of them (the batch its reduction takes).
  static constexpr int KB = SK / NG;
  static_assert(!kBatched || (SK % NG == 0 && KB == 4 && L >= 4 && kBulk), "variant 10: 4 keys per group, 4 or 8 lanes");
  static constexpr int64_t kMergeBytes = int64_t(NG) * R * (D + 2) * 4;  // m, l, O per group and row
  // K and V stages, the mbarriers, the merge's m, l, O. Variant 10 merges in the K ring (every
  // copy has landed and every thread has left the loop by then), so that with its twice as many
  // groups two blocks still fit on an SM.
  static int64_t smem_bytes(int) {
    if constexpr (kBatched) return kRingBytes + kBarrierBytes;
    return kRingBytes + kBarrierBytes + kMergeBytes;
  }
  static_assert(!kBatched || kMergeBytes <= STAGES * kStageElems * int64_t(sizeof(T)), "the merge fits in the K ring");
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
__global__ void __launch_bounds__(SplitTraits<T, G, R, V>::kThreads, SplitTraits<T, G, R, V>::kMinBlocks)
    decode_split_kernel(DecodeParams p) {
  // S > 1: float32 partials for the combine (a run-time switch: it only changes the epilogue).
  const bool partials = p.O_part != nullptr;
  if (partials) allow_dependent_launch();  // every block has started: the combine may launch
  using Tr = SplitTraits<T, G, R, V>;
  constexpr int NG = Tr::NG, D = Tr::D, TK = Tr::TK, KPG = Tr::KPG, CPK = Tr::CPK, STAGES = Tr::STAGES;
  constexpr int kThreads = Tr::kThreads;
  constexpr int SK = Tr::SK, NSUB = Tr::NSUB, E = Tr::E, L = Tr::L;
  extern __shared__ float4 smem4[];
  T* Ks = reinterpret_cast<T*>(smem4);          // STAGES stages of SK keys x d
  T* Vs = Ks + STAGES * Tr::kStageElems;
  uint64_t* full = reinterpret_cast<uint64_t*>(Vs + STAGES * Tr::kStageElems);  // kBulk: per stage
  // Variant 10 merges in the K ring (SplitTraits::smem_bytes), the others after the mbarriers.
  float* merge = Tr::kBatched ? reinterpret_cast<float*>(smem4)
                              : reinterpret_cast<float*>(reinterpret_cast<char*>(full) + Tr::kBarrierBytes);
  const int lane = threadIdx.x % L, group = threadIdx.x / L;
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

  // FD L3: Q_i (this lane's E columns of each row) into registers. FD L4: O_i = 0, l = 0, m = -inf.
  const T* Qh = static_cast<const T*>(p.Q) + (h * p.nq + row0) * D + lane * E;
  float q[R][E], o[R][E], m[R], l[R];
  // fp8: the scores' factor (tau s_Q) s_K is applied after the dot product of the e4m3 values,
  // in this order, as the CPU's score_tile (core/schedule_context.h); qf = tau s_Q per row.
  float qf[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    qf[r] = kFp8 && r < rows ? p.scale * p.q_scale[h * p.nq + row0 + r] : p.scale;
    if (r < rows) load_slice(Qh + int64_t(r) * D, q[r]);
#pragma unroll
    for (int e = 0; e < E; ++e) {
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
  // Variants 6-10 (8-10 under the evict_first policy), called by the 32 lanes of one warp: lane 0
  // arms stage t's barrier with the bytes of its keys that exist (the stage is clipped at k1:
  // nothing past it is copied), then the copies: unpaged, K and V of the stage are one contiguous
  // range each (lane 0); paged, one copy per page piece (keys of the stage in one page: contiguous
  // rows of the pool), piece i by lane i mod 32. `entry` is the table entry of this lane's first
  // piece (piece_entry), read before the call; further pieces (a stage over more than 32 pages)
  // read theirs here.
  // Variants 11, 12, paged: stage keys from lsu_from on have their V copied by cp.async (issue_cp).
  const int lsu_from = !Tr::kLsuV || !paged ? SK : V == 12 ? SK / 2 : 0;
  uint64_t policy = 0;  // variants 8-10: K and V lines first out of the L2
  if constexpr (Tr::kEvictFirst) policy = tc::evict_first_policy();
  const int lane32 = threadIdx.x % 32;
  auto issue_bulk = [&](int t, int entry) {
    const int kt = k0 + t * SK, nkeys = min(SK, k1 - kt);
    const uint32_t kd = tc::smem_addr(Ks + (t % STAGES) * Tr::kStageElems);
    const uint32_t vd = tc::smem_addr(Vs + (t % STAGES) * Tr::kStageElems);
    const uint32_t bar = tc::smem_addr(full + t % STAGES);
    constexpr uint32_t kRowBytes = uint32_t(D * sizeof(T));  // 128 or 256: a multiple of 16
    // Variants 11, 12 (paged): V's keys from lsu_from on come by every thread's cp.async (issue_cp).
    const int vkeys = Tr::kLsuV ? min(nkeys, lsu_from) : nkeys;
    if constexpr (Tr::kLsuV) {
      if (lane32 == 0) tc::mbar_expect_tx(bar, uint32_t(nkeys + vkeys) * kRowBytes);
    } else {
      if (lane32 == 0) tc::mbar_expect_tx(bar, 2 * uint32_t(nkeys) * kRowBytes);
    }
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
        const int page = i == lane32 ? entry : __ldg(table + pg0 + i);
        const int64_t row = int64_t(page) * P + (i == 0 ? kt - pg0 * P : 0);  // a mod P: past piece 0 a page starts
        const uint32_t off = uint32_t(a - kt) * kRowBytes, bytes = uint32_t(b - a) * kRowBytes;
        bulk_copy<Tr::kEvictFirst>(kd + off, Kg + row * D, bytes, bar, policy);
        if constexpr (Tr::kLsuV) {
          const int bv = min(b, kt + vkeys);  // V's part of the piece by the copy engine
          if (bv > a) bulk_copy<Tr::kEvictFirst>(vd + off, Vg + row * D, uint32_t(bv - a) * kRowBytes, bar, policy);
        } else {
          bulk_copy<Tr::kEvictFirst>(vd + off, Vg + row * D, bytes, bar, policy);
        }
      }
    }
  };
  // Paged: the table entry of this lane's first piece of stage t (0 past the last stage or the
  // stage's last page). A copy's address depends on it, so a read made at the copy's issue puts
  // its latency (an L1 miss every 128 bytes of table: every fourth stage at P = 16, d = 128 in
  // e4m3; under a saturated memory it is long) in front of the issuing warp's arithmetic on every
  // such stage, and the whole block waits for that warp at the stage's barrier; and the paged
  // issue (its divisions by P, a copy pair per piece) is arithmetic that warp alone does, on one
  // scheduler of the SM (warp 0 of both blocks). DecodeParams::table_ahead (a run-time switch):
  // 0 warp 0 issues every stage and reads the entries at the issue; 1 reads each a stage ahead
  // (while a stage is computed), in a register; 2 also prefetches the split's table lines into
  // the L2 as the block starts, so that the read a stage ahead is an L2 (or L1) hit; 3 (the
  // default) also deals the stages' issues to the warps in turn (stage t: warp t mod the warps).
  auto piece_entry = [&](int t) -> int {
    if (t >= nstages) return 0;
    const int kt = k0 + t * SK, P = p.page_size, pg0 = kt / P, last = (min(kt + SK, k1) - 1) / P;
    return pg0 + lane32 <= last ? __ldg(table + pg0 + lane32) : 0;
  };
  const int table_ahead = paged ? p.table_ahead : 0;
  // Variants 11, 12 (paged, an experiment): the copy engine takes K and part of V, every thread's
  // 16-byte cp.async the rest of V (11: all of V; 12: the stage's second half of keys), so that a stage is fewer bulk copies without moving it all onto the load/store
  // path (a stage by cp.async alone measured 12-14% slower than by bulk copies). Each thread's
  // chunks go through their own table entries, read a stage ahead into registers; every thread
  // then arrives on the stage's barrier when its chunks have landed (cp.async.mbarrier.arrive.noinc:
  // the barrier counts the threads and the copy engine's arming lane). The same bytes land in the
  // same places as variant 10's.
  const bool by_lsu = Tr::kLsuV && paged;
  constexpr int kCp = Tr::kBulk ? SK * CPK / kThreads : 1;  // at most (mode 4) chunks of V per thread per stage
  static_assert(!Tr::kBulk || SK * CPK % kThreads == 0, "a stage's chunks are dealt evenly to the threads");
  const int ncp = (SK - lsu_from) * CPK / kThreads;  // this mode's chunks per thread
  auto cp_key = [&](int t, int i) {  // the key of this thread's chunk i of stage t; past the split, k0's
    const int key = k0 + t * SK + lsu_from + (int(threadIdx.x) + i * kThreads) / CPK;
    return t < nstages && key < k1 ? key : k0;
  };
  auto cp_pages = [&](int t, int (&pages)[kCp]) {  // the table entries of this thread's chunks of stage t
#pragma unroll
    for (int i = 0; i < kCp; ++i)
      if (i < ncp) pages[i] = __ldg(table + cp_key(t, i) / p.page_size);
  };
  auto issue_cp = [&](int t, const int (&pages)[kCp]) {
    const int kt = k0 + t * SK;
    const uint32_t vd = tc::smem_addr(Vs + (t % STAGES) * Tr::kStageElems);
#pragma unroll
    for (int i = 0; i < kCp; ++i) {
      const int c = lsu_from * CPK + int(threadIdx.x) + i * kThreads;
      if (i < ncp && kt + c / CPK < k1) {  // keys past the split are not copied (bulk stages neither)
        const int64_t row = int64_t(pages[i]) * p.page_size + cp_key(t, i) % p.page_size;
        tc::cp_async16(vd + c * 16, Vg + row * D + (c % CPK) * (16 / int(sizeof(T))), 16);
      }
    }
    tc::cp_async_mbar_arrive_noinc(tc::smem_addr(full + t % STAGES));
  };
  // The arithmetic of one tile (TK keys from kt, at Kb, Vb): FD L7-L9 for every row.
  auto compute_tile = [&](const T* Kb, const T* Vb, int kt) {
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
    for (int r = 0; r < R; ++r) {
      // Rows past nq (a four-row kernel on fewer rows) keep m = -inf, l = 0, O = 0 untouched:
      // no work for them (rows is the same for the whole block, so the shuffles stay uniform).
      if (R > 1 && r >= rows) break;
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
  // Variant 10: the arithmetic of one stage (SK keys from kt), FD L7-L9 for every row, a batch of
  // KB = 4 keys per group of L lanes (keys u NG + group, u < 4; lane c holds elements
  // 16 c .. 16 c + 15 of each). What variants 3-9 do once per key in every lane of its group (the
  // shuffle reduction of the dot, the scale look-up, the score, the exponential) is done here
  // once per batch or once per key in one lane (L / 4 lanes: the same values):
  // - the four partial dots of a lane are reduced by a transposed (reduce-scatter) butterfly:
  //   step 1 exchanges two of them with the lane L/2 away, step 2 one with the lane L/4 away,
  //   then an all-reduce of the last over the remaining L/4 lanes; lane c ends with the whole dot
  //   of key own = 2 [c & L/2] + [c & L/4] (3 exchanges and 3 additions for 4 keys at L = 4,
  //   4 at L = 8, against 4 x log2 L);
  // - that lane looks up its key's s_K, s_V, takes its score S = dot ((tau s_Q) s_K) (the CPU's
  //   factor, in the CPU's order), the mask, P~ = e^(S - m) and P~ s_V;
  // - the batch's max over the group (log2 L exchanges) updates m once per batch; O and l are
  //   rescaled only when m grows (otherwise alpha = e^0 = 1 exactly, and a product by 1 changes
  //   no bit);
  // - l is summed per lane from the keys it owns (one lane of the L / 4 per key) and over the
  //   group's lanes after the loop; the four P~ s_V are broadcast from their owners for
  //   O += (P~ s_V) v. P~ stays float32.
  // Constants of a lane: its key in the batch, whether it adds that key's P~ to l.
  constexpr int L2 = Tr::kBatched ? L / 2 : 1, L4 = Tr::kBatched ? L / 4 : 1;  // (L >= 4 there)
  const int own = 2 * ((lane & L2) ? 1 : 0) + ((lane & L4) ? 1 : 0);
  const bool adds_l = lane % L4 == 0;
  const float* sk_head = kFp8 ? p.k_scale + h * int64_t(p.scale_blocks) : nullptr;
  const float* sv_head = kFp8 ? p.v_scale + h * int64_t(p.scale_blocks) : nullptr;
  const float inv_scale_rows = kFp8 ? 1.0f / float(p.scale_rows) : 1.0f;
  // s_K, s_V of the key this lane scores in the next stage, loaded a stage ahead: a new stage
  // usually starts a new scale block, whose first load misses the L1. One block (per tensor):
  // loaded once, here.
  float ks_next = 1.0f, vs_next = 1.0f;
  auto load_scales = [&](int key) {
    const int b = p.scale_blocks == 1 ? 0 : min(scale_block(key, p.scale_rows, inv_scale_rows), p.scale_blocks - 1);
    ks_next = __ldg(sk_head + b);
    vs_next = __ldg(sv_head + b);
  };
  if constexpr (kFp8 && Tr::kBatched) load_scales(k0 + own * NG + group);
  auto compute_batched = [&](const T* Kb, const T* Vb, int kt) {
    if constexpr (Tr::kBatched) {
      constexpr int KB = Tr::KB;
      constexpr unsigned kAll = 0xffffffffu;
      // FD L6 (in shared memory): this lane's 16 bytes of each key's K and V row; keys past the
      // split (not copied) read as zeros, as variant 9's.
      uint4 kr[KB], vr[KB];
#pragma unroll
      for (int u = 0; u < KB; ++u) {
        kr[u] = vr[u] = make_uint4(0u, 0u, 0u, 0u);
        if (kt + u * NG + group < k1) {
          kr[u] = *reinterpret_cast<const uint4*>(Kb + (u * NG + group) * D + lane * E);
          vr[u] = *reinterpret_cast<const uint4*>(Vb + (u * NG + group) * D + lane * E);
        }
      }
      const int key = kt + own * NG + group;  // the key this lane scores
      const float ks = ks_next, vs = vs_next;  // its s_K, s_V
      if (p.scale_blocks > 1) load_scales(key + SK);  // the next stage's (uniform branch)
      // FD L7, partial: each row's dot with each key over this lane's 16 elements.
      float x[R][KB];
#pragma unroll
      for (int u = 0; u < KB; ++u) {
        float kf[16];
        e4m3x16_to_float(kr[u], kf);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float dot = 0.0f;
#pragma unroll
          for (int e = 0; e < 16; ++e) dot = fmaf(q[r][e], kf[e], dot);
          x[r][u] = dot;
        }
      }
      float w[R];  // P~ s_V of the owned key, per row
#pragma unroll
      for (int r = 0; r < R; ++r) {
        // The reduce-scatter: after it, sum = the whole dot of key `own`.
        const bool up1 = lane & L2, up2 = lane & L4;
        float a0 = up1 ? x[r][2] : x[r][0], a1 = up1 ? x[r][3] : x[r][1];
        const float g0 = up1 ? x[r][0] : x[r][2], g1 = up1 ? x[r][1] : x[r][3];
        a0 += __shfl_xor_sync(kAll, g0, L2);
        a1 += __shfl_xor_sync(kAll, g1, L2);
        float sum = up2 ? a1 : a0;
        sum += __shfl_xor_sync(kAll, up2 ? a0 : a1, L4);
#pragma unroll
        for (int off = L / 8; off > 0; off /= 2) sum += __shfl_xor_sync(kAll, sum, off);
        // FD L7: S_ij = dot ((tau s_Q) s_K) (masked keys and keys past the split -inf)
        const bool keep = key < k1 && r < rows && (!masked || mask.allowed(row0 + r, key, p.nk));
        const float sc = keep ? sum * (qf[r] * ks) : -INFINITY;
        // FD L8: m_new = max(m, rowmax S_ij); O and l rescaled by e^(m - m_new) when m grows
        float mt = sc;
#pragma unroll
        for (int off = L / 2; off > 0; off /= 2) mt = fmaxf(mt, __shfl_xor_sync(kAll, mt, off));
        if (mt > m[r]) {  // the same in every lane of the group
          const float mnew = merged_max(m[r], mt);
          const float alpha = rescale_factor(m[r], mnew);  // 0 while nothing was kept (m = -inf)
#pragma unroll
          for (int e = 0; e < E; ++e) o[r][e] = accumulated_output(alpha, o[r][e], 0.0f);
          l[r] = merged_sum(alpha, l[r], 1.0f, 0.0f);
          m[r] = mnew;
        }
        // P~ = e^(S - m_new), l += P~ (this lane's share), then dropout and s_V for P~ V_j
        float pt = softmax_weight(sc, m[r]);  // 0 for a key not kept, and while m = -inf
        if (adds_l) l[r] += pt;
        if (p.x.dropout > 0.0f && pt != 0.0f) pt = dropout_weight(pt, p.x, h, row0 + r, key);
        w[r] = pt * vs;
      }
      // FD L9: O_i += (P~ s_V) v for the batch's keys, each weight from the lane that owns it.
#pragma unroll
      for (int u = 0; u < KB; ++u) {
        float vf[16];
        e4m3x16_to_float(vr[u], vf);
        const int src = (u / 2) * L2 + (u % 2) * L4;  // a lane that owns key u
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const float wu = __shfl_sync(kAll, w[r], src, L);
#pragma unroll
          for (int e = 0; e < 16; ++e) o[r][e] = fmaf(wu, vf[e], o[r][e]);
        }
      }
    }
  };
  if constexpr (Tr::kBulk) {
    if (threadIdx.x == 0) {
      for (int st = 0; st < STAGES; ++st) tc::mbar_init(tc::smem_addr(full + st), by_lsu ? kThreads + 1 : 1);
      tc::mbar_init_fence();
    }
    __syncthreads();
    // The warp that issues stage t: warp 0 unpaged and for table_ahead < 3, else t mod the warps.
    const int warp = threadIdx.x / 32;
    auto issuer = [&](int t) { return table_ahead == 3 ? t % (kThreads / 32) : 0; };
    int ahead = 0;  // table_ahead >= 1: the entry of this lane's piece of the next stage its warp issues
    if (table_ahead >= 2 && warp == 0 && nstages > 0) {  // the split's table lines into the L2 (a prefetch per 128 bytes)
      const int first = k0 / p.page_size, last = (k1 - 1) / p.page_size;
      for (int pg = first + 32 * lane32; pg <= last; pg += 32 * 32) prefetch_l2(table + pg);
      if (lane32 == 0) prefetch_l2(table + last);
    }
    int entry[STAGES - 1];  // the first stages' entries, read together
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) entry[t] = paged && warp == issuer(t) ? piece_entry(t) : 0;
    if (table_ahead > 0 && warp == issuer(STAGES - 1)) ahead = piece_entry(STAGES - 1);
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t)
      if (t < nstages && warp == issuer(t)) issue_bulk(t, entry[t]);
    int pages[kCp];  // variants 11, 12: the table entries of this thread's chunks of the next stage it copies
    if (by_lsu) {
#pragma unroll
      for (int t = 0; t < STAGES - 1; ++t) {
        cp_pages(t, pages);
        if (t < nstages) issue_cp(t, pages);
      }
      cp_pages(STAGES - 1, pages);
    }
    for (int t = 0; t < nstages; ++t) {
      // Buffer (t - 1) % STAGES was released by every thread at the end of step t - 1.
      const int ti = t + STAGES - 1;  // the stage to issue now
      if (ti < nstages) {
        if (warp == issuer(ti)) issue_bulk(ti, table_ahead > 0 || !paged ? ahead : piece_entry(ti));
        if (table_ahead > 0 && warp == issuer(ti + 1)) ahead = piece_entry(ti + 1);  // for the next step
        if (by_lsu) {
          issue_cp(ti, pages);
          cp_pages(ti + 1, pages);  // for the next step, read while this stage is computed
        }
      }
      tc::mbar_wait(tc::smem_addr(full + t % STAGES), uint32_t((t / STAGES) & 1));  // stage t has landed
      const T* Kb = Ks + (t % STAGES) * Tr::kStageElems;
      const T* Vb = Vs + (t % STAGES) * Tr::kStageElems;
      if constexpr (Tr::kBatched) {
        compute_batched(Kb, Vb, k0 + t * SK);  // the whole stage
      } else {
#pragma unroll
        for (int sub = 0; sub < NSUB; ++sub) {
          const int kt = k0 + t * SK + sub * TK;
          if (kt >= k1) break;  // the split's last stage may hold fewer tiles (the same tiles as v3)
          compute_tile(Kb + sub * Tr::kTileElems, Vb + sub * Tr::kTileElems, kt);
        }
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

  // Variant 10: l of each group is the sum of its lanes' shares.
  if constexpr (Tr::kBatched) {
#pragma unroll
    for (int r = 0; r < R; ++r) l[r] = group_sum<L>(l[r]);
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
    for (int e = 0; e < E; ++e) so[(group * R + r) * d + lane * E + e] = o[r][e];
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
// and 128 in 16 bits), has a one-row kernel only in float32 at d = 64 and 128 (the CPU trace's
// comparison shapes); elsewhere its four-row kernel runs a single row, the absent rows skipped
// (the same bits, measured 1.10x slower than a one-row kernel at float32 d = 64, Nq = 1:
// gpu/results/device-checks/decode-rows/), one kernel instead of two per (T, d).
template <typename T, int G, int V>
void launch_variant(const DecodeParams& p) {
  if constexpr (V == 3) {
    if constexpr (std::is_same_v<T, float> && (G == 8 || G == 16)) {
      if (p.nq == 1) return launch_split_kernel<T, G, 1, V>(p);
    }
    launch_split_kernel<T, G, 4, V>(p);
  } else if constexpr (SplitTraits<T, G, 1, V>::kBatched) {
    // Variant 10 holds 16 columns of q and of O per lane and row: four rows would not fit in the
    // 128 registers of two blocks per SM. It runs each query row in a block of its own (Nq > 1
    // reads the cache once per row; the FP8 default there is variant 9's four-row kernel).
    launch_split_kernel<T, G, 1, V>(p);
  } else {
    if (p.nq == 1) launch_split_kernel<T, G, 1, V>(p);
    else launch_split_kernel<T, G, 4, V>(p);
  }
}

}  // namespace
}  // namespace flashstep::gpu
