// The pipeline model (core/pipeline_model.h): a task graph per thread block, run on one SM's
// three units by a small fluid simulation (tasks that share a unit share its rate equally).
#include "core/pipeline_model.h"

#include "core/types.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>

namespace flashstep::pipeline {

namespace {
Rung rung_of(const std::vector<Rung>& v, int variant) {
  for (const Rung& r : v)
    if (r.variant == variant) return r;
  throw std::logic_error("pipeline model: no rung " + std::to_string(variant));
}
}  // namespace

std::vector<Rung> rungs(int64_t d) {
  if (d != 64 && d != 128)
    throw InputError("the pipeline model covers the Hopper kernels' d = 64 and d = 128 (got d = " +
                     std::to_string(d) + ")");
  // Resident blocks per SM from the registers ptxas reports (gpu/results/ptxas/tc-v13-v14.txt):
  // v13 at d = 64 takes 116 x 256 threads, two blocks in the 65536 registers; the others one.
  // v15-v18, v20, v21 launch 3 warpgroups (one producer) capped at 168 registers each, v19 4 capped at
  // 128 (gpu/results/fa3_rungs/ptxas.txt): one block per SM.
  // Each rung is the one before it with one change.
  std::vector<Rung> v;
  Rung r;
  auto add = [&](int variant, const char* what, auto change) {
    r.variant = variant;
    r.name = "v" + std::to_string(variant);
    r.what = what;
    change(r);
    v.push_back(r);
  };
  add(13, "wgmma, cp.async by every thread, 2 K/V buffers, one block-wide barrier per j, Bc 64", [&](Rung& x) {
    x.Bc = 64;
    x.ctas_per_sm = d == 64 ? 2 : 1;
  });
  add(14, "v13 with Bc 128", [](Rung& x) {
    x.Bc = 128;
    x.ctas_per_sm = 1;
  });
  add(15, "TMA loads by a producer warp into a ring of K/V stages (mbarriers), no block-wide barrier",
      [](Rung& x) { x.producer = true; });
  add(16, "v15 with ping-pong: the two consumer warpgroups take turns on the tensor cores", [](Rung& x) { x.pingpong = true; });
  add(17, "v15 with the intra-warpgroup overlap: S_ij issued first, the softmax of block j beside O += P~ V of block j - 1",
      [](Rung& x) {
        x.pingpong = false;
        x.intra = true;
      });
  add(18, "v17 persistent: one block per SM over the tiles (longest first when causal), the producer a tile ahead",
      [](Rung& x) { x.persistent = true; });
  // Three consumers take 160 registers each: O_i, S_ij and P~ fit at d = 64 with Bc 128, at
  // d = 128 only with Bc 64.
  add(19, "v17 with 3 consumer warpgroups (Br 192); Bc 128 at d = 64, 64 at d = 128", [&](Rung& x) {
    x.persistent = false;
    x.consumers = 3;
    x.Bc = d == 64 ? 128 : 64;
  });
  // FlashAttention-3's Hopper tiles: two consumers (240 registers each) with a longer Bc, the
  // per-block costs spread over more MMA work.
  add(20, "v17 with a longer Bc: 192 at d = 64, 176 at d = 128", [&](Rung& x) {
    x.consumers = 2;
    x.Bc = d == 64 ? 192 : 176;
  });
  add(21, "v18 (persistent) with v20's Bc", [](Rung& x) { x.persistent = true; });
  // FlashAttention-3's schedule: the intra-warpgroup overlap and the turns together. (Rungs 23-25
  // change only the softmax's dependent chains, instruction latencies this model does not have.)
  add(22, "v17 with ping-pong: the turns of v16 and the overlap of v17 together", [](Rung& x) {
    x.persistent = false;
    x.Bc = 128;
    x.pingpong = true;
  });
  add(26, "v22 with v20's Bc", [&](Rung& x) { x.Bc = d == 64 ? 192 : 176; });
  add(27, "v22 persistent", [](Rung& x) {
    x.Bc = 128;
    x.persistent = true;
  });
  add(28, "v27 with v20's Bc (v21 with ping-pong)", [&](Rung& x) { x.Bc = d == 64 ? 192 : 176; });
  add(29, "v19 persistent, its 3 consumers taking turns in a ring", [&](Rung& x) {
    x.consumers = 3;
    x.Bc = d == 64 ? 128 : 64;
  });
  // The later rungs each change one earlier rung (not the one before them).
  const auto derive = [&](int variant, int base, const char* what, auto change) {
    Rung b = rung_of(v, base);
    b.variant = variant;
    b.name = "v" + std::to_string(variant);
    b.what = what;
    change(b);
    v.push_back(b);
  };
  // Every n-th exp2 from core/poly_exp2.h's polynomial on the float32 pipes, on each d's
  // defaults: the special-function units' time shrinks, the float32 issue grows.
  const auto poly = [](int every) { return [every](Rung& x) { x.poly_every = every; }; };
  derive(35, 21, "v21 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(36, 22, "v22 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(37, 19, "v19 with every 8th exp2 from a polynomial on the float32 pipes", poly(8));
  derive(38, 21, "v21 with every 4th exp2 from a polynomial on the float32 pipes", poly(4));
  derive(39, 21, "v21 with a longer Bc: 224 at d = 64, 192 at d = 128", [&](Rung& x) { x.Bc = d == 64 ? 224 : 192; });
  // A third K/V stage (the producer two blocks ahead), and v19 persistent without the turns: the
  // d = 64 default since the softmax runs under O += P~ V (docs/tensor-cores.md).
  const auto third_stage = [](Rung& x) { x.stages = 3; };
  derive(33, d == 64 ? 21 : 22, "a third K/V stage on v21 at d = 64, on v22 at d = 128", third_stage);
  derive(34, 19, "v19 persistent: 3 consumers (Br 192), no turns", [](Rung& x) { x.persistent = true; });
  derive(43, 34, "v34 with a third K/V stage", third_stage);
  std::sort(v.begin(), v.end(), [](const Rung& a, const Rung& b) { return a.variant < b.variant; });
  return v;
}

Rung rung(int variant, int64_t d) {
  for (const Rung& r : rungs(d))
    if (r.variant == variant) return r;
  throw InputError("the pipeline model has variants 13-22, 26-29, 33-39 and 43 (the Hopper rungs; not 23-25 and 30-32, 41, "
                   "42, whose softmax in chains or wide O += P~ V change only instruction counts and latencies, nor 40), not " +
                   std::to_string(variant));
}

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::load: return "load";
    case Unit::tensor: return "tensor";
    case Unit::softmax: return "softmax";
  }
  return "?";
}

