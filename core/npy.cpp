// NumPy's .npy format: magic "\x93NUMPY", version, header length, a Python-dict header
// ({'descr': '<f4', 'fortran_order': False, 'shape': (R, C), }), then the raw data.
// The header is parsed strictly (NumPy writes exactly this literal), and the file's size must
// be exactly what the shape needs, compared before anything is allocated.
#include "core/npy.h"

#include "core/checked.h"
#include "core/input_files.h"
#include "core/output_files.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep {

namespace {

// A Python dict literal with exactly the keys 'descr' (a string), 'fortran_order' (True or
// False) and 'shape' (a tuple of non-negative decimal integers), as NumPy writes it.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !have_descr) {
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected or repeated key '" + excerpt(key) + "' (need exactly 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (peek() == ',') ++pos_;
      else if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) fail("text after the header's closing '}'");
    if (!have_descr || !have_order || !have_shape)
      fail(std::string("missing '") + (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(path_ + ": malformed .npy header at byte " + std::to_string(pos_) + ": " + why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(pos_ + 1, end - pos_ - 1);
    if (v.find('\\') != std::string::npos) fail("escapes are not supported in strings");
    pos_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_ws();
    for (const char* word : {"True", "False"})
      if (s_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return word[0] == 'T';
      }
    fail("fortran_order must be True or False");
  }
  int64_t integer() {
    skip_ws();
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ == start) fail("a dimension must be a non-negative decimal integer");
    const std::string digits = s_.substr(start, pos_ - start);
    // NumPy writes no leading zero; Python 3 refuses "08" as a literal, and Python 2 read "010" as octal 8.
    if (digits.size() > 1 && digits[0] == '0')
      fail("dimension " + excerpt(digits) + " has a leading zero (a dimension is a decimal integer as NumPy writes it)");
    if (digits.size() > 19) fail("dimension " + digits + " is too large");
    try {
      return checked::parse_int(digits, "a .npy dimension");
    } catch (const InputError&) {
      fail("dimension " + digits + " is too large");
    }
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    skip_ws();
    while (peek() != ')') {
      if (int64_t(dims.size()) == kMaxNpyDims) fail("more than " + std::to_string(kMaxNpyDims) + " dimensions");
      dims.push_back(integer());
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

// Reads exactly n bytes at the file's current offset.
void read_exact(int fd, char* dst, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::read(fd, dst, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw InputError(path + ": read failed" + (got < 0 ? std::string(": ") + std::strerror(errno) : ""));
    dst += got;
    n -= size_t(got);
  }
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// Element k of a C-order array of this shape as "(i, j, ...)", as NumPy indexes it.
std::string index_text(const std::vector<int64_t>& shape, size_t k) {
  std::vector<size_t> idx(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    idx[a] = k % size_t(shape[a]);
    k /= size_t(shape[a]);
  }
  std::string t = "(";
  for (size_t a = 0; a < idx.size(); ++a) t += (a ? ", " : "") + std::to_string(idx[a]);
  return t + (idx.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open file: " + std::strerror(errno));
  Fd guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw InputError(path + ": cannot stat file");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file (" + file_kind(st.st_mode) + ")");
  const size_t size = size_t(st.st_size);
  char pre[12];
  if (size < 10) throw InputError(path + ": not a .npy file (bad magic)");
  read_exact(fd, pre, 10, path);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) throw InputError(path + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(pre[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = size_t(static_cast<unsigned char>(pre[8])) | size_t(static_cast<unsigned char>(pre[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw InputError(path + ": truncated .npy header");
    read_exact(fd, pre + 10, 2, path);
    header_len = 0;
    for (int b = 0; b < 4; ++b) header_len |= size_t(static_cast<unsigned char>(pre[8 + b])) << (8 * b);
    offset = 12;
  } else {
    throw InputError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (size - offset < header_len) throw InputError(path + ": truncated .npy header");
  std::string header(header_len, '\0');
  read_exact(fd, header.data(), header_len, path);
  offset += header_len;

  std::string descr;
  bool fortran = false;
  NpyArray a;
  HeaderParser(header, path).parse(descr, fortran, a.shape);
  size_t item;
  if (descr == "<f4" || descr == "=f4") item = 4;
  else if (descr == "<f8" || descr == "=f8") item = 8;
  else throw InputError(path + ": dtype '" + excerpt(descr) + "' not supported (need float32 or float64, little-endian)");
  if (fortran) throw InputError(path + ": Fortran-order arrays are not supported (save with C order)");

  size_t count = 1;
  for (int64_t n : a.shape) count = checked::mul(count, size_t(n), (path + ": the .npy element count").c_str());
  const size_t need = checked::mul(count, item, (path + ": the .npy data size in bytes").c_str()), have = size - offset;
  if (have < need)
    throw InputError(path + ": truncated: shape needs " + std::to_string(need) +
                     " bytes of data, file has " + std::to_string(have));
  if (have > need)  // a wrong shape or a file with something appended: either way not this array
    throw InputError(path + ": shape needs " + std::to_string(need) + " bytes of data, file has " +
                     std::to_string(have) + " (more than its shape holds)");
  a.data.resize(count);
  if (count == 0) return a;  // nothing to copy (and data() may be null)
  if (item == 4) {
    read_exact(fd, reinterpret_cast<char*>(a.data.data()), need, path);
  } else {
    std::vector<double> wide(count);
    read_exact(fd, reinterpret_cast<char*>(wide.data()), need, path);
    for (size_t k = 0; k < count; ++k) {
      a.data[k] = float(wide[k]);
      // Finite in float64, Inf in float32: the value is out of range, not an Inf in the file.
      if (std::isinf(a.data[k]) && std::isfinite(wide[k])) {
        throw InputError(path + ": the value " + error_value(wide[k]) + " at index " + index_text(a.shape, k) +
                         " is beyond float32's range (+-3.40282e+38; inputs are read as float32)");
      }
    }
  }
  return a;
}

Mat read_npy_matrix(const std::string& path) {
  NpyArray a = read_npy(path);
  std::vector<int64_t> s = a.shape;
  if (s.size() == 4 && s[0] == 1 && s[1] == 1) s = {s[2], s[3]};
  if (s.size() != 2) {
    std::string dims;
    for (auto n : a.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(n);
    throw InputError(path + ": expected a 2-D array (rows, d), got shape (" + dims + ")");
  }
  if (s[0] == 0 || s[1] == 0) throw InputError(path + ": array is empty");
  Mat m(s[0], s[1]);
  std::memcpy(m.data(), a.data.data(), a.data.size() * sizeof(float));
  return m;
}

std::string npy_bytes(const float* data, const std::vector<int64_t>& shape) {
  std::string dims;
  size_t count = 1;
  for (auto n : shape) {
    dims += std::to_string(n) + ",";
    count = checked::mul(count, size_t(n), "the .npy element count");
  }
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  if (count > 0) out.append(reinterpret_cast<const char*>(data), count * sizeof(float));
  return out;
}

void write_npy(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  write_file_atomic(path, npy_bytes(data, shape));
}

void write_npy(const std::string& path, const Mat& m) {
  write_npy(path, m.data(), {int64_t(m.rows()), int64_t(m.cols())});
}

void write_npy(const std::string& path, const Vec& v) {
  write_npy(path, v.data(), {int64_t(v.size())});
}

}  // namespace flashstep
