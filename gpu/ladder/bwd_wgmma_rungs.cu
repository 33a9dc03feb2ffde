// The backward ladder's wgmma rungs other than the default (gpu/fa2_bwd_wgmma.cu: configuration
// 26 at d = 64, 46 at d = 128, gpu/bwd_ws_kernel.cuh):
// 5 (all five products on wgmma, the heads-first grid), 6 (dQ's product on mma.sync), 7 (dQ added
// by the bulk copy engine from two slabs), 8 (d = 64: 7 with the warpgroups apart), 9 (5 with the
// grid's K/V blocks fastest; the default at d = 64 before 15), 10 (9 with each block's Q-block loop
// rotated by j), 11 (9 with its products pipelined, gpu/ladder/bwd_pipe_kernel.cuh), 12 (9 with its
// matrix descriptors built once, each wgmma's one add from its buffer's; the default at d = 128
// before 15), 13 (12 with a producer warpgroup: TMA into an mbarrier ring, setmaxnreg, the
// consumers' barriers named), 14 (13 with dQ added to HBM by the producer warpgroup's other warps),
// 16 (14 with 15's release by every consumer thread), 17 (16 with each dQ slab handed over by an
// mbarrier pair), 18 (d = 64: 17 with the consumer warpgroups apart, no barrier between them), 15
// (the default at d = 128 before 25, and at d = 64 before 19), 19 (d = 64, Br = 128: the default
// there before 26), 20-24 (19 and 15 with their products overlapped, dS^T by
// stmatrix, the statistics read by float4), 25 (23 with dQ added by the bulk copy engine; the
// default at d = 128 before 28), 27 (19 with it; 26, the d = 64 default, is 22 with it), 28 (25
// with the next Q block's S^T issued under this block's dQ product; the d = 128 default before 29),
// 29 (28 with dV's and dK's products as one m64n128k16 per 16 queries; the d = 128 default before
// 46, which is 29 without S^T ahead, K_j's A fragments of S^T held in registers and dS from P's
// rounded fragments), 30 and 31 (29 and 26
// with dK and dV stored by stmatrix into K_j's and V_j's tiles and written by TMA), 32 and 33 (29
// and 26 with dQ's product issued as one run of wgmma where every step is kept), 34 and 35 (29 and
// 26 with dQ's partial stored to the slab 16 bytes a store, the accumulator's quads layout), 36 (29
// with the next S^T issued after the slab's stores), 37 (29 with dQ's product by one warpgroup a Q
// block, the two in turn, over all 128 columns), 38-40 (29, 26 and 37 on a persistent grid), 41 and 42 (29
// with dQ_i's partial in its own Q block's stage, with 4 and 3 stages), 43 (29 with dQ_i added to
// HBM from the registers, no slab), 44 (43 with two dS^T buffers and one consumer barrier a Q
// block), 45 (29 with L2_i and D_i read by float4, 24's layout at a stride of 20 floats, free of
// bank conflicts). Built only with -DFLASHSTEP_LADDER=ON; the
// kernel templates and each trait's description: gpu/fa2_bwd_wgmma_kernel.cuh, gpu/bwd_ws_kernel.cuh.
#include "gpu/ladder/bwd_pipe_kernel.cuh"
#include "gpu/bwd_ws_kernel.cuh"
#include "gpu/fa2_bwd_wgmma_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {
//                      variant, D, dQ on mma.sync, dQ by the bulk copy engine, warpgroups apart, grid order
using V5d64 = WgBwdConfig<kBwdWgmmaVariant, 64, false>;
using V5d128 = WgBwdConfig<kBwdWgmmaVariant, 128, false>;
using V6d64 = WgBwdConfig<kBwdWgmmaVariant + 1, 64, true>;
using V6d128 = WgBwdConfig<kBwdWgmmaVariant + 1, 128, true>;
using V7d64 = WgBwdConfig<kBwdWgmmaVariant + 2, 64, false, true>;
using V7d128 = WgBwdConfig<kBwdWgmmaVariant + 2, 128, false, true>;
using V8d64 = WgBwdConfig<kBwdWgmmaVariant + 3, 64, false, true, true>;  // d = 64 only
using V10d64 = WgBwdConfig<kBwdWgmmaVariant + 5, 64, false, false, false, 2>;
using V10d128 = WgBwdConfig<kBwdWgmmaVariant + 5, 128, false, false, false, 2>;
using V11d64 = PipeBwdConfig<kBwdWgmmaVariant + 6, 64>;
using V11d128 = PipeBwdConfig<kBwdWgmmaVariant + 6, 128>;
using V9d64 = WgBwdConfig<kBwdWgmmaVariant + 4, 64, false, false, false, 1>;
using V9d128 = WgBwdConfig<kBwdWgmmaVariant + 4, 128, false, false, false, 1>;
using V12d64 = WgBwdDescOnce<WgBwdConfig<kBwdWgmmaVariant + 7, 64, false, false, false, 1>>;  // v9's traits
using V12d128 = WgBwdDescOnce<WgBwdConfig<kBwdWgmmaVariant + 7, 128, false, false, false, 1>>;
//                      variant, D, Q_i / dO_i stages, dQ added by the producer warpgroup's warps 1-3, every consumer thread releasing a stage, the slabs' mbarriers, the warpgroups apart
using V13d64 = WsBwdConfig<kBwdWgmmaVariant + 8, 64, 3>;
using V13d128 = WsBwdConfig<kBwdWgmmaVariant + 8, 128, 3>;
using V14d64 = WsBwdConfig<kBwdWgmmaVariant + 9, 64, 3, true>;
using V14d128 = WsBwdConfig<kBwdWgmmaVariant + 9, 128, 2, true>;  // a second slab leaves room for 2 stages
using V16d64 = WsBwdConfig<kBwdWgmmaVariant + 11, 64, 3, true, true>;
using V16d128 = WsBwdConfig<kBwdWgmmaVariant + 11, 128, 2, true, true>;
using V17d64 = WsBwdConfig<kBwdWgmmaVariant + 12, 64, 3, true, true, true>;
using V17d128 = WsBwdConfig<kBwdWgmmaVariant + 12, 128, 2, true, true, true>;
using V18d64 = WsBwdConfig<kBwdWgmmaVariant + 13, 64, 3, true, true, true, true>;  // d = 64 only (its dQ split by keys)
using V15d64 = WsBwdConfig<kBwdWgmmaVariant + 10, 64, 3, false, true>;  // the d = 128 default's form at d = 64
using V20d64 = WsBwdConfig<kBwdWgmmaVariant + 15, 64, 3, false, true, false, false, 128, true>;   // 19, overlapped
using V21d128 = WsBwdConfig<kBwdWgmmaVariant + 16, 128, 3, false, true, false, false, 64, true>;  // 15, overlapped
using V22d64 = WsBwdConfig<kBwdWgmmaVariant + 17, 64, 3, false, true, false, false, 128, false, true>;   // 19, stmatrix
using V23d128 = WsBwdConfig<kBwdWgmmaVariant + 18, 128, 3, false, true, false, false, 64, false, true>;  // 15, stmatrix
using V24d128 = WsBwdConfig<kBwdWgmmaVariant + 19, 128, 3, false, true, false, false, 64, false, true, 16>;  // 23, float4 stats
using V15d128 = WsBwdConfig<kBwdWgmmaVariant + 10, 128, 3, false, true>;  // the d = 128 default before 25
using V19d64 = WsBwdConfig<kBwdWgmmaVariant + 14, 64, 3, false, true, false, false, 128>;  // the d = 64 default before 26
using V27d64 = WsBwdConfig<kBwdWgmmaVariant + 22, 64, 3, false, true, false, false, 128, false, false, false, true>;  // 19, bulk dQ
using V25d128 = WsBwdConfig<kBwdWgmmaVariant + 20, 128, 3, false, true, false, false, 64, false, true, false, true>;  // 23, bulk dQ: the d = 128 default before 28
using V28d128 = WsBwdConfig<kBwdWgmmaVariant + 23, 128, 3, false, true, false, false, 64, false, true, false, true, true>;  // 25, S^T ahead: the d = 128 default before 29
//                      ..., S^T ahead, dV and dK wide, dK and dV by the copy engine
using V30d128 = WsBwdConfig<kBwdWgmmaVariant + 25, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, true>;  // 29, dK and dV by TMA
using V31d64 = WsBwdConfig<kBwdWgmmaVariant + 26, 64, 3, false, true, false, false, 128, false, true, false, true, false, false, true>;  // 26, dK and dV by TMA
//                      ..., dK and dV by the copy engine, dQ's product in one run
using V32d128 = WsBwdConfig<kBwdWgmmaVariant + 27, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, true>;  // 29, dQ in one run
using V33d64 = WsBwdConfig<kBwdWgmmaVariant + 28, 64, 3, false, true, false, false, 128, false, true, false, true, false, false, false, true>;  // 26, dQ in one run
//                      ..., dQ's product in one run, the slab's stores 16 bytes wide
using V34d128 = WsBwdConfig<kBwdWgmmaVariant + 29, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, true>;  // 29, quads
using V35d64 = WsBwdConfig<kBwdWgmmaVariant + 30, 64, 3, false, true, false, false, 128, false, true, false, true, false, false, false, false, true>;  // 26, quads
//                      ..., the slab's stores 16 bytes wide, the next S^T after the slab's stores
using V36d128 = WsBwdConfig<kBwdWgmmaVariant + 31, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, true>;  // 29, S^T late
//                      ..., S^T late, dQ's product by one warpgroup a Q block (S^T not ahead)
using V37d128 = WsBwdConfig<kBwdWgmmaVariant + 32, 128, 3, false, true, false, false, 64, false, true, false, true, false, true, false, false, false, false, true>;  // 29, dQ in turn
//                      ..., dQ in turn, a persistent grid
using V38d128 = WsBwdConfig<kBwdWgmmaVariant + 33, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, false, false, true>;  // 29, persistent
using V39d64 = WsBwdConfig<kBwdWgmmaVariant + 34, 64, 3, false, true, false, false, 128, false, true, false, true, false, false, false, false, false, false, false, true>;  // 26, persistent
using V40d128 = WsBwdConfig<kBwdWgmmaVariant + 35, 128, 3, false, true, false, false, 64, false, true, false, true, false, true, false, false, false, false, true, true>;  // 37, persistent
//                      ..., a persistent grid, dQ_i's partial in its own Q block's stage
using V41d128 = WsBwdConfig<kBwdWgmmaVariant + 36, 128, 4, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, false, false, false, true>;  // 29, dQ in the stage, 4 stages
using V42d128 = WsBwdConfig<kBwdWgmmaVariant + 37, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, false, false, false, true>;  // 29, dQ in the stage
using V43d128 = WsBwdConfig<kBwdWgmmaVariant + 38, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, false, false, false, false, true>;  // 29, dQ from the registers
using V44d128 = WsBwdConfig<kBwdWgmmaVariant + 39, 128, 3, false, true, false, false, 64, false, true, false, true, true, true, false, false, false, false, false, false, false, true, true>;  // 43, two dS^T buffers
using V45d128 = WsBwdConfig<kBwdWgmmaVariant + 40, 128, 3, false, true, false, false, 64, false, true, 20, true, true, true>;  // 29, float4 stats 20 floats apart
//                      ..., S^T ahead, dV and dK wide
using V29d128 = WsBwdConfig<kBwdWgmmaVariant + 24, 128, 3, false, true, false, false, 64, false, true, false, true, true, true>;  // 28, dV and dK wide: the d = 128 default before 46
}  // namespace

