// Chapters 4-6: tiling, algorithm-1, io-complexity.
#include "app/course/builder.h"
#include "core/closed_form.h"
#include "core/l2_cache.h"
#include "core/problem.h"
#include "core/schedule_registry.h"
#include "core/run.h"
#include "core/schedules/fa1/fa1.h"
#include "core/schedules/standard/standard.h"

#include <cmath>

namespace flashstep::course {

namespace {

// The bytes of the four d-wide tiles (Q_i, K_j, V_j, O_i) in SRAM after a step.
int64_t tile_bytes(const Trace& t, const Step& s) {
  int64_t b = 0;
  for (Slot sl : {Slot::Qi, Slot::Kj, Slot::Vj, Slot::Oi})
    b += s.sram_elems[size_t(sl)] * slot_elem_bytes(sl, t.problem.bytes_per_elem);
  return b;
}

RunDecl variant(const RunDecl& base, const std::string& name, int64_t M) {
  RunDecl r = base;
  r.name = name;
  r.preset = "";
  r.spec.M = M;
  r.record = false;
  return r;
}

}  // namespace

Chapter chapter_tiling(uint64_t seed) {
  ChapterBuilder b("tiling", seed);
  const RunDecl rd = tiny_run(seed);
  const Trace& tr = b.add_run(rd);
  const RunDecl r2 = variant(rd, "tiny_2M", 2 * rd.spec.M);
  const Trace& t2 = b.add_run(r2);
  b.problem_text("the tiny problem: " + sizes_text(rd.spec) + ", seed " + std::to_string(seed));
  const Tiling& T = tr.tiling;
  const std::string n = rd.name;
  const Scene s1 = scene(n, find_step(tr, Role::load_q, 0, 0) + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::memory});
  b.page("Block sizes from M", s1)
      .t("SRAM holds M = ").integer(T.M, src_tiling(n, "M"))
      .t(" elements here. Algorithm 1 keeps four d-wide tiles on chip, Q_i, K_j, V_j and O_i, and gives each a quarter "
         "of SRAM: Bc = ceil(M / 4d) = ceil(").integer(T.M, src_tiling(n, "M")).t(" / ")
      .integer(4 * rd.spec.d, "4 * " + src_problem(n, "d")).t(") = ").integer(T.Bc, src_tiling(n, "Bc"))
      .t(" rows of K and V per block, and Br = min(Bc, d) = ").integer(T.Br, src_tiling(n, "Br"))
      .t(" rows of Q and O. Q is cut into Tr = ceil(Nq / Br) = ").integer(T.Tr, src_tiling(n, "Tr"))
      .t(" blocks, K and V into Tc = ceil(Nk / Bc) = ").integer(T.Tc, src_tiling(n, "Tc"))
      .t(" blocks. The Tiles view draws the blocks as a grid: Q on the left, K^T above, V^T below the score tiles.");
  b.ask_integer("bc-2m", "If M were doubled (same d), what would Bc be?", t2.tiling.Bc, src_tiling(r2.name, "Bc"),
                "Bc = ceil(M / 4d) with twice the M.", Panel::none);
  b.mistake(double(t2.tiling.Bc) - 0.5, "Bc is rounded up: ceil(M / 4d) whole rows", 0.5)
      .mistake(T.Bc, "that is Bc for the run's M; the question doubles M");
  b.ask_integer("pairs-2m", "And how many (i, j) tile pairs would Algorithm 1 visit then (Tr x Tc)?",
                t2.tiling.Tr * t2.tiling.Tc, src_tiling(r2.name, "Tr") + " * " + src_tiling(r2.name, "Tc"),
                "Tr = ceil(Nq / Br) with Br = min(Bc, d); Tc = ceil(Nk / Bc).", Panel::none);
  b.mistake(T.Tr * T.Tc, "that is Tr x Tc for the run's M; the question doubles M");

