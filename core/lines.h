// The pseudocode lines of every algorithm a schedule runs, and what each line does.
//
// A Step records one Line. Every algorithm (Algorithm 1 of the FlashAttention paper, the
// FlashAttention-2 forward, ...) has one table (AlgorithmInfo, in its schedule's schedule.cpp,
// core/schedules/NAME/) that gives each of its lines a label ("Alg1 L9"), its number in the paper, the
// paper's text, and a role: what the line does (load K/V, scores, merge statistics, write O, ...).
// Readers (the CLI, the app, the GPU verifier) decide what to show by role, never by a line's
// enum value or number; the pseudocode text exists only in these tables.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flashstep {

// Lines of Algorithm 1 (A1_*, fa1), Algorithm 0 (A0_*, standard) and FlashAttention-2's forward
// (FA2F_*, fa2), numbered as in the papers. A1_SKIP / FA2F_SKIP stand for a loop iteration whose
// block is entirely masked and is skipped: no loads, no FLOPs (numbered as the loop's own line).
// Labels: "Alg1 L9" and "Alg0 L2" are Algorithms 1 and 0 of the FlashAttention paper (Dao et
// al. 2022); "FA2fwd L8" (FA2F_L8) is line 8 of the FlashAttention-2 paper's forward pass (Dao
// 2023, its Algorithm 1). The FlashAttention paper's Algorithm 2 (Algorithm 1 with mask and
// dropout) has no lines of its own here: its additions run inside Alg1's and FA2fwd's lines.
// The backward passes: A3_* Algorithm 3 (standard), A4_* Algorithm 4 (fa1; A4_L14 stands for
// lines 14-15), FA2B_* FlashAttention-2's backward, its Algorithm 2 (fa2, labelled "FA2b").
// The values are the trace's identity of a line only: a new algorithm takes a fresh hundred.
enum class Line : uint16_t {
  A1_L2 = 2, A1_L6 = 6, A1_SKIP = 7, A1_L8 = 8, A1_L9 = 9, A1_L10 = 10, A1_L11 = 11,
  A1_L12 = 12, A1_L13 = 13,
  A0_L1 = 101, A0_L2 = 102, A0_L3 = 103,
  FA2F_L4 = 204, FA2F_L5 = 205, FA2F_SKIP = 206, FA2F_L7 = 207, FA2F_L8 = 208, FA2F_L9 = 209,
  FA2F_L10 = 210, FA2F_L12 = 212, FA2F_L13 = 213, FA2F_L14 = 214, FA2F_L15 = 215,
  A3_L1 = 301, A3_L2 = 302, A3_L3 = 303, A3_L4 = 304, A3_L5 = 305,
  A4_L5 = 405, A4_L7 = 407, A4_L8 = 408, A4_SKIP = 409, A4_L10 = 410, A4_L11 = 411,
  A4_L12 = 412, A4_L13 = 413, A4_L14 = 414, A4_L16 = 416, A4_L17 = 417, A4_L18 = 418,
  A4_L19 = 419, A4_L20 = 420, A4_L21 = 421, A4_L22 = 422, A4_L24 = 424,
  FA2B_L3 = 503, FA2B_L4 = 504, FA2B_L6 = 506, FA2B_L7 = 507, FA2B_SKIP = 508, FA2B_L9 = 509,
  FA2B_L10 = 510, FA2B_L11 = 511, FA2B_L12 = 512, FA2B_L13 = 513, FA2B_L14 = 514, FA2B_L15 = 515,
  FA2B_L16 = 516, FA2B_L18 = 518,
  // Flash-decoding (core/schedules/decode/schedule.cpp), labelled "FD L6".
  FD_L3 = 603, FD_L4 = 604, FD_SKIP = 605, FD_L6 = 606, FD_L7 = 607, FD_L8 = 608, FD_L9 = 609,
  FD_L11 = 611, FD_L12 = 612, FD_L13 = 613, FD_L14 = 614, FD_L17 = 617, FD_L18 = 618,
  FD_L19 = 619, FD_L20 = 620,
};

