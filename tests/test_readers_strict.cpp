// The readers of a trace file (core/trace_file.cpp: `gui --trace`) and of a snapshot folder
// (core/snapshot_read.cpp: `compare`, `gui --snapshots`) take only what run could have written:
// a problem run accepts (M at least 4d, block sizes within M, a finite float32 scale, the dtype
// and p_dtype rules; no fp8 in a snapshot folder), booleans that are JSON booleans, and for a
// trace run's tiling of its problem, counts that are not negative and running totals that are
// the sums of the steps' bytes. Each bad field is one error line naming the file and the field,
// exit 2, nothing written; the files run writes are still read, and a valid pair still PASSes.
#include "core/backward.h"
#include "core/export.h"
#include "core/snapshot.h"
#include "core/trace_file.h"
#include "hardening_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

using namespace flashstep;
using Catch::Matchers::StartsWith;
using nlohmann::json;
namespace fsys = std::filesystem;

namespace {

// The trace file of a recorded run of `spec` (the backward after it with `backward`), as the
// Python module's save_trace writes it.
json trace_doc(const ProblemSpec& spec, bool backward = false, bool l2 = false) {
  const Problem p = make_problem(spec);
  const Mat dO = backward ? make_grad_output(p, "random") : Mat();
  RunOptions opt;
  opt.record = true;
  if (backward) opt.dO = &dO;
  if (l2) opt.l2 = l2_config_from_flags("4KiB", "", 1, false);
  return trace_to_replay_json(run_problem(p, make_tiling(p), opt));
}

// A small problem of ragged blocks: Q 9 x 4, K and V 11 x 4, M = 64 (Br = Bc = 4, Tr = Tc = 3).
ProblemSpec ragged_spec() { return sizes_spec(9, 11, 4, 64); }

struct BadField {
  const char* name;  // file name, and what the case is
  std::function<void(json&)> change;
  std::string expect;  // the field (and reason) the error line names after "NAME: "
};

// The first step whose key `key` is not 0 (a step that moved bytes, say).
size_t first_with(const json& doc, const char* key) {
  size_t k = 0;
  while (doc["steps"][k][key].get<int64_t>() == 0) ++k;
  return k;
}

std::vector<BadField> bad_traces(const json& good) {
  const size_t rd = first_with(good, "hbm_read_bytes"), wr = first_with(good, "hbm_write_bytes");
  const std::string at_rd = "steps[" + std::to_string(rd) + "]", at_wr = "steps[" + std::to_string(wr) + "]";
  return {
      {"scale-nan", [](json& d) { d["problem"]["scale"] = "nan"; }, "problem.scale makes a problem that run refuses"},
      {"scale-inf", [](json& d) { d["problem"]["scale"] = "inf"; }, "problem.scale makes a problem that run refuses"},
      {"m-1", [](json& d) { d["problem"]["M"] = 1; }, "problem.M makes a problem that run refuses: M = 1 elements is smaller than 4d = 16"},
      {"m-15", [](json& d) { d["problem"]["M"] = 15; }, "problem.M makes a problem that run refuses: M = 15"},
      {"causal-yes", [](json& d) { d["replay"]["mask"]["causal"] = "yes"; }, "replay.mask.causal is not true or false (the string \"yes\")"},
      {"backward-1", [](json& d) { d["problem"]["backward"] = 1; }, "problem.backward is not true or false (1)"},
      {"overridden-text", [](json& d) { d["replay"]["tiling"]["overridden"] = "false"; },
       "replay.tiling.overridden is not true or false"},
      {"masked-null", [](json& d) { d["replay"]["steps"][0]["masked"] = nullptr; },
       "replay.steps[0].masked is not true or false (null)"},
      {"sram-negative", [](json& d) { d["steps"][1]["sram_bytes"] = -1; }, "steps[1].sram_bytes is -1, below 0"},
      {"read-total", [rd](json& d) { d["steps"][rd]["hbm_read_total"] = d["steps"][rd]["hbm_read_total"].get<int64_t>() + 4; },
       at_rd + ".hbm_read_total is "},
      {"write-total", [wr](json& d) { d["steps"][wr]["hbm_write_total"] = 0; },
       at_wr + ".hbm_write_total is 0, not the running sum of the steps' hbm_write_bytes"},
      // Bytes and totals that agree, but a step that moves a negative count.
      {"read-negative", [](json& d) {
         d["steps"][0]["hbm_read_bytes"] = -8;
         d["steps"][0]["hbm_read_total"] = -8;
       }, "steps[0].hbm_read_bytes is -8, below 0"},
      {"p-dtype", [](json& d) { d["problem"]["p_dtype"] = "bf16"; },
       "problem.p_dtype makes a problem that run refuses: --p-dtype bf16 emulates a tensor-core kernel"},
      {"blocks-too-big", [](json& d) {
         d["replay"]["tiling"]["br"] = 8;
         d["replay"]["tiling"]["bc"] = 8;
       }, "replay.tiling.br, bc makes a problem that run refuses: block sizes Br = 8, Bc = 8 do not fit in SRAM"},
      {"br-not-runs", [](json& d) {  // Br = 3 tiles Nq = 9, but run's tiling of M = 64 has Br = 4
         d["problem"]["Br"] = 3;
         d["problem"]["Tr"] = 3;
       }, "problem.Br is 3 where run's tiling of the problem has 4"},
      {"capacity", [](json& d) { d["replay"]["tiling"]["tile_capacity"] = 32; },
       "replay.tiling.tile_capacity is 32 where run's tiling of the problem has 64"},
      {"schedule", [](json& d) { d["problem"]["schedule"] = "fa9"; }, "problem.schedule is refused: unknown schedule 'fa9'"},
      {"dropout-nan", [](json& d) { d["replay"]["dropout"] = "nan"; }, "replay.dropout makes a problem that run refuses"},
      {"splits", [](json& d) { d["problem"]["splits"] = 2; },
       "problem.splits makes a problem that run refuses: --splits is for --schedule decode"},
      {"window", [](json& d) { d["replay"]["mask"]["window_left"] = -2; },
       "replay.mask makes a problem that run refuses: window sizes must be >= 0"},
      {"seed-negative", [](json& d) { d["problem"]["seed"] = -5; },
       "problem.seed is not a whole number from 0 to 2^64 - 1 (-5)"},
  };
}

// A snapshot folder's manifest, changed in place.
void edit_manifest(const fsys::path& dir, const std::function<void(json&)>& change) {
  json m = json::parse(fstest::read_text(dir / "manifest.json"));
  change(m);
  fstest::write_text(dir / "manifest.json", m.dump(1));
}

#if FLASHSTEP_HAVE_GUI_CLI
// fstest::check_refused for `flashstep gui ARGS` in `dir` under Xvfb (without a display the app says so
// before it reads anything): one short error line naming `expect`, exit 2, nothing under `dir`
// created or changed (no screenshot). Returns the output.
std::string check_gui_refused(const fsys::path& dir, const std::string& args, const std::string& expect) {
  CAPTURE(args);
  const auto before = fstest::tree(dir);
  const fstest::Outcome r = fstest::run_limited("cd " + dir.string() + " && xvfb-run -a " + fstest::kBin + " gui " + args, 120);
  CAPTURE(r.out);
  CHECK(r.rc == 2);
  CHECK(fstest::one_short_error_line(r.out));
  CHECK(r.out.find(expect) != std::string::npos);
  CHECK(fstest::tree(dir) == before);
  return r.out;
}
#endif

// `flashstep ARGS` (under Xvfb with `display`), which must succeed; its output.
std::string run_ok(const std::string& args, bool display = false) {
  const fstest::Outcome r = fstest::run_limited((display ? "xvfb-run -a " : "") + fstest::kBin + " " + args, 120);
  INFO(args << "\n" << r.out);
  REQUIRE(r.rc == 0);
  return r.out;
}

}  // namespace

