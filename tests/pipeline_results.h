// The tests' own reader of the H200's forward results (flashstep_tc_bench's table, as in
// gpu/results/fa3/bench.txt): the oracle for the figures the pipeline model's readers show, kept
// apart from app/pipeline_measured.cpp's parser. Returns 0 when the file has no such line.
#pragma once
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fstest {

// The TFLOP/s of configuration `config` at (d, N, causal), bf16: the last line of that key.
inline double bench_txt_tflops(const std::string& path, int config, int64_t d, int64_t n, bool causal) {
  std::ifstream in(path);
  double found = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<std::string> t;
    for (std::string w; ls >> w;) t.push_back(w);
    // bf16  128  4096  no  fa2 tc  42  0.422  651.8  0.00
    if (t.size() != 10 || t[0] != "bf16") continue;
    if (t[1] == std::to_string(d) && t[2] == std::to_string(n) && t[3] == (causal ? "yes" : "no") &&
        t[6] == std::to_string(config))
      found = std::stod(t[8]);
  }
  return found;
}

}  // namespace fstest
