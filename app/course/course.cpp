// The chapter list, and checking a typed answer.
#include "app/course/answer.h"
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
    case Panel::memory: return "the Memory panel (HBM bytes per tensor, SRAM, every schedule side by side)";
    case Panel::softmax: return "the Online softmax state panel (m_i, l_i, rescale factors)";
    // A view, not a tab: a narrow centre (1024x768 in presentation mode) picks it in a combo.
    case Panel::lesson: return "the online-softmax Lesson view (its block table)";
    case Panel::bench: return "the Bench view (measured H200 runs)";
    case Panel::roofline: return "the roofline figure";
    case Panel::pipeline: return "the Pipeline view (centre: one SM's Gantt chart, every rung's prediction)";
    case Panel::explorer: return "the IO explorer (centre: each schedule's HBM bytes against N, sliders for N, d and M)";
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
      {"decode", "Decoding: one query row, split-KV and the log-sum-exp combine"},  // registry-exempt: chapter id
      {"paged-kv", "Paged KV cache: the block table, and what each allocation wastes"},
      {"hopper", "Hopper: FlashAttention-3's producer, ping-pong consumers and persistent grid"},
      {"fp8", "FP8: eight-bit storage, its scales, and why attention is not twice as fast"},
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
                                 chapter_backward,      chapter_gpu,          chapter_decode,
                                 chapter_paged_kv,      chapter_hopper,       chapter_fp8};
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


int64_t budget_reads(const Question& q, int64_t br, int64_t bc, int64_t M) {
  if (M > q.budget_max_M)
    throw InputError("M = " + std::to_string(M) + " is over the allowed " + std::to_string(q.budget_max_M));
  ProblemSpec s = q.budget_run.spec;
  s.schedule = Schedule::fa1;  // registry-exempt: a chapter about this schedule
  s.M = M;
  s.br = br;
  s.bc = bc;
  RunOptions opt;
  opt.record = false;
  // make_tiling checks the overrides: the four tiles Q_i, K_j, V_j, O_i must fit in M.
  return run_spec(s, opt).totals.hbm_read_bytes;
}

Verdict check_answer(const Question& q, const std::string& typed) {
  Verdict v;
  const Reading r = read_answer(q, typed);
  if (!r.ok) {
    v.bad_format = true;
    v.message = r.slip;
    return v;
  }
  switch (q.kind) {
    case Question::Kind::number: {
      const double x = r.value;
      if (q.whole) {
        v.correct = x == q.answer;  // whole numbers: equal, not rounded (7.5 is not 8)
      } else {
        const double tol = std::max(q.abs_tol, q.rel_tol * std::abs(q.answer));
        v.correct = std::abs(x - q.answer) <= tol;
      }
      if (v.correct) return v;
      v.message = quoted(typed) + " is not it";
      if (q.whole && x != std::floor(x)) v.message += ": the answer is a whole number";
      for (const Question::Mistake& m : q.mistakes)
        if (std::abs(x - m.value) <= m.tol) {
          v.message = quoted(typed) + " is not it: " + m.note;
          break;
        }
      return v;
    }
    case Question::Kind::choice: {
      v.correct = r.letter == q.correct;
      if (!v.correct) v.message = std::string(1, char('a' + r.letter)) + " is not it";
      return v;
    }
    case Question::Kind::budget: {
      const std::string a = std::to_string(r.br), b = std::to_string(r.bc), c = std::to_string(r.M);
      try {
        const int64_t reads = budget_reads(q, r.br, r.bc, r.M);
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
