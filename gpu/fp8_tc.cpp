// Host side of the FP8 forward on tensor cores (gpu/fp8_tc.h): checks, the host quantisation
// (codes, V^T in the kernel's key order), device buffers, the launch and timing.
#include "gpu/fp8_tc.h"

#include "core/fp8_bound.h"
#include "gpu/common.cuh"
#include "gpu/variant_list.h"
#include "gpu/tc_launch.h"
#include "gpu/tc_params.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <random>

namespace flashstep::gpu {

namespace {

std::string cc_text(const DeviceInfo& info) {
  return std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor);
}

tc::Fp8TileInfo tile_info(int64_t d, int variant = 0) {
#if defined(FLASHSTEP_HAVE_WGMMA)
  return tc::fp8_tile_info(int(d), variant);
#else
  (void)d;
  (void)variant;
  return tc::Fp8TileInfo{};
#endif
}

// Nk rounded up to a whole K/V block of the kernel's Bc keys (128 or 192): V^T's row length in
// bytes, a multiple of 16 as TMA wants of a row stride, and never shorter than one block.
int64_t nk_padded(int64_t nk, int64_t Bc) { return (nk + Bc - 1) / Bc * Bc; }

// The 8-bit code of each value (already exact in e4m3: e4m3_code only picks its bits).
std::vector<uint8_t> codes_of(const std::vector<float>& x) {
  std::vector<uint8_t> c(x.size());
  for (size_t k = 0; k < x.size(); ++k) c[k] = e4m3_code(x[k]);
  return c;
}

// V (heads, Nk, d) codes as V^T (heads, d, nk_pad): storage position q of each group of 32 keys
// holds key fp8_vt_key(q) of the group (gpu/fp8_kernel.cuh's header says why); zeros past Nk.
std::vector<uint8_t> transposed_v(const std::vector<uint8_t>& v, int64_t heads, int64_t nk, int64_t d, int64_t Bc) {
  const int64_t np = nk_padded(nk, Bc);
  std::vector<uint8_t> vt(size_t(heads * d * np), 0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t q = 0; q < np; ++q) {
      const int64_t key = (q & ~int64_t(31)) + tc::fp8_vt_key(int(q & 31));
      if (key >= nk) continue;
      const uint8_t* row = v.data() + (h * nk + key) * d;
      for (int64_t c = 0; c < d; ++c) vt[size_t((h * d + c) * np + q)] = row[c];
    }
  return vt;
}

struct Fp8Buffers {
  DeviceBuffer<uint8_t> Q, K, Vt;
  DeviceBuffer<uint16_t> O;  // bf16 bits
  DeviceBuffer<float> lse, q_scale, k_scale, v_scale;
  DeviceBuffer<int> kv_lens;
  int64_t q_blocks = 1, k_blocks = 1, Bc = 128;
  Fp8Buffers(const Shape& s, const Fp8TcOptions& o, int64_t q_blocks_, int64_t k_blocks_, int64_t Bc_)
      : Q(s.heads() * s.nq * s.d), K(s.heads() * s.nk * s.d), Vt(s.heads() * s.d * nk_padded(s.nk, Bc_)),
        O(s.heads() * s.nq * s.d), lse(s.heads() * s.nq), q_scale(s.heads() * q_blocks_),
        k_scale(s.heads() * k_blocks_), v_scale(s.heads() * k_blocks_), q_blocks(q_blocks_), k_blocks(k_blocks_), Bc(Bc_) {
    if (!o.kv_lens.empty()) {
      const std::vector<int> lens(o.kv_lens.begin(), o.kv_lens.end());
      kv_lens.allocate(int64_t(lens.size()));
      kv_lens.upload(lens.data(), int64_t(lens.size()));
    }
  }
  tc::Fp8Params params(const Shape& s, float scale, const Fp8TcOptions& o) const {
    TcOptions to;
    to.dtype = Dtype::bf16;  // O's type
    to.causal = o.causal;
    to.kv_len = o.kv_len;
    tc::Fp8Params p;
    p.base = make_tc_params(Q.get(), K.get(), Vt.get(), O.get(), lse.get(), kv_lens.get(), s, scale, to);
    p.q_scale = q_scale.get();
    p.k_scale = k_scale.get();
    p.v_scale = v_scale.get();
    p.q_blocks = int(q_blocks);
    p.k_blocks = int(k_blocks);
    p.nk_pad = int(nk_padded(s.nk, Bc));
    p.variant = o.variant;
    return p;
  }
};

void launch(const tc::Fp8Params& p) {
#if defined(FLASHSTEP_HAVE_WGMMA)
  tc::fp8_launch(p);
#else
  (void)p;
  throw InputError("this build has no FP8 forward kernel (it needs nvcc 12.0 or newer for sm_90a)");
#endif
}

int64_t blocks_of(int64_t n, int64_t rows) { return (n + rows - 1) / rows; }

}  // namespace

