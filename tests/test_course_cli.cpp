// `flashstep learn` as a user runs it: the contract's spellings (--list, a chapter with answers on
// standard input, --seed, --answers), one error line with exit 2, and `plot --figure roofline`.
#include "app/course/course.h"
#include "test_helpers.h"
#ifdef FLASHSTEP_HAVE_PLOT_CLI
#include "png_helpers.h"
#endif

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

using fstest::kBin;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

std::string last_line(const std::string& text) {
  const auto l = lines_of(text);
  return l.empty() ? "" : l.back();
}

// The answers column of --answers, one per line.
std::string answers_of(const std::string& id, const std::string& seed_flag) {
  std::string out;
  REQUIRE(fstest::run_command(kBin + " learn " + id + seed_flag + " --answers", out) == 0);
  std::string col;
  for (const std::string& l : lines_of(out)) {
    const size_t tab = l.find('\t');
    REQUIRE(tab != std::string::npos);
    col += l.substr(tab + 1) + "\n";
  }
  return col;
}

}  // namespace

TEST_CASE("learn --list: one line per chapter, id TAB title, in the course's order", "[course][cli]") {
  std::string out;
  REQUIRE(fstest::run_command(kBin + " learn --list", out) == 0);
  const auto l = lines_of(out);
  REQUIRE(l.size() == 14);
  const char* ids[] = {"memory-bound", "safe-softmax",  "online-softmax", "tiling",   "algorithm-1",
                       "io-complexity", "fa2-order",    "masks-dropout-fusion", "backward", "gpu",
                       "decode",        "paged-kv",     "hopper",         "fp8"};
  for (size_t k = 0; k < 14; ++k) {
    INFO(l[k]);
    CHECK(l[k].rfind(std::string(ids[k]) + "\t", 0) == 0);
    CHECK(l[k].size() > std::string(ids[k]).size() + 5);
  }
}

TEST_CASE("learn online-softmax: the textbook's 4 and 1.553 are right, and early EOF counts the rest unanswered",
          "[course][cli]") {
  std::string out;
  REQUIRE(fstest::run_command("printf '4\\n1.553\\n' | " + kBin + " learn online-softmax", out) == 0);
  std::string answers;
  REQUIRE(fstest::run_command(kBin + " learn online-softmax --answers", answers) == 0);
  const size_t n = lines_of(answers).size();
  CHECK(last_line(out) == "2 of " + std::to_string(n) + " correct");
  CHECK(out.find("no answer (standard input ended)") != std::string::npos);
  // Nothing on standard input at all.
  REQUIRE(fstest::run_command(kBin + " learn online-softmax < /dev/null", out) == 0);
  CHECK(last_line(out) == "0 of " + std::to_string(n) + " correct");
}

TEST_CASE("learn CHAPTER: the --answers piped back score n of n, for two seeds, wrong ones get hints", "[course][cli]") {
  const fstest::TempDir tmp;
  for (const char* id : {"memory-bound", "safe-softmax", "online-softmax", "tiling", "algorithm-1", "io-complexity",
                         "fa2-order", "masks-dropout-fusion", "backward", "gpu", "decode", "paged-kv", "hopper",
                         "fp8"})
    for (const std::string& seed : {std::string(""), std::string(" --seed 3")}) {
      INFO(id << seed);
      const std::string col = answers_of(id, seed);
      const size_t n = lines_of(col).size();
      REQUIRE(n >= 2);
      const std::string file = (tmp.path / "answers.txt").string();
      std::ofstream(file) << col;
      std::string out;
      REQUIRE(fstest::run_command(kBin + " learn " + id + seed + " < " + file, out) == 0);
      CHECK(last_line(out) == std::to_string(n) + " of " + std::to_string(n) + " correct");
      CHECK(out.find("== Page 1 of") != std::string::npos);
      // The same answers against another seed's problem: not all of them right any more.
      if (seed.empty()) {
        std::string other;
        REQUIRE(fstest::run_command(kBin + " learn " + id + " --seed 2 < " + file, other) == 0);
        CHECK(last_line(other) != std::to_string(n) + " of " + std::to_string(n) + " correct");
      }
    }
  // --answers' own lines (id TAB answer) piped straight back count too.
  std::string out;
  REQUIRE(fstest::run_command(kBin + " learn gpu --seed 2 --answers | " + kBin + " learn gpu --seed 2", out) == 0);
  CHECK(last_line(out) == "4 of 4 correct");
  REQUIRE(fstest::run_command("printf '7\\n9\\n0.5\\n' | " + kBin + " learn online-softmax", out) == 0);
  CHECK(last_line(out).rfind("0 of ", 0) == 0);
  CHECK(out.find("Hint: ") != std::string::npos);
  CHECK(out.find("The answer: 4") != std::string::npos);
  CHECK(out.find("in the app: the online-softmax Lesson view") != std::string::npos);
}

