// The pipeline model (core/pipeline_model.h): a task graph per thread block, run on one SM's
// three units by a small fluid simulation (tasks that share a unit share its rate equally).
#include "core/pipeline_model.h"

#include "core/pipeline_graph.h"

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

std::vector<Kernel> techniques(int64_t d) {
  if (d != 64 && d != 128)
    throw InputError("the pipeline model covers the Hopper kernels' d = 64 and d = 128 (got d = " +
                     std::to_string(d) + ")");
  // One thread block per SM in each: the registers ptxas reports (gpu/results/ptxas/: 230 a
  // thread for cp.async by every thread at d = 128; a producer's consumers take 240 by
  // setmaxnreg) leave no room for a second.
  std::vector<Kernel> v;
  Kernel k;
  auto add = [&](const char* key, const char* what, auto change) {
    k.key = key;
    k.what = what;
    change(k);
    v.push_back(k);
  };
  add("fa2-wgmma",
      "FlashAttention-2 on wgmma: every thread loads K_j, V_j by cp.async into 2 buffers, one block-wide barrier "
      "per K/V block, Bc 128",
      [](Kernel& x) { x.Bc = 128; });
  add("tma-producer", "a producer warp loads by TMA into a ring of K/V stages (mbarriers): no block-wide barrier",
      [](Kernel& x) { x.producer = true; });
  add("ping-pong", "the two consumer warpgroups take turns on the tensor cores", [](Kernel& x) { x.pingpong = true; });
  add("softmax-under-product",
      "no turns; each warpgroup issues S_ij first and runs the softmax of block j beside O += P~ V of block j - 1",
      [](Kernel& x) {
        x.pingpong = false;
        x.intra = true;
      });
  add("persistent", "one thread block per SM loops over the tiles (longest first when causal), the producer a tile ahead",
      [](Kernel& x) { x.persistent = true; });
  // The default kernel of each d (gpu/fa3_forward.cu, fwd_config_sm90): at d = 64 three consumer
  // warpgroups (Br 192, 160 registers each hold O_i, S_ij and P~ with Bc 128); at d = 128 two with
  // Bc 192, and O += P~ V as one m64n128k16 per 16 keys, which changes only instruction counts,
  // not the units' work this model charges.
  add("default",
      d == 64 ? "the default at d = 64: persistent, the softmax under the product, 3 consumer warpgroups (Br 192), Bc 128"
              : "the default at d = 128: persistent, the softmax under the product, 2 consumer warpgroups, Bc 192, "
                "wide O += P~ V",
      [&](Kernel& x) {
        x.consumers = d == 64 ? 3 : 2;
        x.Bc = d == 64 ? 128 : 192;
      });
  return v;
}

Kernel technique(const std::string& key, int64_t d) {
  for (const Kernel& k : techniques(d))
    if (k.key == key) return k;
  throw InputError("the pipeline model has no technique '" + key + "' (it has " + technique_keys() + ")");
}

std::string technique_keys() {
  std::string out;
  for (const Kernel& k : techniques(64)) out += (out.empty() ? "" : ", ") + k.key;
  return out;
}

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::load: return "load";
    case Unit::tensor: return "tensor";
    case Unit::softmax: return "softmax";
  }
  return "?";
}

