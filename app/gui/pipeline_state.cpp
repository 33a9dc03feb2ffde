// The Pipeline view's state (app/gui/pipeline_state.h).
#include "app/gui/pipeline_state.h"

#include "core/input_files.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace flashstep::gui {

namespace {

// assets/bench/h200_hopper.json: {"flashstep_measured": 1, "points": [{variant, d, n, causal,
// tflops, source[, kernel]}, ...]}; variant 0 with "kernel" is a reference (PyTorch's sdpa), the
// view's lines. The other points (kernels of the ladder) are checked and left: the techniques'
// figures come from the results files.
std::vector<PipelineState::Reference> parse_measured(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("flashstep_measured") || !j.contains("points") || !j["points"].is_array())
    throw InputError(path + ": not a measurements file (needs \"flashstep_measured\" and a \"points\" array)");
  std::vector<PipelineState::Reference> out;
  const nlohmann::json& pts = j["points"];
  for (size_t k = 0; k < pts.size(); ++k) {
    const nlohmann::json& p = pts[k];
    const std::string where = path + ": points[" + std::to_string(k) + "]";
    auto integer = [&](const char* key) {
      if (!p.contains(key) || !p[key].is_number_integer() || p[key].get<int64_t>() < 0)
        throw InputError(where + "." + key + " must be a non-negative integer");
      return p[key].get<int64_t>();
    };
    PipelineState::Reference m;
    const int64_t variant = integer("variant");
    m.d = integer("d");
    m.n = integer("n");
    if (!p.contains("causal") || !p["causal"].is_boolean()) throw InputError(where + ".causal must be true or false");
    m.causal = p["causal"].get<bool>();
    if (!p.contains("tflops") || !p["tflops"].is_number() || !(p["tflops"].get<double>() > 0))
      throw InputError(where + ".tflops must be a positive number");
    m.tflops = p["tflops"].get<double>();
    m.kernel = p.value("kernel", std::string());
    if (variant == 0 && m.kernel.empty()) throw InputError(where + " has variant 0 and no \"kernel\" name");
    if (variant == 0) out.push_back(m);
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
  rates.tensor_in_turn = in_turn && !backward;
  pipeline::Shape s;
  s.nq = s.nk = n;
  s.d = d;
  s.causal = causal;
  rows.clear();
  references.clear();
  if (backward) {
    s.heads = kBackwardBenchHeads;  // bench-gpu --backward --tensor-cores: B = 16, H = 16
    warpgroups = pipeline::kBwdWarpgroups;
    ctas = 1;
    timeline = pipeline::simulate_backward(d, kShownBlocks, rates);
    backward_prediction = pipeline::predict_backward(s, rates);
    backward_measured = measured_backward(s.heads, n, d, causal);
    return;
  }
  s.heads = forward_bench_heads(n);  // B x H x N = 131072, H = 8
  kernel = pipeline::technique(technique, d);
  warpgroups = kernel.consumers;
  ctas = kernel.ctas_per_sm;
  timeline = pipeline::simulate(kernel, d, kShownBlocks, kernel.ctas_per_sm, rates);
  prediction = pipeline::predict(kernel, s, rates);
  for (const pipeline::Kernel& k : pipeline::techniques(d)) {
    Row row;
    row.kernel = k;
    row.predicted = pipeline::predict(k, s, rates).tflops;
    row.measured = measured_forward(k.key, d, n, causal);
    rows.push_back(row);
  }
  for (const Reference& m : measured) {  // PyTorch's kernels: one line each, the later point wins
    if (m.d != d || m.n != n || m.causal != causal) continue;
    auto same = std::find_if(references.begin(), references.end(), [&](const Reference& r) { return r.kernel == m.kernel; });
    if (same != references.end()) *same = m;
    else references.push_back(m);
  }
}

}  // namespace flashstep::gui