TEST_CASE("a trace file's problem, booleans, tiling and byte counts are those of a run", "[trace][readers]") {
  const json good = trace_doc(ragged_spec());
  REQUIRE_NOTHROW(trace_from_replay_json(good, "good.json"));
  for (const BadField& b : bad_traces(good)) {
    INFO(b.name);
    json doc = good;
    b.change(doc);
    const std::string name = std::string(b.name) + ".json";
    CHECK_THROWS_WITH(trace_from_replay_json(doc, name), StartsWith(name + ": " + b.expect));
  }
}

TEST_CASE("trace files of every kind run records are still read", "[trace][readers]") {
  struct Good {
    const char* name;
    ProblemSpec spec;
    bool backward = false, l2 = false;
  };
  std::vector<Good> goods;
  auto add = [&](const char* name, auto&& set, bool backward = false, bool l2 = false) {
    ProblemSpec s = ragged_spec();
    set(s);
    goods.push_back({name, s, backward, l2});
  };
  add("fa1", [](ProblemSpec&) {});
  add("fa1 causal, window, key padding", [](ProblemSpec& s) {
    s.options.mask.causal = true;
    s.options.mask.window_left = 3;
    s.options.mask.kv_len = 9;
  });
  add("fa1 backward", [](ProblemSpec&) {}, true);
  add("fa2 backward with dropout", [](ProblemSpec& s) {
    s.schedule = Schedule::fa2;
    s.options.dropout = 0.25;
  }, true);
  add("standard backward", [](ProblemSpec& s) { s.schedule = Schedule::standard; }, true);
  add("fa2 bf16, P~ in bf16", [](ProblemSpec& s) {
    s.schedule = Schedule::fa2;
    s.options.dtype = Dtype::bf16;
    s.options.p_dtype = Dtype::bf16;
  });
  add("fa1 fp8", [](ProblemSpec& s) { s.options.dtype = Dtype::fp8; });
  add("fa1, the largest seed", [](ProblemSpec& s) { s.seed = ~uint64_t(0); });
  add("fa1 br, bc given", [](ProblemSpec& s) {
    s.br = 2;
    s.bc = 5;
  });
  add("decode, S = 2, pages of 4", [](ProblemSpec& s) {
    s.schedule = Schedule::decode;
    s.nq = 1;
    s.M = 32;
    s.splits = 2;
    s.page_size = 4;
  });
  add("decode fp8", [](ProblemSpec& s) {
    s.schedule = Schedule::decode;
    s.nq = 1;
    s.options.dtype = Dtype::fp8;
  });
  add("fa1 with the L2 model (DRAM bytes apart)", [](ProblemSpec&) {}, false, true);
  for (const Good& g : goods) {
    INFO(g.name);
    const json doc = trace_doc(g.spec, g.backward, g.l2);
    Trace back;
    REQUIRE_NOTHROW(back = trace_from_replay_json(doc, "good.json"));
    CHECK(back.steps.size() == doc["steps"].size());
    CHECK(back.tiling.Tc == doc["problem"]["Tc"].get<int64_t>());
    CHECK(back.has_backward == g.backward);
  }
}

