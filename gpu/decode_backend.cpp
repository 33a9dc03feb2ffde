// Host side of flash-decoding on the GPU: checks, buffers, the two launches (gpu/decode.cu).
#include "gpu/decode.h"

#include "gpu/backend_internal.h"
#include "gpu/decode_kernels.h"
#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/schedules/decode/decode.h"
#include "core/paged_kv.h"

#include <climits>
#include <cstdlib>
#include <numeric>
#include <string>

namespace flashstep::gpu {

using namespace internal;

namespace {

// Float32 host values into x: rounded to its storage type; e4m3 by to_e4m3 (for the values
// core's quantise_e4m3 gives, already e4m3 values, an exact conversion to their codes).
void put(Stored& x, const float* host, DeviceBuffer<float>& staging) {
  if (x.dtype != Dtype::fp8) return x.upload(host, staging);
  staging.upload(host, x.count);
  to_e4m3(staging.get(), x.bytes.get(), x.count);
}
// Float32 values on the device (n of them, from offset e0) into x's storage type.
void put_from_device(Stored& x, const float* src, int64_t e0, int64_t n) {
  uint8_t* out = x.bytes.get() + e0 * dtype_bytes(x.dtype);
  if (x.dtype == Dtype::fp32) CUDA_CHECK(cudaMemcpy(out, src, size_t(n) * 4, cudaMemcpyDeviceToDevice));
  else if (x.dtype == Dtype::fp8) to_e4m3(src, out, n);
  else to_storage(src, out, n, Storage(int(x.dtype)));
}

// --dtype fp8: Q, K, V of every head quantised as the CPU engine quantises them
// (core/fp8_inputs.h's put_fp8_inputs: Q, K rotated first with --rotate; one scale per head's
// tensor, or per Q block of Br rows and per K/V block of Bc keys), the e4m3 values in floats and
// the scales, Q's expanded to one per row.
struct Fp8Inputs {
  std::vector<float> Q, K, V;             // (heads, N, d), every value exact in e4m3
  std::vector<float> q_scale;             // (heads, Nq)
  std::vector<float> k_scale, v_scale;    // (heads, scale_blocks)
  int64_t scale_rows = 0, scale_blocks = 0;
};
int64_t fp8_scale_rows(const Shape& s, const Tiling& t, Fp8Scale mode) {
  return mode == Fp8Scale::per_block ? t.Bc : s.nk;
}
Fp8Inputs quantise_inputs(const float* Q, const float* K, const float* V, const Shape& s, const Tiling& t,
                          const Features& f) {
  const bool per_block = f.fp8_scale == Fp8Scale::per_block;
  Fp8Inputs q;
  q.scale_rows = fp8_scale_rows(s, t, f.fp8_scale);
  q.scale_blocks = (s.nk + q.scale_rows - 1) / q.scale_rows;
  const int64_t d = s.d;
  auto head = [&](const float* X, int64_t h, int64_t n) {
    return Mat(Eigen::Map<const Mat>(X + h * n * d, n, d));
  };
  auto quantise = [&](Mat X, bool rotate, int64_t block_rows, std::vector<float>& values, std::vector<float>& scales) {
    if (rotate) X = rotate_rows(X, f.seed);
    const Fp8Tensor e = quantise_e4m3(X, block_rows);
    values.insert(values.end(), e.values.data(), e.values.data() + e.values.size());
    for (int64_t r = 0; r < e.scales.rows(); ++r) scales.push_back(e.scales(r, 0));
  };
  std::vector<float> q_blocks;
  for (int64_t h = 0; h < s.heads(); ++h) {
    q_blocks.clear();
    const int64_t q_rows = per_block ? t.Br : std::max<int64_t>(s.nq, 1);
    quantise(head(Q, h, s.nq), f.rotate, q_rows, q.Q, q_blocks);
    for (int64_t r = 0; r < s.nq; ++r) q.q_scale.push_back(q_blocks[size_t(r / q_rows)]);
    quantise(head(K, h, s.nk), f.rotate, q.scale_rows, q.K, q.k_scale);
    quantise(head(V, h, s.nk), false, q.scale_rows, q.V, q.v_scale);
  }
  return q;
}

// The decode buffers: Q, K, V, O in the storage type (fp8: e4m3 Q, K, V and a bf16 O, with the
// scales), lse and the float32 partials; with a page size, the K and V pools and the block
// table (core/paged_kv.h).
// FLASHSTEP_DECODE_PAGES_IN_ORDER=1 places the pool's pages in logical order (the block table is
// the identity: head h's page lp at physical page h pages + lp) instead of page_table's shuffle,
// the same copies and values, so that a benchmark can tell what the shuffled placement costs in
// DRAM from what the paged kernel costs (tools/device/fp8_decode_paged.sh).
static bool pages_in_order() {
  static const bool in_order = [] {
    const char* e = std::getenv("FLASHSTEP_DECODE_PAGES_IN_ORDER");
    const std::string v = e ? e : "";
    if (v.empty() || v == "0") return false;
    if (v == "1") return true;
    throw InputError("FLASHSTEP_DECODE_PAGES_IN_ORDER must be 0 or 1 (got '" + v + "')");
  }();
  return in_order;
}

struct DecodeBuffers {
  FlashBuffers io;
  DeviceBuffer<float> q_scale, k_scale, v_scale;  // fp8 only
  int64_t scale_rows = 0, scale_blocks = 0;
  DeviceBuffer<float> lse, O_part, lse_part;
  Stored K_pool, V_pool;
  DeviceBuffer<int32_t> table;
  std::vector<int32_t> host_table;
  int64_t P = 0, pages = 0;
  // Paged: io's K and V are one row per head (unused; the pools hold the cache), so that a
  // benchmark at B x H = 256, Nk = 262144 fits beside its pools.
  static Shape io_shape(Shape s, int64_t page_size) {
    if (page_size > 0) s.nk = 1;
    return s;
  }
  DecodeBuffers(const Shape& s, Dtype t, int64_t S, int64_t page_size = 0, uint64_t seed = 0)
      : io(io_shape(s, page_size), t), lse(s.heads() * s.nq) {
    if (t == Dtype::fp8) io.O.allocate(s.heads() * s.nq * s.d, output_dtype(t));  // bf16
    if (S > 1) {
      O_part.allocate(S * s.heads() * s.nq * s.d);
      lse_part.allocate(S * s.heads() * s.nq);
    }
    if (page_size > 0) {
      P = page_size;
      pages = kv_pages(s.nk, P);
      host_table = page_table(s.heads(), pages, seed);
      if (pages_in_order()) std::iota(host_table.begin(), host_table.end(), 0);
      K_pool.allocate(s.heads() * pages * P * s.d, t);
      V_pool.allocate(s.heads() * pages * P * s.d, t);
      table.allocate(int64_t(host_table.size()));
      table.upload(host_table.data(), int64_t(host_table.size()));
    }
  }
  // The pools from host K, V (heads, Nk, d): logical page lp of head h at physical page
  // table[h pages + lp]; rows past Nk zero.
  void upload_pools(const Shape& s, const float* K, const float* V) {
    const int64_t h = s.heads(), d = s.d, n = h * pages * P * d;
    std::vector<float> kp(size_t(n), 0.0f), vp(size_t(n), 0.0f);
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t lp = 0; lp < pages; ++lp) {
        const int64_t rows = std::min(P, s.nk - lp * P);
        const int64_t src = (hh * s.nk + lp * P) * d, dst = int64_t(host_table[size_t(hh * pages + lp)]) * P * d;
        std::copy(K + src, K + src + rows * d, kp.begin() + dst);
        std::copy(V + src, V + src + rows * d, vp.begin() + dst);
      }
    DeviceBuffer<float> staging(n);
    put(K_pool, kp.data(), staging);
    put(V_pool, vp.data(), staging);
  }
  // fp8: the quantised inputs and their scales (the values into Q and K, V or their pools).
  void upload_fp8(const Shape& s, const Fp8Inputs& q) {
    put(io.Q, q.Q.data(), io.staging);
    if (P > 0) {
      upload_pools(s, q.K.data(), q.V.data());
    } else {
      put(io.K, q.K.data(), io.staging);
      put(io.V, q.V.data(), io.staging);
    }
    upload_scales(q.q_scale, q.k_scale, q.v_scale, q.scale_rows, q.scale_blocks);
  }
  void upload_scales(const std::vector<float>& sq, const std::vector<float>& sk, const std::vector<float>& sv,
                     int64_t rows, int64_t blocks) {
    q_scale.allocate(int64_t(sq.size()));
    k_scale.allocate(int64_t(sk.size()));
    v_scale.allocate(int64_t(sv.size()));
    q_scale.upload(sq.data(), int64_t(sq.size()));
    k_scale.upload(sk.data(), int64_t(sk.size()));
    v_scale.upload(sv.data(), int64_t(sv.size()));
    scale_rows = rows;
    scale_blocks = blocks;
  }
  // Benchmarks, fp8: random e4m3 inputs (fill_random in float32, then to e4m3; the values do not
  // matter to the time) and scales of one per head's tensor or per block of t.Bc keys.
  void fill_random_fp8(const Shape& s, const Tiling& t, Fp8Scale mode, uint64_t seed) {
    Stored* dst[3] = {&io.Q, &io.K, &io.V};
    for (int w = 0; w < 3; ++w) {
      fill_random(io.staging.get(), dst[w]->count, seed * 3 + uint64_t(w));
      put_from_device(*dst[w], io.staging.get(), 0, dst[w]->count);
    }
    const int64_t rows = fp8_scale_rows(s, t, mode), blocks = (s.nk + rows - 1) / rows;
    const std::vector<float> sq(size_t(s.heads() * s.nq), 1.0f / 64), skv(size_t(s.heads() * blocks), 1.0f / 128);
    upload_scales(sq, skv, skv, rows, blocks);
  }
  // Benchmarks: random pools (the values do not matter to the time, the addresses do), made
  // in float32 chunks of at most kChunk elements and rounded to the storage type.
  static constexpr int64_t kChunk = int64_t(1) << 26;
  void fill_random_pools(uint64_t seed) {
    if (!P) return;
    DeviceBuffer<float> staging(std::min(K_pool.count, kChunk));
    Stored* dst[2] = {&K_pool, &V_pool};
    for (int w = 0; w < 2; ++w)
      for (int64_t e0 = 0; e0 < dst[w]->count; e0 += kChunk) {
        const int64_t n = std::min(kChunk, dst[w]->count - e0);
        fill_random(staging.get(), n, seed * 3 + 1 + uint64_t(w) + uint64_t(e0 / kChunk) * 7919);
        put_from_device(*dst[w], staging.get(), e0, n);
      }
  }
  void fill_inputs(const Shape& s, const Tiling& t, const Features& f, uint64_t seed) {
    if (f.dtype == Dtype::fp8) fill_random_fp8(s, t, f.fp8_scale, seed);
    else io.fill_random_inputs(seed);
    fill_random_pools(seed);
  }
  void poison() {
    io.O.bytes.poison();
    lse.poison();
    O_part.poison();
    lse_part.poison();
  }
  DecodeParams params(const Shape& s, const Tiling& t, float scale, int64_t S, const Extras& x) const {
    DecodeParams p;
    p.Q = io.Q.bytes.get(); p.K = io.K.bytes.get(); p.V = io.V.bytes.get(); p.O = io.O.bytes.get();
    p.lse = lse.get();
    p.O_part = O_part.get();
    p.lse_part = lse_part.get();
    p.heads = s.heads();
    p.nq = int(s.nq); p.nk = int(s.nk); p.d = int(s.d);
    p.Bc = int(t.Bc); p.Tc = int(t.Tc); p.S = int(S);
    p.scale = scale;
    p.dtype = Storage(int(io.O.dtype));  // fp8: bf16, the type of O
    p.x = x;
    if (io.Q.dtype == Dtype::fp8) {
      p.fp8 = true;
      p.q_scale = q_scale.get();
      p.k_scale = k_scale.get();
      p.v_scale = v_scale.get();
      p.scale_rows = int(scale_rows);
      p.scale_blocks = int(scale_blocks);
    }
    if (P > 0) {  // K, V: the pools, addressed through the table
      p.K = K_pool.bytes.get();
      p.V = V_pool.bytes.get();
      p.block_table = table.get();
      p.page_size = int(P);
      p.pages = int(pages);
    }
    return p;
  }
};

void run_decode_launches(const DecodeParams& p) {
  decode_split_launch(p);                   // FD L2-L14 (S = 1: O and lse directly)
  if (p.S > 1) decode_combine_launch(p);    // FD L16-L20
}

void check_decode(const Shape& s, const Tiling& t, const DecodeOptions& opt) {
  check_shape(s);
  if (t.Bc < 1 || t.Tc != (s.nk + t.Bc - 1) / t.Bc)
    throw InputError("the tiling does not match the shape (Tc = ceil(Nk/Bc))");
  if (!decode_supports_d(int(s.d)))
    throw InputError("the GPU decode kernels take d = 16, 32, 64, 128 or 256 (got d = " + std::to_string(s.d) + ")");
  if (opt.splits < 1 || opt.splits > t.Tc)
    throw InputError("--splits " + std::to_string(opt.splits) + " is out of range 1..Tc = " + std::to_string(t.Tc));
  if (opt.splits > 8192) throw InputError("the GPU combine takes at most 8192 splits");
  if (opt.page_size != 0 && (opt.page_size < 1 || opt.page_size > s.nk))
    throw InputError("--page-size " + std::to_string(opt.page_size) + " is out of range 1..Nk = " + std::to_string(s.nk));
  if (opt.page_size > 0 && s.heads() * kv_pages(s.nk, opt.page_size) > INT32_MAX)
    throw InputError("too many pages for an int32 block table");
  check_decode_variant(opt.variant, s.d, opt.features.dtype);
  if (opt.features.dtype == Dtype::fp8) {
    if (s.nk >= (int64_t(1) << 24)) throw InputError("the FP8 KV-cache decode takes Nk below 2^24 keys");
  }
  // (The grid has a block per head and group of four rows, or per head and row: FP8's variant 10.)
  if (s.heads() * s.nq > INT_MAX / 2) throw InputError("too many heads x query rows for the decode grid");
  check_features(opt.features, s);
  check_memory(decode_device_bytes(s, opt.features.dtype, opt.splits, opt.page_size), "flash-decoding");
}

// The FP8 cache's split kernel. Decoding proper (one query row, paged or not): variant 10, the
// batched arithmetic, 0.58-0.64x variant 9's time at d = 128, Nk 65536 and 262144, B x H 32 and
// 256, unpaged and paged (gpu/results/fp8-decode/variant10/). Nq > 1: variant 9's four-row
// kernel, which reads each K/V tile once for four rows (10 runs one row per block).
int fp8_default_variant(const Shape& s) { return s.nq == 1 ? 10 : 9; }

// The most splits of the d = 128, Nq = 1 rule below (the heads fill the GPU). 16-bit: 32. FP8,
// variant 10 at B x H = 256 (gpu/results/fp8-decode/variant10/table.txt): unpaged S = 16 (Nk 65536:
// 0.9429 ms against 1.0096 at S = 32; Nk 262144: 3.7146 against 3.7120, level): a split holds
// half the bytes of a 16-bit one. Paged (P = 16) S = 4, where a block also starts with a table
// read before its first copy: in each of the three H200 sweeps that had S = 4
// (gpu/results/fp8-decode/paged/, paged-cpasync/ and paged-order/ table.txt, B x H = 256) it was
// faster than S = 8, by 8-12% at Nk = 65536 (1.0818 against 1.2122 ms in paged-order/) and 1-1.4%
// at 262144 (4.3547 against 4.3852); S = 16 was best once at 65536 (1.1503 against S = 4's 1.1891).
int64_t most_splits_one_row(Dtype dtype, int64_t page_size) {
  if (dtype != Dtype::fp8) return 32;
  return page_size > 0 ? 4 : 16;
}

}  // namespace

