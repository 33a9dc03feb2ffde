#include "core/snapshot_spec.h"

#include <cmath>

namespace flashstep {

ProblemSpec snapshot_spec(const SnapshotProblem& p) {
  ProblemSpec s = sizes_spec(p.nq, p.nk, p.d, p.M);
  const Tiling paper = make_tiling(p.nq, p.nk, p.d, p.M);
  if (paper.Br != p.Br || paper.Bc != p.Bc) {
    s.br = p.Br;
    s.bc = p.Bc;
  }
  s.schedule = p.schedule;
  s.seed = p.seed;
  s.pattern = p.pattern;
  if (float(p.scale) != float(1.0 / std::sqrt(double(p.d)))) s.scale = p.scale;
  s.options.mask = p.mask;
  s.options.dropout = p.dropout;
  s.options.dtype = p.dtype;
  s.options.p_dtype = p.p_dtype;
  return s;
}

}  // namespace flashstep
