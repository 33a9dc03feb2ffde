// The memory panel's L2 model and measured DRAM bytes (app/gui/l2_view.h), in-process: the
// numbers the app shows at a step against core's trace of the same problem, the measured rows
// against the JSON they come from, and one clear error for each bad file or value.
#include "core/schedule_registry.h"
#include "app/gui/options.h"
#include "app/gui/preset.h"
#include "app/gui/state_dump.h"
#include "core/run.h"
#include "gui_test_helpers.h"
#include "tests/test_files.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

nlohmann::json l2_state_after(const std::string& preset, const std::string& script, const std::string& dram = "") {
  gui::GuiOptions o;
  o.preset = preset;
  o.script = script;
  o.dram = dram;
  gui::AppState s;
  gui::prepare_state(s, o);
  return gui::state_to_json(s);
}

// The editor's problem and L2 fields as a script, and the same as core takes them.
struct L2Case {
  ProblemSpec spec;
  L2Config l2;
  std::string script() const {
    const Mask& m = spec.options.mask;
    return "set nq " + std::to_string(spec.nq) + "; set nk " + std::to_string(spec.nk) + "; set d " +
           std::to_string(spec.d) + "; set M " + std::to_string(spec.M) + "; set seed " +
           std::to_string(spec.seed) + "; set schedule " + schedule_name(spec.schedule) + "; set causal " +
           (m.causal ? "1" : "0") + "; set l2 " + std::to_string(l2.bytes) + "; set gpu " + l2.gpu +
           "; set heads " + std::to_string(l2.heads) + "; set ncu " + (l2.ncu ? "1" : "0") + "; apply";
  }
};

Trace core_run(const L2Case& c, Schedule s, bool record) {
  ProblemSpec spec = c.spec;
  spec.schedule = s;
  RunOptions opt;
  opt.record = record;
  opt.l2 = c.l2;
  return run_spec(spec, opt);
}

using fstest::write_text;

}  // namespace

TEST_CASE("the memory panel's DRAM bytes, L2 occupancy and hit rate equal core's trace at each step", "[gui][l2]") {
  std::mt19937_64 rng(Catch::rngSeed() + 17);
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int shape = GENERATE(0, 1, 2);
  L2Case c;
  c.spec.schedule = sched;
  c.spec.seed = 1 + rng() % 100000;  // fresh inputs every run
  c.spec.pattern = "random";
  switch (shape) {  // ragged blocks, Nq != Nk, a causal mask
    case 0: c.spec.nq = 37, c.spec.nk = 50, c.spec.d = 8, c.spec.M = 256; break;
    case 1: c.spec.nq = 64, c.spec.nk = 40, c.spec.d = 16, c.spec.M = 512, c.spec.options.mask.causal = true; break;
    default: c.spec.nq = c.spec.nk = 96, c.spec.d = 4, c.spec.M = 64; break;
  }
  c.l2.bytes = GENERATE(int64_t(0), int64_t(2048), int64_t(5000), int64_t(1) << 20);
  c.l2.heads = GENERATE(int64_t(1), int64_t(3));
  c.l2.ncu = true;
  CAPTURE(schedule_name(sched), shape, c.l2.bytes, c.l2.heads, c.spec.seed);
  const Trace tr = core_run(c, sched, true);
  REQUIRE(tr.steps.size() > 4);
  for (size_t k : {size_t(0), size_t(1), tr.steps.size() / 3, tr.steps.size() / 2 + 1, tr.steps.size()}) {
    CAPTURE(k);
    const nlohmann::json d = l2_state_after("tiny", c.script() + "; seek " + std::to_string(k));
    REQUIRE(d["apply_error"] == "");
    REQUIRE(d["index"] == k);
    const nlohmann::json& l2 = d["l2"];
    REQUIRE(l2["bytes"] == c.l2.bytes);
    REQUIRE(l2["heads"] == c.l2.heads);
    REQUIRE(l2["capacity_lines"] == c.l2.bytes / 128);
    if (k == 0) {
      REQUIRE(l2["dram_read_total"] == 0);
      REQUIRE(l2["lines"] == 0);
      continue;
    }
    const Step& st = tr.steps[k - 1];
    REQUIRE(l2["dram_read_total"] == st.dram_read_total);
    REQUIRE(l2["dram_write_total"] == st.dram_write_total);
    REQUIRE(l2["lines"] == st.l2_lines);
    REQUIRE(l2["dirty_lines"] == st.l2_dirty_lines);
    REQUIRE(l2["hit_total"] == st.l2_hit_total);
    REQUIRE(l2["hit_rate"].get<double>() ==
            (st.hbm_read_total ? double(st.l2_hit_total) / double(st.hbm_read_total) : 0.0));
    if (k == tr.steps.size()) {  // the side-by-side table: every schedule's DRAM rows
      for (Schedule other : gui::kSchedules) {
        CAPTURE(schedule_name(other));
        if (!schedule_info(other).l2_order) continue;  // a schedule the L2 model does not replay (decode)
        const Trace o = core_run(c, other, false);
        const nlohmann::json& e = d["runs"][schedule_name(other)];
        REQUIRE(e["dram_read"] == o.totals.dram_read_bytes);
        REQUIRE(e["dram_write"] == o.totals.dram_write_bytes);
        REQUIRE(e["l2"]["all_heads_dram_read"] == o.totals.l2.all_heads_read_bytes);
        REQUIRE(e["l2"]["all_heads_dram_write"] == o.totals.l2.all_heads_write_bytes);
        REQUIRE(e["l2"]["ncu_dram_read"] == o.totals.l2.ncu_read_bytes);
        REQUIRE(e["l2"]["ncu_dram_write"] == o.totals.l2.ncu_write_bytes);
        REQUIRE(e["hbm_read"] == o.totals.hbm_read_bytes);  // the paper's count, unchanged
        REQUIRE_FALSE(e.contains("measured"));
      }
    }
  }
}