// The default (variant, S), from the variant x S sweeps on the H200 (bf16, Nq = 1, d = 64 and
// 128, B x H = 32 and 256, Nk = 16384 .. 262144; docs/decode.md, "The default variant and S" and
// "Read streams and versions 8, 9"):
// - d = 64, 128 in 16-bit storage, unpaged: version 9 (bulk copies under an L2 evict_first
//   policy, 256 threads) with core's S (core/schedules/decode/decode.h), the fastest version at
//   all 12 shapes of the read-stream sweep (gpu/results/device-checks/decode-read-streams-and-back-to-back, 4-11%
//   ahead of versions 5, 6 and 8); except at d = 128, Nq = 1 where that S is 1 (the heads fill
//   the GPU, or one K/V block): 32 splits, none shorter than 512 keys (the shortest split
//   measured), the best S of version 5 there before and of version 9 at Nk = 65536 and 262144.
//   (At B x H = 32, Nk = 262144, S = 32 was level with core's S = 8 over three rounds, 0.07%:
//   core's S stays.)
// - paged: version 5 with core's S (0.85-0.93x of unpaged; version 6 pays for its small
//   per-page copies: 0.71-0.84x).
// - every other d or storage type: version 3, the one kernel for all of them.
// - fp8 (an FP8 KV cache, d = 64, 128): fp8_default_variant's (10 for one row, 9 for more), paged or not, with the
//   16-bit rule's S but at most 16 splits unpaged and 4 paged where that rule gives 32
//   (most_splits_one_row).
DecodeChoice decode_default(const Shape& s, const Tiling& t, Dtype dtype, int64_t page_size) {
  DecodeChoice c;
  c.splits = default_splits(s.heads() * t.Tr, t.Tc, device_info().sm_count);
  const bool fast_shapes = (s.d == 64 || s.d == 128) && dtype != Dtype::fp32;
  if (!fast_shapes) return c;  // version 3
  const int unpaged = dtype == Dtype::fp8 ? fp8_default_variant(s) : 9;
  if (page_size > 0 && dtype != Dtype::fp8) {
    c.variant = 5;
  } else if (s.d == 128 && s.nq == 1 && c.splits == 1) {
    c.variant = unpaged;
    c.splits = std::max<int64_t>(1, std::min<int64_t>({most_splits_one_row(dtype, page_size), s.nk / 512, t.Tc}));
  } else {
    c.variant = unpaged;
  }
  return c;
}

