// Chapters 7-10: fa2-order, masks-dropout-fusion, backward, gpu.
#include "app/course/builder.h"
#include "app/course/roofline.h"
#include "core/backward.h"
#include "core/closed_form.h"
#include "core/schedules/fa1/fa1.h"

namespace flashstep::course {

namespace {

int64_t bytes_of(const Totals& t) { return t.hbm_read_bytes + t.hbm_write_bytes; }
int64_t read_of(const Trace& t, Tensor x) { return t.totals.traffic.read[size_t(x)]; }

}  // namespace

Chapter chapter_fa2_order(uint64_t seed) {
  ChapterBuilder b("fa2-order", seed);
  const RunDecl r1 = tiny_run(seed), r2 = fa2_run(seed);
  const Trace& a = b.add_run(r1);
  const Trace& f = b.add_run(r2);
  b.problem_text("the tiny problem " + sizes_text(r1.spec) + " in both loop orders, seed " + std::to_string(seed));
  const std::string n1 = r1.name, n2 = r2.name;
  const int64_t km = find_step(f, Role::merge, 0, f.tiling.Tc > 1 ? 1 : 0);
  const Scene s1 = scene(n2, km + 1, CentreView::tiles, Panel::algorithm, {Panel::algorithm, Panel::memory});
  b.page("Swap the loops", s1)
      .t("FlashAttention-2 runs i over the Q blocks outside and j over the K/V blocks inside. O_i, l_i and m_i then "
         "stay on chip for the whole row block: they are never read back from HBM, and O_i is written once, at ")
      .t(role_label(f, Role::write_o)).t(". On the same inputs Algorithm 1 wrote ")
      .integer(a.totals.hbm_write_bytes, src_total(n1, "hbm_write_bytes")).t(" B and read ")
      .integer(a.totals.hbm_read_bytes, src_total(n1, "hbm_read_bytes")).t(" B; FlashAttention-2 read ")
      .integer(f.totals.hbm_read_bytes, src_total(n2, "hbm_read_bytes"))
      .t(" B (").integer(a.problem.bytes_per_elem, src_problem(n1, "bytes_per_elem"))
      .t(" B per element; Algorithm 1 reads O_i, l_i, m_i back at every (i, j): ").f("Tc Nq (d + 2)")
      .t(" elements, with Tc = ").integer(a.tiling.Tc, src_tiling(n1, "Tc"))
      .t("). At this step the Tiles view outlines O_i as 'in SRAM' (the key under the tiles): it is on chip, and O in HBM is still empty.");
  b.ask_integer("fa2-writes", "How many bytes does FlashAttention-2 write to HBM in this run?", f.totals.hbm_write_bytes,
                src_total(n2, "hbm_write_bytes"), "The Memory panel's table: the fa2 column's write bytes.", Panel::memory);
  b.bytes().mistake(a.totals.hbm_write_bytes, "that is Algorithm 1's writes; FlashAttention-2 writes each O_i once");
  b.ask_integer("round-trips", "How many bytes of O, l and m does Algorithm 1 read back from HBM that FlashAttention-2 never reads?",
                read_of(a, Tensor::O) + read_of(a, Tensor::l) + read_of(a, Tensor::m),
                "trace." + n1 + ".read.O + trace." + n1 + ".read.l + trace." + n1 + ".read.m",
                "Switch the schedule to fa1: the Memory panel lists the bytes read per tensor (O, l, m).", Panel::memory);
  b.in_terminal("");  // the per-tensor reads are the Memory panel's, not in run's output
  b.bytes().mistake(a.totals.hbm_read_bytes - f.totals.hbm_read_bytes,
                    "that is all of the difference in reads; K and V are read in another pattern too: count only O, l, m");

  const int64_t kw = find_step(f, Role::write_o, 0);
  const Scene s2 = scene(n2, kw + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("Normalise once, at the end", s2)
      .t("FlashAttention-2 also keeps O_i unnormalised while j runs, and exponentiates each tile against the running "
         "max rather than the tile's own: ").f("P~_ij = exp(S_ij - m_new)").t(", where Algorithm 1's P~_ij was ")
      .f("exp(S_ij - m~_ij)").t(", so that the update needs one factor: ").f("O_i = diag(e^(m_old - m_new)) O_i + P~_ij V_j")
      .t(", and divides by l_i once before the write. Fewer divisions: ")
      .integer(f.totals.flops, src_total(n2, "flops")).t(" FLOPs against Algorithm 1's ")
      .integer(a.totals.flops, src_total(n1, "flops")).t(". It reads K and V once per Q block (Tr = ")
      .integer(f.tiling.Tr, src_tiling(n2, "Tr")).t(" times), Q once, and writes O and the logsumexp L = m + log l "
                                                     "once, which the backward pass uses.");
  b.ask_choice("reread", "In FlashAttention-2's order, which blocks are read from HBM again for every Q block?",
               {"Q_i", "K_j and V_j", "O_i, l_i and m_i"}, 1, "The inner loop is over j: look which loads repeat.",
               Panel::algorithm);
  b.ask_integer("kv-bytes", "How many bytes of K and V does FlashAttention-2 read in all?",
                read_of(f, Tensor::K) + read_of(f, Tensor::V), "trace." + n2 + ".read.K + trace." + n2 + ".read.V",
                "The Memory panel: K and V read per tensor, or Tr times the bytes of K and V.", Panel::memory);
  b.bytes().mistake(double(2 * r2.spec.nk * r2.spec.d * f.problem.bytes_per_elem),
                    "that is K and V read once; they are read again for every Q block (Tr times)");
  return b.finish();
}

Chapter chapter_masks_dropout_fusion(uint64_t seed) {
  ChapterBuilder b("masks-dropout-fusion", seed);
  const RunDecl rc = causal_run(seed), rdp = dropout_run(seed);
  const Trace& c = b.add_run(rc);
  const Trace& dp = b.add_run(rdp);
  b.problem_text("causal " + sizes_text(rc.spec) + "; then FlashAttention-2 with dropout in bf16, seed " +
                 std::to_string(seed));
  const std::string nc = rc.name, nd = rdp.name;
  // Tiles the mask hides: a skip step with i covers one tile; one without (fa1 skips a whole
  // K/V block) covers a column of Tr.
  int64_t skipped = 0;
  int64_t first_skip = -1;
  for (size_t k = 0; k < c.steps.size(); ++k)
    if (has_role(c, c.steps[k], Role::skip)) {
      skipped += c.steps[k].i >= 0 ? 1 : c.tiling.Tr;
      if (first_skip < 0) first_skip = int64_t(k);
    }
  const TrafficForm cf = fa1_traffic(rc.spec.nq, rc.spec.nk, rc.spec.d, c.tiling.Tc);
  const int bpe = c.problem.bytes_per_elem;
  Scene s1 = scene(nc, first_skip >= 0 ? first_skip + 1 : 0, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  s1.anchor = Anchor::whole_run;  // the closed form "amber in the Memory panel"
  b.page("Causal: skip the blocks above the diagonal", s1)
      .t("A causal mask hides key j from query i when j > i. A tile wholly above the diagonal needs no loads and no "
         "FLOPs: Algorithm 1 skips it (the hatched tiles), and masks the partly hidden tiles element by element (the "
         "-inf cells). Here the run moved ")
      .integer(bytes_of(c.totals), src_total(nc, "bytes")).t(" B against ")
      .integer(cf.read_bytes(bpe) + cf.write_bytes(bpe), src_closed(nc, "fa1", "bytes"))  // registry-exempt: a chapter about this schedule
      .t(" B for the unmasked closed form, which is now an upper bound (amber in the Memory panel). The tiles: Br = ")
      .integer(c.tiling.Br, src_tiling(nc, "Br")).t(", Bc = ").integer(c.tiling.Bc, src_tiling(nc, "Bc"))
      .t(", Tr = ").integer(c.tiling.Tr, src_tiling(nc, "Tr")).t(", Tc = ").integer(c.tiling.Tc, src_tiling(nc, "Tc")).t(".");
  b.ask_integer("skipped", "How many (i, j) tiles does the mask let Algorithm 1 skip?", skipped,
                "trace." + nc + ".skipped_tiles", "Count the hatched tiles in the Tiles view's score matrix.", Panel::tiles);
  b.ask_integer("saved", "How many HBM bytes did skipping save against the unmasked closed form?",
                cf.read_bytes(bpe) + cf.write_bytes(bpe) - bytes_of(c.totals),
                src_closed(nc, "fa1", "bytes") + " - " + src_total(nc, "bytes"),  // registry-exempt: a chapter about this schedule
                "The Memory panel's table: the closed form minus the simulated bytes, read and written.", Panel::memory);
  b.bytes().mistake(cf.read_bytes(bpe) - c.totals.hbm_read_bytes, "that is only the reads saved; add the writes saved");

  // The first P~ tile with an entry dropped.
  int64_t kd = -1;
  for (size_t k = 0; k < dp.steps.size() && kd < 0; ++k)
    if (dp.steps[k].dropout_keep.size() && dp.steps[k].dropout_keep.minCoeff() < 1) kd = int64_t(k);
  if (kd < 0) throw InputError("course: the dropout run dropped nothing");
  const Step& sd = dp.steps[size_t(kd)];
  const int64_t dropped = int64_t(sd.dropout_keep.size()) - int64_t(sd.dropout_keep.sum());
  const Scene s2 = scene(nd, kd + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("Dropout, drawn on chip", s2)
      .t("Dropout keeps each entry of P~_ij with probability ").f("1 - p").t(" (p = ")
      .num(dp.problem.dropout, src_problem(nd, "dropout")).t(") and scales the kept ones by ").f("1/(1 - p)")
      .t(". The mask is not a tensor in HBM: each entry's keep bit comes from Philox keyed by the seed and its (row, "
         "column), drawn on chip when the tile is made, and drawn again identically by the backward pass. At ")
      .step_ref(nd, kd).t(" (").t(line_label(sd.line)).t(", i = ").integer(sd.i, src_step(nd, kd, "i")).t(", j = ")
      .integer(sd.j, src_step(nd, kd, "j")).t(") the crossed-out cells of the current P~ tile are the dropped ones, out of ")
      .integer(int64_t(sd.dropout_keep.size()), src_step(nd, kd, "dropout_entries")).t(" entries. The tile's keep bits, "
         "row by row (o kept, x dropped):\n");
  for (int64_t r = 0; r < sd.dropout_keep.rows(); ++r) {
    b.t("  ");
    for (int64_t c = 0; c < sd.dropout_keep.cols(); ++c) b.t(sd.dropout_keep(r, c) > 0 ? " o" : " x");
    b.t("\n");
  }
  b.ask_integer("dropped", "How many entries of this P~ tile were dropped at this step?", dropped,
                src_step(nd, kd, "dropped"),
                "Count the x in the keep bits above; in the app, the crossed-out (magenta) cells of the current tile.",
                Panel::tiles);
  b.ask_choice("mask-home", "Where does the dropout mask live between the forward and the backward pass?",
               {"in HBM, written by the forward", "nowhere: Philox redraws it from the seed and the position",
                "in the L2 cache"},
               1, "The text of this page: how each keep bit is made.", Panel::none);

  const Scene s3 = scene(nd, int64_t(dp.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("Everything in one kernel", s3)
      .t("Matmul, scale, mask, softmax, dropout and the second matmul all happen on the tile in SRAM; only Q, K, V "
         "come in and O, L go out. This run, causal and with dropout, stored in bf16 (")
      .integer(dp.problem.bytes_per_elem, src_problem(nd, "bytes_per_elem")).t(" B per element), moved ")
      .integer(bytes_of(dp.totals), src_total(nd, "bytes")).t(" B in all, and the unfused standard attention would "
                                                             "write S and P to HBM and read them back.");
  return b.finish();
}

Chapter chapter_backward(uint64_t seed) {
  ChapterBuilder b("backward", seed);
  const RunDecl rb = backward_run(seed);
  const Trace& t = b.add_run(rb);
  const RunDecl rs = standard_twin(rb, "backward_standard");
  const Trace& ts = b.add_run(rs);
  b.problem_text("the tiny problem " + sizes_text(rb.spec) + " with dO from the seed, seed " + std::to_string(seed));
  const std::string n = rb.name;
  const int64_t nq = rb.spec.nq, nk = rb.spec.nk, d = rb.spec.d;
  const std::string Nq = src_problem(n, "nq"), Nk = src_problem(n, "nk"), D = src_problem(n, "d");
  const Scene s1 = scene(n, int64_t(t.backward_first_step) + 1, CentreView::tiles, Panel::memory, {Panel::algorithm, Panel::memory});
  b.page("Recompute instead of storing", s1)
      .t("The backward pass needs P = softmax(S). Both keep the output O for it; beyond O, standard attention keeps "
         "P, which its forward wrote to HBM and its backward reads back (Algorithm 3): ").f("Nq Nk")
      .t(" = ").integer(nq * nk, Nq + " * " + Nk).t(" elements, O(N^2). FlashAttention keeps only the statistics l, m: ")
      .f("2 Nq").t(" = ").integer(2 * nq, "2 * " + Nq)
      .t(" elements, O(N), and recomputes S_ij and P_ij tile by tile from Q, K and l, m (Algorithm 4). More FLOPs, "
         "fewer bytes: the FLOPs are cheap, the bytes are not.");
  b.ask_number("kept-ratio", "Beyond O, standard attention keeps how many times as many elements for the backward as "
               "Algorithm 1 here (their ratio)?",
               double(nq * nk) / double(2 * nq), Nq + " * " + Nk + " / ( 2 * " + Nq + " )",
               0.01, "Divide the two element counts on this page.", Panel::none);
  b.times().inverse("Algorithm 1's elements over standard attention's");

  const int64_t kd = find_step(t, Role::rowsum_d, 0, 0, true);
  const Step& sd = t.steps[size_t(kd)];
  const Scene s2 = scene(n, kd + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("D_i and dS", s2)
      .t("With dP_ij = dO_i V_j^T, the softmax's gradient is dS_ij = P_ij o (dP_ij - D_i), where D_i = rowsum(dO_i o O_i) "
         "(").t(line_label(sd.line)).t(" at ").step_ref(n, kd).t("). For the block's first row D = ")
      .num(sd.D_i(0), src_step(n, kd, "D_i", 0)).t(". Then dV_j gains P_ij^T dO_i, dK_j gains tau dS_ij^T Q_i, and dQ_i "
                                                 "gains tau dS_ij K_j, written back to HBM at every (i, j).\n\nThe "
                                                 "block's second row (row ");
  {
    const int64_t row = sd.i * t.tiling.Br + 1;
    const Mat dO = make_grad_output(t.problem, rb.spec.pattern);
    b.integer(row, src_tiling(n, "Br") + " * " + src_step(n, kd, "i") + " + 1").t(" of O): dO = [");
    for (int64_t c = 0; c < d; ++c) (c ? b.t(", ") : b).num(dO(row, c), "grad." + n + ".dO." + std::to_string(row) + "." + std::to_string(c), 6);
    b.t("], O = [");
    for (int64_t c = 0; c < d; ++c) (c ? b.t(", ") : b).num(t.O(row, c), "trace." + n + ".O." + std::to_string(row) + "." + std::to_string(c), 6);
    b.t("].");
  }
  b.ask_number("d-row1", "What is D_i for the second row of the block at this step?", sd.D_i(1), src_step(n, kd, "D_i", 1),
               0.001, "rowsum(dO_i o O_i) of the second row's dO and O on this page; in the app, the Algorithm panel's "
               "explanation of the step.",
               Panel::algorithm);

  const TrafficForm bf = fa1_backward_traffic(nq, nk, d, t.tiling.Tc);
  const Scene s3 = scene(n, int64_t(t.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("The backward's bytes", s3)
      .t("Algorithm 4 read ").integer(t.backward_totals.hbm_read_bytes, "trace." + n + ".backward.hbm_read_bytes")
      .t(" B and wrote ").integer(t.backward_totals.hbm_write_bytes, "trace." + n + ".backward.hbm_write_bytes")
      .t(" B (closed form: ").integer(bf.read_bytes(4), "closedbwd." + n + ".fa1.read_bytes").t(" and ")
      .integer(bf.write_bytes(4), "closedbwd." + n + ".fa1.write_bytes").t(" B). Standard attention's backward on the same "
                                                                           "inputs: ")
      .integer(bytes_of(ts.backward_totals), "trace." + rs.name + ".backward.bytes")
      .t(" B. Like the forward, the tiled pass trades bytes of S and P for recomputation.");
  b.ask_integer("bwd-bytes", "How many HBM bytes did Algorithm 4 move in all (read + written)?",
                bytes_of(t.backward_totals), "trace." + n + ".backward.bytes",
                "The Memory panel splits forward and backward: add the backward's read and write.", Panel::memory);
  b.bytes()
      .mistake(t.backward_totals.hbm_read_bytes, "that is only the backward's reads; add its writes")
      .mistake(bytes_of(ts.backward_totals), "that is standard attention's backward");
  b.ask_choice("recomputed", "What does Algorithm 4 recompute instead of reading it from HBM?",
               {"P_ij, from S_ij = tau Q_i K_j^T and l_i, m_i", "dO", "K_j and V_j"}, 0,
               "The first page of this chapter: what standard attention stores and FlashAttention does not.",
               Panel::algorithm);
  return b.finish();
}

Chapter chapter_gpu(uint64_t seed) {
  ChapterBuilder b("gpu", seed);
  const RunDecl rd = tiny_run(seed);
  b.add_run(rd);
  const nlohmann::json bench = load_json_file(default_bench_path());
  const nlohmann::json& rows = bench.at("runs").at(0).at("rows");
  const nlohmann::json& tc = bench.at("runs").at(1).at("rows");
  // The seed picks the sequence length among the d = 64 rows.
  std::vector<size_t> d64, tc64;
  for (size_t k = 0; k < rows.size(); ++k)
    if (rows[k].value("d", 0) == 64) d64.push_back(k);
  for (size_t k = 0; k < tc.size(); ++k)
    if (tc[k].value("d", 0) == 64) tc64.push_back(k);
  if (d64.empty() || tc64.empty()) throw InputError("course: the bench file has no d = 64 rows");
  const size_t r = d64[(seed - 1) % d64.size()], q = tc64[(seed - 1) % tc64.size()];
  const nlohmann::json& row = rows[r];
  const nlohmann::json& trow = tc[q];
  const std::string at = "bench:/runs/0/rows/" + std::to_string(r), tat = "bench:/runs/1/rows/" + std::to_string(q);
  const int64_t n_fp32 = row.value("n", 0), n_tc = trow.value("n", 0);
  b.problem_text("the recorded H200 runs (assets/bench/h200.json), d = 64: " +
                 (n_fp32 == n_tc ? "N = " + std::to_string(n_fp32) + " in float32 and on the tensor cores"
                                 : "N = " + std::to_string(n_fp32) + " in float32, N = " + std::to_string(n_tc) +
                                       " on the tensor cores"));
  auto num = [&](const nlohmann::json& j, const char* a, const char* c) { return j.at(a).at(c).get<double>(); };
  const double ms1 = num(row, "fa1", "median_ms"), ms2 = num(row, "fa2", "median_ms"), mss = num(row, "standard", "median_ms");  // registry-exempt: the bench file's keys
  const double by1 = num(row, "fa1", "hbm_bytes_predicted"), bys = num(row, "standard", "hbm_bytes_predicted");  // registry-exempt: the bench file's keys
  Scene s1 = scene(rd.name, 0, CentreView::bench, Panel::bench, {});
  s1.bench_figure = "tflops";
  b.page("The same schedule on the GPU", s1)
      .t("The CUDA backend runs Algorithm 1 and FlashAttention-2 with the same tiling and the same online-softmax "
         "update as the simulator (core/online_softmax.h), and flashstep verify checks its output against the trace "
         "on a machine with a GPU. None here: these are the recorded H200 runs. With N = ")
      .integer(row.at("n").get<int64_t>(), at + "/n").t(", d = ").integer(row.at("d").get<int64_t>(), at + "/d")
      .t(" and ").integer(row.at("B").get<int64_t>() * row.at("H").get<int64_t>(), at + "/B * " + at + "/H")
      .t(" heads in float32: Algorithm 1 took ").num(ms1, at + "/fa1/median_ms").t(" ms, FlashAttention-2 ")
      .num(ms2, at + "/fa2/median_ms").t(" ms, standard attention ").num(mss, at + "/standard/median_ms")
      .t(" ms. The simulator predicts ").num(by1 / 1e9, at + "/fa1/hbm_bytes_predicted / 1e9").t(" GB of HBM traffic for "
                                                                                            "Algorithm 1 and ")
      .num(bys / 1e9, at + "/standard/hbm_bytes_predicted / 1e9").t(" GB for standard attention.");
  {
    // Why the speed-up is smaller than the byte ratio: the float32 kernels' time is not all bytes.
    const double fl = row.at("flops").get<double>();
    const double t_flops = fl / kH200.fp32_flops * 1e3, t_bytes = by1 / kH200.hbm_bytes_per_s * 1e3;
    b.t(" At the H200's peaks Algorithm 1's ").num(fl / 1e9, at + "/flops / 1e9").t(" GFLOP would take ")
        .num(t_flops, at + "/flops / device.h200.fp32_flops * 1000").t(" ms on the float32 CUDA cores and its bytes ")
        .num(t_bytes, at + "/fa1/hbm_bytes_predicted / device.h200.hbm_bytes_per_s * 1000")
        .t(" ms on HBM: ");
    b.t(t_flops > t_bytes ? "its time is mostly arithmetic, which fewer bytes do not shorten, so the speed-up over "
                            "standard attention is smaller than the ratio of the bytes."
                          : "its time is mostly bytes, so the speed-up follows the ratio of the bytes.");
  }
  b.ask_number("speedup", "How many times faster than standard attention was Algorithm 1 in this run?", mss / ms1,
               at + "/standard/median_ms / " + at + "/fa1/median_ms", 0.01,
               "Divide the two times on this page (the Bench view plots them too).", Panel::bench);
  b.times().inverse("Algorithm 1's time over standard attention's").mistake(bys / by1,
      "that is the ratio of the predicted bytes; the question asks the measured times");
  b.ask_number("bytes-ratio", "And how many times the bytes of Algorithm 1 did standard attention move (predicted)?",
               bys / by1, at + "/standard/hbm_bytes_predicted / " + at + "/fa1/hbm_bytes_predicted", 0.01,
               "Divide the two GB figures on this page.", Panel::bench);
  b.times().inverse("Algorithm 1's bytes over standard attention's").mistake(mss / ms1,
      "that is the measured speed-up; the question asks the predicted bytes");

  const double t_f = num(trow, "fa2_tc", "tflops"), t_s = num(trow, "standard_tc", "tflops");
  const double b_f = num(trow, "fa2_tc", "hbm_bytes_predicted"), b_s = num(trow, "standard_tc", "hbm_bytes_predicted");
  const double fl = trow.at("flops").get<double>();
  const Scene s2 = scene(rd.name, 0, CentreView::roofline, Panel::roofline, {});
  b.page("Tensor cores, and why the speed-ups follow the bytes", s2)
      .t("On the tensor cores in bf16, FlashAttention-2 reached ").num(t_f, tat + "/fa2_tc/tflops")
      .t(" TFLOP/s at N = ").integer(trow.at("n").get<int64_t>(), tat + "/n").t(" and standard attention ")
      .num(t_s, tat + "/standard_tc/tflops").t(" TFLOP/s. Standard attention's intensity, ")
      .num(fl / b_s, tat + "/flops / " + tat + "/standard_tc/hbm_bytes_predicted")
      .t(" FLOP/B, is far below the bf16 ridge of ").num(ridge_point(kH200.bf16_tc_flops, kH200),
                                                         "device.h200.bf16_tc_flops / device.h200.hbm_bytes_per_s")
      .t(" FLOP/B: its bandwidth roof, intensity times ").num(kH200.hbm_bytes_per_s / 1e12, "device.h200.hbm_bytes_per_s / 1e12")
      .t(" TB/s, is ").num(fl / b_s * kH200.hbm_bytes_per_s / 1e12,
                           tat + "/flops / " + tat + "/standard_tc/hbm_bytes_predicted * device.h200.hbm_bytes_per_s / 1e12")
      .t(" TFLOP/s: it waits for HBM, so its time follows its bytes. The fused kernel's ")
      .num(fl / b_f, tat + "/flops / " + tat + "/fa2_tc/hbm_bytes_predicted")
      .t(" FLOP/B puts its roof at ").num(fl / b_f * kH200.hbm_bytes_per_s / 1e12,
                                         tat + "/flops / " + tat + "/fa2_tc/hbm_bytes_predicted * device.h200.hbm_bytes_per_s / 1e12")
      .t(" TFLOP/s, above what it reached: the bytes no longer limit it. flashstep plot draws the measured throughput "
         "against N, and the roofline with these points.");
  b.ask_number("tc-bytes-ratio", "How many times the HBM bytes of FlashAttention-2 does standard attention move in this tensor-core run?",
               b_s / b_f, tat + "/standard_tc/hbm_bytes_predicted / " + tat + "/fa2_tc/hbm_bytes_predicted", 0.01,
               "Both intensities are on this page, for the same FLOPs: their ratio is the bytes' ratio.", Panel::bench);
  b.times().inverse("FlashAttention-2's bytes over standard attention's");
  b.ask_choice("limit", "What limits standard attention on the tensor cores (bf16) on the H200?",
               {"HBM bandwidth: its intensity is below the bf16 tensor-core ridge", "the tensor cores' FLOP/s",
                "the size of the L2 cache"}, 0,
               "Compare its intensity with the ridge point on this page.", Panel::roofline);
  Chapter ch = b.finish();
  // The roofline with these measured points, for the app's second page (its numbers are the
  // page's own, from the bench file).
  auto roof = std::make_shared<Roofline>(simulate_roofline(1024, 64, 16384));
  add_measured(*roof, bench, "assets/bench/h200.json");
  ch.roofline = roof;
  return ch;
}

}  // namespace flashstep::course