BlockCosts block_costs(const Rung& r, int64_t d, const Rates& rates) {
  BlockCosts c{};
  const double rows = 64, bc = r.Bc, dd = double(d);
  // FA2fwd L8 and L10: 2 x 64 x Bc x d FLOPs each, per warpgroup.
  c.s_clk = 2 * rows * bc * dd / rates.tensor_rate();
  c.o_clk = c.s_clk;
  // L9: one exp2 per score and one per row (alpha). Per score also about 4.5 float32 lane
  // operations (FMNMX for the max, FFMA for tau S - m, FADD into l, half an F2FP for the
  // rounding of P~) and, per row, d FMULs of the O_i rescale: issue-limited at fp32_per_clk.
  // With poly_every = n, one score in n takes its exp2 from core/poly_exp2.h instead: 11
  // float32 and integer lane operations (clamp, 3 FADD, 4 FFMA, shift, add, FMUL) in place of
  // the special-function unit's one issue.
  const double poly = r.poly_every > 0 ? 1.0 / r.poly_every : 0.0;
  c.exp_clk = (rows * bc * (1 - poly) + rows) / rates.exp_per_clk;
  c.issue_clk = (rows * bc * (4.5 + 1 + 10 * poly) + rows * dd) / rates.fp32_per_clk;
  c.softmax_clk = std::max(c.exp_clk, c.issue_clk);
  // L7: K_j and V_j, 2 x Bc x d 16-bit values, from L2; L4 Q_i and L14 O_i: Br x d from/to HBM.
  c.kv_clk = 2 * bc * dd * 2 / rates.l2_bytes_per_clk;
  c.q_clk = double(r.Br()) * dd * 2 / rates.hbm_bytes_per_clk;
  c.w_clk = c.q_clk;
  return c;
}