int resolve_decode_variant(int variant, const Shape& s, const Tiling& t, Dtype dtype, int64_t page_size) {
  return variant != 0 ? variant : decode_default(s, t, dtype, page_size).variant;
}

bool decode_variant_exists(int variant, int64_t d, Dtype dtype) {
  if (dtype == Dtype::fp8) return decode_fp8_supported(variant, int(d));
  return decode_variant_supported(variant, int(d), Storage(int(dtype)));
}

void check_decode_variant(int variant, int64_t d, Dtype dtype) {
  if (dtype == Dtype::fp8) {  // the FP8 KV cache (gpu/decode.cu's header)
    if (d != 64 && d != 128)
      throw InputError("the FP8 KV-cache decode takes d = 64 or 128 (got d = " + std::to_string(d) + ")");
    if (!decode_fp8_supported(variant, int(d)))
      throw InputError("decode kernel variant " + std::to_string(variant) +
                       " has no fp8 version in this build: the FP8 KV cache runs variants 9 and 10, paged or not (0 picks the default; "
                       "11 and 12 with -DFLASHSTEP_LADDER=ON)");
    return;
  }
  if (!decode_variant_exists(variant, d, dtype) && decode_variant_is_ladder(variant) && (d == 64 || d == 128) &&
      dtype != Dtype::fp32)
    throw InputError("decode kernel variant " + std::to_string(variant) +
                     " is a rung of the kernel ladder, not built here: configure with -DFLASHSTEP_LADDER=ON "
                     "(gpu/ladder/); variant 0 picks the default");
  if (!decode_variant_exists(variant, d, dtype))
    throw InputError("decode kernel variant " + std::to_string(variant) + " does not exist for d = " + std::to_string(d) +
                     " in " + dtype_name(dtype) + " (5, 9: d = 64, 128 in fp16/bf16; 3: every other d and type; 10: fp8 only)");
}