TEST_CASE("without the L2 model the panel's DRAM bytes are the HBM bytes and there are no L2 lines", "[gui][l2]") {
  const nlohmann::json d = l2_state_after("fa1-vs-fa2", "step 9");
  REQUIRE(d["l2"].is_null());
  for (Schedule sc : gui::kSchedules) {
    const nlohmann::json& e = d["runs"][schedule_name(sc)];
    REQUIRE(e["dram_read"] == e["hbm_read"]);
    REQUIRE(e["dram_write"] == e["hbm_write"]);
    REQUIRE_FALSE(e.contains("l2"));
  }
}

TEST_CASE("measured rows: the loaded JSON's bytes for the matching problem, schedule, heads and GPU", "[gui][l2]") {
  std::mt19937_64 rng(Catch::rngSeed() + 29);
  std::uniform_real_distribution<double> bytes(1e3, 1e10);
  const double fa1_read = std::floor(bytes(rng)), fa1_write = std::floor(bytes(rng));
  const double fa2_read = std::floor(bytes(rng)), fa2_write = std::floor(bytes(rng));
  // The problem: Nq = Nk = 48, d = 8, M = 256 elements, 4 heads on the h200. fa1 and fa2 are
  // measured; standard's point is for another d, one fa2 point for another head count and one
  // failed (the script logs an error instead of numbers).
  const std::string path = out_path("measured.json");
  nlohmann::json pts = nlohmann::json::array();
  auto point = [](const char* s, int d, int heads, double r, double w) {
    return nlohmann::json{{"schedule", s}, {"n", 48}, {"d", d}, {"heads", heads}, {"M", 256}, {"dtype", "fp32"},
                          {"measured", {{"dram_read_bytes", r}, {"dram_write_bytes", w}, {"kernel_ms", 0.5}}}};
  };
  pts.push_back(point("fa1", 8, 4, fa1_read, fa1_write));
  pts.push_back(point("fa2", 8, 4, fa2_read, fa2_write));
  pts.push_back(point("fa2", 8, 8, 1, 1));
  pts.push_back(point("standard", 16, 4, 2, 2));
  pts.push_back({{"schedule", "fa2"}, {"n", 4096}, {"d", 64}, {"heads", 4}, {"error", "ncu failed (rc 1)"}});
  write_text(path, nlohmann::json{{"gpu", "h200"}, {"points", pts}}.dump(1));

  const std::string problem = "set nq 48; set nk 48; set d 8; set M 256; set gpu h200; set l2 1MiB; set heads 4; apply";
  // Loaded by --dram, or by the panel's field (the script's "dram"), before or after the run.
  for (const nlohmann::json& d : {l2_state_after("tiny", problem, path), l2_state_after("tiny", problem + "; dram " + path),
                                  l2_state_after("tiny", "dram " + path + "; " + problem)}) {
    REQUIRE(d["dram"]["loaded"] == true);
    REQUIRE(d["dram"]["points"] == 4);
    REQUIRE(d["runs"]["fa1"]["measured"]["dram_read"].get<double>() == fa1_read);
    REQUIRE(d["runs"]["fa1"]["measured"]["dram_write"].get<double>() == fa1_write);
    REQUIRE(d["runs"]["fa2"]["measured"]["dram_read"].get<double>() == fa2_read);
    REQUIRE(d["runs"]["fa2"]["measured"]["dram_write"].get<double>() == fa2_write);
    REQUIRE(d["runs"]["fa2"]["measured"]["kernel_ms"].get<double>() == 0.5);
    REQUIRE_FALSE(d["runs"]["standard"].contains("measured"));
  }
  // Another GPU, head count or size: no row matches, but for d = 16 standard's point does.
  for (const std::string other : {"set gpu a100; apply", "set heads 2; apply", "set d 16; apply", "set nk 47; apply"}) {
    const nlohmann::json d = l2_state_after("tiny", problem + "; " + other, path);
    INFO(other);
    REQUIRE_FALSE(d["runs"]["fa1"].contains("measured"));
    REQUIRE_FALSE(d["runs"]["fa2"].contains("measured"));
    if (other == "set d 16; apply") REQUIRE(d["runs"]["standard"]["measured"]["dram_read"].get<double>() == 2.0);
    else REQUIRE_FALSE(d["runs"]["standard"].contains("measured"));
  }
  // Another M: the tiled schedules' points no longer match; standard attention has no tiles.
  {
    const nlohmann::json d = l2_state_after("tiny", problem + "; set d 16; set M 512; apply", path);
    REQUIRE(d["runs"]["standard"]["measured"]["dram_read"].get<double>() == 2.0);
    const nlohmann::json e = l2_state_after("tiny", problem + "; set M 512; apply", path);
    REQUIRE_FALSE(e["runs"]["fa1"].contains("measured"));
    REQUIRE_FALSE(e["runs"]["fa2"].contains("measured"));
  }
  // The measurement file parses, and its N = 1024, d = 64 points match that problem: the figures
  // are the file's own, read here with a plain JSON parse.
  const std::string ncu_path = std::string(FLASHSTEP_SOURCE_DIR) + "/gpu/results/dram/ncu.json";
  const gui::DramMeasurements m = gui::load_dram_measurements(ncu_path);
  const nlohmann::json ncu = load_json(ncu_path);
  REQUIRE(m.points.size() == ncu["points"].size());
  nlohmann::json fa2_file;
  for (const auto& pt : ncu["points"])
    if (pt["schedule"] == "fa2" && pt["n"] == 1024 && pt["d"] == 64 && pt["heads"] == 32) fa2_file = pt["measured"];
  REQUIRE(fa2_file.is_object());
  Problem p;
  p.nq = p.nk = 1024, p.d = 64, p.M = 32768;
  L2Config h200;
  h200.heads = 32;
  const gui::DramPoint* fa2 = gui::find_dram_point(m, Schedule::fa2, p, h200);
  REQUIRE(fa2);
  REQUIRE(fa2->read_bytes == fa2_file["dram_read_bytes"].get<double>());
  REQUIRE(fa2->write_bytes == fa2_file["dram_write_bytes"].get<double>());
}