#if FLASHSTEP_HAVE_GUI_CLI
TEST_CASE("gui --trace refuses each bad field with one line and exit 2, and writes no screenshot", "[cli][gui][trace][readers]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  const json good = trace_doc(ragged_spec());
  // Some fields one at a time through the program (every field is checked through the reader above).
  const std::set<std::string> through_gui = {"scale-nan", "m-1", "causal-yes", "sram-negative", "read-total", "write-total"};
  for (const BadField& b : bad_traces(good)) {
    if (!through_gui.count(b.name)) continue;
    const std::string name = std::string(b.name) + ".json";
    json doc = good;
    b.change(doc);
    fstest::write_text(dir / name, doc.dump());
    check_gui_refused(dir, "--trace " + name + " --step 20 --screenshot shot.png", name + ": " + b.expect);
  }
  {  // three bad fields at once: the first one read is named
    json doc = good;
    doc["problem"]["scale"] = "nan";
    doc["problem"]["M"] = 1;
    doc["replay"]["mask"]["causal"] = "yes";
    fstest::write_text(dir / "tt.json", doc.dump());
  }
  check_gui_refused(dir, "--trace tt.json --step 20 --screenshot tt.png", "tt.json: replay.mask.causal is not true or false");
  // The same run's file opens, steps and is drawn.
  fstest::write_text(dir / "good.json", good.dump());
  run_ok("gui --trace " + (dir / "good.json").string() + " --step 20 --screenshot " + (dir / "good.png").string(), true);
  CHECK(fsys::file_size(dir / "good.png") > 0);
}
#endif