int64_t decode_device_bytes(const Shape& s, Dtype dtype, int64_t splits, int64_t page_size) {
  const int64_t h = s.heads(), b = dtype_bytes(dtype);
  const int64_t nk = page_size > 0 ? 1 : s.nk;  // paged: the cache is in the pools
  int64_t bytes = h * (2 * s.nq + 2 * nk) * s.d * b + 4 * h * s.nq;
  if (dtype == Dtype::fp8) bytes += h * s.nq * s.d + 4 * h * (s.nq + 2 * s.nk);  // O in bf16; scales at most
  if (dtype != Dtype::fp32) bytes += 4 * h * std::max(s.nq, nk) * s.d;  // staging
  if (splits > 1) bytes += 4 * splits * h * s.nq * (s.d + 1);
  if (page_size > 0) {  // the pools, a float32 staging chunk (a whole pool for an upload) and the table
    const int64_t pool = h * kv_pages(s.nk, page_size) * page_size * s.d;
    bytes += 2 * pool * b + 4 * std::min(pool, int64_t(1) << 26) + 4 * h * kv_pages(s.nk, page_size);
  }
  return bytes;
}

DecodeResult decode_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                            const Tiling& t, const DecodeOptions& opt) {
  check_decode(s, t, opt);
  DecodeResult r;
  const PeakSince peak;
  DeviceExtras ex(opt.features, s);
  DecodeBuffers b(s, opt.features.dtype, opt.splits, opt.page_size, opt.features.seed);
  if (opt.features.dtype == Dtype::fp8) {  // quantised on the host as the CPU engine quantises
    b.upload_fp8(s, quantise_inputs(Q, K, V, s, t, opt.features));
  } else if (opt.page_size > 0) {  // Q, and K, V into the pools
    b.io.Q.upload(Q, b.io.staging);
    b.upload_pools(s, K, V);
  } else {
    b.io.upload(Q, K, V);
  }
  b.poison();
  DecodeParams p = b.params(s, t, scale, opt.splits, ex.x);
  p.variant = resolve_decode_variant(opt.variant, s, t, opt.features.dtype, opt.page_size);
  run_decode_launches(p);
  CUDA_CHECK(cudaDeviceSynchronize());
  r.O = b.io.O.to_host(b.io.staging);
  r.lse = b.lse.to_host();
  r.O_part = b.O_part.to_host();
  r.lse_part = b.lse_part.to_host();
  r.device_bytes = peak.bytes();
  return r;
}