  const int64_t k = find_step(tr, Role::update_o, 0, 0);
  const Step& st = tr.steps[size_t(k)];
  Scene s2 = scene(n, k + 1, CentreView::tiles, Panel::memory, {Panel::algorithm, Panel::memory});
  s2.anchor = Anchor::sram;  // "the Memory panel's SRAM bar"
  b.page("What lives in SRAM", s2)
      .t("At ").step_ref(n, k).t(" (").t(role_label(tr, Role::update_o)).t(") SRAM holds Q_i and O_i (Br x d each) and "
         "K_j, V_j (Bc x d each): ").integer(tile_bytes(tr, st), src_step(n, k, "tile_bytes"))
      .t(" B of the ").integer(T.tile_capacity * tr.problem.bytes_per_elem, src_tiling(n, "tile_capacity") + " * " + src_problem(n, "bytes_per_elem"))
      .t(" B budget. The score tile S_ij (Br x Bc) and the row statistics m_i, l_i, m~_ij, l~_ij, m_i^new, l_i^new are "
         "on-chip scratch "
         "(registers on a GPU): with them the chip holds ").integer(st.sram_bytes, src_step(n, k, "sram_bytes"))
      .t(" B at this step. The Memory panel's SRAM bar shows the same split.");
  b.ask_integer("peak-tiles", "What is the largest number of bytes the four tiles take at any step of this run?",
                tr.totals.peak_tile_bytes, src_total(n, "peak_tile_bytes"),
                "The Memory panel's SRAM section: the tiles' peak against the budget.", Panel::memory);
  b.bytes()
      .mistake(tr.totals.peak_tile_bytes / tr.problem.bytes_per_elem,
               "that is elements; the question asks bytes (" + std::to_string(tr.problem.bytes_per_elem) + " B each)")
      .mistake(T.tile_capacity * tr.problem.bytes_per_elem, "that is the budget; the question asks what the tiles take");

  const Scene s3 = scene(n, find_step(tr, Role::scores, 0, 0) + 1, CentreView::tiles, Panel::tiles, {Panel::algorithm, Panel::softmax});
  b.page("Why Br is capped at d", s3)
      .t("S_ij = tau Q_i K_j^T is Br x Bc. With Br = min(Bc, d) the score tile has at most Bc d elements, no more "
         "than one d-wide tile, so it fits beside the four tiles. Here Br Bc = ")
      .integer(T.Br * T.Bc, src_tiling(n, "Br") + " * " + src_tiling(n, "Bc")).t(" against Bc d = ")
      .integer(T.Bc * rd.spec.d, src_tiling(n, "Bc") + " * " + src_problem(n, "d"))
      .t(". Without the cap, a small d with a large M would make S_ij far larger than SRAM.");
  b.ask_choice("why-cap", "Why does Algorithm 1 take Br = min(Bc, d)?",
               {"so that S_ij (Br x Bc) is no larger than one d-wide tile", "because Q has only d rows",
                "so that Tr equals Tc"},
               0, "Compare the score tile's size Br x Bc with a d-wide tile's Bc x d.", Panel::memory);
  return b.finish();
}

