#include "core/problem.h"

#include "core/checked.h"
#include "core/input_files.h"
#include "core/schedules/decode/decode.h"
#include "core/npy.h"
#include "core/schedule_registry.h"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace flashstep {

// schedule_name and parse_schedule: core/schedule_registry.cpp, from the registry's names.

Tiling make_tiling(int64_t nq, int64_t nk, int64_t d, int64_t M, int64_t br, int64_t bc) {
  if (d < 1) throw InputError("d must be at least 1 (got d = " + std::to_string(d) + ")");
  if (nq < 1) throw InputError("Nq must be at least 1 (got " + std::to_string(nq) + ")");
  if (nk < 1) throw InputError("Nk must be at least 1 (got " + std::to_string(nk) + ")");
  // The limits first, so that the arithmetic below cannot overflow (docs/limits.md).
  checked::in_range(d, 1, kMaxHeadDim, "d");
  checked::in_range(nq, 1, kMaxSeq, "Nq");
  checked::in_range(nk, 1, kMaxSeq, "Nk");
  checked::in_range(M, 0, kMaxSram, "M (SRAM elements)");
  checked::in_range(br, 0, kMaxSeq, "Br");
  checked::in_range(bc, 0, kMaxSeq, "Bc");
  if (M < 4 * d)
    throw InputError("M = " + std::to_string(M) + " elements is smaller than 4d = " +
                     std::to_string(4 * d) +
                     ": SRAM cannot hold one row each of Q_i, K_j, V_j and O_i");
  if (br < 0 || bc < 0) throw InputError("block sizes must be positive (got Br = " +
                                         std::to_string(br) + ", Bc = " + std::to_string(bc) + ")");
  Tiling t;
  t.M = M;
  const int64_t quarter_rows = checked::ceil_div(M, 4 * d, "ceil(M / 4d)");
  t.Bc = bc > 0 ? bc : quarter_rows;
  t.Br = br > 0 ? br : std::min(quarter_rows, d);
  t.overridden = br > 0 || bc > 0;
  t.tile_capacity = checked::mul(4 * d, quarter_rows, "4d * ceil(M / 4d)");  // M rounded up to whole tile rows (memory.h)
  const int64_t need = checked::mul(2 * (t.Br + t.Bc), d, "2(Br + Bc)d");
  if (need > t.tile_capacity) {
    std::ostringstream os;
    os << "block sizes Br = " << t.Br << ", Bc = " << t.Bc << " do not fit in SRAM: Q_i, O_i ("
       << t.Br << " x " << d << " each) and K_j, V_j (" << t.Bc << " x " << d
       << " each) need 2(Br + Bc)d = " << need << " elements, but M = " << M
       << " allows " << t.tile_capacity;
    throw InputError(os.str());
  }
  t.Tr = checked::ceil_div(nq, t.Br, "Tr");
  t.Tc = checked::ceil_div(nk, t.Bc, "Tc");
  return t;
}

int64_t parse_sram_size(const std::string& text) {
  // Decimal digits, then an optional unit: no sign, no spaces before the number, no hexadecimal.
  const size_t pos = std::min(text.size(), text.find_first_not_of("0123456789"));
  if (pos == 0) throw InputError("M must be a number of elements or a size like 64KiB (got '" + excerpt(text) + "')");
  if (text[pos] == '.') throw InputError("M must be a whole number of elements or of KiB (got '" + excerpt(text) + "')");
  const int64_t value = checked::parse_int(text.substr(0, pos), "M");  // "M is out of range" past int64
  std::string unit = text.substr(pos);
  for (auto& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty()) return value;
  if (unit == "kib" || unit == "k" || unit == "kb")  // float32 words
    return checked::mul(checked::in_range(value, 0, kMaxSram / 256, "M in KiB"), 256, "M");
  throw InputError("M: unknown unit '" + excerpt(text.substr(pos)) + "' (use elements, or KiB)");
}

