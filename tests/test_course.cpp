// The guided course's model, in-process: every chapter walked with the answers `learn --answers`
// prints (all right), with wrong answers (hints, nothing right), a second seed (other numerical
// answers), every number of every page against the source it names (re-derived by
// course_sources.h from fresh runs), and the roofline's intensities against the simulator.
#include "app/course/answer.h"
#include "app/course/builder.h"
#include "app/course/io_explorer.h"
#include "app/course/roofline.h"
#include "course_sources.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

using namespace flashstep;
using course::Chapter;
using course::Question;

namespace {

std::vector<std::string> chapter_ids() {
  std::vector<std::string> ids;
  for (const course::ChapterInfo& c : course::chapter_list()) ids.push_back(c.id);
  return ids;
}

// A wrong answer in the question's own format.
std::string wrong_answer(const Question& q) {
  switch (q.kind) {
    case Question::Kind::number: return course::format_number(q.answer * 1.5 + (q.answer == 0 ? 1 : 0) + 0.37, 6);
    case Question::Kind::choice: return std::string(1, char('a' + (q.correct + 1) % int(q.choices.size())));
    case Question::Kind::budget: return "1,1," + std::to_string(q.budget_max_M);
  }
  return "";
}

bool covered(const course::Page& p, size_t at) {
  for (const course::Number& n : p.numbers)
    if (at >= n.pos && at < n.pos + n.text.size()) return true;
  for (const auto& [a, b] : p.notation)
    if (at >= a && at < b) return true;
  return false;
}

// Digits in a page's text outside its Numbers and notation, which are not part of a name
// (L12, fp32, H200, N^2, 4d, Q_i): a number typed in by hand.
std::vector<std::string> stray_numbers(const course::Page& p) {
  std::vector<std::string> stray;
  const std::string& t = p.text;
  for (size_t k = 0; k < t.size(); ++k) {
    if (!std::isdigit(static_cast<unsigned char>(t[k])) || covered(p, k)) continue;
    size_t e = k;
    while (e < t.size() && (std::isdigit(static_cast<unsigned char>(t[e])) || t[e] == '.')) ++e;
    const char before = k > 0 ? t[k - 1] : ' ';
    const char after = e < t.size() ? t[e] : ' ';
    // The word before, when a space separates it: "Algorithm 1", "Theorem 2", "row 0", "block 2".
    size_t w = k >= 1 && before == ' ' ? k - 1 : k;
    while (w > 0 && std::isalpha(static_cast<unsigned char>(t[w - 1]))) --w;
    const std::string word = before == ' ' ? t.substr(w, k - 1 - w) : "";
    static const std::set<std::string> kNaming = {"Algorithm", "Theorem", "Block", "block", "Row", "row", "Figure", "variant"};
    const bool dashed_name = before == '-' && k >= 2 && std::isalpha(static_cast<unsigned char>(t[k - 2]));  // FlashAttention-2
    const bool in_name = std::isalpha(static_cast<unsigned char>(before)) || before == '_' || before == '^' ||
                         (std::isalpha(static_cast<unsigned char>(after)) && after != 'e') || dashed_name ||
                         kNaming.count(word) > 0;
    if (!in_name) stray.push_back("'" + t.substr(k > 20 ? k - 20 : 0, 40) + "'");
    k = e;
  }
  return stray;
}

}  // namespace

TEST_CASE("course: the chapters are listed in the textbook's order with the issue's ids", "[course]") {
  const std::vector<std::string> want = {"memory-bound", "safe-softmax",  "online-softmax", "tiling",
                                         "algorithm-1",  "io-complexity", "fa2-order",      "masks-dropout-fusion",
                                         "backward",     "gpu",            "decode",
                                         "paged-kv",     "hopper",         "fp8"};
  CHECK(chapter_ids() == want);
  REQUIRE_THROWS_WITH(course::make_chapter("no-such-chapter"), Catch::Matchers::StartsWith("unknown chapter 'no-such-chapter'"));
}

