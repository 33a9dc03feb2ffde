#include "core/export.h"

#include <sstream>

namespace flashstep {

using nlohmann::json;

static json vec_json(const Vec& v) {
  json a = json::array();
  for (int64_t k = 0; k < v.size(); ++k) {
    const float x = v(k);
    if (std::isfinite(x)) a.push_back(x);
    else a.push_back(x < 0 ? "-inf" : (x > 0 ? "inf" : "nan"));  // JSON has no infinities
  }
  return a;
}

static json problem_json(const Trace& t) {
  const Problem& p = t.problem;
  json pj = {{"nq", p.nq},         {"nk", p.nk},          {"d", p.d},
          {"M", p.M},           {"Br", t.tiling.Br},   {"Bc", t.tiling.Bc},
          {"Tr", t.tiling.Tr},  {"Tc", t.tiling.Tc},   {"scale", p.scale},
          {"schedule", schedule_name(p.schedule)},    {"dtype", dtype_name(p.dtype)},
          {"p_dtype", dtype_name(p.p_dtype)},
          {"seed", p.seed},     {"pattern", p.pattern}, {"bytes_per_elem", p.bytes_per_elem},
          {"backward", t.has_backward}};
  if (p.schedule == Schedule::decode) pj["splits"] = p.splits;
  if (p.page_size > 0) pj["page_size"] = p.page_size;  // decode's paged KV cache (core/paged_kv.h)
  if (p.dtype == Dtype::fp8) {  // docs/fp8.md
    pj["fp8_scale"] = fp8_scale_name(p.fp8_scale);
    pj["rotate"] = p.rotate;
  }
  return pj;
}

static json totals_json(const Totals& T) {
  json totals = {{"hbm_read_bytes", T.hbm_read_bytes},   {"hbm_write_bytes", T.hbm_write_bytes},
                 {"flops", T.flops},                     {"peak_sram_bytes", T.peak_sram_bytes},
                 {"peak_tile_bytes", T.peak_tile_bytes}, {"steps", T.steps},
                 {"dram_read_bytes", T.dram_read_bytes}, {"dram_write_bytes", T.dram_write_bytes}};
  if (T.l2.enabled)
    totals["l2"] = {{"bytes", T.l2.config.bytes},
                    {"gpu", T.l2.config.gpu},
                    {"heads", T.l2.config.heads},
                    {"line_bytes", L2Config::kLineBytes},
                    {"blocks_per_sm", T.l2.plan.blocks_per_sm},
                    {"slots", T.l2.plan.slots},
                    {"hit_bytes", T.l2.hit_bytes},
                    {"final_writeback_bytes", T.l2.final_writeback_bytes},
                    {"all_heads_dram_read_bytes", T.l2.all_heads_read_bytes},
                    {"all_heads_dram_write_bytes", T.l2.all_heads_write_bytes}};
  if (T.l2.enabled && T.l2.config.ncu) {
    totals["l2"]["ncu_dram_read_bytes"] = T.l2.ncu_read_bytes;
    totals["l2"]["ncu_dram_write_bytes"] = T.l2.ncu_write_bytes;
  }
  return totals;
}

// Each pass's own totals; the backward's steps start at first_step.
static json phases_json(const Trace& t) {
  json ph = {{"forward", totals_json(t.has_backward ? t.forward_totals : t.totals)}};
  ph["forward"]["first_step"] = 0;
  if (t.has_backward) {
    ph["backward"] = totals_json(t.backward_totals);
    ph["backward"]["first_step"] = t.backward_first_step;
  }
  return ph;
}

json trace_to_json(const Trace& t) {
  json steps = json::array();
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step& s = t.steps[k];
    json sram = json::object();
    for (int sl = 0; sl < kSlots; ++sl)
      if (s.sram_elems[sl] > 0)
        sram[slot_name(Slot(sl))] = s.sram_elems[sl] * slot_elem_bytes(Slot(sl), t.problem.bytes_per_elem);
    json st = {{"index", k},
               {"line", line_number(s.line)},
               {"label", line_label(s.line)},
               {"i", s.i},
               {"j", s.j},
               {"text", t.explain(k)},
               {"hbm_read_bytes", s.hbm_read},
               {"hbm_write_bytes", s.hbm_write},
               {"hbm_read_total", s.hbm_read_total},
               {"hbm_write_total", s.hbm_write_total},
               {"dram_read_bytes", s.dram_read},
               {"dram_write_bytes", s.dram_write},
               {"dram_read_total", s.dram_read_total},
               {"dram_write_total", s.dram_write_total},
               {"flops", s.flops},
               {"sram_bytes", s.sram_bytes},
               {"sram", sram}};
    json values = json::object();
    if (s.m_tilde.size()) values["m_tilde"] = vec_json(s.m_tilde);
    if (s.l_tilde.size()) values["l_tilde"] = vec_json(s.l_tilde);
    if (s.m_old.size()) {
      values["m_old"] = vec_json(s.m_old);
      values["l_old"] = vec_json(s.l_old);
      values["m_new"] = vec_json(s.m_new);
      values["l_new"] = vec_json(s.l_new);
      values["alpha"] = vec_json(s.alpha);
      values["beta"] = vec_json(s.beta);
    } else if (s.m_new.size()) {  // decode's FD L17: max_s lse^(s) (m_tilde) and lse (m_new)
      values["m_new"] = vec_json(s.m_new);
    }
    if (s.split >= 0) st["split"] = s.split;  // decode: the split the step works for
    if (!s.pages.empty()) st["pages"] = s.pages;  // a paged load: physical page per logical page
    if (s.fp8_scale_b > 0)  // --dtype fp8: the scales the line applied, its largest rounding error
      st["fp8"] = {{"scales", {s.fp8_scale_a, s.fp8_scale_b}}, {"max_error", s.fp8_error}};
    if (t.totals.l2.enabled) {
      st["l2_hit_total"] = s.l2_hit_total;
      st["l2_lines"] = s.l2_lines;
      st["l2_dirty_lines"] = s.l2_dirty_lines;
    }
    if (s.D_i.size()) values["D_i"] = vec_json(s.D_i);
    if (!values.empty()) st["values"] = values;
    steps.push_back(std::move(st));
  }
  return {{"problem", problem_json(t)}, {"steps", steps}, {"totals", totals_json(t.totals)},
          {"phases", phases_json(t)}};
}