TcBwdVariantInfo bwd_wgmma_ladder_variant(int variant, int d) {
  if (variant == V5d64::VARIANT && d == 64) return info_of<V5d64>();
  if (variant == V5d128::VARIANT && d == 128) return info_of<V5d128>();
  if (variant == V6d64::VARIANT && d == 64) return info_of<V6d64>();
  if (variant == V6d128::VARIANT && d == 128) return info_of<V6d128>();
  if (variant == V7d64::VARIANT && d == 64) return info_of<V7d64>();
  if (variant == V7d128::VARIANT && d == 128) return info_of<V7d128>();
  if (variant == V8d64::VARIANT && d == 64) return info_of<V8d64>();
  if (variant == V10d64::VARIANT && d == 64) return info_of<V10d64>();
  if (variant == V10d128::VARIANT && d == 128) return info_of<V10d128>();
  if (variant == V11d64::VARIANT && d == 64) return info_of_pipe<V11d64>();
  if (variant == V11d128::VARIANT && d == 128) return info_of_pipe<V11d128>();
  if (variant == V9d64::VARIANT && d == 64) return info_of<V9d64>();
  if (variant == V9d128::VARIANT && d == 128) return info_of<V9d128>();
  if (variant == V12d64::VARIANT && d == 64) return info_of<V12d64>();
  if (variant == V12d128::VARIANT && d == 128) return info_of<V12d128>();
  if (variant == V13d64::VARIANT && d == 64) return info_of_ws<V13d64>();
  if (variant == V13d128::VARIANT && d == 128) return info_of_ws<V13d128>();
  if (variant == V14d64::VARIANT && d == 64) return info_of_ws<V14d64>();
  if (variant == V14d128::VARIANT && d == 128) return info_of_ws<V14d128>();
  if (variant == V16d64::VARIANT && d == 64) return info_of_ws<V16d64>();
  if (variant == V16d128::VARIANT && d == 128) return info_of_ws<V16d128>();
  if (variant == V17d64::VARIANT && d == 64) return info_of_ws<V17d64>();
  if (variant == V17d128::VARIANT && d == 128) return info_of_ws<V17d128>();
  if (variant == V18d64::VARIANT && d == 64) return info_of_ws<V18d64>();
  if (variant == V15d64::VARIANT && d == 64) return info_of_ws<V15d64>();
  if (variant == V20d64::VARIANT && d == 64) return info_of_ws<V20d64>();
  if (variant == V21d128::VARIANT && d == 128) return info_of_ws<V21d128>();
  if (variant == V22d64::VARIANT && d == 64) return info_of_ws<V22d64>();
  if (variant == V23d128::VARIANT && d == 128) return info_of_ws<V23d128>();
  if (variant == V24d128::VARIANT && d == 128) return info_of_ws<V24d128>();
  if (variant == V15d128::VARIANT && d == 128) return info_of_ws<V15d128>();
  if (variant == V19d64::VARIANT && d == 64) return info_of_ws<V19d64>();
  if (variant == V27d64::VARIANT && d == 64) return info_of_ws<V27d64>();
  if (variant == V25d128::VARIANT && d == 128) return info_of_ws<V25d128>();
  if (variant == V28d128::VARIANT && d == 128) return info_of_ws<V28d128>();
  if (variant == V30d128::VARIANT && d == 128) return info_of_ws<V30d128>();
  if (variant == V31d64::VARIANT && d == 64) return info_of_ws<V31d64>();
  if (variant == V32d128::VARIANT && d == 128) return info_of_ws<V32d128>();
  if (variant == V33d64::VARIANT && d == 64) return info_of_ws<V33d64>();
  if (variant == V34d128::VARIANT && d == 128) return info_of_ws<V34d128>();
  if (variant == V35d64::VARIANT && d == 64) return info_of_ws<V35d64>();
  if (variant == V36d128::VARIANT && d == 128) return info_of_ws<V36d128>();
  if (variant == V37d128::VARIANT && d == 128) return info_of_ws<V37d128>();
  if (variant == V38d128::VARIANT && d == 128) return info_of_ws<V38d128>();
  if (variant == V39d64::VARIANT && d == 64) return info_of_ws<V39d64>();
  if (variant == V40d128::VARIANT && d == 128) return info_of_ws<V40d128>();
  if (variant == V41d128::VARIANT && d == 128) return info_of_ws<V41d128>();
  if (variant == V42d128::VARIANT && d == 128) return info_of_ws<V42d128>();
  if (variant == V43d128::VARIANT && d == 128) return info_of_ws<V43d128>();
  if (variant == V44d128::VARIANT && d == 128) return info_of_ws<V44d128>();
  if (variant == V45d128::VARIANT && d == 128) return info_of_ws<V45d128>();
  if (variant == V29d128::VARIANT && d == 128) return info_of_ws<V29d128>();
  return TcBwdVariantInfo{};
}

