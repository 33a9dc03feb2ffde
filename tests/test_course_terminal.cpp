// Every question of every chapter answered from the terminal alone: `flashstep learn CH` is run
// with no answers, its printed pages are parsed, and each question is worked out the way a
// student would, from the numbers printed on its page (and the chapter's problem line), with the
// formulas the text teaches. The answers are then typed back into `learn`, which must count
// them all right. Nothing here reads the course's internal answers.
#include "e4m3_oracle.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

namespace {

using fstest::kBin;

// The printed chapter: its problem line and the text of each page, the questions' ids in order.
struct Printed {
  std::string problem;
  std::vector<std::string> pages;
  std::vector<std::pair<std::string, int>> questions;  // id, page index
};

Printed parse_learn(const std::string& out) {
  Printed p;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("The problem: ", 0) == 0) p.problem = line;
    if (line.rfind("== Page ", 0) == 0) p.pages.emplace_back();
    if (line.rfind("Question ", 0) == 0) {
      const size_t a = line.find('['), b = line.find(']');
      p.questions.emplace_back(line.substr(a + 1, b - a - 1), int(p.pages.size()) - 1);
    }
    if (!p.pages.empty()) p.pages.back() += line + "\n";
  }
  return p;
}

// The text joined into one line (the terminal wraps at 92 columns).
std::string flat(std::string t) {
  std::replace(t.begin(), t.end(), '\n', ' ');
  return t;
}

const std::string kNum = R"(([-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?))";

// The first number after `label` (a regular expression); fails the test when there is none.
double after(const std::string& text, const std::string& label) {
  std::smatch m;
  const std::string t = flat(text);
  if (!std::regex_search(t, m, std::regex(label + R"(\s*)" + kNum))) FAIL("no number after '" << label << "' in: " << t);
  return std::stod(m[1]);
}

// The numbers of the bracketed list after `label`: "label [1, 2, 3]".
std::vector<double> list_after(const std::string& text, const std::string& label) {
  const std::string t = flat(text);
  const size_t at = t.find(label);
  if (at == std::string::npos) FAIL("no '" << label << "' in: " << t);
  const size_t a = t.find('[', at), b = t.find(']', a);
  std::vector<double> v;
  std::stringstream ss(t.substr(a + 1, b - a - 1));
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::stod(item));
  return v;
}

// The letter of the choice whose text contains `key`, from the question's printed choices.
std::string letter_of(const std::string& page, const std::string& key) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > 4 && line[0] == ' ' && line[3] == ')' && line.find(key) != std::string::npos) return line.substr(2, 1);
  FAIL("no choice with '" << key << "'");
  return "";
}

double sum_exp_minus_max(const std::vector<double>& v) {
  const double m = *std::max_element(v.begin(), v.end());
  double l = 0;
  for (double x : v) l += std::exp(x - m);
  return l;
}

std::string fmt(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}
std::string whole(double x) { return std::to_string(int64_t(std::llround(x))); }

// The O-update page worked by hand: block 1 alone, then the merge with block 2 (two blocks).
struct OUpdate {
  double m1, l1, o1, m2, alpha, l2, o2;
};
OUpdate o_update(const std::string& page) {
  const std::vector<double> x = list_after(page, "Take x ="), v = list_after(page, "and V =");
  const size_t bs = size_t(after(page, "in blocks of"));
  REQUIRE(x.size() == v.size());
  REQUIRE(x.size() == 2 * bs);
  OUpdate r{};
  double mt = x[bs], lt = 0, pv1 = 0, pv2 = 0;
  r.m1 = x[0];
  for (size_t k = 0; k < bs; ++k) r.m1 = std::max(r.m1, x[k]);
  for (size_t k = bs; k < 2 * bs; ++k) mt = std::max(mt, x[k]);
  r.l1 = 0;
  for (size_t k = 0; k < bs; ++k) {
    r.l1 += std::exp(x[k] - r.m1);
    pv1 += std::exp(x[k] - r.m1) * v[k];
  }
  for (size_t k = bs; k < 2 * bs; ++k) {
    lt += std::exp(x[k] - mt);
    pv2 += std::exp(x[k] - mt) * v[k];
  }
  r.o1 = pv1 / r.l1;
  r.m2 = std::max(r.m1, mt);
  r.alpha = std::exp(r.m1 - r.m2);
  r.l2 = r.alpha * r.l1 + std::exp(mt - r.m2) * lt;
  r.o2 = (r.l1 * r.alpha * r.o1 + std::exp(mt - r.m2) * pv2) / r.l2;
  return r;
}

