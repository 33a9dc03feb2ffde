// Flash-decoding over a paged KV cache (--page-size P, core/paged_kv.h): the seeded block table,
// the closed form of the block-table reads, a paged run equal to the unpaged one bit for bit
// (O, lse and every step's values), the physical pages each load names, and the refusals.
#include "core/closed_form.h"
#include "core/schedules/decode/decode.h"
#include "core/lines.h"
#include "core/schedule_registry.h"
#include "core/paged_kv.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

using namespace flashstep;

namespace {
using fstest::kBin;

ProblemSpec paged_spec(int64_t nq, int64_t nk, int64_t d, int64_t M, int64_t bc, int64_t S, int64_t P, uint64_t seed) {
  ProblemSpec s;
  s.nq = nq; s.nk = nk; s.d = d; s.M = M; s.bc = bc; s.seed = seed;
  s.schedule = Schedule::decode;
  s.splits = S;
  if (P > 0) s.page_size = P;
  return s;
}

// Equal as bits: NaN never, -inf equal to -inf.
bool same_bits(const Mat& a, const Mat& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::equal(a.data(), a.data() + a.size(), b.data(), [](float x, float y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}
bool same_bits(const Vec& a, const Vec& b) { return same_bits(Mat(a), Mat(b)); }

// Pages touched by K/V block j, counted key by key (the closed form's brute-force twin).
int64_t entries_by_keys(int64_t nk, int64_t Bc, int64_t P) {
  int64_t n = 0;
  for (int64_t c0 = 0; c0 < nk; c0 += Bc) {
    int64_t last = -1;
    for (int64_t key = c0; key < std::min(nk, c0 + Bc); ++key)
      if (key / P != last) ++n, last = key / P;
  }
  return n;
}
}  // namespace

TEST_CASE("the block table is a seeded permutation of the pool's pages", "[decode][paged]") {
  for (int64_t heads : {1, 3})
    for (int64_t pages : {1, 2, 17, 300}) {
      std::vector<int32_t> t = page_table(heads, pages, 5);
      CHECK(t == page_table(heads, pages, 5));  // deterministic from the seed
      std::vector<int32_t> sorted = t;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int32_t> ids(size_t(heads * pages));
      std::iota(ids.begin(), ids.end(), 0);
      CHECK(sorted == ids);
      if (heads * pages >= 17) {
        CHECK(t != ids);                        // shuffled
        CHECK(t != page_table(heads, pages, 6));  // another seed, another placement
      }
    }
}

TEST_CASE("block-table entries: the closed form equals the count key by key", "[decode][paged][traffic]") {
  for (int64_t nk : {1, 2, 15, 16, 17, 97, 130, 256, 1000})
    for (int64_t Bc : {1, 3, 8, 16, 24, 64})
      for (int64_t P : {1, 2, 3, 5, 8, 16, 48, 100, 1000}) {
        if (P > nk) continue;
        const int64_t Tc = (nk + Bc - 1) / Bc;
        CAPTURE(nk, Bc, P);
        REQUIRE(block_table_entries(nk, Bc, Tc, P) == entries_by_keys(nk, Bc, P));
      }
}

TEST_CASE("paged decode: traffic equals the closed form with the block-table reads, exactly", "[decode][paged][traffic]") {
  struct Size { int64_t nq, nk, d, M, bc, P; };
  const Size sizes[] = {
      {1, 4096, 16, 1024, 0, 16},   // Bc = 16 = P
      {1, 97, 8, 256, 0, 5},        // ragged last block, P does not divide Bc = 8
      {1, 130, 12, 600, 0, 48},     // P > Bc = 13
      {3, 130, 12, 600, 0, 7},      // Nq != 1
      {5, 333, 16, 4096, 24, 10},   // Bc overridden: 24 vs P = 10 (gcd 2)
      {1, 100, 8, 256, 0, 100},     // one page holds the whole cache
      {2, 64, 8, 256, 0, 1},        // one token per page
  };
  uint64_t seed = 11;
  for (const Size& z : sizes) {
    const Tiling t0 = make_tiling(z.nq, z.nk, z.d, z.M, 0, z.bc);
    for (int64_t S : {int64_t(1), int64_t(2), t0.Tc}) {
      if (S > t0.Tc) continue;
      CAPTURE(z.nq, z.nk, z.d, z.M, z.bc, z.P, S, t0.Tc);
      const Trace tr = fstest::run_spec(paged_spec(z.nq, z.nk, z.d, z.M, z.bc, S, z.P, ++seed), true);
      const Tiling& t = tr.tiling;
      REQUIRE(t.P == z.P);
      const TrafficForm f = with_block_table_reads(decode_traffic(z.nq, z.nk, z.d, t.Tr, S), z.nk, t);
      CHECK(tr.totals.hbm_read_bytes == 4 * f.read_elems);
      CHECK(tr.totals.hbm_write_bytes == 4 * f.write_elems);
      CHECK(tr.totals.traffic.read[int(Tensor::BT)] == 4 * t.Tr * block_table_entries(z.nk, t.Bc, t.Tc, z.P));
      // the registry's form (run's summary, explain, the app) is the same
      const TrafficForm g = schedule_info(Schedule::decode).forward_traffic(z.nq, z.nk, z.d, t);
      CHECK(g.read_bytes(4) == f.read_bytes(4));
      CHECK(tr.totals.steps == decode_steps(t, S));  // paging adds no steps
      const Trace fast = fstest::run_spec(paged_spec(z.nq, z.nk, z.d, z.M, z.bc, S, z.P, seed), false);
      CHECK(fast.totals.hbm_read_bytes == tr.totals.hbm_read_bytes);
    }
  }
}

TEST_CASE("paged decode equals the unpaged run bit for bit: O, lse and every step", "[decode][paged]") {
  struct Case { int64_t nq, nk, d, M, S, P; bool causal; int64_t kv_len; Dtype dtype; double dropout; };
  const Case c = GENERATE(Case{1, 500, 16, 1024, 4, 16, false, -1, Dtype::fp32, 0},
                          Case{1, 97, 8, 256, 13, 5, false, -1, Dtype::bf16, 0},     // S = Tc
                          Case{1, 300, 16, 512, 1, 7, false, -1, Dtype::fp32, 0},    // S = 1: fa2's code
                          Case{6, 260, 16, 512, 3, 40, true, -1, Dtype::fp16, 0},    // causal, P > Bc
                          Case{2, 400, 16, 512, 5, 9, false, 123, Dtype::fp32, 0.2}, // key length, dropout
                          Case{1, 64, 8, 256, 2, 64, false, -1, Dtype::fp32, 0});    // one page
  CAPTURE(c.nq, c.nk, c.d, c.S, c.P, c.causal, c.kv_len);
  ProblemSpec s = paged_spec(c.nq, c.nk, c.d, c.M, 0, c.S, c.P, 23);
  s.options.mask.causal = c.causal;
  s.options.mask.kv_len = c.kv_len;
  s.options.dtype = c.dtype;
  s.options.dropout = c.dropout;
  const Trace paged = fstest::run_spec(s, true);
  s.page_size.reset();
  const Trace flat = fstest::run_spec(s, true);
  CHECK(same_bits(paged.O, flat.O));
  CHECK(same_bits(paged.lse, flat.lse));
  REQUIRE(paged.steps.size() == flat.steps.size());
  const std::vector<int32_t> table = page_table(1, kv_pages(c.nk, c.P), 23);
  int64_t loads = 0;
  for (size_t k = 0; k < paged.steps.size(); ++k) {
    const Step &a = paged.steps[k], &b = flat.steps[k];
    CAPTURE(k, line_label(a.line));
    REQUIRE(a.line == b.line);
    REQUIRE(a.i == b.i);
    REQUIRE(a.j == b.j);
    REQUIRE(a.split == b.split);
    CHECK(same_bits(a.tile, b.tile));
    CHECK(same_bits(a.O_i, b.O_i));
    const Vec Step::*stats[] = {&Step::m_old, &Step::l_old, &Step::m_new, &Step::l_new, &Step::m_tilde, &Step::alpha};
    for (const Vec Step::*v : stats) CHECK(same_bits(a.*v, b.*v));
    CHECK(b.pages.empty());
    if (line_role(a.line) != LineRole::load_kv) {
      CHECK(a.pages.empty());
      continue;
    }
    // A load names the physical page of every logical page its keys touch, as the table says.
    ++loads;
    const int64_t c0 = int64_t(a.j) * paged.tiling.Bc, bc = paged.tiling.rows_in_kv_block(a.j, c.nk);
    const int64_t lp0 = c0 / c.P, lp1 = (c0 + bc - 1) / c.P;
    REQUIRE(int64_t(a.pages.size()) == lp1 - lp0 + 1);
    for (int64_t lp = lp0; lp <= lp1; ++lp) CHECK(a.pages[size_t(lp - lp0)] == table[size_t(lp)]);
    CHECK(paged.explain(k).find("physical page") != std::string::npos);
  }
  CHECK(loads > 0);
  // Only the block-table bytes differ.
  CHECK(paged.totals.hbm_read_bytes - flat.totals.hbm_read_bytes == paged.totals.traffic.read[int(Tensor::BT)]);
  CHECK(paged.totals.traffic.read[int(Tensor::BT)] > 0);
}

TEST_CASE("the JSON trace names each load's physical pages and the page size", "[decode][paged][cli]") {
  std::string out;
  const auto dir = std::filesystem::temp_directory_path() / "flashstep_paged_json";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.json").string();
  REQUIRE(fstest::run_command(kBin + " run --schedule decode --nq 1 --nk 200 --d 16 --M 1024 --splits 3 "
                                     "--page-size 6 --trace " + path, out) == 0);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  CHECK(j["problem"]["page_size"] == 6);
  int loads = 0;
  for (const auto& st : j["steps"])
    if (st.contains("pages")) {
      ++loads;
      CHECK(st["pages"].size() >= 1);
      CHECK(st.contains("split"));
    }
  CHECK(loads == 13);  // Tc = ceil(200 / 16) blocks, each loaded once (Nq = 1)
}

TEST_CASE("a bad --page-size gets one error line and exit 2", "[decode][paged][cli][errors]") {
  const std::string base = kBin + " run --schedule decode --nq 1 --nk 100 --d 16 --M 1024 --page-size ";
  for (const char* bad : {"0", "-3", "101", "99999999999999999999", "abc", "1.5"}) {
    CAPTURE(bad);
    std::string out;
    CHECK(fstest::run_command(base + bad, out) == 2);
    CHECK(out.rfind("flashstep: error: ", 0) == 0);
    CHECK(out.find("page-size") != std::string::npos);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  }
  std::string out;
  CHECK(fstest::run_command(kBin + " run --schedule fa2 --n 100 --d 16 --page-size 16", out) == 2);
  CHECK(out.find("--page-size is for --schedule decode") != std::string::npos);
  CHECK(fstest::run_command(kBin + " explain --nq 1 --nk 100 --d 16 --M 1024 --page-size 0", out) == 2);
  CHECK(out.rfind("flashstep: error: ", 0) == 0);
}