namespace {

struct Task {
  Segment seg;
  double delay = 0;  // latency after the last dependency before the task competes for its unit
  std::vector<int> succ;
  int deps_left = 0;
  double left = 0, ready_at = -1;
  bool active = false, done = false, started = false;
};

struct Graph {
  std::vector<Task> t;
  int add(int cta, int wg, Unit u, char kind, int j, double work, std::initializer_list<int> deps, double delay = 0) {
    Task k;
    k.seg = Segment{cta, wg, u, kind, j, work, 0, 0};
    k.left = work;
    k.delay = delay;
    const int id = int(t.size());
    t.push_back(k);
    for (int dp : deps) depend(id, dp);
    return id;
  }
  void depend(int id, int on) {
    if (on < 0) return;
    t[size_t(on)].succ.push_back(id);
    ++t[size_t(id)].deps_left;
  }
};

// The tasks of one thread block (see the header's unit list). Each consumer warpgroup w runs
// turns on the tensor cores: T_0 = [S_0], T_k = [O_k-1, S_k] (or [S_k, O_k-1] with the
// intra-warpgroup overlap), T_n = [O_n-1]; the tasks of a turn run in order.
void build_block(Graph& g, const Rung& r, const BlockCosts& c, int cta, int n) {
  const int W = r.consumers;
  const std::vector<std::vector<int>> empty(size_t(W), std::vector<int>(size_t(n), -1));
  std::vector<std::vector<int>> S = empty, P = empty, O = empty;
  const int q = g.add(cta, -1, Unit::load, 'Q', 0, c.q_clk, {});
  // Loads (FA2fwd L7): K_j then V_j, one stream in order; Q_i beside them.
  std::vector<int> K(size_t(n), -1), V(size_t(n), -1);
  for (int j = 0; j < n; ++j) {
    K[size_t(j)] = g.add(cta, -1, Unit::load, 'K', j, c.kv_clk / 2, {j > 0 ? V[size_t(j - 1)] : -1});
    V[size_t(j)] = g.add(cta, -1, Unit::load, 'V', j, c.kv_clk / 2, {K[size_t(j)]});
  }
  for (int j = 0; j < n; ++j)
    for (int w = 0; w < W; ++w) {
      // A producer signals K_j and V_j apart (one mbarrier each): S_ij waits for K_j only.
      // cp.async (v13, v14) waits for the whole group of block j.
      S[size_t(w)][size_t(j)] = g.add(cta, w, Unit::tensor, 'S', j, c.s_clk, {q, K[size_t(j)]});
      if (!r.producer) g.depend(S[size_t(w)][size_t(j)], V[size_t(j)]);
      P[size_t(w)][size_t(j)] = g.add(cta, w, Unit::softmax, 'P', j, c.softmax_clk, {S[size_t(w)][size_t(j)]});
      O[size_t(w)][size_t(j)] = g.add(cta, w, Unit::tensor, 'O', j, c.o_clk, {P[size_t(w)][size_t(j)], V[size_t(j)]});
    }
  // A stage is refilled once every warpgroup is done with the block that used it: with a
  // producer, K_j after S of block j - stages and V_j after O of that block; without one
  // (cp.async issued after the barrier at the top of block j - 1), after block j - 2's O, for
  // the two buffers of v13 and v14.
  for (int j = 0; j < n; ++j) {
    const int free_after = r.producer ? j - r.stages : j - 2;
    if (free_after < 0) continue;
    for (int w = 0; w < W; ++w) {
      g.depend(K[size_t(j)], r.producer ? S[size_t(w)][size_t(free_after)] : O[size_t(w)][size_t(free_after)]);
      g.depend(V[size_t(j)], O[size_t(w)][size_t(free_after)]);
    }
  }
  // The turns of each warpgroup: (first task, last task).
  std::vector<std::vector<std::pair<int, int>>> turns{size_t(W)};
  for (int w = 0; w < W; ++w) {
    auto& T = turns[size_t(w)];
    const auto& Sw = S[size_t(w)];
    const auto& Pw = P[size_t(w)];
    const auto& Ow = O[size_t(w)];
    if (n == 0) continue;
    T.push_back({Sw[0], Sw[0]});
    for (int k = 1; k < n; ++k) {
      if (r.intra) {
        // S_k right after the softmax of block k - 1 (and once turn k - 1 is done), then O_k-1,
        // which runs on the tensor cores while the softmax of block k runs.
        g.depend(Sw[size_t(k)], Pw[size_t(k - 1)]);
        g.depend(Sw[size_t(k)], T.back().second);
        g.depend(Ow[size_t(k - 1)], Sw[size_t(k)]);
        T.push_back({Sw[size_t(k)], Ow[size_t(k - 1)]});
      } else {
        // Wait for O_k-1 (after the softmax of k - 1), then S_k.
        g.depend(Sw[size_t(k)], Ow[size_t(k - 1)]);
        T.push_back({Ow[size_t(k - 1)], Sw[size_t(k)]});
      }
    }
    if (r.intra && n > 1) g.depend(Ow[size_t(n - 1)], T.back().second);
    T.push_back({Ow[size_t(n - 1)], Ow[size_t(n - 1)]});
  }
  // No producer: one block-wide barrier at the top of each block j >= 1.
  if (!r.producer)
    for (int j = 1; j < n; ++j)
      for (int w = 0; w < W; ++w)
        for (int w2 = 0; w2 < W; ++w2) g.depend(S[size_t(w)][size_t(j)], O[size_t(w2)][size_t(j - 1)]);
  // Ping-pong: turn k of warpgroup w starts after turn k of w - 1, turn k of warpgroup 0 after
  // turn k - 1 of the last warpgroup.
  if (r.pingpong && n > 0)
    for (size_t k = 0; k < turns[0].size(); ++k)
      for (int w = 0; w < W; ++w) {
        const int prev = w > 0 ? turns[size_t(w - 1)][k].second : (k > 0 ? turns[size_t(W - 1)][k - 1].second : -1);
        g.depend(turns[size_t(w)][k].first, prev);
      }
  // L14: write O_i once every warpgroup is done.
  const int wr = g.add(cta, -1, Unit::load, 'W', n, c.w_clk, {q});
  for (int w = 0; w < W && n > 0; ++w) g.depend(wr, O[size_t(w)][size_t(n - 1)]);
}

}  // namespace

