// Philox 4x32-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3"): a
// counter-based generator, so the CPU engine and a CUDA kernel draw the identical dropout mask
// for any element without sharing state. Keyed by the seed; the counter is
// (column, row, head, batch). Marked FS_HD so gpu/ can include this header unchanged.
#pragma once
#include "core/host_device.h"

#include <cstdint>

namespace flashstep {

struct Philox4 {
  uint32_t v[4];
};

FS_HD uint32_t philox_mulhi(uint32_t a, uint32_t b) {
  return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
}

FS_HD Philox4 philox4x32_10(Philox4 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = philox_mulhi(kM0, ctr.v[0]), lo0 = kM0 * ctr.v[0];
    const uint32_t hi1 = philox_mulhi(kM1, ctr.v[2]), lo1 = kM1 * ctr.v[2];
    ctr = Philox4{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// Whether attention weight P[row, col] survives dropout with probability p (kept if a uniform
// draw in [0, 1) with 24 bits is >= p).
FS_HD bool dropout_keep(uint64_t seed, uint32_t batch, uint32_t head, uint32_t row, uint32_t col,
                        float p) {
  const Philox4 r = philox4x32_10(Philox4{{col, row, head, batch}}, uint32_t(seed),
                                  uint32_t(seed >> 32));
  return float(r.v[0] >> 8) * (1.0f / 16777216.0f) >= p;
}

}  // namespace flashstep

#if !defined(__CUDACC__)
#include "core/types.h"
namespace flashstep {
// Algorithm 2's dropout on a tile of P~ whose top-left element is (row0, col0): dropped
// entries become 0, kept ones are scaled by 1/(1-p). l is left alone (it sums the undropped
// weights), exactly as in the paper. Optionally returns the keep mask (1 kept, 0 dropped). The
// CPU engine runs one head, which is (batch 0, head 0) of the GPU's (B, H) layout.
inline void apply_dropout(Mat& P, float p, uint64_t seed, int64_t row0, int64_t col0,
                          Mat* keep_out = nullptr, uint32_t batch = 0, uint32_t head = 0) {
  const float scale = 1.0f / (1.0f - p);
  if (keep_out) keep_out->resize(P.rows(), P.cols());
  for (int64_t r = 0; r < P.rows(); ++r)
    for (int64_t c = 0; c < P.cols(); ++c) {
      const bool keep = dropout_keep(seed, batch, head, uint32_t(row0 + r), uint32_t(col0 + c), p);
      P(r, c) = keep ? P(r, c) * scale : 0.0f;
      if (keep_out) (*keep_out)(r, c) = keep ? 1.0f : 0.0f;
    }
}
}  // namespace flashstep
#endif
