// Launchers of the tensor-core kernels (gpu/fa2_tc.cu, gpu/standard_tc.cu) for the host code in
// gpu/tensor_core.cpp. Plain types only: the C++ compiler sees no device code.
//
// Q, K, V, O live in device memory as 16-bit bf16 or fp16 values, (heads, N, d) row-major;
// lse is float32 (heads, Nq). Launchers check the launch and return without waiting.
#pragma once
#include <cstdint>

#include "core/host_device.h"

namespace flashstep::gpu::tc {

enum class Elem : int { fp16 = 1, bf16 = 2 };  // the order of flashstep::Dtype

// The mask of the tensor-core kernels: causal (bottom-right, as core/mask.h) and key padding.
struct TcMask {
  bool causal = false;
  int kv_len = -1;                // one valid key length for every head; -1: none
  const int* kv_lens = nullptr;   // device array, one per batch entry; overrides kv_len
  int heads_per_batch = 1;        // head h of the flat B x H belongs to batch h / H
};

struct TcParams {
  const void *Q = nullptr, *K = nullptr, *V = nullptr;
  void* O = nullptr;
  float* lse = nullptr;
  int heads = 1, nq = 0, nk = 0, d = 0;
  float scale = 1.0f;  // tau; the kernels fold log2(e) into it
  Elem elem = Elem::bf16;
  TcMask mask;
};

// fa2_tc.cu: a configuration's number (the ladder's: 1-45 and the Bc sweep 101-104) to its
// kernel. A default build holds the defaults alone (11, and on sm_90a 45 at d = 64 and 128);
// the others need -DFLASHSTEP_LADDER=ON (gpu/ladder/).
struct TcVariantInfo {
  int variant = 0;
  const char* what = "";
  int Br = 0, Bc = 0, warps = 0, stages = 0;
  int64_t smem_bytes = 0;
  bool compiled = false;  // false: no kernel for this d in this build
  bool sm90_only = false; // wgmma: runs on compute capability 9.0 alone
};
constexpr int kLastLadderRung = 52;
int fa2_tc_variant_count();      // kLastLadderRung
bool tc_ladder_rung(int variant); // a number the ladder uses (built in this build or not)
TcVariantInfo fa2_tc_variant(int variant, int d);
void fa2_tc_launch(int variant, const TcParams& p);

// fa3_forward.cu (sm_90a, where FLASHSTEP_HAVE_WGMMA is defined): the Hopper defaults and the
// choice between them; with the ladder built, every FlashAttention-3 rung. The caller checks
// that the GPU is compute capability 9.0.
int fwd_config_sm90(int d, bool causal);  // 0: none for this d
TcVariantInfo fa3_variant(int variant, int d);
void fa3_launch(int variant, const TcParams& p);

// fp8_forward.cu (sm_90a, where FLASHSTEP_HAVE_WGMMA is defined): the FP8 forward (docs/fp8-gpu.md,
// "On the GPU: the forward on tensor cores"). base.Q, base.K: e4m3 codes (heads, N, d); base.V: V^T's codes
// (heads, d, nk_pad), the keys of each group of 32 in the order fp8_vt_key gives; base.O bf16;
// base.lse float32. The scales are float32 (heads, q_blocks) and (heads, k_blocks): one block per
// head (per tensor) or one per Q block of Br rows / K, V block of Bc keys (the kernel's tiles).
struct Fp8Params {
  TcParams base;
  const float *q_scale = nullptr, *k_scale = nullptr, *v_scale = nullptr;
  int q_blocks = 1, k_blocks = 1;
  int nk_pad = 0;  // Nk rounded up to a multiple of the kernel's Bc: V^T's row length in bytes
  int variant = 0;  // 0: the default kernel for d; 1-15: the ladder's rungs (gpu/ladder/fp8_rungs.cu)
};
// V^T's key order (why: gpu/fp8_kernel.cuh's header): storage position q (0-31) of a group of 32
// keys holds key fp8_vt_key(q) of the group, so that P~'s bytes go from the accumulator of S_ij
// to the A fragments of O += P~ V without moving between lanes.
FS_HD constexpr int fp8_vt_key(int q) { return (q & 16) + 2 * ((q >> 2) & 3) + (q & 1) + 8 * ((q >> 1) & 1); }
// The other half of that bargain (gpu/fp8_kernel.cuh's pack_p_e4m3): byte b of A register r of a
// k32 step takes entry fp8_pack_entry(r, b) of the lane's 16 accumulator entries of that step
// (s[16 kk + 4 n + e]: 8-column tile n, row g + 8 (e >> 1), column 2 t4 + (e & 1)).
FS_HD constexpr int fp8_pack_entry(int r, int b) { return 8 * (r >> 1) + 2 * (r & 1) + (b & 1) + 4 * (b >> 1); }
struct Fp8TileInfo {
  int Br = 0, Bc = 0, threads = 0, stages = 0;
  int64_t smem_bytes = 0;
  const char* what = "";
  bool compiled = false;  // false: no FP8 kernel for this d in this build
};
// The FP8 forward's kernel for d and variant (0: the default; gpu/fp8_forward.cu), and its launch
// (Fp8Params::variant). A ladder rung in a build without the ladder: compiled = false.
Fp8TileInfo fp8_tile_info(int d, int variant = 0);
void fp8_launch(const Fp8Params& p);
constexpr int kFp8LadderLast = 21;  // the ladder's FP8 forward rungs are 1-21
// Whether the ladder has an FP8 forward rung `variant` at head dimension d (gpu/ladder/fp8_rungs.cu).
constexpr bool fp8_ladder_rung(int d, int variant) {
  return (variant == 1 && (d == 64 || d == 128)) ||
         ((variant == 6 || variant == 8 || variant == 9 || variant == 17 || variant == 19 || variant == 21) && d == 64) ||
         (((variant >= 2 && variant <= 5) || variant == 7 || (variant >= 10 && variant <= 16) || variant == 18 ||
           variant == 20) &&
          d == 128);
}
#if defined(FLASHSTEP_LADDER)
Fp8TileInfo fp8_ladder_tile_info(int d, int variant);  // gpu/ladder/fp8_rungs.cu
void fp8_ladder_launch(const Fp8Params& p);
#endif

// standard_tc.cu: P = softmax(S) row by row in the 16-bit type (masked scores get weight 0),
// lse float32; S and P are (heads * nq) x nk.
void softmax_rows_tc(const void* S, void* P, float* lse, int64_t rows, int nq, int nk,
                     Elem elem, const TcMask& mask);

}  // namespace flashstep::gpu::tc
