// How the chapters are written: a ChapterBuilder runs the chapter's problems once, and page text
// is appended piece by piece, every number through num()/integer() with the source it comes
// from, so that a page's text can hold no number typed in by hand (the tests check that every
// number in the text is one of the page's Numbers, and re-derive each from its source).
#pragma once
#include "app/course/course.h"
#include "app/course/trace_lookup.h"
#include "core/lesson.h"
#include "core/trace.h"

#include <map>
#include <memory>
#include <string>

namespace flashstep::course {

// A page's scene (course.h).
inline Scene scene(const std::string& run, int64_t step, CentreView view, Panel outline,
                   std::vector<Panel> panels = {}, const std::string& lesson = "", int lesson_shown = -1) {
  Scene s;
  s.run = run;
  s.step = step;
  s.view = view;
  s.outline = outline;
  s.panels = std::move(panels);
  s.lesson = lesson;
  s.lesson_shown = lesson_shown;
  return s;
}

// "%.4g" of x ("1.553", "6144", "-inf").
std::string format_number(double x, int digits = 4);

// Names of sources (docs/course.md, "The source names"): helpers so that the chapters do not spell them by hand.
std::string src_step(const std::string& run, int64_t k, const std::string& field, int64_t r = -1, int64_t c = -1);
std::string src_total(const std::string& run, const std::string& field);   // trace.RUN.totals.FIELD
std::string src_tiling(const std::string& run, const std::string& field);  // tiling.RUN.FIELD
std::string src_problem(const std::string& run, const std::string& field); // problem.RUN.FIELD
std::string src_closed(const std::string& run, const std::string& sched, const std::string& field);

class ChapterBuilder {
 public:
  ChapterBuilder(const std::string& id, uint64_t seed);

  // Runs a problem (recorded unless d.record is false) and keeps its trace under d.name.
  const Trace& add_run(const RunDecl& d);
  const Trace& trace(const std::string& name) const;
  const Lesson& add_lesson(const LessonDecl& d);
  void problem_text(const std::string& text) { ch_.problem_text = text; }

  // A new page; the text, numbers and questions that follow belong to it.
  ChapterBuilder& page(const std::string& title, const Scene& scene);
  ChapterBuilder& t(const std::string& text);  // prose; no free-standing numbers
  ChapterBuilder& f(const std::string& formula);  // notation: its constants are not data
  ChapterBuilder& terminal_only(const std::string& text);  // Page::terminal
  ChapterBuilder& num(double x, const std::string& source, int digits = 4);
  ChapterBuilder& integer(int64_t x, const std::string& source);
  // The step a scene stands on: its index k in the trace, printed as "step k".
  ChapterBuilder& step_ref(const std::string& run, int64_t k);

  // Questions on the current page. Tolerances: `exact` integers, else relative.
  Question& ask_number(const std::string& id, const std::string& prompt, double answer, const std::string& source,
                       double rel_tol, const std::string& hint, Panel hint_panel);
  Question& ask_integer(const std::string& id, const std::string& prompt, int64_t answer, const std::string& source,
                        const std::string& hint, Panel hint_panel);
  Question& ask_choice(const std::string& id, const std::string& prompt, const std::vector<std::string>& choices,
                       int correct, const std::string& hint, Panel hint_panel);
  Question& ask_budget(const std::string& id, const std::string& prompt, const RunDecl& run, int64_t budget_bytes,
                       int64_t max_M, const std::string& answer_text, const std::string& hint, Panel hint_panel);

  // The last question asked: units it may be answered with (answer.h), and known mistakes: a
  // wrong answer within `tol` of `value` (tol < 0: the question's own tolerance) gets `note`.
  ChapterBuilder& units(std::vector<std::string> u);
  // Where the terminal shows the last question's value, in place of the page's run (which a
  // question is given only when its hint points at an app panel).
  ChapterBuilder& in_terminal(const std::string& where);
  ChapterBuilder& bytes() { return units({"B", "bytes", "byte"}); }
  ChapterBuilder& times() { return units({"x", "times"}); }
  ChapterBuilder& flop_per_byte() {
    return units({"FLOP/B", "FLOPs/B", "FLOP/byte", "FLOPs/byte", "FLOP per byte", "FLOPs per byte"});
  }
  ChapterBuilder& mistake(double value, const std::string& note, double tol = -1);
  ChapterBuilder& inverse(const std::string& what);  // 1 / a ratio: "that is the inverse ratio (WHAT)"
  Question& last_question();

  Chapter finish();
  Chapter& chapter() { return ch_; }

 private:
  Page& cur();
  Question& add_question(const std::string& id, Question::Kind kind, const std::string& prompt, const std::string& hint,
                         Panel panel);
  Chapter ch_;
  std::map<std::string, std::shared_ptr<Trace>> traces_;
  std::map<std::string, Lesson> lessons_;
};

// The problems of the course for a seed. Seed 1 gives the shipped presets' problems (tiny:
// Nq = Nk = 8, d = 4, M = 64; causal: 12, 4, 64; gpt2-medium: 1024, 64, 16384); other seeds
// other sizes and inputs.
RunDecl tiny_run(uint64_t seed);
RunDecl causal_run(uint64_t seed);
RunDecl dropout_run(uint64_t seed);  // causal fa2, dropout 0.2, bf16 (the dropout-bf16 preset)
RunDecl fa2_run(uint64_t seed);      // the tiny problem in FlashAttention-2's order
RunDecl backward_run(uint64_t seed); // the tiny problem with Algorithm 4 after it
// The same problem in standard attention (Algorithm 0), under another name.
RunDecl standard_twin(const RunDecl& r, const std::string& name, bool record = false);
// One head at the bench's sizes: N = 1024 (odd seeds) or 2048 (even seeds), d = 64, M = 16384.
RunDecl head_run(uint64_t seed, Schedule s);
std::string sizes_text(const ProblemSpec& s);  // "Nq = Nk = 8, d = 4, M = 64"
// The command line that prints a run's steps in the terminal: "flashstep run --nq 8 --nk 8 --d 4
// --M 64 --seed 1 --steps" (with --schedule, --causal, --dtype, --dropout, --backward as the run has).
std::string run_line(const RunDecl& r);

// The chapters, one function each (chapters_*.cpp).
Chapter chapter_memory_bound(uint64_t seed);
Chapter chapter_safe_softmax(uint64_t seed);
Chapter chapter_online_softmax(uint64_t seed);
Chapter chapter_tiling(uint64_t seed);
Chapter chapter_algorithm_1(uint64_t seed);
Chapter chapter_io_complexity(uint64_t seed);
Chapter chapter_fa2_order(uint64_t seed);
Chapter chapter_masks_dropout_fusion(uint64_t seed);
Chapter chapter_backward(uint64_t seed);
Chapter chapter_gpu(uint64_t seed);
Chapter chapter_decode(uint64_t seed);
Chapter chapter_paged_kv(uint64_t seed);
Chapter chapter_hopper(uint64_t seed);
Chapter chapter_fp8(uint64_t seed);

}  // namespace flashstep::course
