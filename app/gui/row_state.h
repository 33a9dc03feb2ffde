// A softmax row's trace in the app (`flashstep gui --trace` of the puzzles safe-softmax and
// online-softmax, core/row_trace.h): the student's steps over one row beside core's lesson
// (core/lesson.h) for the same row and block size, and what stands after k steps: HBM's y, m,
// l, which elements of x were loaded, and the student's m and l after each block. The b-th
// store of m (and of l) is the student's value after block b: what the online-softmax puzzle
// asks for, and what its judge compares with the lesson's block b. No OpenGL: the state tests
// read it.
#pragma once
#include "core/lesson.h"
#include "core/row_trace.h"

#include <memory>
#include <string>
#include <vector>

namespace flashstep::gui {

struct RowView {
  std::string path;
  RowTrace trace;
  Lesson lesson;  // core's, for the row as stored (float32 values, in double) and the block size
};
// Throws InputError (a row the lesson refuses).
std::unique_ptr<RowView> make_row_view(RowTrace trace, const std::string& path);

// The row's traffic as the puzzles judge it: x and y. The stores of m and l are online-softmax's
// diagnostics (it asks for them after each block so that its judge can name the block that
// departs; flashstep/_judge.py leaves them out of the bytes): the per-tensor table shows them,
// the totals do not count them.
struct RowBytes {
  int64_t read = 0, written = 0;
  int64_t diagnostic = 0;  // m and l, read and written
};
bool row_tensor_judged(RowTensor t);  // x, y
RowBytes row_judged_bytes(const RowStep& s);

enum class Seen : unsigned char { no, before, now };  // not yet; by an earlier step; by step k

struct RowBlockAt {
  bool reached = false;        // the student has loaded some of the block's x
  bool m_stored = false, l_stored = false;
  float m = 0, l = 0;          // the student's values after the block (when stored)
};

struct RowAt {
  size_t k = 0;                        // steps applied
  std::array<Vec, kRowTensors> hbm;    // x, y, m, l in HBM after them
  std::vector<Seen> x_loaded, y_written;  // per element of x and of y
  std::vector<RowBlockAt> blocks;      // one per lesson block
  int current_block = -1;              // the block of step k's last load of x (-1: none)
  std::array<int64_t, kRowTensors> read{}, written{};  // bytes so far, per tensor
  std::array<bool, kRowTensors> read_now{}, written_now{};  // by step k
  RowBytes so_far, this_step, whole_run;  // the traffic the puzzle judges (row_judged_bytes)
};
RowAt row_at(const RowView& v, size_t k);

// The sentence for step k (0: before the first), as the pseudocode panel's for a schedule.
std::string row_explain(const RowView& v, size_t k);

}  // namespace flashstep::gui
