#include "app/course/io_explorer.h"

#include "core/closed_form.h"
#include "core/schedules/fa1/fa1.h"
#include "core/schedules/fa2/fa2.h"
#include "core/schedules/standard/standard.h"
#include "core/input_error.h"

#include <cstdarg>
#include <cstdio>

namespace flashstep::course {

namespace {

constexpr int kBytes = 4;  // float32: the inputs, O, S, P and the statistics alike

int64_t total(const TrafficForm& f) { return f.read_bytes(kBytes) + f.write_bytes(kBytes); }

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return buf;
}

double mb(int64_t bytes) { return double(bytes) / 1e6; }

// A table cell of megabytes: four significant digits, whole megabytes past 10000 (no exponent).
std::string mb_cell(int64_t bytes) {
  const double v = mb(bytes);
  return v >= 1e4 ? fmt("%12.0f", v) : fmt("%12.4g", v);
}

}  // namespace

void check_io_sizes(int64_t d, int64_t M) {
  if (d < kIoMinD || d > kIoMaxD || d % 16 != 0)
    throw InputError("the IO explorer's d must be a multiple of 16 from " + std::to_string(kIoMinD) + " to " +
                     std::to_string(kIoMaxD) + " (got " + std::to_string(d) + ")");
  const int64_t words_per_kib = 1024 / kBytes;
  if (M % words_per_kib != 0 || M / words_per_kib < kIoMinKiB || M / words_per_kib > kIoMaxKiB)
    throw InputError("the IO explorer's M must be whole KiB of float32 words from " + std::to_string(kIoMinKiB) +
                     " to " + std::to_string(kIoMaxKiB) + " KiB (got " + std::to_string(M) + " words)");
}

IoRow io_row(int64_t n, int64_t d, int64_t M) {
  check_io_sizes(d, M);
  if (n < kIoMinN || n > kIoMaxN)
    throw InputError("the IO explorer's N must be from " + std::to_string(kIoMinN) + " to " + std::to_string(kIoMaxN) +
                     " (got " + std::to_string(n) + ")");
  IoRow r;
  r.n = n;
  r.d = d;
  r.M = M;
  r.tiling = make_tiling(n, n, d, M);
  r.standard = total(standard_traffic(n, n, d));  // registry-exempt: the explorer compares these schedules
  r.fa1 = total(fa1_traffic(n, n, d, r.tiling.Tc));  // registry-exempt: the explorer compares these schedules
  r.fa2 = total(fa2_traffic(n, n, d, r.tiling.Tr));  // registry-exempt: the explorer compares these schedules
  r.theorem_flash = theorem2_flash(n, n, d, M);
  r.theorem_standard = theorem2_standard(n, n, d);
  return r;
}

std::vector<int64_t> io_sizes() {
  std::vector<int64_t> ns;
  for (int64_t n = kIoMinN; n <= kIoMaxN; n *= 2) ns.push_back(n);
  return ns;
}

