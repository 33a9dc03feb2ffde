// The compare view's snapshot state (app/gui/snapshot_compare.h), in-process: a folder written
// by core's writer from a CPU run is loaded as `flashstep gui --snapshots DIR` loads it, and at
// every step the view's tile (its i, j, the folder's O_i, l_i, m_i, the trace's, the difference)
// is checked against the .npy files themselves, read here with core/npy.h, and against the
// trace (fa1: the HBM a Cursor rebuilds; fa2: the O_i recorded at FA2fwd L10). A folder with one
// value perturbed is reported at the j and Q block of that value.
#include "app/gui/options.h"
#include "app/gui/preset.h"
#include "app/gui/state_dump.h"
#include "core/npy.h"
#include "core/run.h"
#include "core/snapshot.h"
#include "core/tolerance.h"
#include "gui_test_helpers.h"

#include <cmath>
#include <random>

using namespace flashstep;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// The CPU engine's snapshot folder of a problem, written by core's writer.
std::string write_folder(const ProblemSpec& spec, const std::string& name) {
  RunOptions opt;
  opt.record = true;
  const std::string dir = out_path(name);
  write_snapshots(dir, cpu_snapshots(run_spec(spec, opt)));
  return dir;
}

// One forward tensor of snapshot j, read from its .npy file as the manifest names it: (Nq x d)
// or (Nq x 1).
Mat file_tensor(const std::string& dir, int64_t j, const std::string& tensor) {
  const nlohmann::json m = load_json(dir + "/manifest.json");
  for (const nlohmann::json& s : m["snapshots"])
    if (s["phase"] == "forward" && s["j"] == j) {
      const NpyArray a = read_npy(dir + "/" + s["files"][tensor].get<std::string>());
      const int64_t rows = a.shape[0], cols = a.shape.size() == 2 ? a.shape[1] : 1;
      return Eigen::Map<const Mat>(a.data.data(), Eigen::Index(rows), Eigen::Index(cols));
    }
  FAIL("no forward snapshot j = " << j << " in " << dir);
  return {};
}

void require_equal(const Mat& x, const Mat& y, const char* what) {
  INFO(what);
  REQUIRE(x.rows() == y.rows());
  REQUIRE(x.cols() == y.cols());
  for (int64_t k = 0; k < x.size(); ++k) {
    const float a = x.data()[k], b = y.data()[k];
    if (std::isinf(b)) REQUIRE(a == b);  // m = -inf of a row no key reached yet
    else REQUIRE(a == b);
  }
}

// The trace's state of Q block i after (i, j): fa1 from the HBM a Cursor rebuilds there, fa2
// from the step that updated O_i (FA2fwd L10) and m_i, l_i (FA2fwd L9) of (i, j).
void require_trace_tile(const gui::AppState& s, const gui::SnapshotTile& t) {
  const Trace& tr = s.run->trace;
  if (tr.problem.schedule == Schedule::fa1) {
    Cursor c(tr);
    c.seek(gui::SnapshotCompare::step_after(*s.run, t.i, t.j));
    require_equal(t.cpu[0], c.hbm(Tensor::O).middleRows(t.row0, t.rows), "fa1 O rows of block i in HBM");
    require_equal(t.cpu[1], c.hbm(Tensor::l).middleRows(t.row0, t.rows), "fa1 l rows of block i in HBM");
    require_equal(t.cpu[2], c.hbm(Tensor::m).middleRows(t.row0, t.rows), "fa1 m rows of block i in HBM");
    return;
  }
  const int64_t k = s.run->step_of(t.i, t.j, Line::FA2F_L10);
  if (k >= 0) require_equal(t.cpu[0], tr.steps[size_t(k)].O_i, "fa2 O_i at FA2fwd L10 of (i, j)");
}

