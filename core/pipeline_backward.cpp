// The backward's pipeline model (core/pipeline_backward.h): the task graph of one thread block of
// the default tensor-core backward, run by the forward model's simulation (core/pipeline_graph.h).
#include "core/pipeline_backward.h"

#include "core/pipeline_graph.h"
#include "core/types.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <vector>

namespace flashstep::pipeline {

BackwardCosts backward_costs(int64_t d, const Rates& rates) {
  if (d != 64 && d != 128)
    throw InputError("the backward's pipeline model covers the Hopper backward's d = 64 and d = 128 (got d = " +
                     std::to_string(d) + ")");
  BackwardCosts c;
  const double keys = 64, rows = bwd_br(d), dd = double(d);
  // Each product, per warpgroup: 2 x 64 x Br x d FLOPs. S^T, dP^T: 64 keys x Br queries over d;
  // dV, dK: 64 keys x d over Br queries; dQ: 64 queries x 64 columns over 128 keys at d = 128
  // (Br = 64: the warpgroup's column panel), 64 of the 128 queries x 64 columns over 128 keys at
  // d = 64 (Br = 128: the warpgroup's rows).
  const double product = 2 * keys * rows * dd / rates.tensor_rate();
  c.s_clk = c.dp_clk = c.dv_clk = c.dk_clk = c.dq_clk = product;
  // P: one exp2 per score; per score about 2 float32 lane operations (the FFMA of S tau log2 e -
  // L, the select of the mask, half an F2FP for the rounding of P^T). dS: about 2.5 (FADD of
  // dP - D, FMUL by P, half an F2FP).
  const double scores = keys * rows;
  c.p_exp_clk = scores / rates.exp_per_clk;
  c.p_issue_clk = scores * 2 / rates.fp32_per_clk;
  c.p_clk = std::max(c.p_exp_clk, c.p_issue_clk);
  c.ds_clk = scores * 2.5 / rates.fp32_per_clk;
  // Q_i and dO_i (16-bit) with L_i and D_i (float32), from L2: the grid's K/V blocks fastest puts
  // the blocks at work on one head, which read the same Q_i and dO_i. dQ_i: Br x d float32 adds.
  c.load_i_clk = (2 * rows * dd * 2 + 2 * rows * 4) / rates.l2_bytes_per_clk;
  c.dq_add_clk = rows * dd * 4 / rates.l2_bytes_per_clk;
  c.kv_clk = 2 * double(kBwdBc) * dd * 2 / rates.hbm_bytes_per_clk;
  c.write_clk = c.kv_clk;
  return c;
}

Timeline simulate_backward(int64_t d, int n_q, const Rates& rates) {
  if (n_q < 0) throw InputError("pipeline model: the number of Q blocks must be >= 0");
  const BackwardCosts c = backward_costs(d, rates);
  Graph g;
  const int kv = g.add(0, -1, Unit::load, 'I', 0, c.kv_clk, {});
  int load = n_q > 0 ? g.add(0, -1, Unit::load, 'L', 0, c.load_i_clk, {}) : -1;
  int done = kv;  // what the loop's top barrier waits for besides the loads: the block before
  int add = -1;   // the copy engine's add of the block before, which reads the slab
  for (int i = 0; i < n_q; ++i) {
    // FA2b L9: Q_i, dO_i, L_i, D_i landed (the stage's full barrier), block i - 1 done; the
    // producer loads block i + 1's stage meanwhile.
    const int top = g.add(0, -1, Unit::load, 'B', i, 0, {load, done});
    const int next = i + 1 < n_q ? g.add(0, -1, Unit::load, 'L', i + 1, c.load_i_clk, {top}) : -1;
    int G[kBwdWarpgroups], K[kBwdWarpgroups];
    for (int w = 0; w < kBwdWarpgroups; ++w) {
      const int S = g.add(0, w, Unit::tensor, 'S', i, c.s_clk, {top});
      const int P = g.add(0, w, Unit::softmax, 'P', i, c.p_clk, {S}, rates.wait_clk);
      const int D = g.add(0, w, Unit::tensor, 'D', i, c.dp_clk, {P});
      const int V = g.add(0, w, Unit::tensor, 'V', i, c.dv_clk, {D});
      G[w] = g.add(0, w, Unit::softmax, 'G', i, c.ds_clk, {V}, rates.wait_clk);
      K[w] = g.add(0, w, Unit::tensor, 'K', i, c.dk_clk, {G[w]});
    }
    // dS_ij^T complete; past this barrier the slab is written again, so the issuing thread waits
    // before it for block i - 1's add.
    const int ds_stored = g.add(0, -1, Unit::load, 'B', i, 0, {G[0], G[1], add});  // add < 0: no dependence
    int Q[kBwdWarpgroups];
    for (int w = 0; w < kBwdWarpgroups; ++w) Q[w] = g.add(0, w, Unit::tensor, 'Q', i, c.dq_clk, {ds_stored, K[w]});
    const int dq_stored = g.add(0, -1, Unit::load, 'B', i, 0, {Q[0], Q[1]});
    add = g.add(0, -1, Unit::load, 'A', i, c.dq_add_clk, {dq_stored});  // by the copy engine, under block i + 1
    done = dq_stored;
    load = next;
  }
  // FA2b L18: dK_j, dV_j written once the loop is done (after the last add has completed).
  g.add(0, -1, Unit::load, 'W', n_q, c.write_clk, {done, add});
  return run_graph(g, rates);
}

namespace {

// Q blocks that thread block j (keys 128 j ..) loops over: all Tr, or with the causal mask
// (bottom-right) those from the first with a row that keeps key 128 j (row r keeps keys up to
// r + Nk - Nq), as the kernel's block skipping.
int64_t q_blocks(const Shape& s, int64_t j) {
  const int64_t br = bwd_br(s.d), Tr = (s.nq + br - 1) / br;
  if (!s.causal) return Tr;
  const int64_t first_row = std::max<int64_t>(0, j * kBwdBc - (s.nk - s.nq));
  return first_row >= s.nq ? 0 : Tr - first_row / br;
}

// The steady state is periodic from the second Q block on (the barriers line everything up), so
// a block of n > 4 Q blocks takes T(4) + (n - 4) (T(4) - T(3)); the tests check this against the
// simulation itself.
struct Durations {
  const Rates& rates;
  int64_t d;
  std::map<int64_t, double> known;
  double operator()(int64_t n) {
    if (n > 4) return (*this)(4) + double(n - 4) * ((*this)(4) - (*this)(3));
    auto it = known.find(n);
    if (it != known.end()) return it->second;
    return known[n] = simulate_backward(d, int(n), rates).end_clk;
  }
};

}  // namespace

BackwardPrediction predict_backward(const Shape& s, const Rates& rates) {
  if (s.heads < 1 || s.nq < 1 || s.nk < 1) throw InputError("pipeline model: heads, Nq and Nk must be at least 1");
  if (s.nk > (int64_t(1) << 22) || s.nq > (int64_t(1) << 22))
    throw InputError("pipeline model: Nq and Nk at most 4194304");
  const BackwardCosts c = backward_costs(s.d, rates);
  const int64_t Tc = (s.nk + kBwdBc - 1) / kBwdBc;
  BackwardPrediction p;
  p.blocks = s.heads * Tc;
  // Placing a thread block costs about a twentieth of a simulated task (the forward's measure).
  if (const double w = 0.05 * double(p.blocks); w > kMaxModelWork) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the backward's pipeline model would place %lld thread blocks (limit %.3g): use a smaller Nk or --heads",
                  (long long)p.blocks, kMaxModelWork / 0.05);
    throw InputError(buf);
  }
  p.waves = double(p.blocks) / rates.sms;
  Durations dur{rates, s.d, {}};
  // The launch order: heads in turn, the K/V blocks of one head fastest; each block to the SM
  // that frees first.
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int k = 0; k < rates.sms; ++k) free_at.push(0.0);
  double end = 0, visits = 0;
  std::vector<double> per_j(static_cast<size_t>(Tc));
  for (int64_t j = 0; j < Tc; ++j) {
    per_j[size_t(j)] = dur(q_blocks(s, j));
    visits += double(q_blocks(s, j));
  }
  visits *= double(s.heads);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t j = 0; j < Tc; ++j) {
      const double start = free_at.top();
      free_at.pop();
      free_at.push(start + per_j[size_t(j)]);
      end = std::max(end, start + per_j[size_t(j)]);
    }
  const double clk_per_ms = rates.clock_ghz * 1e6;
  p.ms = end / clk_per_ms;
  p.flops = 2.5 * 4.0 * double(s.heads) * kept_scores(s) * double(s.d);
  p.tflops = p.flops / (p.ms * 1e-3) * 1e-12;
  p.clk_per_q_block = dur(4) - dur(3);
  // Throughput bounds: the work of every Q-block visit, spread over all SMs at full rate.
  const double spread = double(rates.sms) * clk_per_ms;
  const double per_product[5] = {c.s_clk, c.dp_clk, c.dv_clk, c.dk_clk, c.dq_clk};
  for (int k = 0; k < 5; ++k) {
    p.product_ms[k] = visits * kBwdWarpgroups * per_product[k] / spread;
    p.tensor_ms += p.product_ms[k];
  }
  p.exp_ms = visits * kBwdWarpgroups * c.p_exp_clk / spread;
  p.fp32_ms = visits * kBwdWarpgroups * (c.p_issue_clk + c.ds_clk) / spread;
  p.load_ms = visits * c.load_i_clk / spread;
  p.dq_add_ms = visits * c.dq_add_clk / spread;
  p.hbm_ms = double(p.blocks) * (c.kv_clk + c.write_clk) / spread;
  // Where the steady state's time goes: the third Q block of a four-block timeline, from its top
  // barrier to the next one, cut at every segment edge.
  const Timeline tl = simulate_backward(s.d, 4, rates);
  double t0 = -1, t1 = -1;
  for (const Segment& g : tl.segments)
    if (g.kind == 'B') {
      if (g.j == 2 && t0 < 0) t0 = g.start;  // the first barrier of a block is its top one
      if (g.j == 3 && t1 < 0) t1 = g.start;
    }
  std::vector<double> cuts{t0, t1};
  for (const Segment& g : tl.segments)
    for (double t : {g.start, g.end})
      if (t > t0 && t < t1) cuts.push_back(t);
  std::sort(cuts.begin(), cuts.end());
  double share[4] = {0, 0, 0, 0};
  for (size_t k = 1; k < cuts.size(); ++k) {
    const double a = cuts[k - 1], b = cuts[k], mid = (a + b) / 2;
    if (b <= a) continue;
    bool busy[3] = {false, false, false};
    for (const Segment& g : tl.segments)
      if (g.work > 0 && g.start < mid && mid < g.end) busy[int(g.unit)] = true;
    const int cat = busy[int(Unit::tensor)] ? 0 : busy[int(Unit::softmax)] ? 1 : busy[int(Unit::load)] ? 2 : 3;
    share[cat] += b - a;
  }
  const double period = t1 - t0;
  p.share_tensor = share[0] / period;
  p.share_softmax = share[1] / period;
  p.share_memory = share[2] / period;
  p.share_idle = share[3] / period;
  return p;
}