Timeline simulate(const Rung& r, int64_t d, int n_blocks, int ctas, const Rates& rates) {
  if (n_blocks < 0 || ctas < 1) throw InputError("pipeline model: n_blocks >= 0 and ctas >= 1");
  const BlockCosts c = block_costs(r, d, rates);
  Graph g;
  for (int k = 0; k < ctas; ++k) build_block(g, r, c, k, n_blocks);
  for (Task& k : g.t)
    if (k.seg.unit == Unit::softmax) k.delay = rates.wait_clk;

  Timeline tl;
  double now = 0;
  size_t done = 0;
  std::vector<int> active, pending;  // pending: dependencies met, waiting out a delay
  auto release = [&](int id) {
    Task& k = g.t[size_t(id)];
    k.ready_at = now + k.delay;
    pending.push_back(id);
  };
  for (size_t id = 0; id < g.t.size(); ++id)
    if (g.t[id].deps_left == 0) release(int(id));
  const double eps = 1e-9;
  while (done < g.t.size()) {
    // Tasks whose delay has passed start competing; zero-work tasks finish at once.
    bool moved = true;
    while (moved) {
      moved = false;
      for (size_t p = 0; p < pending.size();) {
        Task& k = g.t[size_t(pending[p])];
        if (k.ready_at <= now + eps) {
          k.seg.start = now;
          k.started = !(rates.tensor_in_turn && k.seg.unit == Unit::tensor);
          k.active = true;
          active.push_back(pending[p]);
          pending[p] = pending.back();
          pending.pop_back();
        } else {
          ++p;
        }
      }
      for (size_t a = 0; a < active.size();) {
        Task& k = g.t[size_t(active[a])];
        if (k.left <= eps) {
          k.done = true;
          k.seg.end = now;
          ++done;
          const int id = active[a];
          active[a] = active.back();
          active.pop_back();
          for (int s : g.t[size_t(id)].succ)
            if (--g.t[size_t(s)].deps_left == 0) release(s);
          moved = true;
        } else {
          ++a;
        }
      }
    }
    if (done == g.t.size()) break;
    // Each active task's rate: 1 / (tasks on its unit); with tensor_in_turn, the tensor cores
    // serve one product at a time, the one ready first (then the lower id), the others wait.
    int share[3] = {0, 0, 0};
    int served = -1;
    for (int id : active) {
      const Task& k = g.t[size_t(id)];
      ++share[int(k.seg.unit)];
      if (rates.tensor_in_turn && k.seg.unit == Unit::tensor &&
          (served < 0 || k.ready_at < g.t[size_t(served)].ready_at - eps ||
           (std::abs(k.ready_at - g.t[size_t(served)].ready_at) <= eps && id < served)))
        served = id;
    }
    auto rate = [&](int id) -> double {
      const Task& k = g.t[size_t(id)];
      if (rates.tensor_in_turn && k.seg.unit == Unit::tensor) return id == served ? 1.0 : 0.0;
      return 1.0 / share[int(k.seg.unit)];
    };
    if (served >= 0 && !g.t[size_t(served)].started) {
      g.t[size_t(served)].seg.start = now;  // waiting for its turn is not running
      g.t[size_t(served)].started = true;
    }
    double dt = std::numeric_limits<double>::infinity();
    for (int id : active)
      if (rate(id) > 0) dt = std::min(dt, g.t[size_t(id)].left / rate(id));
    for (int id : pending) dt = std::min(dt, g.t[size_t(id)].ready_at - now);
    if (!std::isfinite(dt)) throw std::logic_error("pipeline model: a task graph with a cycle");
    for (int id : active) g.t[size_t(id)].left -= dt * rate(id);
    for (int u = 0; u < 3; ++u)
      if (share[u] > 0) tl.busy_clk[u] += dt;
    now += dt;
  }
  tl.end_clk = now;
  tl.segments.reserve(g.t.size());
  for (const Task& k : g.t) tl.segments.push_back(k.seg);
  return tl;
}