// Every step of the run: the tile follows the cursor's forward (i, j) and agrees with the files.
void check_every_step(gui::AppState& s, const std::string& dir) {
  const gui::SnapshotCompare& c = s.snapshots;
  REQUIRE(c.loaded);
  REQUIRE(c.first_over_j == -1);
  REQUIRE(int64_t(c.worst.size()) == s.run->trace.tiling.Tc);
  for (double w : c.worst) REQUIRE(w == 0);  // the same engine on the same inputs: bit for bit
  int tiles = 0;
  for (size_t k = 0; k <= s.steps(); ++k) {
    s.seek(k);
    const Step* cur = s.cursor->current();
    const gui::SnapshotTile& t = c.tile;
    INFO("step " << k);
    if (!cur || is_backward_line(cur->line) || cur->i < 0 || cur->j < 0) {
      REQUIRE(t.i == -1);
      continue;
    }
    REQUIRE(t.i == cur->i);
    REQUIRE(t.j == cur->j);
    REQUIRE(t.row0 == cur->i * s.run->trace.tiling.Br);
    for (int u = 0; u < gui::kSnapTensors; ++u) {
      const Mat f = file_tensor(dir, t.j, gui::kSnapTensorNames[u]).middleRows(t.row0, t.rows);
      require_equal(t.other[size_t(u)], f, "the folder's tile against its file");
      require_equal(t.cpu[size_t(u)], f, "the trace's tile against the file the CPU run wrote");
      REQUIRE(t.diff[size_t(u)].cwiseAbs().maxCoeff() == 0);
    }
    require_trace_tile(s, t);
    ++tiles;
  }
  REQUIRE(tiles > 0);
}

gui::GuiOptions folder_options(const std::string& preset, const std::string& dir, bool problem_from_folder = false) {
  gui::GuiOptions o;
  o.preset = preset;
  o.view = "compare";
  o.snapshots = dir;
  o.snapshot_problem = problem_from_folder;
  return o;
}

// Fresh inputs each run (the seed is printed with any failure).
uint64_t fresh_seed() {
  static std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

ProblemSpec ragged(Schedule sched, int64_t nq, int64_t nk, int64_t d, int64_t M, uint64_t seed) {
  ProblemSpec p;
  p.nq = nq;
  p.nk = nk;
  p.d = d;
  p.M = M;
  p.schedule = sched;
  p.seed = seed >> 16;  // any seed; kept short for the messages
  return p;
}

}  // namespace

TEST_CASE("the compare view's tiles agree with a preset's snapshot files at every step", "[gui][snapshots]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "fa1-vs-fa2", "causal", "dropout-bf16");
  INFO("preset " << preset);
  const gui::Preset p = gui::load_preset(gui::preset_path(preset, FLASHSTEP_ASSET_DIR));
  const std::string dir = write_folder(p.spec, "snap-" + preset);
  gui::AppState s;
  gui::prepare_state(s, folder_options(preset, dir));
  REQUIRE(s.view == gui::View::compare);
  REQUIRE(s.snapshots.final_o_ratio == 0);
  REQUIRE(s.snapshots.final_lse_ratio == 0);
  check_every_step(s, dir);
}

