// Chapters 1-3: memory-bound, safe-softmax, online-softmax.
#include "app/course/builder.h"
#include "app/course/roofline.h"
#include "core/l2_cache.h"
#include "core/schedule_registry.h"

#include <cfloat>
#include <cmath>

namespace flashstep::course {

namespace {

const std::string kDev = "device.h200.";

// The largest finite bf16: float32's exponent range with 8 significant bits, (2 - 2^-7) 2^127.
double bf16_max() { return std::ldexp(2.0 - std::ldexp(1.0, -7), 127); }

// The value vector of the O-update page, one value per entry of [1, 2, 3, 4]: seed 1 the easy
// [10, 20, 30, 40]; other seeds four distinct tens from 10 to 90 in an order drawn from the seed,
// so that the O answers change with the problem while staying easy to multiply.
std::vector<double> o_update_values(uint64_t seed) {
  if (seed <= 1) return {10, 20, 30, 40};
  std::vector<double> pool = {10, 20, 30, 40, 50, 60, 70, 80, 90}, v;
  uint64_t h = seed;
  for (int k = 0; k < 4; ++k) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    const size_t at = size_t((h >> 33) % pool.size());
    v.push_back(pool[at]);
    pool.erase(pool.begin() + std::ptrdiff_t(at));
  }
  return v;
}

}  // namespace

