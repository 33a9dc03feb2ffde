#include "core/paged_kv.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace flashstep {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<int32_t> page_table(int64_t heads, int64_t pages, uint64_t seed) {
  std::vector<int32_t> perm(size_t(heads * pages));
  std::iota(perm.begin(), perm.end(), 0);
  uint64_t state = seed ^ 0x50414745444b56ull;  // "PAGEDKV": a stream apart from the inputs'
  for (size_t k = perm.size(); k > 1; --k) {   // Fisher-Yates
    const size_t r = size_t(splitmix64(state) % k);
    std::swap(perm[k - 1], perm[r]);
  }
  return perm;
}

int64_t block_table_entries(int64_t nk, int64_t Bc, int64_t Tc, int64_t P) {
  const int64_t step = P / std::gcd(Bc, P);  // (j + 1) Bc = 0 mod P  <=>  step divides j + 1
  return Tc + nk / P - (Tc - 1) / step - (nk % P == 0 ? 1 : 0);
}

PagedKv::PagedKv(const Mat& Kl, const Mat& Vl, int64_t page_size, uint64_t seed)
    : P(page_size), pages(kv_pages(Kl.rows(), page_size)), table(page_table(1, pages, seed)) {
  K = Mat::Zero(pages * P, Kl.cols());
  V = Mat::Zero(pages * P, Vl.cols());
  for (int64_t lp = 0; lp < pages; ++lp) {
    const int64_t rows = std::min(P, Kl.rows() - lp * P);
    K.middleRows(table[size_t(lp)] * P, rows) = Kl.middleRows(lp * P, rows);
    V.middleRows(table[size_t(lp)] * P, rows) = Vl.middleRows(lp * P, rows);
  }
}

void PagedKv::gather(const Mat& pool, int64_t row0, int64_t rows, const std::vector<int32_t>& phys, Mat& dst) const {
  dst.resize(rows, pool.cols());
  for (int64_t r = 0; r < rows;) {
    const int64_t n = row0 + r, lp = n / P, off = n % P, take = std::min(P - off, rows - r);
    dst.middleRows(r, take) = pool.middleRows(int64_t(phys[size_t(lp - row0 / P)]) * P + off, take);
    r += take;
  }
}

}  // namespace flashstep