// An endless answer line must not grow memory: under a 1 GB address-space limit the run still ends
// with its one error line. AddressSanitizer reserves terabytes of address space at start, so its
// build runs without the limit (the timeout and the line cap still hold). GCC says ASan by
// __SANITIZE_ADDRESS__, clang by __has_feature(address_sanitizer).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FS_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(FS_TEST_ASAN)
const std::string kMemoryLimit = "";
#else
const std::string kMemoryLimit = "ulimit -v 1000000; ";
#endif

TEST_CASE("learn: an unknown chapter, a bad seed or unreadable answers are one error line and exit 2", "[course][cli]") {
  const fstest::TempDir tmp;
  struct Case {
    std::string cmd, expect;
  };
  const Case cases[] = {
      {kBin + " learn no-such-chapter", "unknown chapter 'no-such-chapter'"},
      {kBin + " learn", "learn needs a chapter id or --list"},
      {kBin + " learn tiling --seed 0", "--seed must be a whole number"},
      {kBin + " learn tiling --seed x", "--seed must be a whole number"},
      // A stream without newlines is not read into memory without end (under a 1 GB address-space limit).
      {kMemoryLimit + "timeout 20 " + kBin + " learn tiling < /dev/zero", "an answer line is longer than"},
      {"head -c 5000 /dev/zero | " + kBin + " learn online-softmax", "an answer line is longer than"},
      {kBin + " learn tiling < " + tmp.path.string(), "standard input is a directory"},
      {kBin + " learn tiling --d 64 < /dev/null", "--d and --M set the IO explorer's table"},
      {kBin + " learn io-complexity --d 17 < /dev/null", "d must be a multiple of 16 from 16 to 256"},
      {kBin + " learn io-complexity --M 3KiB < /dev/null", "M must be whole KiB of float32 words from 16 to 1024"},
      {kBin + " learn io-complexity --M 1000 < /dev/null", "M must be whole KiB"},
  };
  for (const Case& c : cases) {
    INFO(c.cmd);
    std::string out;
    const int rc = fstest::run_command("{ " + c.cmd + " 2>&1 >/dev/null; }", out);
    CHECK(rc == 2);
    CHECK(out.rfind("flashstep: error: ", 0) == 0);
    CHECK(out.find(c.expect) != std::string::npos);
    CHECK(lines_of(out).size() == 1);
  }
}

TEST_CASE("learn: a line not in the question's format is a slip: a one-line note, the question again, exit 0",
          "[course][cli]") {
  // The slips, each followed by the right answer: the question counts as right.
  struct Case {
    std::string id, input, note;
    int right;
  };
  const std::string mb = answers_of("memory-bound", "");
  const auto mbl = lines_of(mb);
  const Case cases[] = {
      {"online-softmax", "four\n4\n", "'four' is not a number", 1},
      {"online-softmax", "4\n1.553 s\n1.553\n", "'1.553 s' is not a number alone (no unit)", 2},
      {"online-softmax", "4\n1,553\n1.553\n", "no commas", 2},
      {"online-softmax", "4\n13.5%\n1.553\n", "the question does not ask a percentage", 2},
      {"online-softmax", "0x4\n4\n", "decimal digits, not hex", 1},
      {"online-softmax", std::string("4\0junk\n4\n", 10), "'4?junk' is not a number", 1},
      {"online-softmax", "12 apples\n 4 \n", "'12 apples' is not a number", 1},
      {"memory-bound", mbl[0] + "\n" + mbl[1] + "\nq\n" + mbl[2] + ")\n", "'q' is not one of the letters a to c", 3},
  };
  for (const Case& c : cases) {
    INFO(c.id << ": " << c.input);
    const fstest::TempDir tmp;
    const std::string file = (tmp.path / "in.txt").string();
    std::ofstream(file, std::ios::binary) << c.input;
    std::string out;
    REQUIRE(fstest::run_command(kBin + " learn " + c.id + " < " + file, out) == 0);
    CHECK(out.find(c.note) != std::string::npos);
    CHECK(out.find(". Try again.") != std::string::npos);
    const size_t n = lines_of(answers_of(c.id, "")).size();
    CHECK(last_line(out) == std::to_string(c.right) + " of " + std::to_string(n) + " correct");
  }
}

