#include "app/course/trace_lookup.h"

#include "core/lines.h"
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

// The course's roles in the registry's terms (core/lines.h): the line's own role, asked of the
// trace's line tables. The O update is the line that accumulates P~_ij V_j: FA2fwd L10 on chip;
// where an algorithm has no such line, its write of O does it (Alg1 L12, Alg0 L3).
bool line_has_role(Line l, Role r) {
  const LineRole x = line_role(l);
  switch (r) {
    case Role::init: return x == LineRole::init_hbm;
    case Role::load_kv: return x == LineRole::load_kv;
    case Role::load_q: return x == LineRole::load_q;
    case Role::scores: return x == LineRole::scores;
    case Role::softmax: return x == LineRole::probabilities || x == LineRole::online_softmax;
    case Role::merge: return x == LineRole::merge_stats || x == LineRole::online_softmax;
    case Role::update_o:
      return algorithm_has_role(line_algorithm(l), LineRole::accumulate_o) ? x == LineRole::accumulate_o
                                                                            : x == LineRole::write_o;
    case Role::write_o: return x == LineRole::write_o;
    case Role::skip: return x == LineRole::skip;
    case Role::rowsum_d: return x == LineRole::grad_D;
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
