// Flash-decoding on the GPU from the subcommands: verify --schedule decode, gpu --schedule
// decode (through decode_gpu_result) and bench-gpu --decode (app/cmd_decode_gpu.cpp).
#pragma once
#include "app/commands.h"
#include "app/gpu_requests.h"  // DecodeBenchRequest
#include "gpu/decode.h"

#include <string>
#include <vector>

namespace flashstep {

// verify --schedule decode: the CPU engine's partials O^(s), lse^(s) (one per split) and final
// O, lse against the GPU's, and each against float64. Returns 0 (PASS) or 1 (FAIL).
int run_verify_decode(const Problem& p, const Tiling& t, int variant, double tiled_tol);

// The S a GPU run uses: `asked` if not 0, else gpu::decode_default's for the shape, the storage
// type and the page size (0: unpaged) on this device.
int64_t gpu_decode_splits(int64_t asked, const gpu::Shape& s, const Tiling& t, Dtype dtype, int64_t page_size);

// bench-gpu --decode: decode (default S), decode without splits, fa2 (the float32-arithmetic
// kernel, no splits) and PyTorch's fastest SDPA backend, with the K/V bandwidth against the
// measured copy bandwidth.
int run_bench_decode(const DecodeBenchRequest& r);

}  // namespace flashstep
