// libFuzzer target: the course's answer reader (app/course/answer.h). The first byte picks the
// question (a whole number with units, a tolerance number, a percentage, a choice, a budget);
// the rest is the typed line. Any line must be read as an answer or a one-line slip, never a
// throw, a non-finite number, or a letter outside the choices; a right reading must check as right.
#include "app/course/answer.h"

#include <cmath>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep::course;
  if (size == 0 || size > kMaxAnswerLine + 1) return 0;
  Question q;
  const int pick = data[0] % 5;
  const std::string typed(reinterpret_cast<const char*>(data + 1), size - 1);
  q.kind = pick == 3 ? Question::Kind::choice : pick == 4 ? Question::Kind::budget : Question::Kind::number;
  q.answer = pick == 0 ? 896 : 1.553;
  q.whole = pick == 0;
  q.rel_tol = pick == 0 ? 0 : 0.001;
  q.percent = pick == 2;
  if (pick == 0) q.units = {"B", "bytes"};
  if (pick == 1) q.units = {"x", "times"};
  q.mistakes.push_back({7.5, 0.5, "Bc is rounded up"});
  q.choices = {"one", "two", "three"};
  q.correct = 1;
  const Reading r = read_answer(q, typed);
  if (r.ok != r.slip.empty()) std::abort();
  if (r.slip.find('\n') != std::string::npos || r.slip.find('\0') != std::string::npos) std::abort();
  if (r.ok && q.kind == Question::Kind::number && !std::isfinite(r.value)) std::abort();
  if (r.ok && q.kind == Question::Kind::choice && (r.letter < 0 || r.letter >= int(q.choices.size()))) std::abort();
  if (r.ok && q.kind == Question::Kind::budget && (r.br < 1 || r.bc < 1 || r.M < 1)) std::abort();
  if (q.kind == Question::Kind::budget) return 0;  // its check runs the simulator
  const Verdict v = check_answer(q, typed);
  if (v.bad_format == r.ok) std::abort();
  if (r.ok && q.kind == Question::Kind::choice && v.correct != (r.letter == q.correct)) std::abort();
  if (r.ok && q.whole && v.correct != (r.value == q.answer)) std::abort();
  if (v.message.find('\n') != std::string::npos) std::abort();
  return 0;
}
