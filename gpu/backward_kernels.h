// Host-side launchers of the backward kernels (fa1_backward.cu, fa2_backward.cu,
// standard_backward.cu). Plain types only, as gpu/kernels.h, whose Extras (mask, dropout)
// they share. Tensors are float32, row-major (BH, N, d); l, m, lse, D are (BH, Nq).
// Every launcher checks its launch (CUDA_CHECK_LAUNCH) and returns without waiting.
#pragma once
#include "gpu/kernels.h"

#include <cstdint>

namespace flashstep::gpu {

// One backward launch of the tiled schedules: one thread block per (K/V block j, head).
//   fa1 (Algorithm 4): P_ij from l_i, m_i; D_i = rowsum(dO_i o O_i) recomputed per (i, j).
//   fa2 (FA2 Algorithm 2): P_ij from L_i (lse); D_i read from HBM (fa2_backward_rowsum).
// dQ is accumulated in HBM by float32 atomic adds, so it must be zeroed before the first j.
struct BwdParams {
  const float *Q = nullptr, *K = nullptr, *V = nullptr, *O = nullptr, *dO = nullptr;
  const float *l = nullptr, *m = nullptr;    // fa1
  const float *lse = nullptr, *D = nullptr;  // fa2
  float *dQ = nullptr, *dK = nullptr, *dV = nullptr;
  int64_t heads = 1;
  int nq = 0, nk = 0, d = 0;
  int Br = 0, Bc = 0, Tr = 0, Tc = 0;
  float scale = 1.0f;
  Extras x;
};

// Shared memory (bytes) a backward variant needs; -1 where it has no kernel for the sizes.
//   1: plain, any Br, Bc, d;  2: register-tiled, compiled for FS_BWD_V2_CONFIGS;
//   3: register-tiled in less shared memory, compiled for FS_BWD_V3_CONFIGS.
int64_t bwd_smem_bytes(int variant, int Br, int Bc, int d);
const char* bwd_v2_config_list();
const char* bwd_v3_config_list();

// fa1_backward.cu: Alg4 L6-L23 for K/V blocks j0 .. j0 + count - 1 of every head.
void fa1_backward_launch(int variant, const BwdParams& p, int j0, int count);
// fa2_backward.cu: FA2b L4, D = rowsum(dO o O); then FA2b L5-L19 for K/V blocks j0 ..
// j0 + count - 1 of every head.
void fa2_backward_rowsum(const BwdParams& p, float* D);
void fa2_backward_launch(int variant, const BwdParams& p, int j0, int count);

// standard_backward.cu (Algorithm 3's row kernel): dS = P o (dP o Z - D) with
// D_r = sum_c P_rc (dP o Z)_rc, one block per row; dS may alias dP. With dropout, Z is the
// forward's Philox draw (1/(1-p) kept, 0 dropped); P is the undropped softmax.
void standard_grad_scores(const float* P, const float* dP, float* dS, int64_t rows, int cols, int nq,
                          const Extras& x);
// P^dropped = P o Z, elementwise over (rows = heads x nq) x cols (Alg3 L1; the forward's O).
void standard_drop(const float* P, float* Pd, int64_t rows, int cols, int nq, const Extras& x);
// matmul.cu: batched C = alpha A^T B, A (K x M), B (K x N), C (M x N) (Alg3 L1 and L5).
void matmul_batched_at(const float* A, const float* B, float* C, int64_t batch, int M, int N, int K,
                       float alpha);

}  // namespace flashstep::gpu