Fp8TcOptions fp8_tc_options(const Problem& p) {
  Fp8TcOptions o;
  o.causal = p.mask.causal;
  o.kv_len = p.mask.kv_len;
  o.scale_mode = p.fp8_scale;
  o.rotate = p.rotate;
  o.seed = p.seed;
  return o;
}

Fp8TcAccumulationShare fp8_tc_accumulation_share(const Fp8TcInputs& in, int64_t nq, int64_t nk, int64_t d, float tau,
                                                  int variant) {
  const Fp8TcTiles t = fp8_tc_tiles(d, variant);
  Fp8TcAccumulationShare a;
  a.acc.s_steps = d / 32;
  a.acc.pv_steps = (t.Bc / 32) * ((nk + t.Bc - 1) / t.Bc);
  const int64_t qb = in.q_blocks > 1 ? t.Br : nq, kb = in.k_blocks > 1 ? t.Bc : nk;
  MatD Qd(nq, d), Kd(nk, d);
  for (int64_t r = 0; r < nq; ++r)
    for (int64_t k = 0; k < d; ++k) Qd(r, k) = std::fabs(double(in.Q[size_t(r * d + k)]) * in.q_scale[size_t(r / qb)]);
  for (int64_t r = 0; r < nk; ++r)
    for (int64_t k = 0; k < d; ++k) {
      Kd(r, k) = std::fabs(double(in.K[size_t(r * d + k)]) * in.k_scale[size_t(r / kb)]);
      a.vmax = std::max(a.vmax, std::fabs(double(in.V[size_t(r * d + k)]) * in.v_scale[size_t(r / kb)]));
    }
  a.dS = double(tau) * kFp8AccumulationU * double(a.acc.s_steps) * (Qd * Kd.transpose()).maxCoeff();
  a.share = a.vmax * (std::expm1(2 * a.dS) + kFp8AccumulationU * double(a.acc.pv_steps));
  return a;
}

Fp8TcTiles fp8_tc_tiles(int64_t d, int variant) {
  const tc::Fp8TileInfo i = tile_info(d, variant);
  if (variant != 0) {  // the ladder's rungs (gpu/ladder/fp8_rungs.cu)
    if (!tc::fp8_ladder_rung(int(d), variant))
      throw InputError("no FP8 forward variant " + std::to_string(variant) + " for d = " + std::to_string(d) +
                       " (0 the default; the ladder's rung " + fp8_rungs_at(true, true) + " at d = 64 and 128, " +
                       fp8_rungs_at(true, false) + " at d = 64, " + fp8_rungs_at(false, true) + " at d = 128)");
    if (!i.compiled && tile_info(d).compiled)
      throw InputError("FP8 forward variant " + std::to_string(variant) +
                       " is a rung of the kernel ladder, not built here: configure with -DFLASHSTEP_LADDER=ON "
                       "(gpu/ladder/); variant 0 picks the default");
  }
  if (!i.compiled)
    throw InputError("the FP8 forward on tensor cores supports d = 64 and d = 128 on compute capability 9.0 "
                     "(got d = " + std::to_string(d) + ")" +
                     (tile_info(64).compiled ? "" : "; this build has no sm_90a kernels"));
  return Fp8TcTiles{i.Br, i.Bc, i.threads, i.stages, i.smem_bytes, i.what};
}

bool fp8_tc_variant_built(int64_t d, int variant) { return tile_info(d, variant).compiled; }