Chapter chapter_memory_bound(uint64_t seed) {
  ChapterBuilder b("memory-bound", seed);
  const RunDecl tiny_std = standard_twin(tiny_run(seed), "tiny_standard", true);
  const Trace& ts = b.add_run(tiny_std);
  const RunDecl hs = head_run(seed, baseline_schedule().id),
                h1 = head_run(seed, Schedule::fa1),  // registry-exempt: a chapter about this schedule
                h2 = head_run(seed, Schedule::fa2);  // registry-exempt: a chapter about this schedule
  const Trace& st = b.add_run(hs);
  const Trace& a1 = b.add_run(h1);
  const Trace& a2 = b.add_run(h2);
  auto roof = std::make_shared<Roofline>(make_roofline(st, hs.name, a1, h1.name, a2, h2.name));
  add_measured(*roof, load_json_file(default_bench_path()), "assets/bench/h200.json");
  b.problem_text("one head: " + sizes_text(hs.spec) + " (float32), and the tiny problem " + sizes_text(tiny_std.spec));
  const GpuSpec& g = find_gpu("h200");
  const DeviceCeilings& D = kH200;

  const Scene s1 = scene(tiny_std.name, int64_t(ts.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("FLOPs against bytes", s1)
      .t("A kernel does arithmetic (FLOPs) and moves data between HBM and the chip (bytes). On the ")
      .t(D.name).t(", HBM delivers ").num(D.hbm_bytes_per_s / 1e12, kDev + "hbm_bytes_per_s / 1e12")
      .t(" TB/s, while the CUDA cores do ").num(D.fp32_flops / 1e12, kDev + "fp32_flops / 1e12")
      .t(" TFLOP/s in float32 and the tensor cores ").num(D.bf16_tc_flops / 1e12, kDev + "bf16_tc_flops / 1e12")
      .t(" TFLOP/s in bf16. A kernel that does fewer FLOPs per byte than peak / bandwidth waits for memory: "
         "it is memory-bound; above that ridge it is math-bound.\n\n")
      .t("The hierarchy: HBM holds ").num(D.hbm_bytes / 1e9, kDev + "hbm_bytes / 1e9")
      .t(" GB off chip; the L2 cache ").num(double(g.l2_bytes) / 1048576.0, kDev + "l2_bytes / 1048576")
      .t(" MiB; each of the ").integer(g.sms, kDev + "sms").t(" SMs has ")
      .num(double(g.smem_per_sm_bytes) / 1024.0, kDev + "smem_per_sm_bytes / 1024")
      .t(" KiB of shared memory (SRAM), ").num(double(g.sms * g.smem_per_sm_bytes) / 1048576.0, kDev + "sms * " + kDev + "smem_per_sm_bytes / 1048576")
      .t(" MiB on the whole chip. A kernel reads its inputs from HBM into SRAM, computes, and writes its result "
         "back: the Memory panel counts those bytes for every step of the simulated run. The tiny problem in "
         "standard attention moved ").integer(ts.totals.hbm_read_bytes + ts.totals.hbm_write_bytes, src_total(tiny_std.name, "bytes"))
      .t(" B for ").integer(ts.totals.flops, src_total(tiny_std.name, "flops")).t(" FLOPs.\n\n")
      .t("One FLOP convention throughout the course: ").f("a multiply-add counts 2 FLOPs")
      .t(", as in the data sheet's peaks and the papers, so a product of an a x b by a b x c matrix is ").f("2abc")
      .t(" FLOPs and attention's two products ").f("4 N^2 d").t(" per head. The simulator also counts the softmax's "
         "element operations (max, subtract, exp, sum), the rescales and the scale; the measured runs' TFLOP/s count the "
         "two products only, the papers' way.");
  b.ask_number("ridge-fp32", "How many FLOPs per HBM byte must a float32 kernel do on the H200 to reach its peak (the ridge point)?",
               ridge_point(D.fp32_flops, D), kDev + "fp32_flops / " + kDev + "hbm_bytes_per_s", 0.01,
               "Divide the float32 peak by the HBM bandwidth (both on this page).", Panel::none);
  b.flop_per_byte().mistake(ridge_point(D.bf16_tc_flops, D),
                          "that is the bf16 tensor-core ridge; the question asks float32's");
  b.inverse("bytes per FLOP");

  const RooflineKernel& kS = roof->kernels[0];
  const RooflineKernel& kP = roof->kernels[1];
  const RooflineKernel& kO = roof->kernels[2];
  const Scene s2 = scene(tiny_std.name, find_step(ts, Role::softmax, 0) + 1, CentreView::tiles, Panel::memory, {Panel::algorithm, Panel::memory});
  b.page("Standard attention: three kernels", s2)
      .t("Standard attention (Algorithm 0) runs three kernels, each through HBM: S = QK^T (writes S), P = softmax(S) "
         "(reads S, writes P), O = PV (reads P). For one head with N = ")
      .integer(hs.spec.nq, src_problem(hs.name, "nq")).t(", d = ").integer(hs.spec.d, src_problem(hs.name, "d"))
      .t(" the simulator counts:\n");
  for (const RooflineKernel* k : {&kS, &kP, &kO}) {
    b.t("  " + k->label + ": ").num(k->flops / 1e6, k->flops_source + " / 1e6").t(" MFLOP, ")
        .num(k->bytes / 1e6, k->bytes_source + " / 1e6").t(" MB");
    if (k != &kS) b.t(", intensity ").num(k->intensity(), k->intensity_source()).t(" FLOP/B");  // kS's is asked
    b.t("\n");
  }
  b.t("All three together: ").num((kS.flops + kP.flops + kO.flops) / (kS.bytes + kP.bytes + kO.bytes),
                                 src_total(hs.name, "flops") + " / " + src_total(hs.name, "bytes"))
      .t(" FLOP/B. Which ceiling matters depends on where the kernel runs. Against the float32 ridge of the previous "
         "page, the two matmul kernels sit ")
      .t(kS.intensity() > ridge_point(D.fp32_flops, D) && kO.intensity() > ridge_point(D.fp32_flops, D) ? "above it (they could be compute-bound on the CUDA cores)" : "below it")
      .t(" and the softmax ").t(kP.intensity() > ridge_point(D.fp32_flops, D) ? "above it" : "far below it")
      .t("; against the bf16 tensor-core ridge, ").num(ridge_point(D.bf16_tc_flops, D), "device.h200.bf16_tc_flops / device.h200.hbm_bytes_per_s")
      .t(std::max({kS.intensity(), kP.intensity(), kO.intensity()}) < ridge_point(D.bf16_tc_flops, D)
             ? " FLOP/B, all three are below: on tensor cores every one of them waits for HBM."
             : " FLOP/B, not all three are below it.")
      .t(" The Tiles view shows the same "
         "kernels on the tiny problem: S and P are whole matrices in HBM, row block by row block.");
  b.ask_number("qk-intensity", "What is the arithmetic intensity of the S = QK^T kernel, in FLOP per byte (it grows with N)?",
               kS.intensity(), kS.intensity_source(), 0.01,
               "Its FLOPs over its bytes, both listed on this page (MFLOP / MB).", Panel::memory);
  b.flop_per_byte().inverse("bytes per FLOP");
  int worst = 0;
  for (int k = 1; k < 3; ++k)
    if (roof->kernels[size_t(k)].intensity() < roof->kernels[size_t(worst)].intensity()) worst = k;
  b.ask_choice("furthest-below", "Which of the three kernels has the lowest arithmetic intensity (the furthest left on "
               "the roofline, below both ridges)?",
               {"S = QK^T", "P = softmax(S)", "O = PV"}, worst,
               "The smallest FLOP per byte is the furthest left on the roofline.", Panel::roofline);

  const RooflineKernel& f1 = roof->kernels[3];
  const RooflineKernel& f2 = roof->kernels[4];
  const Scene s3 = scene(tiny_std.name, 0, CentreView::roofline, Panel::roofline, {});
  b.page("Kernel fusion and the roofline", s3)
      .t("Fusing the three kernels into one keeps S and P on chip: FlashAttention's kernel reads Q, K, V and writes "
         "O. Algorithm 1 here: ")
      .num(f1.flops / 1e6, f1.flops_source + " / 1e6").t(" MFLOP over ").num(f1.bytes / 1e6, f1.bytes_source + " / 1e6")
      .t(" MB, intensity ").num(f1.intensity(), f1.intensity_source()).t(" FLOP/B; FlashAttention-2: ")
      .num(f2.intensity(), f2.intensity_source())
      .t(" FLOP/B, against S = QK^T's ").num(kS.intensity(), kS.intensity_source())
      .t(" and O = PV's ").num(kO.intensity(), kO.intensity_source())
      .t(". Fusion is not what sets a kernel's intensity against the matmuls': Algorithm 1 sits ")
      .t(f1.intensity() < std::min(kS.intensity(), kO.intensity()) ? "below both (it moves O_i in and out at every j)"
         : f1.intensity() > std::max(kS.intensity(), kO.intensity()) ? "above both" : "between them")
      .t(", FlashAttention-2 ")
      .t(f2.intensity() < std::min(kS.intensity(), kO.intensity()) ? "below both"
         : f2.intensity() > std::max(kS.intensity(), kO.intensity()) ? "above both (O_i stays on chip)" : "between them")
      .t(". What fusion removes is the softmax kernel's round trip through HBM, which drags standard attention as a "
         "whole down to ").num((kS.flops + kP.flops + kO.flops) / (kS.bytes + kP.bytes + kO.bytes),
                                src_total(hs.name, "flops") + " / " + src_total(hs.name, "bytes"))
      .t(" FLOP/B. Standard attention moves ")
      .num((kS.bytes + kP.bytes + kO.bytes) / f1.bytes, src_total(hs.name, "bytes") + " / " + f1.bytes_source)
      .t(" times the bytes of Algorithm 1 for about the same FLOPs (Algorithm 1 adds the online "
         "softmax's rescales).\n\nThe roofline draws both ceilings (float32 "
         "and bf16 tensor cores) and the kernels at their intensity.");
  for (const MeasuredPoint& p : roof->measured)
    if (p.n == hs.spec.nq && (p.label == "fa1 fp32" || p.label == "standard fp32"))
      b.t(" Measured on the H200 at this N (").t(p.label).t("): ").num(p.tflops, p.tflops_source)
          .t(" TFLOP/s, drawn at its predicted intensity, ").num(p.intensity, p.intensity_source).t(" FLOP/B.");
  b.t(" (The GPU kernel's blocks are larger than the simulated M gives, hence its higher intensity.)");
  b.ask_number("bytes-ratio", "How many times the HBM bytes of fused Algorithm 1 do standard attention's three kernels move here?",
               (kS.bytes + kP.bytes + kO.bytes) / f1.bytes, src_total(hs.name, "bytes") + " / " + f1.bytes_source, 0.01,
               "The ratio is on this page; or add the three kernels' MB of the previous page and divide.", Panel::roofline);
  b.times().inverse("Algorithm 1's bytes over standard attention's");
  Chapter ch = b.finish();
  ch.roofline = roof;
  return ch;
}

Chapter chapter_safe_softmax(uint64_t seed) {
  ChapterBuilder b("safe-softmax", seed);
  const RunDecl rd = tiny_run(seed);
  const Trace& tr = b.add_run(rd);
  b.problem_text("the tiny problem: " + sizes_text(rd.spec) + ", seed " + std::to_string(seed));
  const double fp32_limit = std::log(double(FLT_MAX)), fp16_limit = std::log(65504.0);
  // No side panel: the page is about float formats, and at step 0 the softmax panel would hold
  // only "No block i in scope"; the centre shows the problem's inputs.
  const Scene s1 = scene(rd.name, 0, CentreView::tiles, Panel::none, {});
  b.page("Where exp overflows", s1)
      .t("softmax(x)_k = e^(x_k) / sum_j e^(x_j). The largest float32 is ").num(double(FLT_MAX), "float.fp32_max")
      .t(", so e^x overflows to inf once x > ln of it = ").num(fp32_limit, "float.fp32_exp_limit", 6)
      .t(": expf(").integer(int64_t(std::ceil(fp32_limit)), "float.fp32_exp_probe").t(") is ")
      .t(std::isinf(std::exp(float(std::ceil(fp32_limit)))) ? "inf" : "finite")
      .t(". bfloat16 keeps float32's exponent bits but fewer significant bits: its largest value is ")
      .num(bf16_max(), "float.bf16_max", 8)
      .t(", a little below float32's. float16 overflows much sooner: its largest value is ").integer(65504, "float.fp16_max")
      .t(". Two equal scores past the limit give inf / inf = NaN in every entry.");
  b.ask_number("fp16-limit", "What is the largest x for which e^x does not exceed float16's largest value (two decimals)?", fp16_limit,
               "float.fp16_exp_limit", 0.001, "Take the natural log of float16's largest value, given on this page.",
               Panel::none);
  b.mistake(fp32_limit, "that is float32's limit; the question asks float16")
      .mistake(65504, "that is float16's largest value; the limit is its natural log")
      .mistake(std::log10(65504.0), "that is the base-10 log; e^x needs the natural log");
  const double bf16_limit = std::log(bf16_max());
  Question& bq = b.ask_number("bf16-limit",
                              "What is the largest x for which e^x does not exceed bfloat16's largest value (three "
                              "decimals)?", bf16_limit,
                              "float.bf16_exp_limit", 0, "Take the natural log of bfloat16's largest value, given on "
                              "this page, to three decimals.", Panel::none);
  bq.abs_tol = 0.0005;  // float32's limit is 0.004 away: three decimals tell them apart
  bq.tolerance_text = "within 0.0005";
  // Within 0.001 of float32's limit only: 88.72, bfloat16's limit to two decimals, is no slip to float32.
  b.mistake(fp32_limit, "that is float32's limit; the question asks bf16, whose largest value is a little smaller", 0.001);
  b.ask_choice("naive-equal", "Two equal scores, both past the float32 limit, put through e^x / sum e^x in float32, give:",
               {"one half each", "NaN in both (inf / inf)", "one and zero"}, 1,
               "e^x is inf for both, and so is the sum.", Panel::none);

  const int64_t k = find_step(tr, Role::softmax, 0, 0);
  const Step& st = tr.steps[size_t(k)];
  const Scene s2 = scene(rd.name, k + 1, CentreView::tiles, Panel::softmax, {Panel::algorithm, Panel::softmax});
  b.page("Subtracting the max", s2)
      .t("Safe softmax subtracts the row max m = max_j x_j first: ").f("e^(x_k - m) <= 1")
      .t(" never overflows, and e^(x_k - m) / sum_j e^(x_j - m) equals the softmax because e^(-m) cancels. "
         "FlashAttention's Algorithm 1 (its own chapter comes later) works on tiles: S_ij is the block of the "
         "scores ").f("S = tau Q K^T").t(" for the rows of block i and the keys of block j. It does this per tile at ")
      .t(role_label(tr, Role::softmax))
      .t(", with the tile's own row max m~ (not the whole row's yet: merging tiles is the next chapter's online "
         "softmax), ").f("P~ = e^(S_ij - m~)").t(" and its row sums l~: at ").step_ref(rd.name, k)
      .t(" (i = ").integer(st.i, src_step(rd.name, k, "i")).t(", j = ").integer(st.j, src_step(rd.name, k, "j"))
      .t(") row 0 of S_ij has max m~ = ").num(st.m_tilde(0), src_step(rd.name, k, "m_tilde", 0))
      .t(", so its largest P~ entry is exactly e^0; the row sums to l~ = ").num(st.l_tilde(0), src_step(rd.name, k, "l_tilde", 0))
      .t(". The Online softmax state panel lists m~ and l~ for every row of the tile (in the terminal: ").f(run_line(rd))
      .t("). Row 1 of this S_ij is [");
  {
    const int64_t ks = find_step(tr, Role::scores, st.i, st.j);
    const Mat& S = tr.steps[size_t(ks)].tile;
    for (int64_t c = 0; c < S.cols(); ++c) (c ? b.t(", ") : b).num(S(1, c), src_step(rd.name, ks, "tile", 1, c), 6);
  }
  b.t("].");
  b.ask_number("row1-max", "At this step, what is m~ (the row max of S_ij) for row 1 of the tile?", st.m_tilde(1),
               src_step(rd.name, k, "m_tilde", 1), 0.001,
               "The largest entry of row 1 above; in the app, the Online softmax state panel's m~_ij column, row 1.",
               Panel::softmax);
  b.ask_number("row1-sum", "And l~ (the sum of P~ over row 1)?", st.l_tilde(1), src_step(rd.name, k, "l_tilde", 1), 0.001,
               "Sum e^(x - m~) over row 1 above; in the app, the Online softmax state panel's l~_ij column, row 1.",
               Panel::softmax);
  return b.finish();
}

Chapter chapter_online_softmax(uint64_t seed) {
  ChapterBuilder b("online-softmax", seed);
  const LessonDecl book{"book", {1, 2, 3, 4}, 2, {}};  // the textbook chapter's example
  const Lesson L = b.add_lesson(book);
  const RunDecl rd = tiny_run(seed);
  const Trace& tr = b.add_run(rd);
  b.problem_text("the textbook's [1, 2, 3, 4] in blocks of 2, then row 0 of the tiny problem: " + sizes_text(rd.spec) +
                 ", seed " + std::to_string(seed));
  auto vals = [&](size_t from, size_t to) {
    b.t("[");
    for (size_t k = from; k < to; ++k) {
      if (k > from) b.t(", ");
      b.num(L.values[k], "lesson.book.values." + std::to_string(k));
    }
    b.t("]");
  };
  auto blk = [&](size_t k, const std::string& f) { return "lesson.book.blocks." + std::to_string(k) + "." + f; };
  const LessonBlock& B0 = L.blocks[0];
  const LessonBlock& B1 = L.blocks[1];
  const Scene s1 = scene(rd.name, 0, CentreView::lesson, Panel::lesson, {}, "book", 1);
  b.page("Softmax in blocks", s1).t("The softmax of ");
  vals(0, L.values.size());
  b.t(" in blocks of ").integer(int64_t(L.block), "lesson.book.block")
      .t(": each block gets its own max m~ and sum l~, and a running pair (m, l) is merged block by block, starting "
         "from ").f("m = -inf, l = 0").t(" (nothing seen).\n\nBlock 1 ");
  vals(B0.begin, B0.end);
  b.t(": m~ = ").num(B0.local_max, blk(0, "local_max")).t(", l~ = sum e^(x - m~) = ").num(B0.local_sum, blk(0, "local_sum"))
      .t(". After it, m = ").num(B0.m_new, blk(0, "m_new")).t(" and l = ").num(B0.l_new, blk(0, "l_new"))
      .t(". Block 2 ");
  vals(B1.begin, B1.end);
  b.t(" has the same spacing, so the same l~ = ").num(B1.local_sum, blk(1, "local_sum"))
      .t(" around its own m~ = ").num(B1.local_max, blk(1, "local_max")).t(".");
  b.ask_number("final-m", "After merging both blocks, what is the running max m?", B1.m_new, blk(1, "m_new"), 0.001,
               "m_new = max(m, m~): the lesson view's 'm: old -> new' column.", Panel::lesson);
  b.mistake(B0.m_new,
                          "that is the max after block 1; after block 2, m = max(m, m~)");
  b.ask_number("final-l", "And the running sum l (three decimals)?", B1.l_new, blk(1, "l_new"), 0.001,
               "l_new = e^(m - m_new) l + e^(m~ - m_new) l~: the 'l: old -> new' column.", Panel::lesson);
  b.mistake(B0.l_new + B1.local_sum,
                          "the two sums were added as they are; block 1's was taken around its own max and is "
                          "rescaled by e^(m - m_new) first");
  b.mistake(B1.local_sum,
                          "that is block 2's own sum l~; block 1's sum, rescaled, is added to it");

  const Scene s2 = scene(rd.name, 0, CentreView::lesson, Panel::lesson, {}, "book", 2);
  b.page("The merge: rescale onto the new max", s2)
      .t("Merging block 2: m_new = max(").num(B1.m_old, blk(1, "m_old")).t(", ").num(B1.local_max, blk(1, "local_max"))
      .t(") = ").num(B1.m_new, blk(1, "m_new")).t(". The old sum was taken around the old max, so it is rescaled by ")
      .f("e^(m - m_new)").t(" before the new block's sum is added: l_new = ").num(B1.alpha, blk(1, "alpha")).t(" * ")
      .num(B1.l_old, blk(1, "l_old")).t(" + ").num(B1.beta, blk(1, "beta")).t(" * ").num(B1.local_sum, blk(1, "local_sum"))
      .t(" = ").num(B1.l_new, blk(1, "l_new")).t(". Then softmax(x)_k = e^(x_k - m) / l: ");
  b.t("[");
  for (size_t k = 0; k < L.online.size(); ++k) {
    if (k) b.t(", ");
    b.num(L.online[k], "lesson.book.online." + std::to_string(k));
  }
  b.t("]; the direct softmax differs from it by at most ").num(L.max_diff, "lesson.book.max_diff")
      .t(L.max_diff == 0 ? " (the two agree to the last bit)" : "")
      .t(". Type any vector into the lesson view's values field (or run flashstep lesson softmax with --values) "
         "to try your own.");
  b.ask_number("rescale", "By what factor was block 1's sum rescaled in the merge?", B1.alpha, blk(1, "alpha"), 0.001,
               "e^(m_old - m_new): the lesson view's 'e^(m_old - m_new)' column, block 2.", Panel::lesson);
  b.mistake(1 / B1.alpha,
                          "that is e^(m_new - m_old); the old sum is scaled down onto the new max, by e^(m_old - m_new) <= 1");

  // The O update (Alg1 L12) on the same row with a value vector, filled in by the student line by
  // line: the text gives the formulas and the inputs only; each question is the next line of the
  // working, so no answer is on the page before it is asked, and the lesson view starts with no
  // block merged (Next block shows a block's line once its questions are answered).
  {
    const LessonDecl withv{"book_v", book.values, book.block, o_update_values(seed)};
    const Lesson& O = b.add_lesson(withv);
    const LessonBlock& C0 = O.blocks[0];
    const LessonBlock& C1 = O.blocks[1];
    auto ov = [&](size_t k, const std::string& f) { return "lesson.book_v.blocks." + std::to_string(k) + "." + f; };
    auto list = [&](const std::vector<double>& x, const std::string& field, size_t from, size_t to) {
      b.t("[");
      for (size_t k = from; k < to; ++k) (k > from ? b.t(", ") : b).num(x[k], "lesson.book_v." + field + "." + std::to_string(k));
      b.t("]");
    };
    const Scene s3 = scene(rd.name, 0, CentreView::lesson, Panel::lesson, {}, withv.name, 0);
    b.page("The O update, filled in by you", s3)
        .t("Attention needs O = sum_k softmax(x)_k v_k, the values v weighted by the softmax. Algorithm 1 keeps O "
           "divided by the running l and updates it block by block (L12) with the same rescale as l:\n")
        .f("  P~V = sum over the block of e^(x_k - m~) v_k\n"
           "  m_new = max(m, m~)\n"
           "  l_new = e^(m - m_new) l + e^(m~ - m_new) l~\n"
           "  O_new = (l e^(m - m_new) O + e^(m~ - m_new) P~V) / l_new\n")
        .t("from ").f("m = -inf, l = 0, O = 0").t(". Take x = ");
    list(O.values, "values", 0, O.values.size());
    b.t(" in blocks of ").integer(int64_t(O.block), "lesson.book_v.block").t(" and V = ");
    list(O.v, "v", 0, O.v.size());
    b.t(" (block 1: x = ");
    list(O.values, "values", C0.begin, C0.end);
    b.t(", v = ");
    list(O.v, "v", C0.begin, C0.end);
    b.t("; block 2: x = ");
    list(O.values, "values", C1.begin, C1.end);
    b.t(", v = ");
    list(O.v, "v", C1.begin, C1.end);
    b.t(") and fill in the working line by line. In the app, Next block in the lesson view shows a block's line: "
        "press it once you have answered that block's questions.");
    std::string vtext;
    for (double x : O.v) vtext += (vtext.empty() ? "" : ",") + format_number(x);
    const std::string where = "flashstep lesson softmax --v " + vtext + " (the block lines)";
    // A known mistake's note, when its value is told apart from the right answer for this V (the
    // values move with the seed): the note is given to an answer within 0.5% of it.
    auto diagnose = [&](double value, const std::string& note) {
      const double answer = b.last_question().answer, gap = std::abs(value - answer);
      if (gap <= 0.004 * std::abs(answer)) return;
      b.mistake(value, note, std::min(0.005 * std::abs(value), 0.5 * gap));
    };
    double sum_ex = 0, plain = 0;  // block 1: sum e^x without the max, the unweighted mean of v
    for (size_t k = C0.begin; k < C0.end; ++k) {
      sum_ex += std::exp(O.values[k]);
      plain += O.v[k] / double(C0.end - C0.begin);
    }
    b.ask_number("o-m1", "Block 1: the running max m after it?", C0.m_new, ov(0, "m_new"), 0.001,
                 "m = max(-inf, m~): the largest x of block 1; the lesson view's 'm: old -> new' column after Next block.",
                 Panel::lesson)
        .terminal = where;
    diagnose(C1.m_new, "that is the max of the whole row; after block 1 only its own entries have been seen");
    b.ask_number("o-l1", "Block 1: the running sum l after it?", C0.l_new, ov(0, "l_new"), 0.001,
                 "l = sum over block 1 of e^(x_k - m), with the m you just found.", Panel::lesson)
        .terminal = where;
    diagnose(sum_ex, "that is sum e^x; the running sum is taken around the max: sum e^(x_k - m)");
    diagnose(C1.alpha * C0.l_new,
             "that is block 1's sum around the whole row's max; after block 1 the max seen is block 1's own");
    b.ask_number("o-o1", "Block 1: the output O after it?", C0.o_new, ov(0, "o_new"), 0.001,
                 "O = P~V / l: sum over block 1 of e^(x_k - m) v_k, divided by the l you just found.", Panel::lesson)
        .terminal = where;
    diagnose(C0.local_pv, "that is P~V before dividing by l; O is the weighted mean, P~V / l");
    diagnose(plain, "that is the plain mean of v; each v_k is weighted by e^(x_k - m) / l");
    b.ask_number("o-m2", "Block 2: the new max m_new?", C1.m_new, ov(1, "m_new"), 0.001,
                 "m_new = max(m, m~) with m from block 1 and m~ the largest x of block 2.", Panel::lesson)
        .terminal = where;
    diagnose(C0.m_new, "that is m before block 2; the max is carried and merged: m_new = max(m, m~)");
    b.ask_number("o-alpha", "Block 2: the rescale factor e^(m - m_new)?", C1.alpha, ov(1, "alpha"), 0.001,
                 "e^(m - m_new) with m from block 1 and the m_new you just found.", Panel::lesson)
        .terminal = where;
    diagnose(1 / C1.alpha, "that is e^(m_new - m); the old sums are scaled down onto the new max, by e^(m - m_new) <= 1");
    diagnose(1, "the max moved, so the old l and O are rescaled: by e^(m - m_new), not 1");
    b.ask_number("o-l2", "Block 2: the new sum l_new?", C1.l_new, ov(1, "l_new"), 0.001,
                 "l_new = e^(m - m_new) l + e^(m~ - m_new) l~, with block 2's l~ = sum e^(x_k - m~) over its entries.",
                 Panel::lesson)
        .terminal = where;
    diagnose(C0.l_new + C1.local_sum,
             "l was not rescaled: block 1's l is multiplied by e^(m - m_new) before block 2's sum is added");
    diagnose(C1.local_sum, "that is block 2's own sum l~; block 1's l, rescaled, is added to it");
    diagnose(C0.l_new + std::exp(C1.local_max - C0.m_new) * C1.local_sum,
             "that keeps block 1's max as the reference; the max is carried forward to m_new, and l with it");
    const double pv_old = C0.l_new * C0.o_new;  // block 1's un-normalised output, l O
    b.ask_number("o-o2", "Block 2: the output O_new after both blocks?", C1.o_new, ov(1, "o_new"), 0.001,
                 "O_new = (l e^(m - m_new) O + e^(m~ - m_new) P~V) / l_new, with block 1's l and O, the factor and l_new "
                 "you found, and block 2's P~V = sum e^(x_k - m~) v_k.",
                 Panel::lesson)
        .terminal = where;
    diagnose((pv_old + C1.beta * C1.local_pv) / C1.l_new,
             "O was not rescaled: block 1's part is l e^(m - m_new) O, not l O");
    diagnose((C1.alpha * pv_old + C1.beta * C1.local_pv) / (C0.l_new + C1.local_sum),
             "l was not rescaled: divide by l_new = e^(m - m_new) l + e^(m~ - m_new) l~, not l + l~");
    diagnose((C1.alpha * pv_old + C1.beta * C1.local_pv) / C1.local_sum,
             "that divides by block 2's own l~; the sum of both blocks' parts is divided by l_new");
    diagnose((C1.alpha * C0.o_new + C1.beta * C1.local_pv) / C1.l_new,
             "O is kept divided by l: multiply block 1's O back by its l before rescaling (l e^(m - m_new) O)");
    diagnose(C1.local_pv / C1.local_sum, "that is block 2's weighted mean alone; block 1's O is carried in with the "
                                         "weight l e^(m - m_new) / l_new");
    diagnose(0.5 * (C0.o_new + C1.local_pv / C1.local_sum),
             "that averages the two blocks' means equally; each counts with its share of l_new");
  }

  // Row 0 of the tiny problem's S, block by block: what Algorithm 1 merges at L11.
  const int64_t Tc = tr.tiling.Tc;
  const int64_t last = find_step(tr, Role::merge, 0, Tc - 1);
  const Scene s3 = scene(rd.name, last + 1, CentreView::tiles, Panel::softmax, {Panel::algorithm, Panel::softmax});
  b.page("Row 0 of your problem", s3).t("In attention every row of S goes through this. Row 0 of the tiny problem's S is ");
  b.t("[");
  std::vector<double> row;
  for (int64_t j = 0; j < Tc; ++j) {
    const int64_t ks = find_step(tr, Role::scores, 0, j);
    const Mat& tile = tr.steps[size_t(ks)].tile;
    for (int64_t c = 0; c < tile.cols(); ++c) {
      if (!row.empty()) b.t(", ");
      row.push_back(tile(0, c));
      b.num(tile(0, c), src_step(rd.name, ks, "tile", 0, c));
    }
  }
  const Step& m = tr.steps[size_t(last)];
  b.t("], in Tc = ").integer(Tc, src_tiling(rd.name, "Tc")).t(" blocks of Bc = ").integer(tr.tiling.Bc, src_tiling(rd.name, "Bc"))
      .t(". Algorithm 1 merges them at ").t(role_label(tr, Role::merge)).t("; after the last block (")
      .step_ref(rd.name, last).t(") the running max of row 0 is m = ").num(m.m_new(0), src_step(rd.name, last, "m_new", 0))
      .t(". The Online softmax state panel shows the merge.");
  b.ask_number("row0-l", "What is the running sum l of row 0 after the last block (three significant digits at least)?",
               m.l_new(0), src_step(rd.name, last, "l_new", 0), 0.001,
               "Do the merge on the row above, or read l_i^new for row 0 in the Online softmax state panel.", Panel::softmax);
  {
    double unscaled = 0;  // the blocks' own sums added without the rescale
    for (int64_t j = 0; j < Tc; ++j) unscaled += tr.steps[size_t(find_step(tr, Role::softmax, 0, j))].l_tilde(0);
    b.mistake(unscaled,
                            "that adds the blocks' sums l~ without rescaling each onto the final max");
  }
  return b.finish();
}

}  // namespace flashstep::course
