// flashstep explain's parallelism section (app/explain_parallelism.cpp).
#pragma once
#include "core/problem.h"

#include <string>

namespace flashstep {

// Thread blocks of each tiled schedule for `heads` heads against the SMs of `gpu` (h200, a100),
// with t.S splits where a schedule splits the K/V blocks, and the bytes the splits add.
void print_explain_parallelism(const Tiling& t, int64_t heads, const std::string& gpu, int64_t nq, int64_t nk,
                               int64_t d, int bytes_per_elem);

}  // namespace flashstep
