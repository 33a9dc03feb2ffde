// Lookup of a line's entry: every algorithm's table comes from its schedule in the registry.
#include "core/lines.h"

#include "core/schedule_registry.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace flashstep {

namespace {

struct LineIndex {
  std::unordered_map<int, std::pair<const LineInfo*, const AlgorithmInfo*>> at;
  LineIndex() {
    for (const ScheduleInfo* s : schedules())
      for (const AlgorithmInfo* a : {s->forward_lines, s->backward_lines})
        if (a)  // null: a forward-only schedule's backward
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

LineBlocks line_blocks(Line l) {
  const bool tiled = algorithm_has_role(line_algorithm(l), LineRole::load_kv);
  switch (line_role(l)) {
    case LineRole::init_hbm:
    case LineRole::init_chip: return {false, false};  // before a loop, or at its top (FA2fwd L5, Alg4 L8)
    case LineRole::load_kv:
    case LineRole::write_grads: return {false, true};
    // Per Q block, after or outside the j loop in some algorithm (FA2fwd L4, L12-L15, FD L17-L20, FA2b L4).
    case LineRole::load_q:
    case LineRole::write_o:
    case LineRole::normalise:
    case LineRole::logsumexp:
    case LineRole::write_stats:
    case LineRole::combine:
    case LineRole::grad_D: return {true, false};
    // Per tile (i, j): the scores, probabilities and statistics of one block pair, and the
    // backward's per-tile gradients.
    case LineRole::skip:
    case LineRole::scores:
    case LineRole::probabilities:
    case LineRole::merge_stats:
    case LineRole::online_softmax:
    case LineRole::accumulate_o:
    case LineRole::recompute_scores:
    case LineRole::mask_scores:
    case LineRole::recompute_probs:
    case LineRole::dropout:
    case LineRole::grad_v:
    case LineRole::grad_p:
    case LineRole::grad_s:
    case LineRole::grad_q:
    case LineRole::grad_k: return {true, tiled};
  }
  return {};
}

namespace {

// The listing rows [begin, end) of the loop body that holds the own row of the algorithm's line
// with `role` (its load of Q_i or of K_j, V_j): the rows around it indented as deep or deeper.
// Empty where no line has the role.
std::pair<size_t, size_t> loop_body(const AlgorithmInfo& a, LineRole role) {
  for (size_t n = 0; n < a.n_listing; ++n) {
    const ListingRow& row = a.listing[n];
    if (row.text || line_role(row.line) != role) continue;
    size_t begin = n, end = n + 1;
    while (begin > 0 && a.listing[begin - 1].indent >= row.indent) --begin;
    while (end < a.n_listing && a.listing[end].indent >= row.indent) ++end;
    return {begin, end};
  }
  return {0, 0};
}

}  // namespace

LineBlocks line_scope(Line l) {
  const AlgorithmInfo& a = line_algorithm(l);
  LineBlocks in = line_blocks(l);
  const auto q_body = loop_body(a, LineRole::load_q), kv_body = loop_body(a, LineRole::load_kv);
  for (size_t n = 0; n < a.n_listing; ++n)
    if (!a.listing[n].text && a.listing[n].line == l) {  // the line's own row
      in.i = in.i || (n >= q_body.first && n < q_body.second);
      in.j = in.j || (n >= kv_body.first && n < kv_body.second);
    }
  return in;
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