TEST_CASE("a snapshot folder's problem is one run accepts, else compare refuses it naming the field", "[cli][snapshot][readers]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  const std::string flags = "--n 8 --d 4 --M 64";
  run_ok("run " + flags + " --snapshots " + (dir / "good").string());
  run_ok("run " + flags + " --snapshots " + (dir / "good2").string());
  run_ok("run --schedule standard --dtype bf16 " + flags + " --snapshots " + (dir / "standard").string());
  struct Bad {
    const char* name;
    const char* from;
    std::function<void(json&)> change;
    std::string expect;  // after "NAME/manifest.json: "
  };
  const Bad bad[] = {
      {"m3", "good", [](json& m) { m["problem"]["M"] = 3; },
       "problem.M: a problem run refuses (M = 3 elements is smaller than 4d = 16"},
      {"m15", "good", [](json& m) { m["problem"]["M"] = 15; }, "problem.M: a problem run refuses (M = 15"},
      {"fp8", "good", [](json& m) { m["problem"]["dtype"] = "fp8"; },
       "problem.dtype: fp8 is not a type of snapshot folders (run refuses --dtype fp8 with --snapshots"},
      {"fp8-p", "good", [](json& m) {  // as run's fp8 problem has it: P~ in e4m3 too
         m["problem"]["dtype"] = "fp8";
         m["problem"]["p_dtype"] = "fp8";
       }, "problem.dtype: fp8 is not a type of snapshot folders"},
      {"p-bf16", "good", [](json& m) { m["problem"]["p_dtype"] = "bf16"; },
       "problem.p_dtype: a problem run refuses (--p-dtype bf16 emulates a tensor-core kernel, which takes 16-bit inputs"},
      {"p-standard", "standard", [](json& m) { m["problem"]["p_dtype"] = "bf16"; },
       "problem.p_dtype: a problem run refuses (--p-dtype is for the tiled schedules"},
      {"blocks", "good", [](json& m) {  // Tr, Tc agree with Br, Bc; the four tiles need 128 of M = 64
         m["problem"]["Br"] = 8;
         m["problem"]["Bc"] = 8;
         m["problem"]["Tr"] = 1;
         m["problem"]["Tc"] = 1;
       }, "problem.Br, Bc: a problem run refuses (block sizes Br = 8, Bc = 8 do not fit in SRAM"},
      {"scale", "good", [](json& m) { m["problem"]["scale"] = 1e300; }, "problem.scale: a problem run refuses (scale must be a finite float32"},
      {"dropout", "good", [](json& m) { m["problem"]["dropout"] = 0.99999999; },
       "problem.dropout: a problem run refuses (dropout probability must be in [0, 1) as a float32"},
  };
  for (const Bad& b : bad) {
    INFO(b.name);
    const fsys::path d = dir / b.name;
    fsys::copy(dir / b.from, d);
    edit_manifest(d, b.change);
    fsys::copy(d, dir / (std::string(b.name) + "-copy"));
    const std::string where = d.string() + "/manifest.json: ";
    CHECK_THROWS_WITH(read_snapshots(d.string()), StartsWith(where + b.expect));
    // Both folders bad (a copy of the bad one), and the bad one on either side of a good one.
    const std::string name = b.name;
    fstest::check_refused(dir, "compare --snapshots " + name + " --against " + name + "-copy", name + "/manifest.json: " + b.expect);
    fstest::check_refused(dir, "compare --snapshots " + name + " --against good", name + "/manifest.json: " + b.expect);
    fstest::check_refused(dir, "compare --snapshots good --against " + name, name + "/manifest.json: " + b.expect);
  }
  // The folders run writes are still read, and two of the same problem still PASS.
  CHECK(run_ok("compare --snapshots " + (dir / "good").string() + " --against " + (dir / "good2").string())
            .find("PASS") != std::string::npos);
  const std::string more[] = {
      "--schedule fa2 --dtype bf16 --p-dtype bf16 " + flags, "--schedule fa1 --dtype fp16 --p-dtype fp16 --backward " + flags,
      "--schedule fa2 --nq 45 --nk 38 --d 12 --br 8 --bc 7 --causal --dropout 0.2",
      "--schedule decode --nq 1 --nk 40 --d 8 --bc 8 --splits 2", "--schedule standard --dtype bf16 " + flags};
  int k = 0;
  for (const std::string& f : more) {
    const std::string a = (dir / ("more" + std::to_string(k))).string(), b = a + "-again";
    ++k;
    run_ok("run " + f + " --snapshots " + a);
    run_ok("run " + f + " --snapshots " + b);
    REQUIRE_NOTHROW(read_snapshots(a));
    CHECK(run_ok("compare --snapshots " + a + " --against " + b).find("PASS") != std::string::npos);
  }
}