TEST_CASE("learn: whole-number answers are whole and equal, two tries, known mistakes are diagnosed", "[course][cli]") {
  // tiling's first question is Bc for twice the M: 8 for seed 1. 7.5 and 8.4 are wrong, twice.
  std::string out;
  REQUIRE(fstest::run_command("printf '7.5\\n8.4\\n' | " + kBin + " learn tiling", out) == 0);
  CHECK(out.find("7.5 is not it: Bc is rounded up") != std::string::npos);
  CHECK(out.find("8.4 is not it: the answer is a whole number") != std::string::npos);
  CHECK(out.find("One more try.") != std::string::npos);
  CHECK(last_line(out).rfind("0 of ", 0) == 0);
  // A wrong first try, then the right answer: right (as in the app).
  const auto tl = lines_of(answers_of("tiling", ""));
  REQUIRE(fstest::run_command("printf '7.5\\n" + tl[0] + ".0\\n' | " + kBin + " learn tiling", out) == 0);
  CHECK(last_line(out).rfind("1 of ", 0) == 0);
  // algorithm-1's byte count: off by a fraction is wrong; with its unit it is right.
  const auto al = lines_of(answers_of("algorithm-1", ""));
  const std::string reads = al.back();
  REQUIRE(fstest::run_command("printf '\\n\\n\\n" + reads + ".4\\n" + reads + " B\\n' | " + kBin + " learn algorithm-1", out) == 0);
  CHECK(out.find(reads + ".4 is not it") != std::string::npos);
  CHECK(last_line(out) == "1 of " + std::to_string(al.size()) + " correct");
  // safe-softmax: float32's limit (88.7228) typed for bfloat16's (88.7189) is diagnosed; 88.72, which
  // is bfloat16's limit to two decimals as much as float32's, is only not precise enough.
  REQUIRE(fstest::run_command("printf '\\n88.7228\\n' | " + kBin + " learn safe-softmax", out) == 0);
  CHECK(out.find("88.7228 is not it: that is float32's limit; the question asks bf16") != std::string::npos);
  REQUIRE(fstest::run_command("printf '\\n88.72\\n' | " + kBin + " learn safe-softmax", out) == 0);
  CHECK(out.find("88.72 is not it.") != std::string::npos);
  CHECK(out.find("88.72 is not it: that is float32's limit") == std::string::npos);
}

TEST_CASE("learn online-softmax: the O update's mistakes are diagnosed in the terminal, line by line", "[course][cli]") {
  // Seed 1: x = [1, 2, 3, 4] in blocks of 2, V = [10, 20, 30, 40]. Worked here: block 1's l and O,
  // block 2's l~ and P~V, the merge.
  const double e = std::exp(1.0), l1 = 1 + 1 / e, o1 = (10 / e + 20) / l1, lt = l1, pv2 = 30 / e + 40;
  const double a = 1 / (e * e), l2 = a * l1 + lt, o2 = (a * l1 * o1 + pv2) / l2;
  char unrescaled_o[32], unrescaled_l[32], right_o[32], right_l[32];
  std::snprintf(unrescaled_o, sizeof unrescaled_o, "%.4f", (l1 * o1 + pv2) / l2);
  std::snprintf(unrescaled_l, sizeof unrescaled_l, "%.4f", l1 + lt);
  std::snprintf(right_o, sizeof right_o, "%.4f", o2);
  std::snprintf(right_l, sizeof right_l, "%.4f", l2);
  // The chapter's answers in order, with the O page's l_new and O_new each typed wrong once first.
  std::string listed;
  REQUIRE(fstest::run_command(kBin + " learn online-softmax --answers", listed) == 0);
  const auto ans = lines_of(listed);
  std::string typed, l2_given, o2_given;
  for (const std::string& x : ans) {
    const std::string id = x.substr(0, x.find('\t')), value = x.substr(x.find('\t') + 1);
    if (id == "o-l2") typed += std::string(unrescaled_l) + "\n", l2_given = value;
    if (id == "o-o2") typed += std::string(unrescaled_o) + "\n", o2_given = value;
    typed += value + "\n";
  }
  REQUIRE_FALSE(l2_given.empty());
  REQUIRE_FALSE(o2_given.empty());
  const fstest::TempDir tmp;
  const std::string file = (tmp.path / "typed.txt").string();
  std::ofstream(file) << typed;
  std::string out;
  REQUIRE(fstest::run_command(kBin + " learn online-softmax < " + file, out) == 0);
  CHECK(out.find(std::string(unrescaled_l) + " is not it: l was not rescaled") != std::string::npos);
  CHECK(out.find(std::string(unrescaled_o) + " is not it: O was not rescaled") != std::string::npos);
  CHECK(last_line(out) == std::to_string(ans.size()) + " of " + std::to_string(ans.size()) + " correct");
  // The right values, worked here, are what the chapter asks.
  CHECK(std::abs(std::stod(l2_given) - l2) < 1e-4);
  CHECK(std::abs(std::stod(o2_given) - o2) < 1e-3);
  CHECK(std::string(right_o) == "34.9265");
  CHECK(std::string(right_l) == "1.5530");
}

