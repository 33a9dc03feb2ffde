// The pipeline model of the backward: what each warpgroup of the default tensor-core backward on
// Hopper does, clock by clock, on one SM's units (the forward's model, core/pipeline_model.h:
// the same rates, the same task graph and fluid simulation).
//
// The kernel (gpu/bwd_ws_kernel.cuh, the configuration bwd_config_sm90 chooses in
// gpu/fa2_bwd_wgmma.cu; FlashAttention-2's backward, Algorithm 2 of arXiv 2307.08691, with
// FlashAttention-3's producer warpgroup): one thread block per (head, K/V block j of Bc = 128
// keys), a producer warpgroup and two consumer warpgroups of 64 keys each, a loop over the Q
// blocks i of Br queries (FlashAttention-3's tiles: 128 at d = 64, configuration 26; 64 at
// d = 128, configuration 46, whose dV's and dK's products are one wgmma wide and whose S^T takes
// K_j from registers, dS computed from P as rounded for dV's product: the model charges a product
// its FLOPs whatever its operands' path and instructions, so it gives 46 what it gave 25). The
// producer loads K_j, V_j once and Q_i, dO_i, L_i, D_i into a ring of 3 stages (TMA); per Q block,
// each consumer warpgroup, in this order:
//   barrier  (the stage's full mbarrier) Q_i, dO_i, L_i, D_i landed
//   tensor   S_ij^T = K_j Q_i^T (FA2b L10); wait
//   softmax  P_ij^T = exp2(S^T tau log2 e - L_i) (L11): 64 x Br exp2 on the special-function units
//   tensor   dP_ij^T = V_j dO_i^T (L13) and dV~_j += P_ij^T dO_i (L12), one group; wait
//   softmax  dS_ij^T = P^T o (dP^T - D_i) (L14): float32 lanes only
//   tensor   dK~_j += dS_ij^T Q_i (L16), left in flight while dS^T goes to shared memory
//   barrier  (named, the 256 consumer threads) dS_ij^T complete
//   tensor   dQ_i += dS_ij K_j (L15); wait (for it and dK's), then the stage is released
//   barrier  (named) tau dQ_i complete in shared memory (and every dQ product retired)
//   load     tau dQ_i added to the float32 dQ in HBM by the bulk copy engine (cp.reduce.async.bulk,
//            issued by one consumer thread): under the next Q block, which waits for it to have
//            read the slab only before its own dS^T barrier (the slab is written again after it)
// The model has the producer load block i + 1's stage when the consumers start block i: the ring
// lets it run up to 3 blocks ahead, but each block's loads take a small part of a block's work,
// so one ahead already hides them and the steady state is the same.
// Every product is 2 x 64 x Br x d FLOPs per warpgroup (dQ's: 64 of the Br rows x 64 columns over
// 128 keys at d = 64, Br rows x 64 columns over 128 keys at d = 128: the same count); the two
// warpgroups run the same chain at
// once and share the tensor cores and the special-function units evenly (the barriers keep them
// in step). K_j, V_j come from HBM once per thread block, dK_j, dV_j go back once at the end.
#pragma once
#include "core/pipeline_model.h"

#include <cstdint>
#include <string>

namespace flashstep::pipeline {

// The kernel's tile (gpu/bwd_ws_kernel.cuh: BR, BC, two consumer warpgroups of 64 keys): Br by d.
constexpr int kBwdBc = 128, kBwdWarpgroups = 2;
constexpr int bwd_br(int64_t d) { return d == 64 ? 128 : 64; }

// Clocks at the unit's full rate: per warpgroup and Q block (the products, P, dS), per thread
// block and Q block (load_i, dq_add), per thread block (kv, write).
struct BackwardCosts {
  double s_clk = 0, dp_clk = 0, dv_clk = 0, dk_clk = 0, dq_clk = 0;  // tensor: 2 x 64 x Br x d FLOPs each
  double p_clk = 0, p_exp_clk = 0, p_issue_clk = 0;  // softmax: max(exp2 limit, float32 issue limit)
  double ds_clk = 0;                                 // softmax: float32 issue
  double load_i_clk = 0;  // Q_i, dO_i (16-bit), L_i, D_i (float32) from L2
  double dq_add_clk = 0;  // Br x d float32 of tau dQ_i added in L2 (the copy engine's bulk reduce)
  double kv_clk = 0;      // K_j, V_j from HBM
  double write_clk = 0;   // dK_j, dV_j to HBM
};
BackwardCosts backward_costs(int64_t d, const Rates& rates);  // InputError: d not 64 or 128

// One thread block looping over n_q Q blocks, alone on its SM (the kernel's registers and shared
// memory allow one). Segment kinds: loads I (K_j, V_j), L (Q_i, dO_i, L_i, D_i), A (dQ_i added),
// W (dK_j, dV_j written), B (a barrier: no work); tensor S, D (dP), V (dV), K (dK), Q (dQ);
// softmax P (exp2), G (dS). Segment::j is the Q block.
Timeline simulate_backward(int64_t d, int n_q, const Rates& rates);

// The whole problem: one thread block per (head, K/V block), the K/V blocks fastest in the launch
// order, each to the SM that frees first; a causal block (bottom-right aligned, as the kernels)
// loops only over the Q blocks with a row that keeps one of its keys.
struct BackwardPrediction {
  double ms = 0, tflops = 0;
  double flops = 0;          // 2.5 x the forward's 4 heads (kept scores) d: five products of 2 (kept) d
  int64_t blocks = 0;        // thread blocks in the grid
  double waves = 0;          // blocks / SMs
  double clk_per_q_block = 0;  // one thread block's steady state
  // Throughput bounds of the whole problem (ms): each task alone at its unit's full rate on every
  // SM, over the Q blocks the grid visits (a causal block's Q blocks are counted whole).
  double product_ms[5] = {0, 0, 0, 0, 0};  // S, dP, dV, dK, dQ
  double tensor_ms = 0;                    // the five together
  double exp_ms = 0, fp32_ms = 0;          // the softmax unit: P's exp2; P's and dS's float32 issue
  double load_ms = 0, dq_add_ms = 0, hbm_ms = 0;  // Q_i, dO_i, L_i, D_i; dQ's adds; K, V, dK, dV
  // Where the steady state's clocks of one Q block go (shares, summing to 1): the tensor cores
  // busy; the softmax unit busy and the tensor cores idle; only the memory path busy (dQ's adds,
  // loads); nothing busy.
  double share_tensor = 0, share_softmax = 0, share_memory = 0, share_idle = 0;
};
// The model's cost grows with the grid (heads x Tc thread blocks placed one by one); refused
// (InputError) over kMaxModelWork, as predict.
BackwardPrediction predict_backward(const Shape& s, const Rates& rates);

// The text of `flashstep explain --pipeline --backward`: the kernel, the per-block costs, the
// timeline of what each warpgroup does, the throughput bounds and the prediction. The measured
// time is the caller's to add (a results file, read in app/).
std::string explain_pipeline_backward(const Shape& s, const Rates& rates);

}  // namespace flashstep::pipeline
