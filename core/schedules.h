// The schedules: plain loops over Eigen blocks in the paper's notation.
#pragma once
#include "core/trace.h"

namespace flashstep {

// Algorithm 1 (FlashAttention forward), in the paper's loop order: outer j over K/V blocks,
// inner i over Q blocks, with O, l, m living in HBM. Fills trace.O, trace.lse and totals;
// records every step when `record` is true.
void run_fa1(Trace& trace, bool record);

// Algorithm 0 (standard attention): S = tau Q K^T written to HBM, read back for
// P = softmax(S), P written and read back for O = P V; one step per line and Q row block.
void run_standard(Trace& trace, bool record);

// FlashAttention-2's forward pass: outer i over Q blocks, inner j over K/V blocks; O_i, l_i,
// m_i stay on chip; 1/l applied once; only O and the logsumexp L are written.
void run_fa2(Trace& trace, bool record);

// Flash-decoding (core/decode.h): phase 1 runs fa2's row block over each of S splits of the K/V
// blocks and writes float32 partials O^(s), lse^(s); phase 2 combines them per Q block. S = 1
// runs fa2 itself.
void run_decode(Trace& trace, bool record);
// One sentence for step k of a decode trace (fa2's sentences for an S = 1 run).
std::string explain_decode_step(const Trace& trace, size_t k);
// Whether a line is one of decode's own (FD L3 .. FD L20).
inline bool is_decode_line(Line l) { return int(l) > 600 && int(l) < 700; }

}  // namespace flashstep
