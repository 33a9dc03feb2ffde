#include "app/gui/backward_state.h"

namespace flashstep::gui {

namespace {

// The slot of `chip` a line's recorded tile (or D_i) fills, if any.
void take(BackwardChip& c, const Step& s, bool same_i) {
  auto fill = [](const Step*& slot, const Step& st) {
    if (!slot) slot = &st;  // scanning backwards: the first one met is the latest
  };
  switch (s.line) {
    case Line::A4_L16: case Line::B2_L12: fill(c.dV, s); return;
    case Line::A4_L22: case Line::B2_L16: fill(c.dK, s); return;
    default: break;
  }
  if (!same_i) return;
  switch (s.line) {
    case Line::A4_L11: case Line::A4_L12: case Line::B2_L10:
      if (s.tile.size()) fill(c.S, s);
      return;
    case Line::A4_L13: case Line::B2_L11: fill(c.P, s); return;
    case Line::A4_L14: fill(c.Pd, s); return;
    case Line::A4_L17: case Line::A4_L18: case Line::B2_L13: case Line::A3_L2: fill(c.dP, s); return;
    case Line::A4_L20: case Line::B2_L14: fill(c.dS, s); break;
    case Line::A3_L3: fill(c.dS, s); break;
    default: break;
  }
  if (s.D_i.size()) fill(c.D, s);
}

}  // namespace

BackwardChip backward_chip(const Trace& t, size_t k) {
  BackwardChip c;
  if (!in_backward(t, k)) return c;
  const Step& cur = t.steps[k - 1];
  // Outside the (j, i) loops (Alg4 L5, FA2b L3 / L4, every line of Algorithm 3) only the
  // current step's own values are on chip.
  if (cur.j < 0) {
    take(c, cur, true);
    return c;
  }
  // The j loop's steps are contiguous (j outer): walk back through them.
  for (size_t n = k; n-- > t.backward_first_step;) {
    const Step& s = t.steps[n];
    if (s.j != cur.j) break;
    take(c, s, s.i == cur.i && cur.i >= 0);
    if (s.line == Line::A4_L7 || s.line == Line::B2_L6) break;  // the load of K_j, V_j
  }
  return c;
}

}  // namespace flashstep::gui