namespace {

// K/V blocks thread block (Q block i) keeps: Algorithm 2's block skipping, bottom-right causal.
int kept(const Rung& r, const Shape& s, int64_t i) {
  const int64_t bc = r.Bc;
  if (!s.causal) return int((s.nk + bc - 1) / bc);
  const int64_t last_row = std::min((i + 1) * r.Br(), s.nq) - 1;
  const int64_t hi = std::min(s.nk - 1, last_row + (s.nk - s.nq));
  return hi < 0 ? 0 : int(hi / bc + 1);
}

double kept_scores(const Shape& s) {
  if (!s.causal) return double(s.nq) * double(s.nk);
  double sum = 0;
  for (int64_t r = 0; r < s.nq; ++r) sum += double(std::max<int64_t>(0, std::min(s.nk, r + 1 + s.nk - s.nq)));
  return sum;
}

}  // namespace

TileEdges tile_edges(const Timeline& t) {
  TileEdges e;
  double first = t.end_clk, last_s = 0;
  for (const Segment& g : t.segments) {
    if (g.cta != 0 || g.unit != Unit::tensor) continue;
    first = std::min(first, g.start);
    if (g.kind == 'S') last_s = std::max(last_s, g.end);
  }
  e.prologue = first;
  e.tail = t.end_clk - last_s;
  return e;
}