TEST_CASE("course: every chapter walked with its own answers gets every question right", "[course]") {
  for (uint64_t seed : {uint64_t(1), uint64_t(2), uint64_t(5)})
    for (const std::string& id : chapter_ids()) {
      INFO(id << " seed " << seed);
      const Chapter ch = course::make_chapter(id, seed);
      REQUIRE(ch.pages.size() >= 2);
      REQUIRE(ch.question_count() >= 2);
      for (const course::Page& p : ch.pages)
        for (const Question& q : p.questions) {
          INFO(q.id << ": typed '" << q.answer_text << "'");
          const course::Verdict v = course::check_answer(q, q.answer_text);
          CHECK(v.correct);
          CHECK_FALSE(v.bad_format);
        }
    }
}

TEST_CASE("course: wrong answers are wrong, get a hint that names where to look, and bad formats are told apart", "[course]") {
  for (const std::string& id : chapter_ids()) {
    const Chapter ch = course::make_chapter(id, 1);
    std::set<std::string> ids;
    for (const course::Page& p : ch.pages)
      for (const Question& q : p.questions) {
        INFO(id << "/" << q.id);
        CHECK(ids.insert(q.id).second);  // unique within the chapter
        CHECK(q.hint.size() > 10);
        CHECK_FALSE(q.tolerance_text.empty());
        const course::Verdict v = course::check_answer(q, wrong_answer(q));
        CHECK_FALSE(v.correct);
        CHECK_FALSE(v.bad_format);
        CHECK_FALSE(v.message.empty());
        for (const char* bad : {"abc", "1.2.3", "", "z"}) {
          const course::Verdict b = course::check_answer(q, bad);
          CHECK_FALSE(b.correct);
          CHECK(b.bad_format);
        }
      }
  }
}

TEST_CASE("course: a numerical answer is accepted within its stated tolerance and refused just outside", "[course]") {
  for (const std::string& id : chapter_ids()) {
    const Chapter ch = course::make_chapter(id, 1);
    for (const course::Page& p : ch.pages)
      for (const Question& q : p.questions) {
        if (q.kind != Question::Kind::number) continue;
        INFO(id << "/" << q.id << " answer " << q.answer);
        if (q.whole) {  // whole and equal: nothing within 0.5 is rounded to it
          CHECK(q.answer == std::floor(q.answer));
          CHECK(course::check_answer(q, course::format_number(q.answer, 15)).correct);
          CHECK(course::check_answer(q, course::format_number(q.answer, 15) + ".000").correct);
          for (double off : {-0.5, -0.1, 0.4, 1.0})
            CHECK_FALSE(course::check_answer(q, course::format_number(q.answer + off, 15)).correct);
          continue;
        }
        const double tol = std::max(q.abs_tol, q.rel_tol * std::abs(q.answer));
        CHECK(course::check_answer(q, course::format_number(q.answer + 0.9 * tol, 12)).correct);
        CHECK_FALSE(course::check_answer(q, course::format_number(q.answer + 1.2 * tol + 1e-12, 12)).correct);
        CHECK_FALSE(course::check_answer(q, course::format_number(q.answer - 1.2 * tol - 1e-12, 12)).correct);
      }
  }
}

TEST_CASE("course: a second seed changes the problem and the numerical answers of every chapter", "[course]") {
  for (const std::string& id : chapter_ids()) {
    INFO(id);
    const Chapter a = course::make_chapter(id, 1), b = course::make_chapter(id, 2);
    REQUIRE(a.question_count() == b.question_count());
    size_t changed = 0, numeric = 0;
    for (size_t p = 0; p < a.pages.size(); ++p)
      for (size_t k = 0; k < a.pages[p].questions.size(); ++k) {
        const Question& x = a.pages[p].questions[k];
        const Question& y = b.pages[p].questions[k];
        CHECK(x.id == y.id);
        if (x.kind != Question::Kind::number) continue;
        ++numeric;
        changed += x.answer_text != y.answer_text;
      }
    CHECK(numeric > 0);
    CHECK(changed > 0);
  }
}

