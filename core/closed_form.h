// Closed forms for the HBM traffic of each schedule, in elements (multiply by the stored
// type's size for bytes). Derivations are in docs/algorithm.md ("HBM traffic in closed form"); the
// tests check that the simulator's counts equal these exactly. Each schedule's own forms live in
// its folder (core/schedules/fa1/fa1.h's fa1_traffic, ...) and reach the readers through the
// registry (ScheduleInfo::forward_traffic); this file holds what they share.
#pragma once
#include "core/problem.h"

#include <cstdint>

namespace flashstep {

struct TrafficForm {
  int64_t read_elems = 0, write_elems = 0;
  // Of those, the elements kept in float32 whatever the storage type: the statistics l, m,
  // L, D and the backward's dQ; the rest is in the storage type.
  int64_t read_stat_elems = 0, write_stat_elems = 0;
  int64_t read_bytes(int storage_bytes) const {
    return (read_elems - read_stat_elems) * storage_bytes + 4 * read_stat_elems;
  }
  int64_t write_bytes(int storage_bytes) const {
    return (write_elems - write_stat_elems) * storage_bytes + 4 * write_stat_elems;
  }
  // Of the rest, the elements of O (and standard attention's S, P) in the output type, which
  // differs from the input type only for fp8 (core/types.h output_dtype: O in bf16). The forward
  // forms fill these; the backward's leave them 0 (no FP8 backward).
  int64_t read_out_elems = 0, write_out_elems = 0;
  int64_t read_bytes(int in_bytes, int out_bytes) const {
    return (read_elems - read_stat_elems - read_out_elems) * in_bytes + read_out_elems * out_bytes +
           4 * read_stat_elems;
  }
  int64_t write_bytes(int in_bytes, int out_bytes) const {
    return (write_elems - write_stat_elems - write_out_elems) * in_bytes + write_out_elems * out_bytes +
           4 * write_stat_elems;
  }
};

// The closed form of the schedule a problem runs (no mask: with one, an upper bound); splits:
// decode's S (core/schedules/decode/decode.h).
TrafficForm schedule_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, int64_t Tr, int64_t Tc,
                             int64_t splits = 1);

// --dtype fp8 (docs/fp8.md): the schedule's forward form plus its scale reads (float32, one per
// Q, K or V tile loaded: ScheduleInfo::fp8_scale_reads). Bytes: read_bytes(1, 2), write_bytes(1, 2)
// (e4m3 inputs, bf16 O). Unmasked; with a mask an upper bound. InputError for a schedule without
// an FP8 forward.
TrafficForm fp8_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, const Tiling& t);

// The forward's closed form of schedule s stored as `dtype` (fp8: fp8_traffic, with the scale
// reads; t.S: decode's splits), and its bytes at that storage's sizes (fp8: e4m3 inputs and a
// bf16 O; statistics and scales float32). What `run`'s summary and the Python module print.
TrafficForm forward_form(Schedule s, Dtype dtype, int64_t nq, int64_t nk, int64_t d, const Tiling& t);
int64_t form_read_bytes(const TrafficForm& f, Dtype dtype);
int64_t form_write_bytes(const TrafficForm& f, Dtype dtype);

// The backward's closed form of the schedule a problem runs (derived in docs/backward.md; no
// mask: with one, an upper bound); a forward-only schedule: all zero.
TrafficForm schedule_backward_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, int64_t Tr,
                                      int64_t Tc);

// Theorem 2's orders with unit constants: N^2 d^2 / M and N d + N^2 (N = Nq for the N^2 terms
// of the rows, Nk for the columns: we use Nq*Nk for N^2).
double theorem2_flash(int64_t nq, int64_t nk, int64_t d, int64_t M);
double theorem2_standard(int64_t nq, int64_t nk, int64_t d);
// Theorem 5 (the backward) has the same orders: Theta(N^2 d^2 / M) against Theta(N d + N^2).
inline double theorem5_flash(int64_t nq, int64_t nk, int64_t d, int64_t M) { return theorem2_flash(nq, nk, d, M); }
inline double theorem5_standard(int64_t nq, int64_t nk, int64_t d) { return theorem2_standard(nq, nk, d); }

}  // namespace flashstep
