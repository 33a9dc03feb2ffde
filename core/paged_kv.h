// PagedAttention's KV cache (Kwon et al., "Efficient Memory Management for Large Language Model
// Serving with PagedAttention", 2023; vLLM's block tables), as flash-decoding reads it with
// --page-size P: the Nk keys and values of a head are cut into pages of P tokens (logical page
// lp holds keys lp P .. lp P + P - 1; the last one may be partly filled), the pages lie at
// shuffled physical places of a pool, and a block table (one int32 per logical page, per head)
// says where: key n of head h is row table[h][n / P] P + n mod P of the pool.
//
// The shuffle is a seeded permutation (Fisher-Yates driven by splitmix64 of the --seed), so a
// run is deterministic: page_table(heads, pages, seed) permutes the heads x pages physical pages
// of one pool and gives head h the slice [h pages, (h + 1) pages). The CPU engine has one head;
// the GPU backend gives every one of its B x H heads its own slice of the same permutation.
//
// The values are the unpaged run's, only their addresses differ: a paged run equals the
// unpaged one bit for bit (tests/test_paged.cpp, tests/gpu/test_gpu_decode.cpp).
#pragma once
#include "core/types.h"

#include <cstdint>
#include <vector>

namespace flashstep {

// Logical pages of Nk tokens: ceil(Nk / P).
inline int64_t kv_pages(int64_t nk, int64_t P) { return (nk + P - 1) / P; }

// The block tables of `heads` heads of `pages` logical pages each: a permutation of the pool's
// heads x pages physical pages, head h's table at [h pages, (h + 1) pages).
std::vector<int32_t> page_table(int64_t heads, int64_t pages, uint64_t seed);

// Block-table entries one pass over the Tc K/V blocks of Bc keys reads: block j reads the entry
// of every page it touches, floor((e_j - 1) / P) - floor(s_j / P) + 1 for keys s_j .. e_j - 1.
// Summed over j the inner boundaries telescope:
//   entries = Tc + floor(Nk / P) - floor((Tc - 1) / (P / gcd(Bc, P))) - [P divides Nk]
// (a block boundary that falls on a page boundary is the only one that does not read a page
// twice; (j + 1) Bc is a multiple of P exactly when j + 1 is a multiple of P / gcd(Bc, P)).
int64_t block_table_entries(int64_t nk, int64_t Bc, int64_t Tc, int64_t P);

// The physical side of a paged cache on the CPU: the table as the storage holds it and the
// K and V pools (pages x P rows, rows past Nk zero).
struct PagedKv {
  int64_t P = 0, pages = 0;
  std::vector<int32_t> table;
  Mat K, V;  // the pools, physical page p at rows p P .. p P + P - 1
  PagedKv(const Mat& K, const Mat& V, int64_t page_size, uint64_t seed);
  // Logical rows row0 .. row0 + rows - 1 of `pool` gathered into dst through the physical
  // pages in `phys` (one per logical page from row0 / P on, as read from the block table).
  void gather(const Mat& pool, int64_t row0, int64_t rows, const std::vector<int32_t>& phys, Mat& dst) const;
};

}  // namespace flashstep
