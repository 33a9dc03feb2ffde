// The order in which the persistent forward's thread blocks take their (Q block, head) tiles when
// the causal tiles are grouped by heads (gpu/fa3_kernel.cuh's next_tile, configuration 45, the
// default). Host and device code alike: tests/test_tile_order.cpp runs it on the CPU.
//
// Causal tiles differ in length (Q block i keeps i + 1 K/V blocks of Br / Bc), so the persistent
// grid takes them longest first and deals each round of G tiles (one per block) forwards and the
// next backwards: the block that drew the longest tile of one round draws the shortest of the
// next. Over all heads at once, the blocks at work read the K and V of as many heads as there
// are blocks; grouped, they read those of hg heads, which the L2 can keep. Here the longest-first
// order and the alternating rounds run within each group of hg heads (the last group may hold
// fewer), the rounds' direction continuing from one group to the next, so that each group's
// tiles are spread over the blocks as evenly as the whole problem's were; a block takes the
// tiles of one group before the next group's.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FLASHSTEP_HD __host__ __device__
#else
#define FLASHSTEP_HD
#endif

namespace flashstep::gpu {

// Where a block is in the grouped order: head group g, the rounds of the groups before it, round r
// within g. Start at {}: each call advances it past the tile it returns.
struct TileCursor {
  int64_t g = 0, rounds = 0;
  int64_t r = 0;
};

// The next tile of block b of G (Q block i of Tr, head h of heads) in groups of hg heads; false
// past the block's last tile. hg >= heads gives the ungrouped order: the k-th call returns tile
// t = k G + (k odd ? G - 1 - b : b), i = Tr - 1 - t / heads, h = t mod heads.
FLASHSTEP_HD inline bool grouped_causal_tile(int64_t heads, int Tr, int64_t hg, int G, int b, TileCursor& c, int& i,
                                            int64_t& h) {
  for (;;) {
    const int64_t h0 = c.g * hg;
    if (h0 >= heads) return false;
    const int64_t hn = hg < heads - h0 ? hg : heads - h0;  // the last group may hold fewer heads
    const int64_t T = hn * Tr, R = (T + G - 1) / G;
    while (c.r < R) {
      const int64_t pos = ((c.rounds + c.r) & 1) ? G - 1 - b : b;
      const int64_t t = c.r * G + pos;
      ++c.r;
      if (t < T) {
        i = Tr - 1 - int(t / hn);
        h = h0 + t % hn;
        return true;
      }
    }
    c.rounds += R;
    c.r = 0;
    ++c.g;
  }
}

// The group size: heads whose K and V (16-bit, nk x d each) take at most `bytes` together, at
// least one, at most all.
FLASHSTEP_HD inline int64_t head_group(int64_t heads, int64_t nk, int d, int64_t bytes) {
  const int64_t per_head = int64_t(4) * (nk > 0 ? nk : 1) * d;
  const int64_t hg = bytes / per_head;
  return hg < 1 ? 1 : hg > heads ? heads : hg;
}

// The persistent backward's tiles (gpu/bwd_ws_kernel.cuh, ladder configurations 38-40): tile t of
// Tc x heads is head t / Tc's K/V block t mod Tc, taken from the right on odd heads. A causal head's
// K/V block j keeps fewer Q blocks as j grows; a thread block takes the tiles t = b mod the grid's
// size, and with the odd heads reversed its long and short blocks pair off
// (tests/test_tile_order.cpp measures the balance).
FLASHSTEP_HD inline int64_t backward_tile_head(int t, int Tc) { return t / Tc; }
FLASHSTEP_HD inline int backward_tile_block(int t, int Tc) { return t / Tc % 2 ? Tc - 1 - t % Tc : t % Tc; }

}  // namespace flashstep::gpu
