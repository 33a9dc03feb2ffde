// NumPy's .npy format: magic "\x93NUMPY", version, header length, a Python-dict header
// ({'descr': '<f4', 'fortran_order': False, 'shape': (R, C), }), then the raw data.
#include "core/npy.h"

#include "core/export.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace flashstep {

static std::string header_value(const std::string& header, const std::string& key,
                                const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw InputError(path + ": .npy header has no '" + key + "'");
  const size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw InputError(path + ": malformed .npy header");
  size_t start = header.find_first_not_of(" ", colon + 1);
  size_t stop;
  if (header[start] == '(') {
    stop = header.find(')', start);
    if (stop == std::string::npos) throw InputError(path + ": malformed .npy shape");
    return header.substr(start + 1, stop - start - 1);
  }
  stop = header.find_first_of(",}", start);
  std::string v = header.substr(start, stop - start);
  while (!v.empty() && (v.back() == ' ')) v.pop_back();
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
  return v;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw InputError(path + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = size_t(static_cast<unsigned char>(bytes[8])) |
                 size_t(static_cast<unsigned char>(bytes[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(path + ": truncated .npy header");
    header_len = 0;
    for (int b = 0; b < 4; ++b) header_len |= size_t(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    offset = 12;
  } else {
    throw InputError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < offset + header_len) throw InputError(path + ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  offset += header_len;

  const std::string descr = header_value(header, "descr", path);
  size_t item;
  if (descr == "<f4" || descr == "=f4") item = 4;
  else if (descr == "<f8" || descr == "=f8") item = 8;
  else throw InputError(path + ": dtype '" + descr + "' not supported (need float32 or float64, little-endian)");
  if (header_value(header, "fortran_order", path) != "False")
    throw InputError(path + ": Fortran-order arrays are not supported (save with C order)");

  NpyArray a;
  std::stringstream shape(header_value(header, "shape", path));
  std::string dim;
  size_t count = 1;
  while (std::getline(shape, dim, ',')) {
    if (dim.find_first_not_of(" ") == std::string::npos) continue;
    long long n = 0;
    try {
      n = std::stoll(dim);
    } catch (const std::exception&) {
      throw InputError(path + ": malformed .npy shape");
    }
    if (n < 0) throw InputError(path + ": negative dimension in .npy shape");
    a.shape.push_back(n);
    count *= size_t(n);
  }
  const size_t need = count * item, have = bytes.size() - offset;
  if (have < need)
    throw InputError(path + ": truncated: shape needs " + std::to_string(need) +
                     " bytes of data, file has " + std::to_string(have));
  a.data.resize(count);
  const char* p = bytes.data() + offset;
  if (item == 4) {
    std::memcpy(a.data.data(), p, need);
  } else {
    for (size_t k = 0; k < count; ++k) {
      double v;
      std::memcpy(&v, p + 8 * k, 8);
      a.data[k] = float(v);
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

void write_npy(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  std::string dims;
  size_t count = 1;
  for (auto n : shape) {
    dims += std::to_string(n) + ",";
    count *= size_t(n);
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
  out.append(reinterpret_cast<const char*>(data), count * sizeof(float));
  write_file_atomic(path, out);
}

void write_npy(const std::string& path, const Mat& m) {
  write_npy(path, m.data(), {int64_t(m.rows()), int64_t(m.cols())});
}

void write_npy(const std::string& path, const Vec& v) {
  write_npy(path, v.data(), {int64_t(v.size())});
}

}  // namespace flashstep
