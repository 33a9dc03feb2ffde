// The IO explorer: the HBM bytes of one attention head of N x N at head dimension d with M
// words of SRAM, for standard attention (Algorithm 0), Algorithm 1 and FlashAttention-2, from
// the tiling rule (core/problem.h make_tiling: Bc = ceil(M / 4d), Br = min(Bc, d)) and the closed
// forms (core/closed_form.h), in float32 (4 bytes per element, the statistics too). No run: the
// forms are exact for the simulator (its tests hold them to the byte), and they are what makes
// N = 65536 cheap enough to move with a slider. The app draws the curves (the io-complexity
// chapter's explorer page); `flashstep learn` prints the table.
#pragma once
#include "app/plot/figures.h"
#include "core/problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::course {

// The explorer's ranges (the app's sliders; `learn --d --M` is checked against the same).
constexpr int64_t kIoMinN = 256, kIoMaxN = 65536;       // powers of two
constexpr int64_t kIoMinD = 16, kIoMaxD = 256;          // multiples of 16
constexpr int64_t kIoMinKiB = 16, kIoMaxKiB = 1024;     // SRAM in KiB of float32 words

struct IoRow {
  int64_t n = 0, d = 0, M = 0;  // M in float32 words
  Tiling tiling;
  int64_t standard = 0, fa1 = 0, fa2 = 0;  // bytes read + written
  double ratio() const { return double(standard) / double(fa1); }  // standard over Algorithm 1
  // Theorem 2's orders with constant 1, in elements: N^2 d^2 / M and N d + N^2.
  double theorem_flash = 0, theorem_standard = 0;
};

// One N. InputError for sizes outside the explorer's ranges.
IoRow io_row(int64_t n, int64_t d, int64_t M);
// The Ns of the curves and the table: powers of two from kIoMinN to kIoMaxN.
std::vector<int64_t> io_sizes();
// InputError unless d and M are in the explorer's ranges (M: whole KiB of float32 words).
void check_io_sizes(int64_t d, int64_t M);

// The figure: the three schedules' bytes against N (log axes), Theorem 2's two orders (constant 1,
// times 4 B) dashed beside them, and the chosen N marked on each curve.
plot::Figure io_figure(int64_t d, int64_t M, int64_t n_mark);
// The closed forms at one N, with the numbers put in: one line each (tiling, standard,
// Algorithm 1, FlashAttention-2, the ratio and where it comes from).
std::vector<std::string> io_forms(const IoRow& r);
// The terminal's table over N for d and M (indented lines, printed as they are).
std::string io_table(int64_t d, int64_t M);

}  // namespace flashstep::course
