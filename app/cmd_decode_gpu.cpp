// verify --schedule decode and bench-gpu --decode (declared in app/cmd_decode_gpu.h).
//
// Tolerance rule (core/tolerance.h): the partials are float32 on both sides (kTiledTol); the
// final O is stored once in the storage type (one ulp of a 16-bit type, as fa2); lse float32.
#include "app/cmd_decode_gpu.h"

#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/fp8_inputs.h"
#include "core/schedules/decode/decode.h"
#include "core/paged_kv.h"
#include "core/export.h"
#include "core/verify.h"
#include "app/run_printer.h"
#include "core/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace flashstep {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
bool any_nan(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return std::isnan(x); });
}

}  // namespace

int64_t gpu_decode_splits(int64_t asked, const gpu::Shape& s, const Tiling& t, Dtype dtype, int64_t page_size) {
  if (asked != 0) return asked;
  return gpu::decode_default(s, t, dtype, page_size).splits;
}

int run_verify_decode(const Problem& p, const Tiling& t, int variant, double tiled_tol) {
  gpu::check_decode_variant(variant, p.d, p.dtype);  // fail fast, before the CPU run
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  gpu::DecodeOptions go;
  go.splits = p.splits;
  go.features = gpu::features_of(p.options(), p.seed);
  go.page_size = p.page_size;  // --page-size: the pools and the block table of core/paged_kv.h
  const int64_t S = p.splits;
  RunOptions opt;
  Trace tr;
  bool recorded = true;
  try {
    tr = run_problem(p, t, opt);
  } catch (const InputError& e) {  // the trace would be too large: final state only
    recorded = false;
    opt.record = false;
    tr = run_problem(p, t, opt);
    std::printf("note: %s; comparing the final state only\n", e.what());
  }
  // Variant 0: the default for this shape, type and page size, named here so that the paged
  // run's unpaged twin below takes the same kernel.
  go.variant = gpu::resolve_decode_variant(variant, s, t, p.dtype, p.page_size);
  const gpu::DecodeResult g = gpu::decode_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, go);
  const gpu::DeviceInfo info = gpu::device_info();
  const double o_tol = tiled_o_tol(p.schedule, p.dtype, tiled_tol);
  // FP8 variant 9 at one row in a default build: its four-row kernel (its one-row kernel is a ladder rung).
  const bool four_row_for_one = p.dtype == Dtype::fp8 && p.nq == 1 && !gpu::decode_fp8_one_row_kernel(go.variant);
  std::printf("verify     flash-decoding, CPU engine vs GPU (%s, split kernel variant %d%s), S = %lld split%s\n",
              info.name.c_str(), go.variant,
              four_row_for_one ? " in its four-row kernel: the one-row kernel is the ladder's, -DFLASHSTEP_LADDER=ON" : "",
              (long long)S, S > 1 ? "s" : "");
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype));
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M, (long long)t.Br,
              (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  if (p.page_size > 0)
    std::printf("pages      P = %lld: K, V in %lld %s at shuffled places (seed %llu), read through a block table\n",
                (long long)p.page_size, (long long)kv_pages(p.nk, p.page_size),
                kv_pages(p.nk, p.page_size) == 1 ? "page" : "pages", (unsigned long long)p.seed);
  if (p.dtype == Dtype::fp8)
    std::printf("fp8        Q, K, V in e4m3 with %s float32 scales%s, quantised on the host as the CPU engine "
                "quantises; P~ in float32; O in bf16\n", fp8_scale_name(p.fp8_scale), p.rotate ? " (Q, K rotated)" : "");
  std::printf("tolerance  partials (float32) max rel <= %.0e; O <= %.3g, lse <= %.0e; each vs float64 <= %s\n\n",
              tiled_tol, o_tol, tiled_tol,
              p.dtype == Dtype::fp32   ? "1e-05"
              : p.dtype == Dtype::fp8  ? "the format's bound per row (docs/fp8.md; O), lse reported"
                                       : "1e-05 (fp32 only; reported)");
  bool ok = !any_nan(g.O) && !any_nan(g.lse) && !any_nan(g.O_part) && !any_nan(g.lse_part);
  if (!ok) std::printf("GPU output has NaN elements (unwritten, or an empty split gone wrong)\n");
  if (S > 1 && recorded) {  // every split's partials (core/verify.h)
    std::printf("%6s %12s | %10s %10s | %10s %10s |\n", "split", "keys", "O^(s) abs", "O^(s) rel", "lse abs",
                "lse rel");
    for (const SplitCheck& k : decode_split_checks(tr, g.O_part.data(), g.lse_part.data(), tiled_tol)) {
      ok = ok && k.pass;
      if (S <= 32 || k.split < 4 || k.split >= S - 4 || !k.pass)
        std::printf("%6lld %5lld-%-6lld | %10.3g %10.3g | %10.3g %10.3g | %s\n", (long long)k.split + 1,
                    (long long)k.first_key, (long long)k.last_key, k.O.max_abs, k.O.max_rel, k.lse.max_abs,
                    k.lse.max_rel, verdict(k.pass));
    }
    std::printf("\n");
  }
  if (p.page_size > 0) {  // the same kernels on contiguous K, V: every bit the same
    gpu::DecodeOptions flat = go;
    flat.page_size = 0;
    const gpu::DecodeResult u = gpu::decode_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, flat);
    const bool same = same_bits(g.O, u.O) && same_bits(g.lse, u.lse) && same_bits(g.O_part, u.O_part) &&
                      same_bits(g.lse_part, u.lse_part);
    ok = ok && same;
    std::printf("paged      GPU paged vs GPU unpaged: O, lse%s %s\n", S > 1 ? ", partials" : "",
                same ? "equal bit for bit  ok" : "DIFFERENT");
  }
  // The final state against the CPU engine's, then each against float64 (core/verify.h).
  const EngineOutput gpu_out{"GPU", g.O.data(), g.lse.data()};
  const ForwardCheck final_state = final_check("GPU vs CPU:", tr, gpu_out, o_tol, tiled_tol);
  const Float64Checks f64 = float64_checks(tr, "CPU", 1, {gpu_out});
  ok = ok && final_state.pass() && f64.pass();
  print_check("final      ", final_state);
  print_float64_checks(f64);
  if (p.dtype == Dtype::fp8 && f64.measured) {  // each O row within the format's bound (core/fp8_bound.h)
    const double g_ratio = fp8_bound_ratio(p, t, Eigen::Map<const Mat>(g.O.data(), p.nq, p.d));
    const double c_ratio = fp8_bound_ratio(p, t, tr.O);
    const bool b_ok = g_ratio <= 1 && c_ratio <= 1;
    ok = ok && b_ok;
    std::printf("fp8 bound  O error / the format's bound, worst row: GPU %.3g, CPU %.3g  %s\n", g_ratio, c_ratio,
                verdict(b_ok));
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

namespace {

// The device's ceilings, measured once per bench: the copy bandwidth (cudaMemcpy, read + written
// bytes) and the read roof (gpu::measure_read_bandwidth: bytes only read, as decode reads).
struct Roofs {
  double copy_gbps = 0, read_gbps = 0;
};

// The bench's JSON (--json on stdout, --json-file to a file): the device, the copy bandwidth
// and read roof, the timing settings and the rows under `key`.
void write_bench_json(const DecodeBenchRequest& r, const gpu::DeviceInfo& info, const Roofs& roofs, const char* key,
                      const nlohmann::json& rows) {
  if (!r.as_json && r.json_file.empty()) return;
  const nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count}, {"copy_gbps", roofs.copy_gbps},
                              {"read_roof_gbps", roofs.read_gbps}, {"warmup", r.warmup}, {"reps", r.reps},
                              {key, rows}};
  if (r.as_json) std::printf("%s\n", out.dump(1).c_str());
  if (!r.json_file.empty()) write_file_atomic(r.json_file, out.dump(1) + "\n");
}

