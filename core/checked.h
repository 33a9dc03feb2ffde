// The one place for size arithmetic and for turning outside numbers (flags, presets, .npy
// headers) into sizes. Every operation names the quantity it computes, so an overflow is an
// InputError the user can act on ("Tr * Tc overflows ..."), never undefined behaviour. The
// limits on each size are stated here and in docs/limits.md.
#pragma once
#include "core/types.h"

#include <cstdint>
#include <string>

namespace flashstep {

// Limits on each size (docs/limits.md). They keep every product the simulator forms (Nq*Nk,
// Tr*Tc*Br*d, bytes of a tensor) inside int64 and far from it.
constexpr int64_t kMaxSeq = int64_t(1) << 28;      // Nq, Nk, kv_len, window sides, Br, Bc
constexpr int64_t kMaxHeadDim = 65536;             // d
constexpr int64_t kMaxSram = int64_t(1) << 40;     // M in elements (4 TiB of float32)
constexpr int64_t kMaxTraceMib = int64_t(1) << 20; // --max-trace-mib (1 TiB)
constexpr int64_t kMaxNpyDims = 8;                 // dimensions of a .npy shape
constexpr size_t kMaxLessonBlock = size_t(1) << 28;  // lesson softmax --block
constexpr size_t kMaxLessonValues = size_t(1) << 20;  // lesson softmax's values (a row trace's x is as long)

namespace checked {

// a op b, or InputError("<what> overflows: ...") when the result leaves int64.
int64_t mul(int64_t a, int64_t b, const char* what);
int64_t add(int64_t a, int64_t b, const char* what);
// ceil(a / b) for a >= 0, b >= 1, without the a + b - 1 overflow.
int64_t ceil_div(int64_t a, int64_t b, const char* what);
// Unsigned counterparts for element and byte counts (container sizes).
size_t mul(size_t a, size_t b, const char* what);
size_t add(size_t a, size_t b, const char* what);

// A quantity estimated in doubles (a sum of products of sizes) that an int64 computation will
// then form exactly: InputError("<what> overflows int64 ...") when it would not fit.
void fits_int64(double estimate, const char* what);

// Requires lo <= x <= hi, else InputError("<what> must be in lo..hi (got x)").
int64_t in_range(int64_t x, int64_t lo, int64_t hi, const char* what);

// A double (a JSON number, a text field) that must be a whole number in [lo, hi]: 1e300,
// 2.5 and NaN are InputErrors instead of undefined conversions.
int64_t to_int(double x, int64_t lo, int64_t hi, const char* what);
// A double that must be finite as a float32 (the type the simulator computes in).
float to_float(double x, const char* what);

// Strict text parsing: the whole text, decimal, no sign for unsigned, no wrap-around.
int64_t parse_int(const std::string& text, const char* what);
uint64_t parse_uint(const std::string& text, const char* what);
double parse_double(const std::string& text, const char* what);
// An image size "WxH" (or "WXH"): two whole numbers with min_w <= W <= max, min_h <= H <= max;
// anything else (a sign, spaces, "4294968496x700" that would wrap an int) is an InputError
// naming `flag` and quoting the text as typed.
void parse_wxh(const std::string& text, const char* flag, const char* example, int min_w, int min_h, int max, int* w,
               int* h);

}  // namespace checked
}  // namespace flashstep