Chapter chapter_algorithm_1(uint64_t seed) {
  ChapterBuilder b("algorithm-1", seed);
  const RunDecl rd = tiny_run(seed);
  const Trace& tr = b.add_run(rd);
  b.problem_text("the tiny problem: " + sizes_text(rd.spec) + ", seed " + std::to_string(seed));
  const std::string n = rd.name;
  const Tiling& T = tr.tiling;
  const int upd_line = role_line_number(tr, Role::update_o);
  const Scene s1 = scene(n, 1, CentreView::tiles, Panel::algorithm, {Panel::algorithm, Panel::memory});
  b.page("The loops", s1)
      .t("Algorithm 1 initialises ").f("O = 0, l = 0, m = -inf").t(" in HBM (").t(role_label(tr, Role::init))
      .t("), then runs j over the Tc = ").integer(T.Tc, src_tiling(n, "Tc"))
      .t(" K/V blocks outside and i over the Tr = ").integer(T.Tr, src_tiling(n, "Tr"))
      .t(" Q blocks inside. Each (i, j) takes six lines: load Q_i, O_i, l_i, m_i; S_ij; P~_ij with m~, l~; the merge; "
         "the O update and its write; the write of l_i, m_i. With the load of K_j, V_j per j the run has ")
      .f("1 + Tc (1 + 6 Tr)").t(" = ").integer(int64_t(tr.steps.size()), src_total(n, "steps"))
      .t(" steps. Space or Right steps through them in the app; the Algorithm panel highlights the line.");
  b.ask_integer("o-writes", "How many times does the run write an O block to HBM at " + role_label(tr, Role::update_o) + "?",
                count_steps(tr, Role::update_o), "trace." + n + ".count." + std::to_string(upd_line),
                "Once per (i, j) pair: Tr x Tc.", Panel::algorithm);
  if (T.Tr != T.Tr * T.Tc) b.mistake(T.Tr, "that is Tr; the O block is written once per (i, j) pair, Tr x Tc times");
  if (T.Tc != T.Tr * T.Tc) b.mistake(T.Tc, "that is Tc; the O block is written once per (i, j) pair, Tr x Tc times");

  // The O update of row block 0 at its second K/V block (the first has nothing to rescale).
  const int64_t j = T.Tc > 1 ? 1 : 0;
  const int64_t ku = find_step(tr, Role::update_o, 0, j), km = find_step(tr, Role::merge, 0, j);
  const int64_t kp = find_step(tr, Role::softmax, 0, j);
  const Step& M = tr.steps[size_t(km)];
  const Step& U = tr.steps[size_t(ku)];
  const Mat& Pt = tr.steps[size_t(kp)].tile;
  const Mat PV = Pt * tr.problem.V.block(j * T.Bc, 0, Pt.cols(), tr.problem.d);
  const Mat* O_old = nullptr;  // O_0 as the previous update wrote it
  int64_t kprev = -1;
  if (j > 0) {
    kprev = find_step(tr, Role::update_o, 0, j - 1);
    O_old = &tr.steps[size_t(kprev)].writes.front().data;
  }
  const Mat& O_new = U.writes.front().data;
  const Scene s2 = scene(n, ku + 1, CentreView::tiles, Panel::softmax, {Panel::algorithm, Panel::softmax});
  b.page("The O update, with this step's numbers", s2)
      .t("At ").step_ref(n, ku).t(" (").t(role_label(tr, Role::update_o)).t(", i = ").integer(U.i, src_step(n, ku, "i"))
      .t(", j = ").integer(U.j, src_step(n, ku, "j"))
      .t(") the O block is updated as ").f("O_i <- diag(l_i^new)^-1 (diag(l_i) e^(m_i - m_i^new) O_i + e^(m~_ij - m_i^new) "
         "P~_ij V_j)").t(". Why: O_i holds the softmax-weighted sum of the blocks seen so far, normalised by l_i around m_i; "
         "multiplying by l_i undoes the normalisation, the exponential moves it onto the new max, the new block's "
         "P~_ij V_j is moved there too, and dividing by l_i^new normalises again.\n\nFor the first row of the block: l_i = ")
      .num(M.l_old(0), src_step(n, km, "l_old", 0)).t(", m_i = ").num(M.m_old(0), src_step(n, km, "m_old", 0))
      .t(", m~_ij = ").num(tr.steps[size_t(kp)].m_tilde(0), src_step(n, kp, "m_tilde", 0))
      .t(", m_i^new = ").num(M.m_new(0), src_step(n, km, "m_new", 0)).t(", l_i^new = ").num(M.l_new(0), src_step(n, km, "l_new", 0))
      .t("; e^(m_i - m_i^new) = ").num(M.alpha(0), src_step(n, km, "alpha", 0)).t(", e^(m~_ij - m_i^new) = ")
      .num(M.beta(0), src_step(n, km, "beta", 0)).t(". In its first column, O_i was ");
  if (O_old) b.num((*O_old)(0, 0), src_step(n, kprev, "write.O", 0, 0));
  else b.t("zero");
  b.t(" and (P~_ij V_j) is ").num(PV(0, 0), src_step(n, kp, "pv", 0, 0)).t(", so the new value is ")
      .num(O_new(0, 0), src_step(n, ku, "write.O", 0, 0)).t(", the number written to HBM at this step.\n\nFor the second "
         "row: l_i = ").num(M.l_old(1), src_step(n, km, "l_old", 1), 6).t(", m_i = ").num(M.m_old(1), src_step(n, km, "m_old", 1), 6)
      .t(", m~_ij = ").num(tr.steps[size_t(kp)].m_tilde(1), src_step(n, kp, "m_tilde", 1), 6)
      .t(", m_i^new = ").num(M.m_new(1), src_step(n, km, "m_new", 1), 6).t(", l_i^new = ")
      .num(M.l_new(1), src_step(n, km, "l_new", 1), 6).t("; O_i's first column was ");
  if (O_old) b.num((*O_old)(1, 0), src_step(n, kprev, "write.O", 1, 0), 6);
  else b.t("zero");
  b.t(" and (P~_ij V_j) is ").num(PV(1, 0), src_step(n, kp, "pv", 1, 0), 6).t(".");
  b.ask_number("beta-row1", "At this step, what is e^(m~_ij - m_i^new) for the second row of the block?", M.beta(1),
               src_step(n, km, "beta", 1), 0.001,
               "e^(m~_ij - m_i^new) from the second row's numbers on this page; in the app, the Online softmax state "
               "panel's e^(m~ - m_new) column.", Panel::softmax);
  if (M.alpha(1) != M.beta(1)) b.mistake(M.alpha(1), "that is e^(m_i - m_i^new), the old block's factor");
  b.ask_number("o-row1", "What value does this step write to O for the second row of the block, first column?",
               O_new(1, 0), src_step(n, ku, "write.O", 1, 0), 0.01,
               "Apply the formula to the second row (the panel lists l, m, the rescale factors), or hover O's cell in the "
               "Tiles view after the step.",
               Panel::tiles);
  b.mistake(O_new(0, 0), "that is the first row's value; the question asks the second row");

  Scene s3 = scene(n, int64_t(tr.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  s3.anchor = Anchor::o_error;  // "the Memory panel's table shows its error"
  b.page("After the last block", s3)
      .t("After ").step_ref(n, int64_t(tr.steps.size()) - 1)
      .t(", the last, every row of O has seen every key: O = softmax(tau Q K^T) V, and the Memory panel's table shows its error "
         "against the float64 reference. Its first entry is ")
      .num(tr.O(0, 0), "trace." + n + ".O.0.0").t(". The run wrote ")
      .integer(tr.totals.hbm_write_bytes, src_total(n, "hbm_write_bytes")).t(" B to HBM and did ")
      .integer(tr.totals.flops, src_total(n, "flops")).t(" FLOPs. It reads K and V once (").f("2 Nk d")
      .t(" elements) and Q_i, O_i, l_i, m_i at every (i, j) (").f("Tc Nq (2d + 2)").t(" elements), ")
      .integer(tr.problem.bytes_per_elem, src_problem(n, "bytes_per_elem")).t(" B each.");
  b.ask_integer("reads", "How many bytes did this run read from HBM in total?", tr.totals.hbm_read_bytes,
                src_total(n, "hbm_read_bytes"), "The Memory panel: the HBM read total (or the fa1 column of its table).",
                Panel::memory);
  b.bytes()
      .mistake(tr.totals.hbm_write_bytes, "that is the bytes written; the question asks the bytes read")
      .mistake(tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes, "that is read and written together");
  return b.finish();
}

Chapter chapter_io_complexity(uint64_t seed) {
  ChapterBuilder b("io-complexity", seed);
  const RunDecl rd = tiny_run(seed);
  const Trace& tr = b.add_run(rd);
  const RunDecl rs = standard_twin(rd, "tiny_standard");
  const Trace& ts = b.add_run(rs);
  // The M sweep on a problem large enough for the block sizes to matter.
  RunDecl mid{"mid", {}, false, false, ""};
  mid.spec.nq = mid.spec.nk = 64 + 32 * int64_t((seed - 1) % 3);
  mid.spec.d = 16;
  mid.spec.seed = seed;
  const int64_t Ms[] = {256, 512, 1024, 2048};
  std::vector<const Trace*> sweep;
  for (int64_t M : Ms) {
    RunDecl v = variant(mid, "mid_M" + std::to_string(M), M);
    v.record = M == Ms[3];  // the sweep's and the budget's pages stand on the largest M's run
    sweep.push_back(&b.add_run(v));
  }
  RunDecl ms = mid;
  ms.name = "mid_standard";
  ms.spec.schedule = baseline_schedule().id;  // standard attention
  const Trace& mst = b.add_run(ms);
  b.problem_text("the tiny problem " + sizes_text(rd.spec) + " and Nq = Nk = " + std::to_string(mid.spec.nq) +
                 ", d = 16 for the sweep, seed " + std::to_string(seed));
  const std::string n = rd.name;
  const int bpe = tr.problem.bytes_per_elem;
  const TrafficForm cf = fa1_traffic(rd.spec.nq, rd.spec.nk, rd.spec.d, tr.tiling.Tc);
  Scene s1 = scene(n, int64_t(tr.steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  s1.anchor = Anchor::whole_run;  // "every schedule beside its closed form"
  b.page("Algorithm 1's bytes against standard attention's", s1)
      .t("Algorithm 1 reads K and V once (").f("2 Nk d").t(") but Q_i, O_i, l_i, m_i at every (i, j) (")
      .f("Tc Nq (2d + 2)").t("), and writes O_i, l_i, m_i at every (i, j). In the tiny problem it read ")
      .integer(tr.totals.hbm_read_bytes, src_total(n, "hbm_read_bytes")).t(" B (closed form ")
      .integer(cf.read_bytes(bpe), src_closed(n, "fa1", "read_bytes")).t(" B) and wrote ")  // registry-exempt: a chapter about this schedule
      .integer(tr.totals.hbm_write_bytes, src_total(n, "hbm_write_bytes")).t(" B (closed form ")
      .integer(cf.write_bytes(bpe), src_closed(n, "fa1", "write_bytes")).t(" B). Standard attention moved ")  // registry-exempt: a chapter about this schedule
      .integer(ts.totals.hbm_read_bytes + ts.totals.hbm_write_bytes, src_total(rs.name, "bytes"))
      .t(" B in all, so Algorithm 1 moved ")
      .num(double(tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes) / double(ts.totals.hbm_read_bytes + ts.totals.hbm_write_bytes),
           src_total(n, "bytes") + " / " + src_total(rs.name, "bytes"))
      .t(" times as many. With N this small the two are close: standard attention's S and P grow as N^2, Algorithm "
         "1's repeated reads of Q_i, O_i, l_i, m_i as Tc N, and Tc falls as M grows. The Memory panel's table shows "
         "every schedule beside its closed form.");
  b.ask_integer("fa1-bytes", "How many bytes did Algorithm 1 move in all (read + written)?",
                tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes, src_total(n, "bytes"),
                "Add the two totals on this page, or read the Memory panel's fa1 column.", Panel::memory);
  b.bytes()
      .mistake(tr.totals.hbm_read_bytes, "that is only the bytes read; add the bytes written")
      .mistake(tr.totals.hbm_write_bytes, "that is only the bytes written; add the bytes read")
      .mistake(ts.totals.hbm_read_bytes + ts.totals.hbm_write_bytes, "that is standard attention's bytes");

  const Scene s2 = scene("mid_M2048", int64_t(sweep[3]->steps.size()), CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("The M sweep: Theta(N^2 d^2 / M) against Theta(N d + N^2)", s2)
      .t("Theorem 2: Algorithm 1 needs Theta(N^2 d^2 / M) HBM accesses, standard attention Theta(N d + N^2). With Nq "
         "= Nk = ").integer(mid.spec.nq, src_problem("mid_M256", "nq")).t(", d = ").integer(mid.spec.d, src_problem("mid_M256", "d"))
      .t(", the simulator's reads for growing M:\n");
  for (size_t k = 0; k < sweep.size(); ++k) {
    const std::string rn = "mid_M" + std::to_string(Ms[k]);
    b.t("  M = ").integer(Ms[k], src_problem(rn, "M")).t(": Bc = ").integer(sweep[k]->tiling.Bc, src_tiling(rn, "Bc"))
        .t(", Tc = ").integer(sweep[k]->tiling.Tc, src_tiling(rn, "Tc")).t(", reads ")
        .integer(sweep[k]->totals.hbm_read_bytes, src_total(rn, "hbm_read_bytes")).t(" B\n");
  }
  b.t("Standard attention reads ").integer(mst.totals.hbm_read_bytes, src_total(ms.name, "hbm_read_bytes"))
      .t(" B whatever M is. Each doubling of M halves Tc, and with it the repeated reads of Q, O, l, m.");
  b.ask_number("sweep-ratio",
               "By what factor do Algorithm 1's reads drop from the second-largest M of the sweep to the largest?",
               double(sweep[2]->totals.hbm_read_bytes) / double(sweep[3]->totals.hbm_read_bytes),
               src_total("mid_M1024", "hbm_read_bytes") + " / " + src_total("mid_M2048", "hbm_read_bytes"), 0.01,
               "Divide the two reads listed on this page.", Panel::none);
  b.times().inverse("the larger M's reads over the smaller's");

  // At real scale: the H200's shared memory per SM, d = 64 and 128, N up to 16k, from the closed
  // forms and the tiling rule alone (no run: N = 16384 is past what a recorded trace is for).
  {
    const GpuSpec& g = find_gpu("h200");
    const int64_t Mh = g.smem_per_sm_bytes / 4;  // float32 words
    const std::string Msrc = "device.h200.smem_per_sm_bytes / 4";
    auto tiling_at = [&](int64_t N, int64_t d) { return spec_tiling(sizes_spec(N, N, d, Mh)); };  // sizes only: no inputs made
    auto scale_src = [&](int64_t N, int64_t d, const std::string& f) {
      return "scale." + std::to_string(N) + "." + std::to_string(d) + "." + std::to_string(Mh) + "." + f;
    };
    // The page stands on the IO explorer at the sizes it talks about (the tiny run stays loaded).
    Scene s4 = scene(n, int64_t(tr.steps.size()), CentreView::io_explorer, Panel::explorer, {});
    s4.io_n = 16384;
    s4.io_d = 64;
    s4.io_M = Mh;
    b.page("At real scale: the H200's SRAM", s4)
        .t("The tiny problem's M hides the point. An H200 SM has ").num(double(g.smem_per_sm_bytes) / 1024.0, "device.h200.smem_per_sm_bytes / 1024")
        .t(" KiB of shared memory: M = ").integer(Mh, Msrc).t(" float32 words. Step by step for d = ")
        .integer(64, "64").t(": Bc = ceil(M / 4d) = ceil(").integer(Mh, Msrc).t(" / ").integer(256, "4 * 64").t(") = ")
        .integer(tiling_at(16384, 64).Bc, scale_src(16384, 64, "Bc")).t(", Br = min(Bc, d) = ")
        .integer(tiling_at(16384, 64).Br, scale_src(16384, 64, "Br")).t(", and for N = ").integer(16384, "16384")
        .t(", Tc = ceil(N / Bc) = ").integer(tiling_at(16384, 64).Tc, scale_src(16384, 64, "Tc"))
        .t(". Standard attention writes and reads S and P, about ").f("4 N^2").t(" elements; Algorithm 1 reads Q_i, O_i, "
           "l_i, m_i and writes O_i, l_i, m_i at every (i, j), about ").f("Tc N (3d + 4) ~ 12 N^2 d^2 / M")
        .t(" with ").f("Tc ~ 4 N d / M").t(". Their ratio is about ").f("M / 3d^2").t(": ")
        .num(double(Mh) / (3.0 * 64 * 64), Msrc + " / ( 3 * 64 * 64 )").t(" for d = ").integer(64, "64").t(" and ")
        .num(double(Mh) / (3.0 * 128 * 128), Msrc + " / ( 3 * 128 * 128 )").t(" for d = ").integer(128, "128")
        .t(" once N is large (at small N the ").f("4 N d").t(" elements of Q, K, V and O and the rounding up of Tc "
           "weigh in, and the ratio is lower; the table shows it approach): the larger the SRAM against d^2, the "
           "more tiling saves. The closed forms, in MB (float32):\n");
    for (int64_t d : {64, 128})
      for (int64_t N : {1024, 4096, 16384}) {
        const Tiling Ts = tiling_at(N, d);
        const TrafficForm a = fa1_traffic(N, N, d, Ts.Tc), s = standard_traffic(N, N, d);  // registry-exempt: a chapter about this schedule
        b.t("  N = ").integer(N, scale_src(N, d, "N")).t(", d = ").integer(d, scale_src(N, d, "d")).t(": ");
        if (d == 64) b.t("Tc = ").integer(Ts.Tc, scale_src(N, d, "Tc")).t(", ");  // d = 128's Tc is asked
        b.t("Algorithm 1 ")
            .num(double(a.read_bytes(4) + a.write_bytes(4)) / 1e6, scale_src(N, d, "fa1_bytes") + " / 1e6")
            .t(" MB, standard ").num(double(s.read_bytes(4) + s.write_bytes(4)) / 1e6, scale_src(N, d, "standard_bytes") + " / 1e6")
            .t(" MB\n");
      }
    const Tiling T128 = tiling_at(16384, 128);
    b.ask_integer("tc-128", "For d = 128 and N = 16384 on the H200, what is Tc?", T128.Tc, scale_src(16384, 128, "Tc"),
                  "Bc = ceil(M / 4d) with d = 128, then Tc = ceil(N / Bc).", Panel::none);
    b.mistake(double(16384) / double(T128.Bc) , "Tc is rounded up: ceil(N / Bc)", 0.999)
        .mistake(tiling_at(16384, 64).Tc, "that is Tc for d = 64; with d = 128, Bc is half as large");
    const TrafficForm a64 = fa1_traffic(16384, 16384, 64, tiling_at(16384, 64).Tc), s64 = standard_traffic(16384, 16384, 64);  // registry-exempt: a chapter about this schedule
    b.ask_number("scale-ratio", "At N = 16384, d = 64, how many times the bytes of Algorithm 1 does standard attention move?",
                 double(s64.read_bytes(4) + s64.write_bytes(4)) / double(a64.read_bytes(4) + a64.write_bytes(4)),
                 scale_src(16384, 64, "standard_bytes") + " / " + scale_src(16384, 64, "fa1_bytes"), 0.01,
                 "Divide the two MB figures of that line.", Panel::none);
    b.times().inverse("Algorithm 1's over standard attention's");

    // The explorer: the student moves N, d and M; the question asks what d does to the ratio.
    Scene s5 = s4;
    s5.io_d = 128;
    const TrafficForm a128 = fa1_traffic(16384, 16384, 128, T128.Tc), s128 = standard_traffic(16384, 16384, 128);  // registry-exempt: a chapter about this schedule
    const double r64 = double(s64.read_bytes(4) + s64.write_bytes(4)) / double(a64.read_bytes(4) + a64.write_bytes(4));
    const double r128 = double(s128.read_bytes(4) + s128.write_bytes(4)) / double(a128.read_bytes(4) + a128.write_bytes(4));
    const std::string r64_src = scale_src(16384, 64, "standard_bytes") + " / " + scale_src(16384, 64, "fa1_bytes");
    const std::string r128_src = scale_src(16384, 128, "standard_bytes") + " / " + scale_src(16384, 128, "fa1_bytes");
    b.page("The IO explorer: move N, d and M", s5)
        .t("The centre draws the HBM bytes of standard attention, Algorithm 1 and FlashAttention-2 against N, from the "
           "closed forms, with Theorem 2's two orders ").f("(constant 1)").t(" dashed beside them; the sliders move N, d and M, and "
           "the closed forms with their numbers put in are listed under the figure. In the terminal the table below "
           "lists the same for this page's d and M (").f("flashstep learn io-complexity --d 128 --M 64KiB")
        .t(" prints it for others).\n\nOn log axes the curves are straight lines: standard attention's ")
        .f("4N^2").t(" and Algorithm 1's ").f("Tc N (3d + 4)").t(" with ").f("Tc ~ 4Nd / M")
        .t(" both grow as N^2, so their ratio approaches ").f("M / 3d^2").t(" as N grows. Doubling d halves Bc, "
           "doubles Tc and makes each (i, j) move twice the elements: the ratio falls about four times. At N = ")
        .integer(16384, "16384").t(" it is ").num(r64, r64_src).t(" for d = ").integer(64, "64").t(" and ")
        .num(r128, r128_src).t(" for d = ").integer(128, "128")
        .t(". FlashAttention-2 removes Algorithm 1's round trips of O, l and m but reads K and V once per Q block, ")
        .f("2 Tr N d").t(" with ").f("Tr = ceil(N / Br)").t(": with Br = min(Bc, d) that is ").f("2 N^2 d / Br")
        .t(" elements, about ").f("2 N^2").t(" when Br = d. Whether that is more or less than Algorithm 1's depends on d "
           "and M: compare the last columns of the two tables, or move the sliders.");
    b.ask_number("ratio-d", "By what factor does the ratio standard / Algorithm 1 at N = 16384 fall when d goes from 64 "
                 "to 128 (same M)?",
                 r64 / r128, "( " + r64_src + " ) / ( " + r128_src + " )", 0.01,
                 "Divide the two ratios on this page (or the std/Alg1 column at N = 16384 of the two tables).",
                 Panel::explorer);
    b.times().inverse("the d = 128 ratio over the d = 64 ratio");
  }

  // The budget challenge: the paper's block sizes at the largest M meet it; the run's M does not.
  const int64_t max_M = Ms[3];
  const Trace& best = *sweep[3];
  const int64_t budget = best.totals.hbm_read_bytes + 1;
  const Scene s3 = scene("mid_M2048", 0, CentreView::tiles, Panel::memory, {Panel::memory});
  b.page("Budget challenge", s3)
      .t("Pick Br, Bc and M (at most ").integer(max_M, src_problem("mid_M2048", "M"))
      .t(" elements) for the sweep's problem so that Algorithm 1 reads fewer than ")
      .integer(budget, src_total("mid_M2048", "hbm_read_bytes") + " + 1")
      .t(" B from HBM. The four tiles must fit: ").f("2 (Br + Bc) d").t(" elements at most M rounded up to whole tile "
         "rows. The simulator runs your choice and counts the bytes. Type it as Br,Bc,M.");
  char answer[64];
  std::snprintf(answer, sizeof answer, "%lld,%lld,%lld", (long long)best.tiling.Br, (long long)best.tiling.Bc,
                (long long)max_M);
  RunDecl q = mid;
  q.name = "mid";
  b.ask_budget("budget", "Your Br,Bc,M:", q, budget, max_M, answer,
               "Reads fall as Tc = ceil(Nk / Bc) falls: make Bc as large as the tiles allow at the largest M.",
               Panel::memory);
  return b.finish();
}

}  // namespace flashstep::course
