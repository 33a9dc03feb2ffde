// Basic types shared by every part of flashstep's core.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace flashstep {

// Row-major so that a block of rows (Q_i, K_j, O_i) is one contiguous span, as in HBM.
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXf;
using VecD = Eigen::VectorXd;

// Every problem with what the user gave us (sizes, files, options) is an InputError:
// the command line prints its message as one line and exits non-zero.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace flashstep
