#include "core/work.h"

#include "core/closed_form.h"
#include "core/schedules/decode/decode.h"
#include "core/schedule_registry.h"

#include <cfloat>
#include <cmath>
#include <sstream>

namespace flashstep {

// The simulator's cost per block pair beyond the arithmetic (tiles copied in and out of the
// memory model, statistics, steps), in FLOP-equivalents: `run --n 2000 --d 1 --M 4` (4e6 pairs
// of 1 x 1 blocks) takes 1.1 s of CPU, 265 ns a pair, and `run --n 4096 --d 64 --M 16384`
// (4.46 GFLOP) 1.8 s, 2.5 GFLOP/s: 265 ns is about 660 FLOPs.
static constexpr double kPairOverheadFlops = 700;
// The L2 model's cost per 128-byte line replayed, in the same FLOP-equivalents: `run --n 1024
// --d 64 --gpu h200 --heads 64` took 11.4 s of CPU against 0.34 s for one head, 0.176 s a head
// of 1.61e6 lines: 109 ns a line, about 275 FLOPs at 2.5 GFLOP/s.
static constexpr double kL2LineFlops = 275;

void add_backward_work(WorkEstimate& w) {
  w.gflop *= 3.5;
  w.block_pairs *= 3;
}

WorkEstimate estimate_work(int64_t nq, int64_t nk, int64_t d, const Tiling& t, Schedule s, int bytes_per_elem) {
  WorkEstimate w;
  const double Nq = double(nq), Nk = double(nk), D = double(d), f = double(bytes_per_elem);
  const ScheduleInfo& info = schedule_info(s);
  w.block_pairs = info.work_blocks(t);
  // 2 Nq Nk d for S = QK^T, 2 Nq Nk d for PV, a few per score for the softmax.
  w.gflop = (4.0 * Nq * Nk * D + 8.0 * Nq * Nk + kPairOverheadFlops * w.block_pairs) / 1e9;
  w.hbm_bytes = 2 * (Nq * D + 2 * Nk * D) * f + 2 * (Nq * D + 2 * Nq) * f;
  w.hbm_bytes += info.nn_matrices_forward * Nq * Nk * f;  // S and P (standard attention)
  // Flash-decoding's S partials O_i^(s) and lse_i^(s): S x Nq x (d + 1) float32 values.
  if (schedule_splits_kv(s) && t.S > 1) w.hbm_bytes += double(t.S) * Nq * (D + 1) * 4;
  return w;
}

void add_l2_replay_work(WorkEstimate& w, Schedule s, int64_t nq, int64_t nk, int64_t d, const Tiling& t,
                        int bytes_per_elem, int64_t heads) {
  const TrafficForm f = schedule_traffic(s, nq, nk, d, t.Tr, t.Tc);
  const double lines = (double(f.read_bytes(bytes_per_elem)) + double(f.write_bytes(bytes_per_elem))) / 128.0;
  w.gflop += double(heads) * lines * kL2LineFlops / 1e9;
}

void check_work(const WorkEstimate& w, const WorkLimits& lim) {
  std::ostringstream os;
  os.precision(3);
  if (w.hbm_bytes > lim.max_hbm_bytes) {
    os << "the simulated HBM would need about " << w.hbm_bytes / double(1 << 20) << " MiB (limit "
       << lim.max_hbm_bytes / double(1 << 20) << " MiB); use smaller sizes";
    throw InputError(os.str());
  }
  if (w.gflop > lim.max_gflop) {
    os << "this run is about " << w.gflop << " GFLOP of simulated work (" << w.block_pairs
       << " blocks; limit " << lim.max_gflop << " GFLOP, several minutes or more); use smaller "
       << "sizes or larger blocks, or raise --max-gflop";
    throw InputError(os.str());
  }
}

void check_result_finite(const Trace& t) {
  const Problem& p = t.problem;
  for (int64_t r = 0; r < t.O.rows(); ++r) {
    const float lse = r < t.lse.size() ? t.lse(r) : 0.0f;
    const bool row_empty = p.mask.lo(r) > p.mask.hi(r, p.nk);  // keeps no key: lse = -inf is right
    bool ok = std::isfinite(lse) || (row_empty && lse == -INFINITY);
    for (int64_t c = 0; ok && c < t.O.cols(); ++c) ok = std::isfinite(t.O(r, c));
    if (!ok) {
      std::ostringstream os;
      os << "the result overflows float32 at query row " << r << " (O or lse is "
         << (std::isnan(lse) ? "NaN" : "not finite") << "): the scores tau q.k (tau = " << p.scale
         << ") or the sums of P V leave float32's range (|x| <= " << FLT_MAX << ")"
         << (p.dtype != Dtype::fp32 ? std::string(" or that of ") + dtype_name(p.dtype) + " storage" : "")
         << "; scale the inputs or tau down";
      throw InputError(os.str());
    }
  }
}

}  // namespace flashstep
