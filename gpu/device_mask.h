// Algorithm 2's MASK on the GPU: core/mask.h's Mask (the one rule for CPU and GPU: bottom-right
// alignment, causal, window (left, right), key padding), plus a valid key length per batch
// entry.
//
// Key padding may differ per batch entry: kv_lens (device pointer, B entries) overrides kv_len
// for batch b (for_batch). Plain C++ apart from FS_HD, so host code includes it too.
#pragma once
#include "core/mask.h"

#include <cstdint>

namespace flashstep::gpu {

struct KeyMask : Mask {
  const int64_t* kv_lens = nullptr;  // per batch entry (device memory), or null

  FS_HD bool any() const { return Mask::any() || kv_lens != nullptr; }
  // The mask of batch entry b: its own valid key length when kv_lens is given. Classify
  // blocks with the result (Mask::classify does not look at kv_lens).
  FS_HD KeyMask for_batch(int64_t b) const {
    KeyMask m = *this;
    if (kv_lens) m.kv_len = kv_lens[b];
    m.kv_lens = nullptr;
    return m;
  }
  enum : int { full = 0, partial = 1, empty = 2 };  // the order of Mask::Block, for int codes
};

}  // namespace flashstep::gpu