gpu::Shape decode_bench_shape(int64_t nk, int64_t d, int64_t heads) {
  gpu::Shape s;
  s.H = std::min<int64_t>(heads, 8);
  s.B = heads / s.H;
  s.nq = 1;
  s.nk = nk;
  s.d = d;
  return s;
}

// --sweep-variants: every (variant, S) of each shape on one set of buffers, so that the default
// variant and S can be chosen from one device run. The default (variant, S) is marked with '*'.
int run_decode_sweep(const DecodeBenchRequest& r, Dtype dt, int64_t M,
                     const std::vector<SdpaPoint>& sdpa, const gpu::DeviceInfo& info,
                     const Roofs& roofs) {
  const double copy_gbps = roofs.copy_gbps;
  const std::vector<int64_t> splits = r.sweep_splits.empty() ? std::vector<int64_t>{1, 2, 4, 8, 16, 32} : r.sweep_splits;
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --decode sweep on %s (%d SMs), %s storage, Nq = 1, median of %d after %d warm-ups%s\n",
                info.name.c_str(), info.sm_count, r.dtype.c_str(), r.reps, r.warmup,
                r.page_size > 0 ? (", paged P = " + std::to_string(r.page_size)).c_str() : "");
    std::printf("copy bandwidth %.0f GB/s, read roof %.0f GB/s; GB/s = bytes of K and V read / time; * = the default "
                "(variant, S)\n\n", copy_gbps, roofs.read_gbps);
    for (int v : r.sweep_variants)
      if (dt == Dtype::fp8 && gpu::decode_variant_exists(v, 64, dt) && !gpu::decode_fp8_one_row_kernel(v))
        std::printf("variant %d runs Nq = 1 in its four-row kernel in this build (its one-row kernel is the ladder's: "
                    "-DFLASHSTEP_LADDER=ON)\n\n", v);
    std::printf("%7s %4s %4s %3s %5s | %9s %7s %5s %5s %8s\n", "Nk", "d", "BxH", "var", "S", "ms", "GB/s", "%copy",
                "%roof", "vs sdpa");
  }
  for (int64_t d : r.dims)
    for (int64_t heads : r.heads)
      for (int64_t nk : r.nks) {
        const gpu::Shape s = decode_bench_shape(nk, d, heads);
        const float scale = float(1.0 / std::sqrt(double(d)));
        const Tiling t = make_tiling(1, nk, d, M);
        const gpu::DecodeChoice dflt =
            gpu::decode_default(s, t, dt, r.page_size > 0 ? std::min(r.page_size, nk) : 0);  // marked '*'
        const double kv_bytes = 2.0 * double(s.heads()) * double(nk) * double(d) * dtype_bytes(dt);
        double sdpa_ms = 0;
        const std::string key = std::to_string(nk) + "/" + std::to_string(d) + "/" + std::to_string(heads) + "/" +
                                (dt == Dtype::fp8 ? "bf16" : r.dtype);  // fp8 beside PyTorch's bf16
        for (const SdpaPoint& pt : sdpa)
          if (pt.key == key) sdpa_ms = pt.ms;
        std::vector<gpu::DecodeOptions> configs;
        for (int v : r.sweep_variants) {
          if (!gpu::decode_variant_exists(v, d, dt)) continue;
          for (int64_t S : splits) {
            if (S > t.Tc) continue;
            gpu::DecodeOptions o;
            o.features.dtype = dt;
            if (dt == Dtype::fp8) o.features.fp8_scale = Fp8Scale::per_block;  // as the table
            o.splits = S;
            o.variant = v;
            o.page_size = r.page_size > 0 ? std::min(r.page_size, nk) : 0;
            configs.push_back(o);
          }
        }
        std::vector<gpu::BenchTiming> times;
        try {
          times = gpu::bench_decode_configs(s, scale, t, configs, r.warmup, r.reps, 7);
        } catch (const InputError& e) {
          if (!r.as_json) std::printf("%7lld %4lld %4lld skipped: %s\n", (long long)nk, (long long)d, (long long)heads, e.what());
          continue;
        }
        for (size_t k = 0; k < configs.size(); ++k) {
          const double ms = times[k].median_ms, gbps = kv_bytes / (ms * 1e6);
          nlohmann::json row = {{"nk", nk}, {"d", d}, {"heads", heads}, {"variant", configs[k].variant},
                                {"splits", configs[k].splits}, {"default_variant", dflt.variant},
                                {"default_splits", dflt.splits},
                                {"page_size", configs[k].page_size}, {"median_ms", ms}, {"kv_gbps", gbps},
                                {"fraction_of_copy", gbps / copy_gbps}, {"fraction_of_read_roof", gbps / roofs.read_gbps}};
          if (sdpa_ms > 0) row["speedup_vs_sdpa"] = sdpa_ms / ms;
          if (dt == Dtype::fp8)  // the query rows of the kernel that ran (Nq = 1: 4 = the four-row kernel for one)
            row["kernel_rows"] = gpu::decode_fp8_one_row_kernel(configs[k].variant) ? 1 : 4;
          rows.push_back(row);
          if (r.as_json) continue;
          std::printf("%7lld %4lld %4lld %3d %4lld%s | %9.4f %7.0f %4.0f%% %4.0f%%", (long long)nk, (long long)d,
                      (long long)heads, configs[k].variant, (long long)configs[k].splits,
                      configs[k].splits == dflt.splits && configs[k].variant == dflt.variant ? "*" : " ", ms, gbps,
                      100 * gbps / copy_gbps, 100 * gbps / roofs.read_gbps);
          if (sdpa_ms > 0) std::printf(" %7.2fx", sdpa_ms / ms);
          std::printf("\n");
        }
        std::fflush(stdout);
      }
  write_bench_json(r, info, roofs, "sweep", rows);
  return 0;
}