BlockCosts block_costs(const Kernel& r, int64_t d, const Rates& rates) {
  BlockCosts c{};
  const double rows = 64, bc = r.Bc, dd = double(d);
  // FA2fwd L8 and L10: 2 x 64 x Bc x d FLOPs each, per warpgroup.
  c.s_clk = 2 * rows * bc * dd / rates.tensor_rate();
  c.o_clk = c.s_clk;
  // L9: one exp2 per score and one per row (alpha). Per score also about 4.5 float32 lane
  // operations (FMNMX for the max, FFMA for tau S - m, FADD into l, half an F2FP for the
  // rounding of P~) and, per row, d FMULs of the O_i rescale: issue-limited at fp32_per_clk.
  // With poly_every = n, one score in n takes its exp2 from a polynomial instead (the ladder's
  // gpu/ladder/poly_exp2.h): 11 float32 and integer lane operations (clamp, 3 FADD, 4 FFMA,
  // shift, add, FMUL) in place of the special-function unit's one issue.
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

// The tasks of one thread block (see the header's unit list). Each consumer warpgroup w runs
// turns on the tensor cores: T_0 = [S_0], T_k = [O_k-1, S_k] (or [S_k, O_k-1] with the
// intra-warpgroup overlap), T_n = [O_n-1]; the tasks of a turn run in order.
void build_block(Graph& g, const Kernel& r, const BlockCosts& c, int cta, int n) {
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
      // cp.async by every thread waits for the whole group of block j.
      S[size_t(w)][size_t(j)] = g.add(cta, w, Unit::tensor, 'S', j, c.s_clk, {q, K[size_t(j)]});
      if (!r.producer) g.depend(S[size_t(w)][size_t(j)], V[size_t(j)]);
      P[size_t(w)][size_t(j)] = g.add(cta, w, Unit::softmax, 'P', j, c.softmax_clk, {S[size_t(w)][size_t(j)]});
      O[size_t(w)][size_t(j)] = g.add(cta, w, Unit::tensor, 'O', j, c.o_clk, {P[size_t(w)][size_t(j)], V[size_t(j)]});
    }
  // A stage is refilled once every warpgroup is done with the block that used it: with a
  // producer, K_j after S of block j - stages and V_j after O of that block; without one
  // (cp.async issued after the barrier at the top of block j - 1), after block j - 2's O, for
  // the two buffers of FlashAttention-2 on wgmma.
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

Timeline run_graph(Graph& g, const Rates& rates) {
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

Timeline simulate(const Kernel& r, int64_t d, int n_blocks, int ctas, const Rates& rates) {
  if (n_blocks < 0 || ctas < 1) throw InputError("pipeline model: n_blocks >= 0 and ctas >= 1");
  const BlockCosts c = block_costs(r, d, rates);
  Graph g;
  for (int k = 0; k < ctas; ++k) build_block(g, r, c, k, n_blocks);
  for (Task& k : g.t)
    if (k.seg.unit == Unit::softmax) k.delay = rates.wait_clk;
  return run_graph(g, rates);
}


namespace {

// K/V blocks thread block (Q block i) keeps: Algorithm 2's block skipping, bottom-right causal.
int kept(const Kernel& r, const Shape& s, int64_t i) {
  const int64_t bc = r.Bc;
  if (!s.causal) return int((s.nk + bc - 1) / bc);
  const int64_t last_row = std::min((i + 1) * r.Br(), s.nq) - 1;
  const int64_t hi = std::min(s.nk - 1, last_row + (s.nk - s.nq));
  return hi < 0 ? 0 : int(hi / bc + 1);
}

}  // namespace

double kept_scores(const Shape& s) {
  if (!s.causal) return double(s.nq) * double(s.nk);
  double sum = 0;
  for (int64_t r = 0; r < s.nq; ++r) sum += double(std::max<int64_t>(0, std::min(s.nk, r + 1 + s.nk - s.nq)));
  return sum;
}

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

double model_work(const Kernel& r, const Shape& s) {
  const int64_t Tr = (s.nq + r.Br() - 1) / r.Br();
  std::set<int> counts;  // the K/V-block counts of the Q blocks: one timeline each
  for (int64_t i = 0; i < Tr; ++i) counts.insert(kept(r, s, i));
  const int n_max = counts.empty() ? 0 : *counts.rbegin();
  counts.insert(std::max(1, n_max / 2));  // the steady state's half-length timeline
  double blocks = double(n_max) + 1;      // and the longest once more
  for (int n : counts) blocks += double(n) + 1;
  // A simulated block is a few tasks per warpgroup and its loads, on each resident thread block;
  // placing a tile on the grid costs about a twentieth of a task, counting a row's kept scores a
  // thousandth. Measured with explain --pipeline (every kernel, twice) on one core: 2e5 tasks
  // (--n 32768 --d 128 --causal; --nq 65536 --nk 1024 --heads 8000) take about 3 seconds.
  return blocks * double(r.ctas_per_sm) * double(r.consumers + 1) + 0.05 * double(Tr) * double(s.heads) +
         0.001 * double(s.nq);
}

Prediction predict(const Kernel& r, const Shape& s, const Rates& rates) {
  if (s.heads < 1 || s.nq < 1 || s.nk < 1) throw InputError("pipeline model: heads, Nq and Nk must be at least 1");
  if (s.nk > (int64_t(1) << 22) || s.nq > (int64_t(1) << 22))
    throw InputError("pipeline model: Nq and Nk at most 4194304");
  // The model's own work is refused before it starts: causal timelines of every length make it
  // quadratic in Nk, and the grid's tiles are placed one by one.
  if (const double w = model_work(r, s); w > kMaxModelWork) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the pipeline model would simulate about %.3g tasks for '%s' at this shape (limit %.3g, about five "
                  "seconds for every technique): use a smaller Nq, Nk or --heads",
                  w, r.key.c_str(), kMaxModelWork);
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
    // Causal grids run the longest thread blocks first over all heads (as the kernels' grids); each goes
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

void append(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

void append_shape(std::string& out, const Shape& s) {
  append(out, "shape: %lld heads x Nq %lld x Nk %lld, d = %lld%s\n\n", (long long)s.heads, (long long)s.nq,
         (long long)s.nk, (long long)s.d, s.causal ? ", causal (bottom-right)" : "");
}

std::string gantt_lines(const Timeline& tl, int warpgroups, int cols, int label_w) {
  double t_end = 0;
  for (const Segment& g : tl.segments)
    if (g.cta == 0) t_end = std::max(t_end, g.end);
  const double per = t_end / cols;
  std::string out;
  append(out, "  (one column = %.0f clocks)\n", per);
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
    append(out, "  %-*s |%s|\n", label_w, label, row.c_str());
  };
  lane("loads", -1, Unit::load);
  for (int w = 0; w < warpgroups; ++w) {
    char a[32], b[32];
    std::snprintf(a, sizeof a, "wg%d tensor", w);
    std::snprintf(b, sizeof b, "wg%d softmax", w);
    lane(a, w, Unit::tensor);
    lane(b, w, Unit::softmax);
  }
  return out;
}

std::string explain_pipeline(const Kernel& r, const Shape& s, const Rates& rates) {
  const BlockCosts c = block_costs(r, s.d, rates);
  std::string out;
  append(out, "pipeline model of one SM (core/pipeline_model.h), technique %s: %s\n", r.key.c_str(), r.what.c_str());
  const std::string poly = r.poly_every > 0 ? ", every " + std::to_string(r.poly_every) + "th exp2 by polynomial" : "";
  append(out, "  Br %d (%d consumer warpgroups x 64 rows), Bc %d, %d K/V stages, %d thread block%s per SM%s%s%s%s%s\n",
         r.Br(), r.consumers, r.Bc, r.stages, r.ctas_per_sm, r.ctas_per_sm > 1 ? "s" : "",
         r.producer ? ", producer warp" : ", loads by every thread + barrier per block",
         r.pingpong ? ", ping-pong" : "", r.intra ? ", intra-warpgroup overlap" : "",
         r.persistent ? ", persistent" : "", poly.c_str());
  append(out, "rates per SM per clock (docs/pipeline-model.md): tensor %.0f FLOP x %.2f = %.0f, exp2 %.0f, "
              "float32 %.0f lanes, L2 %.1f B, HBM %.2f B; %d SMs at %.2f GHz\n"
              "tensor cores shared by two warpgroups' products: %s; wait before each softmax: %.0f clocks\n",
         rates.tensor_flop_per_clk, rates.tensor_efficiency, rates.tensor_rate(), rates.exp_per_clk,
         rates.fp32_per_clk, rates.l2_bytes_per_clk, rates.hbm_bytes_per_clk, rates.sms, rates.clock_ghz,
         rates.tensor_in_turn ? "in turn, first ready first (--tensor-in-turn)" : "evenly (both finish late)",
         rates.wait_clk);
  append_shape(out, s);
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
  append(out, "timeline of thread block 0, %d K/V blocks (Q, K, V: loads, S: Q K^T, P: softmax, O: P~ V, W: write O; "
              "lower case: the unit is shared at that moment)\n",
         n_show);
  out += gantt_lines(tl, r.consumers);
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
  return out;
}

}  // namespace flashstep::pipeline