TEST_CASE("course: every number in every page's text is the value of the source it names", "[course]") {
  for (uint64_t seed : {uint64_t(1), uint64_t(2)})
    for (const std::string& id : chapter_ids()) {
      const Chapter ch = course::make_chapter(id, seed);
      const coursetest::World w = coursetest::rebuild(ch);
      size_t checked = 0;
      for (const course::Page& p : ch.pages) {
        INFO(id << " seed " << seed << ", page '" << p.title << "'");
        CHECK(stray_numbers(p) == std::vector<std::string>{});
        for (const course::Number& n : p.numbers) {
          INFO("number '" << n.text << "' from " << n.source);
          REQUIRE(p.text.substr(n.pos, n.text.size()) == n.text);
          const double v = coursetest::evaluate(w, n.source);
          // Values the course computes in float (a product of a tile and V) agree to float's precision.
          CHECK(v == Approx(n.value).epsilon(1e-6).margin(1e-12));
          // The printed text is the value to its digits.
          const double shown = std::strtod(n.text.c_str(), nullptr);
          CHECK(shown == Approx(v).epsilon(5e-4).margin(1e-9));
          ++checked;
        }
        for (const Question& q : p.questions)
          if (q.kind == Question::Kind::number) {
            INFO("answer of " << q.id << " from " << q.answer_source);
            CHECK(coursetest::evaluate(w, q.answer_source) == Approx(q.answer).epsilon(1e-9).margin(1e-12));
          }
      }
      INFO(id);
      CHECK(checked >= 5);
    }
}

TEST_CASE("course: the budget challenge is checked by the simulator", "[course]") {
  const Chapter ch = course::make_chapter("io-complexity", 1);
  const Question* q = nullptr;
  for (const course::Page& p : ch.pages)
    for (const Question& x : p.questions)
      if (x.kind == Question::Kind::budget) q = &x;
  REQUIRE(q != nullptr);
  // The run's own M is over budget; the largest M with the paper's blocks is under it.
  const int64_t at_default = course::budget_reads(*q, 0, 0, 1024);
  CHECK(at_default >= q->budget_bytes);
  CHECK(course::check_answer(*q, q->answer_text).correct);
  // Blocks that do not fit are wrong, with the simulator's reason.
  const course::Verdict big = course::check_answer(*q, "64,64,2048");
  CHECK_FALSE(big.correct);
  CHECK_THAT(big.message, Catch::Matchers::Contains("do not fit"));
  // M over the limit is wrong.
  CHECK_FALSE(course::check_answer(*q, "16,32,4096").correct);
  // The same blocks written with spaces count; a fourth number is a bad format.
  std::string spaced = q->answer_text;
  for (char& c : spaced)
    if (c == ',') c = ' ';
  CHECK(course::check_answer(*q, spaced).correct);
  CHECK(course::check_answer(*q, q->answer_text + ",1").bad_format);
}

TEST_CASE("course: the roofline's intensities are the simulator's FLOPs over its bytes", "[course][roofline]") {
  const course::Roofline r = course::simulate_roofline(256, 32, 4096);
  REQUIRE(r.kernels.size() == 5);
  ProblemSpec s;
  s.nq = s.nk = 256;
  s.d = 32;
  s.M = 4096;
  s.schedule = Schedule::standard;
  const Trace st = fstest::run_spec(s, true);
  // Standard attention's three kernels are its lines L1, L2, L3.
  for (int line = 1; line <= 3; ++line) {
    double flops = 0, bytes = 0;
    for (const Step& x : st.steps)
      if (line_number(x.line) == line) {
        flops += double(x.flops);
        bytes += double(x.hbm_read + x.hbm_write);
      }
    INFO("Alg0 L" << line);
    CHECK(r.kernels[size_t(line - 1)].intensity() == Approx(flops / bytes).epsilon(1e-12));
  }
  for (Schedule sc : {Schedule::fa1, Schedule::fa2}) {
    s.schedule = sc;
    const Trace t = fstest::run_spec(s, false);
    const double want = double(t.totals.flops) / double(t.totals.hbm_read_bytes + t.totals.hbm_write_bytes);
    CHECK(r.kernels[sc == Schedule::fa1 ? 3 : 4].intensity() == Approx(want).epsilon(1e-12));
  }
  // The softmax kernel does a few FLOPs per element it moves: far below both ridges; the fused
  // kernel does more FLOPs per byte than standard attention's three kernels together.
  CHECK(r.kernels[1].intensity() < 1.0);
  const double standard_all = (r.kernels[0].flops + r.kernels[1].flops + r.kernels[2].flops) /
                              (r.kernels[0].bytes + r.kernels[1].bytes + r.kernels[2].bytes);
  CHECK(r.kernels[3].intensity() > standard_all);
  CHECK(r.kernels[4].intensity() > r.kernels[3].intensity());
  // The figure: two ceilings, five kernels, measured points from the bench file.
  course::Roofline with = r;
  with.d = 64;  // the bench has no d = 32 rows
  course::add_measured(with, nlohmann::json::parse(std::ifstream(FLASHSTEP_BENCH_FILE)), "h200.json");
  CHECK_FALSE(with.measured.empty());
  for (const course::MeasuredPoint& p : with.measured) {
    CHECK(p.intensity > 0);
    CHECK(p.tflops > 0);
  }
  const plot::Figure f = course::roofline_figure(with);
  CHECK(f.series.size() >= 7);
  CHECK(f.x.log);
  CHECK(f.y.log);
}

