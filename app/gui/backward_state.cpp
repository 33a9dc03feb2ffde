#include "app/gui/backward_state.h"

namespace flashstep::gui {

namespace {

// The slot of `chip` a line's recorded tile (or D_i) fills, if any.
void take(BackwardChip& c, const Step& s, bool same_i) {
  auto fill = [](const Step*& slot, const Step& st) {
    if (!slot) slot = &st;  // scanning backwards: the first one met is the latest
  };
  const LineRole role = line_role(s.line);
  // The accumulators dV~_j, dK~_j of the tiled backwards (Algorithm 3's dV, dK go to HBM whole).
  if (s.j >= 0 && role == LineRole::grad_v) return fill(c.dV, s);
  if (s.j >= 0 && role == LineRole::grad_k) return fill(c.dK, s);
  if (!same_i) return;
  switch (role) {
    case LineRole::recompute_scores:
    case LineRole::mask_scores:
      if (s.tile.size()) fill(c.S, s);
      return;
    case LineRole::recompute_probs: fill(c.P, s); return;
    case LineRole::dropout: fill(c.Pd, s); return;
    case LineRole::grad_p: fill(c.dP, s); return;
    case LineRole::grad_s: fill(c.dS, s); break;
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
    if (line_role(s.line) == LineRole::load_kv) break;  // the load of K_j, V_j
  }
  return c;
}

}  // namespace flashstep::gui
