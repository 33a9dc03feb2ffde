// The seed chapter's example: softmax([1, 2, 3, 4]) in blocks [1, 2] and [3, 4]. Each block
// gets its local max and sum; the running statistics are merged by the schedules' own update
// (core/online_softmax.h: softmax_weight, merged_max, rescale_factor, merged_sum, and
// merged_output for O when a value vector is given), run in double so the printed digits are the
// mathematics.
#include "core/lesson.h"

#include "core/checked.h"
#include "core/input_files.h"
#include "core/online_softmax.h"
#include "core/types.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace flashstep {

std::vector<double> parse_values(const std::string& csv, const std::string& flag) {
  std::vector<double> v;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Spaces around an item are allowed (1, 2, 3); the item itself is a decimal number (not 0x10).
    const size_t from = item.find_first_not_of(" \t"), to = item.find_last_not_of(" \t");
    const std::string text = from == std::string::npos ? "" : item.substr(from, to - from + 1);
    double x;
    try {
      x = checked::parse_double(text, "x");
    } catch (const InputError&) {
      throw InputError(flag + ": '" + excerpt(item) + "' is not a number (finite, decimal)");
    }
    v.push_back(x);
  }
  if (v.empty()) throw InputError(flag + ": give at least one number, e.g. 1,2,3,4");
  return v;
}

void check_lesson_size(size_t n_values) {
  // A block record per block and three copies of the values: far beyond this a call runs for
  // minutes (10^7 values take 14 s) while the app shows rows of at most this length.
  if (n_values > kMaxLessonValues)
    throw InputError("the lesson takes at most " + std::to_string(kMaxLessonValues) + " values (got " +
                     std::to_string(n_values) + ")");
}

Lesson run_lesson(const std::vector<double>& values, size_t block, const std::vector<double>& v) {
  if (values.empty()) throw InputError("the lesson needs at least one value");
  check_lesson_size(values.size());
  if (block == 0) throw InputError("--block must be at least 1");
  for (double x : values)
    if (!std::isfinite(x)) throw InputError("the lesson's values must be finite");
  if (!v.empty() && v.size() != values.size())
    throw InputError("V needs one value per entry of x: " + std::to_string(values.size()) + " values, V has " +
                     std::to_string(v.size()));
  for (double x : v)
    if (!std::isfinite(x)) throw InputError("the lesson's V must be finite");
  Lesson L;
  L.values = values;
  L.block = block;
  L.v = v;
  double m = -INFINITY, l = 0, o = 0;
  for (size_t b = 0; b < values.size(); b += block) {
    LessonBlock B;
    B.begin = b;
    B.end = std::min(values.size(), b + block);
    B.local_max = -INFINITY;
    for (size_t k = B.begin; k < B.end; ++k) B.local_max = merged_max(B.local_max, values[k]);
    for (size_t k = B.begin; k < B.end; ++k) B.local_sum += softmax_weight(values[k], B.local_max);
    // Alg1 L11 in double: the merge the schedules run, one block at a time.
    B.m_old = m;
    B.l_old = l;
    B.m_new = merged_max(m, B.local_max);
    B.alpha = rescale_factor(m, B.m_new);  // 0 for the first block (m = -inf)
    B.beta = rescale_factor(B.local_max, B.m_new);
    B.l_new = merged_sum(B.alpha, l, B.beta, B.local_sum);
    if (!v.empty()) {  // Alg1 L12 for one column of V: O <- (l e^(m - m_new) O + e^(m~ - m_new) P~V) / l_new
      for (size_t k = B.begin; k < B.end; ++k) B.local_pv += softmax_weight(values[k], B.local_max) * v[k];
      B.o_old = o;
      B.o_new = merged_output(l, B.alpha, o, B.beta, B.local_pv, B.l_new);
      o = B.o_new;
    }
    m = B.m_new;
    l = B.l_new;
    L.blocks.push_back(B);
  }
  double dmax = -INFINITY, dsum = 0;
  for (double x : values) dmax = std::max(dmax, x);
  for (double x : values) dsum += std::exp(x - dmax);
  for (double x : values) {
    L.online.push_back(softmax_weight(x, m) / l);
    L.direct.push_back(std::exp(x - dmax) / dsum);
    L.max_diff = std::max(L.max_diff, std::abs(L.online.back() - L.direct.back()));
  }
  for (size_t k = 0; k < v.size(); ++k) L.o_direct += L.direct[k] * v[k];
  // The weights are at most 1 and l at most the number of values, but a sum of V's values
  // weighted by them can leave double's range (two values of 1e308): refused, rather than a
  // lesson that prints inf and calls the two ways different.
  const auto overflow = [](const std::string& what) {
    throw InputError("the lesson overflows double: " + what + " leaves its range (|x| <= 1.8e308); give --v values of smaller magnitude");
  };
  for (size_t b = 0; b < L.blocks.size(); ++b) {
    const LessonBlock& B = L.blocks[b];
    if (!std::isfinite(B.local_pv)) overflow("block " + std::to_string(b + 1) + "'s P~V = sum exp(x - m~) v");
    if (!std::isfinite(B.o_new)) overflow("block " + std::to_string(b + 1) + "'s O update");
  }
  if (!std::isfinite(L.o_direct)) overflow("the direct O = sum softmax(x)_k v_k");
  return L;
}

