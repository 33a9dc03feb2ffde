// The ladder's rungs as the pipeline model sees them (gpu/ladder/pipeline_rungs.h).
#include "gpu/ladder/pipeline_rungs.h"

#include "core/types.h"

#include <algorithm>
#include <stdexcept>

namespace flashstep::ladder {

namespace {
Rung rung_of(const std::vector<Rung>& v, int variant) {
  for (const Rung& r : v)
    if (r.variant == variant) return r;
  throw std::logic_error("pipeline rungs: no rung " + std::to_string(variant));
}
}  // namespace

std::vector<Rung> rungs(int64_t d) {
  (void)pipeline::techniques(d);  // the model's own check of d (64 or 128)
  // Resident blocks per SM from the registers ptxas reports (gpu/results/ptxas/tc-v13-v14.txt):
  // v13 at d = 64 takes 116 x 256 threads, two blocks in the 65536 registers; the others one.
  // v15-v18, v20, v21 launch 3 warpgroups (one producer) capped at 168 registers each, v19 4 capped at
  // 128 (gpu/results/fa3_rungs/ptxas.txt): one block per SM.
  // Each rung is the one before it with one change.
  std::vector<Rung> v;
  Rung r;
  auto add = [&](int variant, const char* what, auto change) {
    r.variant = variant;
    r.kernel.key = "v" + std::to_string(variant);
    r.kernel.what = what;
    change(r.kernel);
    v.push_back(r);
  };
  add(13, "wgmma, cp.async by every thread, 2 K/V buffers, one block-wide barrier per j, Bc 64", [&](pipeline::Kernel& x) {
    x.Bc = 64;
    x.ctas_per_sm = d == 64 ? 2 : 1;
  });
  add(14, "v13 with Bc 128", [](pipeline::Kernel& x) {
    x.Bc = 128;
    x.ctas_per_sm = 1;
  });
  add(15, "TMA loads by a producer warp into a ring of K/V stages (mbarriers), no block-wide barrier",
      [](pipeline::Kernel& x) { x.producer = true; });
  add(16, "v15 with ping-pong: the two consumer warpgroups take turns on the tensor cores", [](pipeline::Kernel& x) { x.pingpong = true; });
  add(17, "v15 with the intra-warpgroup overlap: S_ij issued first, the softmax of block j beside O += P~ V of block j - 1",
      [](pipeline::Kernel& x) {
        x.pingpong = false;
        x.intra = true;
      });
  add(18, "v17 persistent: one block per SM over the tiles (longest first when causal), the producer a tile ahead",
      [](pipeline::Kernel& x) { x.persistent = true; });
  // Three consumers take 160 registers each: O_i, S_ij and P~ fit at d = 64 with Bc 128, at
  // d = 128 only with Bc 64.
  add(19, "v17 with 3 consumer warpgroups (Br 192); Bc 128 at d = 64, 64 at d = 128", [&](pipeline::Kernel& x) {
    x.persistent = false;
    x.consumers = 3;
    x.Bc = d == 64 ? 128 : 64;
  });
  // FlashAttention-3's Hopper tiles: two consumers (240 registers each) with a longer Bc, the
  // per-block costs spread over more MMA work.
  add(20, "v17 with a longer Bc: 192 at d = 64, 176 at d = 128", [&](pipeline::Kernel& x) {
    x.consumers = 2;
    x.Bc = d == 64 ? 192 : 176;
  });
  add(21, "v18 (persistent) with v20's Bc", [](pipeline::Kernel& x) { x.persistent = true; });
  // FlashAttention-3's schedule: the intra-warpgroup overlap and the turns together. (Rungs 23-25
  // change only the softmax's dependent chains, instruction latencies this model does not have.)
  add(22, "v17 with ping-pong: the turns of v16 and the overlap of v17 together", [](pipeline::Kernel& x) {
    x.persistent = false;
    x.Bc = 128;
    x.pingpong = true;
  });
  add(26, "v22 with v20's Bc", [&](pipeline::Kernel& x) { x.Bc = d == 64 ? 192 : 176; });
  add(27, "v22 persistent", [](pipeline::Kernel& x) {
    x.Bc = 128;
    x.persistent = true;
  });
  add(28, "v27 with v20's Bc (v21 with ping-pong)", [&](pipeline::Kernel& x) { x.Bc = d == 64 ? 192 : 176; });
  add(29, "v19 persistent, its 3 consumers taking turns in a ring", [&](pipeline::Kernel& x) {
    x.consumers = 3;
    x.Bc = d == 64 ? 128 : 64;
  });
  // The later rungs each change one earlier rung (not the one before them).
  const auto derive = [&](int variant, int base, const char* what, auto change) {
    Rung b = rung_of(v, base);
    b.variant = variant;
    b.kernel.key = "v" + std::to_string(variant);
    b.kernel.what = what;
    change(b.kernel);
    v.push_back(b);
  };
  // Every n-th exp2 from gpu/ladder/poly_exp2.h's polynomial on the float32 pipes, on each d's
  // defaults: the special-function units' time shrinks, the float32 issue grows.
  const auto poly = [](int every) { return [every](pipeline::Kernel& x) { x.poly_every = every; }; };
  derive(35, 21, "v21 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(36, 22, "v22 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(37, 19, "v19 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(38, 21, "v21 with every 4th exp2 from a polynomial on the float32 pipes", poly(4));
  derive(39, 21, "v21 with a longer Bc: 224 at d = 64, 192 at d = 128", [&](pipeline::Kernel& x) { x.Bc = d == 64 ? 224 : 192; });
  // A third K/V stage (the producer two blocks ahead), and v19 persistent without the turns: the
  // d = 64 default since the softmax runs under O += P~ V (gpu/ladder/notes/tensor-cores.md).
  const auto third_stage = [](pipeline::Kernel& x) { x.stages = 3; };
  derive(33, d == 64 ? 21 : 22, "a third K/V stage on v21 at d = 64, on v22 at d = 128", third_stage);
  derive(34, 19, "v19 persistent: 3 consumers (Br 192), no turns", [](pipeline::Kernel& x) { x.persistent = true; });
  derive(43, 34, "v34 with a third K/V stage", third_stage);
  std::sort(v.begin(), v.end(), [](const Rung& a, const Rung& b) { return a.variant < b.variant; });
  return v;
}

Rung rung(int variant, int64_t d) {
  for (const Rung& r : rungs(d))
    if (r.variant == variant) return r;
  throw InputError("the ladder's pipeline table has variants 13-22, 26-29, 33-39 and 43, not " + std::to_string(variant));
}

}  // namespace flashstep::ladder