void check_fp8_tc_request(const Shape& s, float scale, const Fp8TcOptions& o) {
  const Fp8TcTiles t = fp8_tc_tiles(s.d, o.variant);
  if (s.B < 1 || s.H < 1 || s.nq < 1 || s.nk < 1) throw InputError("B, H, Nq and Nk must be at least 1");
  if (s.nq > INT_MAX / 2 || s.nk > INT_MAX / 2 || s.heads() * s.nq > INT_MAX || s.heads() > INT_MAX / 2)
    throw InputError("sizes too large for the FP8 kernel (Nq, Nk < 2^30, B x H x Nq < 2^31)");
  if (!(scale > 0.0f) || !std::isfinite(scale)) throw InputError("the softmax scale must be positive and finite");
  if (o.scale_mode == Fp8Scale::none) throw InputError("the FP8 forward needs a scale mode: per-tensor or per-block");
  if (o.rotate) check_rotation_dim(s.d);
  if (o.kv_len < -1 || o.kv_len > s.nk) throw InputError("kv_len must be in [0, Nk] (got " + std::to_string(o.kv_len) + ")");
  if (!o.kv_lens.empty()) {
    if (int64_t(o.kv_lens.size()) != s.B)
      throw InputError("kv_lens needs one length per batch entry (" + std::to_string(s.B) + "), got " +
                       std::to_string(o.kv_lens.size()));
    for (int64_t k : o.kv_lens)
      if (k < 0 || k > s.nk) throw InputError("each kv_lens value must be in [0, Nk]");
  }
  const DeviceInfo info = device_info();  // InputError when there is no GPU
  if (!(info.cc_major == 9 && info.cc_minor == 0))
    throw InputError("the FP8 forward runs on wgmma, compute capability 9.0 only (H100, H200); " + info.name + " is " +
                     cc_text(info));
  if (t.smem_bytes > info.smem_per_block_optin)
    throw InputError("the FP8 kernel needs " + std::to_string(t.smem_bytes) + " bytes of shared memory per block; " +
                     info.name + " allows " + std::to_string(info.smem_per_block_optin));
  const int64_t need = fp8_tc_device_bytes(s, t.Bc);
  if (need + (int64_t(64) << 20) > info.free_bytes)
    throw InputError("not enough device memory: the FP8 forward needs " + std::to_string(need >> 20) + " MiB, " +
                     std::to_string(info.free_bytes >> 20) + " MiB free on " + info.name);
}

int64_t fp8_tc_device_bytes(const Shape& s, int64_t Bc) {
  const int64_t h = s.heads();
  return h * s.nq * s.d + h * s.nk * s.d + h * s.d * nk_padded(s.nk, Bc) + 2 * h * s.nq * s.d + 4 * h * s.nq +
         4 * h * (s.nq + 2 * s.nk);  // scales: at most one per row
}

Fp8TcInputs fp8_tc_quantise(const float* Q, const float* K, const float* V, const Shape& s, const Fp8TcOptions& o) {
  const Fp8TcTiles t = fp8_tc_tiles(s.d, o.variant);
  if (o.rotate) check_rotation_dim(s.d);
  const bool per_block = o.scale_mode == Fp8Scale::per_block;
  const int64_t q_rows = per_block ? t.Br : std::max<int64_t>(s.nq, 1);
  const int64_t kv_rows = per_block ? t.Bc : std::max<int64_t>(s.nk, 1);
  Fp8TcInputs in;
  in.q_blocks = blocks_of(s.nq, q_rows);
  in.k_blocks = blocks_of(s.nk, kv_rows);
  const int64_t d = s.d;
  auto quantise = [&](const float* X, int64_t h, int64_t n, bool rotate, int64_t rows, std::vector<float>& values,
                      std::vector<float>& scales) {
    Mat x = Eigen::Map<const Mat>(X + h * n * d, n, d);
    if (rotate) x = rotate_rows(x, o.seed);
    const Fp8Tensor e = quantise_e4m3(x, rows);
    values.insert(values.end(), e.values.data(), e.values.data() + e.values.size());
    for (int64_t r = 0; r < e.scales.rows(); ++r) scales.push_back(e.scales(r, 0));
  };
  for (int64_t h = 0; h < s.heads(); ++h) {
    quantise(Q, h, s.nq, o.rotate, q_rows, in.Q, in.q_scale);
    quantise(K, h, s.nk, o.rotate, kv_rows, in.K, in.k_scale);
    quantise(V, h, s.nk, false, kv_rows, in.V, in.v_scale);
  }
  return in;
}