#if FLASHSTEP_HAVE_GUI_CLI
TEST_CASE("gui --snapshots names dtype for a folder claiming fp8, before any comparison", "[cli][gui][snapshot][readers]") {
  const fstest::TempDir tmp;
  const fsys::path dir = tmp.path;
  run_ok("run --n 8 --d 4 --M 64 --snapshots " + (dir / "m1").string());
  edit_manifest(dir / "m1", [](json& m) { m["problem"]["dtype"] = "fp8"; });
  for (const char* extra : {"", " --snapshot-problem"}) {
    const std::string out = check_gui_refused(dir, std::string("--snapshots m1") + extra + " --screenshot s.png",
                                              "m1/manifest.json: problem.dtype: fp8 is not a type of snapshot folders");
    CHECK(out.find("p_dtype") == std::string::npos);
  }
}
#endif

TEST_CASE("first_refused_field adds fields in order and names the first run refuses, with run's reason", "[readers]") {
  std::vector<std::string> added;
  auto field = [&](const char* name, std::function<void(ProblemSpec&)> set) {
    return SpecField{name, [&added, name, set](ProblemSpec& s) {
                       added.push_back(name);
                       set(s);
                     }};
  };
  const ProblemSpec start = sizes_spec(9, 11, 4, 64);
  // All accepted: nothing refused, every field added.
  CHECK_FALSE(first_refused_field(start, {field("a", [](ProblemSpec& s) { s.M = 128; }),
                                          field("b", [](ProblemSpec& s) { s.options.dropout = 0.5; })})
                  .has_value());
  CHECK(added == std::vector<std::string>{"a", "b"});
  // M = 15 with d = 4 is refused at "m", before "window" (also refused) is added.
  added.clear();
  const std::optional<RefusedField> r = first_refused_field(
      start, {field("scale", [](ProblemSpec& s) { s.scale = 0.5; }), field("m", [](ProblemSpec& s) { s.M = 15; }),
              field("window", [](ProblemSpec& s) { s.options.mask.window_left = -2; })});
  REQUIRE(r.has_value());
  CHECK(r->name == "m");
  CHECK_THAT(r->reason, StartsWith("M = 15 elements is smaller than 4d = 16"));
  CHECK(added == std::vector<std::string>{"scale", "m"});
  // The reason is validate_sizes's own message for the spec with the fields so far.
  ProblemSpec so_far = start;
  so_far.scale = 0.5;
  so_far.M = 15;
  CHECK_THROWS_WITH(validate_sizes(so_far), r->reason);
  // A field refused only beside an earlier one: --p-dtype bf16 needs 16-bit storage.
  const std::optional<RefusedField> p = first_refused_field(
      start, {field("p_dtype", [](ProblemSpec& s) { s.options.p_dtype = Dtype::bf16; }),
              field("dtype", [](ProblemSpec& s) { s.options.dtype = Dtype::bf16; })});
  REQUIRE(p.has_value());
  CHECK(p->name == "p_dtype");
}

