#include "app/course/builder.h"

#include "core/backward.h"
#include "core/run.h"
#include "core/schedule_registry.h"

#include <cmath>
#include <cstdio>

namespace flashstep::course {

std::string format_number(double x, int digits) {
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (std::isnan(x)) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string src_step(const std::string& run, int64_t k, const std::string& field, int64_t r, int64_t c) {
  std::string s = "trace." + run + ".step." + std::to_string(k) + "." + field;
  if (r >= 0) s += "." + std::to_string(r);
  if (c >= 0) s += "." + std::to_string(c);
  return s;
}
std::string src_total(const std::string& run, const std::string& field) { return "trace." + run + ".totals." + field; }
std::string src_tiling(const std::string& run, const std::string& field) { return "tiling." + run + "." + field; }
std::string src_problem(const std::string& run, const std::string& field) { return "problem." + run + "." + field; }
std::string src_closed(const std::string& run, const std::string& sched, const std::string& field) {
  return "closed." + run + "." + sched + "." + field;
}

// ---------------------------------------------------------------------------------------------
// The course's problems

namespace {

struct Sizes {
  int64_t n, d, M;
};
// Seed 1 is the tiny preset; the others keep Tr, Tc small enough to step through by hand.
constexpr Sizes kSizes[] = {{8, 4, 64}, {12, 4, 64}, {16, 8, 128}, {8, 8, 96}, {12, 4, 48}, {16, 4, 64}};

Sizes sizes_for(uint64_t seed) { return kSizes[(seed == 0 ? 0 : seed - 1) % (sizeof kSizes / sizeof kSizes[0])]; }

ProblemSpec spec_of(Sizes z, uint64_t seed) {
  ProblemSpec s = sizes_spec(z.n, z.n, z.d, z.M);
  s.seed = seed;
  s.pattern = "random";
  return s;
}

}  // namespace

RunDecl tiny_run(uint64_t seed) { return {"tiny", spec_of(sizes_for(seed), seed), false, true, "tiny"}; }

RunDecl fa2_run(uint64_t seed) {
  RunDecl r{"fa2", spec_of(sizes_for(seed), seed), false, true, "fa1-vs-fa2"};  // registry-exempt: a chapter about this schedule
  r.spec.schedule = Schedule::fa2;  // registry-exempt: a chapter about this schedule
  return r;
}

RunDecl causal_run(uint64_t seed) {
  Sizes z = sizes_for(seed);
  z.n += 4;  // seed 1: Nq = Nk = 12, the causal preset
  RunDecl r{"causal", spec_of(z, seed), false, true, "causal"};
  r.spec.options.mask.causal = true;
  return r;
}

RunDecl dropout_run(uint64_t seed) {
  RunDecl r = causal_run(seed);
  r.name = "dropout";
  r.preset = "dropout-bf16";
  r.spec.schedule = Schedule::fa2;  // registry-exempt: a chapter about this schedule
  r.spec.options.dropout = 0.2;
  r.spec.options.dtype = Dtype::bf16;
  return r;
}

RunDecl backward_run(uint64_t seed) {
  RunDecl r = tiny_run(seed);
  r.name = "backward";
  r.preset = "backward";
  r.backward = true;
  return r;
}

RunDecl standard_twin(const RunDecl& r, const std::string& name, bool record) {
  RunDecl t = r;
  t.name = name;
  t.preset = "";
  t.record = record;
  t.spec.schedule = baseline_schedule().id;  // standard attention
  return t;
}

RunDecl head_run(uint64_t seed, Schedule s) {
  ProblemSpec p = spec_of({seed % 2 == 1 ? 1024 : 2048, 64, 16384}, seed);
  p.schedule = s;
  const std::string name = std::string("head-") + schedule_name(s);
  // The standard run is recorded (its three kernels are read off its steps); the fused ones
  // need only their totals.
  return {name, p, false, schedule_info(s).baseline, seed == 1 ? "gpt2-medium" : ""};
}

std::string sizes_text(const ProblemSpec& s) {
  char buf[160];
  if (s.nq == s.nk)
    std::snprintf(buf, sizeof buf, "Nq = Nk = %lld, d = %lld, M = %lld", (long long)s.nq, (long long)s.d, (long long)s.M);
  else
    std::snprintf(buf, sizeof buf, "Nq = %lld, Nk = %lld, d = %lld, M = %lld", (long long)s.nq, (long long)s.nk,
                  (long long)s.d, (long long)s.M);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// The builder

ChapterBuilder::ChapterBuilder(const std::string& id, uint64_t seed) {
  ch_.id = id;
  ch_.seed = seed;
  for (const ChapterInfo& c : chapter_list())
    if (id == c.id) ch_.title = c.title;
}

const Trace& ChapterBuilder::add_run(const RunDecl& d) {
  const Problem p = make_problem(d.spec);
  const Tiling t = make_tiling(p);
  RunOptions opt;
  opt.record = d.record;
  Mat dO;
  if (d.backward) {  // as `flashstep run --backward` and the app make it
    dO = make_grad_output(p, d.spec.pattern);
    opt.dO = &dO;
  }
  auto tr = std::make_shared<Trace>(run_problem(p, t, opt));
  traces_[d.name] = tr;
  ch_.runs.push_back(d);
  return *tr;
}

const Trace& ChapterBuilder::trace(const std::string& name) const {
  auto it = traces_.find(name);
  if (it == traces_.end()) throw InputError("course: no run named " + name);
  return *it->second;
}

const Lesson& ChapterBuilder::add_lesson(const LessonDecl& d) {
  ch_.lessons.push_back(d);
  return lessons_[d.name] = run_lesson(d.values, d.block, d.v);
}

ChapterBuilder& ChapterBuilder::page(const std::string& title, const Scene& scene) {
  Page p;
  p.title = title;
  p.scene = scene;
  ch_.pages.push_back(std::move(p));
  return *this;
}

Page& ChapterBuilder::cur() {
  if (ch_.pages.empty()) throw InputError("course: text before the first page");
  return ch_.pages.back();
}

ChapterBuilder& ChapterBuilder::t(const std::string& text) {
  cur().text += text;
  return *this;
}

ChapterBuilder& ChapterBuilder::f(const std::string& formula) {
  Page& p = cur();
  p.notation.emplace_back(p.text.size(), p.text.size() + formula.size());
  p.text += formula;
  return *this;
}

ChapterBuilder& ChapterBuilder::terminal_only(const std::string& text) {
  cur().terminal += text;
  return *this;
}

ChapterBuilder& ChapterBuilder::num(double x, const std::string& source, int digits) {
  Page& p = cur();
  Number n{source, x, format_number(x, digits), p.text.size()};
  p.text += n.text;
  p.numbers.push_back(std::move(n));
  return *this;
}

ChapterBuilder& ChapterBuilder::integer(int64_t x, const std::string& source) {
  Page& p = cur();
  Number n{source, double(x), std::to_string(x), p.text.size()};
  p.text += n.text;
  p.numbers.push_back(std::move(n));
  return *this;
}

ChapterBuilder& ChapterBuilder::step_ref(const std::string& run, int64_t k) {
  t("step ");  // the app's numbering: the slider's "step n" has n steps applied, the last being index n - 1
  return integer(k + 1, "trace." + run + ".applied." + std::to_string(k));
}

std::string run_line(const RunDecl& r) {
  const ProblemSpec& s = r.spec;
  std::string l = "flashstep run --nq " + std::to_string(s.nq) + " --nk " + std::to_string(s.nk) + " --d " +
                  std::to_string(s.d) + " --M " + std::to_string(s.M) + " --seed " + std::to_string(s.seed);
  if (s.schedule != kDefaultSchedule) l += std::string(" --schedule ") + schedule_name(s.schedule);
  if (s.splits > 0) l += " --splits " + std::to_string(s.splits);
  if (s.page_size) l += " --page-size " + std::to_string(*s.page_size);
  if (s.options.mask.causal) l += " --causal";
  if (s.options.dtype != Dtype::fp32) l += std::string(" --dtype ") + dtype_name(s.options.dtype);
  if (s.options.fp8_scale == Fp8Scale::per_block) l += " --fp8-scale per-block";
  if (s.options.rotate) l += " --rotate";
  if (s.options.dropout > 0) l += " --dropout " + format_number(s.options.dropout, 6);
  if (s.pattern != "random") l += " --pattern " + s.pattern;
  if (r.backward) l += " --backward";
  return l + " --steps";
}

Question& ChapterBuilder::add_question(const std::string& id, Question::Kind kind, const std::string& prompt,
                                       const std::string& hint, Panel panel) {
  Question q;
  // Where the terminal shows the page's run at its step (run --steps counts steps from 0).
  const Scene& sc = cur().scene;
  // Only for a question answered from the run's panels: a closed form or a data sheet's figure is
  // not in the run's steps.
  if (sc.view == CentreView::tiles && panel != Panel::none)
    for (const RunDecl& r : ch_.runs)
      if (r.name == sc.run) {
        q.terminal = run_line(r);
        if (sc.step > 0) q.terminal += ", index " + std::to_string(sc.step - 1) + " of its output";
        if (r.backward) q.terminal += " (the forward's steps, then the backward's)";
      }
  if (sc.view == CentreView::lesson) q.terminal = "flashstep lesson softmax (the block table)";
  q.id = id;
  q.kind = kind;
  q.prompt = prompt;
  q.hint = hint;
  q.hint_panel = panel;
  cur().questions.push_back(std::move(q));
  return cur().questions.back();
}

Question& ChapterBuilder::ask_number(const std::string& id, const std::string& prompt, double answer,
                                     const std::string& source, double rel_tol, const std::string& hint, Panel panel) {
  Question& q = add_question(id, Question::Kind::number, prompt, hint, panel);
  q.answer = answer;
  q.answer_source = source;
  q.rel_tol = rel_tol;
  // A value near 0 would make a relative tolerance impossibly tight: then an absolute one.
  q.abs_tol = std::abs(answer) < 1e-3 ? 1e-4 : 0;
  char tol[64];
  std::snprintf(tol, sizeof tol, "within %g%%", rel_tol * 100);
  q.tolerance_text = q.abs_tol > 0 ? "within 0.0001" : tol;
  q.answer_text = format_number(answer, 6);
  return q;
}

Question& ChapterBuilder::ask_integer(const std::string& id, const std::string& prompt, int64_t answer,
                                      const std::string& source, const std::string& hint, Panel panel) {
  Question& q = ask_number(id, prompt, double(answer), source, 0, hint, panel);
  q.whole = true;  // whole numbers: exactly (answer.h)
  q.abs_tol = 0;
  q.tolerance_text = "exactly";
  q.answer_text = std::to_string(answer);
  return q;
}

Question& ChapterBuilder::ask_choice(const std::string& id, const std::string& prompt,
                                     const std::vector<std::string>& choices, int correct, const std::string& hint,
                                     Panel panel) {
  Question& q = add_question(id, Question::Kind::choice, prompt, hint, panel);
  // The letters move with the seed (seed 1 keeps the written order): the choices rotated by an
  // amount from the seed and the question's id, so that a letter learnt by heart is not an answer.
  const size_t n = choices.size();
  size_t rot = 0;
  if (ch_.seed > 1 && n > 0) {
    uint64_t h = ch_.seed;
    for (char c : id) h = h * 131 + uint64_t(static_cast<unsigned char>(c));
    rot = size_t(h % n);
  }
  for (size_t k = 0; k < n; ++k) q.choices.push_back(choices[(k + rot) % n]);
  correct = int((size_t(correct) + n - rot) % n);
  q.correct = correct;
  q.answer = correct;
  q.answer_text = std::string(1, char('a' + correct));
  q.tolerance_text = "one letter";
  return q;
}

Question& ChapterBuilder::ask_budget(const std::string& id, const std::string& prompt, const RunDecl& run,
                                     int64_t budget_bytes, int64_t max_M, const std::string& answer_text,
                                     const std::string& hint, Panel panel) {
  Question& q = add_question(id, Question::Kind::budget, prompt, hint, panel);
  q.budget_run = run;
  q.budget_bytes = budget_bytes;
  q.budget_max_M = max_M;
  q.answer_text = answer_text;
  q.tolerance_text = "checked by the simulator";
  return q;
}

Question& ChapterBuilder::last_question() {
  if (cur().questions.empty()) throw InputError("course: a question's detail before the question");
  return cur().questions.back();
}

ChapterBuilder& ChapterBuilder::units(std::vector<std::string> u) {
  last_question().units = std::move(u);
  return *this;
}

ChapterBuilder& ChapterBuilder::in_terminal(const std::string& where) {
  last_question().terminal = where;
  return *this;
}

ChapterBuilder& ChapterBuilder::mistake(double value, const std::string& note, double tol) {
  Question& q = last_question();
  if (tol < 0) tol = q.whole ? 0 : std::max(q.abs_tol, q.rel_tol * std::abs(value));
  q.mistakes.push_back({value, tol, note});
  return *this;
}

ChapterBuilder& ChapterBuilder::inverse(const std::string& what) {
  const double a = last_question().answer;
  return a != 0 ? mistake(1 / a, "that is the inverse ratio (" + what + ")") : *this;
}

Chapter ChapterBuilder::finish() { return std::move(ch_); }

}  // namespace flashstep::course