TcResult fp8_tc_forward(const Fp8TcInputs& in, const Shape& s, float scale, const Fp8TcOptions& o) {
  check_fp8_tc_request(s, scale, o);
  const int64_t h = s.heads();
  if (int64_t(in.Q.size()) != h * s.nq * s.d || int64_t(in.K.size()) != h * s.nk * s.d ||
      int64_t(in.V.size()) != h * s.nk * s.d || int64_t(in.q_scale.size()) != h * in.q_blocks ||
      int64_t(in.k_scale.size()) != h * in.k_blocks || int64_t(in.v_scale.size()) != h * in.k_blocks)
    throw InputError("fp8_tc_forward: the quantised inputs do not match the shape");
  // The kernel reads one scale per head (q_blocks = 1) or one per tile of its own Br, Bc.
  const Fp8TcTiles t = fp8_tc_tiles(s.d, o.variant);
  if ((in.q_blocks != 1 && in.q_blocks != blocks_of(s.nq, t.Br)) || (in.k_blocks != 1 && in.k_blocks != blocks_of(s.nk, t.Bc)))
    throw InputError("fp8_tc_forward: per-block scales must be on the kernel's blocks (Br = " + std::to_string(t.Br) +
                     ", Bc = " + std::to_string(t.Bc) + ")");
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Fp8Buffers b(s, o, in.q_blocks, in.k_blocks, t.Bc);
  const std::vector<uint8_t> q = codes_of(in.Q), k = codes_of(in.K), v = codes_of(in.V);
  const std::vector<uint8_t> vt = transposed_v(v, h, s.nk, s.d, t.Bc);
  b.Q.upload(q.data(), int64_t(q.size()));
  b.K.upload(k.data(), int64_t(k.size()));
  b.Vt.upload(vt.data(), int64_t(vt.size()));
  b.q_scale.upload(in.q_scale.data(), int64_t(in.q_scale.size()));
  b.k_scale.upload(in.k_scale.data(), int64_t(in.k_scale.size()));
  b.v_scale.upload(in.v_scale.data(), int64_t(in.v_scale.size()));
  b.O.poison();
  b.lse.poison();
  launch(b.params(s, scale, o));
  CUDA_CHECK(cudaDeviceSynchronize());
  TcResult r;
  const std::vector<uint16_t> bits = b.O.to_host();
  r.O.resize(bits.size());
  for (size_t e = 0; e < bits.size(); ++e) {
    const uint32_t u = uint32_t(bits[e]) << 16;
    std::memcpy(&r.O[e], &u, 4);
  }
  r.lse = b.lse.to_host();
  r.device_bytes = MemoryTracker::get().peak - live0;
  return r;
}

BenchTiming bench_fp8_tc(const Shape& s, float scale, const Fp8TcOptions& o, int warmup, int reps, uint64_t seed) {
  check_fp8_tc_request(s, scale, o);
  const Fp8TcTiles t = fp8_tc_tiles(s.d, o.variant);
  const bool per_block = o.scale_mode == Fp8Scale::per_block;
  const int64_t qb = per_block ? blocks_of(s.nq, t.Br) : 1, kb = per_block ? blocks_of(s.nk, t.Bc) : 1;
  MemoryTracker::get().reset_peak();
  const int64_t live0 = MemoryTracker::get().live;
  Fp8Buffers b(s, o, qb, kb, t.Bc);
  // Random inputs: codes of N(0, 1) values (a table of 4096 drawn once, picked by a fast
  // generator; no NaN code), scales 1/16: what the kernel does does not depend on the values.
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint8_t> table(4096);
  for (auto& c : table) c = e4m3_code(round_e4m3(nd(rng)));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto fill = [&](DeviceBuffer<uint8_t>& dst) {
    std::vector<uint8_t> h(size_t(dst.size()));
    for (auto& c : h) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = table[size_t(x & 4095)];
    }
    dst.upload(h.data(), int64_t(h.size()));
  };
  fill(b.Q);
  fill(b.K);
  fill(b.Vt);
  for (auto* sc : {&b.q_scale, &b.k_scale, &b.v_scale}) {
    const std::vector<float> v(size_t(sc->size()), 1.0f / 16);
    sc->upload(v.data(), int64_t(v.size()));
  }
  const tc::Fp8Params p = b.params(s, scale, o);
  const TimingStats ts = median_ms([&] { launch(p); }, warmup, reps);
  BenchTiming bt;
  bt.median_ms = ts.median_ms;
  bt.min_ms = ts.min_ms;
  bt.max_ms = ts.max_ms;
  bt.reps = ts.reps;
  bt.peak_bytes = MemoryTracker::get().peak - live0;
  return bt;
}

}  // namespace flashstep::gpu