namespace {

// Each change of `good` refused by the trace reader with one message, "NAME.json: " + expect.
void check_each_refused(const json& good, const std::vector<BadField>& bad) {
  for (const BadField& b : bad) {
    INFO(b.name);
    json doc = good;
    b.change(doc);
    const std::string name = std::string(b.name) + ".json";
    CHECK_THROWS_WITH(trace_from_replay_json(doc, name), StartsWith(name + ": " + b.expect));
  }
}

int64_t last_step(const json& doc, const char* key) { return doc["steps"].back()[key].get<int64_t>(); }

}  // namespace

TEST_CASE("a trace whose totals contradict its steps is refused, naming the field", "[trace][readers]") {
  const json good = trace_doc(ragged_spec());
  const int64_t n = int64_t(good["steps"].size()), read = last_step(good, "hbm_read_total");
  const int64_t write = last_step(good, "hbm_write_total"), last = n - 1;
  const std::string at = "steps[" + std::to_string(last) + "]";
  size_t fullest = 0;  // the step that holds the most SRAM
  for (size_t k = 0; k < good["steps"].size(); ++k)
    if (good["steps"][k]["sram_bytes"] > good["steps"][fullest]["sram_bytes"]) fullest = k;
  const int64_t peak = good["steps"][fullest]["sram_bytes"].get<int64_t>();
  REQUIRE(peak > 0);
  check_each_refused(good, {
      {"read-below", [&](json& d) { d["totals"]["hbm_read_bytes"] = read - 4; },
       "totals.hbm_read_bytes is " + std::to_string(read - 4) + ", below the steps' running sum (" + at +
           ".hbm_read_total = " + std::to_string(read) + ")"},
      {"write-zero", [](json& d) { d["totals"]["hbm_write_bytes"] = 0; },
       "totals.hbm_write_bytes is 0, below the steps' running sum (" + at + ".hbm_write_total = " +
           std::to_string(write) + ")"},
      {"dram-read-below", [&](json& d) { d["totals"]["dram_read_bytes"] = read / 2; },
       "totals.dram_read_bytes is " + std::to_string(read / 2) + ", below the steps' running sum"},
      {"flops-below", [](json& d) { d["totals"]["flops"] = 1; }, "totals.flops is 1, below the steps' running sum"},
      {"flops-negative", [](json& d) { d["totals"]["flops"] = -1; }, "totals.flops is -1, below 0"},
      {"tiles-negative", [](json& d) { d["totals"]["peak_tile_bytes"] = -64; }, "totals.peak_tile_bytes is -64, below 0"},
      {"steps-more", [&](json& d) { d["totals"]["steps"] = n + 1; },
       "totals.steps is " + std::to_string(n + 1) + " where the pass has " + std::to_string(n) + " steps"},
      {"steps-fewer", [&](json& d) { d["totals"]["steps"] = n - 1; }, "totals.steps is " + std::to_string(n - 1)},
      {"peak-below", [&](json& d) { d["totals"]["peak_sram_bytes"] = peak - 1; },
       "totals.peak_sram_bytes is " + std::to_string(peak - 1) + ", below steps[" + std::to_string(fullest) +
           "].sram_bytes = " + std::to_string(peak)},
  });
  // Totals above the steps' sums are what a writer may record (bytes no step carries).
  json more = good;
  more["totals"]["hbm_read_bytes"] = read + 64;
  more["totals"]["dram_write_bytes"] = write + 128;
  more["totals"]["peak_sram_bytes"] = peak + 4;
  CHECK_NOTHROW(trace_from_replay_json(more, "more.json"));

  // With the backward: each phase against its own steps, the backward's sums counted from the
  // forward's totals.
  const json both = trace_doc(ragged_spec(), true);
  REQUIRE_NOTHROW(trace_from_replay_json(both, "both.json"));
  const int64_t first = both["phases"]["backward"]["first_step"].get<int64_t>(), all = int64_t(both["steps"].size());
  const int64_t fwd_read = both["steps"][first - 1]["hbm_read_total"].get<int64_t>();
  const int64_t fwd_total = both["phases"]["forward"]["hbm_read_bytes"].get<int64_t>();
  const int64_t bwd_read = last_step(both, "hbm_read_total") - fwd_total;
  REQUIRE(bwd_read > 0);
  check_each_refused(both, {
      {"forward-read", [&](json& d) { d["phases"]["forward"]["hbm_read_bytes"] = fwd_read - 1; },
       "phases.forward.hbm_read_bytes is " + std::to_string(fwd_read - 1) + ", below the steps' running sum (steps[" +
           std::to_string(first - 1) + "].hbm_read_total = " + std::to_string(fwd_read) + ")"},
      {"forward-steps", [&](json& d) { d["phases"]["forward"]["steps"] = all; },
       "phases.forward.steps is " + std::to_string(all) + " where the pass has " + std::to_string(first) + " steps"},
      {"backward-read", [&](json& d) { d["phases"]["backward"]["hbm_read_bytes"] = bwd_read - 1; },
       "phases.backward.hbm_read_bytes is " + std::to_string(bwd_read - 1) + ", below the steps' running sum (steps[" +
           std::to_string(all - 1) + "].hbm_read_total = " + std::to_string(bwd_read + fwd_total) +
           " less the earlier pass's " + std::to_string(fwd_total) + ")"},
      {"backward-negative", [](json& d) { d["phases"]["backward"]["dram_write_bytes"] = -1; },
       "phases.backward.dram_write_bytes is -1, below 0"},
      {"whole-below-backward", [&](json& d) { d["totals"]["hbm_read_bytes"] = fwd_total; },
       "totals.hbm_read_bytes is " + std::to_string(fwd_total) + ", below the steps' running sum"},
  });
#if FLASHSTEP_HAVE_GUI_CLI
  // Through the program: one line, exit 2, no screenshot.
  const fstest::TempDir tmp;
  json doc = good;
  doc["totals"]["hbm_write_bytes"] = 0;
  fstest::write_text(tmp.path / "totals.json", doc.dump());
  check_gui_refused(tmp.path, "--trace totals.json --screenshot shot.png",
                    "totals.json: totals.hbm_write_bytes is 0, below the steps' running sum");
#endif
}

