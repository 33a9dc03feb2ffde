#include "app/course/trace_lookup.h"

#include "core/types.h"

namespace flashstep::course {

const char* role_name(Role r) {
  switch (r) {
    case Role::init: return "init";
    case Role::load_kv: return "load K/V";
    case Role::load_q: return "load Q";
    case Role::scores: return "scores";
    case Role::softmax: return "softmax";
    case Role::merge: return "merge";
    case Role::update_o: return "update O";
    case Role::write_o: return "write O";
    case Role::skip: return "skip";
    case Role::rowsum_d: return "rowsum D";
  }
  return "?";
}

namespace {

// The role table of today's schedules (core/trace.h's line enum). fa2's L9 both makes P~_ij and
// merges the statistics; fa1's L12 updates O_i and writes it back; standard attention's L3 does
// both too.
bool line_has_role(Line l, Role r) {
  switch (r) {
    case Role::init: return l == Line::A1_L2 || l == Line::A4_L5 || l == Line::B2_L3;
    case Role::load_kv: return l == Line::A1_L6 || l == Line::A2_L7 || l == Line::A4_L7 || l == Line::B2_L6;
    case Role::load_q: return l == Line::A1_L8 || l == Line::A2_L4 || l == Line::A4_L10 || l == Line::B2_L9;
    case Role::scores: return l == Line::A1_L9 || l == Line::A2_L8 || l == Line::A0_L1;
    case Role::softmax: return l == Line::A1_L10 || l == Line::A2_L9 || l == Line::A0_L2;
    case Role::merge: return l == Line::A1_L11 || l == Line::A2_L9;
    case Role::update_o: return l == Line::A1_L12 || l == Line::A2_L10 || l == Line::A0_L3;
    case Role::write_o: return l == Line::A1_L12 || l == Line::A2_L14 || l == Line::A0_L3;
    case Role::skip: return l == Line::A1_SKIP || l == Line::A2_SKIP || l == Line::A4_SKIP || l == Line::B2_SKIP;
    case Role::rowsum_d: return l == Line::A4_L19 || l == Line::B2_L4;
  }
  return false;
}

}  // namespace

bool has_role(const Trace& t, const Step& s, Role r) { return line_has_role(s.line, r); }

int64_t find_step(const Trace& t, Role r, int64_t i, int64_t j, bool backward) {
  const size_t begin = backward ? t.backward_first_step : 0;
  const size_t end = t.has_backward && !backward ? t.backward_first_step : t.steps.size();
  for (size_t k = begin; k < end; ++k) {
    const Step& s = t.steps[k];
    if (line_has_role(s.line, r) && (i < 0 || s.i == i) && (j < 0 || s.j == j)) return int64_t(k);
  }
  throw InputError(std::string("the trace has no '") + role_name(r) + "' step at i = " + std::to_string(i) +
                   ", j = " + std::to_string(j));
}

int64_t count_steps(const Trace& t, Role r) {
  const size_t end = t.has_backward ? t.backward_first_step : t.steps.size();
  int64_t n = 0;
  for (size_t k = 0; k < end; ++k) n += line_has_role(t.steps[k].line, r) ? 1 : 0;
  return n;
}

std::string role_label(const Trace& t, Role r) {
  return line_label(t.steps[size_t(find_step(t, r))].line);
}

int role_line_number(const Trace& t, Role r) { return line_number(t.steps[size_t(find_step(t, r))].line); }

}  // namespace flashstep::course