TEST_CASE("course: the answer reader takes what a person types and nothing that only looks like a number", "[course]") {
  Question q;
  q.kind = Question::Kind::number;
  q.answer = 896;
  q.whole = true;
  q.units = {"B", "bytes"};
  struct Typed {
    std::string text;
    bool ok;
    double value;
  };
  const Typed typed[] = {
      {"896", true, 896},       {"  896  ", true, 896},  {"896 B", true, 896},     {"896b", true, 896},
      {"896 BYTES", true, 896}, {"+896", true, 896},     {"8.96e2", true, 896},    {"896.", true, 896},
      {"896 KiB", false, 0},    {"896%", false, 0},      {"8,96", false, 0},       {"0x380", false, 0},
      {"inf", false, 0},        {"nan", false, 0},       {"896 B B", false, 0},    {std::string("896\0", 4), false, 0},
      {std::string("8\0junk", 6), false, 0},             {"", false, 0},           {".", false, 0},
      {"1e99999", false, 0},    {"- 896", false, 0},     {"896-", false, 0},
  };
  for (const Typed& t : typed) {
    INFO("'" << course::quoted(t.text) << "'");
    const course::Reading r = course::read_answer(q, t.text);
    CHECK(r.ok == t.ok);
    if (t.ok) CHECK(r.value == t.value);
    if (!t.ok) CHECK_FALSE(r.slip.empty());
    if (!t.ok) CHECK(r.slip.find('\n') == std::string::npos);
  }
  // A percentage where one is asked.
  q.percent = true;
  q.units.clear();
  CHECK(course::read_answer(q, "13.5%").ok);
  CHECK(course::read_answer(q, "13.5 %").value == 13.5);
  // Whole and equal: 7.5 is not 8, and a mistake's note is given.
  q = Question{};
  q.kind = Question::Kind::number;
  q.answer = 8;
  q.whole = true;
  q.mistakes.push_back({7.5, 0.5, "Bc is rounded up"});
  CHECK_FALSE(course::check_answer(q, "7.5").correct);
  CHECK(course::check_answer(q, "7.5").message.find("Bc is rounded up") != std::string::npos);
  CHECK_FALSE(course::check_answer(q, "7.99").correct);
  CHECK_FALSE(course::check_answer(q, "8.01").correct);
  CHECK(course::check_answer(q, "8").correct);
  // Choices: the letter in either case, b), (b), b., or the choice's text.
  q = Question{};
  q.kind = Question::Kind::choice;
  q.choices = {"one", "two", "three"};
  q.correct = 1;
  for (const char* t : {"b", "B", "b)", "(b)", "b.", " B) ", "two", "TWO"}) {
    INFO(t);
    CHECK(course::check_answer(q, t).correct);
  }
  for (const char* t : {"d", "bb", "b c", "2", ""}) {
    INFO(t);
    CHECK(course::check_answer(q, t).bad_format);
  }
  CHECK_FALSE(course::check_answer(q, "a)").correct);
  CHECK_FALSE(course::check_answer(q, "a)").bad_format);
}

