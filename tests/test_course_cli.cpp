// `flashstep learn` as a user runs it: the contract's spellings (--list, a chapter with answers on
// standard input, --seed, --answers), one error line with exit 2, and `plot --figure roofline`.
#include "test_helpers.h"
#ifdef FLASHSTEP_HAVE_PLOT_CLI
#include "png_helpers.h"
#endif

#include <catch2/catch.hpp>

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
  REQUIRE(l.size() == 10);
  const char* ids[] = {"memory-bound", "safe-softmax",  "online-softmax", "tiling",   "algorithm-1",
                       "io-complexity", "fa2-order",    "masks-dropout-fusion", "backward", "gpu"};
  for (size_t k = 0; k < 10; ++k) {
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

TEST_CASE("learn CHAPTER: the --answers piped back score n of n, for two seeds; wrong ones get hints", "[course][cli]") {
  const fstest::TempDir tmp;
  for (const char* id : {"memory-bound", "safe-softmax", "online-softmax", "tiling", "algorithm-1", "io-complexity",
                         "fa2-order", "masks-dropout-fusion", "backward", "gpu"})
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
  CHECK(out.find("in the app: the Online-softmax lesson view") != std::string::npos);
}

TEST_CASE("learn: an unknown chapter or an answer in the wrong format is one error line and exit 2", "[course][cli]") {
  struct Case {
    std::string cmd, expect;
  };
  const Case cases[] = {
      {kBin + " learn no-such-chapter", "unknown chapter 'no-such-chapter'"},
      {kBin + " learn", "learn needs a chapter id or --list"},
      {kBin + " learn tiling --seed 0", "--seed must be a whole number"},
      {kBin + " learn tiling --seed x", "--seed must be a whole number"},
      {"printf 'four\\n' | " + kBin + " learn online-softmax", "answer to question final-m: 'four' is not a number"},
      {"printf '4\\n1.553\\n0.1353\\n12 apples\\n' | " + kBin + " learn online-softmax", "is not a number"},
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
  // A letter out of range for a choice question.
  std::string col = answers_of("memory-bound", "");
  const auto ls = lines_of(col);
  std::string out;
  const int rc = fstest::run_command("{ printf '" + ls[0] + "\\n" + ls[1] + "\\nq\\n' | " + kBin + " learn memory-bound 2>&1 >/dev/null; }", out);
  CHECK(rc == 2);
  CHECK(out.find("'q' is not one of the letters a to c") != std::string::npos);
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
}
#endif
