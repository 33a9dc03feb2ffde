// flashstep learn: the course in the terminal. The pages print as text; each question reads lines
// of standard input: a line not in the question's format is a slip (a note, and the question
// again); a wrong answer gets its diagnosis and hint and one more try, then the right answer. The
// chapter ends with "k of n correct". --answers prints the answers for teachers.
#include "app/commands.h"
#include "app/course/answer.h"
#include "app/course/course.h"
#include "app/course/io_explorer.h"
#include "core/l2_cache.h"
#include "core/problem.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep {

namespace {

// A page's text for the terminal: a step the text names as the app counts it ("step 20": 20
// steps applied, the slider's number) also gets the index `run --steps` prints for it (19), so
// that the step is found in the terminal's listing too.
std::string terminal_text(const course::Page& p) {
  std::string text = p.text;
  for (auto n = p.numbers.rbegin(); n != p.numbers.rend(); ++n) {
    const size_t at = n->source.rfind(".applied.");
    if (n->source.rfind("trace.", 0) != 0 || at == std::string::npos) continue;
    // Joined to the page's own parentheses rather than beside them: "step 7 (index 6 in run
    // --steps; Alg1 L12)", "(step 19, index 18 in run --steps)"; alone, " (index 6 in run --steps)".
    const std::string note = "index " + n->source.substr(at + 9) + " in run --steps";
    const size_t end = n->pos + n->text.size();
    const std::string before = text.substr(0, n->pos);
    const bool inside = std::count(before.begin(), before.end(), '(') > std::count(before.begin(), before.end(), ')');
    if (text.compare(end, 2, " (") == 0) text.insert(end + 2, note + "; ");
    else if (inside) text.insert(end, ", " + note);
    else text.insert(end, " (" + note + ")");
  }
  return text;
}

// Word-wraps a paragraph at `width` columns, keeping its line breaks and leading indentation.
std::string wrap(const std::string& text, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    const std::string para = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const size_t indent = para.find_first_not_of(' ');
    if (indent != std::string::npos && indent >= 2 && para.size() > width) {  // an indented line is a table or a chart: as it is
      out += para;
      if (nl == std::string::npos) break;
      out += "\n";
      start = nl + 1;
      continue;
    }
    line = para.substr(0, indent == std::string::npos ? para.size() : indent);
    const size_t base = line.size();
    size_t p = line.size();
    while (p < para.size()) {
      size_t q = para.find(' ', p);
      if (q == std::string::npos) q = para.size();
      const std::string word = para.substr(p, q - p);
      if (line.size() > base && line.size() + 1 + word.size() > width) {
        out += line + "\n";
        line = std::string(base, ' ');
      } else if (line.size() > base) {
        line += " ";
      }
      line += word;
      p = q + 1;
    }
    out += line;
    if (nl == std::string::npos) break;
    out += "\n";
    start = nl + 1;
  }
  return out;
}

// The terminal's width: its own, else $COLUMNS; 0 when neither is known (a pipe).
size_t terminal_width() {
  static const size_t width = [] {
    size_t w = 0;
    winsize ws{};
    if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      w = ws.ws_col;
    } else if (const char* c = std::getenv("COLUMNS")) {
      char* end = nullptr;
      const long v = std::strtol(c, &end, 10);
      if (end != c && *end == '\0' && v > 0) w = size_t(v);
    }
    return w;
  }();
  return width;
}

// The width the pages are wrapped at: 92 columns, or fewer where the terminal is narrower:
// wrapped at 92, every long line of an 80-column terminal broke in mid-word at its edge. Never
// under 40, where a formula's words would stand alone.
size_t text_width() { return terminal_width() ? std::clamp<size_t>(terminal_width(), 40, 92) : 92; }

// A reply to an answer, indented by two spaces: wrapped within a terminal's width, one line
// through a pipe (a transcript keeps each reply whole for grep, as before).
void print_reply(const std::string& text) {
  std::string out = terminal_width() ? wrap(text, text_width() - 2) : text;
  for (size_t at = 0; at != std::string::npos; at = out.find('\n', at)) {
    if (at) ++at;
    out.insert(at, "  ");
    ++at;
  }
  std::printf("%s\n", out.c_str());
}

// A choice, "  a) text", wrapped like the page with its later lines under its text (unwrapped,
// fp8's first choice ran past an 80-column terminal).
void print_choice(char letter, const std::string& text) {
  std::string out = wrap(text, text_width() - 5);
  for (size_t at = out.find('\n'); at != std::string::npos; at = out.find('\n', at + 6)) out.insert(at + 1, "     ");
  std::printf("  %c) %s\n", letter, out.c_str());
}