std::string explain_pipeline_backward(const Shape& s, const Rates& rates) {
  const BackwardCosts c = backward_costs(s.d, rates);
  const BackwardPrediction p = predict_backward(s, rates);
  std::string out;
  append(out, "pipeline model of one SM (core/pipeline_backward.h): the default tensor-core backward on Hopper\n"
              "  (gpu/bwd_ws_kernel.cuh): one thread block per (head, K/V block of Bc %d keys), %d consumer warpgroups x 64 keys,\n"
              "  a loop over Q blocks of Br %d; all five products on wgmma; a producer warpgroup loads Q blocks by TMA into\n"
              "  a 3-stage ring (modelled one block ahead); two named barriers per Q block; dQ_i added to the float32 dQ in\n"
              "  HBM by the bulk copy engine (one cp.reduce.async.bulk per Q block, under the next one)\n",
         kBwdBc, kBwdWarpgroups, bwd_br(s.d));
  append(out, "rates per SM per clock (docs/pipeline-model.md): tensor %.0f FLOP x %.2f = %.0f, exp2 %.0f, "
              "float32 %.0f lanes, L2 %.1f B, HBM %.2f B; %d SMs at %.2f GHz\n",
         rates.tensor_flop_per_clk, rates.tensor_efficiency, rates.tensor_rate(), rates.exp_per_clk, rates.fp32_per_clk,
         rates.l2_bytes_per_clk, rates.hbm_bytes_per_clk, rates.sms, rates.clock_ghz);
  append_shape(out, s);
  char p_unit[96];
  std::snprintf(p_unit, sizeof p_unit, "softmax: exp2 limit %.0f, float32 issue limit %.0f", c.p_exp_clk, c.p_issue_clk);
  const struct {
    const char *label, *unit;
    double clk;
  } rows[] = {{"S^T = K_j Q_i^T (L10)", "tensor", c.s_clk},         {"P = exp2(S - L_i) (L11)", p_unit, c.p_clk},
              {"dP^T = V_j dO_i^T (L13)", "tensor", c.dp_clk},      {"dV += P^T dO_i (L12)", "tensor", c.dv_clk},
              {"dS = P o (dP - D_i) (L14)", "softmax: float32 issue", c.ds_clk},
              {"dK += dS^T Q_i (L16)", "tensor", c.dk_clk},         {"dQ_i += dS K_j (L15)", "tensor", c.dq_clk},
              {nullptr, nullptr, 0},
              {"Q_i, dO_i, L_i, D_i (L9)", "load, from L2", c.load_i_clk}, {"dQ_i added (bulk reduce)", "load, into L2", c.dq_add_clk}};
  append(out, "per warpgroup and Q block (64 keys x %d queries), clocks at the unit's full rate:\n", bwd_br(s.d));
  for (const auto& r : rows) {
    if (!r.label) append(out, "per thread block and Q block:\n");
    else append(out, "  %-26s %6.0f   %s\n", r.label, r.clk, r.unit);
  }
  append(out, "per thread block: K_j, V_j %.0f, dK_j, dV_j %.0f (HBM)\n\n", c.kv_clk, c.write_clk);

  const int n_show = 3;
  append(out, "what each warpgroup does, thread block 0 over %d Q blocks (I: K_j, V_j; L: Q_i, dO_i, L_i, D_i; "
              "S: S^T, P: exp2, D: dP^T, V: dV, G: dS, K: dK, Q: dQ; A: dQ_i added; W: dK_j, dV_j written; lower "
              "case: the unit is shared at that moment)\n",
         n_show);
  out += gantt_lines(simulate_backward(s.d, n_show, rates), kBwdWarpgroups);

  append(out, "\nthroughput bounds of the whole problem (each alone at its unit's full rate on all %d SMs):\n", rates.sms);
  const char* names[5] = {"S^T = K Q^T", "dP^T = V dO^T", "dV += P^T dO", "dK += dS^T Q", "dQ += dS K"};
  for (int k = 0; k < 5; ++k) append(out, "  %-26s %9.3f ms   tensor\n", names[k], p.product_ms[k]);
  append(out, "  %-26s %9.3f ms   tensor\n", "the five products", p.tensor_ms);
  append(out, "  %-26s %9.3f ms   softmax (special-function units)\n", "exp2 of P", p.exp_ms);
  append(out, "  %-26s %9.3f ms   softmax (float32 lanes)\n", "P and dS element-wise", p.fp32_ms);
  append(out, "  %-26s %9.3f ms   load (L2)\n", "Q_i, dO_i, L_i, D_i", p.load_ms);
  append(out, "  %-26s %9.3f ms   load (L2)\n", "dQ accumulation", p.dq_add_ms);
  append(out, "  %-26s %9.3f ms   load (HBM)\n", "K, V in; dK, dV out", p.hbm_ms);
  append(out, "\nprediction: %lld thread blocks on %d SMs (%.2f waves), %.0f clocks per Q block in the steady state\n",
         (long long)p.blocks, rates.sms, p.waves, p.clk_per_q_block);
  append(out, "  %.3f ms, %.1f TFLOP/s (2.5 x the forward's FLOPs)\n", p.ms, p.tflops);
  append(out, "where a Q block's clocks go: tensor cores %.0f%%, softmax alone %.0f%%, memory alone (dQ's adds, loads) "
              "%.0f%%, nothing (barriers) %.0f%%\n",
         100 * p.share_tensor, 100 * p.share_softmax, 100 * p.share_memory, 100 * p.share_idle);
  return out;
}

}  // namespace flashstep::pipeline