// What a line does. One role per line; where a paper's line does two things (FA2fwd L9 both
// exponentiates and merges the statistics) the role says both.
enum class LineRole : uint8_t {
  init_hbm,          // initialise outputs or accumulators in HBM (Alg1 L2, Alg4 L5, FA2b L3)
  init_chip,         // initialise on-chip state (FA2fwd L5; Alg4 L8, FA2b L7: dK~_j, dV~_j)
  load_kv,           // load K_j, V_j into SRAM
  load_q,            // load Q_i (with whatever travels with it: O_i, l_i, m_i, dO_i, ...)
  skip,              // a block the mask hides entirely: skipped, no loads, no FLOPs
  scores,            // S_ij = tau Q_i K_j^T (Algorithm 0: S for a row block, written to HBM)
  probabilities,     // P~_ij with its own row statistics m~_ij, l~_ij (Alg0: softmax, P to HBM)
  merge_stats,       // m_i^new, l_i^new from the old and the tile's statistics
  online_softmax,    // probabilities against the running max and the merge, at once (FA2fwd L9)
  accumulate_o,      // O_i rescaled and P~_ij V_j added on chip, not yet written (FA2fwd L10)
  write_o,           // O_i written to HBM (Alg1 L12 also accumulates; Alg0 L3 computes PV)
  normalise,         // O_i divided by l_i on chip (FA2fwd L12)
  logsumexp,         // L_i = m_i + log l_i on chip (FA2fwd L13)
  write_stats,       // l_i, m_i or L_i written to HBM
  combine,           // partial results of several splits merged (flash-decoding)
  // The backward passes
  recompute_scores,  // S_ij recomputed from Q_i, K_j (Alg4 L11, FA2b L10)
  mask_scores,       // S_ij masked element by element (Alg4 L12)
  recompute_probs,   // P_ij recomputed from the forward's statistics (Alg4 L13, FA2b L11)
  dropout,           // the dropout mask drawn again and applied to P_ij (Alg4 L14-15)
  grad_v,            // dV (Alg3 L1) or dV~_j += P^T dO on chip
  grad_p,            // dP = dO V^T (and its dropout mask)
  grad_D,            // D_i = rowsum(dO_i o O_i)
  grad_s,            // dS = P o (dP - D)
  grad_q,            // dQ_i += tau dS_ij K_j, through HBM
  grad_k,            // dK (Alg3 L5) or dK~_j += tau dS^T Q_i on chip
  write_grads,       // dK_j, dV_j written to HBM
};
const char* role_name(LineRole r);  // "load K/V", "scores", ...

struct LineInfo {
  Line line;
  const char* label;       // "Alg1 L9", "FA2fwd L8", "Alg4 L14-15"
  int number;              // the line's number in its algorithm (9, 8, 14)
  LineRole role;
  const char* pseudocode;  // the paper's line, in plain text
};

// One row of an algorithm as printed: the recorded lines and those that record no step of
// their own (for, end for, Return), which take the step of `line` for their place.
struct ListingRow {
  int number, indent;  // number 0: an unnumbered row (Require)
  const char* text;    // nullptr: `line`'s own pseudocode
  Line line;
};

struct AlgorithmInfo {
  const char* title;     // "Algorithm 1 (FlashAttention)"
  const char* short_name;  // "Alg 1"
  bool backward;         // a backward pass (its steps follow the forward's)
  const LineInfo* lines;
  size_t n_lines;
  const ListingRow* listing;
  size_t n_listing;
};

// The line's entry in its algorithm's table (every Line has one: a logic_error otherwise).
const LineInfo& line_info(Line l);
const AlgorithmInfo& line_algorithm(Line l);  // the algorithm the line belongs to
inline LineRole line_role(Line l) { return line_info(l).role; }
inline int line_number(Line l) { return line_info(l).number; }
inline const char* line_label(Line l) { return line_info(l).label; }
inline const char* line_pseudocode(Line l) { return line_info(l).pseudocode; }
bool is_backward_line(Line l);
bool algorithm_has_role(const AlgorithmInfo& a, LineRole r);  // whether any of its lines has role r

// Loop indices of a line: i, its Q block; j, its K/V block.
struct LineBlocks {
  bool i = false, j = false;
};
// Those every step of the line must have, by its role: the Q block it works on, and the K/V
// block in a tiled algorithm (one with a load K/V line; Algorithms 0 and 3 have no j). Readers
// place the step's tiles and statistics there (core/trace_file.h, step_placement_error).
LineBlocks line_blocks(Line l);
// Those in scope at the line, which core's steps of it have: line_blocks, and i (j) inside the
// loop body that loads Q_i (K_j, V_j) in the algorithm's listing (Alg1 L8 is in the j loop,
// FA2fwd L14 after it).
LineBlocks line_scope(Line l);

}  // namespace flashstep