TEST_CASE("a bad measurement file gets one clear error and the old one stays", "[gui][l2]") {
  const std::string good = R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1,
                               "measured": {"dram_read_bytes": 10, "dram_write_bytes": 20}}]})";
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "is not valid JSON"},
      {"[1, 2]", "expected an object with \"points\""},
      {R"({"gpu": "h200"})", "\"points\" is missing"},
      {R"({"points": {}})", "\"points\" must be an array"},
      {R"({"points": []})", "no measured point"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1, "error": "x"}]})", "every one failed"},
      {R"({"points": [3]})", "point 0 must be an object"},
      {R"({"points": [{"n": 8, "d": 4, "heads": 1}]})", "point 0: \"schedule\" is missing"},
      {R"({"points": [{"schedule": "fa1", "n": -8, "d": 4, "heads": 1}]})", "\"n\" must be a whole number"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4.5, "heads": 1}]})", "\"d\" must be a whole number"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": "32"}]})", "\"heads\" must be a whole number"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1, "dtype": "fp64", "measured": {}}]})", "dtype"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1}]})", "\"measured\" is missing"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1, "measured": {"dram_read_bytes": -1, "dram_write_bytes": 0}}]})",
       "\"dram_read_bytes\" must be a number of bytes >= 0"},
      {R"({"points": [{"schedule": "fa1", "n": 8, "d": 4, "heads": 1, "measured": {"dram_read_bytes": 1}}]})",
       "\"dram_write_bytes\" is missing"},
  };
  const std::string good_path = out_path("good.json"), bad_path = out_path("bad.json");
  write_text(good_path, good);
  for (const auto& [text, expect] : cases) {
    INFO(text);
    write_text(bad_path, text);
    gui::GuiOptions o;
    o.preset = "tiny";
    o.dram = bad_path;
    gui::AppState s;
    REQUIRE_THROWS_WITH(gui::prepare_state(s, o), Contains("--dram: measurement file " + bad_path) && Contains(expect));
    // The panel's field: the error is shown, what was loaded before stays.
    gui::AppState t;
    o.dram = good_path;
    gui::prepare_state(t, o);
    std::snprintf(t.dram.path, sizeof t.dram.path, "%s", bad_path.c_str());
    t.load_dram();
    REQUIRE_THAT(t.dram.error, Contains(expect));
    REQUIRE(std::count(t.dram.error.begin(), t.dram.error.end(), '\n') == 0);
    REQUIRE(t.dram.loaded);
    REQUIRE(t.dram.data.points.size() == 1);
    REQUIRE(t.dram.data.points[0].write_bytes == 20);
  }
  gui::GuiOptions o;
  o.preset = "tiny";
  o.dram = out_path("missing.json");
  gui::AppState s;
  REQUIRE_THROWS_WITH(gui::prepare_state(s, o), Contains("No such file"));
}

