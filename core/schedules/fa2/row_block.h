// FlashAttention-2's work on one Q block (FA2fwd L4-L13): the forward's whole inner loop, shared
// by fa2 (over every K/V block, forward.cpp) and flash-decoding (over the blocks of one split,
// core/schedules/decode/forward.cpp), so that
// decode's phase 1 is fa2's own code and its S = 1 run is fa2's, bit for bit.
#pragma once
#include "core/schedules/context.h"

namespace flashstep {

// The pseudocode lines the row block records its steps under: fa2's (FA2fwd L4 ...) or decode's
// (FD L3 ...).
struct RowBlockLines {
  Line load_q, init, skip, load_kv, scores, softmax, update, normalise, lse;
};
inline constexpr RowBlockLines kFa2RowBlockLines = {Line::FA2F_L4,  Line::FA2F_L5,  Line::FA2F_SKIP,
                                                    Line::FA2F_L7,  Line::FA2F_L8,  Line::FA2F_L9,
                                                    Line::FA2F_L10, Line::FA2F_L12, Line::FA2F_L13};

// Loads Q_i, runs FA2fwd L5-L13 over K/V blocks j0 <= j < j1 and leaves the normalised O_i in
// Slot::Oi and L_i = m_i + log l_i in Slot::Li (the caller writes and releases them, with
// Slot::Qi, li, mi). A row that keeps no key of these blocks ends with O_i = 0, L_i = -inf.
// `split` is copied to every recorded step (-1 for fa2).
void fa2_row_block(ScheduleContext& ctx, const Trace& tr, int64_t i, int64_t j0, int64_t j1,
                   const RowBlockLines& lines, int32_t split);

}  // namespace flashstep