// --read-streams: the read bandwidth of each stream shape of gpu/read_streams.cu over one 2 GiB
// buffer (median of --reps after --warmup), beside the copy bandwidth and the read roof.
int run_read_streams(const DecodeBenchRequest& r, const gpu::DeviceInfo& info, const Roofs& roofs) {
  const std::vector<gpu::ReadStreamResult> streams = gpu::measure_read_streams(int64_t(2) << 30, r.warmup, r.reps);
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --decode --read-streams on %s (%d SMs): 2 GiB read once, bytes read / median time of %d "
                "after %d warm-ups\n", info.name.c_str(), info.sm_count, r.reps, r.warmup);
    std::printf("copy bandwidth %.0f GB/s, read roof %.0f GB/s\n\n", roofs.copy_gbps, roofs.read_gbps);
    std::printf("%-32s %7s %7s %13s | %8s %7s %6s\n", "stream", "threads", "blk/SM", "in flight/SM", "ms", "GB/s",
                "%roof");
  }
  for (const gpu::ReadStreamResult& x : streams) {
    rows.push_back({{"name", x.name}, {"threads", x.threads}, {"blocks_per_sm", x.blocks_per_sm},
                    {"in_flight_kib_per_sm", x.in_flight_kib_per_sm}, {"median_ms", x.median_ms}, {"gbps", x.gbps},
                    {"fraction_of_read_roof", x.gbps / roofs.read_gbps}});
    if (!r.as_json)
      std::printf("%-32s %7d %7d %9d KiB | %8.4f %7.0f %5.1f%%\n", x.name.c_str(), x.threads, x.blocks_per_sm,
                  x.in_flight_kib_per_sm, x.median_ms, x.gbps, 100 * x.gbps / roofs.read_gbps);
  }
  write_bench_json(r, info, roofs, "streams", rows);
  return 0;
}

}  // namespace