TEST_CASE("the editor and presets take the L2 settings as run's flags, and refuse bad ones", "[gui][l2]") {
  // The editor: one error on the L2 field, the run is kept.
  const std::pair<std::string, std::string> bad[] = {
      {"set l2 12MB", "--l2 must be a size in bytes"},
      {"set l2 -5", "--l2 must not be negative"},
      {"set l2 1MiB; set heads 0", "--heads must be between 1"},
      {"set l2 gpu; set backward 1", "the L2 model covers the forward pass only"},
      // What would keep the window busy for long (3 schedules x 64 heads at N = 2048).
      {"set nq 2048; set nk 2048; set d 64; set M 32768; set l2 gpu; set heads 64", "the L2 model would replay about"},
  };
  for (const auto& [script, expect] : bad) {
    INFO(script);
    const nlohmann::json d = l2_state_after("tiny", script);
    REQUIRE_THAT(d["form_error"].get<std::string>(), Contains(expect));
    REQUIRE(d["form_error_field"] == int(gui::Field::l2));
    REQUIRE(d["l2"].is_null());  // Apply is disabled: the old run (no L2 model) stays
    REQUIRE_THROWS_WITH(l2_state_after("tiny", script + "; apply"), Contains("script: apply: ") && Contains(expect));
  }
  REQUIRE_THROWS_WITH(l2_state_after("tiny", "set gpu v100"), Contains("set gpu knows h200, a100"));
  // "l2 gpu": the GPU's own size; "off" removes the model.
  REQUIRE(l2_state_after("tiny", "set gpu a100; set l2 gpu; apply")["l2"]["bytes"] == int64_t(40) << 20);
  REQUIRE(l2_state_after("tiny", "set l2 gpu; apply; set l2 off; apply")["l2"].is_null());

  auto parse = [](const std::string& text) { return gui::parse_preset(text, "t.json"); };
  const gui::Preset p = parse(R"({"problem": {"l2": "8MiB", "gpu": "a100", "heads": 6, "ncu": true}})");
  REQUIRE(p.l2);
  REQUIRE(p.l2->bytes == 8 << 20);
  REQUIRE(p.l2->gpu == "a100");
  REQUIRE(p.l2->heads == 6);
  REQUIRE(p.l2->ncu);
  REQUIRE(parse(R"({"problem": {"gpu": "h200"}})").l2->bytes == int64_t(50) << 20);
  REQUIRE(parse(R"({"problem": {"l2": 4096}})").l2->bytes == 4096);
  REQUIRE_FALSE(parse(R"({"problem": {"nq": 8}})").l2);
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"l2": "12MB"}})"), Contains("preset t.json: --l2 must be a size"));
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"gpu": "v100"}})"), Contains("unknown GPU 'v100'"));
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"heads": 4}})"), Contains("--heads is for the L2 model"));
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"l2": true}})"), Contains("\"l2\""));
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"gpu": "h200", "backward": true}})"), Contains("forward pass only"));
  // Revert fields restores the run's L2 settings, as the preset gave them.
  gui::GuiOptions o;
  o.preset = "l2-fa1-vs-fa2";
  gui::AppState s;
  gui::prepare_state(s, o);
  REQUIRE(s.form.l2);
  const std::optional<L2Config> before = s.form.l2_config();
  s.run_script("set l2 off; set heads 2");
  s.form.from_spec(s.run->spec);
  s.form.set_l2(s.run->l2);
  const std::optional<L2Config> after = s.form.l2_config();
  REQUIRE(after);
  REQUIRE(after->bytes == before->bytes);
  REQUIRE(after->heads == before->heads);
  REQUIRE(after->gpu == before->gpu);
}