TEST_CASE("course: the roofline says which ceiling, draws each ridge, and the text agrees with the numbers",
          "[course][roofline]") {
  for (uint64_t seed : {uint64_t(1), uint64_t(2)}) {
    INFO("seed " << seed);
    const Chapter ch = course::make_chapter("memory-bound", seed);
    REQUIRE(ch.roofline);
    const course::Roofline& r = *ch.roofline;
    const double fp32 = r.device.fp32_flops / r.device.hbm_bytes_per_s, bf16 = r.device.bf16_tc_flops / r.device.hbm_bytes_per_s;
    const double s = r.kernels[0].intensity(), p = r.kernels[1].intensity(), o = r.kernels[2].intensity();
    const std::string& text = ch.pages[1].text;
    // The matmul kernels against the float32 ridge, as the page states it.
    if (s > fp32 && o > fp32) CHECK(text.find("the two matmul kernels sit above it") != std::string::npos);
    else CHECK(text.find("the two matmul kernels sit below it") != std::string::npos);
    CHECK(text.find(p > fp32 ? "the softmax above it" : "the softmax far below it") != std::string::npos);
    if (std::max({s, p, o}) < bf16) CHECK(text.find("all three are below") != std::string::npos);
    // The furthest-left question asks the lowest intensity, which is below both ridges.
    const Question& q = ch.pages[1].questions[1];
    REQUIRE(q.id == "furthest-below");
    const double lowest = std::min({s, p, o});
    // The right choice names the kernel of the lowest intensity (the letters move with the seed).
    const std::string picked = q.choices[size_t(q.correct)];
    int named = 0;
    for (size_t k = 0; k < 3; ++k)
      if (r.kernels[k].label.rfind(picked, 0) == 0) {
        ++named;
        CHECK(r.kernels[k].intensity() == lowest);
      }
    CHECK(named == 1);
    CHECK(lowest < fp32);
    // Each ridge is drawn: a vertical series at the peak over the bandwidth.
    const plot::Figure f = course::roofline_figure(r);
    int ridges = 0;
    for (const plot::Series& se : f.series)
      if (se.label.rfind("ridge: ", 0) == 0) {
        ++ridges;
        REQUIRE(se.x.size() == 2);
        CHECK_THAT(se.x[0], Catch::Matchers::WithinRel(se.label.find("float32") != std::string::npos ? fp32 : bf16, 1e-9));
      }
    CHECK(ridges == 2);
  }
}

TEST_CASE("course: the multiple-choice letters move with the seed, and the right one stays the same text", "[course]") {
  for (const std::string& id : {std::string("safe-softmax"), std::string("tiling"), std::string("fa2-order"),
                                std::string("masks-dropout-fusion"), std::string("backward")}) {
    std::map<std::string, std::set<int>> letters;
    std::map<std::string, std::set<std::string>> texts;
    for (uint64_t seed = 1; seed <= 7; ++seed) {
      const Chapter ch = course::make_chapter(id, seed);
      for (const course::Page& p : ch.pages)
        for (const Question& q : p.questions)
          if (q.kind == Question::Kind::choice) {
            letters[q.id].insert(q.correct);
            texts[q.id].insert(q.choices[size_t(q.correct)]);
            CHECK(course::check_answer(q, q.choices[size_t(q.correct)]).correct);
          }
    }
    for (const auto& [qid, set] : letters) {
      INFO(id << "/" << qid);
      CHECK(set.size() >= 2);
      CHECK(texts[qid].size() == 1);
    }
  }
}

