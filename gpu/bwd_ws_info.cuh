// What each warp-specialised backward configuration (gpu/bwd_ws_kernel.cuh) is, for the CLI's
// and the tests' variant tables: info_of_ws<C>() describes configuration C from its traits. Host
// code only; included at the end of gpu/bwd_ws_kernel.cuh.
#pragma once
#include "gpu/bwd_ws_kernel.cuh"

namespace flashstep::gpu::tc {
namespace {

template <class C>
TcBwdVariantInfo info_of_ws() {
  const char* what =
      C::K_FRAG ? "v29 without S^T a block ahead, with K_j's A fragments of S^T = K_j Q_i^T loaded once per K/V block and "
                  "kept in registers (S^T on wgmma with A from registers), and dS computed from P as rounded for dV's "
                  "product, which frees the registers"
      : C::DS_TWO ? "v43 with dS^T in two buffers (block t's in buffer t mod 2) and no consumer barrier after dQ's "
                  "product: the consumer warpgroups meet once per Q block"
      : C::DQ_RED ? "v29 with tau dQ_i added to HBM from the accumulator registers (red.global.add.v4.f32, lane pairs "
                  "swapping half their values), in place of the slab and the bulk add: no dQ slab in shared memory"
      : C::SLAB_IN_STAGE ? (C::STAGES == 4
                              ? "v29 with tau dQ_i's partial in its own Q block's stage (over Q_i and dO_i) in place of "
                                "one slab, the stage released once the bulk add has read it, and a fourth stage"
                              : "v29 with tau dQ_i's partial in its own Q block's stage (over Q_i and dO_i) in place of "
                                "one slab, the stage released once the bulk add has read it")
      : C::PERSIST && C::DQ_ALT ? "v37 on a persistent grid (a block per SM taking the tiles in turn; the stage ring runs on "
                                "across tiles, the next K_j and V_j load while dK_j and dV_j are written)"
      : C::PERSIST && C::WIDE_KV ? "v29 on a persistent grid (a block per SM taking the tiles in turn; the stage ring runs on "
                                 "across tiles, the next K_j and V_j load while dK_j and dV_j are written)"
      : C::PERSIST ? "v26 on a persistent grid (a block per SM taking the tiles in turn; the stage ring runs on across "
                     "tiles, the next K_j and V_j load while dK_j and dV_j are written)"
      : C::DQ_ALT ? "v29 without S^T a block ahead, and with dQ_i's product by one warpgroup a Q block in turn, as one "
                  "m64n128k16 per 16 keys over all 128 columns, in place of each warpgroup's m64n64k16 over its 64"
      : C::S_LATE ? "v29 with the next Q block's S^T issued after this block's dQ partial is stored to the slab, in place "
                  "of before those stores"
      : C::DQ_QUADS && C::WIDE_KV ? "v29 with tau dQ_i's partial stored to the slab 16 bytes a store (8 a thread in place of "
                                  "16 of 8 bytes), in the dQ accumulator's quads layout"
      : C::DQ_QUADS ? "v26 with tau dQ_i's partial stored to the slab 16 bytes a store (8 a thread in place of 16 of 8 "
                      "bytes), in the dQ accumulator's quads layout"
      : C::DQ_RUN && C::WIDE_KV ? "v29 with dQ's product issued as one run of 8 wgmma where every k step is kept, in place of "
                                "each step behind a test of its keys"
      : C::DQ_RUN ? "v26 with dQ's product issued as one run of 8 wgmma where every k step is kept, in place of each step "
                    "behind a test of its keys"
      : C::DKV_TMA && C::WIDE_KV ? "v29 with dK_j and dV_j stored by stmatrix into K_j's and V_j's tiles and written by the "
                                 "copy engine (cp.async.bulk.tensor), in place of 4-byte st.global from the registers"
      : C::DKV_TMA ? "v26 with dK_j and dV_j stored by stmatrix into K_j's and V_j's tiles and written by the copy engine "
                     "(cp.async.bulk.tensor), in place of 4-byte st.global from the registers"
      : C::WIDE_KV ? "v28 with dV's and dK's products as one m64n128k16 per 16 queries over both 64-column panels of dO_i and "
                   "Q_i (the forward's wide O += P~ V), in place of one m64n64k16 per panel"
      : C::S_AHEAD ? "v25 with the next Q block's S^T = K_j Q_i+1^T issued right after this block's dQ product, under the "
                   "retirement of dQ's and dK's products, dQ_i's way to the slab, its barrier and the bulk add's issue"
      : C::DQ_BULK && C::DQ_ROWSPLIT && !C::STMATRIX
          ? "v19 with tau dQ_i added to HBM by the bulk copy engine (cp.reduce.async.bulk, one per Q block) from a "
            "dense row-swizzled slab, in place of the consumers' red.v4 adds"
      : C::DQ_BULK && C::DQ_ROWSPLIT ? "v22 with tau dQ_i added to HBM by the bulk copy engine (cp.reduce.async.bulk, one per "
                                     "Q block) from a dense row-swizzled slab, in place of the consumers' red.v4 adds"
      : C::DQ_BULK ? "v23 with tau dQ_i added to HBM by the bulk copy engine (cp.reduce.async.bulk, one per Q block) from a "
                     "dense row-swizzled slab, in place of the consumers' red.v4 adds"
      : C::STATS_PERM ? "v23 with L2_i and D_i laid out for float4 reads (each t4's 16 values side by side)"
      : C::STMATRIX && C::DQ_ROWSPLIT ? "v19 with dS^T stored by stmatrix (one per k step, in place of four 4-byte stores)"
      : C::STMATRIX ? "v15 with dS^T stored by stmatrix (one per k step, in place of four 4-byte stores)"
      : C::OVERLAP && C::DQ_ROWSPLIT ? "v19 with a Q block's products overlapped with its element-wise steps: S^T and dP^T "
                                     "issued together, P^T under dP^T, dS^T under dV's product"
      : C::OVERLAP ? "v15 with a Q block's products overlapped with its element-wise steps: S^T and dP^T issued "
                     "together, P^T under dP^T, dS^T under dV's product"
      : C::DQ_ROWSPLIT ? "v15 at d = 64 with Br = 128 (FlashAttention-3's tiles at d = 64): S^T and dP^T as m64n128 per "
                       "warpgroup, 8 k steps of dV and dK per Q block, dQ_i's rows split between the warpgroups (64 each "
                       "over all 128 keys, from dS^T's two 64-query panels)"
      : C::WG_APART ? "v17 at d = 64 with the consumer warpgroups apart: dS^T's barrier per warpgroup (each dQ product "
                    "reads only its own rows), no consumer barrier after the dQ slab"
      : C::DQ_MBAR ? "v16 with each dQ slab handed over by an mbarrier pair (full: the consumers' stores, empty: the dQ "
                   "warps' reads) in place of the 352-thread barrier; the consumers' own barrier kept for dS^T"
      : C::ARRIVE_ALL && C::DQ_WARPS ? "v14 with every consumer thread arriving on a stage's empty barrier (as 15 does 13)"
      : C::ARRIVE_ALL ? "v12's two warpgroups with a producer warpgroup: K_j, V_j, Q_i, dO_i by TMA, L2_i, D_i by its first "
                        "warp's loads, into a 3-stage mbarrier ring that every consumer thread releases; setmaxnreg 24/240, "
                        "the consumers' barriers named"
      : C::DQ_WARPS ? "v13 with dQ_i added to HBM by the producer warpgroup's warps 1-3 (red.v4) from two alternating "
                    "slabs: one named barrier of 352 threads per Q block in place of the consumers' adds"
      : C::STAGES == 3 ? "v12 with a producer warpgroup: K_j, V_j, Q_i, dO_i by TMA, L2_i, D_i by its first warp's loads, "
                         "into a 3-stage mbarrier ring (each consumer warp's lane 0 releases a stage); setmaxnreg 24/240, "
                         "the consumers' barriers named"
                       : "v12 with a producer warpgroup: K_j, V_j, Q_i, dO_i by TMA, L2_i, D_i by its first warp's loads, "
                         "into a 2-stage mbarrier ring; setmaxnreg 24/240, the consumers' barriers named";
  return TcBwdVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::SMEM, true, true,
                          C::DQ_BULK && !C::DQ_QUADS && !C::DQ_RED, C::DQ_QUADS, C::K_FRAG};
}

}  // namespace
}  // namespace flashstep::gpu::tc