const std::vector<std::string>& input_patterns() {
  static const std::vector<std::string> names = {"random", "uniform", "large", "ramp", "outliers"};
  return names;
}

namespace {
// splitmix64: a tiny, portable generator, so that a seed gives the same inputs everywhere.
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform01() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0,1)
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform01(), u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};
}  // namespace

Mat make_input(const std::string& pattern, int64_t rows, int64_t d, uint64_t seed, int which) {
  Mat m(rows, d);
  SplitMix64 rng{seed * 0x2545F4914F6CDD1Dull + uint64_t(which + 1) * 0x9E3779B97F4A7C15ull};
  if (pattern == "random" || pattern == "large") {
    const double amp = pattern == "large" ? 8.0 : 1.0;
    for (int64_t k = 0; k < m.size(); ++k) m.data()[k] = float(amp * rng.normal());
  } else if (pattern == "uniform") {
    for (int64_t k = 0; k < m.size(); ++k) m.data()[k] = float(2.0 * rng.uniform01() - 1.0);
  } else if (pattern == "outliers") {
    // FlashAttention-3's accuracy study: standard normal entries, and a few entries per row with
    // a large magnitude (outlier features). Here two per row (one when d < 4), +-(10 to 30) at
    // seeded columns.
    for (int64_t k = 0; k < m.size(); ++k) m.data()[k] = float(rng.normal());
    const int64_t per_row = d < 4 ? 1 : 2;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t e = 0; e < per_row; ++e) {
        const auto c = int64_t(rng.next() % uint64_t(d));
        const double mag = 10.0 + 20.0 * rng.uniform01();
        m(r, c) = float((rng.next() & 1) ? -mag : mag);
      }
  } else if (pattern == "ramp") {  // smooth, seed-independent values that read well on screen
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c)
        m(r, c) = float(std::round(100.0 * std::sin(0.7 * double(r + 1) + 1.3 * double(c + 1) +
                                                    2.1 * which)) / 100.0);
  } else {
    std::string names;
    for (auto& n : input_patterns()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("unknown input pattern '" + excerpt(pattern) + "' (expected one of: " + names + ")");
  }
  return m;
}

void check_finite(const Mat& m, const char* name) {
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t c = 0; c < m.cols(); ++c)
      if (!std::isfinite(m(r, c))) {
        std::ostringstream os;
        os << "input " << name << " has " << (std::isnan(m(r, c)) ? "NaN" : "Inf") << " at row "
           << r << ", column " << c;
        throw InputError(os.str());
      }
}

void validate_options(const AttentionOptions& o, int64_t nk) {
  const Mask& m = o.mask;
  if (m.window_left < -1 || m.window_right < -1)
    throw InputError("window sizes must be >= 0, or -1 for no limit (got " +
                     std::to_string(m.window_left) + "," + std::to_string(m.window_right) + ")");
  checked::in_range(m.window_left, -1, kMaxSeq, "window LEFT");
  checked::in_range(m.window_right, -1, kMaxSeq, "window RIGHT");
  if (m.kv_len < -1 || m.kv_len > nk)
    throw InputError("key length " + std::to_string(m.kv_len) + " is out of range 0.." +
                     std::to_string(nk) + " (or -1 for no padding)");
  // Checked as the float the schedules use: 0.99999999 rounds to 1.0f and would drop everything.
  if (!(o.dropout >= 0.0 && o.dropout < 1.0 && float(o.dropout) < 1.0f)) {
    std::ostringstream os;
    os << "dropout probability must be in [0, 1) as a float32 (got " << std::setprecision(9)
       << o.dropout << (o.dropout >= 0.0 && o.dropout < 1.0 ? ", which rounds to 1" : "") << ")";
    throw InputError(os.str());
  }
  // A kernel that rounds P~ to 16 bits for the tensor cores takes 16-bit Q, K, V: P~ rounded
  // next to float32 V and O would emulate no kernel.
  if (o.p_dtype != Dtype::fp32 && o.dtype == Dtype::fp32)
    throw InputError(std::string("--p-dtype ") + dtype_name(o.p_dtype) +
                     " emulates a tensor-core kernel, which takes 16-bit inputs: add --dtype bf16 or fp16");
  // FP8 (docs/fp8.md): P~ goes to e4m3 with the storage, never on its own; the scale and the
  // rotation belong to e4m3 storage.
  if (o.dtype == Dtype::fp8 && o.p_dtype != Dtype::fp32 && o.p_dtype != Dtype::fp8)
    throw InputError(std::string("--dtype fp8 rounds P~ to e4m3 for the P V product: drop --p-dtype ") +
                     dtype_name(o.p_dtype));
  if (o.dtype != Dtype::fp8 && o.p_dtype == Dtype::fp8)
    throw InputError("--p-dtype takes fp16 or bf16 (P~ in e4m3 comes with --dtype fp8)");
  if (o.dtype != Dtype::fp8 && o.fp8_scale != Fp8Scale::none)
    throw InputError("--fp8-scale is for --dtype fp8 (e4m3 storage with float32 scales)");
  if (o.dtype != Dtype::fp8 && o.rotate)
    throw InputError("--rotate is for --dtype fp8 (it rotates Q and K before their e4m3 quantisation)");
}

