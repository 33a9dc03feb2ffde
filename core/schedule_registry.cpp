// The registry's list: one line per schedule. A new schedule adds its ScheduleInfo (in its own
// folder, core/schedules/NAME/schedule.cpp) here and a value to the Schedule enum (core/problem.h).
#include "core/schedule_registry.h"

#include "core/input_files.h"

#include "core/schedules/common.h"

#include <stdexcept>

namespace flashstep {

extern const ScheduleInfo kFa1Schedule;       // core/schedules/fa1/schedule.cpp
extern const ScheduleInfo kFa2Schedule;       // core/schedules/fa2/schedule.cpp
extern const ScheduleInfo kStandardSchedule;  // core/schedules/standard/schedule.cpp
extern const ScheduleInfo kDecodeSchedule;    // core/schedules/decode/schedule.cpp

const std::vector<const ScheduleInfo*>& schedules() {
  static const std::vector<const ScheduleInfo*> all = {&kFa1Schedule, &kFa2Schedule, &kStandardSchedule,
                                                               &kDecodeSchedule};
  return all;
}

const ScheduleInfo& schedule_info(Schedule s) {
  for (const ScheduleInfo* i : schedules())
    if (i->id == s) return *i;
  throw std::logic_error("schedule " + std::to_string(int(s)) + " is not in the registry");
}

const ScheduleInfo& baseline_schedule() {
  for (const ScheduleInfo* i : schedules())
    if (i->baseline) return *i;
  throw std::logic_error("the registry has no baseline schedule");
}

int schedule_index(Schedule s) {
  const auto& all = schedules();
  for (size_t k = 0; k < all.size(); ++k)
    if (all[k]->id == s) return int(k);
  return 0;
}

std::string schedule_names(const char* last_sep) {
  const auto& all = schedules();
  std::string out;
  for (size_t k = 0; k < all.size(); ++k) {
    if (k > 0) out += k + 1 == all.size() ? last_sep : ", ";
    out += all[k]->name;
  }
  return out;
}

MissingPath missing_path(const ScheduleInfo& s, Dtype dt, bool backward) {
  if (backward && !has_backward(s)) return MissingPath::backward;
  if (dt == Dtype::fp8 && !s.fp8_scale_reads) return MissingPath::fp8_version;
  if (backward && dt == Dtype::fp8) return MissingPath::fp8_backward;
  return MissingPath::none;
}

std::string fp8_schedule_names() {
  std::vector<const char*> names;
  for (const ScheduleInfo* i : schedules())
    if (i->fp8_scale_reads) names.push_back(i->name);
  std::string out;
  for (size_t k = 0; k < names.size(); ++k) out += std::string(k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
  return out;
}

const char* schedule_name(Schedule s) { return schedule_info(s).name; }

Schedule parse_schedule(const std::string& name) {
  for (const ScheduleInfo* i : schedules())
    if (name == i->name) return i->id;
  throw InputError("unknown schedule '" + excerpt(name) + "' (expected " + schedule_names() + ")");
}

size_t tiled_backward_trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = sizeof(float);
  const size_t Tr = size_t(t.Tr), Tc = size_t(t.Tc), pairs = Tr * Tc;
  const size_t w = sizeof(HbmWrite) + kAllocOverhead;
  const size_t dropout = p.dropout > 0 ? 2 * nq * nk * f : 0;  // keep masks and P^dropped tiles
  const size_t steps = schedule_info(p.schedule).backward_steps(t) * sizeof(Step);
  return steps + 5 * nq * nk * f + 2 * Tr * nk * d * f + Tc * nq * (d + 1) * f +
         pairs * (8 * kAllocOverhead + w) + dropout + (nq + 4 * nk) * d * f + (2 * Tc + 4 + Tr) * w;
}

}  // namespace flashstep
