// The grouped order of the persistent forward's causal tiles (gpu/tile_order.h, ladder rung 45):
// every tile exactly once, each group's before the next group's for every block, longest first
// within a group and block, and with one group the ungrouped order, written here from its
// definition (gpu/fa3_kernel.cuh's next_tile).
#include "gpu/tile_order.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

using namespace flashstep::gpu;

namespace {

struct Tile {
  int i;
  int64_t h;
};

std::vector<Tile> block_tiles(int64_t heads, int Tr, int64_t hg, int G, int b) {
  std::vector<Tile> out;
  TileCursor c;
  Tile t{};
  while (grouped_causal_tile(heads, Tr, hg, G, b, c, t.i, t.h)) out.push_back(t);
  return out;
}

}  // namespace

TEST_CASE("grouped causal tiles: each once, group by group, longest first", "[tile_order]") {
  for (int64_t heads : {1, 3, 8, 10, 32, 256})
    for (int Tr : {1, 2, 5, 32, 128})
      for (int64_t hg : {int64_t(1), int64_t(2), int64_t(4), int64_t(8), heads})
        for (int G : {1, 7, 132}) {
          INFO("heads " << heads << ", Tr " << Tr << ", groups of " << hg << ", " << G << " blocks");
          std::set<std::pair<int, int64_t>> seen;
          size_t most = 0, least = SIZE_MAX;
          for (int b = 0; b < G; ++b) {
            const std::vector<Tile> ts = block_tiles(heads, Tr, hg, G, b);
            most = std::max(most, ts.size());
            least = std::min(least, ts.size());
            for (size_t k = 0; k < ts.size(); ++k) {
              REQUIRE(ts[k].i >= 0);
              REQUIRE(ts[k].i < Tr);
              REQUIRE(ts[k].h >= 0);
              REQUIRE(ts[k].h < heads);
              REQUIRE(seen.insert({ts[k].i, ts[k].h}).second);  // no tile twice
              if (k > 0) {
                const int64_t g0 = ts[k - 1].h / hg, g1 = ts[k].h / hg;
                REQUIRE(g1 >= g0);                             // a group's tiles before the next group's
                if (g1 == g0) REQUIRE(ts[k].i <= ts[k - 1].i);  // longest first within a group
              }
            }
          }
          REQUIRE(int64_t(seen.size()) == heads * Tr);  // every tile
          // Each group deals whole rounds: a block takes at most one tile more than another per group.
          const int64_t groups = (heads + hg - 1) / hg;
          REQUIRE(int64_t(most) - int64_t(least) <= groups);
        }
}

TEST_CASE("grouped causal tiles: one group is the ungrouped order", "[tile_order]") {
  for (int64_t heads : {1, 5, 256})
    for (int Tr : {1, 3, 32})
      for (int G : {1, 4, 132})
        for (int b = 0; b < G; b += (G > 8 ? 13 : 1)) {
          INFO("heads " << heads << ", Tr " << Tr << ", " << G << " blocks, block " << b);
          const std::vector<Tile> ts = block_tiles(heads, Tr, heads, G, b);
          std::vector<Tile> want;
          for (int64_t k = 0;; ++k) {  // next_tile's causal order: tile k G + b, odd rounds backwards
            const int64_t t = k * G + ((k & 1) ? G - 1 - b : b);
            if (t >= heads * Tr) break;
            want.push_back(Tile{Tr - 1 - int(t / heads), t % heads});
          }
          REQUIRE(ts.size() == want.size());
          for (size_t k = 0; k < ts.size(); ++k) {
            REQUIRE(ts[k].i == want[k].i);
            REQUIRE(ts[k].h == want[k].h);
          }
        }
}

TEST_CASE("head groups: K and V of a group within the bytes, at least one head, at most all", "[tile_order]") {
  const int64_t mib16 = int64_t(16) << 20;
  CHECK(head_group(256, 4096, 128, mib16) == 8);   // 2 MiB of K and V a head
  CHECK(head_group(256, 16384, 128, mib16) == 2);  // 8 MiB
  CHECK(head_group(256, 65536, 128, mib16) == 1);  // 32 MiB: still one
  CHECK(head_group(3, 1024, 64, mib16) == 3);      // all heads fit
  CHECK(head_group(10, 0, 64, mib16) == 10);
}

// The persistent backward's tiles (ladder configurations 38-40): every (head, K/V block) once, and
// with the odd heads reversed the causal work of a thread block's tiles (tile mod G) close to the
// mean, where the plain order leaves some blocks a tenth over it. A causal K/V block j keeps
// Tr - 2j Q blocks of 64 when Nq = Nk and its blocks are 128 keys.
TEST_CASE("persistent backward tiles: each once, causal work spread over the blocks", "[tile_order]") {
  for (int Tc : {1, 2, 5, 32}) {
    const int heads = 7;
    std::set<std::pair<int64_t, int>> seen;
    for (int t = 0; t < Tc * heads; ++t) {
      const int64_t h = backward_tile_head(t, Tc);
      const int j = backward_tile_block(t, Tc);
      REQUIRE(h >= 0);
      REQUIRE(h < heads);
      REQUIRE(j >= 0);
      REQUIRE(j < Tc);
      REQUIRE(seen.insert({h, j}).second);
      CHECK(j == (h % 2 ? Tc - 1 - t % Tc : t % Tc));
    }
    CHECK(seen.size() == size_t(Tc) * heads);
  }
  const int G = 132, heads = 256;
  for (int n : {4096, 16384}) {
    const int Tr = n / 64, Tc = n / 128;
    std::vector<double> plain(G, 0.0), reversed(G, 0.0);
    for (int t = 0; t < Tc * heads; ++t) {
      plain[size_t(t % G)] += Tr - 2 * (t % Tc);
      reversed[size_t(t % G)] += Tr - 2 * backward_tile_block(t, Tc);
    }
    auto max_over_mean = [](const std::vector<double>& w) {
      double sum = 0, most = 0;
      for (double x : w) sum += x, most = std::max(most, x);
      return most / (sum / double(w.size()));
    };
    INFO("N = " << n);
    CHECK(max_over_mean(reversed) < 1.03);
    CHECK(max_over_mean(reversed) < max_over_mean(plain));
    if (n == 4096) CHECK(max_over_mean(plain) > 1.1);
  }
}
