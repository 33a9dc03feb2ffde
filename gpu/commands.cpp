// The GPU subcommands: verify (CPU trace against the GPU, per j), gpu (run and write .npy),
// bench-gpu (Algorithm 1 against standard attention, and the Bc sweep of Figure 2, middle).
//
// Tolerance rule (verify):
//   tiled float32 on the CPU vs tiled float32 on the GPU: max_rel <= 5e-6 for O, l and m, at
//     every j and at the end. Same algorithm, same blocks, same update functions; only the
//     summation order inside a dot product and the exp implementation differ (a few ulp).
//     fa1 is compared after every j (snapshots); fa2 and standard at the end only (O and lse):
//     fa2's per-j state never leaves the chip, so there is nothing in HBM to compare per j.
//   each of them vs the float64 reference: max_rel <= 1e-5 for O and lse (masks and dropout
//     included: the reference takes the same mask and Philox mask).
//   --dtype fp16 / bf16 (fa2): both sides round the same inputs the same way and compute in
//     float32, so O differs only where the float32 values fall on different sides of a
//     rounding boundary: at most one ulp of the stored type, max_rel <= 2^-10 (fp16) or 2^-7
//     (bf16); lse is float32 and keeps 5e-6. Against float64 the error is the storage
//     type's, reported but not judged.
//   max_rel = max|x - ref| / max|ref| (core/reference.h).
#include "app/commands.h"
#include "core/closed_form.h"
#include "core/export.h"
#include "core/npy.h"
#include "core/reference.h"
#include "gpu/backend.h"
#include "gpu/device_mask.h"
#include "gpu/trace_align.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flashstep {

