#include "core/closed_form.h"

#include "core/checked.h"
#include "core/schedule_registry.h"

namespace flashstep {

// Each form is first estimated in doubles, in bytes: Nq, Nk, d and Tc are each within their
// limits, but their product need not be, and then the caller gets an InputError.
using checked::fits_int64;

TrafficForm fa1_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  fits_int64(2.0 * double(nk) * double(d) + double(Tc) * double(nq) * (2.0 * double(d) + 2.0) * 4.0, "Algorithm 1's HBM traffic");
  TrafficForm f;
  f.read_elems = 2 * nk * d + Tc * nq * (2 * d + 2);
  f.write_elems = nq * (d + 2) + Tc * nq * (d + 2);
  f.read_stat_elems = Tc * nq * 2;
  f.write_stat_elems = nq * 2 + Tc * nq * 2;
  f.read_out_elems = Tc * nq * d;              // O_i at L8
  f.write_out_elems = nq * d + Tc * nq * d;    // O at L2, O_i at L12
  return f;
}

TrafficForm fa2_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tr) {
  fits_int64((double(nq) * double(d) + double(Tr) * 2.0 * double(nk) * double(d)) * 4.0, "FlashAttention-2's HBM traffic");
  TrafficForm f;
  f.read_elems = nq * d + Tr * 2 * nk * d;
  f.write_elems = nq * d + nq;
  f.write_stat_elems = nq;
  f.write_out_elems = nq * d;
  return f;
}

TrafficForm standard_traffic(int64_t nq, int64_t nk, int64_t d) {
  fits_int64((double(nq + nk) * double(d) + 3.0 * double(nq) * double(nk)) * 4.0, "standard attention's HBM traffic");
  TrafficForm f;
  f.read_elems = (nq * d + nk * d) + nq * nk + (nq * nk + nk * d);
  f.write_elems = nq * nk + nq * nk + nq * d;
  f.read_out_elems = 2 * nq * nk;   // S, P: stored at the output type as O is
  f.write_out_elems = 2 * nq * nk + nq * d;
  return f;
}

static Tiling blocks(int64_t Tr, int64_t Tc) {
  Tiling t;
  t.Tr = Tr;
  t.Tc = Tc;
  return t;
}

TrafficForm schedule_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, int64_t Tr, int64_t Tc,
                             int64_t splits) {
  Tiling t = blocks(Tr, Tc);
  t.S = splits;
  return schedule_info(s).forward_traffic(nq, nk, d, t);
}

TrafficForm fa1_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  TrafficForm f;
  f.read_elems = 2 * nk * d + Tc * nq * (4 * d + 2);
  f.write_elems = (nq + 2 * nk) * d + Tc * nq * d + 2 * nk * d;
  f.read_stat_elems = Tc * nq * (d + 2);   // dQ_i, l_i, m_i
  f.write_stat_elems = nq * d + Tc * nq * d;  // dQ
  return f;
}

TrafficForm fa2_backward_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tc) {
  TrafficForm f;
  f.read_elems = 2 * nq * d + 2 * nk * d + Tc * nq * (2 * d + 2) + Tc * nq * d;
  f.write_elems = nq * d + nq + Tc * nq * d + 2 * nk * d;
  f.read_stat_elems = Tc * nq * 2 + Tc * nq * d;  // L_i, D_i; dQ_i
  f.write_stat_elems = nq * d + nq + Tc * nq * d;  // dQ, D
  return f;
}

TrafficForm standard_backward_traffic(int64_t nq, int64_t nk, int64_t d) {
  TrafficForm f;
  f.read_elems = 5 * nq * nk + 3 * nq * d + 2 * nk * d;
  f.write_elems = 2 * nq * nk + nq * d + 2 * nk * d;
  f.write_stat_elems = nq * d;  // dQ
  return f;
}

TrafficForm fp8_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  const ScheduleInfo& info = schedule_info(s);
  if (!info.fp8_scale_reads) throw InputError(std::string("--dtype fp8 has no ") + info.name + " version");
  TrafficForm f = info.forward_traffic(nq, nk, d, t);
  const int64_t scales = info.fp8_scale_reads(t);
  f.read_elems += scales;
  f.read_stat_elems += scales;
  return f;
}

TrafficForm schedule_backward_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, int64_t Tr,
                                      int64_t Tc) {
  const ScheduleInfo& info = schedule_info(s);
  if (!has_backward(info)) return {};  // a forward-only schedule (decode): nothing to count
  return info.backward_traffic(nq, nk, d, blocks(Tr, Tc));
}

double theorem2_flash(int64_t nq, int64_t nk, int64_t d, int64_t M) {
  return double(nq) * double(nk) * double(d) * double(d) / double(M);
}

double theorem2_standard(int64_t nq, int64_t nk, int64_t d) {
  return double(nq + nk) * double(d) + double(nq) * double(nk);
}

}  // namespace flashstep
