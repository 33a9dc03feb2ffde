// Lookup of a line's entry: every algorithm's table comes from its schedule in the registry.
#include "core/lines.h"

#include "core/schedule_registry.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

namespace flashstep {

namespace {

struct LineIndex {
  std::unordered_map<int, std::pair<const LineInfo*, const AlgorithmInfo*>> at;
  LineIndex() {
    for (const ScheduleInfo* s : schedules())
      for (const AlgorithmInfo* a : {s->forward_lines, s->backward_lines})
        for (size_t n = 0; n < a->n_lines; ++n) at[int(a->lines[n].line)] = {&a->lines[n], a};
  }
};

const std::pair<const LineInfo*, const AlgorithmInfo*>& find(Line l) {
  static const LineIndex index;
  const auto it = index.at.find(int(l));
  if (it == index.at.end()) throw std::logic_error("line " + std::to_string(int(l)) + " is in no algorithm's table");
  return it->second;
}

}  // namespace

const LineInfo& line_info(Line l) { return *find(l).first; }
const AlgorithmInfo& line_algorithm(Line l) { return *find(l).second; }
bool is_backward_line(Line l) { return find(l).second->backward; }

bool algorithm_has_role(const AlgorithmInfo& a, LineRole r) {
  for (size_t n = 0; n < a.n_lines; ++n)
    if (a.lines[n].role == r) return true;
  return false;
}

const char* role_name(LineRole r) {
  switch (r) {
    case LineRole::init_hbm: return "initialise in HBM";
    case LineRole::init_chip: return "initialise on chip";
    case LineRole::load_kv: return "load K/V";
    case LineRole::load_q: return "load Q";
    case LineRole::skip: return "skip";
    case LineRole::scores: return "scores";
    case LineRole::probabilities: return "probabilities";
    case LineRole::merge_stats: return "merge statistics";
    case LineRole::online_softmax: return "probabilities and merge";
    case LineRole::accumulate_o: return "accumulate O";
    case LineRole::write_o: return "write O";
    case LineRole::normalise: return "normalise O";
    case LineRole::logsumexp: return "logsumexp";
    case LineRole::write_stats: return "write statistics";
    case LineRole::combine: return "combine";
    case LineRole::recompute_scores: return "recompute scores";
    case LineRole::mask_scores: return "mask";
    case LineRole::recompute_probs: return "recompute probabilities";
    case LineRole::dropout: return "dropout";
    case LineRole::grad_v: return "gradient dV";
    case LineRole::grad_p: return "gradient dP";
    case LineRole::grad_D: return "D = rowsum(dO o O)";
    case LineRole::grad_s: return "gradient dS";
    case LineRole::grad_q: return "gradient dQ";
    case LineRole::grad_k: return "gradient dK";
    case LineRole::write_grads: return "write dK, dV";
  }
  return "?";
}

}  // namespace flashstep