BenchTiming bench_decode(const Shape& s, float scale, const Tiling& t, const DecodeOptions& opt, int warmup,
                         int reps, uint64_t seed) {
  check_decode(s, t, opt);
  const PeakSince peak;
  DeviceExtras ex(opt.features, s);
  DecodeBuffers b(s, opt.features.dtype, opt.splits, opt.page_size, seed);
  b.fill_inputs(s, t, opt.features, seed);
  DecodeParams p = b.params(s, t, scale, opt.splits, ex.x);
  p.variant = resolve_decode_variant(opt.variant, s, t, opt.features.dtype, opt.page_size);
  const TimingStats ts = median_ms([&] { run_decode_launches(p); }, warmup, reps);
  return timed(BenchTiming{}, ts, peak);
}

std::vector<BenchTiming> bench_decode_configs(const Shape& s, float scale, const Tiling& t,
                                              const std::vector<DecodeOptions>& configs, int warmup, int reps,
                                              uint64_t seed) {
  if (configs.empty()) return {};
  int64_t S_max = 1;
  for (const DecodeOptions& o : configs) {
    if (o.page_size != configs[0].page_size) throw InputError("bench_decode_configs: one page size per call");
    DecodeOptions checked = o;
    checked.features = configs[0].features;
    check_decode(s, t, checked);
    S_max = std::max(S_max, o.splits);
  }
  DecodeOptions biggest = configs[0];
  biggest.splits = S_max;
  check_decode(s, t, biggest);  // the memory of the largest S
  const PeakSince peak;
  DeviceExtras ex(configs[0].features, s);
  DecodeBuffers b(s, configs[0].features.dtype, S_max, configs[0].page_size, seed);
  b.fill_inputs(s, t, configs[0].features, seed);
  std::vector<BenchTiming> out;
  for (const DecodeOptions& o : configs) {
    DecodeParams p = b.params(s, t, scale, o.splits, ex.x);
    if (o.splits == 1) p.O_part = p.lse_part = nullptr;  // S = 1 writes O and lse directly
    p.variant = resolve_decode_variant(o.variant, s, t, configs[0].features.dtype, o.page_size);
    const TimingStats ts = median_ms([&] { run_decode_launches(p); }, warmup, reps);
    out.push_back(timed(BenchTiming{}, ts, peak));
  }
  return out;
}

