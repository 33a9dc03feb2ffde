// Masked attention against PyTorch float64 golden files (tests/golden/masks/: sliding windows
// and key padding, Nq != Nk, rows that keep no key; make_golden_masks.py says how they were
// made, from the mask definitions and cross-checked with scaled_dot_product_attention). Every
// schedule runs every case, and so does the float64 reference with its own mask
// (reference_keeps): neither is checked against core/mask.h, the code they share otherwise.
#include "core/schedules/decode/decode.h"
#include "core/reference.h"
#include "core/schedule_registry.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using namespace flashstep;

namespace {

struct MaskCase {
  std::string name;
  int64_t nq, nk, d, rows_without_keys;
  double scale;
  Mask mask;
};

std::string masks_dir() { return fstest::golden("masks"); }

std::vector<MaskCase> mask_cases() {
  std::ifstream in(masks_dir() + "/manifest.json");
  REQUIRE(in);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<MaskCase> out;
  for (const auto& c : j.at("cases")) {
    MaskCase m;
    m.name = c.at("name").get<std::string>();
    m.nq = c.at("nq").get<int64_t>();
    m.nk = c.at("nk").get<int64_t>();
    m.d = c.at("d").get<int64_t>();
    m.scale = c.at("scale").get<double>();
    m.rows_without_keys = c.at("rows_without_keys").get<int64_t>();
    m.mask.causal = c.at("causal").get<bool>();
    m.mask.window_left = c.at("window_left").get<int64_t>();
    m.mask.window_right = c.at("window_right").get<int64_t>();
    m.mask.kv_len = c.at("kv_len").get<int64_t>();
    out.push_back(m);
  }
  return out;
}

std::string file(const MaskCase& c, const char* what) { return masks_dir() + "/" + c.name + "." + what + ".npy"; }

// The golden lse as float64 (read_npy rounds to float32: -inf stays -inf).
VecD golden_lse(const MaskCase& c) {
  const NpyArray a = read_npy(file(c, "lse"));
  VecD v(int64_t(a.data.size()));
  for (size_t k = 0; k < a.data.size(); ++k) v(int64_t(k)) = double(a.data[k]);
  return v;
}

// O and lse of a run (float32) or of the reference (float64) against the golden files: a row
// without keys must be exactly O = 0 and lse = -inf; the others within `tol` relative to the
// largest |value| (and never NaN).
template <class MatT, class VecT>
void check_against_golden(const MaskCase& c, const MatT& O, const VecT& lse, double tol) {
  const MatD o = read_npy_matrix(file(c, "o")).cast<double>();
  const VecD l = golden_lse(c);
  REQUIRE(O.rows() == o.rows());
  REQUIRE(O.cols() == o.cols());
  REQUIRE(lse.size() == l.size());
  int64_t empty = 0;
  double o_scale = 1, l_scale = 1, o_err = 0, l_err = 0;
  for (int64_t r = 0; r < o.rows(); ++r) {
    if (std::isinf(l(r))) continue;
    o_scale = std::max(o_scale, o.row(r).cwiseAbs().maxCoeff());
    l_scale = std::max(l_scale, std::abs(l(r)));
  }
  for (int64_t r = 0; r < o.rows(); ++r) {
    CAPTURE(r);
    if (std::isinf(l(r))) {
      ++empty;
      CHECK(double(lse(r)) == -INFINITY);
      for (int64_t k = 0; k < o.cols(); ++k) CHECK(double(O(r, k)) == 0.0);
      continue;
    }
    REQUIRE(std::isfinite(double(lse(r))));
    l_err = std::max(l_err, std::abs(double(lse(r)) - l(r)));
    for (int64_t k = 0; k < o.cols(); ++k) {
      REQUIRE(std::isfinite(double(O(r, k))));
      o_err = std::max(o_err, std::abs(double(O(r, k)) - o(r, k)));
    }
  }
  CHECK(empty == c.rows_without_keys);
  CHECK(o_err / o_scale <= tol);
  CHECK(l_err / l_scale <= tol);
}

}  // namespace

TEST_CASE("the golden mask cases are what their manifest says", "[golden][masks]") {
  const auto cases = mask_cases();
  REQUIRE(cases.size() >= 4);
  for (const MaskCase& c : cases) {
    CAPTURE(c.name);
    const Mat q = read_npy_matrix(file(c, "q")), k = read_npy_matrix(file(c, "k"));
    CHECK(q.rows() == c.nq);
    CHECK(k.rows() == c.nk);
    CHECK(q.cols() == c.d);
    CHECK(c.nq != c.nk);
  }
}

TEST_CASE("the float64 reference's own mask matches the PyTorch golden masks", "[reference][golden][masks]") {
  for (const MaskCase& c : mask_cases()) {
    CAPTURE(c.name);
    const Mat q = read_npy_matrix(file(c, "q")), k = read_npy_matrix(file(c, "k")), v = read_npy_matrix(file(c, "v"));
    const Reference ref = reference_attention(q, k, v, c.scale, c.mask);
    // The inputs are float64 on disk and float32 here: the difference is float32 rounding.
    check_against_golden(c, ref.O, ref.lse, 2e-6);
  }
}

TEST_CASE("every schedule matches the PyTorch golden masks", "[golden][masks][fa1][fa2][standard][decode]") {
  const ScheduleInfo* info = GENERATE(from_range(schedules()));
  // Block sizes: the paper's (0, 0), and overrides with ragged last blocks.
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{7, 13},
                               std::pair<int64_t, int64_t>{16, 5}, std::pair<int64_t, int64_t>{1, 1});
  for (const MaskCase& c : mask_cases()) {
    ProblemSpec s = fstest::golden_spec("masks/" + c.name, c.scale);
    s.M = 4096;
    s.br = blocks.first;
    s.bc = blocks.second;
    s.schedule = info->id;
    s.options.mask = c.mask;
    // decode: the default S, and one split per K/V block (the most partials to combine)
    std::vector<int64_t> splits{0};
    if (schedule_splits_kv(info->id)) splits.push_back(make_tiling(c.nq, c.nk, c.d, s.M, s.br, s.bc).Tc);
    for (int64_t S : splits) {
      CAPTURE(c.name, info->name, blocks.first, blocks.second, S);
      s.splits = S;
      const Trace t = fstest::run_spec(s, false);
      check_against_golden(c, t.O, t.lse, 1e-5);
    }
  }
}