TEST_CASE("learn: answers with the units the question names, upper-case letters, b) and a copied choice count",
          "[course][cli]") {
  const fstest::TempDir tmp;
  for (const char* id : {"memory-bound", "tiling", "algorithm-1", "io-complexity", "fa2-order", "masks-dropout-fusion",
                         "backward", "gpu", "decode", "paged-kv", "hopper", "fp8"}) {
    INFO(id);
    // Every answer as a person might type it: with a unit where the question has one, spaces
    // around, a choice's letter as "B)" or copied with its text ("b) NaN in both (inf / inf)"), a
    // minus sign as typography writes it (U+2212, from a PDF).
    const flashstep::course::Chapter ch = flashstep::course::make_chapter(id, 1);
    std::string typed;
    using flashstep::course::Question;
    int choices = 0;
    for (const flashstep::course::Page& p : ch.pages)
      for (const Question& q : p.questions) {
        std::string a = q.answer_text;
        if (q.kind == Question::Kind::number && !q.units.empty()) a += " " + q.units.back();
        if (q.kind == Question::Kind::number && a[0] == '-') a = "\xE2\x88\x92" + a.substr(1);
        if (q.kind == Question::Kind::choice)
          a = choices++ % 2 ? std::string(1, char('A' + q.correct)) + ")"
                            : std::string(1, char('a' + q.correct)) + ") " + q.choices[size_t(q.correct)];
        typed += "  " + a + "  \n";
      }
    const std::string file = (tmp.path / "typed.txt").string();
    std::ofstream(file) << typed;
    std::string out;
    REQUIRE(fstest::run_command(kBin + " learn " + id + " < " + file, out) == 0);
    const std::string n = std::to_string(ch.question_count());
    CHECK(last_line(out) == n + " of " + n + " correct");
    CHECK(out.find("Try again") == std::string::npos);
  }
}

TEST_CASE("learn | head -1 stops quietly: no SIGPIPE death, no error line", "[course][cli]") {
  std::string out;
  const int rc = fstest::run_command(
      // The answers come a second late, so head has read its line and gone when the rest is written.
      "bash -c '{ sleep 1; } | " + kBin + " learn memory-bound 2>/tmp/flashstep_learn_head_err.$$ | head -1 >/dev/null; "
      "echo rc=${PIPESTATUS[0]}; cat /tmp/flashstep_learn_head_err.$$; rm -f /tmp/flashstep_learn_head_err.$$'",
      out);
  CHECK(rc == 0);
  CHECK(out == "rc=0\n");
}