std::string trace_to_csv(const Trace& t) {
  std::ostringstream os;
  os << "index,line,label,i,j,hbm_read_bytes,hbm_write_bytes,hbm_read_total,hbm_write_total,"
        "flops,flops_total,sram_bytes,dram_read_bytes,dram_write_bytes\n";
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step& s = t.steps[k];
    os << k << ',' << line_number(s.line) << ",\"" << line_label(s.line) << "\"," << s.i << ','
       << s.j << ',' << s.hbm_read << ',' << s.hbm_write << ',' << s.hbm_read_total << ','
       << s.hbm_write_total << ',' << s.flops << ',' << s.flops_total << ',' << s.sram_bytes
       << ',' << s.dram_read << ',' << s.dram_write << '\n';
  }
  return os.str();
}

// Chrome trace-event format (opens in Perfetto and chrome://tracing). Time is modelled, not
// measured: each step lasts HBM bytes / 1.5 TB/s + FLOPs / 19.5 TFLOP/s, the A100 figures the
// paper's discussion uses, so HBM-bound lines look long and on-chip lines short.
json trace_to_chrome(const Trace& t) {
  constexpr double kBytesPerUs = 1.5e6, kFlopsPerUs = 19.5e6;
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1},
                    {"args", {{"name", std::string("flashstep ") + schedule_name(t.problem.schedule)}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1},
                    {"args", {{"name", "HBM <-> SRAM"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 2},
                    {"args", {{"name", "on-chip compute"}}}});
  double ts = 0;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step& s = t.steps[k];
    const double dur = std::max(1e-3, double(s.hbm_read + s.hbm_write) / kBytesPerUs +
                                          double(s.flops) / kFlopsPerUs);
    const bool moves = s.hbm_read + s.hbm_write > 0;
    events.push_back({{"name", line_label(s.line)},
                      {"cat", moves ? "hbm" : "compute"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", moves ? 1 : 2},
                      {"ts", ts},
                      {"dur", dur},
                      {"args",
                       {{"i", s.i}, {"j", s.j}, {"text", t.explain(k)},
                        {"hbm_read_bytes", s.hbm_read}, {"hbm_write_bytes", s.hbm_write},
                        {"dram_read_bytes", s.dram_read}, {"dram_write_bytes", s.dram_write},
                        {"flops", s.flops}}}});
    events.push_back({{"name", "SRAM bytes"}, {"ph", "C"}, {"pid", 1}, {"ts", ts},
                      {"args", {{"resident", s.sram_bytes}}}});
    // Counter tracks: the paper's HBM bytes so far beside the DRAM bytes (equal without an L2
    // model), and with one, the L2's occupancy.
    events.push_back({{"name", "bytes read so far"}, {"ph", "C"}, {"pid", 1}, {"ts", ts},
                      {"args", {{"hbm", s.hbm_read_total}, {"dram", s.dram_read_total}}}});
    events.push_back({{"name", "bytes written so far"}, {"ph", "C"}, {"pid", 1}, {"ts", ts},
                      {"args", {{"hbm", s.hbm_write_total}, {"dram", s.dram_write_total}}}});
    if (t.totals.l2.enabled)
      events.push_back({{"name", "L2 lines"}, {"ph", "C"}, {"pid", 1}, {"ts", ts},
                        {"args", {{"held", s.l2_lines}, {"dirty", s.l2_dirty_lines}}}});
    ts += dur;
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"},
          {"otherData", {{"problem", problem_json(t)}, {"phases", phases_json(t)},
                         {"time", "modelled (A100: 1.5 TB/s, 19.5 TFLOP/s)"}}}};
}

}  // namespace flashstep
