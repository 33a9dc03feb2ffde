// A softmax row traced step by step: what the puzzles safe-softmax and online-softmax
// (docs/python.md) record. Their HBM holds one row x with y (its softmax) and the running
// statistics m, l, not an attention problem, and the student labels the steps freely ("block
// 0", "y"): no paper line fits them. A RowTrace keeps the row, the block size the puzzle gave
// and, per step, its label, its bytes and its HBM loads and stores; core/trace_file.h writes
// and reads it as a trace file of kind "softmax-row", and the app's row view shows it beside
// core's lesson (core/lesson.h) for the same row and block size.
#pragma once
#include "core/types.h"

#include <array>
#include <string>
#include <vector>

namespace flashstep {

// The row's tensors in HBM: x (the row), y (its softmax), m and l (one value each).
enum class RowTensor { x, y, m, l };
constexpr int kRowTensors = 4;
const char* row_tensor_name(RowTensor t);
bool row_tensor_from_name(const std::string& name, RowTensor& out);
int64_t row_tensor_size(RowTensor t, int64_t n);  // n, n, 1, 1

constexpr int64_t kRowElemBytes = 4;             // float32: the puzzles' machine stores the row so
constexpr int64_t kMaxRowLength = int64_t(1) << 20;
constexpr size_t kMaxRowLabel = 80;              // a step's label, in bytes

struct RowLoad {
  RowTensor tensor = RowTensor::x;
  int64_t begin = 0, end = 0;  // tensor[begin:end] into SRAM
};
struct RowWrite {
  RowTensor tensor = RowTensor::y;
  int64_t begin = 0;
  Vec data;  // as stored (float32)
};

struct RowStep {
  std::string label;  // the student's own
  int64_t read = 0, write = 0;            // bytes the step moved
  int64_t read_total = 0, write_total = 0;  // up to and including it
  std::vector<RowLoad> loads;
  std::vector<RowWrite> stores;
};

struct RowTrace {
  Vec x;              // the row as the puzzle placed it
  int64_t block = 1;  // the puzzle's block size (Bc; N for safe-softmax's one block)
  std::vector<RowWrite> hbm_before;  // y, m, l as the puzzle placed them (0, -inf, 0)
  std::vector<RowStep> steps;
  int64_t peak_sram_bytes = 0;
  int64_t n() const { return x.size(); }
};

// HBM after k steps: x, then hbm_before, then the stores of steps 0 .. k-1 in order (a
// tensor nothing placed is zero, as allocated).
std::array<Vec, kRowTensors> row_hbm_after(const RowTrace& t, size_t k);

// The checks the file reader and the writer share (InputError, one line, `where` first): the
// label's length, the row's size, and each access inside its tensor.
void check_row_label(const std::string& label, const std::string& where);
void check_row_access(RowTensor t, int64_t begin, int64_t end, int64_t n, const std::string& where);

}  // namespace flashstep
