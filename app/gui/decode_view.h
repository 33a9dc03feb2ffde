// Flash-decoding's drawing (decode_view.cpp), called from the views with one line each: the K/V
// blocks coloured by split and the partials O^(s), lse^(s) in HBM (tiles view), the combine's
// rescale factors (softmax panel), the partials' traffic against fa2 (memory panel) and the
// partials against a snapshot folder (compare view). The state it reads: decode_state.h.
#pragma once
#include "app/gui/app_state.h"

#include <imgui.h>

namespace flashstep::gui {

// Where the tiles view put its grids: K^T at (x_s, y_k), kv_h tall; the scores' row at y_s,
// s_h tall; V^T at y_v; O at x_o, o_w wide; the statistics' column at x_l, stat_w wide;
// cs the pixels per key; lab a label's height; right the panel's right edge.
struct DecodeTilesPlace {
  float x_s = 0, y_k = 0, kv_h = 0, y_s = 0, s_h = 0, y_v = 0, cs = 1;
  float x_o = 0, o_w = 0, x_l = 0, stat_w = 0, lab = 0, right = 0;
  float left = 0;  // the view's left edge (K^T's block labels start no further left)
};

// K^T's block labels (tiles_view.cpp): every stride-th block is labelled "j=..." where the widest
// label is wider than a block; JLabelSpan gives block j's label's horizontal extent, false where
// it has none. The decode bands' "s=1" labels share their row and keep clear of them.
int64_t JLabelStride(const Tiling& t, float cs);
bool JLabelSpan(const Tiling& t, int64_t nk, int64_t j, int64_t stride, float x_s, float cs, float left, float* x_lo,
                float* x_hi);

// The colour of split s (eight colours, then again).
ImU32 split_colour(int64_t s);

// The tiles view's decode part: a band under K^T and under the scores coloured by split, and
// the partials O^(s) (S Nq x d) and lse^(s) in HBM under O as they are written (orange: written
// by this step; blue: read by the combine now). Nothing when the run has no partials.
// Returns where it drew the lse^(s) column (x_l: under L, right of O^(s)'s).
float DrawDecodeTiles(AppState& s, const DecodeTilesPlace& g);
// Where DrawDecodeTiles puts the lse^(s) label: above its column at x_l, or further left so that
// it ends inside the panel (right). The tiles view keeps V^T's title short of it.
float DecodeLseLabelX(float x_l, float right);
const char* DecodeLseLabel(float x_l, float right);  // "lse^(s)", or "lse" where that does not fit
// The split colours' legend: one swatch per split with its blocks (one line).
void DrawSplitLegend(const AppState& s);

// The softmax panel at a combine step (FD L17, L18): per row lse_i^(s), the rescale factor
// e^(lse_i^(s) - lse_i) of each split added so far and lse_i. Returns false (drawing nothing)
// when the current step is not a combine step.
bool DrawCombineFactors(const AppState& s);

// The memory panel: decode's bytes against fa2's on the same problem, and what the partials add
// (Q re-read per split, O^(s), lse^(s) written and read back), each from the runs' counters.
void DrawDecodeTraffic(const AppState& s);

// The compare view: the folder's partials against the trace's, per split, in tolerance units.
void DrawPartialsCompare(const AppState& s);

}  // namespace flashstep::gui