double model_work(const Rung& r, const Shape& s) {
  const int64_t Tr = (s.nq + r.Br() - 1) / r.Br();
  std::set<int> counts;  // the K/V-block counts of the Q blocks: one timeline each
  for (int64_t i = 0; i < Tr; ++i) counts.insert(kept(r, s, i));
  const int n_max = counts.empty() ? 0 : *counts.rbegin();
  counts.insert(std::max(1, n_max / 2));  // the steady state's half-length timeline
  double blocks = double(n_max) + 1;      // and the longest once more
  for (int n : counts) blocks += double(n) + 1;
  // A simulated block is a few tasks per warpgroup and its loads, on each resident thread block;
  // placing a tile on the grid costs about a twentieth of a task, counting a row's kept scores a
  // thousandth. Measured with explain --pipeline (every rung, twice) on one core: 2e5 tasks
  // (--n 32768 --d 128 --causal; --nq 65536 --nk 1024 --heads 8000) take about 3 seconds.
  return blocks * double(r.ctas_per_sm) * double(r.consumers + 1) + 0.05 * double(Tr) * double(s.heads) +
         0.001 * double(s.nq);
}

Prediction predict(const Rung& r, const Shape& s, const Rates& rates) {
  if (s.heads < 1 || s.nq < 1 || s.nk < 1) throw InputError("pipeline model: heads, Nq and Nk must be at least 1");
  if (s.nk > (int64_t(1) << 22) || s.nq > (int64_t(1) << 22))
    throw InputError("pipeline model: Nq and Nk at most 4194304");
  // The model's own work is refused before it starts: causal timelines of every length make it
  // quadratic in Nk, and the grid's tiles are placed one by one.
  if (const double w = model_work(r, s); w > kMaxModelWork) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the pipeline model would simulate about %.3g tasks for v%d at this shape (limit %.3g, about five "
                  "seconds for every rung): use a smaller Nq, Nk or --heads",
                  w, r.variant, kMaxModelWork);
    throw InputError(buf);
  }
  Prediction p;
  const int64_t Tr = (s.nq + r.Br() - 1) / r.Br();
  p.blocks = Tr * s.heads;
  const int64_t slots = r.persistent ? std::min<int64_t>(p.blocks, rates.sms) : int64_t(rates.sms) * r.ctas_per_sm;
  p.waves = double(p.blocks) / double(slots);
  // Duration of one thread block keeping n K/V blocks, ctas_per_sm of them sharing the SM, and
  // its edges.
  std::map<int, std::pair<double, TileEdges>> dur;
  auto timed = [&](int n) -> const std::pair<double, TileEdges>& {
    auto it = dur.find(n);
    if (it != dur.end()) return it->second;
    const Timeline t = simulate(r, s.d, n, r.ctas_per_sm, rates);
    return dur[n] = {t.end_clk, tile_edges(t)};
  };
  auto duration = [&](int n) { return timed(n).first; };
  std::vector<int> work;
  work.reserve(size_t(Tr));
  for (int64_t i = 0; i < Tr; ++i) work.push_back(kept(r, s, i));
  std::sort(work.begin(), work.end(), std::greater<int>());
  double end = 0;
  if (r.persistent) {
    // The kernel's static order: tile t is Q block Tr - 1 - t / heads when causal (longest
    // first), t mod Tr otherwise; block b takes tile k G + b of round k (G - 1 - b in odd rounds
    // when causal).
    const int64_t G = slots;
    for (int64_t b = 0; b < G; ++b) {
      double t_b = 0;
      int prev = -1;
      for (int64_t k = 0;; ++k) {
        const int64_t t = k * G + (s.causal && (k & 1) ? G - 1 - b : b);
        if (t >= p.blocks) break;
        const int n = kept(r, s, s.causal ? Tr - 1 - t / s.heads : t % Tr);
        double d = duration(n);
        if (prev >= 0) d -= std::min(timed(prev).second.tail, timed(n).second.prologue);
        t_b += d;
        prev = n;
      }
      end = std::max(end, t_b);
    }
  } else {
    // Causal grids run the longest thread blocks first over all heads (v11's grid); each goes
    // to the slot that frees first.
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    for (int64_t k = 0; k < std::min(slots, p.blocks); ++k) free_at.push(0.0);
    for (int n : work) {
      const double t = duration(n);
      for (int64_t h = 0; h < s.heads; ++h) {
        const double start = free_at.top();
        free_at.pop();
        free_at.push(start + t);
        end = std::max(end, start + t);
      }
    }
  }
  p.flops = 4.0 * double(s.heads) * kept_scores(s) * double(s.d);
  p.ms = end / (rates.clock_ghz * 1e6);
  p.tflops = p.flops / (p.ms * 1e-3) * 1e-12;
  p.bound_tflops = rates.tensor_rate() * rates.sms * rates.clock_ghz * 1e-3;
  const int n = work.empty() ? 0 : work.front();
  const Timeline tl = simulate(r, s.d, n, r.ctas_per_sm, rates);
  const int half = std::max(1, n / 2);
  p.clk_per_kv_block = n > half ? (tl.end_clk - duration(half)) / double(n - half) : tl.end_clk / std::max(1, n);
  if (tl.end_clk > 0) {
    p.load_busy = tl.busy_clk[0] / tl.end_clk;
    p.tensor_busy = tl.busy_clk[1] / tl.end_clk;
    p.softmax_busy = tl.busy_clk[2] / tl.end_clk;
  }
  return p;
}