plot::Figure io_figure(int64_t d, int64_t M, int64_t n_mark) {
  plot::Figure f;
  f.kind = plot::FigureKind::tflops;  // drawn as lines over N on log axes
  f.title = "HBM bytes of one head against N: the closed forms";
  f.subtitle = fmt("d = %lld, M = %lld float32 words (%lld KiB of SRAM); bytes read + written, float32; Theorem 2's "
                   "orders with constant 1, times 4 B; N = %lld marked",
                   (long long)d, (long long)M, (long long)(M * kBytes / 1024), (long long)n_mark);
  struct Curve {
    const char* label;
    int colour;
    bool dashed;
  };
  const Curve curves[] = {{"standard attention", 2, false},
                          {"Algorithm 1", 0, false},
                          {"FlashAttention-2", 3, false},
                          {"N d + N^2 (Theorem 2)", 2, true},
                          {"N^2 d^2 / M (Theorem 2)", 0, true}};
  std::vector<plot::Series> s(5);
  for (size_t k = 0; k < 5; ++k) {
    s[k].label = curves[k].label;
    s[k].colour = curves[k].colour;
    s[k].dashed = curves[k].dashed;
  }
  std::vector<double> xs, ys;
  for (int64_t n : io_sizes()) {
    const IoRow r = io_row(n, d, M);
    const double v[] = {mb(r.standard), mb(r.fa1), mb(r.fa2), r.theorem_standard * kBytes / 1e6,
                        r.theorem_flash * kBytes / 1e6};
    for (size_t k = 0; k < 5; ++k) {
      s[k].x.push_back(double(n));
      s[k].y.push_back(v[k]);
      ys.push_back(v[k]);
    }
    xs.push_back(double(n));
  }
  for (plot::Series& x : s) f.series.push_back(std::move(x));
  // The chosen N: one marker on each schedule's curve.
  const IoRow m = io_row(n_mark, d, M);
  plot::Series mark;
  mark.label = fmt("N = %lld", (long long)n_mark);
  mark.points = true;
  mark.colour = 7;
  mark.x = {double(n_mark), double(n_mark), double(n_mark)};
  mark.y = {mb(m.standard), mb(m.fa1), mb(m.fa2)};
  f.series.push_back(std::move(mark));
  f.x = plot::make_axis("N (one head of N x N)", xs, true);
  f.y = plot::make_axis("HBM MB", ys, false);
  return f;
}

std::vector<std::string> io_forms(const IoRow& r) {
  const Tiling& t = r.tiling;
  const long long n = r.n, d = r.d, M = r.M;
  const double ratio_model = double(M) / (3.0 * double(d) * double(d));
  return {
      fmt("N = %lld, d = %lld, M = %lld words (%lld KiB)", n, d, M, M * kBytes / 1024),
      fmt("Bc = ceil(M / 4d) = %lld, Br = min(Bc, d) = %lld", (long long)t.Bc, (long long)t.Br),
      fmt("Tc = ceil(N / Bc) = %lld, Tr = ceil(N / Br) = %lld", (long long)t.Tc, (long long)t.Tr),
      fmt("standard: 4N^2 + 4Nd elements = %.4g MB (S and P written and read back: 4N^2)", mb(r.standard)),
      fmt("Algorithm 1: 3Nd + 2N + Tc N (3d + 4) = %.4g MB (Q_i, O_i, l_i, m_i read and O_i, l_i, m_i written at "
          "every (i, j))", mb(r.fa1)),
      fmt("FlashAttention-2: 2Nd + N + 2 Tr N d = %.4g MB (K and V read once per Q block)", mb(r.fa2)),
      fmt("standard / Algorithm 1 = %.3g; with Tc ~ 4Nd / M, Tc N 3d ~ 12 N^2 d^2 / M against 4N^2: "
          "about M / 3d^2 = %.3g", r.ratio(), ratio_model),
      fmt("Theorem 2, constant 1: N^2 d^2 / M = %.4g and N d + N^2 = %.4g elements", r.theorem_flash,
          r.theorem_standard),
  };
}

std::string io_table(int64_t d, int64_t M) {
  check_io_sizes(d, M);
  // Two heading lines: in one (86 columns) it ran past an 80-column terminal.
  std::string out = fmt("  d = %lld, M = %lld float32 words (%lld KiB), M / 3d^2 = %.3g\n  bytes read + written, MB:\n",
                        (long long)d, (long long)M, (long long)(M * kBytes / 1024),
                        double(M) / (3.0 * double(d) * double(d)));
  out += "        N     Bc     Tc     Tr     standard  Algorithm 1         FA-2  std/Alg1\n";  // the columns below
  for (int64_t n : io_sizes()) {
    const IoRow r = io_row(n, d, M);
    out += fmt("  %7lld %6lld %6lld %6lld ", (long long)n, (long long)r.tiling.Bc, (long long)r.tiling.Tc,
               (long long)r.tiling.Tr) +
           mb_cell(r.standard) + " " + mb_cell(r.fa1) + " " + mb_cell(r.fa2) + fmt(" %9.4g\n", r.ratio());
  }
  return out;
}

}  // namespace flashstep::course