#ifdef FLASHSTEP_HAVE_PLOT_CLI
TEST_CASE("plot --figure roofline draws the roofline headless, with the shipped bench file by default", "[course][cli][roofline]") {
  const fstest::TempDir tmp;
  const std::string png = (tmp.path / "roofline.png").string();
  std::string out;
  REQUIRE(fstest::run_command(kBin + " plot --figure roofline --out " + png, out) == 0);
  CHECK(out.find("roofline") != std::string::npos);
  const fstest::Image im = fstest::load_png(png);
  CHECK(im.w == 1200);
  CHECK(im.h == 700);
  CHECK(fstest::distinct_colours(im) > 8);
  // Every simulated kernel shows in the plot, not only in the legend: S = QK^T's orange disc lay
  // wholly under O = PV's (28.67 against 28.44 FLOP/B), its pixels the legend's alone (70, where
  // P = softmax(S)'s red, alone in the plot, has 198). A marker on an earlier one is drawn
  // smaller, and the earlier shows as a ring.
  auto pixels_of = [&](unsigned char r, unsigned char g, unsigned char b) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == r && im.rgb[p + 1] == g && im.rgb[p + 2] == b;
    return n;
  };
  const size_t s_pixels = pixels_of(242, 142, 43), p_pixels = pixels_of(225, 87, 89);
  CHECK(p_pixels > 100);
  CHECK(double(s_pixels) > 0.5 * double(p_pixels));
}
#endif

TEST_CASE("learn io-complexity: the IO explorer's page prints its table over N, at --d and --M when given", "[course][cli]") {
  std::string out;
  REQUIRE(fstest::run_command(kBin + " learn io-complexity --d 128 --M 64KiB < /dev/null", out) == 0);
  CHECK(out.find("d = 128, M = 16384 float32 words (64 KiB)") != std::string::npos);
  // One row per power of two from 256 to 65536; each row's columns from the tiling rule and the
  // closed forms, worked out here from the printed N alone.
  int rows = 0;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    double n, bc, tc, tr, st, a1, f2, ratio;
    if (!(ls >> n >> bc >> tc >> tr >> st >> a1 >> f2 >> ratio) || n < 256) continue;
    ++rows;
    const double d = 128, M = 16384, Bc = std::ceil(M / (4 * d)), Br = std::min(Bc, d);
    INFO(line);
    CHECK(bc == Bc);
    CHECK(tc == std::ceil(n / Bc));
    CHECK(tr == std::ceil(n / Br));
    CHECK(st == Approx(4 * (4 * n * n + 4 * n * d) / 1e6).epsilon(1e-3));
    CHECK(a1 == Approx(4 * (3 * n * d + 2 * n + tc * n * (3 * d + 4)) / 1e6).epsilon(1e-3));
    CHECK(f2 == Approx(4 * (2 * n * d + n + 2 * tr * n * d) / 1e6).epsilon(1e-3));
    CHECK(ratio == Approx(st / a1).epsilon(3e-3));
  }
  CHECK(rows == 2 * 9);  // the real-scale page and the explorer page, N = 256 .. 65536
}

TEST_CASE("learn: a hint's terminal line is where the value is", "[course][cli]") {
  using flashstep::course::Question;
  // A question answered from a data sheet or a closed form (no app panel) points at no run; a run's
  // line names the step by its index in run --steps, as the page text does ("index 17").
  for (const flashstep::course::ChapterInfo& info : flashstep::course::chapter_list())
    for (uint64_t seed : {1, 2}) {
      const std::string id = info.id;
      const flashstep::course::Chapter ch = flashstep::course::make_chapter(id, seed);
      for (const flashstep::course::Page& p : ch.pages)
        for (const Question& q : p.questions) {
          INFO(id << " seed " << seed << " " << q.id << ": " << q.terminal);
          if (q.hint_panel == flashstep::course::Panel::none) CHECK(q.terminal.empty());
          CHECK(q.terminal.find(", step ") == std::string::npos);
        }
    }
  // decode: the combine's lse and the first split's factor are at the indices the hints give.
  const flashstep::course::Chapter dec = flashstep::course::make_chapter("decode", 1);
  for (const flashstep::course::Page& p : dec.pages)
    for (const Question& q : p.questions) {
      if (q.id != "lse" && q.id != "weight") continue;
      const size_t at = q.terminal.find(", index ");
      REQUIRE(at != std::string::npos);
      const std::string index = q.terminal.substr(at + 8, q.terminal.find(' ', at + 8) - at - 8);
      std::string out;
      REQUIRE(fstest::run_command(kBin + " " + q.terminal.substr(std::string("flashstep ").size(), at - 10), out) == 0);
      std::string line;
      for (const std::string& l : lines_of(out))
        if (l.rfind("  " + index + "  ", 0) == 0) line = l;
      INFO(q.terminal << "\n" << line);
      CHECK(line.find(q.id == "lse" ? "FD L17" : "Combine: load O_i^(1)") != std::string::npos);
    }
}