namespace {

// The benchmark's (B, H, N, d): B x H x N = rows (at least one head), up to 8 heads per batch.
gpu::Shape bench_shape(int64_t n, int64_t d, int64_t rows) {
  const int64_t heads = std::max<int64_t>(1, rows / n);
  gpu::Shape s;
  s.H = std::min<int64_t>(heads, 8);
  s.B = heads / s.H;
  s.nq = s.nk = n;
  s.d = d;
  return s;
}

constexpr double kTiledTol = 5e-6;
constexpr double kFloat64Tol = 1e-5;

Mat to_mat(const std::vector<float>& v, int64_t rows, int64_t cols, int64_t offset = 0) {
  Mat m(rows, cols);
  std::copy(v.begin() + offset, v.begin() + offset + rows * cols, m.data());
  return m;
}

ErrorStats diff(const Mat& gpu, const Mat& cpu) { return compare(gpu, cpu.cast<double>().eval()); }

const char* verdict(bool ok) { return ok ? "ok" : "OVER"; }

// One ulp of the storage type relative to the value (fp32: the tiled tolerance).
double storage_tol(Dtype t, double tiled_tol) {
  switch (t) {
    case Dtype::fp16: return std::ldexp(1.0, -10);
    case Dtype::bf16: return std::ldexp(1.0, -7);
    default: return tiled_tol;
  }
}

Vec to_vec(const std::vector<float>& v, int64_t n) { return Eigen::Map<const Vec>(v.data(), n); }

// lse as a vector (compare() counts -inf on both sides, a fully masked row, as agreement).
ErrorStats diff_lse(const std::vector<float>& gpu, const Vec& cpu) {
  return compare(to_vec(gpu, cpu.size()), cpu.cast<double>().eval());
}
ErrorStats diff_lse_ref(const std::vector<float>& gpu, const VecD& ref) { return compare(to_vec(gpu, ref.size()), ref); }

// verify for fa2 and standard: the final O and lse of the CPU engine and the GPU.
int run_verify_final(const Problem& p, const Tiling& t, int variant, double tiled_tol) {
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  const gpu::Features f = gpu::features_of(p);
  gpu::check_features(f, s);
  const bool fa2 = p.schedule == Schedule::fa2;
  if (!fa2 && p.dtype != Dtype::fp32)
    throw InputError("--dtype fp16/bf16 on the GPU is implemented for --schedule fa1 and fa2; "
                     "the standard-attention baseline runs in float32 (use --dtype fp32)");
  const int v = fa2 ? gpu::resolve_fa2_variant(variant, t, p.d) : 0;  // fail fast
  RunOptions opt;
  opt.record = false;
  const Trace tr = run_problem(p, t, opt);
  gpu::Result g;
  if (fa2) {
    gpu::Fa2Options go;
    go.variant = v;
    go.features = f;
    g = gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, go);
  } else {
    g = gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, f);
  }
  const gpu::DeviceInfo info = gpu::device_info();
  const double o_tol = storage_tol(p.dtype, tiled_tol);
  std::printf("verify     %s, CPU engine vs GPU (%s%s), final state\n",
              fa2 ? "FlashAttention-2" : "standard attention", info.name.c_str(),
              fa2 ? (", fa2 variant " + std::to_string(g.variant)).c_str() : "");
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype));
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  if (fa2)
    std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M,
                (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("note       %s\n", fa2 ? "fa2 keeps O_i, l_i, m_i on chip for the whole inner loop: there is "
                                       "no per-j state in HBM, so only the final O and lse are compared"
                                     : "standard attention has no tiles: final O and lse compared");
  std::printf("tolerance  CPU vs GPU: O max rel <= %.3g%s, lse <= %.0e; each vs float64 <= %.0e%s\n\n",
              o_tol, p.dtype == Dtype::fp32 ? "" : " (one ulp of the storage type)", tiled_tol,
              kFloat64Tol, p.dtype == Dtype::fp32 ? "" : " (fp32 only; reported for 16-bit types)");
  bool ok = true;
  for (float x : g.O)
    if (std::isnan(x)) ok = false;
  for (float x : g.lse)
    if (std::isnan(x)) ok = false;
  if (!ok) std::printf("GPU output has NaN elements (unwritten, or a masked row gone wrong)\n");
  const ErrorStats fo = diff(to_mat(g.O, p.nq, p.d), tr.O);
  const ErrorStats fl = diff_lse(g.lse, tr.lse);
  int64_t same = 0;
  for (int64_t k = 0; k < p.nq * p.d; ++k) same += g.O[size_t(k)] == tr.O.data()[k];
  const bool final_ok = fo.max_rel <= o_tol && fl.max_rel <= tiled_tol;
  ok = ok && final_ok;
  std::printf("final      GPU vs CPU:         O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
              fo.max_abs, fo.max_rel, fl.max_abs, fl.max_rel, verdict(final_ok));
  std::printf("           O elements bit-identical: %lld of %lld\n", (long long)same, (long long)(p.nq * p.d));
  if (reference_affordable(p.nq, p.nk, p.d)) {
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    const ErrorStats go_ = compare(to_mat(g.O, p.nq, p.d), ref.O), gl = diff_lse_ref(g.lse, ref.lse);
    Vec clse = tr.lse;
    const ErrorStats co = compare(tr.O, ref.O),
                     cl = diff_lse_ref(std::vector<float>(clse.data(), clse.data() + clse.size()), ref.lse);
    const bool judged = p.dtype == Dtype::fp32;
    const bool g_ok = !judged || (go_.max_rel <= kFloat64Tol && gl.max_rel <= kFloat64Tol);
    const bool c_ok = !judged || (co.max_rel <= kFloat64Tol && cl.max_rel <= kFloat64Tol);
    ok = ok && g_ok && c_ok;
    std::printf("           GPU vs float64:     O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
                go_.max_abs, go_.max_rel, gl.max_abs, gl.max_rel, judged ? verdict(g_ok) : "(reported)");
    std::printf("           CPU vs float64:     O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
                co.max_abs, co.max_rel, cl.max_abs, cl.max_rel, judged ? verdict(c_ok) : "(reported)");
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

int run_verify(const RunFlags& rf, int variant, double tiled_tol) {
  ProblemSpec spec = rf.to_spec();
  const Problem p = make_problem(spec);
  if (p.schedule != Schedule::fa1) {
    const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, rf.br, rf.bc);
    return run_verify_final(p, t, variant, tiled_tol);
  }
  const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, rf.br, rf.bc);
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  const int v = gpu::resolve_fa1_variant(variant, t, p.d);  // fail fast, before the CPU run

  RunOptions opt;
  opt.record = true;
  Trace tr;
  bool recorded = true;
  try {
    tr = run_problem(p, t, opt);
  } catch (const InputError& e) {  // the trace would be too large: compare final state only
    recorded = false;
    opt.record = false;
    tr = run_problem(p, t, opt);
    std::printf("note: %s; comparing the final state only\n", e.what());
  }
  gpu::Fa1Options go;
  go.variant = v;
  go.snapshots = recorded;
  go.features = gpu::features_of(p);
  const gpu::Result g = gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, go);
  const gpu::DeviceInfo info = gpu::device_info();

  std::printf("verify     Algorithm 1, CPU step engine vs GPU (%s, fa1 variant %d)\n",
              info.name.c_str(), g.variant);
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype));
  std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M,
              (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  // fa1 rounds O to the storage type at every j: a one-ulp disagreement at one j carries into
  // the next update, so 16-bit O gets two ulp.
  const bool judged = p.dtype == Dtype::fp32;
  const double o_tol = judged ? tiled_tol : 2 * storage_tol(p.dtype, tiled_tol);
  std::printf("tolerance  CPU tiled vs GPU tiled max rel <= %.0e (O: %.3g); each vs float64 <= %.0e%s\n\n",
              tiled_tol, o_tol, kFloat64Tol, judged ? "" : " (fp32 only; reported for 16-bit types)");

  bool ok = true;
  double worst[3] = {0, 0, 0};
  if (recorded) {
    const std::vector<size_t> at = gpu::fa1_steps_after_each_j(tr);
    Cursor c(tr);
    const bool print_all = t.Tc <= 64;
    std::printf("%6s | %10s %10s | %10s %10s | %10s %10s |\n", "j", "O abs", "O rel", "l abs",
                "l rel", "m abs", "m rel");
    for (int64_t j = 0; j < t.Tc; ++j) {
      c.seek(at[size_t(j)]);
      const gpu::Snapshot& sn = g.snapshots[size_t(j)];
      const ErrorStats eo = diff(to_mat(sn.O, p.nq, p.d), c.hbm(Tensor::O));
      const ErrorStats el = diff(to_mat(sn.l, p.nq, 1), c.hbm(Tensor::l));
      const ErrorStats em = diff(to_mat(sn.m, p.nq, 1), c.hbm(Tensor::m));
      worst[0] = std::max(worst[0], eo.max_rel);
      worst[1] = std::max(worst[1], el.max_rel);
      worst[2] = std::max(worst[2], em.max_rel);
      const bool jok = eo.max_rel <= o_tol && el.max_rel <= tiled_tol && em.max_rel <= tiled_tol;
      ok = ok && jok;
      if (print_all || j < 4 || j >= t.Tc - 4 || !jok)
        std::printf("%6lld | %10.3g %10.3g | %10.3g %10.3g | %10.3g %10.3g | %s\n", (long long)j,
                    eo.max_abs, eo.max_rel, el.max_abs, el.max_rel, em.max_abs, em.max_rel,
                    verdict(jok));
      else if (j == 4)
        std::printf("%6s | (rows for j = 4 .. %lld not printed; each within tolerance unless listed)\n",
                    "...", (long long)(t.Tc - 5));
    }
    std::printf("worst over j: O rel %.3g, l rel %.3g, m rel %.3g\n\n", worst[0], worst[1], worst[2]);
  }

  // Final state.
  const ErrorStats fo = diff(to_mat(g.O, p.nq, p.d), tr.O);
  const ErrorStats fl = diff_lse(g.lse, tr.lse);
  const bool final_ok = fo.max_rel <= o_tol && fl.max_rel <= tiled_tol;
  ok = ok && final_ok;
  std::printf("final      GPU vs CPU tiled:   O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
              fo.max_abs, fo.max_rel, fl.max_abs, fl.max_rel, verdict(final_ok));
  if (recorded) {
    Cursor c(tr);
    c.run_to_end();
    const ErrorStats el = diff(to_mat(g.l, p.nq, 1), c.hbm(Tensor::l));
    const ErrorStats em = diff(to_mat(g.m, p.nq, 1), c.hbm(Tensor::m));
    const bool lm_ok = el.max_rel <= tiled_tol && em.max_rel <= tiled_tol;
    ok = ok && lm_ok;
    std::printf("           GPU vs CPU tiled:   l abs %.3g rel %.3g; m abs %.3g rel %.3g  %s\n",
                el.max_abs, el.max_rel, em.max_abs, em.max_rel, verdict(lm_ok));
  }
  if (reference_affordable(p.nq, p.nk, p.d)) {
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    const ErrorStats go_ = compare(to_mat(g.O, p.nq, p.d), ref.O), gl = diff_lse_ref(g.lse, ref.lse);
    const ErrorStats co = compare(tr.O, ref.O),
                     cl = diff_lse_ref(std::vector<float>(tr.lse.data(), tr.lse.data() + tr.lse.size()), ref.lse);
    gpu::Features sf = go.features;
    sf.dtype = Dtype::fp32;  // the standard baseline is float32 on the GPU
    const gpu::Result st = gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, sf);
    const ErrorStats so = compare(to_mat(st.O, p.nq, p.d), ref.O), sl = diff_lse_ref(st.lse, ref.lse);
    const bool g_ok = !judged || (go_.max_rel <= kFloat64Tol && gl.max_rel <= kFloat64Tol);
    const bool c_ok = !judged || (co.max_rel <= kFloat64Tol && cl.max_rel <= kFloat64Tol);
    const bool s_ok = so.max_rel <= kFloat64Tol && sl.max_rel <= kFloat64Tol;
    ok = ok && g_ok && c_ok && s_ok;
    std::printf("           GPU fa1 vs float64: O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
                go_.max_abs, go_.max_rel, gl.max_abs, gl.max_rel, judged ? verdict(g_ok) : "(reported)");
    std::printf("           CPU fa1 vs float64: O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
                co.max_abs, co.max_rel, cl.max_abs, cl.max_rel, judged ? verdict(c_ok) : "(reported)");
    std::printf("           GPU standard (float32) vs float64: O abs %.3g rel %.3g; lse abs %.3g rel %.3g  %s\n",
                so.max_abs, so.max_rel, sl.max_abs, sl.max_rel, verdict(s_ok));
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// flashstep gpu: inputs from the run flags (2-D) or from .npy files, 2-D (N, d) or 4-D (B, H, N, d).
struct Inputs {
  gpu::Shape s;
  int rank = 2;
  std::vector<float> Q, K, V;
  float scale = 1.0f;
  int64_t M = 0;
  gpu::Features features;  // mask, dropout, dtype from the run flags
};

// The run flags' mask, dropout, seed and dtype; kv_lens (one per batch entry) from --kv-lens.
gpu::Features features_of_spec(const ProblemSpec& spec, const std::vector<int64_t>& kv_lens) {
  gpu::Features f;
  f.causal = spec.causal;
  f.window_left = spec.window_left;
  f.window_right = spec.window_right;
  f.kv_len = spec.kv_len;
  f.kv_lens = kv_lens;
  f.dropout = float(spec.dropout);
  f.seed = spec.seed;
  f.dtype = spec.dtype;
  return f;
}

void shape_of(const NpyArray& a, const char* name, int64_t& B, int64_t& H, int64_t& N, int64_t& d) {
  if (a.shape.size() == 2) {
    B = H = 1;
    N = a.shape[0];
    d = a.shape[1];
  } else if (a.shape.size() == 4) {
    B = a.shape[0];
    H = a.shape[1];
    N = a.shape[2];
    d = a.shape[3];
  } else {
    throw InputError(std::string(name) + " must be 2-D (N, d) or 4-D (B, H, N, d); it has " +
                     std::to_string(a.shape.size()) + " dimensions");
  }
  for (float x : a.data)
    if (!std::isfinite(x)) throw InputError(std::string(name) + " contains NaN or Inf");
}

Inputs load_inputs(const RunFlags& rf, const std::vector<int64_t>& kv_lens) {
  ProblemSpec spec = rf.to_spec();
  Inputs in;
  if (!kv_lens.empty() && spec.kv_len >= 0)
    throw InputError("give --kv-len (one length) or --kv-lens (one per batch entry), not both");
  in.features = features_of_spec(spec, kv_lens);
  if (spec.q_path.empty()) {
    const Problem p = make_problem(spec);
    in.s.nq = p.nq;
    in.s.nk = p.nk;
    in.s.d = p.d;
    in.Q.assign(p.Q.data(), p.Q.data() + p.Q.size());
    in.K.assign(p.K.data(), p.K.data() + p.K.size());
    in.V.assign(p.V.data(), p.V.data() + p.V.size());
    in.scale = p.scale;
    in.M = p.M;
    return in;
  }
  if (spec.k_path.empty() || spec.v_path.empty())
    throw InputError("give all three of --q, --k and --v, or none");
  NpyArray q = read_npy(spec.q_path), k = read_npy(spec.k_path), v = read_npy(spec.v_path);
  int64_t qb, qh, qn, qd, kb, kh, kn, kd, vb, vh, vn, vd;
  shape_of(q, "Q", qb, qh, qn, qd);
  shape_of(k, "K", kb, kh, kn, kd);
  shape_of(v, "V", vb, vh, vn, vd);
  if (q.shape.size() != k.shape.size() || q.shape.size() != v.shape.size() || kb != qb ||
      vb != qb || kh != qh || vh != qh || kd != qd || vd != qd || vn != kn)
    throw InputError("mismatched shapes: need Q (B, H, Nq, d), K and V (B, H, Nk, d), all 2-D or all 4-D");
  in.rank = int(q.shape.size());
  in.s = {qb, qh, qn, kn, qd};
  spec.q_path = spec.k_path = spec.v_path = "";
  spec.nq = qn;
  spec.nk = kn;
  spec.d = qd;
  spec.kv_len = -1;  // checked against this Nk by the backend (kv_len may exceed the default Nk)
  validate_sizes(spec);
  in.scale = spec.scale ? float(*spec.scale) : float(1.0 / std::sqrt(double(qd)));
  in.M = spec.M;
  in.Q = std::move(q.data);
  in.K = std::move(k.data);
  in.V = std::move(v.data);
  return in;
}

int run_gpu(const RunFlags& rf, int variant, const std::string& out_o, const std::string& out_lse,
            const std::vector<int64_t>& kv_lens) {
  const Inputs in = load_inputs(rf, kv_lens);
  const Schedule sched = parse_schedule(rf.schedule);
  const gpu::Shape& s = in.s;
  gpu::Result r;
  Tiling t;
  if (sched == Schedule::fa1) {
    t = make_tiling(s.nq, s.nk, s.d, in.M, rf.br, rf.bc);
    gpu::Fa1Options o;
    o.variant = variant;
    o.features = in.features;
    r = gpu::fa1_forward(in.Q.data(), in.K.data(), in.V.data(), s, in.scale, t, o);
  } else if (sched == Schedule::fa2) {
    t = make_tiling(s.nq, s.nk, s.d, in.M, rf.br, rf.bc);
    gpu::Fa2Options o;
    o.variant = variant;
    o.features = in.features;
    r = gpu::fa2_forward(in.Q.data(), in.K.data(), in.V.data(), s, in.scale, t, o);
  } else {
    r = gpu::standard_forward(in.Q.data(), in.K.data(), in.V.data(), s, in.scale, in.features);
  }
  for (float x : r.O)
    if (std::isnan(x)) throw std::runtime_error("GPU output has unwritten (NaN) elements");
  std::vector<int64_t> o_shape = {s.nq, s.d}, l_shape = {s.nq};
  if (in.rank == 4) {
    o_shape = {s.B, s.H, s.nq, s.d};
    l_shape = {s.B, s.H, s.nq};
  }
  if (!out_o.empty()) write_npy(out_o, r.O.data(), o_shape);
  if (!out_lse.empty()) write_npy(out_lse, r.lse.data(), l_shape);
  const gpu::DeviceInfo info = gpu::device_info();
  const char* what = sched == Schedule::fa1 ? "Algorithm 1" : sched == Schedule::fa2 ? "FlashAttention-2"
                                                                                  : "standard attention";
  std::printf("gpu        %s on %s, dtype %s\n", what, info.name.c_str(), dtype_name(in.features.dtype));
  std::printf("shape      B = %lld, H = %lld, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g\n",
              (long long)s.B, (long long)s.H, (long long)s.nq, (long long)s.nk, (long long)s.d, in.scale);
  if (sched != Schedule::standard)
    std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld, %s variant %d\n",
                (long long)in.M, (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc,
                schedule_name(sched), r.variant);
  std::printf("device mem %.3f MiB allocated\n", r.device_bytes / 1048576.0);
  if (!out_o.empty()) std::printf("wrote      %s\n", out_o.c_str());
  if (!out_lse.empty()) std::printf("wrote      %s\n", out_lse.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// flashstep bench-gpu
struct BenchFlags {
  std::vector<int64_t> sizes = {1024, 2048, 4096, 8192, 16384};
  std::vector<int64_t> dims = {64, 128};
  std::string M = "128KiB";
  int64_t rows = 131072;  // B * H * N: the batch that fills the GPU
  int reps = 20, warmup = 3;
  int64_t sweep_n = 4096, sweep_d = 64;
  bool no_sweep = false, no_standard = false, no_fa1 = false, as_json = false;
  bool causal = false;          // fa2 with a causal mask (fully masked blocks skipped)
  std::string dtype = "fp32";   // fa2's storage type
  std::string json_file;  // also write the JSON here (the table still prints)
  int variant = 0;
};

int64_t fa1_bytes_predicted(int64_t heads, int64_t n, int64_t d, int64_t Tc) {
  const TrafficForm f = fa1_traffic(n, n, d, Tc);
  return 4 * heads * (f.read_elems + f.write_elems);
}
int64_t standard_bytes_predicted(int64_t heads, int64_t n, int64_t d) {
  const TrafficForm f = standard_traffic(n, n, d);
  return 4 * heads * (f.read_elems + f.write_elems);
}

// Fraction of the N x N scores a mask keeps (for FLOP counts of masked runs).
double kept_fraction(const gpu::Features& f, int64_t n) {
  gpu::KeyMask m;
  m.causal = f.causal;
  m.window_left = f.window_left;
  m.window_right = f.window_right;
  m.kv_len = f.kv_len;
  double kept = 0;
  for (int64_t r = 0; r < n; ++r) kept += double(std::max<int64_t>(0, m.hi(r, n) - m.lo(r) + 1));
  return kept / (double(n) * double(n));
}

int run_bench(const BenchFlags& bf) {
  if (bf.reps < 20) throw InputError("--reps must be at least 20 (the median of 20 or more runs)");
  if (bf.warmup < 1) throw InputError("--warmup must be at least 1");
  gpu::Features f2;  // fa2's options
  f2.causal = bf.causal;
  f2.dtype = parse_dtype(bf.dtype);
  const gpu::DeviceInfo info = gpu::device_info();
  const int64_t M = parse_sram_size(bf.M);
  nlohmann::json rows = nlohmann::json::array(), sweep = nlohmann::json::array();
  if (!bf.as_json) {
    std::printf("bench-gpu on %s (%d SMs, %.0f GiB), float32, CUDA events, %d warm-up runs, median of %d\n",
                info.name.c_str(), info.sm_count, info.total_bytes / 1073741824.0, bf.warmup, bf.reps);
    std::printf("TFLOP/s = 4 B H N^2 d / time; GB/s = HBM bytes the simulator predicts / time; "
                "peak = device memory allocated\n");
    std::printf("fa2: %s storage, %s; its TFLOP/s count the kept scores only\n\n", bf.dtype.c_str(),
                bf.causal ? "causal (fully masked blocks skipped)" : "no mask");
    std::printf("%6s %4s %4s %3s %4s %4s %2s | %9s %8s %9s %9s | %9s %8s %9s %9s | %7s | %9s %8s %2s %9s\n",
                "N", "d", "B", "H", "Br", "Bc", "v", "fa1 ms", "TFLOP/s", "GB/s", "peak MiB", "std ms",
                "TFLOP/s", "GB/s", "peak MiB", "std/fa1", "fa2 ms", "TFLOP/s", "v", "peak MiB");
  }
  for (int64_t d : bf.dims) {
    for (int64_t n : bf.sizes) {
      const gpu::Shape s = bench_shape(n, d, bf.rows);
      const float scale = float(1.0 / std::sqrt(double(d)));
      const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d);
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"flops", flops}};
      double fa1_ms = 0, std_ms = 0;
      if (bf.no_fa1) row["fa1"] = {{"skipped", "--no-fa1"}};
      else try {
        const Tiling t = make_tiling(n, n, d, M);
        const gpu::BenchTiming b = gpu::bench_fa1(s, scale, t, bf.variant, bf.warmup, bf.reps, 7);
        const int64_t bytes = fa1_bytes_predicted(s.heads(), n, d, t.Tc);
        fa1_ms = b.median_ms;
        row["fa1"] = {{"Br", t.Br}, {"Bc", t.Bc}, {"variant", b.variant}, {"median_ms", b.median_ms},
                      {"min_ms", b.min_ms}, {"max_ms", b.max_ms}, {"reps", b.reps},
                      {"tflops", flops / (b.median_ms * 1e9)}, {"hbm_bytes_predicted", bytes},
                      {"gbps", bytes / (b.median_ms * 1e6)}, {"peak_bytes", b.peak_bytes}};
      } catch (const InputError& e) {
        row["fa1"] = {{"skipped", e.what()}};
      }
      if (!bf.no_standard) {
        try {
          const gpu::BenchTiming b = gpu::bench_standard(s, scale, bf.warmup, bf.reps, 7);
          const int64_t bytes = standard_bytes_predicted(s.heads(), n, d);
          std_ms = b.median_ms;
          row["standard"] = {{"median_ms", b.median_ms}, {"min_ms", b.min_ms}, {"max_ms", b.max_ms},
                             {"reps", b.reps}, {"tflops", flops / (b.median_ms * 1e9)},
                             {"hbm_bytes_predicted", bytes}, {"gbps", bytes / (b.median_ms * 1e6)},
                             {"peak_bytes", b.peak_bytes}};
        } catch (const InputError& e) {
          row["standard"] = {{"skipped", e.what()}};
        }
      }
      if (fa1_ms > 0 && std_ms > 0) row["standard_over_fa1"] = std_ms / fa1_ms;
      try {
        const Tiling t = make_tiling(n, n, d, M);
        const gpu::BenchTiming b = gpu::bench_fa2(s, scale, t, bf.variant, f2, bf.warmup, bf.reps, 7);
        const double kept = flops * kept_fraction(f2, n);
        row["fa2"] = {{"Br", t.Br}, {"Bc", t.Bc}, {"variant", b.variant}, {"median_ms", b.median_ms},
                      {"min_ms", b.min_ms}, {"max_ms", b.max_ms}, {"reps", b.reps}, {"dtype", bf.dtype},
                      {"causal", bf.causal}, {"tflops", kept / (b.median_ms * 1e9)}, {"peak_bytes", b.peak_bytes}};
      } catch (const InputError& e) {
        row["fa2"] = {{"skipped", e.what()}};
      }
      rows.push_back(row);
      if (!bf.as_json) {
        std::printf("%6lld %4lld %4lld %3lld", (long long)n, (long long)d, (long long)s.B, (long long)s.H);
        const auto& f = row["fa1"];
        if (f.contains("skipped")) std::printf(" | fa1 skipped: %s", f["skipped"].get<std::string>().c_str());
        else
          std::printf(" %4lld %4lld %2d | %9.3f %8.2f %9.0f %9.1f", (long long)f["Br"].get<int64_t>(),
                      (long long)f["Bc"].get<int64_t>(), f["variant"].get<int>(), f["median_ms"].get<double>(),
                      f["tflops"].get<double>(), f["gbps"].get<double>(),
                      f["peak_bytes"].get<int64_t>() / 1048576.0);
        if (row.contains("standard")) {
          const auto& st = row["standard"];
          if (st.contains("skipped")) std::printf(" | std skipped: %s", st["skipped"].get<std::string>().c_str());
          else
            std::printf(" | %9.3f %8.2f %9.0f %9.1f", st["median_ms"].get<double>(), st["tflops"].get<double>(),
                        st["gbps"].get<double>(), st["peak_bytes"].get<int64_t>() / 1048576.0);
        }
        std::printf(" | %7s", row.contains("standard_over_fa1")
                                   ? std::to_string(row["standard_over_fa1"].get<double>()).substr(0, 5).c_str()
                                   : "-");
        const auto& f2r = row["fa2"];
        if (f2r.contains("skipped")) std::printf(" | fa2 skipped: %s", f2r["skipped"].get<std::string>().c_str());
        else
          std::printf(" | %9.3f %8.2f %2d %9.1f", f2r["median_ms"].get<double>(), f2r["tflops"].get<double>(),
                      f2r["variant"].get<int>(), f2r["peak_bytes"].get<int64_t>() / 1048576.0);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }

  if (!bf.no_sweep) {
    // Figure 2 (middle) of the paper: Bc from 16 up to what shared memory allows, d = 64
    // (--sweep-d), Br = 64, N = sweep_n. M for each point is 4d max(Br, Bc), so the CPU tiling accepts it.
    const int64_t n = bf.sweep_n, d = bf.sweep_d, br = 64;
    const gpu::Shape s = bench_shape(n, d, bf.rows);
    const float scale = float(1.0 / std::sqrt(double(d)));
    if (!bf.as_json)
      std::printf("\nBc sweep (Figure 2 middle): N = %lld, d = %lld, Br = %lld, B x H = %lld\n"
                  "%6s %6s %5s %2s | %14s %9s %8s\n", (long long)n, (long long)d, (long long)br,
                  (long long)s.heads(), "Bc", "Tc", "smem", "v", "HBM GB (sim)", "fa1 ms", "TFLOP/s");
    for (int64_t bc = 16; bc <= 1024; bc *= 2) {
      nlohmann::json pt = {{"Bc", bc}, {"Br", br}, {"n", n}, {"d", d}};
      const Tiling t = make_tiling(n, n, d, 4 * d * std::max(br, bc), br, bc);
      const double bytes = double(fa1_bytes_predicted(s.heads(), n, d, t.Tc));
      pt["hbm_bytes_predicted"] = bytes;
      pt["Tc"] = t.Tc;
      try {
        const gpu::BenchTiming b = gpu::bench_fa1(s, scale, t, 0, bf.warmup, bf.reps, 11);
        const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d);
        pt["variant"] = b.variant;
        pt["smem_bytes"] = gpu::fa1_shared_bytes(b.variant, t, d);
        pt["median_ms"] = b.median_ms;
        pt["tflops"] = flops / (b.median_ms * 1e9);
        if (!bf.as_json)
          std::printf("%6lld %6lld %4lldK %2d | %14.3f %9.3f %8.2f\n", (long long)bc, (long long)t.Tc,
                      (long long)(pt["smem_bytes"].get<int64_t>() / 1024), b.variant, bytes / 1e9, b.median_ms,
                      pt["tflops"].get<double>());
        sweep.push_back(pt);
      } catch (const InputError& e) {
        pt["skipped"] = e.what();
        sweep.push_back(pt);
        if (!bf.as_json)
          std::printf("%6lld %6lld %5s %2s | %14.3f  stop: %s\n", (long long)bc, (long long)t.Tc, "-", "-",
                      bytes / 1e9, e.what());
        break;  // larger Bc only needs more shared memory
      }
    }
    // fa2 variant 2 at each block size it is compiled for at this d (the sweep's N and B x H).
    if (!bf.as_json)
      std::printf("\nfa2 blocks: N = %lld, d = %lld, B x H = %lld, %s\n%5s %5s | %9s %8s\n", (long long)n,
                  (long long)d, (long long)s.heads(), bf.dtype.c_str(), "Br", "Bc", "fa2 ms", "TFLOP/s");
    for (const auto& [br2, bc2] : {std::pair<int64_t, int64_t>{64, 128}, {64, 64}, {128, 64}}) {
      const Tiling t = make_tiling(n, n, d, 4 * d * std::max(br2, bc2), br2, bc2);
      nlohmann::json pt = {{"schedule", "fa2"}, {"Br", br2}, {"Bc", bc2}, {"n", n}, {"d", d}};
      try {
        const gpu::BenchTiming b = gpu::bench_fa2(s, scale, t, 2, f2, bf.warmup, bf.reps, 11);
        const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d) * kept_fraction(f2, n);
        pt["median_ms"] = b.median_ms;
        pt["tflops"] = flops / (b.median_ms * 1e9);
        if (!bf.as_json)
          std::printf("%5lld %5lld | %9.3f %8.2f\n", (long long)br2, (long long)bc2, b.median_ms,
                      pt["tflops"].get<double>());
      } catch (const InputError& e) {
        pt["skipped"] = e.what();
        if (!bf.as_json) std::printf("%5lld %5lld | skipped: %s\n", (long long)br2, (long long)bc2, e.what());
      }
      sweep.push_back(pt);
    }
  }
  if (bf.as_json || !bf.json_file.empty()) {
    const nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count},
                                {"dtype", "float32"}, {"warmup", bf.warmup}, {"reps", bf.reps},
                                {"rows", rows}, {"sweep", sweep}};
    if (bf.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!bf.json_file.empty()) write_file_atomic(bf.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

void add_gpu_commands(CLI::App& app, const SetAction& set_action) {
  // flashstep verify
  static RunFlags vf;
  static int v_variant = 0;
  static double v_tol = kTiledTol;
  auto* verify = app.add_subcommand("verify", "run the CPU engine and the GPU on the same inputs; "
                                              "compare O, l, m after every j (fa1) and O, lse at the end");
  add_run_flags(verify, vf);
  verify->add_option("--variant", v_variant, "fa1/fa2 kernel variant: 0 automatic (default), 1 plain, 2 register-tiled");
  verify->add_option("--tol", v_tol, "max rel difference CPU tiled vs GPU tiled (default 5e-6)");
  verify->callback([&set_action] { set_action([] { return run_verify(vf, v_variant, v_tol); }); });

  // flashstep gpu
  static RunFlags gf;
  static int g_variant = 0;
  static std::string out_o, out_lse;
  static std::vector<int64_t> kv_lens;
  auto* g = app.add_subcommand("gpu", "run a schedule on the GPU and write O and lse as .npy "
                                      "(inputs 2-D (N, d) or 4-D (B, H, N, d))");
  add_run_flags(g, gf);
  g->add_option("--variant", g_variant, "fa1/fa2 kernel variant: 0 automatic (default), 1 plain, 2 register-tiled");
  g->add_option("--kv-lens", kv_lens, "valid key length per batch entry (B values, 4-D inputs): key padding");
  g->add_option("--out-o", out_o, "write O (float32; (Nq, d) or (B, H, Nq, d)) to a .npy file");
  g->add_option("--out-lse", out_lse, "write lse = m + log l (float32; (Nq) or (B, H, Nq))");
  g->callback([&set_action] { set_action([] { return run_gpu(gf, g_variant, out_o, out_lse, kv_lens); }); });

  // flashstep bench-gpu
  static BenchFlags bf;
  auto* b = app.add_subcommand("bench-gpu", "Algorithm 1, FlashAttention-2 and standard attention on the GPU, "
                                            "and the Bc sweep of the paper's Figure 2 (middle)");
  b->add_option("--n", bf.sizes, "sequence lengths (default 1024 2048 4096 8192 16384)");
  b->add_option("--d", bf.dims, "head dimensions (default 64 128)");
  b->add_option("--M", bf.M, "SRAM size that sets Br, Bc by the paper's formulas (default 128KiB)");
  b->add_option("--rows", bf.rows, "B x H x N: batch x heads fill the GPU with this many rows (default 131072)");
  b->add_option("--reps", bf.reps, "timed runs per point, median reported (default 20, minimum 20)");
  b->add_option("--warmup", bf.warmup, "untimed runs first (default 3)");
  b->add_option("--variant", bf.variant, "fa1 kernel variant (default 0: automatic)");
  b->add_option("--sweep-n", bf.sweep_n, "N for the Bc sweep (default 4096)");
  b->add_option("--sweep-d", bf.sweep_d, "d for the Bc sweep (default 64, as in the paper)");
  b->add_flag("--no-sweep", bf.no_sweep, "skip the Bc sweep");
  b->add_flag("--no-standard", bf.no_standard, "skip standard attention");
  b->add_flag("--no-fa1", bf.no_fa1, "skip Algorithm 1");
  b->add_flag("--causal", bf.causal, "fa2 with a causal mask (fully masked blocks skipped)");
  b->add_option("--dtype", bf.dtype, "fa2's storage type: fp32 (default), fp16, bf16");
  b->add_flag("--json", bf.as_json, "print JSON instead of tables");
  b->add_option("--json-file", bf.json_file, "also write the JSON to this file");
  b->callback([&set_action] { set_action([] { return run_bench(bf); }); });
}

}  // namespace flashstep
