// Small helpers shared by the core tests.
#pragma once
#include "tests/cli_helpers.h"
#include "core/npy.h"
#include "core/problem.h"
#include "core/run.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace fstest {

inline std::string golden(const std::string& name) { return std::string(FLASHSTEP_GOLDEN_DIR) + "/" + name; }

// A spec reading a golden case's Q, K, V (tests/golden/NAME.{q,k,v}.npy) with scale tau.
inline flashstep::ProblemSpec golden_spec(const std::string& name, double scale) {
  flashstep::ProblemSpec s;
  s.q_path = fstest::golden(name + ".q.npy");
  s.k_path = fstest::golden(name + ".k.npy");
  s.v_path = fstest::golden(name + ".v.npy");
  s.scale = scale;
  s.d = flashstep::read_npy_matrix(s.q_path).cols();
  return s;
}

// core's run_spec with recording on or off.
inline flashstep::Trace run_spec(const flashstep::ProblemSpec& s, bool record = true) {
  flashstep::RunOptions opt;
  opt.record = record;
  return flashstep::run_spec(s, opt);
}

// A .npy file with the given header text (padded as NumPy pads it) and payload, for the
// bad-file cases.
inline void write_npy_text(const std::filesystem::path& path, const std::string& header_text, const std::string& payload) {
  std::string header = header_text;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(header.size() & 0xff));
  out.put(char(header.size() >> 8));
  out << header << payload;
}

// The whole numbers printed on the first line of `text` that contains `label`, after the label,
// in order; numbers with a decimal point ("12.06 KiB") are left out.
inline std::vector<long long> numbers_after(const std::string& text, const std::string& label) {
  std::vector<long long> out;
  const size_t at = text.find(label);
  if (at == std::string::npos) return out;
  const size_t end = std::min(text.find('\n', at), text.size());
  for (size_t k = at + label.size(); k < end;) {
    if (!std::isdigit(static_cast<unsigned char>(text[k]))) {
      ++k;
      continue;
    }
    size_t e = k;
    while (e < end && std::isdigit(static_cast<unsigned char>(text[e]))) ++e;
    const bool decimal = (e < end && text[e] == '.') || (k > 0 && text[k - 1] == '.');
    if (!decimal) out.push_back(std::stoll(text.substr(k, e - k)) * (k > 0 && text[k - 1] == '-' ? -1 : 1));
    while (e < end && (std::isdigit(static_cast<unsigned char>(text[e])) || text[e] == '.')) ++e;
    k = e;
  }
  return out;
}

// A seed for fresh random inputs, different in every run.
inline uint64_t fresh_seed() {
  static std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace fstest