TEST_CASE("learn: a step's index in run --steps joins the page's own parentheses, never doubles them", "[course][cli]") {
  // The note after "step 7" was added as " (index 6 in run --steps)" wherever the step stood:
  // "step 7 (index 6 in run --steps) (Alg1 L12)", "(step 19 (index 18 in run --steps))".
  size_t notes = 0;
  for (const course::ChapterInfo& c : course::chapter_list()) {
    CAPTURE(c.id);
    std::string out;
    REQUIRE(fstest::run_command(kBin + " learn " + c.id + " < /dev/null", out) == 0);
    std::string text;  // the lines joined, as wrapping may break a note anywhere
    for (const std::string& l : lines_of(out)) text += l + " ";
    for (size_t at = text.find("in run --steps"); at != std::string::npos; at = text.find("in run --steps", at + 1)) {
      ++notes;
      const size_t open = text.rfind('(', at), close = text.find(')', at);
      REQUIRE(open != std::string::npos);
      REQUIRE(close != std::string::npos);
      INFO(text.substr(open > 40 ? open - 40 : 0, close - open + 80));
      CHECK(text.compare(close, 3, ") (") != 0);  // no second parenthesis right after
      CHECK(text.compare(close, 2, "))") != 0);   // nor one around it
    }
  }
  CHECK(notes >= 6);
}

TEST_CASE("learn hopper: each measured ratio comes from kernels of one run", "[course][cli]") {
  // Kernels 15 and 16 (and 17 and 18) were measured in several runs; their ratio is read from
  // points of the same run, as explain --pipeline pairs them (mixing runs made ping-pong's 0.997x a "gain").
  const std::string bench = FLASHSTEP_BENCH_FILE;  // assets/bench/h200.json; the Hopper file beside it
  const nlohmann::json hop = nlohmann::json::parse(std::ifstream(bench.substr(0, bench.rfind('/')) + "/h200_hopper.json"));
  for (uint64_t seed : {1, 2}) {
    const flashstep::course::Chapter ch = flashstep::course::make_chapter("hopper", seed);
    std::vector<std::string> sources;  // the run of each kernel named, in the page's order
    for (const flashstep::course::Number& n : ch.pages.at(1).numbers)
      if (n.source.rfind("hopper:/points/", 0) == 0 && n.source.find("/tflops") != std::string::npos &&
          n.source.find(" / ") == std::string::npos) {
        const size_t k = std::stoul(n.source.substr(15));
        sources.push_back(hop["points"][k]["source"].get<std::string>());
      }
    REQUIRE(sources.size() == 4);
    CHECK(sources[0] == sources[1]);
    CHECK(sources[2] == sources[3]);
  }
}

TEST_CASE("learn wraps its text and its replies to an 80-column terminal", "[course][cli]") {
  // The pages were wrapped at 92 columns and the replies (not right, the hint, the answer) not at
  // all: in an 80-column terminal every long line broke in mid-word at the edge. $COLUMNS stands
  // for the terminal's width here (a pipe has none). The pages' tables and charts cannot be
  // wrapped, so they are drawn to fit 80 columns (hopper's Gantt chart was 115, io-complexity's
  // heading 86), and a choice's text is wrapped under its letter: no line of any chapter is wider.
  const fstest::TempDir tmp;
  const std::string ones = (tmp.path / "ones.txt").string();
  {
    std::ofstream f(ones);
    for (int k = 0; k < 80; ++k) f << "1\n";  // a wrong answer (or a slip) to every question, twice
  }
  for (const course::ChapterInfo& c : course::chapter_list()) {
    CAPTURE(c.id);
    std::string out;
    REQUIRE(fstest::run_command("COLUMNS=80 " + kBin + " learn " + c.id + " < " + ones, out) == 0);
    std::istringstream in(out);
    std::string line;
    int hints = 0;
    while (std::getline(in, line)) {
      hints += line.rfind("  Hint:", 0) == 0;
      INFO(line);
      CHECK(line.size() <= 80);
    }
    CHECK(hints > 0);
  }
}