TEST_CASE("ragged, masked problems: the folder's problem is loaded from its manifest and compared", "[gui][snapshots]") {
  const uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  struct Case {
    ProblemSpec spec;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({ragged(Schedule::fa1, 13, 11, 5, 80, rng()), "fa1 13 x 11, d 5"});
  cases.push_back({ragged(Schedule::fa2, 9, 17, 3, 48, rng()), "fa2 9 x 17, d 3"});
  cases.push_back({ragged(Schedule::fa1, 10, 23, 4, 64, rng()), "fa1 causal 10 x 23 (bottom-right)"});
  cases.back().spec.options.mask.causal = true;
  cases.push_back({ragged(Schedule::fa2, 19, 7, 6, 96, rng()), "fa2 causal 19 x 7: rows that see no key"});
  cases.back().spec.options.mask.causal = true;
  cases.push_back({ragged(Schedule::fa2, 12, 14, 4, 64, rng()), "fa2 window 2,1 with dropout 0.2"});
  cases.back().spec.options.mask.window_left = 2;
  cases.back().spec.options.mask.window_right = 1;
  cases.back().spec.options.dropout = 0.2;
  cases.push_back({ragged(Schedule::fa1, 11, 9, 4, 64, rng()), "fa1 kv_len 5, bf16"});
  cases.back().spec.options.mask.kv_len = 5;
  cases.back().spec.options.dtype = Dtype::bf16;
  const size_t n = GENERATE(range(0, 6));
  const Case& c = cases[n];
  INFO(c.what);
  const std::string dir = write_folder(c.spec, "snap-ragged-" + std::to_string(n));

  // The tiny preset is another problem: one line naming the field, and the way out.
  gui::AppState plain;
  try {
    gui::prepare_state(plain, folder_options("tiny", dir));
    FAIL("a folder of another problem was accepted");
  } catch (const InputError& e) {
    REQUIRE_THAT(e.what(), Contains("another problem") && Contains("--snapshot-problem"));
  }
  gui::AppState s;
  gui::prepare_state(s, folder_options("tiny", dir, true));
  REQUIRE(s.run->trace.problem.nq == c.spec.nq);
  REQUIRE(s.run->trace.problem.nk == c.spec.nk);
  REQUIRE(s.form.nq == c.spec.nq);  // the editor shows the problem that runs
  check_every_step(s, dir);
}

TEST_CASE("one perturbed value: the first j over tolerance is its j, one click away", "[gui][snapshots]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2);
  const uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const ProblemSpec spec = ragged(sched, 14, 13, 4, 64, rng());  // Br = Bc = 4: Tr = 4, Tc = 4
  const std::string dir = write_folder(spec, std::string("snap-perturbed-") + schedule_name(sched));
  const int64_t J = 1 + int64_t(rng() % 3), row = int64_t(rng() % 14), col = int64_t(rng() % 4);
  INFO(schedule_name(sched) << ": O[" << row << ", " << col << "] at j = " << J);
  // Perturb O at (row, col) of snapshot J by 100 tolerances of max|O| there, in the file itself.
  const nlohmann::json m = load_json(dir + "/manifest.json");
  const std::string file = dir + "/" + m["snapshots"][size_t(J)]["files"]["O"].get<std::string>();
  REQUIRE(m["snapshots"][size_t(J)]["j"] == J);
  NpyArray a = read_npy(file);
  Eigen::Map<Mat> O(a.data.data(), Eigen::Index(a.shape[0]), Eigen::Index(a.shape[1]));
  const double scale = O.cwiseAbs().maxCoeff(), tol = kTiledTol;  // fp32: O's tolerance for fa1 and fa2
  const float old = O(row, col);
  O(row, col) = float(old + 100 * tol * scale);
  write_npy(file, a.data.data(), a.shape);

  gui::AppState s;
  gui::prepare_state(s, folder_options("tiny", dir, true));
  gui::SnapshotCompare& c = s.snapshots;
  REQUIRE(c.loaded);
  const int64_t I = row / s.run->trace.tiling.Br;
  REQUIRE(c.first_over_j == J);
  REQUIRE(c.first_over_i == I);
  for (int64_t j = 0; j < int64_t(c.worst.size()); ++j) {
    INFO("j = " << j);
    if (j == J) REQUIRE(c.worst[size_t(j)] > 1);
    else REQUIRE(c.worst[size_t(j)] <= 1);
  }
  const double expected = double(std::abs(O(row, col) - old)) / (tol * scale);
  REQUIRE_THAT(c.ratio[size_t(J)][0], Catch::Matchers::WithinRel(expected, 1e-4));

  // The button: the cursor moves to (I, J), and the tile's difference is there, in tolerance units.
  REQUIRE(s.seek_first_over());
  const Step* cur = s.cursor->current();
  REQUIRE(cur != nullptr);
  REQUIRE(cur->i == I);
  REQUIRE(cur->j == J);
  REQUIRE(c.tile.i == I);
  REQUIRE(c.tile.j == J);
  const Mat& diff = c.tile.diff[0];
  REQUIRE_THAT(double(diff(row - c.tile.row0, col)), Catch::Matchers::WithinRel(expected, 1e-4));
  REQUIRE(c.tile.max_diff[0] == diff(row - c.tile.row0, col));
  REQUIRE(c.tile.max_diff[1] == 0);
  REQUIRE(c.tile.max_diff[2] == 0);
  // The dump says the same.
  const nlohmann::json d = gui::state_to_json(s);
  REQUIRE(d["snapshots"]["first_over_j"] == J);
  REQUIRE(d["snapshots"]["tile"]["i"] == I);
}

TEST_CASE("bad snapshot folders: one clear line, nothing loaded", "[gui][snapshots]") {
  gui::AppState s;
  gui::GuiOptions o = folder_options("tiny", out_path("no-such-folder"));
  REQUIRE_THROWS_AS(gui::prepare_state(s, o), InputError);
  o.snapshots.clear();
  o.snapshot_problem = true;
  REQUIRE_THROWS_WITH(gui::prepare_state(s, o), Contains("--snapshot-problem needs --snapshots"));
  // A truncated file: the reader's line, and what was loaded before stays.
  const gui::Preset p = gui::load_preset(gui::preset_path("tiny", FLASHSTEP_ASSET_DIR));
  const std::string dir = write_folder(p.spec, "snap-truncated");
  gui::AppState t;
  gui::prepare_state(t, folder_options("tiny", dir));
  REQUIRE(t.snapshots.loaded);
  fs::resize_file(dir + "/forward_j0001_l.npy", 40);
  t.load_snapshots();
  REQUIRE_FALSE(t.snapshots.error.empty());
  REQUIRE(t.snapshots.error.find('\n') == std::string::npos);
  REQUIRE(t.snapshots.loaded);
}

TEST_CASE("the compare view's buttons as script actions: a folder of another problem, its problem, the first over",
          "[gui][snapshots]") {
  const uint64_t seed = fresh_seed();
  CAPTURE(seed);
  ProblemSpec spec = ragged(Schedule::fa2, 11, 6, 3, 36, seed);  // Br = 3, Bc = 3: Tr = 4, Tc = 2
  spec.options.mask.causal = true;
  const std::string dir = write_folder(spec, "snap-buttons");
  // Perturb l at j = 1, row 10 (Q block 3), far over tolerance.
  const nlohmann::json m = load_json(dir + "/manifest.json");
  const std::string file = dir + "/" + m["snapshots"][1]["files"]["l"].get<std::string>();
  NpyArray a = read_npy(file);
  a.data[10] *= 1.5f;
  write_npy(file, a.data.data(), a.shape);

  gui::AppState s;
  gui::GuiOptions o;
  o.preset = "tiny";
  o.script = "snapshots " + dir;  // the folder field and Load: another problem is not an error here
  gui::prepare_state(s, o);
  REQUIRE_FALSE(s.snapshots.loaded);
  REQUIRE(s.snapshots.error.empty());
  REQUIRE_THAT(s.snapshots.mismatch, Contains("schedule (fa2 in the folder, fa1 in the app)"));
  REQUIRE(s.snapshots.can_load_problem);
  REQUIRE_THROWS_WITH(s.run_script("first-over"), Contains("no snapshot j is over tolerance"));

  s.run_script("snapshot-problem; first-over");
  REQUIRE(s.snapshots.loaded);
  REQUIRE(s.snapshots.mismatch.empty());
  // The editor holds the folder's problem with the paper's blocks and tau = 1/sqrt(d), as typed.
  REQUIRE(s.form.nq == 11);
  REQUIRE(s.form.nk == 6);
  REQUIRE(s.form.br == 0);
  REQUIRE(s.form.default_scale);
  REQUIRE(s.form.options.mask.causal);
  REQUIRE(s.run->schedule() == Schedule::fa2);
  REQUIRE(s.snapshots.first_over_j == 1);
  REQUIRE(s.snapshots.first_over_i == 3);
  REQUIRE(s.cursor->current()->i == 3);
  REQUIRE(s.cursor->current()->j == 1);
  REQUIRE(s.snapshots.tile.max_diff[1] > 1);  // l
  REQUIRE(s.snapshots.tile.max_diff[0] == 0);
}
