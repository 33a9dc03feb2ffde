// Chapters 11-13: decode (inference latency, split-KV and the log-sum-exp combine), paged-kv
// (PagedAttention's block table; seed 1 is the decode and decode-paged presets' problem), and
// hopper (FlashAttention-3's pipeline, from the pipeline model and the Hopper bench file).
#include "app/course/builder.h"
#include "app/course/device.h"
#include "core/schedules/decode/decode.h"
#include "core/paged_kv.h"
#include "core/pipeline_graph.h"
#include "core/pipeline_model.h"
#include "app/course/roofline.h"

#include <cmath>
#include <filesystem>

namespace flashstep::course {

namespace {

// One query row against a cached K/V of Nk keys, d = 128, M = 128 KiB (Bc = 64), split in S.
RunDecl decode_run(uint64_t seed, const std::string& name, int64_t page_size = 0) {
  static const int64_t kNk[] = {4096, 2048, 3072}, kSplits[] = {8, 4, 6};
  const size_t k = size_t((seed - 1) % 3);
  RunDecl r{name, sizes_spec(1, kNk[k], 128, 32768), false, true, page_size ? "decode-paged" : "decode"};  // registry-exempt: preset names
  if (seed != 1) r.preset = "";
  r.spec.seed = seed == 1 ? 5 : seed;  // the presets' inputs for seed 1
  r.spec.schedule = Schedule::decode;  // registry-exempt: a chapter about this schedule
  r.spec.splits = kSplits[k];
  if (page_size) r.spec.page_size = page_size;
  return r;
}

// The steps that write a split's lse^(s) (FD L14), in split order.
std::vector<int64_t> lse_writes(const Trace& t) {
  std::vector<int64_t> ks;
  for (size_t k = 0; k < t.steps.size(); ++k)
    for (const HbmWrite& w : t.steps[k].writes)
      if (w.tensor == Tensor::Lp) ks.push_back(int64_t(k));
  return ks;
}

}  // namespace

Chapter chapter_decode(uint64_t seed) {
  ChapterBuilder b("decode", seed);  // registry-exempt: the chapter's id
  const RunDecl rd = decode_run(seed, "decode");  // registry-exempt: the run's name in the chapter
  const Trace& tr = b.add_run(rd);
  RunDecl rf = rd;
  rf.name = "decode_fa2";
  rf.preset = "";
  rf.record = false;
  rf.spec.schedule = Schedule::fa2;  // registry-exempt: the order decoding replaces
  rf.spec.splits = 0;
  const Trace& f2 = b.add_run(rf);
  const std::string n = rd.name;
  const Tiling& T = tr.tiling;
  b.problem_text("one query row: " + sizes_text(rd.spec) + " (128 KiB), float32, input seed " +
                 std::to_string(rd.spec.seed));
  const DeviceCeilings& D = kH200;

  const Scene s1 = scene(n, 0, CentreView::tiles, Panel::memory, {Panel::memory});
  const int64_t f2_bytes = f2.totals.hbm_read_bytes + f2.totals.hbm_write_bytes;
  b.page("One row against a long cache", s1)
      .t("Generating a token runs attention for its one new query row against the keys and values cached so far: Nq = ")
      .integer(rd.spec.nq, src_problem(n, "nq")).t(", Nk = ").integer(rd.spec.nk, src_problem(n, "nk")).t(", d = ")
      .integer(rd.spec.d, src_problem(n, "d")).t(". Every element of K and V is read once and used for one multiply-add. "
         "FlashAttention-2 on one head does ").integer(f2.totals.flops, src_total(rf.name, "flops"))
      .t(" FLOPs for ").integer(f2_bytes, src_total(rf.name, "bytes"))
      .t(" B of HBM traffic. The H200's float32 ridge is ").num(ridge_point(D.fp32_flops, D), "device.h200.fp32_flops / device.h200.hbm_bytes_per_s")
      .t(" FLOP/B and its bf16 tensor-core ridge ").num(ridge_point(D.bf16_tc_flops, D), "device.h200.bf16_tc_flops / device.h200.hbm_bytes_per_s")
      .t(" FLOP/B: the time of a decoding step is the time to stream the cache from HBM.");
  b.ask_number("intensity", "What is decoding's arithmetic intensity here, in FLOP per byte?",
               double(f2.totals.flops) / double(f2_bytes), src_total(rf.name, "flops") + " / " + src_total(rf.name, "bytes"),
               0.01, "Its FLOPs over its bytes, both on this page.", Panel::memory);
  b.flop_per_byte().inverse("bytes per FLOP");
  b.ask_choice("roofline", "Where does decoding sit on the H200's roofline?",
               {"far left of both ridges: memory-bound", "right of the float32 ridge: compute-bound",
                "between the two ridges: bound by the tensor cores"},
               0, "Compare its intensity with the two ridges on this page.", Panel::memory);

  const int64_t per_split = split_range(T.Tc, T.S, 0).j1 - split_range(T.Tc, T.S, 0).j0;
  const Scene s2 = scene(n, find_step(tr, Role::load_kv) + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("Thread blocks against the SMs", s2)
      .t("FlashAttention-2 gives each thread block one Q block of one head: with Nq = ").integer(rd.spec.nq, src_problem(n, "nq"))
      .t(" there is Tr = ").integer(T.Tr, src_tiling(n, "Tr")).t(" Q block, so one head keeps one of the H200's ")
      .integer(find_gpu("h200").sms, "device.h200.sms").t(" SMs busy while the others wait for more heads. Flash-decoding "
         "splits the Tc = ").integer(T.Tc, src_tiling(n, "Tc")).t(" K/V blocks (Bc = ").integer(T.Bc, src_tiling(n, "Bc"))
      .t(") into S = ").integer(T.S, src_tiling(n, "S")).t(" contiguous splits, one thread block each: every split runs "
         "FlashAttention-2's loop over its own blocks and writes a float32 partial O^(s) with its lse^(s). The Tiles view "
         "colours the splits.");
  b.ask_integer("per-split", "How many K/V blocks does each split take here?", per_split,
                "( " + src_tiling(n, "Tc") + " ) / " + src_tiling(n, "S"), "Tc over S (the splits are equal here).", Panel::tiles);
  b.mistake(T.Tc, "that is all of them, Tc; each split takes Tc / S");
  b.ask_integer("blocks", "How many thread blocks does flash-decoding start for this one head's split pass (the combine aside)?", T.Tr * T.S,
                src_tiling(n, "Tr") + " * " + src_tiling(n, "S"), "One per Q block and split: Tr x S.", Panel::tiles);
  b.mistake(T.Tr, "that is FlashAttention-2's count; each split is a thread block of its own");

  const std::vector<int64_t> lw = lse_writes(tr);
  if (lw.empty()) throw InputError("course: the decode run wrote no lse partials");
  const Scene s3 = scene(n, lw.back() + 1, CentreView::tiles, Panel::memory, {Panel::algorithm, Panel::memory});
  b.page("The combine: [1, 2, 3, 4] over splits", s3)
      .t("Each split s saw only its own keys: lse^(s) = m^(s) + log l^(s) over them, and O^(s) normalised by its own l^(s). "
         "Merging them is the online softmax's merge with the splits as the blocks: ")
      .f("lse = m + log sum_s e^(lse^(s) - m)").t(" with m the largest lse^(s), then ")
      .f("O = sum_s e^(lse^(s) - lse) O^(s)").t(". For the row the splits wrote lse^(s) = [");
  std::vector<double> lses;
  for (size_t s = 0; s < lw.size(); ++s) {
    const Step& st = tr.steps[size_t(lw[s])];
    for (const HbmWrite& w : st.writes)
      if (w.tensor == Tensor::Lp) {
        lses.push_back(w.data(0, 0));
        (s ? b.t(", ") : b).num(w.data(0, 0), src_step(n, lw[s], "write.Lp", 0, 0), 6);
      }
  }
  b.t("], in split order.");
  const double lse = tr.lse(0);
  // The combine's steps follow the last partial's write: its lse (FD L17), then the first split's O^(s) (FD L18).
  const int64_t k17 = lw.back() + 1, k18 = lw.back() + 2;
  if (k18 >= int64_t(tr.steps.size()) || std::string(line_label(tr.steps[size_t(k17)].line)) != "FD L17" ||
      std::string(line_label(tr.steps[size_t(k18)].line)) != "FD L18")
    throw InputError("course: the decode run's combine does not follow its last partial");
  b.ask_number("lse", "What is the row's lse after the combine (three decimals)?", lse, "trace." + n + ".lse.0", 0.0001,
               "m + log sum_s e^(lse^(s) - m) over the values on this page.", Panel::memory);
  b.in_terminal(run_line(rd) + ", index " + std::to_string(k17) + " of its output (FD L17, the combine's lse)");
  b.mistake(*std::max_element(lses.begin(), lses.end()),
            "that is the largest split's lse; the other splits add to it: m + log sum_s e^(lse^(s) - m)");
  b.ask_number("weight", "By what factor is the first split's partial O^(s) multiplied in the combine?",
               std::exp(lses[0] - lse), "trace." + n + ".combine_weight.0", 0.001,
               "e^(lse^(s) - lse) with the first split's lse^(s), and the lse of the previous question.", Panel::memory);
  b.in_terminal(run_line(rd) + ", index " + std::to_string(k18) + " of its output (FD L18: its rescale factor)");
  return b.finish();
}

Chapter chapter_paged_kv(uint64_t seed) {
  ChapterBuilder b("paged-kv", seed);
  const int64_t P = seed % 2 ? 16 : 32;
  const RunDecl rd = decode_run(seed, "paged", P);
  const Trace& tr = b.add_run(rd);
  const std::string n = rd.name;
  const Tiling& T = tr.tiling;
  b.problem_text("one query row: " + sizes_text(rd.spec) + " (128 KiB), pages of " + std::to_string(P) +
                 " tokens, input seed " + std::to_string(rd.spec.seed));
  const int bpe = tr.problem.bytes_per_elem;
  const Scene s1 = scene(n, find_step(tr, Role::load_kv) + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("The block table", s1)
      .t("A server decodes many sequences at once, each with a KV cache that grows by one token per step. PagedAttention "
         "(vLLM) stores each cache in pages of P = ").integer(T.P, src_tiling(n, "P"))
      .t(" tokens placed wherever HBM has room, and a block table of int32 entries says where logical page k lies. Here "
         "Nk = ").integer(rd.spec.nk, src_problem(n, "nk")).t(" keys, d = ").integer(rd.spec.d, src_problem(n, "d"))
      .t(". Every K/V block of Bc = ").integer(T.Bc, src_tiling(n, "Bc"))
      .t(" keys gathers its pages through the table: it reads the entry of each page it touches, ")
      .integer(4, "4").t(" B each, once per Q block (Tr = ").integer(T.Tr, src_tiling(n, "Tr")).t(", Tc = ")
      .integer(T.Tc, src_tiling(n, "Tc")).t(" K/V blocks). The strip above the tiles joins the logical pages to their places.");
  b.ask_integer("pages", "How many pages does this cache take?", kv_pages(rd.spec.nk, T.P), "tiling." + n + ".pages",
                "Nk over P, rounded up.", Panel::tiles);
  b.ask_integer("table-bytes", "How many bytes of block table does the run read?",
                tr.totals.traffic.read[size_t(Tensor::BT)], "trace." + n + ".read.BT",
                "Tr x Tc blocks, each reading Bc / P entries of 4 B.", Panel::memory);
  b.bytes().mistake(T.Tr * T.Tc * 4, "that is one entry per K/V block; a block touches Bc / P pages");

  const Scene s2 = scene(n, int64_t(tr.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  const int64_t waste = (T.P - 1) * 2 * rd.spec.d * bpe;
  b.page("Fragmentation: what each allocation wastes", s2)
      .t("A contiguous cache must be reserved for the longest context a sequence may reach, so a short sequence leaves "
         "most of its reservation unused. A paged cache takes a new page only when the last one is full: it wastes at "
         "most the unused slots of its last page. The K and V of one token take ").f("2 d")
      .t(" elements of ").integer(bpe, src_problem(n, "bytes_per_elem")).t(" B. The values of this run are the unpaged "
         "run's, bit for bit: only the addresses, and the table's bytes, differ.");
  b.ask_integer("last-page-waste", "A sequence one token longer than this one (Nk + 1 keys): how many bytes of K and V "
                "does its last page leave unused?", waste,
                "( " + src_tiling(n, "P") + " - 1 ) * 2 * " + src_problem(n, "d") + " * " + src_problem(n, "bytes_per_elem"),
                "The last page holds one token; P - 1 slots of 2 d elements each are empty.", Panel::memory);
  b.bytes().mistake((T.P - 1) * 2 * rd.spec.d, "that is elements; each is " + std::to_string(bpe) + " B")
      .mistake((T.P - 1) * rd.spec.d * bpe, "that counts K alone; V's slots are empty too");
  return b.finish();
}

}  // namespace flashstep::course

namespace flashstep::course {

namespace {

// `flashstep explain --pipeline`'s Gantt chart (the loads and each warpgroup's tensor and
// softmax lanes: the same timeline of the first blocks), drawn 62 columns wide after an
// 11-column name so that it fits an 80-column terminal: a chart cannot be wrapped, and at that
// command's 96 it was 115 wide.
std::string gantt_lines(const pipeline::Kernel& k, const pipeline::Shape& s) {
  constexpr int kShown = 4, kCols = 62, kLabel = 11;  // "wg1 softmax" is 11 characters
  const pipeline::Timeline tl = pipeline::simulate(k, s.d, kShown, k.ctas_per_sm, pipeline::Rates{});
  return pipeline::gantt_lines(tl, k.consumers, kCols, kLabel);
}

// Two kernels measured in one run of the Hopper bench file at (d, n), non-causal: the indices of
// their points in the latest run (the points' "source") that measured both, or {-1, -1}. A ratio
// of two kernels is only a measurement when both come from the same run (as explain --pipeline
// pairs them); runs on other days differ by a percent or two, which is the size of the effects.
std::pair<int, int> same_run(const nlohmann::json& j, int a, int b, int64_t d, int64_t n) {
  const nlohmann::json& pts = j.at("points");
  auto at = [&](size_t k, int v) {
    return pts[k].value("variant", -1) == v && pts[k].value("d", 0) == d && pts[k].value("n", 0) == n &&
           !pts[k].value("causal", true);
  };
  std::pair<int, int> best{-1, -1};
  for (size_t k = 0; k < pts.size(); ++k) {
    if (!at(k, a)) continue;
    for (size_t m = 0; m < pts.size(); ++m)
      if (at(m, b) && pts[m].value("source", "") == pts[k].value("source", "")) best = {int(k), int(m)};
  }
  return best;
}

}  // namespace

Chapter chapter_hopper(uint64_t seed) {
  ChapterBuilder b("hopper", seed);
  const RunDecl rd = tiny_run(seed);  // the scenes' run; the chapter's numbers are the pipeline model's
  b.add_run(rd);
  pipeline::Shape sh;
  sh.d = seed % 2 ? 128 : 64;
  sh.nq = sh.nk = 4096;
  const pipeline::Rates rates;
  const std::string D = std::to_string(sh.d), sfx = "." + D + "." + std::to_string(sh.nq);
  b.problem_text("the pipeline model of one H200 SM (core/pipeline_model.h), " + std::to_string(sh.heads) +
                 " heads of N = " + std::to_string(sh.nq) + ", d = " + D + ", bf16; assets/bench/h200_hopper.json");
  const pipeline::Kernel r15 = pipeline::technique("tma-producer", sh.d), r16 = pipeline::technique("ping-pong", sh.d),
                         r17 = pipeline::technique("softmax-under-product", sh.d),
                         r18 = pipeline::technique("persistent", sh.d);
  const pipeline::BlockCosts c = pipeline::block_costs(r15, sh.d, rates);
  const std::string cost = "pipecost.tma-producer." + D + ".";

  Scene s1 = scene(rd.name, 0, CentreView::pipeline, Panel::pipeline);
  s1.pipeline_technique = r15.key;
  s1.pipeline_d = int(sh.d);
  b.page("Producer, consumers and the tensor cores", s1)
      .t("FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao) splits each thread block by role. A producer warp issues the loads of K_j and "
         "V_j with the Tensor Memory Accelerator (TMA) into a ring of shared-memory stages and signals their arrival on "
         "barriers; consumer warpgroups, each with its own rows of Q_i, compute S_ij = Q_i K_j^T and O_i += P~_ij V_j with wgmma on the "
         "tensor cores, and the softmax in between on the exp2 units. Per warpgroup and K/V block (Bc = ")
      .integer(r15.Bc, "pipeline.tma-producer." + D + ".Bc").t(") the model of the TMA producer's kernel charges S_ij ")
      .num(c.s_clk, cost + "s_clk").t(" clocks on the tensor cores, the softmax ").num(c.softmax_clk, cost + "softmax_clk")
      .t(" clocks, O_i += P~_ij V_j ").num(c.o_clk, cost + "o_clk")
      .t(" clocks. The Pipeline view draws the timeline of one thread block; in the terminal, flashstep explain --pipeline "
         "--technique tma-producer --d ").integer(sh.d, "pipeline.tma-producer." + D + ".d")
      .t(" --n ").integer(sh.nq, "pipeline.tma-producer" + sfx + ".n")
      .t(" --heads ").integer(sh.heads, "pipeline.tma-producer" + sfx + ".heads")
      .t(" prints it; below, the same chart drawn narrower, to fit the terminal (S and O: the products, P: the softmax, K and V: loads, W: the write of O; lower case: "
         "the unit is shared at that moment).");
  b.terminal_only(gantt_lines(r15, sh));
  b.ask_number("serial-clocks", "One warpgroup does S_ij, then its softmax, then O_i += P~_ij V_j. How many clocks does "
               "one K/V block take that way, with nothing overlapped?",
               c.s_clk + c.softmax_clk + c.o_clk, cost + "s_clk + " + cost + "softmax_clk + " + cost + "o_clk", 0.01,
               "Add the three costs on this page.", Panel::pipeline);
  b.units({"clocks", "clock", "clk", "cycles"});
  b.mistake(c.s_clk + c.o_clk, "that is the tensor cores' share alone; the softmax sits between the two products");
  b.ask_choice("chart", "Read the chart: while warpgroup 0 runs its softmax (p), what are the tensor cores doing?",
               {"warpgroup 1's products: the two take turns", "nothing much: warpgroup 1 is in its softmax too",
                "loading K and V"},
               1, "Compare the wg0 softmax lane with the wg1 tensor and softmax lanes, column by column.", Panel::pipeline);

  const pipeline::Prediction p15 = pipeline::predict(r15, sh, rates), p16 = pipeline::predict(r16, sh, rates),
                             p17 = pipeline::predict(r17, sh, rates), p18 = pipeline::predict(r18, sh, rates);
  const nlohmann::json hop = load_json_file((std::filesystem::path(default_bench_path()).parent_path() / "h200_hopper.json").string());
  Scene s2 = scene(rd.name, 0, CentreView::pipeline, Panel::pipeline);
  s2.pipeline_technique = r16.key;
  s2.pipeline_d = int(sh.d);
  b.page("Ping-pong, and the persistent grid", s2)
      .t("Ping-pong scheduling makes the two consumer warpgroups take turns: one's softmax runs under the "
         "other's products, so the tensor cores stay busy. The model predicts ")
      .num(p15.tflops, "pipeline.tma-producer" + sfx + ".tflops").t(" TFLOP/s for the TMA producer alone and ")
      .num(p16.tflops, "pipeline.ping-pong" + sfx + ".tflops").t(" with ping-pong at this shape. The softmax can also "
         "hide inside one warpgroup, without ping-pong: S_ij of the next block is issued before the softmax of this "
         "one (the softmax under the product): ")
      .num(p17.tflops, "pipeline.softmax-under-product" + sfx + ".tflops").t(". A persistent grid added to that (one "
         "thread block per SM looping over the tiles) hides each tile's start under the previous tile's end: ")
      .num(p18.tflops, "pipeline.persistent" + sfx + ".tflops").t(" TFLOP/s.");
  // The Hopper bench file names each kernel by its number in the ladder, each one of the techniques
  // above (gpu/ladder/NOTES.md; docs/pipeline-model.md's table of where each figure comes from).
  // Each pair whose ratio the page reads is taken from one run: 15 and 16, then 17 and 18.
  const auto [k15, k16] = same_run(hop, 15, 16, sh.d, sh.nq);
  const auto [k17, k18] = same_run(hop, 17, 18, sh.d, sh.nq);
  auto tf = [&](int k) { return hop["points"][size_t(k)]["tflops"].get<double>(); };
  auto src = [&](int k) { return "hopper:/points/" + std::to_string(k) + "/tflops"; };
  auto kernel = [&](int k, const char* what) {
    b.t("kernel ").integer(hop["points"][size_t(k)]["variant"].get<int>(), "hopper:/points/" + std::to_string(k) + "/variant")
        .t(" (").t(what).t("): ").num(tf(k), src(k));
  };
  if (k15 >= 0) {
    b.t(" Measured on the H200 in one run, ladder ");
    kernel(k15, "the TMA producer");
    b.t(" and ");
    kernel(k16, "ping-pong");
    b.t(" TFLOP/s");
  }
  if (k17 >= 0) {
    b.t(k15 >= 0 ? "; in a later run, " : " Measured on the H200 in one run, ladder ");
    kernel(k17, "the softmax under the product");
    b.t(" and ");
    kernel(k18, "persistent");
    b.t(" TFLOP/s");
  }
  if (k15 >= 0 || k17 >= 0) b.t(".");
  if (k15 >= 0 && tf(k16) / tf(k15) < 0.5 * (1 + p16.tflops / p15.tflops)) {
    b.t(" The measurements do not follow the model: on the H200 ping-pong ran at ")
        .num(tf(k16) / tf(k15), src(k16) + " / " + src(k15))
        .t(" times the TMA producer's TFLOP/s, where the model's two predictions above differ far more");
    if (k17 >= 0 && tf(k18) < tf(k17)) b.t(", and the persistent grid measured slower than the kernel it was added to");
    b.t(". The model charges each unit its full rate and nothing else; what the kernels lose beside it "
        "(dependent instructions waiting, the turns' barriers) is in docs/pipeline-model.md and the ladder's notes.");
  }
  b.t(" The Pipeline view draws every technique's prediction beside its measurement.");
  b.ask_number("pingpong-gain", "By what factor does ping-pong raise the model's TFLOP/s over the TMA producer alone here?",
               p16.tflops / p15.tflops, "pipeline.ping-pong" + sfx + ".tflops / pipeline.tma-producer" + sfx + ".tflops", 0.01,
               "Divide the two predictions on this page.", Panel::pipeline);
  b.times().inverse("the TMA producer's over ping-pong's");
  return b.finish();
}

}  // namespace flashstep::course
