// Chapter 14: fp8 (e4m3 storage with its scales, the bytes it saves a memory-bound kernel, outliers
// against per-block scales and the Hadamard rotation, and why the forward is not twice as fast:
// the exp2s stay; the H200's measurement from assets/bench/h200_fp8.json).
#include "app/course/builder.h"
#include "app/course/device.h"
#include "app/course/roofline.h"
#include "app/pipeline_measured.h"
#include "core/accuracy.h"
#include "core/fp8.h"
#include "core/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace flashstep::course {

namespace {

// The largest magnitude of an input as the run was given it (before any rotation).
double amax_of(const Mat& X) { return double(X.cwiseAbs().maxCoeff()); }

// What the FP8 kernel reads back for X(r, c) with one scale per tensor (no rotation): its e4m3
// value times the tensor's scale amax / 448 (core/fp8.h's quantisation, one block of all rows).
double stored_per_tensor(const Mat& X, int64_t r, int64_t c) {
  const Fp8Tensor q = quantise_e4m3(X, X.rows());
  return double(q.values(r, c) * q.scales(0, 0));
}

// O's root-mean-square error against float64 (core/accuracy.h).
double o_rms(const Trace& t) {
  const Accuracy a = accuracy_of(t);
  if (!a.measured) throw InputError("course: the fp8 chapter's outlier runs are too large to measure");
  return a.forward.O.rms;
}

// The row of the FP8 bench file at (d, n): its index, or -1.
int fp8_row(const nlohmann::json& j, int64_t d, int64_t n) {
  const nlohmann::json& rows = j.at("rows");
  for (size_t k = 0; k < rows.size(); ++k)
    if (rows[k].value("d", 0) == d && rows[k].value("n", 0) == n) return int(k);
  return -1;
}

}  // namespace

