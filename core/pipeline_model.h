// A model of time inside the Hopper forward kernel: one streaming multiprocessor (SM) running
// the thread blocks of one kernel, described by its techniques (FlashAttention-2 on wgmma, a TMA
// producer warp, ping-pong, the softmax under the product, a persistent grid), from the H200's
// per-SM rates. The step engine counts bytes; this counts clocks. The backward's model, on the
// same units and simulation: core/pipeline_backward.h.
//
// Each thread block is a graph of tasks on three units of the SM:
//   load     the memory path: Q_i (HBM), K_j and V_j (mostly L2 hits), O_i written back (HBM)
//   tensor   the tensor cores: S_ij = Q_i K_j^T (FA2fwd L8) and O_i += P~_ij V_j (L10), one
//            warpgroup's wgmma at a time uses all four of the SM's tensor cores
//   softmax  the special-function units and the float32 pipes: m, P~ = exp2(...), l (L9), the
//            rescale of O_i and the rounding of P~ (MUFU.EX2 is the bottleneck: 16 per clock)
// Tasks that are ready at once on one unit share it equally (processor sharing): two warpgroups
// that issue their products together both finish late. That is what ping-pong scheduling
// (FlashAttention-3, arXiv 2407.08608, section 3.1) avoids by making the warpgroups take turns.
// The model is deterministic: no random delays, no instruction latencies beyond `wait_clk`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::pipeline {

// Per-SM rates of the H200 (docs/pipeline-model.md lists each number's source).
struct Rates {
  double clock_ghz = 1.98;             // SM clock nvidia-smi read right after a bf16 matmul (KINDS.md)
  int sms = 132;                       // multiprocessors of the H200 (and H100 SXM)
  double tensor_flop_per_clk = 4096;   // dense bf16/fp16 per SM per clock (Hopper whitepaper: 989.4 TF at 1830 MHz)
  double tensor_efficiency = 0.74;     // 788 TFLOP/s measured (8192^3 bf16 matmul, KINDS.md) / 4096 x 132 x 1.98 GHz
  double exp_per_clk = 16;             // MUFU.EX2 results per SM per clock (CUDA guide, cc 9.0)
  double fp32_per_clk = 128;           // float32 add/mul/fma lanes per SM per clock (CUDA guide, cc 9.0)
  double l2_bytes_per_clk = 38.8;      // L2 -> SM, per SM (A100 whitepaper's 5120 B/clk over 132 SMs: a lead)
  double hbm_bytes_per_clk = 16.45;    // 4.3 TB/s copy measured (KINDS.md) / 132 SMs / 1.98 GHz
  double wait_clk = 0;                 // fixed cost of each wait on a product (latency not hidden)
  // How two warpgroups' products share the tensor cores: false, evenly (both finish late, the
  // picture FlashAttention-3 draws); true, in turn, first ready first served (they fall out of
  // step by themselves). docs/pipeline-model.md compares both with the H200's measurements.
  bool tensor_in_turn = false;
  double tensor_rate() const { return tensor_flop_per_clk * tensor_efficiency; }
};

// One kernel as the model sees it: its tile and the techniques it uses.
struct Kernel {
  std::string key;           // the technique's name on the command line (technique_keys())
  std::string what;          // one line: what the technique changes
  int Bc = 64;
  int consumers = 2;         // warpgroups of 64 rows each: Br = 64 x consumers
  int ctas_per_sm = 1;       // thread blocks resident on one SM (registers, shared memory)
  int stages = 2;            // K/V buffers
  bool producer = false;     // a producer warp issues the loads (warp specialisation): no block-wide barrier
  bool pingpong = false;     // the consumer warpgroups take turns on the tensor cores
  bool intra = false;        // S_ij issued before the softmax of block j, beside O += P~ V of block j - 1
  bool persistent = false;   // one block per SM loops over the tiles; its producer runs a tile ahead
  int poly_every = 0;        // every n-th exp2 from a polynomial on the float32 pipes (0: none)
  int Br() const { return 64 * consumers; }
};

