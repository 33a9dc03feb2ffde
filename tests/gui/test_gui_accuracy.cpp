// One accuracy figure for one run: `flashstep run`'s summary, the app's memory panel (the view
// app/gui/run_view.cpp fills) and verify's CPU side (core/verify.h's float64 checks, which
// `flashstep verify` prints) all report the error of the run's O against float64 from the same
// code (core/accuracy.h). The oracle is independent of that code: the error is computed here
// against PyTorch's float64 output in tests/golden/, read as float64 by this file.
#include "app/gui/app_state.h"
#include "core/run.h"
#include "core/verify.h"
#include "tests/cli_helpers.h"
#include "tests/test_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace flashstep;

namespace {

// A float64 .npy (version 1.0, '<f8', C order) as it is: core's read_npy rounds to float32,
// which would blur an error of float32's size.
MatD read_float64_npy(const std::string& path, int64_t rows, int64_t cols) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(s.size() > 10);
  REQUIRE(s.compare(0, 6, "\x93NUMPY") == 0);
  REQUIRE(s[6] == 1);  // version 1.0: a two-byte header length
  const size_t header_len = size_t(uint8_t(s[8])) | size_t(uint8_t(s[9])) << 8;
  const std::string header = s.substr(10, header_len);
  REQUIRE(header.find("'<f8'") != std::string::npos);
  REQUIRE(header.find("'fortran_order': False") != std::string::npos);
  const size_t bytes = size_t(rows * cols) * sizeof(double);
  REQUIRE(s.size() == 10 + header_len + bytes);
  MatD m(rows, cols);
  std::memcpy(m.data(), s.data() + 10 + header_len, bytes);
  return m;
}

// The number after `label` in `text` (e.g. "max rel " in run's "vs float64" line).
double number_after(const std::string& text, const std::string& line_start, const std::string& label) {
  const size_t line = text.find(line_start);
  REQUIRE(line != std::string::npos);
  const size_t at = text.find(label, line);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + label.size()));
}

}  // namespace

TEST_CASE("run's summary, the memory panel and verify's CPU side report one accuracy figure", "[accuracy][gui]") {
  // tests/golden/manifest.json: n64_d16, Nq = Nk = 64, d = 16, unmasked, tau = 0.25 (exact in
  // float32, as the problem stores tau: the golden output is then the problem's float64 answer)
  const std::string name = "n64_d16";
  const double tau = 0.25;
  ProblemSpec spec = fstest::golden_spec(name, tau);
  spec.schedule = Schedule::fa2;
  // The app's view of the run; its recorded trace is the CPU engine's run that all three read.
  const std::unique_ptr<gui::RunView> view = gui::make_run_view(spec);
  const Trace& cpu = view->trace;
  REQUIRE(cpu.O.rows() == 64);
  REQUIRE(cpu.O.cols() == 16);

  // The oracle: max |O - O_torch| / max |O_torch| over the golden float64 output. The figures
  // may differ from it by at most the golden file's distance from core's reference (triangle
  // inequality), which is float64 rounding: far below the figure.
  const MatD gold = read_float64_npy(fstest::golden(name + ".o.npy"), 64, 16);
  const double gold_max = gold.cwiseAbs().maxCoeff();
  const double expected = (cpu.O.cast<double>() - gold).cwiseAbs().maxCoeff() / gold_max;
  const Reference ref = reference_attention(cpu.problem.Q, cpu.problem.K, cpu.problem.V, tau);
  const double slack = (ref.O - gold).cwiseAbs().maxCoeff() / gold_max;
  REQUIRE(expected > 0);         // a float32 engine is not exact: the figure says something
  REQUIRE(expected < 1e-5);      // and within verify's float64 tolerance
  REQUIRE(slack < 0.2 * expected);  // the golden file is precise enough to check the figure
  const auto near_oracle = [&](double figure) { return std::abs(figure - expected) <= slack * 1.001; };

  // The memory panel's O error column for the shown schedule.
  const gui::ScheduleRun& shown = view->runs[size_t(gui::schedule_column(spec.schedule))];
  REQUIRE(shown.have_error);
  const double panel = shown.o_err.max_rel;
  INFO("oracle " << expected << ", slack " << slack << ", panel " << panel);
  CHECK(near_oracle(panel));

  // verify's CPU engine line ("CPU vs float64: O abs .. rel ..").
  const Float64Checks checks = float64_checks(cpu, "CPU", 0, {});
  REQUIRE(checks.measured);
  REQUIRE(checks.checks.size() == 1);
  CHECK(checks.checks[0].name == "CPU vs float64:");
  const double verify_cpu = checks.checks[0].err.O.max_rel;
  CHECK(verify_cpu == panel);  // the same code on the same run: the same double

  // run's summary: "vs float64 O max abs A, max rel R; ...", printed with three digits.
  const std::string args = "run --q " + spec.q_path + " --k " + spec.k_path + " --v " + spec.v_path +
                           " --scale 0.25 --schedule fa2";
  const fstest::Outcome o = fstest::run_flashstep(args);
  INFO(o.out);
  REQUIRE(o.rc == 0);
  const double summary = number_after(o.out, "vs float64 O", "max rel ");
  char panel_text[32];
  std::snprintf(panel_text, sizeof panel_text, "%.3g", panel);
  CHECK(std::stod(panel_text) == summary);  // the panel's figure as run prints it
  CHECK(std::abs(summary - panel) <= 5e-3 * panel);  // three digits
}
