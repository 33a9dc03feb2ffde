// Basic types shared by every part of flashstep's core.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/input_error.h"

namespace flashstep {

// Row-major so that a block of rows (Q_i, K_j, O_i) is one contiguous span, as in HBM.
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXf;
using VecD = Eigen::VectorXd;

// Storage precision of Q, K, V, O (and S, P in standard attention) in HBM. Arithmetic is
// float32 on chip, as on GPUs; the statistics l, m and the logsumexp L are stored in float32.
// fp8 is e4m3 (core/fp8.h): Q, K, V in e4m3 with float32 scales, O in bf16 (output_dtype).
enum class Dtype { fp32, fp16, bf16, fp8 };
const char* dtype_name(Dtype t);
Dtype parse_dtype(const std::string& name);  // throws InputError
inline int dtype_bytes(Dtype t) { return t == Dtype::fp32 ? 4 : t == Dtype::fp8 ? 1 : 2; }
// The type O (and every other non-input tensor) is stored in: the storage type, except that an
// FP8 forward writes bf16, as FlashAttention-3's FP8 kernel does (docs/fp8.md).
inline Dtype output_dtype(Dtype t) { return t == Dtype::fp8 ? Dtype::bf16 : t; }
float round_to(Dtype t, float x);           // x rounded to the nearest value of type t (fp8: unscaled e4m3)
void round_in_place(Dtype t, float* data, int64_t n);


inline Dtype parse_dtype(const std::string& name) {
  if (name == "fp32") return Dtype::fp32;
  if (name == "fp16") return Dtype::fp16;
  if (name == "bf16") return Dtype::bf16;
  if (name == "fp8") return Dtype::fp8;
  throw InputError("unknown dtype '" + name + "' (expected fp32, fp16, bf16 or fp8)");
}

}  // namespace flashstep
