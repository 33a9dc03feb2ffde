// The online-softmax lesson: softmax of a vector computed block by block (local max, local
// sum, merge with the rescale), ending equal to the direct softmax. Given a value vector V (one
// value per entry, as one column of V for one query row), the blocks also carry the output
// O = sum_k softmax(x)_k v_k through Algorithm 1's update, ending equal to the direct sum.
#pragma once
#include <string>
#include <vector>

namespace flashstep {

struct LessonBlock {
  size_t begin = 0, end = 0;      // [begin, end) of the vector
  double local_max = 0, local_sum = 0;  // m~ and l~ of this block
  double m_old = 0, l_old = 0;    // running statistics before the merge (-inf, 0 at first)
  double m_new = 0, l_new = 0;    // after the merge
  double alpha = 0, beta = 0;     // e^(m_old - m_new), e^(local_max - m_new)
  // With V: P~V = sum e^(x - m~) v over the block, and the running output before and after the
  // merge (0 before the first block).
  double local_pv = 0, o_old = 0, o_new = 0;
};

struct Lesson {
  std::vector<double> values;
  size_t block = 0;
  std::vector<LessonBlock> blocks;
  std::vector<double> online;  // e^(x - m) / l with the final m, l
  std::vector<double> direct;  // softmax computed in one pass
  double max_diff = 0;         // max |online - direct|
  std::vector<double> v;       // the value vector (empty: no output carried)
  double o_direct = 0;         // sum_k direct_k v_k (with v)
};

// InputError for more values than the lesson takes (kMaxLessonValues, core/checked.h), before
// they are copied anywhere.
void check_lesson_size(size_t n_values);
// Throws InputError (v, when given, needs one finite value per entry of `values`; at most
// kMaxLessonValues of them).
Lesson run_lesson(const std::vector<double>& values, size_t block, const std::vector<double>& v = {});
// "1,2,3,4"; `flag` names the option in the error messages.
std::vector<double> parse_values(const std::string& csv, const std::string& flag = "--values");
std::string format_lesson(const Lesson& lesson);

}  // namespace flashstep