using Solver = std::function<std::string(const Printed&, const std::string& page)>;

// One solver per question: the student's working, from the printed text only.
const std::map<std::string, Solver>& solvers() {
  static const std::map<std::string, Solver> s = {
      // memory-bound
      {"memory-bound/ridge-fp32", [](const Printed&, const std::string& p) {
         return fmt(after(p, "the CUDA cores do") * 1e12 / (after(p, "HBM delivers") * 1e12));
       }},
      {"memory-bound/qk-intensity", [](const Printed&, const std::string& p) {
         return fmt(after(p, R"(S = QK\^T \(standard\):)") / after(p, R"(S = QK\^T \(standard\): [0-9.]+ MFLOP,)"));
       }},
      {"memory-bound/furthest-below", [](const Printed&, const std::string& p) {
         const double s = after(p, R"(S = QK\^T \(standard\):)") / after(p, R"(S = QK\^T \(standard\): [0-9.]+ MFLOP,)");
         const double sm = after(p, R"(P = softmax\(S\) \(standard\): [0-9.]+ MFLOP, [0-9.]+ MB, intensity)");
         const double o = after(p, R"(O = PV \(standard\): [0-9.]+ MFLOP, [0-9.]+ MB, intensity)");
         const double lo = std::min({s, sm, o});
         return letter_of(p, lo == s ? ") S = QK^T" : lo == sm ? "softmax" : ") O = PV");
       }},
      {"memory-bound/bytes-ratio", [](const Printed&, const std::string& p) {
         return fmt(after(p, "Standard attention moves"));
       }},
      // safe-softmax
      {"safe-softmax/fp16-limit", [](const Printed&, const std::string& p) {
         return fmt(std::log(after(p, "float16 overflows much sooner: its largest value is")));
       }},
      {"safe-softmax/bf16-limit", [](const Printed&, const std::string& p) {
         return fmt(std::log(after(p, "bfloat16 .*? its largest value is")));
       }},
      {"safe-softmax/naive-equal", [](const Printed&, const std::string& p) { return letter_of(p, "NaN"); }},
      {"safe-softmax/row1-max", [](const Printed&, const std::string& p) {
         const auto v = list_after(p, "Row 1 of this S_ij is");
         return fmt(*std::max_element(v.begin(), v.end()));
       }},
      {"safe-softmax/row1-sum", [](const Printed&, const std::string& p) {
         return fmt(sum_exp_minus_max(list_after(p, "Row 1 of this S_ij is")));
       }},
      // online-softmax
      {"online-softmax/final-m", [](const Printed&, const std::string& p) {
         const auto v = list_after(p, "The softmax of");
         return fmt(*std::max_element(v.begin(), v.end()));
       }},
      {"online-softmax/final-l", [](const Printed&, const std::string& p) {
         return fmt(sum_exp_minus_max(list_after(p, "The softmax of")));
       }},
      {"online-softmax/rescale", [](const Printed&, const std::string& p) {
         return fmt(std::exp(after(p, R"(m_new = max\()") - after(p, R"(m_new = max\([-0-9.e]+, [-0-9.e]+\) =)")));
       }},
      // online-softmax, the O update: the row, the block size and V from the page, the formulas it gives.
      {"online-softmax/o-m1", [](const Printed&, const std::string& p) { return fmt(o_update(p).m1); }},
      {"online-softmax/o-l1", [](const Printed&, const std::string& p) { return fmt(o_update(p).l1); }},
      {"online-softmax/o-o1", [](const Printed&, const std::string& p) { return fmt(o_update(p).o1); }},
      {"online-softmax/o-m2", [](const Printed&, const std::string& p) { return fmt(o_update(p).m2); }},
      {"online-softmax/o-alpha", [](const Printed&, const std::string& p) { return fmt(o_update(p).alpha); }},
      {"online-softmax/o-l2", [](const Printed&, const std::string& p) { return fmt(o_update(p).l2); }},
      {"online-softmax/o-o2", [](const Printed&, const std::string& p) { return fmt(o_update(p).o2); }},
      {"online-softmax/row0-l", [](const Printed&, const std::string& p) {
         return fmt(sum_exp_minus_max(list_after(p, "Row 0 of the tiny problem's S is")));
       }},
      // tiling: Bc = ceil(M / 4d), Br = min(Bc, d), Tr = ceil(Nq / Br), Tc = ceil(Nk / Bc)
      {"tiling/bc-2m", [](const Printed& c, const std::string&) {
         const double M = after(c.problem, "M ="), d = after(c.problem, "d =");
         return whole(std::ceil(2 * M / (4 * d)));
       }},
      {"tiling/pairs-2m", [](const Printed& c, const std::string&) {
         const double M = after(c.problem, "M ="), d = after(c.problem, "d ="), n = after(c.problem, "Nq = Nk =");
         const double bc = std::ceil(2 * M / (4 * d)), br = std::min(bc, d);
         return whole(std::ceil(n / br) * std::ceil(n / bc));
       }},
      {"tiling/peak-tiles", [](const Printed&, const std::string& p) { return whole(after(p, R"(\(Bc x d each\):)")); }},
      {"tiling/why-cap", [](const Printed&, const std::string& p) { return letter_of(p, "no larger than one d-wide tile"); }},
      // algorithm-1
      {"algorithm-1/o-writes", [](const Printed&, const std::string& p) {
         return whole(after(p, "the Tc =") * after(p, "the Tr ="));
       }},
      {"algorithm-1/beta-row1", [](const Printed&, const std::string& p) {
         const std::string r = flat(p).substr(flat(p).find("For the second row"));
         return fmt(std::exp(after(r, "m~_ij =") - after(r, R"(m_i\^new =)")));
       }},
      {"algorithm-1/o-row1", [](const Printed&, const std::string& p) {
         const std::string r = flat(p).substr(flat(p).find("For the second row"));
         const double l = after(r, "l_i ="), m = after(r, "m_i ="), mt = after(r, "m~_ij ="), mn = after(r, R"(m_i\^new =)");
         const double ln = after(r, R"(l_i\^new =)"), o = after(r, "first column was"), pv = after(r, R"(\(P~_ij V_j\) is)");
         return fmt((l * std::exp(m - mn) * o + std::exp(mt - mn) * pv) / ln);
       }},
      {"algorithm-1/reads", [](const Printed& c, const std::string& p) {
         const double n = after(c.problem, "Nq = Nk ="), d = after(c.problem, "d =");
         const double Tc = after(c.pages[0], "the Tc =");
         return whole(after(p, R"(elements\),)") * (2 * n * d + Tc * n * (2 * d + 2)));
       }},
      // io-complexity
      {"io-complexity/fa1-bytes", [](const Printed&, const std::string& p) {
         return whole(after(p, "In the tiny problem it read") + after(p, "B\\) and wrote"));
       }},
      {"io-complexity/sweep-ratio", [](const Printed&, const std::string& p) {
         std::vector<double> reads;
         const std::string t = flat(p);
         const std::regex r(R"(Tc = [0-9]+, reads ([0-9]+) B)");
         for (auto it = std::sregex_iterator(t.begin(), t.end(), r); it != std::sregex_iterator(); ++it)
           reads.push_back(std::stod((*it)[1]));
         REQUIRE(reads.size() >= 2);
         return fmt(reads[reads.size() - 2] / reads.back());
       }},
      {"io-complexity/tc-128", [](const Printed&, const std::string& p) {
         const double M = after(p, "shared memory: M ="), bc = std::ceil(M / (4 * 128));
         return whole(std::ceil(16384 / bc));
       }},
      {"io-complexity/scale-ratio", [](const Printed&, const std::string& p) {
         const std::string line = flat(p).substr(flat(p).find("N = 16384, d = 64:"));
         return fmt(after(line, "standard") / after(line, "Algorithm 1"));
       }},
      {"io-complexity/ratio-d", [](const Printed&, const std::string& p) {
         return fmt(after(p, "it is") / after(p, "for d = 64 and"));
       }},
      {"io-complexity/budget", [](const Printed& c, const std::string& p) {
         const double M = after(p, "at most"), d = after(c.problem, "and Nq = Nk = [0-9]+, d =");
         const double bc = std::ceil(M / (4 * d)), br = std::min(bc, d);
         return whole(br) + "," + whole(bc) + "," + whole(M);
       }},
      // fa2-order
      {"fa2-order/fa2-writes", [](const Printed& c, const std::string& p) {
         const double n = after(c.problem, "Nq = Nk ="), d = after(c.problem, "d =");
         return whole(after(p, R"(B \()") * (n * d + n));  // O once and L once
       }},
      {"fa2-order/round-trips", [](const Printed& c, const std::string& p) {
         const double n = after(c.problem, "Nq = Nk ="), d = after(c.problem, "d =");
         return whole(after(p, R"(B \()") * after(p, "with Tc =") * n * (d + 2));
       }},
      {"fa2-order/reread", [](const Printed&, const std::string& p) { return letter_of(p, "K_j and V_j"); }},
      {"fa2-order/kv-bytes", [](const Printed& c, const std::string& p) {
         const double n = after(c.problem, "Nq = Nk ="), d = after(c.problem, "d =");
         return whole(after(c.pages[0], R"(B \()") * after(p, "Tr =") * 2 * n * d);
       }},
      // masks-dropout-fusion
      {"masks-dropout-fusion/skipped", [](const Printed& c, const std::string& p) {
         const double n = after(c.problem, "Nq = Nk =");
         const int64_t br = int64_t(after(p, "Br =")), bc = int64_t(after(p, "Bc =")), tr = int64_t(after(p, "Tr =")),
                       tc = int64_t(after(p, "Tc ="));
         int64_t skipped = 0;  // tiles whose first key is past the block's last query
         for (int64_t i = 0; i < tr; ++i)
           for (int64_t j = 0; j < tc; ++j) skipped += j * bc > std::min<int64_t>((i + 1) * br, int64_t(n)) - 1;
         return whole(double(skipped));
       }},
      {"masks-dropout-fusion/saved", [](const Printed&, const std::string& p) {
         return whole(after(p, "B against") - after(p, "the run moved"));
       }},
      {"masks-dropout-fusion/dropped", [](const Printed&, const std::string& p) {
         const std::string t = p.substr(p.find("x dropped):"));
         const std::string grid = t.substr(t.find('\n'), t.find("Question") - t.find('\n'));
         return whole(double(std::count(grid.begin(), grid.end(), 'x')));
       }},
      {"masks-dropout-fusion/mask-home", [](const Printed&, const std::string& p) { return letter_of(p, "Philox"); }},
      // backward
      {"backward/kept-ratio", [](const Printed&, const std::string& p) {
         return fmt(after(p, "Nq Nk =") / after(p, "2 Nq ="));
       }},
      {"backward/d-row1", [](const Printed&, const std::string& p) {
         const auto dO = list_after(p, "dO = "), O = list_after(p, ", O = [");
         double D = 0;
         for (size_t k = 0; k < dO.size(); ++k) D += dO[k] * O[k];
         return fmt(D);
       }},
      {"backward/bwd-bytes", [](const Printed&, const std::string& p) {
         return whole(after(p, "Algorithm 4 read") + after(p, "B and wrote"));
       }},
      {"backward/recomputed", [](const Printed&, const std::string& p) { return letter_of(p, "P_ij, from S_ij"); }},
      // gpu
      {"gpu/speedup", [](const Printed&, const std::string& p) {
         return fmt(after(p, "standard attention") / after(p, "Algorithm 1 took"));
       }},
      {"gpu/bytes-ratio", [](const Printed&, const std::string& p) {
         return fmt(after(p, "Algorithm 1 and") / after(p, "HBM traffic for Algorithm 1 and|The simulator predicts"));
       }},
      {"gpu/tc-bytes-ratio", [](const Printed&, const std::string& p) {
         return fmt(after(p, "The fused kernel's") / after(p, "Standard attention's intensity,"));
       }},
      {"gpu/limit", [](const Printed&, const std::string& p) { return letter_of(p, "HBM bandwidth"); }},
      // decode
      {"decode/intensity", [](const Printed&, const std::string& p) {
         return fmt(after(p, "one head does") / after(p, "FLOPs for"));
       }},
      {"decode/roofline", [](const Printed&, const std::string& p) {
         const double i = after(p, "one head does") / after(p, "FLOPs for");
         return letter_of(p, i < after(p, "float32 ridge is") ? "memory-bound" : "compute-bound");
       }},
      {"decode/per-split", [](const Printed&, const std::string& p) {
         return whole(std::ceil(after(p, "the Tc =") / after(p, "into S =")));
       }},
      {"decode/blocks", [](const Printed&, const std::string& p) { return whole(after(p, "there is Tr =") * after(p, "into S =")); }},
      {"decode/lse", [](const Printed&, const std::string& p) {
         const auto v = list_after(p, "lse^(s) = [");
         const double m = *std::max_element(v.begin(), v.end());
         return fmt(m + std::log(sum_exp_minus_max(v)));
       }},
      {"decode/weight", [](const Printed&, const std::string& p) {
         const auto v = list_after(p, "lse^(s) = [");
         const double m = *std::max_element(v.begin(), v.end());
         return fmt(std::exp(v[0] - (m + std::log(sum_exp_minus_max(v)))));
       }},
      // hopper
      {"hopper/serial-clocks", [](const Printed&, const std::string& p) {
         return fmt(after(p, "charges S_ij") + after(p, "the softmax") + after(p, R"(O_i \+= P~_ij V_j)"));
       }},
      {"hopper/chart", [](const Printed&, const std::string& p) {
         // Columns where warpgroup 0's softmax runs: does warpgroup 1's tensor lane have a product there?
         auto lane = [&](const std::string& label) {
           const size_t a = p.find(label);
           const size_t b = p.find('|', a), e = p.find('|', b + 1);
           return p.substr(b + 1, e - b - 1);
         };
         const std::string sm0 = lane("wg0 softmax"), tc1 = lane("wg1 tensor");
         int overlap = 0, soft = 0;
         for (size_t k = 0; k < sm0.size() && k < tc1.size(); ++k)
           if (sm0[k] != '.') ++soft, overlap += tc1[k] != '.';
         return letter_of(p, 2 * overlap > soft ? "take turns" : "nothing much");
       }},
      {"hopper/pingpong-gain", [](const Printed&, const std::string& p) {
         return fmt(after(p, "TFLOP/s for the TMA producer alone and") / after(p, "The model predicts"));
       }},
      // fp8
      {"fp8/scale-k", [](const Printed&, const std::string& p) {
         return fmt(after(p, "and K's") / after(p, "largest value is"));
       }},
      {"fp8/stored", [](const Printed&, const std::string& p) {
         const float s = float(after(p, "Q's largest magnitude is")) / float(after(p, "largest value is"));
         return fmt(double(fstest::oracle_round_e4m3(float(after(p, "first row is")) / s) * s));
       }},
      {"fp8/bytes-ratio", [](const Printed&, const std::string& p) {
         return fmt(after(p, "bf16 the step reads") / after(p, "in FP8 it reads"));
       }},
      {"fp8/bound", [](const Printed&, const std::string& p) {
         return letter_of(p, after(p, "FP8 decoding at") < after(p, "ridge is at") ? "memory-bound" : "bound by the FP8");
       }},
      {"fp8/rotation-gain", [](const Printed&, const std::string& p) {
         return fmt(after(p, R"(block\))") / after(p, R"(unchanged\))"));  // words a line break cannot split
       }},
      {"fp8/blocks", [](const Printed&, const std::string& p) { return letter_of(p, "three mantissa bits for small"); }},
      {"fp8/serial-speedup", [](const Printed&, const std::string& p) {
         const double prod = after(p, "S_ij") + after(p, R"(O_i \+= P~_ij V_j)"), sm = after(p, "the softmax");
         return fmt((prod + sm) / (prod / 2 + sm));
       }},
      {"fp8/overlap-speedup", [](const Printed&, const std::string& p) {
         const double prod = after(p, "S_ij") + after(p, R"(O_i \+= P~_ij V_j)"), sm = after(p, "the softmax");
         return fmt(std::max(prod, sm) / std::max(prod / 2, sm));
       }},
      // paged-kv
      {"paged-kv/pages", [](const Printed&, const std::string& p) {
         return whole(std::ceil(after(p, "Nk =") / after(p, "pages of P =")));
       }},
      {"paged-kv/table-bytes", [](const Printed&, const std::string& p) {
         const double P = after(p, "pages of P ="), bc = after(p, "Bc =");
         return whole(after(p, "Tr =") * after(p, "Tc =") * std::ceil(bc / P) * after(p, "it touches,"));
       }},
      {"paged-kv/last-page-waste", [](const Printed& c, const std::string& p) {
         return whole((after(c.problem, "pages of") - 1) * 2 * after(c.problem, "d =") * after(p, "elements of"));
       }},
  };
  return s;
}

}  // namespace

