// The Pipeline view's state (app/gui/pipeline_state.h).
#include "app/gui/pipeline_state.h"

#include "core/input_files.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace flashstep::gui {

namespace {

// assets/bench/h200_hopper.json: {"flashstep_measured": 1, "points": [{variant, d, n, causal,
// tflops, source[, kernel]}, ...]}; variant 0 with "kernel" is a reference (PyTorch's sdpa).
std::vector<PipelineState::Measured> parse_measured(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("flashstep_measured") || !j.contains("points") || !j["points"].is_array())
    throw InputError(path + ": not a measurements file (needs \"flashstep_measured\" and a \"points\" array)");
  std::vector<PipelineState::Measured> out;
  const nlohmann::json& pts = j["points"];
  for (size_t k = 0; k < pts.size(); ++k) {
    const nlohmann::json& p = pts[k];
    const std::string where = path + ": points[" + std::to_string(k) + "]";
    auto integer = [&](const char* key) {
      if (!p.contains(key) || !p[key].is_number_integer() || p[key].get<int64_t>() < 0)
        throw InputError(where + "." + key + " must be a non-negative integer");
      return p[key].get<int64_t>();
    };
    PipelineState::Measured m;
    m.variant = int(integer("variant"));
    m.d = integer("d");
    m.n = integer("n");
    if (!p.contains("causal") || !p["causal"].is_boolean()) throw InputError(where + ".causal must be true or false");
    m.causal = p["causal"].get<bool>();
    if (!p.contains("tflops") || !p["tflops"].is_number() || !(p["tflops"].get<double>() > 0))
      throw InputError(where + ".tflops must be a positive number");
    m.tflops = p["tflops"].get<double>();
    m.source = p.value("source", std::string());
    m.kernel = p.value("kernel", std::string());
    if (m.variant == 0 && m.kernel.empty()) throw InputError(where + " has variant 0 and no \"kernel\" name");
    out.push_back(m);
  }
  return out;
}

}  // namespace

void PipelineState::load_measured(const std::string& path) {
  try {
    // The checked reader, as every file (docs/limits.md): a regular file of at most 16 MiB, depth 64.
    measured = parse_measured(parse_json_input(read_input_file(path, "measurement file", int64_t(16) << 20), path), path);
    measured_loaded = true;
    measured_error.clear();
  } catch (const InputError& e) {
    measured.clear();
    measured_loaded = false;
    measured_error = e.what();
  }
}

void PipelineState::rebuild() {
  pipeline::Rates rates;
  rates.wait_clk = wait_clk;
  rates.tensor_in_turn = in_turn;
  pipeline::Shape s;
  s.nq = s.nk = n;
  s.d = d;
  s.causal = causal;
  s.heads = 8 * std::max<int64_t>(1, 131072 / (8 * int64_t(n)));  // B x H x N = 131072, H = 8
  rung = pipeline::rung(variant, d);
  timeline = pipeline::simulate(rung, d, kShownBlocks, rung.ctas_per_sm, rates);
  prediction = pipeline::predict(rung, s, rates);
  rows.clear();
  references.clear();
  auto here = [&](const Measured& m) { return m.d == d && m.n == n && m.causal == causal; };
  for (const pipeline::Rung& r : pipeline::rungs(d)) {
    Row row;
    row.rung = r;
    row.predicted = pipeline::predict(r, s, rates).tflops;
    for (const Measured& m : measured)  // the later point wins: the newer call
      if (here(m) && m.variant == r.variant) {
        row.measured = m.tflops;
        row.measured_source = m.source;
      }
    rows.push_back(row);
  }
  for (const Measured& m : measured) {  // PyTorch's kernels: one line each, the later point wins
    if (!here(m) || m.variant != 0) continue;
    auto same = std::find_if(references.begin(), references.end(), [&](const Measured& r) { return r.kernel == m.kernel; });
    if (same != references.end()) *same = m;
    else references.push_back(m);
  }
}

}  // namespace flashstep::gui
