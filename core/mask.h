// Attention masks (Algorithm 2's MASK): causal, sliding window and key padding.
//
// Alignment for Nq != Nk follows FlashAttention-2: bottom-right. Query row r lines up with key
// column r + (Nk - Nq), so the last query sees the last key. Causal masks every key after that
// column; a window (left, right) keeps keys in [r + off - left, r + off + right] (-1 = no limit
// on that side); key padding masks keys at or beyond kv_len. A query row that keeps no key at
// all gets O = 0 and lse = -inf.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

namespace flashstep {

struct Mask {
  bool causal = false;
  int64_t window_left = -1, window_right = -1;  // -1: unbounded on that side
  int64_t kv_len = -1;                          // -1: no key padding
  int64_t offset = 0;                           // Nk - Nq (bottom-right alignment)

  bool any() const { return causal || window_left >= 0 || window_right >= 0 || kv_len >= 0; }

  // The kept keys of row r form one interval [lo, hi] (empty when lo > hi).
  int64_t lo(int64_t r) const {
    return window_left >= 0 ? std::max<int64_t>(0, r + offset - window_left) : 0;
  }
  int64_t hi(int64_t r, int64_t nk) const {
    int64_t h = nk - 1;
    if (kv_len >= 0) h = std::min(h, kv_len - 1);
    if (causal) h = std::min(h, r + offset);
    if (window_right >= 0) h = std::min(h, r + offset + window_right);
    return h;
  }
  bool allowed(int64_t r, int64_t c, int64_t nk) const { return c >= lo(r) && c <= hi(r, nk); }

  enum class Block { full, partial, empty };
  // Rows [r0, r1) x columns [c0, c1): entirely kept, partly kept, or entirely masked.
  Block classify(int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t nk) const {
    if (!any()) return Block::full;
    bool some = false, all = true;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t a = lo(r), b = hi(r, nk);
      if (std::max(a, c0) <= std::min(b, c1 - 1)) some = true;
      if (a > c0 || b < c1 - 1) all = false;
    }
    return !some ? Block::empty : all ? Block::full : Block::partial;
  }
  std::string describe() const;
};

}  // namespace flashstep

#include "core/types.h"
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