constexpr int kTries = 2;  // as in the app (app/gui/course_state.h)

std::string format_hint(const course::Question& q) {
  std::string h = q.hint;
  if (q.hint_panel != course::Panel::none) h += std::string(" (in the app: ") + course::panel_title(q.hint_panel) + ")";
  if (!q.terminal.empty()) h += " (in the terminal: " + q.terminal + ")";
  return h;
}

// Standard input, one answer line at a time, read with read(2): a line is capped at
// kMaxAnswerLine bytes (a stream without newlines, /dev/zero, is refused instead of filling
// memory), a NUL byte is part of the line (the answer reader refuses it), and a read error
// (standard input a directory) is an input error, not the end of the answers.
class AnswerInput {
 public:
  // False at the end of input.
  bool line(std::string* out) {
    out->clear();
    if (ended_) return false;
    for (;;) {
      if (at_ == len_) {
        ssize_t n;
        do n = ::read(STDIN_FILENO, buf_, sizeof buf_);
        while (n < 0 && errno == EINTR);
        if (n < 0) throw InputError(std::string("reading the answers from standard input: ") + std::strerror(errno));
        if (n == 0) {
          ended_ = true;
          return !out->empty();
        }
        at_ = 0;
        len_ = size_t(n);
      }
      const char c = buf_[at_++];
      if (c == '\n') return true;
      if (out->size() >= course::kMaxAnswerLine)
        throw InputError("an answer line is longer than " + std::to_string(course::kMaxAnswerLine) +
                         " characters (one answer per line)");
      *out += c;
    }
  }

 private:
  char buf_[4096];
  size_t at_ = 0, len_ = 0;
  bool ended_ = false;
};

// The reader of the transcript went away (`learn ... | head -1`): stop quietly, as a finished
// run would, instead of dying by SIGPIPE or reporting a write error nobody reads.
void flush_or_quit() {
  if (std::fflush(stdout) != 0 && errno == EPIPE) std::_Exit(0);
}

// Asks one question until it is answered right, answered wrong twice (the app's two tries), left
// blank, or the answers end. A slip (a line not in the question's format) gets a one-line note
// and the question again; it is not a try. Returns true when answered right.
bool ask(const course::Question& q, AnswerInput& in, bool echo) {
  int tries = 0;
  for (;;) {
    std::printf("answer> ");
    flush_or_quit();
    std::string line;
    if (!in.line(&line)) {
      std::printf("\n");
      print_reply("no answer (standard input ended). The answer: " + q.answer_text);
      return false;
    }
    if (echo) std::printf("%s\n", course::quoted(line).c_str());
    // A line of --answers ("id<TAB>answer") counts as its answer, so its output pipes back as it is.
    const size_t tab = line.find('\t');
    if (tab != std::string::npos && line.compare(0, tab, q.id) == 0) line = line.substr(tab + 1);
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      print_reply("no answer. The answer: " + q.answer_text);
      return false;
    }
    const course::Verdict v = course::check_answer(q, line);
    if (v.bad_format) {
      print_reply(v.message + ". Try again.");
      continue;
    }
    if (v.correct) {
      print_reply("correct." + (v.message.empty() ? "" : "  " + v.message));
      return true;
    }
    ++tries;
    print_reply("not right: " + v.message + ".");
    print_reply("Hint: " + format_hint(q));
    if (tries >= kTries) {
      print_reply("The answer: " + q.answer_text);
      return false;
    }
    std::printf("  One more try.\n");
  }
}

// The IO explorer's sizes for the terminal's table: the page's, or --d and --M when given (0: not given).
struct IoSizes {
  int64_t d = 0, M = 0;
};

