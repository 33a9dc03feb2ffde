// Reading a typed answer as a teacher would. A line is either in the question's format (then it
// is checked: right, or wrong with a diagnosis where a known mistake explains it) or a slip: a
// line that is not in the format, answered with a one-line note and asked again, never counted
// as a try and never ending the chapter.
//
// The formats:
//   number  an optional sign, digits with at most one decimal point, an optional exponent
//           (1.553, -3, 2e-5), with spaces around it; then optionally one of the units the
//           question names ("896 B", "896 bytes", "2.47x", "2.47 times"), or "%" where it asks a
//           percentage. Not: hex (0x4), thousands separators or decimal commas (1,553), inf,
//           nan, control characters (a NUL byte is not the end of the line).
//   choice  a letter among those offered, in either case, bare or as "b)", "(b)", "b."; or the
//           text of a choice itself.
//   budget  three whole numbers Br,Bc,M separated by commas and/or spaces.
// Whole-number questions take whole numbers only as right: 7.5 is a wrong answer for Bc = 8 (not
// rounded to it), and it is diagnosed when the question names that mistake.
#pragma once
#include "app/course/course.h"

#include <cstdint>
#include <string>

namespace flashstep::course {

// The longest answer line the course reads (longer lines are refused as input errors).
constexpr size_t kMaxAnswerLine = 1000;

struct Reading {
  bool ok = false;
  double value = 0;              // number (a percentage as typed: 13.5 for "13.5%")
  int letter = -1;               // choice: 0 for a
  int64_t br = 0, bc = 0, M = 0; // budget
  std::string slip;              // when !ok: what the format is, one line
};
Reading read_answer(const Question& q, const std::string& typed);

// `typed` as it may be quoted in a message: control characters as '?', cut at 40 characters.
std::string quoted(const std::string& typed);

}  // namespace flashstep::course
