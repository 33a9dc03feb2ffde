// Reading a typed answer (answer.h). Written as a small scanner over the whole string, so that
// nothing after a NUL byte or a hex prefix is silently ignored (strtod stops at the first and
// reads the second).
#include "app/course/answer.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace flashstep::course {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The longest prefix of `s` from `at` that is a decimal number; its end, or `at` when none.
size_t scan_number(const std::string& s, size_t at) {
  size_t k = at;
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
  size_t digits = 0;
  while (k < s.size() && is_digit(s[k])) ++k, ++digits;
  if (k < s.size() && s[k] == '.') {
    ++k;
    while (k < s.size() && is_digit(s[k])) ++k, ++digits;
  }
  if (digits == 0) return at;
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    size_t e = k + 1;
    if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
    size_t ed = 0;
    while (e < s.size() && is_digit(s[e])) ++e, ++ed;
    if (ed > 0 && ed <= 4) k = e;
  }
  return k;
}

std::string units_text(const Question& q) {
  std::string u;
  for (const std::string& x : q.units) u += (u.empty() ? "" : " or ") + x;
  if (q.percent) u += (u.empty() ? "" : " or ") + std::string("%");
  return u;
}

std::string number_format(const Question& q) {
  const std::string u = units_text(q);
  return std::string(q.whole ? "a whole number" : "a number") +
         (u.empty() ? " alone (no unit)" : ", optionally followed by " + u);
}

Reading read_number(const Question& q, const std::string& typed) {
  Reading r;
  // The minus sign as typography writes it (U+2212, copied from a page or a PDF) is the minus.
  const std::string t = typed.rfind("\xE2\x88\x92", 0) == 0 ? "-" + typed.substr(3) : typed;
  const size_t end = scan_number(t, 0);
  const std::string rest = trim(t.substr(end));
  const bool comma = end > 0 && end < t.size() && t[end] == ',' && end + 1 < t.size() && is_digit(t[end + 1]);
  const bool hex = end > 0 && end < t.size() && (t[end] == 'x' || t[end] == 'X') && t.substr(0, end) == "0" &&
                   end + 1 < t.size() && std::isxdigit(static_cast<unsigned char>(t[end + 1]));
  bool unit_ok = rest.empty();
  if (!unit_ok && rest == "%") unit_ok = q.percent;
  for (const std::string& u : q.units) unit_ok |= lower(rest) == lower(u);
  if (end == 0 || !unit_ok) {
    r.slip = "'" + quoted(t) + "' is not " + number_format(q);
    if (comma) r.slip += "; no commas: 1553 for a whole number, 1.553 for a decimal";
    else if (hex) r.slip += "; decimal digits, not hex";
    else if (end > 0 && rest == "%") r.slip += "; the question does not ask a percentage";
    else if (end == 0 && t.size() > 1 && (t[0] == '-' || t[0] == '+') && is_space(t[1]))
      r.slip += "; no space after the sign: -0.65";
    return r;
  }
  r.value = std::strtod(t.substr(0, end).c_str(), nullptr);
  if (!std::isfinite(r.value)) {
    r.slip = "'" + quoted(t) + "' is too large to be an answer";
    return r;
  }
  r.ok = true;
  return r;
}

Reading read_choice(const Question& q, const std::string& t) {
  Reading r;
  const std::string lt = lower(t);
  for (size_t c = 0; c < q.choices.size(); ++c)
    if (lt == lower(q.choices[c])) {
      r.ok = true;
      r.letter = int(c);
      return r;
    }
  std::string s = lt;
  // A choice copied as shown, "b) its text" or "(b) its text": the letter, if the text is the choice's.
  const size_t open = s.size() > 1 && s[0] == '(' ? 1 : 0;
  if (s.size() > open + 2 && (s[open + 1] == ')' || s[open + 1] == '.') && is_space(s[open + 2])) {
    const int c = s[open] - 'a';
    if (c >= 0 && c < int(q.choices.size()) && trim(s.substr(open + 2)) == lower(q.choices[size_t(c)])) s = s.substr(open, 1);
  }
  if (s.size() == 3 && s.front() == '(' && s.back() == ')') s = s.substr(1, 1);
  else if (s.size() == 2 && (s[1] == ')' || s[1] == '.')) s = s.substr(0, 1);
  const int n = int(q.choices.size());
  if (s.size() == 1 && s[0] >= 'a' && s[0] - 'a' < n) {
    r.ok = true;
    r.letter = s[0] - 'a';
    return r;
  }
  r.slip = "'" + quoted(t) + "' is not one of the letters a to " + std::string(1, char('a' + n - 1));
  return r;
}

bool read_whole(const std::string& text, int64_t* x) {
  if (text.empty() || text.size() > 12) return false;
  for (char c : text)
    if (!is_digit(c)) return false;
  *x = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}

Reading read_budget(const std::string& t) {
  Reading r;
  std::string parts[4];
  int n = 0;
  size_t k = 0;
  while (k < t.size() && n < 4) {
    while (k < t.size() && (is_space(t[k]) || t[k] == ',')) ++k;
    if (k == t.size()) break;
    size_t e = k;
    while (e < t.size() && !is_space(t[e]) && t[e] != ',') ++e;
    parts[n++] = t.substr(k, e - k);
    k = e;
  }
  if (n != 3 || !read_whole(parts[0], &r.br) || !read_whole(parts[1], &r.bc) || !read_whole(parts[2], &r.M) ||
      r.br < 1 || r.bc < 1 || r.M < 1) {
    r.slip = "'" + quoted(t) + "' is not three whole numbers Br,Bc,M (for example 4,8,128)";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

std::string quoted(const std::string& typed) {
  std::string q;
  for (size_t k = 0; k < typed.size() && k < 40; ++k) {
    const unsigned char c = static_cast<unsigned char>(typed[k]);
    q += c < 32 || c == 127 ? '?' : char(c);
  }
  if (typed.size() > 40) q += "...";
  return q;
}

Reading read_answer(const Question& q, const std::string& typed) {
  const std::string t = trim(typed);
  switch (q.kind) {
    case Question::Kind::number: return read_number(q, t);
    case Question::Kind::choice: return read_choice(q, t);
    case Question::Kind::budget: return read_budget(t);
  }
  return {};
}

}  // namespace flashstep::course
