// Accuracy of the tensor-core path against core's float64 reference, on fresh random inputs:
// used by the [gpu] tests (tests/gpu/test_tensor_core.cpp) and the ladder's driver
// (gpu/tools/tc_bench.cpp), so both apply one rule.
//
// Inputs are N(0, 1) values rounded to the 16-bit type first, so the float64 reference sees
// exactly what the kernels see and the errors measure only the kernels' arithmetic.
//
// The rule (FlashAttention's own test): the flash kernel's max |O - O_ref| is at most twice
// that of standard attention computed in the same precision on the same inputs (cuBLAS, S and
// P stored in the 16-bit type), plus 1e-6 max|V| for float32 noise where both are exact.
// Also a bound derived for the flash kernel alone: with unit roundoff u of the type (bf16
// 2^-8, fp16 2^-11), rounding P~ costs at most u sum p|v| / l <= u max|V| per element and
// rounding O once at most u |O| <= u max|V|, so |O - O_ref| <= 2 u max|V| (float32 scores,
// statistics and exp2 add far less). lse (float32 throughout) within 2e-5 max(1, max|lse_ref|),
// and rows that keep no key have lse = -inf and O = 0 exactly.
#pragma once
#include "gpu/tensor_core.h"

#include <string>

namespace flashstep::gpu {

struct TcAccuracy {
  double flash_abs = 0, std_abs = 0;          // max |O - O_ref|
  double flash_lse_rel = 0, std_lse_rel = 0;  // normwise lse error
  double bound_abs = 0;                       // 2 u max|V|
  double max_abs_v = 0;
  bool written = false;  // no NaN left in O or lse (outputs are poisoned before the run)
  int variant = 0;
  bool ok() const;            // every rule above
  std::string describe() const;
};

// Draws inputs from `seed`, runs fa2_tc_forward and standard_tc_forward, compares both with
// the float64 reference. Throws InputError as they do.
TcAccuracy tc_accuracy(const Shape& s, const TcOptions& o, uint64_t seed);

}  // namespace flashstep::gpu