// The techniques of the Hopper forward for head dimension d (64 or 128), one kernel each, in the
// order they build on one another: FlashAttention-2 on wgmma (every thread loads by cp.async, a
// block-wide barrier per K/V block), the TMA producer warp, ping-pong, the softmax under the
// product, a persistent grid, and the default kernel of gpu/fa3_forward.cu (fwd_config_sm90).
// Each is the one before it with one change, except the default (its own tile). Throws
// InputError for another d.
std::vector<Kernel> techniques(int64_t d);
// One of them by key; throws InputError naming the keys.
Kernel technique(const std::string& key, int64_t d);
// The keys in order, comma-separated, for help and messages.
std::string technique_keys();

enum class Unit { load, tensor, softmax };
const char* unit_name(Unit u);

// One task of the timeline: which block and warpgroup (-1: the block's loads), what, when.
struct Segment {
  int cta = 0, wg = -1;
  Unit unit = Unit::load;
  char kind = 'K';  // Q load Q_i, K load K_j V_j, S = Q K^T, P softmax, O += P V, W write O_i
  int j = 0;
  double work = 0;  // clocks at the unit's full rate
  double start = 0, end = 0;
};

// The per-warpgroup, per-block costs at full rate (clocks).
struct BlockCosts {
  double s_clk, softmax_clk, o_clk, kv_clk, q_clk, w_clk;
  double exp_clk, issue_clk;  // the two limits of softmax_clk
};
BlockCosts block_costs(const Kernel& r, int64_t d, const Rates& rates);

// `ctas` identical thread blocks on one SM, each looping over `n_blocks` K/V blocks.
struct Timeline {
  std::vector<Segment> segments;
  double end_clk = 0;                         // when the last block finished
  double busy_clk[3] = {0, 0, 0};             // per unit: clocks with at least one task
};
Timeline simulate(const Kernel& r, int64_t d, int n_blocks, int ctas, const Rates& rates);

// One thread block's ends that a persistent block overlaps with its neighbouring tiles: the
// prologue (clock 0 to the first product: Q_i and K_0 arriving) hides under the previous tile's
// tail (the last S product's end to the block's end: the last softmax, O += P~ V, O written),
// as far as the shorter of the two.
struct TileEdges {
  double prologue = 0, tail = 0;
};
TileEdges tile_edges(const Timeline& t);

// The whole problem: B x H heads of (nq x nk), one tile per (Q block, head). Not persistent: one
// thread block per tile on sms x ctas_per_sm slots, each to the slot that frees first, longest
// first when causal (bottom-right aligned, as the kernels). Persistent: min(tiles, sms) blocks,
// block b taking the kernel's static order (gpu/fa3_forward.cu's next_tile: tiles numbered longest
// first when causal, round k takes tiles k G + b, odd rounds reversed when causal), each tile
// after a block's first shortened by min(previous tail, its prologue).
struct Shape {
  int64_t heads = 32, nq = 4096, nk = 4096, d = 64;
  bool causal = false;
};
struct Prediction {
  double ms = 0, tflops = 0;
  double flops = 0;                // 4 heads nq nk d, causal: the kept scores only
  int64_t blocks = 0;              // thread blocks in the grid
  double waves = 0;                // blocks / slots
  double clk_per_kv_block = 0;     // steady state of one SM: clocks per K/V block of one thread block
  double tensor_busy = 0, softmax_busy = 0, load_busy = 0;  // shares of the full-length SM timeline
  double bound_tflops = 0;         // the tensor-core ceiling: rates.tensor_rate() x sms x clock
};
// The model's cost of predict(r, s) in simulated tasks: one timeline per distinct K/V-block count
// (a causal shape has up to Tc of them, so the cost grows as Nk^2), plus the Tr x heads tiles
// placed on the grid and the Nq rows counted. predict refuses (InputError) a shape over
// kMaxModelWork, which keeps `explain --pipeline` (every technique, twice) within a few seconds.
double model_work(const Kernel& r, const Shape& s);
// Scores the mask keeps: Nq Nk, or with the causal mask (bottom-right aligned) the kept part.
double kept_scores(const Shape& s);
constexpr double kMaxModelWork = 3e5;
Prediction predict(const Kernel& r, const Shape& s, const Rates& rates);  // InputError: sizes out of range, or over kMaxModelWork

// The text of `flashstep explain --pipeline`: rates, costs, a Gantt chart of the first blocks and
// the prediction for one kernel (the table of every technique with its measured figure is the
// caller's: the measurements are files, read in app/).
std::string explain_pipeline(const Kernel& k, const Shape& s, const Rates& rates);

}  // namespace flashstep::pipeline
