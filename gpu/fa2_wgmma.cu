// Variant 13 of the tensor-core ladder (issue 10): the first Hopper rung. FlashAttention-2
// forward on warpgroup MMA (wgmma.mma_async, sm_90a only; this file is compiled for 90a alone
// and linked only where nvcc can build it: see gpu/CMakeLists.txt).
//
// What changes against v11 (gpu/fa2_tc.cu): the operands no longer pass through ldmatrix.
// A warpgroup (4 warps, 128 threads) issues one m64n64k16 instruction for 64 rows of Q_i:
//   S_ij = Q_i K_j^T     both operands read by the tensor cores straight from shared memory
//                        through 64-bit matrix descriptors (K-major, 128-byte swizzle)
//   O_i += P~_ij V_j     A = P~_ij from registers (the S accumulator layout is the A fragment
//                        layout, as with mma.sync), B = V_j from shared memory read transposed
//                        (MN-major: V_j stays (key x d) row-major as it arrives)
// The online softmax, the masks, the block skipping and the epilogue are v11's, per warp.
// Shared memory tiles are 64-column panels of 128-byte rows, 16-byte chunk c of row r at chunk
// c ^ (r mod 8): wgmma's 128B swizzle, which needs every panel 1024-byte aligned; groups of 8
// rows are 1024 bytes apart (the descriptor's stride byte offset).
// Loads: cp.async, two K/V buffers, one barrier per j (v7); writes by cp.async are made visible
// to the tensor cores' async proxy by fence.proxy.async before the barrier.
// Two warpgroups per block (Br = 128): each owns 64 rows of Q_i, K_j and V_j are shared.
//   13  Bc = 64: S_ij is one m64n64 tile per warpgroup (32 registers a thread).
//   14  Bc = 128: S_ij is m64n128 (64 registers), twice the MMA work per wait and per barrier.
#include "gpu/common.cuh"
#include "gpu/tc_launch.h"
#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu::tc {

namespace {

template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d);
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d);

// The accumulator registers of an m64n64 / m64n128 float32 tile, as asm operands %0 ...
#define FS_ACC32_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FS_ACC32_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FS_ACC64_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FS_ACC64_OPS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// wgmma m64nNk16 with float32 accumulators for one 16-bit input type TY ("bf16" or "f16").
//   ss: A and B from shared memory, both K-major (S_ij = Q_i K_j^T); N = 64 or 128.
//   rs: A from registers, B from shared memory MN-major (O_i += P~_ij V_j, imm-trans-b = 1); N = 64.
// scale_d = 0 ignores the accumulators' old values (D = A B), 1 adds (D += A B).
#define FS_DEFINE_WGMMA_SS(T, TY, ACC, N, OA, OB, OS)                                                  \
  template <>                                                                                    \
  __device__ __forceinline__ void wgmma_ss<T>(float (&d)[N / 2], uint64_t a, uint64_t b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #OS ", 0;\n"                           \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " FS_ACC##ACC##_REGS \
                 ", %" #OA ", %" #OB ", p, 1, 1, 0, 0;\n}\n"                                    \
                 : FS_ACC##ACC##_OPS(d)                                                          \
                 : "l"(a), "l"(b), "r"(scale_d));                                                \
  }
#define FS_DEFINE_WGMMA(T, TY)                                                                   \
  FS_DEFINE_WGMMA_SS(T, TY, 32, 64, 32, 33, 34)                                                        \
  FS_DEFINE_WGMMA_SS(T, TY, 64, 128, 64, 65, 66)                                                        \
  template <>                                                                                    \
  __device__ __forceinline__ void wgmma_rs<T>(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " FS_ACC32_REGS       \
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                \
                 : FS_ACC32_OPS(d)                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));            \
  }

FS_DEFINE_WGMMA(__nv_bfloat16, "bf16")
FS_DEFINE_WGMMA(__half, "f16")

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Keeps the compiler from moving reads or writes of accumulator registers across the
// asynchronous MMA's issue and wait (the asm above does not tell it when the MMA completes).
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
  for (int k = 0; k < R; ++k) asm volatile("" : "+f"(r[k])::"memory");
}
// cp.async writes are generic-proxy writes; wgmma reads shared memory through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Matrix descriptor of a 128B-swizzled operand at shared address `addr` (1024-byte-aligned
// atoms): start address, leading byte offset, stride byte offset (8-row groups, 1024 bytes),
// layout type 1 = 128B swizzle. The leading offset only matters for operands wider than one
// 64-element panel, which v13 never issues; it is set to 1024 too so that a K-major or an
// MN-major reading of the two offsets gives the same layout.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// Byte offset of 16-byte chunk c (of D / 8) of row r in a ROWS-row tile of 64-column panels.
template <int ROWS>
__device__ __forceinline__ uint32_t panel_off(int r, int c) {
  return uint32_t((c / 8) * ROWS * 128 + r * 128 + (((c % 8) ^ (r & 7)) * 16));
}

