// Attention masks (Algorithm 2's MASK): causal, sliding window and key padding.
//
// Alignment for Nq != Nk follows FlashAttention-2: bottom-right. Query row r lines up with key
// column r + (Nk - Nq), so the last query sees the last key. Causal masks every key after that
// column; a window (left, right) keeps keys in [r + off - left, r + off + right] (-1 = no limit
// on that side); key padding masks keys at or beyond kv_len. A query row that keeps no key at
// all gets O = 0 and lse = -inf.
//
// Plain C++ with FS_HD members, so the CUDA kernels classify blocks and mask scores with this
// same code (gpu/device_mask.h adds per-batch key lengths on top).
#pragma once
#include "core/host_device.h"

#include <cstdint>
#include <string>

namespace flashstep {

struct Mask {
  bool causal = false;
  int64_t window_left = -1, window_right = -1;  // -1: unbounded on that side
  int64_t kv_len = -1;                          // -1: no key padding
  int64_t offset = 0;                           // Nk - Nq (bottom-right alignment)

  FS_HD bool any() const { return causal || window_left >= 0 || window_right >= 0 || kv_len >= 0; }

  // The kept keys of row r form one interval [lo, hi] (empty when lo > hi).
  FS_HD int64_t lo(int64_t r) const {
    if (window_left < 0) return 0;
    const int64_t a = r + offset - window_left;
    return a > 0 ? a : 0;
  }
  FS_HD int64_t hi(int64_t r, int64_t nk) const {
    int64_t h = nk - 1;
    if (kv_len >= 0 && kv_len - 1 < h) h = kv_len - 1;
    if (causal && r + offset < h) h = r + offset;
    if (window_right >= 0 && r + offset + window_right < h) h = r + offset + window_right;
    return h;
  }
  FS_HD bool allowed(int64_t r, int64_t c, int64_t nk) const { return c >= lo(r) && c <= hi(r, nk); }

  // One row's part of a block's classification over columns [c0, c1): whether the row keeps
  // some key of the block, and whether it keeps all of them.
  FS_HD void classify_row(int64_t r, int64_t c0, int64_t c1, int64_t nk, bool& some, bool& all) const {
    const int64_t a = lo(r), b = hi(r, nk);
    some = (a > c0 ? a : c0) <= (b < c1 - 1 ? b : c1 - 1);
    all = !(a > c0 || b < c1 - 1);
  }

  enum class Block { full, partial, empty };
  // Rows [r0, r1) x columns [c0, c1): entirely kept, partly kept, or entirely masked.
  FS_HD Block classify(int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t nk) const {
    if (!any()) return Block::full;
    bool some = false, all = true;
    for (int64_t r = r0; r < r1; ++r) {
      bool s, a;
      classify_row(r, c0, c1, nk, s, a);
      some = some || s;
      all = all && a;
    }
    return !some ? Block::empty : all ? Block::full : Block::partial;
  }
  std::string describe() const;  // host only
};

}  // namespace flashstep

#if !defined(__CUDACC__)
#include "core/types.h"

#include <cmath>
namespace flashstep {
// Sets the masked entries of the score tile whose top-left element is (row0, col0) to -inf.
inline void apply_mask(Mat& S, const Mask& mask, int64_t row0, int64_t col0, int64_t nk) {
  for (int64_t r = 0; r < S.rows(); ++r) {
    const int64_t lo = mask.lo(row0 + r) - col0, hi = mask.hi(row0 + r, nk) - col0;
    for (int64_t c = 0; c < S.cols(); ++c)
      if (c < lo || c > hi) S(r, c) = -INFINITY;
  }
}
}  // namespace flashstep
#endif