int run_learn(const std::string& id, uint64_t seed, bool answers, const IoSizes& io) {
  const course::Chapter ch = course::make_chapter(id, seed);
  bool explorer = false;
  for (const course::Page& p : ch.pages) explorer |= p.scene.view == course::CentreView::io_explorer;
  if ((io.d || io.M) && !explorer)
    throw InputError("--d and --M set the IO explorer's table; chapter " + id + " has none (io-complexity has)");

  if (answers) {
    for (const course::Page& p : ch.pages)
      for (const course::Question& q : p.questions) std::printf("%s\t%s\n", q.id.c_str(), q.answer_text.c_str());
    return 0;
  }
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("standard input is a directory, not answers (one answer per line)");
  std::signal(SIGPIPE, SIG_IGN);
  const bool echo = !::isatty(STDIN_FILENO);  // a piped answer is shown, so the transcript reads on
  AnswerInput in;
  const int index = course::chapter_index(id);
  const std::string head = "Chapter " + std::to_string(index + 1) + " of " + std::to_string(course::chapter_list().size()) +
                           ": " + ch.id + " - " + ch.title + "\nThe problem: " + ch.problem_text;
  std::printf("%s\n", wrap(head, text_width()).c_str());
  const size_t n = ch.question_count();
  size_t asked = 0, correct = 0;
  for (size_t pi = 0; pi < ch.pages.size(); ++pi) {
    const course::Page& p = ch.pages[pi];
    std::printf("\n== Page %zu of %zu: %s ==\n%s\n", pi + 1, ch.pages.size(), p.title.c_str(), wrap(terminal_text(p), text_width()).c_str());
    if (!p.terminal.empty()) std::printf("%s", p.terminal.c_str());
    if (p.scene.view == course::CentreView::io_explorer)  // the explorer's sliders, as a table over N
      std::printf("%s", course::io_table(io.d ? io.d : p.scene.io_d, io.M ? io.M : p.scene.io_M).c_str());
    std::printf("   (in the app: flashstep gui --course %s --page %zu%s)\n", ch.id.c_str(), pi + 1,
                seed != 1 ? (" --seed " + std::to_string(seed)).c_str() : "");
    for (const course::Question& q : p.questions) {
      ++asked;
      std::string head = "Question " + std::to_string(asked) + " of " + std::to_string(n) + " [" + q.id + "]: " + q.prompt;
      if (q.kind == course::Question::Kind::number)
        head += std::string(" (") + (q.whole ? "a whole number" : "a number") + "; checked " + q.tolerance_text + ")";
      std::printf("\n%s\n", wrap(head, text_width()).c_str());
      if (q.kind == course::Question::Kind::choice) {
        for (size_t c = 0; c < q.choices.size(); ++c) print_choice(char('a' + c), q.choices[c]);
        std::printf("Type a letter.\n");
      }
      if (ask(q, in, echo)) ++correct;
    }
  }
  std::printf("\n%zu of %zu correct\n", correct, n);
  flush_or_quit();
  return 0;
}

}  // namespace

void add_learn_command(CLI::App& app, const SetAction& set_action) {
  static std::string id;
  static uint64_t seed = 1;
  static bool list = false, answers = false;
  static int64_t io_d = 0;
  static std::string io_M;
  auto* c = app.add_subcommand("learn", "a guided course through FlashAttention, in the terminal: pages of text and "
                                        "questions checked against the trace (answers from standard input)");
  c->add_option("chapter", id, "the chapter's id (flashstep learn --list)");
  c->add_flag("--list", list, "list the chapters: id<TAB>title");
  c->add_option("--seed", seed, "the problem's seed, 1 to 999999999: other sizes and inputs, other answers (default 1)")
      ->check(CLI::Validator(
          [](std::string& text) {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9 ||
                std::stoll(text) < 1)
              return std::string("--seed must be a whole number from 1 to 999999999 (got '" + text + "')");
            return std::string();
          },
          "", "seed"));
  static CLI::Option* d_opt = nullptr;
  d_opt = c->add_option("--d", io_d, "io-complexity: the IO explorer's table at this head dimension (16 to 256, a multiple of 16)");
  c->add_option("--M", io_M, "io-complexity: ... and this SRAM size (float32 words, or KiB as 228KiB; 16 to 1024 KiB)");
  c->add_flag("--answers", answers, "for teachers: print the chapter's answers, id<TAB>answer, in the order asked");
  c->callback([&set_action] {
    set_action([] {
      if (list) {
        if (!id.empty() || answers) throw InputError("--list takes no chapter and no --answers");
        for (const course::ChapterInfo& ci : course::chapter_list()) std::printf("%s\t%s\n", ci.id, ci.title);
        return 0;
      }
      if (id.empty()) throw InputError("learn needs a chapter id or --list (flashstep learn --list)");
      IoSizes io;
      if (!io_M.empty()) io.M = parse_sram_size(io_M);
      if (d_opt->count() > 0 || !io_M.empty()) {  // one of the two: the other d = 64 or the H200's M
        io.d = d_opt->count() > 0 ? io_d : 64;
        if (io_M.empty()) io.M = find_gpu("h200").smem_per_sm_bytes / 4;
        course::check_io_sizes(io.d, io.M);
      }
      return run_learn(id, seed, answers, io);
    });
  });
}

}  // namespace flashstep