int run_bench_decode(const DecodeBenchRequest& r) {
  if (r.reps < 20) throw InputError("--reps must be at least 20 (the median of 20 or more runs)");
  if (r.warmup < 1) throw InputError("--warmup must be at least 1");
  const Dtype dt = parse_dtype(r.dtype);
  const int64_t M = parse_sram_size(r.M);
  const std::vector<SdpaPoint> sdpa = read_sdpa_times(r.sdpa_json);  // app/gpu_requests.cpp
  // fp8 (an FP8 KV cache) is set beside PyTorch's bf16: PyTorch's attention has no FP8 path.
  const std::string sdpa_dtype = dt == Dtype::fp8 ? "bf16" : r.dtype;
  const gpu::DeviceInfo info = gpu::device_info();
  Roofs roofs;
  roofs.copy_gbps = gpu::measure_copy_bandwidth(int64_t(2) << 30, 3, 20);
  roofs.read_gbps = gpu::measure_read_bandwidth(int64_t(2) << 30, 3, 20);
  const double copy_gbps = roofs.copy_gbps;
  if (r.read_streams) return run_read_streams(r, info, roofs);
  if (!r.sweep_variants.empty()) return run_decode_sweep(r, dt, M, sdpa, info, roofs);
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --decode on %s (%d SMs), %s storage, Nq = 1, CUDA events, %d warm-up runs (at least %.0f ms), median of %d, %d calls back to back per sample\n",
                info.name.c_str(), info.sm_count, r.dtype.c_str(), r.warmup,
                gpu::timing_warmup_ms(r.warmup), r.reps, gpu::timing_batch());
    if (dt == Dtype::fp8)
      std::printf("fp8: K, V (and Q) in e4m3, one float32 scale per head and block of Bc keys (per-block), O in bf16; "
                  "sdpa = PyTorch's bf16 (it has no FP8 attention)\n");
    std::printf("copy bandwidth (cudaMemcpy device to device, 2 GiB, read + written bytes / time): %.0f GB/s\n",
                copy_gbps);
    std::printf("read roof (a kernel that only reads 2 GiB by bulk copies on every SM, bytes read / time): %.0f GB/s\n",
                roofs.read_gbps);
    std::printf("GB/s = bytes of K and V read / time; %%copy, %%roof = that against the copy bandwidth and the read "
                "roof; v, S = the split kernel's variant and splits (the default for the shape on %d SMs, "
                "gpu/decode_backend.cpp)\n\n", info.sm_count);
    std::printf("%7s %4s %4s %4s %2s %4s | %9s %7s %5s %5s | %9s %7s | %9s %7s | %9s %7s %8s\n", "Nk", "d", "BxH",
                "Bc", "v", "S", "decode ms", "GB/s", "%copy", "%roof", "S=1 ms", "GB/s", "fa2 ms", "GB/s", "sdpa ms",
                "backend", "vs sdpa");
  }
  for (int64_t d : r.dims)
    for (int64_t heads : r.heads)
      for (int64_t nk : r.nks) {
        const gpu::Shape s = decode_bench_shape(nk, d, heads);
        const float scale = float(1.0 / std::sqrt(double(d)));
        const Tiling t = make_tiling(1, nk, d, M);
        const int64_t S = gpu_decode_splits(r.splits, s, t, dt, 0);
        const int v = gpu::resolve_decode_variant(0, s, t, dt, 0);
        const double kv_bytes = 2.0 * double(s.heads()) * double(nk) * double(d) * dtype_bytes(dt);
        const TrafficForm f = decode_traffic(1, nk, d, t.Tr, S);
        nlohmann::json row = {{"nk", nk}, {"d", d}, {"heads", s.heads()}, {"B", s.B}, {"H", s.H}, {"Bc", t.Bc},
                              {"Tc", t.Tc}, {"variant", v}, {"splits", S}, {"dtype", r.dtype}, {"kv_bytes", kv_bytes},
                              {"hbm_bytes_predicted", double(s.heads()) * double(f.read_bytes(dtype_bytes(dt)) +
                                                                                 f.write_bytes(dtype_bytes(dt)))}};
        auto time = [&](const char* key, auto&& fn) {
          try {
            const gpu::BenchTiming b = fn();
            row[key] = {{"median_ms", b.median_ms}, {"min_ms", b.min_ms}, {"max_ms", b.max_ms}, {"reps", b.reps},
                        {"kv_gbps", kv_bytes / (b.median_ms * 1e6)},
                        {"fraction_of_copy", kv_bytes / (b.median_ms * 1e6) / copy_gbps},
                        {"fraction_of_read_roof", kv_bytes / (b.median_ms * 1e6) / roofs.read_gbps}};
          } catch (const InputError& e) {
            row[key] = {{"skipped", e.what()}};
          }
        };
        gpu::DecodeOptions o;
        o.features.dtype = dt;
        if (dt == Dtype::fp8) o.features.fp8_scale = Fp8Scale::per_block;  // the finer scales: a lookup per key
        o.splits = S;
        time("decode", [&] { return gpu::bench_decode(s, scale, t, o, r.warmup, r.reps, 7); });  // registry-exempt: JSON key
        if (r.page_size > 0) {  // the paged default (variant, S), through the block table
          gpu::DecodeOptions op = o;
          op.page_size = std::min(r.page_size, nk);
          op.splits = gpu_decode_splits(r.splits, s, t, dt, op.page_size);
          row["page_size"] = op.page_size;
          row["paged_variant"] = gpu::resolve_decode_variant(0, s, t, dt, op.page_size);
          row["paged_splits"] = op.splits;
          time("decode_paged", [&] { return gpu::bench_decode(s, scale, t, op, r.warmup, r.reps, 7); });
        }
        o.splits = 1;
        time("decode_s1", [&] { return gpu::bench_decode(s, scale, t, o, r.warmup, r.reps, 7); });
        gpu::Features f2;
        f2.dtype = dt;
        if (dt == Dtype::fp8) row["fa2"] = {{"skipped", "no fp8 fa2 kernel"}};  // registry-exempt: JSON key
        else time("fa2", [&] { return gpu::bench_fa2(s, scale, t, 0, f2, r.warmup, r.reps, 7); });  // registry-exempt: the contrast column of bench-gpu --decode (JSON key)
        const std::string key = std::to_string(nk) + "/" + std::to_string(d) + "/" + std::to_string(s.heads()) + "/" + sdpa_dtype;
        for (const SdpaPoint& pt : sdpa)
          if (pt.key == key) {
            row["sdpa"] = {{"median_ms", pt.ms}, {"backend", pt.backend}, {"kv_gbps", kv_bytes / (pt.ms * 1e6)}};
            if (row["decode"].contains("median_ms"))  // registry-exempt: JSON key
              row["speedup_vs_sdpa"] = pt.ms / row["decode"]["median_ms"].get<double>();  // registry-exempt: JSON key
          }
        rows.push_back(row);
        if (r.as_json) continue;
        std::printf("%7lld %4lld %4lld %4lld %2d %4lld", (long long)nk, (long long)d, (long long)s.heads(),
                    (long long)t.Bc, v, (long long)S);
        for (const char* k : {"decode", "decode_s1", "fa2"}) {  // registry-exempt: JSON keys
          const auto& x = row[k];
          if (x.contains("skipped")) std::printf(" | %s skipped: %s", k, x["skipped"].get<std::string>().c_str());
          else if (std::string(k) == "decode")  // registry-exempt: JSON key
            std::printf(" | %9.4f %7.0f %4.0f%% %4.0f%%", x["median_ms"].get<double>(), x["kv_gbps"].get<double>(),
                        100 * x["fraction_of_copy"].get<double>(), 100 * x["fraction_of_read_roof"].get<double>());
          else std::printf(" | %9.4f %7.0f", x["median_ms"].get<double>(), x["kv_gbps"].get<double>());
        }
        if (row.contains("sdpa"))
          std::printf(" | %9.4f %7s %7.2fx", row["sdpa"]["median_ms"].get<double>(),
                      row["sdpa"]["backend"].get<std::string>().c_str(),
                      row.contains("speedup_vs_sdpa") ? row["speedup_vs_sdpa"].get<double>() : 0.0);
        else std::printf(" | %9s %7s %8s", "-", "-", "-");
        if (row.contains("decode_paged") && row["decode_paged"].contains("median_ms"))
          std::printf(" | paged P=%lld v%d S=%lld %9.4f %7.0f %4.0f%%", (long long)row["page_size"].get<int64_t>(),
                      row["paged_variant"].get<int>(), (long long)row["paged_splits"].get<int64_t>(),
                      row["decode_paged"]["median_ms"].get<double>(), row["decode_paged"]["kv_gbps"].get<double>(),
                      100 * row["decode_paged"]["fraction_of_copy"].get<double>());
        else if (row.contains("decode_paged"))
          std::printf(" | paged skipped: %s", row["decode_paged"]["skipped"].get<std::string>().c_str());
        std::printf("\n");
        std::fflush(stdout);
      }
  write_bench_json(r, info, roofs, "rows", rows);
  return 0;
}

}  // namespace flashstep