static std::string fmt(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string format_lesson(const Lesson& L) {
  std::ostringstream os;
  os << "Online softmax of [";
  for (size_t k = 0; k < L.values.size(); ++k) os << (k ? ", " : "") << fmt(L.values[k]);
  os << "] in blocks of " << L.block << "\n";
  if (!L.v.empty()) {
    os << "V = [";
    for (size_t k = 0; k < L.v.size(); ++k) os << (k ? ", " : "") << fmt(L.v[k]);
    os << "]: O = sum softmax(x)_k v_k is carried block by block (Alg1 L12)\n";
  }
  os << (L.v.empty() ? "Running statistics start at m = -inf, l = 0.\n" : "Running statistics start at m = -inf, l = 0, O = 0.\n");
  for (size_t b = 0; b < L.blocks.size(); ++b) {
    const LessonBlock& B = L.blocks[b];
    os << "\nBlock " << b + 1 << ": [";
    for (size_t k = B.begin; k < B.end; ++k) os << (k > B.begin ? ", " : "") << fmt(L.values[k]);
    os << "]\n";
    os << "  local max  m~ = " << fmt(B.local_max) << "\n";
    os << "  local sum  l~ = sum exp(x - m~) = " << fmt(B.local_sum) << "\n";
    os << "  merge      m_new = max(m, m~) = max(" << fmt(B.m_old) << ", " << fmt(B.local_max)
       << ") = " << fmt(B.m_new) << "\n";
    os << "  rescale    e^(m - m_new) = " << fmt(B.alpha) << ",  e^(m~ - m_new) = "
       << fmt(B.beta) << "\n";
    os << "  merge      l_new = " << fmt(B.alpha) << " * " << fmt(B.l_old) << " + "
       << fmt(B.beta) << " * " << fmt(B.local_sum) << " = " << fmt(B.l_new) << "\n";
    if (!L.v.empty()) {
      os << "  P~V        sum exp(x - m~) v = " << fmt(B.local_pv) << "\n";
      os << "  update     O_new = (l * e^(m - m_new) * O + e^(m~ - m_new) * P~V) / l_new = (" << fmt(B.l_old)
         << " * " << fmt(B.alpha) << " * " << fmt(B.o_old) << " + " << fmt(B.beta) << " * " << fmt(B.local_pv)
         << ") / " << fmt(B.l_new) << " = " << fmt(B.o_new) << "\n";
    }
  }
  os << "\nFinal m = " << fmt(L.blocks.back().m_new) << ", l = " << fmt(L.blocks.back().l_new)
     << "\n";
  os << "  x          online e^(x-m)/l    direct softmax\n";
  for (size_t k = 0; k < L.values.size(); ++k) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-10s %-19.9g %.9g\n", fmt(L.values[k]).c_str(),
                  L.online[k], L.direct[k]);
    os << line;
  }
  os << "max |online - direct| = " << fmt(L.max_diff)
     << (L.max_diff <= 1e-12 ? "  (equal)" : "  (DIFFERENT)") << "\n";
  if (!L.v.empty()) {
    const double o = L.blocks.back().o_new, diff = std::abs(o - L.o_direct);
    os << "O = sum softmax(x)_k v_k: online " << fmt(o) << ", direct " << fmt(L.o_direct)
       << (diff <= 1e-12 * std::max(1.0, std::abs(L.o_direct)) ? "  (equal)" : "  (DIFFERENT)") << "\n";
  }
  return os.str();
}

}  // namespace flashstep