double measure_copy_bandwidth(int64_t bytes, int warmup, int reps) {
  check_memory(2 * bytes, "the copy-bandwidth measurement");
  DeviceBuffer<uint8_t> a(bytes), b(bytes);
  CUDA_CHECK(cudaMemset(a.get(), 1, size_t(bytes)));
  const TimingStats ts = median_ms(
      [&] { CUDA_CHECK(cudaMemcpy(b.get(), a.get(), size_t(bytes), cudaMemcpyDeviceToDevice)); }, warmup, reps);
  return 2.0 * double(bytes) / (ts.median_ms * 1e-3) * 1e-9;
}

double measure_read_bandwidth(int64_t bytes, int warmup, int reps) {
  check_memory(bytes, "the read-roof measurement");
  DeviceBuffer<uint8_t> a(bytes);
  DeviceBuffer<uint32_t> sink(1);
  CUDA_CHECK(cudaMemset(a.get(), 1, size_t(bytes)));
  const int sms = device_info().sm_count;
  int64_t read = 0;
  const TimingStats ts = median_ms([&] { read = read_roof_launch(a.get(), bytes, sink.get(), sms); }, warmup, reps);
  return double(read) / (ts.median_ms * 1e-3) * 1e-9;
}

std::vector<ReadStreamResult> measure_read_streams(int64_t bytes, int warmup, int reps) {
  if (read_stream_count() < 2)
    throw InputError("--read-streams times the kernel ladder's stream shapes beside the read roof: configure with "
                     "-DFLASHSTEP_LADDER=ON (gpu/ladder/); in this build bench-gpu --decode prints the read roof");
  check_memory(bytes, "the read-stream measurement");
  DeviceBuffer<uint8_t> a(bytes);
  DeviceBuffer<uint32_t> sink(1);
  CUDA_CHECK(cudaMemset(a.get(), 1, size_t(bytes)));
  const int sms = device_info().sm_count;
  std::vector<ReadStreamResult> out;
  for (int i = 0; i < read_stream_count(); ++i) {
    const ReadStreamInfo info = read_stream_info(i);
    ReadStreamRun run;
    const TimingStats ts = median_ms([&] { run = read_stream_launch(i, a.get(), bytes, sink.get(), sms); }, warmup, reps);
    ReadStreamResult r;
    r.name = info.name;
    r.threads = info.threads;
    r.blocks_per_sm = run.blocks_per_sm;
    r.in_flight_kib_per_sm = info.in_flight_kib_per_block * run.blocks_per_sm;
    r.median_ms = ts.median_ms;
    r.gbps = double(run.bytes) / (ts.median_ms * 1e-3) * 1e-9;
    out.push_back(r);
  }
  return out;
}

}  // namespace flashstep::gpu
