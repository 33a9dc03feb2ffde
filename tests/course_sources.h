// The tests' own reading of the course's source names (docs/course.md, "The source names"): every number a
// page prints and every answer names where it comes from; this file re-derives it from a fresh
// run of the chapter's problems, the closed forms, the float formats, the device table and the
// bench file, without the course's code, so that a chapter that took a number from the wrong
// step, line or row fails here.
#pragma once
#include "app/course/course.h"
#include "app/course/device.h"
#include "app/pipeline_measured.h"
#include "core/backward.h"
#include "core/closed_form.h"
#include "core/l2_cache.h"
#include "core/lesson.h"
#include "core/pipeline_model.h"
#include "core/run.h"
#include "core/schedules/fa1/fa1.h"
#include "core/schedules/standard/standard.h"
#include "e4m3_oracle.h"

#include <nlohmann/json.hpp>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace coursetest {

using namespace flashstep;

struct World {
  std::map<std::string, std::shared_ptr<Trace>> traces;
  std::map<std::string, Lesson> lessons;
  std::map<std::string, Mat> dO;  // the loss gradient of each run with the backward
  nlohmann::json bench;
};

inline World rebuild(const course::Chapter& ch) {
  World w;
  for (const course::RunDecl& r : ch.runs) {
    const Problem p = make_problem(r.spec);
    RunOptions opt;
    opt.record = r.record;
    Mat dO;
    if (r.backward) {
      dO = make_grad_output(p, r.spec.pattern);
      opt.dO = &dO;
      w.dO[r.name] = dO;
    }
    w.traces[r.name] = std::make_shared<Trace>(run_problem(p, make_tiling(p), opt));
  }
  for (const course::LessonDecl& l : ch.lessons) w.lessons[l.name] = run_lesson(l.values, l.block, l.v);
  std::ifstream in(FLASHSTEP_BENCH_FILE);
  w.bench = nlohmann::json::parse(in);
  return w;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

inline int64_t as_int(const std::string& s) { return std::stoll(s); }

// The largest finite value of a float format with `mant` stored mantissa bits and a maximum
// exponent `emax`: (2 - 2^-mant) 2^emax.
inline double float_max(int mant, int emax) { return (2.0 - std::ldexp(1.0, -mant)) * std::ldexp(1.0, emax); }

inline double totals_field(const Totals& t, const std::string& f) {
  if (f == "hbm_read_bytes") return double(t.hbm_read_bytes);
  if (f == "hbm_write_bytes") return double(t.hbm_write_bytes);
  if (f == "bytes") return double(t.hbm_read_bytes + t.hbm_write_bytes);
  if (f == "flops") return double(t.flops);
  if (f == "peak_tile_bytes") return double(t.peak_tile_bytes);
  throw std::runtime_error("unknown totals field " + f);
}

inline Tensor tensor_named(const std::string& n) {
  // Decode's partials and the block table by their enum names (their printed names have spaces).
  if (n == "Op") return Tensor::Op;
  if (n == "Lp") return Tensor::Lp;
  if (n == "BT") return Tensor::BT;
  for (int k = 0; k < kTensors; ++k)
    if (n == tensor_name(Tensor(k))) return Tensor(k);
  throw std::runtime_error("unknown tensor " + n);
}

// O's root-mean-square difference from float64 attention softmax(tau Q K^T) V, computed here from
// the run's inputs (no mask, no dropout: the fp8 chapter's outlier runs).
inline double o_rms_against_float64(const Trace& t) {
  const Problem& pr = t.problem;
  if (pr.mask.causal || pr.dropout > 0) throw std::runtime_error("o_rms: masked or dropped runs are not handled here");
  double sum = 0;
  for (int64_t r = 0; r < pr.nq; ++r) {
    std::vector<double> s(size_t(pr.nk));
    double mx = -INFINITY, l = 0;
    for (int64_t k = 0; k < pr.nk; ++k) {
      double x = 0;
      for (int64_t c = 0; c < pr.d; ++c) x += double(pr.Q(r, c)) * double(pr.K(k, c));
      s[size_t(k)] = double(pr.scale) * x;
      mx = std::max(mx, s[size_t(k)]);
    }
    for (double& x : s) l += (x = std::exp(x - mx));
    for (int64_t c = 0; c < pr.d; ++c) {
      double o = 0;
      for (int64_t k = 0; k < pr.nk; ++k) o += s[size_t(k)] * double(pr.V(k, c));
      const double e = double(t.O(r, c)) - o / l;
      sum += e * e;
    }
  }
  return std::sqrt(sum / double(pr.nq * pr.d));
}

inline const Mat& input_named(const Problem& pr, const std::string& n) {
  if (n == "Q") return pr.Q;
  if (n == "K") return pr.K;
  if (n == "V") return pr.V;
  throw std::runtime_error("unknown input " + n);
}

inline double vec_at(const Vec& v, const std::vector<std::string>& p, size_t at) {
  return double(v(as_int(p.at(at))));
}

// One name (no operators).
inline double resolve(const World& w, const std::string& name) {
  if (name.rfind("scale.", 0) == 0) {
    // scale.N.D.M.F: one head of N x N, d = D, M words, from the tiling rule and the closed forms
    // (standard: S and P through HBM; Algorithm 1 with its Tc), float32.
    const std::vector<std::string> p = split(name, '.');
    const int64_t N = as_int(p.at(1)), d = as_int(p.at(2)), M = as_int(p.at(3));
    const std::string& f = p.at(4);
    if (f == "N") return double(N);
    if (f == "d") return double(d);
    const int64_t Bc = (M + 4 * d - 1) / (4 * d), Br = std::min(Bc, d), Tc = (N + Bc - 1) / Bc;  // the paper's rule
    if (f == "Bc") return double(Bc);
    if (f == "Br") return double(Br);
    if (f == "Tc") return double(Tc);
    if (f == "fa1_bytes") {
      const TrafficForm t = fa1_traffic(N, N, d, Tc);  // registry-exempt: the closed form of this schedule
      return double(t.read_bytes(4) + t.write_bytes(4));
    }
    if (f == "standard_bytes") {
      const TrafficForm t = standard_traffic(N, N, d);
      return double(t.read_bytes(4) + t.write_bytes(4));
    }
  }
  if (name.rfind("hopper:", 0) == 0) {  // a JSON pointer into the Hopper bench file beside the bench file
    const std::string path = std::filesystem::path(FLASHSTEP_BENCH_FILE).parent_path() / "h200_hopper.json";
    std::ifstream in(path);
    return nlohmann::json::parse(in).at(nlohmann::json::json_pointer(name.substr(7))).get<double>();
  }
  if (name.rfind("pipecost.", 0) == 0 || name.rfind("pipeline.", 0) == 0) {
    // pipecost.T.D.F: block_costs of technique T at head dimension D; pipeline.T.D.Bc;
    // pipeline.T.D.N.F: the prediction for the default heads at N x N, non-causal (core/pipeline_model.h).
    const std::vector<std::string> p = split(name, '.');
    const pipeline::Kernel r = pipeline::technique(p.at(1), as_int(p.at(2)));
    const pipeline::Rates rates;
    if (p.at(0) == "pipecost") {
      const pipeline::BlockCosts c = pipeline::block_costs(r, as_int(p.at(2)), rates);
      if (p.at(3) == "s_clk") return c.s_clk;
      if (p.at(3) == "softmax_clk") return c.softmax_clk;
      if (p.at(3) == "o_clk") return c.o_clk;
    } else if (p.size() == 4 && p.at(3) == "Bc") {
      return double(r.Bc);
    } else if (p.size() == 4 && p.at(3) == "d") {
      return double(as_int(p.at(2)));
    } else if (p.size() == 5) {
      pipeline::Shape s;
      s.d = as_int(p.at(2));
      s.nq = s.nk = as_int(p.at(3));
      if (p.at(4) == "tflops") return pipeline::predict(r, s, rates).tflops;
      if (p.at(4) == "n") return double(s.nq);
      if (p.at(4) == "heads") return double(s.heads);  // the shape's default: the course's chart and prediction
    }
  }
  if (name.rfind("measured.", 0) == 0) {
    // measured.T.D.N.tflops: technique T's bf16 TFLOP/s measured on the H200 at d = D, N x N,
    // non-causal, as the Pipeline view's row shows it (app/pipeline_measured.h).
    const std::vector<std::string> p = split(name, '.');
    const MeasuredFigure m = measured_forward(p.at(1), as_int(p.at(2)), as_int(p.at(3)), false);
    if (!m.found || p.at(4) != "tflops") throw std::runtime_error(name + ": " + m.source);
    return m.value;
  }
  if (name.rfind("bench:", 0) == 0) return w.bench.at(nlohmann::json::json_pointer(name.substr(6))).get<double>();
  if (name.rfind("fp8bench:", 0) == 0) {  // a JSON pointer into the FP8 forward's bench file beside the bench file
    const std::string path = std::filesystem::path(FLASHSTEP_BENCH_FILE).parent_path() / "h200_fp8.json";
    std::ifstream in(path);
    return nlohmann::json::parse(in).at(nlohmann::json::json_pointer(name.substr(9))).get<double>();
  }
  const std::vector<std::string> p = split(name, '.');
  const std::string& kind = p.at(0);
  if (kind == "device") {
    const GpuSpec& g = find_gpu(p.at(1));
    const std::string& f = p.at(2);
    if (f == "sms") return double(g.sms);
    if (f == "smem_per_sm_bytes") return double(g.smem_per_sm_bytes);
    if (f == "l2_bytes") return double(g.l2_bytes);
    if (f == "hbm_bytes_per_s") return course::kH200.hbm_bytes_per_s;
    if (f == "fp32_flops") return course::kH200.fp32_flops;
    if (f == "bf16_tc_flops") return course::kH200.bf16_tc_flops;
    if (f == "hbm_bytes") return course::kH200.hbm_bytes;
    if (f == "fp8_tc_flops") return course::kH200.fp8_tc_flops;
  }
  if (kind == "float") {
    const std::string& f = p.at(1);
    if (f == "fp32_max") return float_max(23, 127);
    if (f == "fp32_exp_limit") return std::log(float_max(23, 127));
    if (f == "fp32_exp_probe") return std::ceil(std::log(float_max(23, 127)));
    if (f == "bf16_max") return float_max(7, 127);
    if (f == "bf16_exp_limit") return std::log(float_max(7, 127));
    if (f == "fp16_max") return float_max(10, 15);
    if (f == "fp16_exp_limit") return std::log(float_max(10, 15));
    if (f == "e4m3_max") return fstest::decode_e4m3(0x7E);  // S.1111.110: S.1111.111 is NaN
  }
  if (kind == "fp8") {  // fp8.RUN.amax.T, fp8.RUN.input.T.R.C, fp8.RUN.stored.T.R.C (one scale per tensor)
    const Problem& pr = w.traces.at(p.at(1))->problem;
    const Mat& X = input_named(pr, p.at(3));
    const double amax = double(X.cwiseAbs().maxCoeff());
    if (p.at(2) == "amax") return amax;
    const float x = X(as_int(p.at(4)), as_int(p.at(5)));
    if (p.at(2) == "input") return double(x);
    if (p.at(2) == "stored") {
      if (pr.dtype != Dtype::fp8 || pr.fp8_scale == Fp8Scale::per_block || pr.rotate)
        throw std::runtime_error("fp8.stored: a run with one scale per tensor and no rotation");
      const float s = float(amax) / float(fstest::decode_e4m3(0x7E));
      return double(fstest::oracle_round_e4m3(x / s) * s);
    }
  }
  if (kind == "accuracy" && p.at(2) == "O_rms") return o_rms_against_float64(*w.traces.at(p.at(1)));
  if (kind == "grad") {  // grad.RUN.dO.R.C: the gradient `flashstep run --backward` makes from the seed
    const Mat& g = w.dO.at(p.at(1));
    if (p.at(2) == "dO") return g(as_int(p.at(3)), as_int(p.at(4)));
  }
  if (kind == "lesson") {
    const Lesson& L = w.lessons.at(p.at(1));
    const std::string& f = p.at(2);
    if (f == "values") return L.values.at(size_t(as_int(p.at(3))));
    if (f == "online") return L.online.at(size_t(as_int(p.at(3))));
    if (f == "block") return double(L.block);
    if (f == "max_diff") return L.max_diff;
    if (f == "v") return L.v.at(size_t(as_int(p.at(3))));
    if (f == "o_direct") return L.o_direct;
    if (f == "blocks") {
      const LessonBlock& B = L.blocks.at(size_t(as_int(p.at(3))));
      const std::string& g = p.at(4);
      if (g == "local_max") return B.local_max;
      if (g == "local_sum") return B.local_sum;
      if (g == "m_old") return B.m_old;
      if (g == "l_old") return B.l_old;
      if (g == "m_new") return B.m_new;
      if (g == "l_new") return B.l_new;
      if (g == "alpha") return B.alpha;
      if (g == "beta") return B.beta;
      if (g == "local_pv") return B.local_pv;
      if (g == "o_old") return B.o_old;
      if (g == "o_new") return B.o_new;
    }
  }
  if (kind == "problem" || kind == "tiling" || kind == "closed" || kind == "closedbwd" || kind == "trace") {
    const Trace& t = *w.traces.at(p.at(1));
    const Problem& pr = t.problem;
    const Tiling& ti = t.tiling;
    if (kind == "problem") {
      const std::string& f = p.at(2);
      if (f == "nq") return double(pr.nq);
      if (f == "nk") return double(pr.nk);
      if (f == "d") return double(pr.d);
      if (f == "M") return double(pr.M);
      if (f == "dropout") return double(pr.dropout);
      if (f == "bytes_per_elem") return double(pr.bytes_per_elem);
    }
    if (kind == "tiling") {
      const std::string& f = p.at(2);
      if (f == "Br") return double(ti.Br);
      if (f == "Bc") return double(ti.Bc);
      if (f == "Tr") return double(ti.Tr);
      if (f == "Tc") return double(ti.Tc);
      if (f == "M") return double(ti.M);
      if (f == "tile_capacity") return double(ti.tile_capacity);
      if (f == "S") return double(ti.S);
      if (f == "P") return double(ti.P);
      if (f == "pages") return double((pr.nk + ti.P - 1) / ti.P);  // ceil(Nk / P)
    }
    if (kind == "closed" || kind == "closedbwd") {
      const Schedule s = parse_schedule(p.at(2));
      const TrafficForm c = kind == "closed" ? schedule_traffic(s, pr.nq, pr.nk, pr.d, ti.Tr, ti.Tc)
                                             : schedule_backward_traffic(s, pr.nq, pr.nk, pr.d, ti.Tr, ti.Tc);
      const int b = kind == "closed" ? pr.bytes_per_elem : 4;
      const std::string& f = p.at(3);
      if (f == "read_bytes") return double(c.read_bytes(b));
      if (f == "write_bytes") return double(c.write_bytes(b));
      if (f == "bytes") return double(c.read_bytes(b) + c.write_bytes(b));
    }
    if (kind == "trace") {
      const std::string& f = p.at(2);
      const size_t fwd_end = t.has_backward ? t.backward_first_step : t.steps.size();
      if (f == "totals") {
        if (p.at(3) == "steps") return double(t.steps.size());
        return totals_field(t.totals, p.at(3));
      }
      if (f == "backward") return totals_field(t.backward_totals, p.at(3));
      if (f == "read") return double(t.totals.traffic.read[size_t(tensor_named(p.at(3)))]);
      if (f == "O") return double(t.O(as_int(p.at(3)), as_int(p.at(4))));
      if (f == "lse") return double(t.lse(as_int(p.at(3))));
      if (f == "combine_weight") {  // e^(lse^(s) - lse) of row 0: split s's lse as its step wrote it
        for (const Step& s : t.steps)
          for (const HbmWrite& hw : s.writes)
            if (hw.tensor == Tensor::Lp && s.split == as_int(p.at(3))) return std::exp(double(hw.data(0, 0)) - double(t.lse(0)));
      }
      if (f == "applied") {
        const int64_t k = as_int(p.at(3));
        if (k < 0 || size_t(k) >= t.steps.size()) throw std::runtime_error("no step " + p.at(3));
        return double(k + 1);
      }
      if (f == "count" || f == "line") {
        const int n = int(as_int(p.at(3)));
        double count = 0, flops = 0, bytes = 0;
        for (size_t k = 0; k < fwd_end; ++k)
          if (line_number(t.steps[k].line) == n) {
            ++count;
            flops += double(t.steps[k].flops);
            bytes += double(t.steps[k].hbm_read + t.steps[k].hbm_write);
          }
        if (f == "count") return count;
        return p.at(4) == "flops" ? flops : bytes;
      }
      if (f == "skipped_tiles") {
        double n = 0;
        for (int64_t i = 0; i < ti.Tr; ++i)
          for (int64_t j = 0; j < ti.Tc; ++j)
            n += pr.mask.classify(i * ti.Br, i * ti.Br + ti.rows_in_q_block(i, pr.nq), j * ti.Bc,
                                  j * ti.Bc + ti.rows_in_kv_block(j, pr.nk), pr.nk) == Mask::Block::empty;
        return n;
      }
      if (f == "step") {
        const Step& s = t.steps.at(size_t(as_int(p.at(3))));
        const std::string& g = p.at(4);
        if (g == "i") return s.i;
        if (g == "j") return s.j;
        if (g == "m_tilde") return vec_at(s.m_tilde, p, 5);
        if (g == "l_tilde") return vec_at(s.l_tilde, p, 5);
        if (g == "m_old") return vec_at(s.m_old, p, 5);
        if (g == "l_old") return vec_at(s.l_old, p, 5);
        if (g == "m_new") return vec_at(s.m_new, p, 5);
        if (g == "l_new") return vec_at(s.l_new, p, 5);
        if (g == "alpha") return vec_at(s.alpha, p, 5);
        if (g == "beta") return vec_at(s.beta, p, 5);
        if (g == "D_i") return vec_at(s.D_i, p, 5);
        if (g == "tile") return s.tile(as_int(p.at(5)), as_int(p.at(6)));
        if (g == "sram_bytes") return double(s.sram_bytes);
        if (g == "tile_bytes") {  // Q_i, K_j, V_j, O_i at the storage type's size
          return double((s.sram_elems[size_t(Slot::Qi)] + s.sram_elems[size_t(Slot::Kj)] +
                         s.sram_elems[size_t(Slot::Vj)] + s.sram_elems[size_t(Slot::Oi)]) * pr.bytes_per_elem);
        }
        if (g == "write") {
          for (const HbmWrite& hw : s.writes)
            if (hw.tensor == tensor_named(p.at(5))) return hw.data(as_int(p.at(6)), as_int(p.at(7)));
          throw std::runtime_error("step writes no " + p.at(5));
        }
        if (g == "pv") {  // (P~_ij V_j)(r, c) from the tile and the problem's V
          const int64_t r = as_int(p.at(5)), c = as_int(p.at(6));
          double x = 0;
          for (int64_t q = 0; q < s.tile.cols(); ++q) x += double(s.tile(r, q)) * double(pr.V(s.j * ti.Bc + q, c));
          return x;
        }
        if (g == "dropped") return double(s.dropout_keep.size()) - double(s.dropout_keep.sum());
        if (g == "dropout_entries") return double(s.dropout_keep.size());
      }
    }
  }
  throw std::runtime_error("the tests do not know the source '" + name + "'");
}

// A source expression: names and numbers joined by + - * / (spaces around each), parentheses,
// and max ( a , b ).
class Expr {
 public:
  Expr(const World& w, const std::string& text) : w_(w) {
    std::string spaced;
    for (char c : text) {
      if (c == '(' || c == ')' || c == ',') spaced += std::string(" ") + c + " ";
      else spaced += c;
    }
    std::istringstream in(spaced);
    std::string tok;
    while (in >> tok) toks_.push_back(tok);
  }
  double value() {
    const double v = sum();
    if (k_ != toks_.size()) throw std::runtime_error("trailing tokens in a source");
    return v;
  }

 private:
  double sum() {
    double v = product();
    while (k_ < toks_.size() && (toks_[k_] == "+" || toks_[k_] == "-")) {
      const bool add = toks_[k_++] == "+";
      const double r = product();
      v = add ? v + r : v - r;
    }
    return v;
  }
  double product() {
    double v = atom();
    while (k_ < toks_.size() && (toks_[k_] == "*" || toks_[k_] == "/")) {
      const bool mul = toks_[k_++] == "*";
      const double r = atom();
      v = mul ? v * r : v / r;
    }
    return v;
  }
  double atom() {
    const std::string& t = toks_.at(k_++);
    if (t == "max") {  // max ( a , b )
      if (toks_.at(k_++) != "(") throw std::runtime_error("max without its parenthesis in a source");
      const double a = sum();
      if (toks_.at(k_++) != ",") throw std::runtime_error("max takes two arguments in a source");
      const double b = sum();
      if (toks_.at(k_++) != ")") throw std::runtime_error("unbalanced parentheses in a source");
      return std::max(a, b);
    }
    if (t == "(") {
      const double v = sum();
      if (toks_.at(k_++) != ")") throw std::runtime_error("unbalanced parentheses in a source");
      return v;
    }
    char* end = nullptr;
    const double x = std::strtod(t.c_str(), &end);
    if (end && *end == 0) return x;
    return resolve(w_, t);
  }
  const World& w_;
  std::vector<std::string> toks_;
  size_t k_ = 0;
};

inline double evaluate(const World& w, const std::string& source) { return Expr(w, source).value(); }

}  // namespace coursetest