TEST_CASE("the l2-fa1-vs-fa2 preset: the paper's count says fa2 reads more, the L2 model says it reads far less", "[gui][l2]") {
  const gui::Preset pr = gui::load_preset(gui::preset_path("l2-fa1-vs-fa2", FLASHSTEP_ASSET_DIR));
  REQUIRE(pr.l2);
  const nlohmann::json d = l2_state_after("l2-fa1-vs-fa2", "");
  REQUIRE(d["l2"]["heads"] == pr.l2->heads);
  const nlohmann::json &fa1 = d["runs"]["fa1"], &fa2 = d["runs"]["fa2"];
  // HBM (no cache): fa2 re-reads K and V for every Q block, more than fa1's reads.
  REQUIRE(fa2["hbm_read"].get<int64_t>() > fa1["hbm_read"].get<int64_t>());
  // DRAM, every head: fa2's Q blocks of a head run together and share K, V in the L2; fa1's
  // launches for all heads overflow it. At least 5x apart.
  REQUIRE(5 * fa2["l2"]["all_heads_dram_read"].get<int64_t>() < fa1["l2"]["all_heads_dram_read"].get<int64_t>());
  // Equal to core's run of the preset's problem.
  ProblemSpec spec = pr.spec;
  spec.schedule = Schedule::fa1;
  RunOptions opt;
  opt.record = false;
  opt.l2 = pr.l2;
  REQUIRE(fa1["l2"]["all_heads_dram_read"] == run_spec(spec, opt).totals.l2.all_heads_read_bytes);
}
