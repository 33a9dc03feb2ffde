// The benchmark files the figures are tested on: the shipped H200 file and the results folder.
#pragma once
#include <string>

namespace fstest {

inline const std::string kBench = FLASHSTEP_BENCH_FILE;
inline const std::string kResults = FLASHSTEP_RESULTS_DIR;

}  // namespace fstest
