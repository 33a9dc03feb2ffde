#include "core/checked.h"

#include "core/input_files.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <type_traits>

namespace flashstep::checked {

// a op b for op in {'*', '+'}, or an InputError naming the quantity.
template <class T>
static T arith(T a, T b, char op, const char* what) {
  T r;
  if (op == '*' ? __builtin_mul_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r)) {
    std::ostringstream os;
    os << what << " overflows: " << a << ' ' << op << ' ' << b << " is beyond "
       << (std::is_signed<T>::value ? "2^63" : "2^64") << " (see docs/limits.md)";
    throw InputError(os.str());
  }
  return r;
}

int64_t mul(int64_t a, int64_t b, const char* what) { return arith(a, b, '*', what); }
int64_t add(int64_t a, int64_t b, const char* what) { return arith(a, b, '+', what); }
size_t mul(size_t a, size_t b, const char* what) { return arith(a, b, '*', what); }
size_t add(size_t a, size_t b, const char* what) { return arith(a, b, '+', what); }

int64_t ceil_div(int64_t a, int64_t b, const char* what) {
  if (a < 0 || b < 1)
    throw InputError(std::string(what) + ": ceil(" + std::to_string(a) + " / " + std::to_string(b) +
                     ") needs a >= 0 and b >= 1");
  return a / b + (a % b != 0);
}

void fits_int64(double estimate, const char* what) {
  if (!(estimate < 9.2e18)) {
    std::ostringstream os;
    os << what << " overflows int64 (about " << estimate << "; see docs/limits.md)";
    throw InputError(os.str());
  }
}

int64_t in_range(int64_t x, int64_t lo, int64_t hi, const char* what) {
  if (x < lo || x > hi)
    throw InputError(std::string(what) + " must be in " + std::to_string(lo) + ".." +
                     std::to_string(hi) + " (got " + std::to_string(x) + ")");
  return x;
}

int64_t to_int(double x, int64_t lo, int64_t hi, const char* what) {
  // Compare as doubles first: converting an out-of-range double to int64 is undefined (and
  // double(INT64_MAX) is 2^63, itself out of range, hence the strict upper bound).
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0) || x != std::trunc(x) ||
      int64_t(x) < lo || int64_t(x) > hi) {
    std::ostringstream os;
    os << what << " must be a whole number in " << lo << ".." << hi << " (got " << x << ")";
    throw InputError(os.str());
  }
  return int64_t(x);
}

float to_float(double x, const char* what) {
  if (!std::isfinite(x) || std::fabs(x) > double(FLT_MAX)) {
    std::ostringstream os;
    os << what << " must be a finite float32 number, |x| <= 3.4e38 (got " << x << ")";
    throw InputError(os.str());
  }
  if (x != 0 && float(x) == 0.0f) {  // below float32's smallest subnormal: it would become 0 quietly
    std::ostringstream os;
    os << what << " is too small for float32: it rounds to 0 (got " << x << "; the smallest is 1.4e-45)";
    throw InputError(os.str());
  }
  return float(x);
}

static void need_digits(const std::string& text, const char* what, bool allow_sign) {
  const size_t start = allow_sign && !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == start || text.find_first_not_of("0123456789", start) != std::string::npos)
    throw InputError(std::string(what) + " must be a " + (allow_sign ? "" : "non-negative ") +
                     "whole number (got '" + excerpt(text) + "')");
}

int64_t parse_int(const std::string& text, const char* what) {
  need_digits(text, what, true);
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) throw InputError(std::string(what) + " is out of range (got '" + excerpt(text) + "')");
  return v;
}

uint64_t parse_uint(const std::string& text, const char* what) {
  need_digits(text, what, false);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    throw InputError(std::string(what) + " is out of range 0..18446744073709551615 (got '" + excerpt(text) + "')");
  return v;
}

// Decimal notation only: [+-] digits [. digits] [e [+-] digits] (or .5): strtod alone also reads
// hexadecimal ("0x10" is 16), "inf", "nan" and leading spaces.
static bool decimal_text(const std::string& t) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - from;
  };
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < t.size() && t[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == t.size();
}

double parse_double(const std::string& text, const char* what) {
  char* end = nullptr;
  errno = 0;
  const double v = decimal_text(text) ? std::strtod(text.c_str(), &end) : 0.0;
  if (end == nullptr || end == text.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw InputError(std::string(what) + " must be a finite decimal number (got '" + excerpt(text) + "')");
  return v;
}

void parse_wxh(const std::string& text, const char* flag, const char* example, int min_w, int min_h, int max, int* w,
               int* h) {
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
  };
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos || !digits(text.substr(0, x)) || !digits(text.substr(x + 1)))
    throw InputError(std::string(flag) + " must look like " + example + " (got '" + excerpt(text) + "')");
  const auto side = [&](const std::string& t, int lo) {  // compared as text first: no int can wrap
    const size_t nz = t.find_first_not_of('0');
    const std::string v = nz == std::string::npos ? "0" : t.substr(nz);
    const int64_t n = v.size() > 9 ? int64_t(max) + 1 : parse_int(v, flag);
    return n >= lo && n <= max ? int(n) : -1;
  };
  const int a = side(text.substr(0, x), min_w), b = side(text.substr(x + 1), min_h);
  if (a < 0 || b < 0)
    throw InputError(std::string(flag) + " must be between " + std::to_string(min_w) + "x" + std::to_string(min_h) + " and " +
                     std::to_string(max) + "x" + std::to_string(max) + " (got '" + excerpt(text) + "')");
  *w = a;
  *h = b;
}

}  // namespace flashstep::checked
