// The chapter list, and checking a typed answer.
#include "app/course/builder.h"

#include "core/run.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace flashstep::course {

const char* panel_title(Panel p) {
  switch (p) {
    case Panel::none: return "";
    case Panel::tiles: return "the Tiles view (centre)";
    case Panel::algorithm: return "the Algorithm panel (pseudocode, current line highlighted)";
    case Panel::memory: return "the Memory panel (HBM bytes per tensor, SRAM, the three schedules side by side)";
    case Panel::softmax: return "the Online softmax state panel (m_i, l_i, rescale factors)";
    case Panel::lesson: return "the Online-softmax lesson view (the block table)";
    case Panel::bench: return "the Bench view (measured H200 runs)";
    case Panel::roofline: return "the roofline figure";
  }
  return "";
}

const std::vector<ChapterInfo>& chapter_list() {
  static const std::vector<ChapterInfo> list = {
      {"memory-bound", "Memory-bound: FLOPs against bytes, and the roofline"},
      {"safe-softmax", "Safe softmax: where exp overflows, and subtracting the max"},
      {"online-softmax", "Online softmax: a softmax computed block by block"},
      {"tiling", "Tiling: block sizes from the SRAM size M"},
      {"algorithm-1", "Algorithm 1 step by step, and the O update"},
      {"io-complexity", "IO complexity: Algorithm 1's bytes against standard attention's"},
      {"fa2-order", "FlashAttention-2's loop order: the round trips it removes"},
      {"masks-dropout-fusion", "Masks, dropout and fusion: everything in one kernel"},
      {"backward", "The backward pass: recomputation instead of storage"},
      {"gpu", "On the GPU: tensor cores, and why the speed-ups follow the bytes"},
  };
  return list;
}

int chapter_index(const std::string& id) {
  const auto& l = chapter_list();
  for (size_t k = 0; k < l.size(); ++k)
    if (id == l[k].id) return int(k);
  return -1;
}

Chapter make_chapter(const std::string& id, uint64_t seed) {
  using Maker = Chapter (*)(uint64_t);
  static const Maker makers[] = {chapter_memory_bound,  chapter_safe_softmax, chapter_online_softmax,
                                 chapter_tiling,        chapter_algorithm_1,  chapter_io_complexity,
                                 chapter_fa2_order,     chapter_masks_dropout_fusion,
                                 chapter_backward,      chapter_gpu};
  const int k = chapter_index(id);
  if (k < 0) {
    std::string known;
    for (const ChapterInfo& c : chapter_list()) known += (known.empty() ? "" : ", ") + std::string(c.id);
    throw InputError("unknown chapter '" + id + "' (the chapters: " + known + "; flashstep learn --list)");
  }
  if (seed == 0) throw InputError("--seed must be at least 1");
  return makers[k](seed);
}

size_t Chapter::question_count() const {
  size_t n = 0;
  for (const Page& p : pages) n += p.questions.size();
  return n;
}

const RunDecl& Chapter::run(const std::string& name) const {
  for (const RunDecl& r : runs)
    if (r.name == name) return r;
  throw InputError("course: chapter " + id + " has no run named " + name);
}

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool parse_real(const std::string& text, double* x) {
  if (text.empty()) return false;
  char* end = nullptr;
  *x = std::strtod(text.c_str(), &end);
  return end && *end == 0 && std::isfinite(*x);
}

bool parse_whole(const std::string& text, int64_t* x) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  if (text.size() > 12) return false;
  *x = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}

}  // namespace

int64_t budget_reads(const Question& q, int64_t br, int64_t bc, int64_t M) {
  if (M > q.budget_max_M)
    throw InputError("M = " + std::to_string(M) + " is over the allowed " + std::to_string(q.budget_max_M));
  ProblemSpec s = q.budget_run.spec;
  s.schedule = Schedule::fa1;
  s.M = M;
  s.br = br;
  s.bc = bc;
  RunOptions opt;
  opt.record = false;
  // make_tiling checks the overrides: the four tiles Q_i, K_j, V_j, O_i must fit in M.
  return run_spec(s, opt).totals.hbm_read_bytes;
}

Verdict check_answer(const Question& q, const std::string& typed_raw) {
  Verdict v;
  const std::string typed = trim(typed_raw);
  switch (q.kind) {
    case Question::Kind::number: {
      double x = 0;
      if (!parse_real(typed, &x)) {
        v.bad_format = true;
        v.message = "'" + typed + "' is not a number";
        return v;
      }
      const double tol = std::max(q.abs_tol, q.rel_tol * std::abs(q.answer));
      v.correct = std::abs(x - q.answer) <= tol;
      if (!v.correct) v.message = typed + " is not it";
      return v;
    }
    case Question::Kind::choice: {
      if (typed.size() != 1 || !std::isalpha(static_cast<unsigned char>(typed[0])) ||
          std::tolower(static_cast<unsigned char>(typed[0])) - 'a' >= int(q.choices.size())) {
        v.bad_format = true;
        v.message = "'" + typed + "' is not one of the letters a to " + std::string(1, char('a' + q.choices.size() - 1));
        return v;
      }
      v.correct = std::tolower(static_cast<unsigned char>(typed[0])) - 'a' == q.correct;
      if (!v.correct) v.message = typed + " is not it";
      return v;
    }
    case Question::Kind::budget: {
      std::string norm = typed;
      for (char& c : norm)
        if (c == ',') c = ' ';
      std::istringstream in(norm);
      std::string a, b, c, extra;
      in >> a >> b >> c >> extra;
      int64_t br = 0, bc = 0, M = 0;
      if (!parse_whole(a, &br) || !parse_whole(b, &bc) || !parse_whole(c, &M) || !extra.empty() || br < 1 || bc < 1 ||
          M < 1) {
        v.bad_format = true;
        v.message = "'" + typed + "' is not three whole numbers Br,Bc,M (e.g. " + q.answer_text + ")";
        return v;
      }
      try {
        const int64_t reads = budget_reads(q, br, bc, M);
        v.correct = reads < q.budget_bytes;
        v.message = "Algorithm 1 with Br = " + a + ", Bc = " + b + ", M = " + c + " reads " + std::to_string(reads) +
                    " B (budget: fewer than " + std::to_string(q.budget_bytes) + " B)";
      } catch (const InputError& e) {
        v.correct = false;
        v.message = e.what();
      }
      return v;
    }
  }
  return v;
}

}  // namespace flashstep::course
