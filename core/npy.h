// NumPy .npy files (format versions 1.0-3.0), float32 or float64, C order.
#pragma once
#include "core/types.h"

#include <string>
#include <vector>

namespace flashstep {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32
};

// Throws InputError naming the file and the problem (not a regular file, magic, a malformed
// header, dtype, order, truncated bytes). The header must be NumPy's dict literal exactly.
NpyArray read_npy(const std::string& path);
// Reads a 2-D (rows x cols) array; 4-D (1,1,rows,cols) is accepted too.
Mat read_npy_matrix(const std::string& path);
// The bytes of a float32 .npy file (for staging in OutputFiles).
std::string npy_bytes(const float* data, const std::vector<int64_t>& shape);
// Writes float32, atomically (output_files.h).
void write_npy(const std::string& path, const float* data, const std::vector<int64_t>& shape);
void write_npy(const std::string& path, const Mat& m);
void write_npy(const std::string& path, const Vec& v);

}  // namespace flashstep
