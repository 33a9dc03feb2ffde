// Algorithm 4 of Dao et al. 2022 (FlashAttention backward) on the GPU: the kernels of
// gpu/backward_tile.cuh with P_ij recomputed from the forward's l and m and D_i recomputed at
// every (i, j). One launch normally covers every K/V block j of every head (the blocks run in
// parallel and add into dQ atomically); the per-j mode (count = 1, one launch per j) lets the
// host copy dQ back after each j to compare with the CPU trace's HBM dQ.
#include "gpu/backward_tile.cuh"

namespace flashstep::gpu {

int64_t bwd_smem_bytes(int variant, int Br, int Bc, int d) {
  if (variant == 1) return bwd_v1_smem_floats(Br, Bc, d) * 4;
#define FS_SMEM_CASE(br, bc, dd) \
  if (Br == br && Bc == bc && d == dd) return BwdV2Traits<br, bc, dd>::kSmemBytes;
  if (variant == 2) { FS_BWD_V2_CONFIGS(FS_SMEM_CASE) }
#undef FS_SMEM_CASE
#define FS_SMEM_CASE(br, bc, dd) \
  if (Br == br && Bc == bc && d == dd) return BwdV3Traits<br, bc, dd>::kSmemBytes;
  if (variant == 3) { FS_BWD_V3_CONFIGS(FS_SMEM_CASE) }
#undef FS_SMEM_CASE
  return -1;
}

const char* bwd_v2_config_list() { return FS_BWD_V2_CONFIGS(FS_CONFIG_NAME); }
const char* bwd_v3_config_list() { return FS_BWD_V3_CONFIGS(FS_CONFIG_NAME); }

void fa1_backward_launch(int variant, const BwdParams& p, int j0, int count) {
  bwd_launch<true>(variant, p, j0, count);
}

}  // namespace flashstep::gpu