TEST_CASE("course: the IO explorer's bytes are the simulator's, and its ratio tends to M / 3d^2", "[course]") {
  // Small enough to run: every schedule's counted bytes against the explorer's row.
  for (const int64_t d : {16, 32}) {
    const int64_t n = 256, M = 16 * 256;  // 16 KiB of float32 words
    const course::IoRow r = course::io_row(n, d, M);
    ProblemSpec s;
    s.nq = s.nk = n;
    s.d = d;
    s.M = M;
    int64_t counted[3];
    const Schedule scheds[3] = {Schedule::standard, Schedule::fa1, Schedule::fa2};  // registry-exempt: the explorer compares these schedules
    for (int k = 0; k < 3; ++k) {
      s.schedule = scheds[k];
      const Trace t = fstest::run_spec(s, false);
      counted[k] = t.totals.hbm_read_bytes + t.totals.hbm_write_bytes;
    }
    INFO("d = " << d);
    CHECK(r.standard == counted[0]);
    CHECK(r.fa1 == counted[1]);
    CHECK(r.fa2 == counted[2]);
  }
  // At the H200's 228 KiB and N = 65536 the ratio is within 10% of M / 3d^2 (the 4Nd and Tc's
  // rounding are what is left).
  for (const int64_t d : {64, 128}) {
    const course::IoRow r = course::io_row(65536, d, 228 * 256);
    INFO("d = " << d);
    CHECK(r.ratio() == Approx(228.0 * 256 / (3.0 * d * d)).epsilon(0.1));
  }
  // The figure has the three schedules, Theorem 2's two orders and the marked N; bad sizes are refused.
  const plot::Figure f = course::io_figure(64, 228 * 256, 16384);
  CHECK(f.series.size() == 6);
  CHECK(f.series[0].x.size() == course::io_sizes().size());
  CHECK_THROWS_WITH(course::io_row(100, 64, 16384), Catch::Matchers::Contains("N must be from 256 to 65536"));
  CHECK_THROWS_WITH(course::io_row(1024, 48 + 1, 16384), Catch::Matchers::Contains("multiple of 16"));
}

namespace {

// The O-update page of online-softmax worked here in float64 from its inputs alone (two blocks):
// block 1's m, l, O; block 2's m_new, e^(m - m_new), l_new, O_new; and the typical wrong values.
struct OWork {
  double m1 = 0, l1 = 0, o1 = 0, m2 = 0, alpha = 0, l2 = 0, o2 = 0, direct = 0;
  double lt = 0, mt = 0, pv2 = 0;  // block 2's own sum, max and sum e^(x - m~) v
};

OWork work_o_update(const std::vector<double>& x, const std::vector<double>& v) {
  OWork w;
  const size_t h = x.size() / 2;
  w.m1 = x[0];
  for (size_t k = 0; k < h; ++k) w.m1 = std::max(w.m1, x[k]);
  w.mt = x[h];
  for (size_t k = h; k < x.size(); ++k) w.mt = std::max(w.mt, x[k]);
  double pv1 = 0;
  for (size_t k = 0; k < h; ++k) {
    w.l1 += std::exp(x[k] - w.m1);
    pv1 += std::exp(x[k] - w.m1) * v[k];
  }
  for (size_t k = h; k < x.size(); ++k) {
    w.lt += std::exp(x[k] - w.mt);
    w.pv2 += std::exp(x[k] - w.mt) * v[k];
  }
  w.o1 = pv1 / w.l1;
  w.m2 = std::max(w.m1, w.mt);
  w.alpha = std::exp(w.m1 - w.m2);
  w.l2 = w.alpha * w.l1 + std::exp(w.mt - w.m2) * w.lt;
  w.o2 = (w.l1 * w.alpha * w.o1 + std::exp(w.mt - w.m2) * w.pv2) / w.l2;
  // softmax(x) . v in one pass
  const double mx = *std::max_element(x.begin(), x.end());
  double num = 0, den = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    num += std::exp(x[k] - mx) * v[k];
    den += std::exp(x[k] - mx);
  }
  w.direct = num / den;
  return w;
}

const course::Page& o_update_page(const Chapter& ch) {
  for (const course::Page& p : ch.pages)
    if (p.title == "The O update, filled in by you") return p;
  FAIL("online-softmax has no O-update page");
  return ch.pages.front();
}

const course::LessonDecl& lesson_of(const Chapter& ch, const course::Page& p) {
  for (const course::LessonDecl& l : ch.lessons)
    if (l.name == p.scene.lesson) return l;
  FAIL("no lesson " << p.scene.lesson);
  return ch.lessons.front();
}

}  // namespace

