// The guided course through FlashAttention: chapters of short pages and checked questions, in
// the terminal (`flashstep learn`) and in the app (`flashstep gui --course`). This is the model
// only: no ImGui, no OpenGL, no files written, so the in-process tests, the CLI, the desktop app
// and the WebAssembly build all read the same chapters.
//
// Every number in a page's text and every answer is computed when the chapter is made, from the
// simulator's trace, a closed form, the device's published figures or the bench file
// (assets/bench), and carries the name of its source (docs/course.md's "The source names", e.g.
// "trace.tiny.step.19.l_new.0" or "closed.tiny.fa1.read_bytes"). The tests re-derive each named
// source on their own and compare. A chapter is made for a seed: the seed picks the sizes and the
// inputs of the problems, so the answers change with it (seed 1: the shipped presets' problems).
#pragma once
#include "core/problem.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flashstep::course {

// The app's panels a page can point at (outline) or a hint can name.
enum class Panel { none, tiles, algorithm, memory, softmax, lesson, bench, roofline, pipeline, explorer };
const char* panel_title(Panel p);  // "the Memory panel (right)", ...

// A part of a panel that a page's text names ("the Memory panel's SRAM bar"): the app scrolls
// its panel to show it when the page opens, where the panel is too short to show it at once.
enum class Anchor { none, sram, whole_run, o_error, explorer_table };

// What the app's centre shows for a page.
enum class CentreView { tiles, lesson, bench, roofline, pipeline, io_explorer };

// A number as it appears in a page's text: its value, the text it is printed as, where, and the
// source it was taken from.
struct Number {
  std::string source;  // docs/course.md, "The source names"
  double value = 0;
  std::string text;    // as printed, e.g. "1.553" or "6144"
  size_t pos = 0;      // offset of `text` in the page text
};

// A run the chapter's text refers to by name ("tiny", "causal", "gpt2-standard"): the problem
// and whether the backward pass follows. The tests run it again to check the numbers.
struct RunDecl {
  std::string name;
  ProblemSpec spec;
  bool backward = false;
  bool record = true;
  std::string preset;  // the shipped preset this equals for seed 1 ("" if none)
};

// A vector whose online softmax the text refers to by name (core/lesson.h), with a value vector v
// when the output O is carried too.
struct LessonDecl {
  std::string name;
  std::vector<double> values;
  size_t block = 2;
  std::vector<double> v;
};

struct Question {
  enum class Kind { number, choice, budget };
  std::string id;        // unique within its chapter: "final-m"
  Kind kind = Kind::number;
  std::string prompt;
  // number: the value, its source, and the tolerance |typed - answer| <= max(abs_tol, rel_tol |answer|)
  double answer = 0;
  std::string answer_source;
  double abs_tol = 0, rel_tol = 0;
  std::string tolerance_text;      // "within 0.1%", "exactly"
  bool whole = false;              // a whole number: right only when equal (answer.h)
  bool percent = false;            // the question asks a percentage: "13.5%" is 13.5
  std::vector<std::string> units;  // units the question names, accepted after the number ("B", "bytes")
  // Known mistakes: a wrong value within `tol` of `value` is answered with `note` ("Bc is rounded up").
  struct Mistake {
    double value = 0, tol = 0;
    std::string note;
  };
  std::vector<Mistake> mistakes;
  // choice: typed as the letter a, b, c, ...
  std::vector<std::string> choices;
  int correct = 0;
  // budget (Algorithm 1's read budget, checked by the simulator): typed "Br,Bc,M"
  RunDecl budget_run;              // the problem whose Br, Bc, M the student picks
  int64_t budget_bytes = 0;        // reads must be fewer than this
  int64_t budget_max_M = 0;        // M may be at most this
  std::string hint;                // where the answer can be read
  Panel hint_panel = Panel::none;
  std::string terminal;            // where the terminal shows it: "flashstep run ... --steps, step index 18"
  std::string answer_text;         // exactly what a student types to get it right
};

// What the app shows for a page: a run (by name), the step to stand on, the centre view, the
// panel to look at (outlined) and the side panels shown.
struct Scene {
  std::string run;        // a RunDecl name
  int64_t step = 0;       // steps applied (the cursor's index): step k of the trace is at k + 1
  CentreView view = CentreView::tiles;
  Panel outline = Panel::none;
  Anchor anchor = Anchor::none;  // the part of a panel the text names (scrolled into view)
  std::vector<Panel> panels;  // side panels shown beside the centre (algorithm, memory, softmax)
  std::string lesson;     // a LessonDecl name for the lesson view
  int lesson_shown = -1;  // blocks merged in the lesson view (-1: all)
  std::string bench_figure;  // the Bench view's figure (bc, tflops, memory; "" leaves it)
  std::string pipeline_technique;  // the Pipeline view's technique (core/pipeline_model.h; hopper chapter)
  int pipeline_d = 128;             // and its head dimension
  int pipeline_n = 4096;            // and N: where the page quotes a measurement, the N it was measured at
  // The IO explorer's starting N, d and M (float32 words; app/course/io_explorer.h), io-complexity chapter.
  int64_t io_n = 16384, io_d = 64, io_M = 58368;
};

struct Page {
  std::string title;
  std::string text;
  std::vector<Number> numbers;     // every number in `text`, in order
  // Spans of `text` that are notation, not data ("1 + Tc (1 + 6 Tr)", "1/(1 - p)"): their digits
  // are the formula's own constants.
  std::vector<std::pair<size_t, size_t>> notation;
  Scene scene;
  // Printed after the text in the terminal only, where the app draws the thing itself (the
  // Pipeline view's Gantt chart as `flashstep explain --pipeline` prints it). No data: the
  // numbers a question needs are in `text`, with their sources.
  std::string terminal;
  std::vector<Question> questions;  // asked after the page
};

struct Roofline;  // roofline.h

struct Chapter {
  std::string id, title;
  uint64_t seed = 1;
  std::string problem_text;  // the problem at hand, one line
  std::vector<RunDecl> runs;
  std::vector<LessonDecl> lessons;
  std::vector<Page> pages;
  std::shared_ptr<const Roofline> roofline;  // the memory-bound chapter's figure
  size_t question_count() const;
  const RunDecl& run(const std::string& name) const;  // throws InputError
};

struct ChapterInfo {
  const char* id;
  const char* title;
};
// The chapters in the course's order (the textbook chapter's).
const std::vector<ChapterInfo>& chapter_list();
// Makes a chapter for a seed (runs its problems). Throws InputError naming the known ids.
Chapter make_chapter(const std::string& id, uint64_t seed = 1);
int chapter_index(const std::string& id);  // -1 when unknown

// Checking a typed answer (answer.h: what each format accepts). A text that is not in the
// question's format is `bad_format` (a slip: the caller asks again), with a one-line message
// naming the format. A wrong answer's message is the diagnosis of a known mistake when one fits.
struct Verdict {
  bool correct = false;
  bool bad_format = false;
  std::string message;  // why it is wrong (budget: the simulator's bytes, or the tiles that do not fit)
};
Verdict check_answer(const Question& q, const std::string& typed);

// The budget challenge's check: Algorithm 1 with the typed Br, Bc, M on the question's problem,
// run by the simulator. Returns the bytes read, or throws InputError (tiles that do not fit).
int64_t budget_reads(const Question& q, int64_t br, int64_t bc, int64_t M);

}  // namespace flashstep::course
