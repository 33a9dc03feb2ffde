// What the schedules' closed forms share: the lookup through the registry, FP8's scale reads,
// Theorem 2's orders. Each schedule's own forms are in its folder (core/schedules/NAME/).
#include "core/closed_form.h"

#include "core/schedule_registry.h"

namespace flashstep {

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

TrafficForm fp8_traffic(Schedule s, int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  const ScheduleInfo& info = schedule_info(s);
  if (!info.fp8_scale_reads) throw InputError(std::string("--dtype fp8 has no ") + info.name + " version");
  TrafficForm f = info.forward_traffic(nq, nk, d, t);
  const int64_t scales = info.fp8_scale_reads(t);
  f.read_elems += scales;
  f.read_stat_elems += scales;
  return f;
}

TrafficForm forward_form(Schedule s, Dtype dtype, int64_t nq, int64_t nk, int64_t d, const Tiling& t) {
  return dtype == Dtype::fp8 ? fp8_traffic(s, nq, nk, d, t) : schedule_info(s).forward_traffic(nq, nk, d, t);
}

int64_t form_read_bytes(const TrafficForm& f, Dtype dtype) {
  return f.read_bytes(dtype_bytes(dtype), dtype_bytes(output_dtype(dtype)));
}

int64_t form_write_bytes(const TrafficForm& f, Dtype dtype) {
  return f.write_bytes(dtype_bytes(dtype), dtype_bytes(output_dtype(dtype)));
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