Chapter chapter_fp8(uint64_t seed) {
  ChapterBuilder b("fp8", seed);
  const DeviceCeilings& D = kH200;

  // The tiny problem in FlashAttention-2's order, Q, K and V in e4m3 with a scale per tensor.
  RunDecl rt = fa2_run(seed);
  rt.name = "fp8";
  rt.preset = "";
  rt.spec.options.dtype = Dtype::fp8;
  const Trace& tt = b.add_run(rt);
  const std::string n = rt.name;
  b.problem_text("the tiny problem in FP8 (" + sizes_text(rt.spec) + ", input seed " + std::to_string(rt.spec.seed) +
                 "), a decoding step, outlier inputs, and the pipeline model beside the H200's FP8 forward");

  const Scene s1 = scene(n, find_step(tt, Role::scores) + 1, CentreView::tiles, Panel::tiles,
                         {Panel::algorithm, Panel::memory});
  const Mat& Q = tt.problem.Q;
  const double amax_q = amax_of(Q), amax_k = amax_of(tt.problem.K), e4m3_max = kE4m3Max;
  b.page("Eight bits: e4m3 and its scale", s1)
      .t("With --dtype fp8, Q, K and V are stored in e4m3, the eight-bit format the H200's FP8 tensor cores read: a "
         "sign, four exponent bits and three mantissa bits, ")
      .f("(1 + M/8) 2^(E-7)").t(". Its largest value is ").num(e4m3_max, "float.e4m3_max")
      .t(", and neighbouring values are an eighth of a power of two apart: each keeps about one decimal digit. Inputs "
         "rarely fit that range, so each tensor carries a float32 scale s = amax / ")
      .num(e4m3_max, "float.e4m3_max")
      .t(" (one scale per tensor, the simplest choice): an entry x is stored as the e4m3 value nearest x / s (a tie goes to "
         "the even mantissa) and read back as that value times s. Here Q's largest magnitude is ")
      .num(amax_q, "fp8." + n + ".amax.Q", 6).t(" and K's ").num(amax_k, "fp8." + n + ".amax.K", 6)
      .t(". The second entry of Q's first row is ").num(double(Q(0, 1)), "fp8." + n + ".input.Q.0.1", 6)
      .t(". The Tiles view shows Q, K and V as stored (hover a cell for its code, value and scale), and above the tiles "
         "the step's scales and its largest rounding error.");
  b.ask_number("scale-k", "What is s_K, the scale that maps K's largest magnitude to e4m3's largest value?",
               amax_k / e4m3_max, "fp8." + n + ".amax.K / float.e4m3_max", 0.001,
               "K's largest magnitude over e4m3's largest value, both on this page.", Panel::tiles);
  b.inverse("e4m3's largest value over K's largest magnitude");
  const double y = stored_per_tensor(Q, 0, 1);
  b.ask_number("stored", "What value does the second entry of Q's first row carry after e4m3 storage: its e4m3 value "
               "times s_Q?", y,
               "fp8." + n + ".stored.Q.0.1", 0.001,
               "Divide the entry by s_Q = amax_Q / 448, round to the nearest value with 3 mantissa bits, multiply by s_Q.",
               Panel::tiles);
  b.mistake(double(Q(0, 1)), "that is the entry unrounded; e4m3 keeps 3 mantissa bits of x / s_Q");

  // One decoding step (the decode chapter's problem) with K and V in bf16 and in FP8.
  ProblemSpec ds = sizes_spec(1, seed % 2 ? 4096 : 2048, 128, 32768);
  ds.seed = seed;
  ds.schedule = Schedule::decode;  // registry-exempt: a chapter about FP8 decoding
  ds.splits = 4;
  RunDecl r16{"decode-bf16", ds, false, false, ""};
  r16.spec.options.dtype = Dtype::bf16;
  RunDecl r8{"decode-fp8", ds, false, true, ""};
  r8.spec.options.dtype = Dtype::fp8;
  const Trace& t16 = b.add_run(r16);
  const Trace& t8 = b.add_run(r8);
  const int64_t read16 = t16.totals.hbm_read_bytes, read8 = t8.totals.hbm_read_bytes;
  const int64_t scale_bytes = t8.totals.traffic.read[size_t(Tensor::sK)] + t8.totals.traffic.read[size_t(Tensor::sV)];
  const double intensity = double(t8.totals.flops) / double(t8.totals.hbm_read_bytes + t8.totals.hbm_write_bytes);
  const Scene s2 = scene(r8.name, int64_t(t8.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("Half the bytes: decoding from an FP8 cache", s2)
      .t("A decoding step reads the whole K/V cache for one query row (the decode chapter). Here Nq = ")
      .integer(ds.nq, src_problem(r8.name, "nq")).t(", Nk = ").integer(ds.nk, src_problem(r8.name, "nk"))
      .t(", d = ").integer(ds.d, src_problem(r8.name, "d")).t(": with K and V in bf16 the step reads ")
      .integer(read16, src_total(r16.name, "hbm_read_bytes")).t(" B; in FP8 it reads ")
      .integer(read8, src_total(r8.name, "hbm_read_bytes")).t(" B, of which ")
      .integer(scale_bytes, "trace." + r8.name + ".read.s_K + trace." + r8.name + ".read.s_V")
      .t(r8.spec.options.fp8_scale == Fp8Scale::per_block
             ? " B are the float32 scales of K and V, one per K/V block of each. Its "
             : " B are the float32 scales of K and V: the one scale of each is read again with every K/V block it "
               "scales, as a kernel reads it beside the block. Its ").integer(t8.totals.flops, src_total(r8.name, "flops"))
      .t(" FLOPs over its bytes put FP8 decoding at ")
      .num(intensity, src_total(r8.name, "flops") + " / " + src_total(r8.name, "bytes"))
      .t(" FLOP/B. The H200's dense FP8 tensor-core peak is ").num(D.fp8_tc_flops / 1e12, "device.h200.fp8_tc_flops / 1e12")
      .t(" TFLOP/s, twice bf16's ").num(D.bf16_tc_flops / 1e12, "device.h200.bf16_tc_flops / 1e12")
      .t(" TFLOP/s, so FP8's ridge is at ")
      .num(ridge_point(D.fp8_tc_flops, D), "device.h200.fp8_tc_flops / device.h200.hbm_bytes_per_s").t(" FLOP/B.");
  b.ask_number("bytes-ratio", "By what factor does FP8 cut the bytes this decoding step reads?",
               double(read16) / double(read8),
               src_total(r16.name, "hbm_read_bytes") + " / " + src_total(r8.name, "hbm_read_bytes"), 0.001,
               "The bf16 step's bytes read over the FP8 step's, both on this page.", Panel::memory);
  b.times().inverse("FP8's bytes over bf16's");
  b.ask_choice("bound", "Where does FP8 decoding sit on the H200's roofline?",
               {"far left of FP8's ridge: memory-bound, so its time follows the bytes it reads",
                "right of FP8's ridge: bound by the FP8 tensor cores", "between bf16's ridge and FP8's"},
               0, "Compare its intensity with FP8's ridge on this page.", Panel::memory);

  // Outlier inputs: per-tensor scales, per-block scales, per-block scales after the rotation.
  ProblemSpec os = sizes_spec(128, 128, 64, 16384);
  os.seed = seed;
  os.pattern = "outliers";
  os.schedule = Schedule::fa2;  // registry-exempt: the FP8 forward's order
  os.options.dtype = Dtype::fp8;
  RunDecl ot{"outliers-tensor", os, false, false, ""}, ob = ot, orot = ot;
  ob.name = "outliers-block";
  ob.spec.options.fp8_scale = Fp8Scale::per_block;
  orot.name = "outliers-rotated";
  orot.record = true;
  orot.spec.options.fp8_scale = Fp8Scale::per_block;
  orot.spec.options.rotate = true;
  const double e_t = o_rms(b.add_run(ot)), e_b = o_rms(b.add_run(ob));
  const Trace& trot = b.add_run(orot);
  const double e_r = o_rms(trot);
  const Scene s3 = scene(orot.name, int64_t(trot.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("Outliers: per-block scales and the rotation", s3)
      .t("Trained models have outlier features: a few entries of Q and K far larger than the rest. Here Nq = Nk = ")
      .integer(os.nq, src_problem(ot.name, "nq")).t(", d = ").integer(os.d, src_problem(ot.name, "d"))
      .t(", every row holding a few entries ten to thirty times the typical size (--pattern outliers). Where a query's "
         "and a key's outliers share a column, their product makes a large score, the row's softmax is nearly one-hot, "
         "and the outliers' rounding moves that score by whole units. O's RMS error against float64: one scale per "
         "tensor ")
      .num(e_t, "accuracy." + ot.name + ".O_rms")
      .t("; one per block of Br = ").integer(trot.tiling.Br, src_tiling(ob.name, "Br"))
      .t(" rows of Q and Bc = ").integer(trot.tiling.Bc, src_tiling(ob.name, "Bc"))
      .t(" of K and V (--fp8-scale per-block) ").num(e_b, "accuracy." + ob.name + ".O_rms")
      .t("; per block after the Hadamard rotation of Q and K (--rotate: it spreads each outlier over all d columns; "
         "Q K^T is unchanged) ")
      .num(e_r, "accuracy." + orot.name + ".O_rms")
      .t(". A score's rounding error is then the sum of d small errors of either sign, which partly cancel. A scale "
         "only puts a block's largest value at ")
      .num(e4m3_max, "float.e4m3_max").t(": below it, down to ").f("2^-6").t(" times the scale, e4m3 keeps three "
         "mantissa bits whatever the scale.");
  b.ask_number("rotation-gain", "By what factor does the rotation lower O's RMS error, per-block scales with it against "
               "per-block scales without?",
               e_b / e_r, "accuracy." + ob.name + ".O_rms / accuracy." + orot.name + ".O_rms", 0.001,
               "The per-block error over the rotated one, both on this page.", Panel::memory);
  b.times().inverse("the rotated error over the unrotated one");
  b.ask_choice("blocks", "Why do per-block scales help so little here?",
               {"e4m3 keeps three mantissa bits for small entries and large alike",
                "the scales are stored in e4m3 and lose precision", "per-block scales round the products twice"},
               0, "What does a scale change for a value inside e4m3's range? The page's last sentence.", Panel::memory);

  // Why the forward gains less than 2x: the pipeline model's costs and the H200's measurement.
  // The view stands at the N of the FP8 measurement the page quotes, so that its "default" row
  // (the bf16 kernel's own measurement) is at the same shape as the text's figures.
  const int64_t d = seed % 2 ? 128 : 64;
  const std::string Ds = std::to_string(d), cost = "pipecost.tma-producer." + Ds + ".";
  const pipeline::BlockCosts c = pipeline::block_costs(pipeline::technique("tma-producer", d), d, pipeline::Rates{});
  const double prod = c.s_clk + c.o_clk;
  const nlohmann::json f8 =
      load_json_file((std::filesystem::path(default_bench_path()).parent_path() / "h200_fp8.json").string());
  const int row = fp8_row(f8, d, 16384);
  Scene s4 = scene(n, 0, CentreView::pipeline, Panel::pipeline);
  s4.pipeline_technique = "tma-producer";
  s4.pipeline_d = int(d);
  if (row >= 0) s4.pipeline_n = int(f8["rows"][size_t(row)]["n"].get<int64_t>());
  b.page("Why FP8 attention is not twice as fast", s4)
      .t("FP8 doubles the tensor cores' rate (").num(D.fp8_tc_flops / 1e12, "device.h200.fp8_tc_flops / 1e12")
      .t(" against ").num(D.bf16_tc_flops / 1e12, "device.h200.bf16_tc_flops / 1e12")
      .t(" TFLOP/s) but not the exp2 units': the softmax takes one exp2 per score in any format. The Hopper chapter's "
         "pipeline model charges one warpgroup per K/V block, at d = ")
      .integer(d, "pipeline.tma-producer." + Ds + ".d").t(" in bf16: S_ij ").num(c.s_clk, cost + "s_clk")
      .t(" clocks on the tensor cores, the softmax ").num(c.softmax_clk, cost + "softmax_clk")
      .t(" clocks, O_i += P~_ij V_j ").num(c.o_clk, cost + "o_clk").t(" clocks.");
  if (row >= 0) {
    // Two bf16 figures at this shape: the view's default row (the current default kernel, the
    // median of five rounds) and the bf16 kernel timed in the FP8 run's own process, the fair
    // partner for its ratio. The text names both, and which is which.
    const std::string at = "fp8bench:/rows/" + std::to_string(row);
    const int64_t N = f8["rows"][size_t(row)]["n"].get<int64_t>();
    const std::string nd = Ds + "." + std::to_string(N);
    const MeasuredFigure view_default = measured_forward("default", d, N, false);
    b.t(" Measured on the H200 at N = ").integer(N, at + "/n")
        .t(", non-causal (the Pipeline view's N): flashstep's FP8 forward ran at ")
        .num(f8["rows"][size_t(row)]["fp8_tc"]["tflops"].get<double>(), at + "/fp8_tc/tflops")
        .t(" TFLOP/s, the bf16 kernel timed beside it in the same process (kernel ")
        .integer(f8["rows"][size_t(row)]["bf16_default"]["variant"].get<int64_t>(), at + "/bf16_default/variant")
        .t(") at ").num(f8["rows"][size_t(row)]["bf16_default"]["tflops"].get<double>(), at + "/bf16_default/tflops")
        .t(" TFLOP/s");
    if (view_default.found)
      b.t(", and the Pipeline view's default row, today's bf16 default measured in other runs, at ")
          .num(view_default.value, "measured.default." + nd + ".tflops").t(" TFLOP/s");
    b.t(". The kernels' own arithmetic, waits and barriers take a share that FP8 does not shorten either "
        "(docs/fp8-gpu.md).");
  }
  const double serial = (prod + c.softmax_clk) / (prod / 2 + c.softmax_clk);
  b.ask_number("serial-speedup", "One warpgroup does S_ij, its softmax and O_i += P~_ij V_j one after another. With both "
               "products at twice the rate and the softmax unchanged, by what factor is a K/V block faster in FP8?",
               serial,
               "( " + cost + "s_clk + " + cost + "softmax_clk + " + cost + "o_clk ) / ( ( " + cost + "s_clk + " + cost +
                   "o_clk ) / 2 + " + cost + "softmax_clk )",
               0.01, "The three costs on this page: all three in bf16, over half the two products plus the softmax.",
               Panel::pipeline);
  b.times().mistake(2, "that would halve the softmax too; its exp2s take as long in FP8");
  const double overlapped = std::max(prod, c.softmax_clk) / std::max(prod / 2, c.softmax_clk);
  b.ask_number("overlap-speedup", "Now let the softmax run entirely under the products (another warpgroup's), so that "
               "a block takes the longer of the two products together and the softmax. By what factor is FP8 faster then?",
               overlapped,
               "max ( " + cost + "s_clk + " + cost + "o_clk , " + cost + "softmax_clk ) / max ( ( " + cost + "s_clk + " +
                   cost + "o_clk ) / 2 , " + cost + "softmax_clk )",
               0.01, "The longer of the products and the softmax, in bf16 and then in FP8 (the products halved).",
               Panel::pipeline);
  b.times().mistake(serial, "that is the serial order's factor; here only the longer of the two counts");
  return b.finish();
}

}  // namespace flashstep::course
