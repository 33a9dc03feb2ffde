// --dtype fp8 in the memory model (docs/fp8.md): Q, K, V placed in HBM as an FP8 kernel finds
// them, e4m3 values beside their float32 scales, and the scale reads a kernel does with its tiles.
#pragma once
#include "core/memory.h"
#include "core/problem.h"

namespace flashstep {

// Rotates Q and K (p.rotate: Q R, K R with R = hadamard_rotation(d, seed), in float64, rounded
// to float32 once), quantises Q, K, V to e4m3 (p.fp8_scale: one scale per tensor, or per Q block
// of Br rows / K, V block of Bc rows) and puts the values in Q, K, V and the scales in sQ, sK, sV.
// Not counted, as inputs start in HBM: the quantisation is the producer's work (the layer that
// wrote Q, K, V), not the attention kernel's.
void put_fp8_inputs(Hbm& hbm, const Problem& p, const Tiling& t);

// The scale of block `block` of the tensor whose scales are `scales` (sQ, sK or sV), read from
// HBM (4 bytes, counted): the same one for every block when there is one per tensor.
float read_fp8_scale(Hbm& hbm, Tensor scales, int64_t block);

// Q and K as put_fp8_inputs rotates them (unchanged without p.rotate), before quantisation.
Mat rotated_input(const Problem& p, const Mat& X);

}  // namespace flashstep