// ROWS x D tile of a (n x D) row-major tensor starting at row `row0`; rows >= n are zeros.
template <int ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void load_panels(uint32_t dst, const T* base, int row0, int n, int tid) {
  constexpr int CH = D / 8;
  static_assert((ROWS * CH) % THREADS == 0, "whole tiles per thread");
#pragma unroll
  for (int k = 0; k < ROWS * CH / THREADS; ++k) {
    const int e = tid + k * THREADS, r = e / CH, c = e % CH;
    const bool ok = row0 + r < n;
    cp_async16(dst + panel_off<ROWS>(r, c), base + (ok ? int64_t(row0 + r) * D + c * 8 : 0), ok ? 16 : 0);
  }
}

template <int V_, int D_, int BC_, int WG_, int STAGES_>
struct WgConfig {
  static constexpr int VARIANT = V_, D = D_, WG = WG_, STAGES = STAGES_, BC = BC_;
  static constexpr int THREADS = 128 * WG, BR = 64 * WG, PANELS = D / 64;
  static constexpr int64_t SMEM_Q = int64_t(BR) * D * 2, SMEM_KV = int64_t(BC) * D * 2;
  // + 1024: the dynamic shared memory is aligned up to the swizzle atom by hand.
  static constexpr int64_t SMEM = SMEM_Q + STAGES * 2 * SMEM_KV + 1024;
};

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_wgmma_kernel(const TcParams p) {
  constexpr int D = C::D, BC = C::BC, BR = C::BR, PANELS = C::PANELS;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sQ = (smem_addr(smem) + 1023u) & ~1023u, sKV = sQ + uint32_t(C::SMEM_Q);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4,
            t4 = lane % 4;

  const int Tr = (p.nq + BR - 1) / BR;
  const BlockIndex blk = block_index(p, Tr, p.mask.causal);  // v11's grid
  const int i = blk.i;
  const int64_t h = blk.h;
  const T* Qh = static_cast<const T*>(p.Q) + h * p.nq * D;
  const T* Kh = static_cast<const T*>(p.K) + h * p.nk * D;
  const T* Vh = static_cast<const T*>(p.V) + h * p.nk * D;
  const int row0 = i * BR;

  const RowLimit lim = row_limit(p, h);
  const int n_blocks = kept_blocks(lim, row0, BR, p.nq, BC);
  // wgmma is issued by the whole warpgroup: the skip test is per warpgroup, the mask per warp.
  const int wg_row0 = row0 + wg * 64, wrow0 = wg_row0 + warp * 16;
  const bool wg_live = wg_row0 < p.nq;
  const int wg_hi_max = lim.hi(min(wg_row0 + 63, p.nq - 1));
  const int warp_hi_min = lim.hi(min(wrow0, p.nq - 1));
  const int row_hi[2] = {lim.hi(wrow0 + g), lim.hi(wrow0 + g + 8)};

  auto load_kv = [&](int j) {
    const uint32_t buf = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV);
    load_panels<BC, D, C::THREADS>(buf, Kh, j * BC, p.nk, tid);
    load_panels<BC, D, C::THREADS>(buf + uint32_t(C::SMEM_KV), Vh, j * BC, p.nk, tid);
  };

  // Alg1 L4: load Q_i from HBM to SRAM, then the first STAGES - 1 K_j, V_j.
  issue_first_loads<C::STAGES>([&] { load_panels<BR, D, C::THREADS>(sQ, Qh, row0, p.nq, tid); }, load_kv, n_blocks);

  // Alg1 L5: on chip, O_i = 0, l_i = 0, m_i = -inf (m in units of tau log2(e) S).
  float o[PANELS][32];
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
    for (int k = 0; k < 32; ++k) o[pn][k] = 0.0f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
  const float scale_log2 = p.scale * kLog2e;

  // Alg1 L6: for 1 <= j <= Tc (only the blocks some row keeps).
  for (int j = 0; j < n_blocks; ++j) {
    // Alg1 L7: wait for K_j, V_j (and Q_i), then refill the buffer block j - 1 used.
    cp_async_wait<C::STAGES - 2>();
    fence_proxy_async();
    __syncthreads();
    if (j + C::STAGES - 1 < n_blocks) load_kv(j + C::STAGES - 1);
    cp_async_commit();

    const int col0 = j * BC;
    if (!wg_live || col0 > wg_hi_max) continue;  // every row of this warpgroup masks block j
    const uint32_t sK = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV), sV = sK + uint32_t(C::SMEM_KV);

    // Alg1 L8: on chip, S_ij = Q_i K_j^T: D / 16 k-steps of 32 bytes along each 128-byte row.
    float s[BC / 2];
    fence_regs(s);
    wgmma_fence();
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
      const uint32_t koff = uint32_t((kd / 4) * 0 + (kd % 4) * 32);
      const uint64_t a = desc_sw128(sQ + uint32_t((kd / 4) * BR * 128 + wg * 64 * 128) + koff);
      const uint64_t b = desc_sw128(sK + uint32_t((kd / 4) * BC * 128) + koff);
      wgmma_ss<T>(s, a, b, kd > 0);
    }
    wgmma_commit();
    wgmma_wait_all();
    fence_regs(s);

    // Algorithm 2: scores of masked keys (and of padding columns past Nk) are -inf.
    // s[4n + e]: row g + 8 (e / 2), column 8n + 2 t4 + (e % 2) of this warp's 16 rows.
    if (col0 + BC - 1 > warp_hi_min) {
#pragma unroll
      for (int k = 0; k < BC / 2; ++k)
        if (col0 + (k / 4) * 8 + 2 * t4 + (k & 1) > row_hi[(k % 4) / 2]) s[k] = -INFINITY;
    }

    // Alg1 L9: m_ij = max(m_i, rowmax(S_ij)), P~_ij = exp(S_ij - m_ij),
    // l_ij = e^(m_i - m_ij) l_i + rowsum(P~_ij); each row lives in one quad of lanes.
    float alphas[2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)
      alphas[hr] = online_softmax_row<BC / 4>([&](int k) -> float& { return s[4 * (k / 2) + 2 * hr + k % 2]; },
                                              m_i[hr], l_i[hr], scale_log2);
    // Alg1 L10, first half: diag(e^(m_i - m_ij)) O_i, skipped when no row max of the warp
    // moved (alpha = 1 exactly then), as v9.
    if (__any_sync(0xffffffffu, alphas[0] != 1.0f || alphas[1] != 1.0f)) {
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
        for (int k = 0; k < 32; ++k) o[pn][k] *= alphas[(k % 4) / 2];
    }
    // P~_ij rounded to the input type, straight into A fragments of wgmma's register form:
    // column tiles 2kk, 2kk+1 of the accumulator are (k 0-7, k 8-15) of k-step kk.
    uint32_t pa[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      pa[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }

    // Alg1 L10, second half: O_i += P~_ij V_j, one m64n64k16 per (16 keys, 64-column panel of
    // d); 16 keys are 16 rows of 128 bytes (2048 bytes) of V_j's panel.
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn)
        wgmma_rs<T>(o[pn], pa[kk], desc_sw128(sV + uint32_t(pn * BC * 128 + kk * 2048)), 1);
    wgmma_commit();
    wgmma_wait_all();
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
  }
  cp_async_wait<0>();

  // Alg1 L12: O_i = diag(l_i)^-1 O_i; L13: L_i = m_i + log(l_i); L14, L15: write O_i and L_i.
  T* Oh = static_cast<T*>(p.O) + h * p.nq * D;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float l = l_i[hr];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = wrow0 + g + 8 * hr;
    if (r >= p.nq) continue;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row that keeps no key: O = 0
    uint32_t* out = reinterpret_cast<uint32_t*>(Oh + int64_t(r) * D + 2 * t4);
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
      for (int n = 0; n < 8; ++n)
        out[(pn * 64 + n * 8) / 2] = pack2<T>(o[pn][4 * n + 2 * hr] * inv, o[pn][4 * n + 2 * hr + 1] * inv);
    if (t4 == 0) p.lse[h * p.nq + r] = l > 0.0f ? (m_i[hr] + __log2f(l)) * kLn2 : -INFINITY;
  }
}

