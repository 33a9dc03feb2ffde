// What the tiles view shows on chip during the backward pass: the tiles that core's steps
// recorded for the current (i, j) iteration (S_ij, P_ij, dP_ij, dS_ij, D_i) and the latest
// accumulators dV~_j and dK~_j of the current j. No OpenGL: the state tests check it.
#pragma once
#include "core/trace.h"

namespace flashstep::gui {

struct BackwardChip {
  const Step* S = nullptr;   // S_ij: Alg4 L11 (L12 when masked), FA2b L10
  const Step* P = nullptr;   // P_ij: Alg4 L13, FA2b L11
  const Step* Pd = nullptr;  // P_ij^dropped: Alg4 L14-15 (with dropout)
  const Step* dP = nullptr;  // dP_ij: Alg4 L17 (L18 with dropout), FA2b L13; Alg3 L2: dP_i
  const Step* dS = nullptr;  // dS_ij: Alg4 L20, FA2b L14; Alg3 L3: dS_i
  const Step* D = nullptr;   // D_i: Alg4 L19, FA2b L4, Alg3 L3
  const Step* dV = nullptr;  // dV~_j after the latest Alg4 L16 / FA2b L12 of this j
  const Step* dK = nullptr;  // dK~_j after the latest Alg4 L22 / FA2b L16 of this j
  bool any() const { return S || P || Pd || dP || dS || D || dV || dK; }
};

// The chip's tiles with k steps applied; all null before the backward's first step.
BackwardChip backward_chip(const Trace& t, size_t k);

// Whether the view shows the backward: the backward ran and its first step is applied.
inline bool in_backward(const Trace& t, size_t k) { return t.has_backward && k > t.backward_first_step; }

}  // namespace flashstep::gui