TEST_CASE("an fp8 trace reads back with its scales and rotation, and bad ones are refused", "[trace][readers][fp8]") {
  struct Fp8Case {
    const char* name;
    ProblemSpec spec;
  };
  auto fp8 = [](Schedule s, Fp8Scale scale, bool rotate) {
    ProblemSpec p = ragged_spec();
    if (s == Schedule::decode) p.nq = 1;
    p.schedule = s;
    p.options.dtype = Dtype::fp8;
    p.options.fp8_scale = scale;
    p.options.rotate = rotate;
    return p;
  };
  const Fp8Case cases[] = {
      {"fa1, per-block, rotated", fp8(Schedule::fa1, Fp8Scale::per_block, true)},
      {"fa1, the default scale", fp8(Schedule::fa1, Fp8Scale::none, false)},
      {"fa2, per-tensor, rotated", fp8(Schedule::fa2, Fp8Scale::per_tensor, true)},
      {"decode, per-block", fp8(Schedule::decode, Fp8Scale::per_block, false)},
  };
  for (const Fp8Case& c : cases) {
    INFO(c.name);
    const Problem p = make_problem(c.spec);
    const json doc = trace_doc(c.spec);
    Trace back;
    REQUIRE_NOTHROW(back = trace_from_replay_json(doc, "fp8.json"));
    CHECK(back.problem.fp8_scale == p.fp8_scale);
    CHECK(back.problem.rotate == p.rotate);
    CHECK(trace_to_json(back)["problem"] == doc["problem"]);  // written again as it was read
  }
  const json good = trace_doc(fp8(Schedule::fa1, Fp8Scale::per_block, true));
  const json plain = trace_doc(ragged_spec());
  ProblemSpec d6 = sizes_spec(9, 11, 6, 96);  // d = 6: no Hadamard rotation
  d6.options.dtype = Dtype::fp8;
  const json six = trace_doc(d6);
  check_each_refused(good, {
      {"scale-unknown", [](json& d) { d["problem"]["fp8_scale"] = "per-row"; },
       "problem.fp8_scale is refused: unknown --fp8-scale 'per-row' (expected per-tensor or per-block)"},
      {"scale-none", [](json& d) { d["problem"]["fp8_scale"] = "none"; },
       "problem.fp8_scale is refused: unknown --fp8-scale 'none'"},
      {"scale-number", [](json& d) { d["problem"]["fp8_scale"] = 2; }, "problem.fp8_scale is not a string (2)"},
      {"scale-missing", [](json& d) { d["problem"].erase("fp8_scale"); }, "problem.fp8_scale is missing"},
      {"rotate-text", [](json& d) { d["problem"]["rotate"] = "true"; }, "problem.rotate is not true or false"},
      {"rotate-missing", [](json& d) { d["problem"].erase("rotate"); }, "problem.rotate is missing"},
  });
  check_each_refused(six, {{"rotate-d6", [](json& d) { d["problem"]["rotate"] = true; },
                            "problem.rotate makes a problem that run refuses: --rotate uses a Hadamard matrix, which "
                            "needs d a power of two"}});
  check_each_refused(plain, {
      {"fp32-scale", [](json& d) { d["problem"]["fp8_scale"] = "per-block"; },
       "problem.fp8_scale makes a problem that run refuses: --fp8-scale is for --dtype fp8"},
      {"fp32-rotate", [](json& d) { d["problem"]["rotate"] = true; },
       "problem.rotate makes a problem that run refuses: --rotate is for --dtype fp8"},
  });
  json unrotated = plain;  // another type's trace may say what run takes: not rotated
  unrotated["problem"]["rotate"] = false;
  CHECK_NOTHROW(trace_from_replay_json(unrotated, "unrotated.json"));
#if FLASHSTEP_HAVE_GUI_CLI
  // gui --trace takes the problem as run: its JSON export writes the same problem back.
  const fstest::TempDir tmp;
  fstest::write_text(tmp.path / "fp8.json", good.dump());
  run_ok("gui --trace " + (tmp.path / "fp8.json").string() + " --script \"export " + (tmp.path / "again").string() +
             "\" --screenshot " + (tmp.path / "shot.png").string(),
         true);
  const json again = json::parse(fstest::read_text(tmp.path / "again.json"));
  CHECK(again["problem"] == good["problem"]);
  CHECK(again["problem"]["fp8_scale"] == "per-block");
  CHECK(again["problem"]["rotate"] == true);
#endif
}