void validate_sizes(const ProblemSpec& s) {
  // make_tiling checks d, Nq, Nk, M and the overrides and names each.
  const Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
  if (s.splits != 0 && s.schedule != Schedule::decode)
    throw InputError("--splits is for --schedule decode (flash-decoding's split-KV)");
  if (s.splits != 0 && (s.splits < 1 || s.splits > t.Tc))
    throw InputError("--splits " + std::to_string(s.splits) + " is out of range 1..Tc = " +
                     std::to_string(t.Tc) + " (each split needs at least one K/V block of Bc = " +
                     std::to_string(t.Bc) + " keys)");
  if (s.page_size && s.schedule != Schedule::decode)
    throw InputError("--page-size is for --schedule decode (a paged KV cache read through a block table)");
  if (s.page_size && (*s.page_size < 1 || *s.page_size > s.nk))
    throw InputError("--page-size " + std::to_string(*s.page_size) + " is out of range 1..Nk = " +
                     std::to_string(s.nk) + " (tokens per page of the KV cache)");
  if (s.scale) checked::to_float(*s.scale, "scale");
  validate_options(s.options, s.nk);
  if (s.options.dtype == Dtype::fp8) {  // the FP8 forward (docs/fp8.md)
    if (!schedule_info(s.schedule).fp8_scale_reads)
      throw InputError(std::string("--dtype fp8 has no ") + schedule_name(s.schedule) +
                       " version: the FP8 forward runs --schedule " + fp8_schedule_names());
    if (s.options.rotate) check_rotation_dim(s.d);
  }
  if (s.options.p_dtype != Dtype::fp32 && s.schedule == Schedule::standard)
    throw InputError("--p-dtype is for the tiled schedules (fa1, fa2): standard attention already "
                     "stores P in the --dtype type");
}

std::optional<RefusedField> first_refused_field(ProblemSpec spec, const std::vector<SpecField>& fields) {
  for (const SpecField& f : fields) {
    f.add(spec);
    try {
      validate_sizes(spec);
    } catch (const InputError& e) {
      return RefusedField{f.name, e.what()};
    }
  }
  return std::nullopt;
}

Tiling spec_tiling(const ProblemSpec& s) {
  Tiling t = make_tiling(s.nq, s.nk, s.d, s.M, s.br, s.bc);
  // S: --splits, else the default for one head (core/schedules/decode/decode.h)
  if (s.schedule == Schedule::decode) {
    t.S = s.splits != 0 ? s.splits : default_splits(t.Tr, t.Tc, kDefaultSmCount);
    t.P = s.page_size.value_or(0);
  }
  return t;
}

