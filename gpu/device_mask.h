// Algorithm 2's MASK on the GPU: the same rules as core/mask.h (bottom-right alignment,
// causal, window (left, right), key padding), mirrored with FS_HD so kernels can call them.
// core/mask.h cannot be included by device code: its members are not __device__, it pulls in
// std::string and (at its end) Eigen. tests/gpu checks that KeyMask::classify and
// flashstep::Mask::classify agree on every block of a sweep of masks, shapes and block sizes.
//
// Key padding may differ per batch entry: kv_lens (device pointer, B entries) overrides kv_len
// for batch b (for_batch). Plain C++ apart from FS_HD, so host code includes it too.
#pragma once
#include "core/online_softmax.h"  // FS_HD

#include <cstdint>

namespace flashstep::gpu {

struct KeyMask {
  bool causal = false;
  int64_t window_left = -1, window_right = -1;  // -1: unbounded on that side
  int64_t kv_len = -1;                          // -1: no key padding
  int64_t offset = 0;                           // Nk - Nq (bottom-right alignment)
  const int64_t* kv_lens = nullptr;             // per batch entry (device memory), or null

  FS_HD bool any() const {
    return causal || window_left >= 0 || window_right >= 0 || kv_len >= 0 || kv_lens != nullptr;
  }
  // The mask of batch entry b: its own valid key length when kv_lens is given.
  FS_HD KeyMask for_batch(int64_t b) const {
    KeyMask m = *this;
    if (kv_lens) m.kv_len = kv_lens[b];
    m.kv_lens = nullptr;
    return m;
  }
  // Row r keeps the keys [lo(r), hi(r, nk)] (none when lo > hi), as in core/mask.h.
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
  // One row's part of the block classification over columns [c0, c1): whether it keeps some
  // key of the block, and whether it keeps all of them. Kernels give one row to each thread
  // and combine with __syncthreads_or / __syncthreads_and.
  FS_HD void classify_row(int64_t r, int64_t c0, int64_t c1, int64_t nk, bool& some, bool& all) const {
    const int64_t a = lo(r), b = hi(r, nk);
    some = (a > c0 ? a : c0) <= (b < c1 - 1 ? b : c1 - 1);
    all = !(a > c0 || b < c1 - 1);
  }
  enum Block { full = 0, partial = 1, empty = 2 };  // the order of flashstep::Mask::Block
  // Rows [r0, r1) x columns [c0, c1), as flashstep::Mask::classify.
  FS_HD Block classify(int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t nk) const {
    if (!any()) return full;
    bool some = false, all = true;
    for (int64_t r = r0; r < r1; ++r) {
      bool s, a;
      classify_row(r, c0, c1, nk, s, a);
      some = some || s;
      all = all && a;
    }
    return !some ? empty : all ? full : partial;
  }
};

}  // namespace flashstep::gpu