void bwd_wgmma_ladder_launch(int variant, const TcBwdParams& p) {
  if (variant == V5d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V5d64>(p);
  if (variant == V5d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V5d128>(p);
  if (variant == V6d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V6d64>(p);
  if (variant == V6d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V6d128>(p);
  if (variant == V7d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V7d64>(p);
  if (variant == V7d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V7d128>(p);
  if (variant == V8d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V8d64>(p);
  if (variant == V10d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V10d64>(p);
  if (variant == V10d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V10d128>(p);
  if (variant == V11d64::VARIANT && p.fwd.d == 64) return launch_bwd_pipe<V11d64>(p);
  if (variant == V11d128::VARIANT && p.fwd.d == 128) return launch_bwd_pipe<V11d128>(p);
  if (variant == V9d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V9d64>(p);
  if (variant == V9d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V9d128>(p);
  if (variant == V12d64::VARIANT && p.fwd.d == 64) return launch_bwd_wgmma<V12d64>(p);
  if (variant == V12d128::VARIANT && p.fwd.d == 128) return launch_bwd_wgmma<V12d128>(p);
  if (variant == V13d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V13d64>(p);
  if (variant == V13d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V13d128>(p);
  if (variant == V14d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V14d64>(p);
  if (variant == V14d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V14d128>(p);
  if (variant == V16d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V16d64>(p);
  if (variant == V16d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V16d128>(p);
  if (variant == V17d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V17d64>(p);
  if (variant == V17d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V17d128>(p);
  if (variant == V18d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V18d64>(p);
  if (variant == V15d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V15d64>(p);
  if (variant == V20d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V20d64>(p);
  if (variant == V21d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V21d128>(p);
  if (variant == V22d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V22d64>(p);
  if (variant == V23d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V23d128>(p);
  if (variant == V24d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V24d128>(p);
  if (variant == V15d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V15d128>(p);
  if (variant == V19d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V19d64>(p);
  if (variant == V27d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V27d64>(p);
  if (variant == V25d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V25d128>(p);
  if (variant == V28d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V28d128>(p);
  if (variant == V30d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V30d128>(p);
  if (variant == V31d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V31d64>(p);
  if (variant == V32d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V32d128>(p);
  if (variant == V33d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V33d64>(p);
  if (variant == V34d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V34d128>(p);
  if (variant == V35d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V35d64>(p);
  if (variant == V36d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V36d128>(p);
  if (variant == V37d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V37d128>(p);
  if (variant == V38d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V38d128>(p);
  if (variant == V39d64::VARIANT && p.fwd.d == 64) return launch_bwd_ws<V39d64>(p);
  if (variant == V40d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V40d128>(p);
  if (variant == V41d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V41d128>(p);
  if (variant == V42d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V42d128>(p);
  if (variant == V43d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V43d128>(p);
  if (variant == V44d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V44d128>(p);
  if (variant == V45d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V45d128>(p);
  if (variant == V29d128::VARIANT && p.fwd.d == 128) return launch_bwd_ws<V29d128>(p);
  throw std::runtime_error("bwd_wgmma_ladder_launch: no kernel for variant " + std::to_string(variant) + ", d = " +
                           std::to_string(p.fwd.d));
}

}  // namespace flashstep::gpu::tc