template <class C>
void launch_wgmma(const TcParams& p) {
  static int64_t opted[2] = {0, 0};
  launch_tc_kernel(fa2_wgmma_kernel<__nv_bfloat16, C>, fa2_wgmma_kernel<__half, C>, p, C::BR, C::THREADS,
                   C::SMEM, p.mask.causal, opted);
}

//                 variant, D, Bc, warpgroups, K/V buffers
using V13d64 = WgConfig<13, 64, 64, 2, 2>;
using V13d128 = WgConfig<13, 128, 64, 2, 2>;
using V14d64 = WgConfig<14, 64, 128, 2, 2>;
using V14d128 = WgConfig<14, 128, 128, 2, 2>;

template <class C>
TcVariantInfo info_of(const char* what) {
  return TcVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::STAGES, C::SMEM, true, true};
}

}  // namespace

int fa2_wgmma_last_variant() { return 14; }

TcVariantInfo fa2_wgmma_variant(int variant, int d) {
  const char* v13 = "wgmma (sm_90a): 2 warpgroups x 64 rows, Bc 64, Q/K/V 128B-swizzled, P from registers";
  const char* v14 = "v13 with Bc 128";
  if (variant == 13 && d == 64) return info_of<V13d64>(v13);
  if (variant == 13 && d == 128) return info_of<V13d128>(v13);
  if (variant == 14 && d == 64) return info_of<V14d64>(v14);
  if (variant == 14 && d == 128) return info_of<V14d128>(v14);
  return TcVariantInfo{};
}

void fa2_wgmma_launch(int variant, const TcParams& p) {
  if (variant == 13 && p.d == 64) return launch_wgmma<V13d64>(p);
  if (variant == 13 && p.d == 128) return launch_wgmma<V13d128>(p);
  if (variant == 14 && p.d == 64) return launch_wgmma<V14d64>(p);
  if (variant == 14 && p.d == 128) return launch_wgmma<V14d128>(p);
  throw std::runtime_error("fa2_wgmma_launch: no kernel for variant " + std::to_string(variant) +
                           ", d = " + std::to_string(p.d));
}

}  // namespace flashstep::gpu::tc