Problem make_problem(const ProblemSpec& spec) {
  ProblemSpec s = spec;
  Problem p;
  const bool any_file = !s.q_path.empty() || !s.k_path.empty() || !s.v_path.empty();
  if (any_file) {
    if (s.q_path.empty() || s.k_path.empty() || s.v_path.empty())
      throw InputError("give all three of --q, --k and --v, or none");
    p.Q = read_npy_matrix(s.q_path);
    p.K = read_npy_matrix(s.k_path);
    p.V = read_npy_matrix(s.v_path);
    if (p.K.cols() != p.Q.cols() || p.V.cols() != p.Q.cols() || p.V.rows() != p.K.rows()) {
      std::ostringstream os;
      os << "mismatched shapes: Q is " << p.Q.rows() << " x " << p.Q.cols() << ", K is "
         << p.K.rows() << " x " << p.K.cols() << ", V is " << p.V.rows() << " x " << p.V.cols()
         << " (need Q: Nq x d, K and V: Nk x d)";
      throw InputError(os.str());
    }
    s.nq = p.Q.rows();
    s.nk = p.K.rows();
    s.d = p.Q.cols();
    p.pattern = "npy";
  }
  validate_sizes(s);
  if (!any_file) {
    p.Q = make_input(s.pattern, s.nq, s.d, s.seed, 0);
    p.K = make_input(s.pattern, s.nk, s.d, s.seed, 1);
    p.V = make_input(s.pattern, s.nk, s.d, s.seed, 2);
    p.pattern = s.pattern;
  }
  check_finite(p.Q, "Q");
  check_finite(p.K, "K");
  check_finite(p.V, "V");
  p.nq = s.nq;
  p.nk = s.nk;
  p.d = s.d;
  p.M = s.M;
  p.scale = float(s.scale ? *s.scale : 1.0 / std::sqrt(double(s.d)));
  p.schedule = s.schedule;
  p.seed = s.seed;
  p.br = s.br;
  p.bc = s.bc;
  if (s.schedule == Schedule::decode) {
    p.splits = spec_tiling(s).S;
    p.page_size = s.page_size.value_or(0);
  }
  p.mask = s.options.mask;
  p.mask.offset = s.nk - s.nq;
  p.dropout = float(s.options.dropout);
  p.dtype = s.options.dtype;
  p.p_dtype = s.options.p_dtype;
  if (p.dtype == Dtype::fp8) {  // per-tensor scales by default
    // P~ in e4m3 (scale 1) for the P V product of a tensor-core forward (fa1, fa2). Flash-decoding
    // multiplies P~ by V on CUDA cores in float32 (one query row is a GEMV, gpu/decode.cu), so
    // its P~ stays float32: rounding it to e4m3 relative to a running maximum would tie the
    // result to the order in which keys meet (the GPU's key groups are not the CPU's blocks).
    p.p_dtype = s.schedule == Schedule::decode ? Dtype::fp32 : Dtype::fp8;
    p.fp8_scale = s.options.fp8_scale == Fp8Scale::none ? Fp8Scale::per_tensor : s.options.fp8_scale;
    p.rotate = s.options.rotate;
  }
  p.bytes_per_elem = dtype_bytes(p.dtype);
  if (p.dtype == Dtype::fp16)  // the inputs are stored in HBM as fp16: they must fit
    for (const auto& [m, name] : {std::pair<const Mat*, const char*>{&p.Q, "Q"}, {&p.K, "K"}, {&p.V, "V"}})
      for (int64_t k = 0; k < m->size(); ++k)
        if (std::abs(m->data()[k]) > 65504.0f)
          throw InputError(std::string("input ") + name + " has a value beyond fp16's range (" +
                           error_value(m->data()[k]) + ") at row " + std::to_string(k / m->cols()) +
                           ", column " + std::to_string(k % m->cols()));
  return p;
}

}  // namespace flashstep