TEST_CASE("learn: every question is answered from the terminal's own printed numbers", "[course][cli][terminal]") {
  std::string ids;
  REQUIRE(fstest::run_command(kBin + " learn --list | cut -f1", ids) == 0);
  const fstest::TempDir tmp;
  for (const std::string& seed : {std::string("1"), std::string("2"), std::string("4")}) {
    std::istringstream list(ids);
    std::string id;
    while (std::getline(list, id)) {
      INFO(id << " --seed " << seed);
      std::string out;
      REQUIRE(fstest::run_command(kBin + " learn " + id + " --seed " + seed + " < /dev/null", out) == 0);
      const Printed c = parse_learn(out);
      REQUIRE_FALSE(c.questions.empty());
      std::string typed;
      for (const auto& [qid, page] : c.questions) {
        INFO(qid);
        const auto it = solvers().find(id + "/" + qid);
        REQUIRE(it != solvers().end());  // a question with no worked answer from the text
        typed += it->second(c, c.pages.at(size_t(page))) + "\n";
      }
      const std::string file = (tmp.path / "typed.txt").string();
      std::ofstream(file) << typed;
      REQUIRE(fstest::run_command(kBin + " learn " + id + " --seed " + seed + " < " + file, out) == 0);
      INFO(typed);
      const std::string n = std::to_string(c.questions.size());
      CHECK(out.find("\n" + n + " of " + n + " correct\n") != std::string::npos);
      if (out.find("\n" + n + " of " + n + " correct\n") == std::string::npos) {
        std::istringstream o(out);
        std::string l;
        while (std::getline(o, l))
          if (l.find("not right") != std::string::npos) UNSCOPED_INFO(l);
        CHECK(false);
      }
    }
  }
}