TEST_CASE("course: the O-update page's answers are [1, 2, 3, 4]'s online softmax with V, worked here in float64",
          "[course]") {
  std::set<double> finals;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    const Chapter ch = course::make_chapter("online-softmax", seed);
    const course::Page& p = o_update_page(ch);
    const course::LessonDecl& l = lesson_of(ch, p);
    CHECK(l.values == std::vector<double>{1, 2, 3, 4});
    CHECK(l.block == 2);
    REQUIRE(l.v.size() == 4);
    if (seed == 1) CHECK(l.v == std::vector<double>{10, 20, 30, 40});
    const OWork w = work_o_update(l.values, l.v);
    // The final O is softmax([1, 2, 3, 4]) . V.
    CHECK(w.o2 == Approx(w.direct).epsilon(1e-14));
    const std::vector<std::pair<std::string, double>> want = {{"o-m1", w.m1},   {"o-l1", w.l1},       {"o-o1", w.o1},
                                                              {"o-m2", w.m2},   {"o-alpha", w.alpha}, {"o-l2", w.l2},
                                                              {"o-o2", w.direct}};
    REQUIRE(p.questions.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const Question& q = p.questions[k];
      INFO(q.id);
      CHECK(q.id == want[k].first);  // in the order of the working
      CHECK(q.answer == Approx(want[k].second).epsilon(1e-12));
      CHECK(course::check_answer(q, q.answer_text).correct);
    }
    // The page prints the inputs only: every number is an entry of x or V or the block size, none a
    // statistic a question asks (the lesson view opens with no block merged).
    for (const course::Number& n : p.numbers) {
      INFO(n.source);
      const bool input = n.source.rfind("lesson.book_v.values.", 0) == 0 || n.source.rfind("lesson.book_v.v.", 0) == 0 ||
                         n.source == "lesson.book_v.block";
      CHECK(input);
    }
    CHECK(p.scene.lesson_shown == 0);
    finals.insert(w.o2);
  }
  CHECK(finals.size() >= 5);  // V, and so O, moves with the seed
}

TEST_CASE("course: the O update's typical mistakes each get their own note", "[course]") {
  for (uint64_t seed : {uint64_t(1), uint64_t(2), uint64_t(3)}) {
    INFO("seed " << seed);
    const Chapter ch = course::make_chapter("online-softmax", seed);
    const course::Page& p = o_update_page(ch);
    const course::LessonDecl& l = lesson_of(ch, p);
    const OWork w = work_o_update(l.values, l.v);
    std::map<std::string, const Question*> q;
    for (const Question& x : p.questions) q[x.id] = &x;
    const double old_part = w.l1 * w.o1;  // block 1's l O
    struct Wrong {
      std::string id;
      double value;
      std::string note;  // a piece of the message it must get
    };
    const Wrong wrong[] = {
        {"o-o2", (old_part + w.pv2) / w.l2, "O was not rescaled"},
        {"o-o2", (w.alpha * old_part + w.pv2) / (w.l1 + w.lt), "l was not rescaled"},
        {"o-o2", (w.alpha * old_part + w.pv2) / w.lt, "divides by block 2's own l~"},
        {"o-o2", (w.alpha * w.o1 + w.pv2) / w.l2, "multiply block 1's O back by its l"},
        {"o-o2", w.pv2 / w.lt, "block 2's weighted mean alone"},
        {"o-l2", w.l1 + w.lt, "l was not rescaled"},
        {"o-l2", w.l1 + std::exp(w.mt - w.m1) * w.lt, "the max is carried forward"},
        {"o-m2", w.m1, "the max is carried and merged"},
        {"o-alpha", 1 / w.alpha, "that is e^(m_new - m)"},
        {"o-alpha", 1.0, "not 1"},
        {"o-o1", w.o1 * w.l1, "before dividing by l"},
        {"o-l1", std::exp(l.values[0]) + std::exp(l.values[1]), "that is sum e^x"},
        {"o-m1", w.m2, "the max of the whole row"},
    };
    for (const Wrong& x : wrong) {
      INFO(x.id << " typed " << x.value << ", expecting '" << x.note << "'");
      REQUIRE(q.count(x.id) == 1);
      // As a student types it, to four significant digits.
      const course::Verdict v = course::check_answer(*q[x.id], course::format_number(x.value, 4));
      CHECK_FALSE(v.correct);
      CHECK_THAT(v.message, Catch::Matchers::Contains(x.note));
    }
  }
}
