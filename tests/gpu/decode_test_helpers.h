// Helpers shared by the GPU decode tests (test_gpu_decode.cpp, test_gpu_paged.cpp).
#pragma once
#include "gpu_test_helpers.h"

#include <vector>

namespace gputest {

// One query row and Nk keys and values per head, fresh random inputs (head h from seed + h),
// laid out (heads, N, d) as the GPU backend takes them.
struct HeadInputs {
  std::vector<float> Q, K, V;
};
inline HeadInputs random_heads(int64_t heads, int64_t nk, int64_t d, uint64_t seed) {
  HeadInputs in;
  for (int64_t h = 0; h < heads; ++h) {
    const Mat q = make_input("random", 1, d, seed + uint64_t(h), 0), k = make_input("random", nk, d, seed + uint64_t(h), 1),
              v = make_input("random", nk, d, seed + uint64_t(h), 2);
    in.Q.insert(in.Q.end(), q.data(), q.data() + q.size());
    in.K.insert(in.K.end(), k.data(), k.data() + k.size());
    in.V.insert(in.V.end(), v.data(), v.data() + v.size());
  }
  return in;
}

}  // namespace gputest
