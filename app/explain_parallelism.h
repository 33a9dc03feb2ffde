// flashstep explain's parallelism section (app/explain_parallelism.cpp).
#pragma once
#include "core/problem.h"

#include <string>

namespace flashstep {

// Thread blocks of fa1, fa2 and decode for `heads` heads against the SMs of `gpu` (h200, a100),
// decode's S (splits, or its default when 0) and the bytes the splits add.
void print_explain_parallelism(int64_t nq, int64_t nk, int64_t d, const Tiling& t, int64_t heads,
                               const std::string& gpu, int64_t splits, int bytes_per_elem);

}  // namespace flashstep
