// The online-softmax lesson: softmax of a vector computed block by block (local max, local
// sum, merge with the rescale), ending equal to the direct softmax.
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
};

struct Lesson {
  std::vector<double> values;
  size_t block = 0;
  std::vector<LessonBlock> blocks;
  std::vector<double> online;  // e^(x - m) / l with the final m, l
  std::vector<double> direct;  // softmax computed in one pass
  double max_diff = 0;         // max |online - direct|
};

Lesson run_lesson(const std::vector<double>& values, size_t block);  // throws InputError
std::vector<double> parse_values(const std::string& csv);             // "1,2,3,4"
std::string format_lesson(const Lesson& lesson);

}  // namespace flashstep
