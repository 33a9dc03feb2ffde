// The pipeline model's measured figures (app/pipeline_measured.h).
#include "app/pipeline_measured.h"

#include "core/data_dir.h"
#include "core/input_files.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace flashstep {

const char* const kBackwardResultsFiles[2] = {"gpu/results/device-checks/targets-h200-2026-12-07/assets/bwd.json",
                                              "gpu/results/device-checks/targets-h200-2026-12-07/assets/bwd_causal.json"};

TechniqueSource technique_source(const std::string& key, int64_t d) {
  // The kernel of the ladder that is each technique alone (gpu/ladder/NOTES.md): FlashAttention-2
  // on wgmma with Bc 128, then one change at a time; the softmax under the product and the
  // persistent grid as measured after the wait for O += P~ V moved below the softmax. The default:
  // fwd_config_sm90's choice (configuration 45 at both d, gpu/fa3_forward.cu): the median of five
  // alternating rounds of bench-gpu beside cuDNN (tools/device/rounds_table.py over
  // repeat_defaults.sh's tables), where one call's figure at N = 4096 can be 15% off.
  const std::string first = "gpu/results/fa3/bench.txt";
  const std::string overlap = "gpu/results/fa3_ladder/softmax-overlap-after/bench.txt";
  const std::string defaults = "gpu/results/device-checks/defaults-f45-5-rounds/medians_bench.txt";
  if (key == "fa2-wgmma") return {first, 14};
  if (key == "tma-producer") return {first, 15};
  if (key == "ping-pong") return {first, 16};
  if (key == "softmax-under-product") return {overlap, 17};
  if (key == "persistent") return {overlap, 18};
  if (key == "default") return {defaults, 45};
  throw std::logic_error("technique_source: no results file for technique " + key);
}

int64_t forward_bench_heads(int64_t n) { return 8 * std::max<int64_t>(1, 131072 / (8 * n)); }

namespace {

// The text of a results file, or an empty string with the reason in `why`.
std::string read_results(const std::string& relative, std::string& why) {
  try {
    return read_input_file(data_path(relative), "results file", int64_t(16) << 20);
  } catch (const InputError& e) {
    why = e.what();
    return {};
  }
}

}  // namespace

MeasuredFigure measured_forward(const std::string& key, int64_t d, int64_t n, bool causal) {
  const TechniqueSource src = technique_source(key, d);
  MeasuredFigure m;
  std::string why;
  const std::string text = read_results(src.file, why);
  if (text.empty()) {
    m.source = why.empty() ? src.file + " is empty" : why;
    return m;
  }
  // flashstep_tc_bench's table: "bf16  64   4096   no     fa2 tc             21      0.318    432.2     0.00"
  // (dtype d N causal kernel... v ms TFLOP/s std); a later line of the same kernel and shape wins.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> t;
    for (std::string w; ls >> w;) t.push_back(w);
    if (t.size() < 8 || t[0] != "bf16") continue;
    try {
      const size_t k = t.size();
      if (std::stoll(t[1]) != d || std::stoll(t[2]) != n || (t[3] == "yes") != causal || std::stoi(t[k - 4]) != src.config)
        continue;
      m.value = std::stod(t[k - 2]);
      m.found = true;
    } catch (const std::exception&) {
      continue;  // a line of another table
    }
  }
  m.source = src.file + " (configuration " + std::to_string(src.config) + ")";
  if (!m.found) m.source = "no bf16 line at this shape in " + m.source;
  return m;
}

MeasuredFigure measured_backward(int64_t heads, int64_t n, int64_t d, bool causal) {
  MeasuredFigure m;
  const std::string file = kBackwardResultsFiles[causal ? 1 : 0];
  std::string why;
  const std::string text = read_results(file, why);
  if (text.empty()) {
    m.source = why.empty() ? file + " is empty" : why;
    return m;
  }
  // bench-gpu --backward --json-file: {"causal", "rows": [{B, H, d, n, "fa2_tc": {backward_ms,
  // backward_tflops, backward_variant}}]}.
  try {
    const nlohmann::json j = parse_json_input(text, file);
    if (j.value("causal", !causal) != causal) throw InputError(file + ": its \"causal\" is not " + (causal ? "true" : "false"));
    for (const nlohmann::json& r : j.at("rows")) {
      if (r.at("B").get<int64_t>() * r.at("H").get<int64_t>() != heads || r.at("n").get<int64_t>() != n ||
          r.at("d").get<int64_t>() != d)
        continue;
      const nlohmann::json& t = r.at("fa2_tc");
      m.value = t.at("backward_ms").get<double>();
      m.tflops = t.at("backward_tflops").get<double>();
      m.found = m.value > 0;
      m.source = file + " (configuration " + std::to_string(t.value("backward_variant", 0)) + ")";
    }
  } catch (const std::exception& e) {
    m.found = false;
    m.source = std::string(file) + ": " + e.what();
    return m;
  }
  if (!m.found) m.source = "no point at this shape in " + file;
  return m;
}

}  // namespace flashstep