namespace {

void append(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void append(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

}  // namespace

std::string explain_pipeline(int variant, const Shape& s, const Rates& rates) {
  const Rung r = rung(variant, s.d);
  const BlockCosts c = block_costs(r, s.d, rates);
  std::string out;
  append(out, "pipeline model of one SM (core/pipeline_model.h), variant %d: %s\n", r.variant, r.what.c_str());
  const std::string poly = r.poly_every > 0 ? ", every " + std::to_string(r.poly_every) + "th exp2 by polynomial" : "";
  append(out, "  Br %d (%d consumer warpgroups x 64 rows), Bc %d, %d K/V stages, %d thread block%s per SM%s%s%s%s%s%s\n",
         r.Br(), r.consumers, r.Bc, r.stages, r.ctas_per_sm, r.ctas_per_sm > 1 ? "s" : "",
         r.producer ? ", producer warp" : ", loads by every thread + barrier per block",
         r.pingpong ? ", ping-pong" : "", r.intra ? ", intra-warpgroup overlap" : "",
         r.persistent ? ", persistent" : "", poly.c_str(), r.built ? "" : " (not built)");
  append(out, "rates per SM per clock (docs/pipeline-model.md): tensor %.0f FLOP x %.2f = %.0f, exp2 %.0f, "
              "float32 %.0f lanes, L2 %.1f B, HBM %.2f B; %d SMs at %.2f GHz\n"
              "tensor cores shared by two warpgroups' products: %s; wait before each softmax: %.0f clocks\n",
         rates.tensor_flop_per_clk, rates.tensor_efficiency, rates.tensor_rate(), rates.exp_per_clk,
         rates.fp32_per_clk, rates.l2_bytes_per_clk, rates.hbm_bytes_per_clk, rates.sms, rates.clock_ghz,
         rates.tensor_in_turn ? "in turn, first ready first (--tensor-in-turn)" : "evenly (both finish late)",
         rates.wait_clk);
  append(out, "shape: %lld heads x Nq %lld x Nk %lld, d = %lld%s\n\n", (long long)s.heads, (long long)s.nq,
         (long long)s.nk, (long long)s.d, s.causal ? ", causal (bottom-right)" : "");
  append(out, "per warpgroup and K/V block (64 rows x Bc %d), clocks at the unit's full rate:\n", r.Bc);
  append(out, "  S = Q K^T (L8)        %7.0f   tensor\n", c.s_clk);
  append(out, "  softmax (L9)          %7.0f   exp2 limit %.0f, float32 issue limit %.0f\n", c.softmax_clk,
         c.exp_clk, c.issue_clk);
  append(out, "  O += P~ V (L10)       %7.0f   tensor\n", c.o_clk);
  append(out, "  K_j, V_j load (L7)    %7.0f   load, per thread block\n", c.kv_clk);
  append(out, "  Q_i load / O_i write  %7.0f   load (HBM), once per thread block\n\n", c.q_clk);

  // The Gantt chart of the first blocks of thread block 0.
  const int n_show = 4;
  const Timeline tl = simulate(r, s.d, n_show, r.ctas_per_sm, rates);
  double t_end = 0;
  for (const Segment& g : tl.segments)
    if (g.cta == 0) t_end = std::max(t_end, g.end);
  const int cols = 96;
  const double per = t_end / cols;
  append(out, "timeline of thread block 0, %d K/V blocks (one column = %.0f clocks; Q, K, V: loads, S: Q K^T, "
              "P: softmax, O: P~ V, W: write O; lower case: the unit is shared at that moment)\n",
         n_show, per);
  auto lane = [&](const char* label, int wg, Unit u) {
    std::string row(size_t(cols), '.');
    for (int col = 0; col < cols; ++col) {
      const double t = (col + 0.5) * per;
      int here = 0, on_unit = 0;
      char kind = '.';
      for (const Segment& g : tl.segments) {
        if (g.unit != u || !(g.start <= t && t < g.end)) continue;
        ++on_unit;
        if (g.cta == 0 && g.wg == wg) {
          ++here;
          kind = g.kind;
        }
      }
      if (here > 0) row[size_t(col)] = on_unit > 1 ? char(kind - 'A' + 'a') : kind;
    }
    append(out, "  %-14s |%s|\n", label, row.c_str());
  };
  lane("loads", -1, Unit::load);
  for (int w = 0; w < r.consumers; ++w) {
    char a[32], b[32];
    std::snprintf(a, sizeof a, "wg%d tensor", w);
    std::snprintf(b, sizeof b, "wg%d softmax", w);
    lane(a, w, Unit::tensor);
    lane(b, w, Unit::softmax);
  }
  if (r.ctas_per_sm > 1)
    append(out, "  (%d thread blocks share the SM; the other's tasks show as lower case here)\n", r.ctas_per_sm);

  const Prediction p = predict(r, s, rates);
  if (r.persistent)
    append(out, "\nprediction: %lld tiles on %.0f persistent thread blocks (%.2f tiles each), %.0f clocks per K/V block in the steady state\n",
           (long long)p.blocks, std::round(double(p.blocks) / p.waves), p.waves, p.clk_per_kv_block);
  else
    append(out, "\nprediction: %lld thread blocks on %d x %d slots (%.2f waves), %.0f clocks per K/V block in the steady state\n",
           (long long)p.blocks, rates.sms, r.ctas_per_sm, p.waves, p.clk_per_kv_block);
  append(out, "  %.3f ms, %.1f TFLOP/s (tensor-core ceiling %.0f); units busy: tensor %.0f%%, softmax %.0f%%, load %.0f%%\n",
         p.ms, p.tflops, p.bound_tflops, 100 * p.tensor_busy, 100 * p.softmax_busy, 100 * p.load_busy);
  append(out, "\nevery modelled rung at this shape:\n");
  append(out, "  %-4s %4s %4s %6s %8s %9s %6s %10s %9s %10s %9s  %s\n", "v", "Br", "Bc", "blk/SM", "producer", "ping-pong",
         "intra", "persistent", "exp2 poly", "clk/block", "TFLOP/s", "");
  for (const Rung& q : rungs(s.d)) {
    const Prediction pq = predict(q, s, rates);
    const std::string share = q.poly_every > 0 ? "1/" + std::to_string(q.poly_every) : "no";
    append(out, "  %-4d %4d %4d %6d %8s %9s %6s %10s %9s %10.0f %9.1f  %s\n", q.variant, q.Br(), q.Bc, q.ctas_per_sm,
           q.producer ? "yes" : "no", q.pingpong ? "yes" : "no", q.intra ? "yes" : "no", q.persistent ? "yes" : "no",
           share.c_str(), pq.clk_per_kv_block, pq.tflops, q.built ? "" : "(not built)");
  }
  return out;
}

}  // namespace flashstep::pipeline
