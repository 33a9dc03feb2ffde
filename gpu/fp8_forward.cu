// The FP8 forward's kernels on Hopper (sm_90a): gpu/fp8_kernel.cuh at d = 64 and d = 128, one
// configuration each, and the host's view of their tiles (fp8_tile_info). Causal, key lengths and
// the scale mode (per tensor or per block) are run-time switches of the same kernel.
#include "gpu/fp8_kernel.cuh"

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

// The automatic pick among the run-time variants (gpu/tc_launch.h's kFp8Variants; FLASHSTEP_FP8_VARIANT
// overrides it): variant 0, the configuration measured in gpu/results/fp8-forward/first/, at both
// d until the candidates (ping-pong, the polynomial exp2, four chains) are measured beside it
// (tools/device/fp8_forward.sh's table names the best per d). This line flips the default.
constexpr int kFp8DefaultVariantD64 = 0, kFp8DefaultVariantD128 = 0;

// Both: the bf16 default's pipeline (a TMA producer warpgroup, the softmax under O += P~ V, a
// persistent grid) with Bc = 128 keys (one 128-byte row of V^T per column of d) and two K/V
// stages; the consumers as the bf16 defaults (gpu/fa3_forward.cu): three at d = 64 (Br = 192,
// 160 registers), two at d = 128 (Br = 128, 240). ptxas: 128 and 168 registers at compile time
// (before setmaxnreg), no spills (S_ij 64, O_i 32 or 64, P~ 16 registers a thread), with the
// softmax's instantiations of the run-time variants (four at d = 64, eight at d = 128). Variant 0 measured (TFLOP/s,
// gpu/results/fp8-forward/first/summary.txt): d = 128 853 / 781 at N = 16384 / 4096 non-causal
// (1.31x / 1.30x the bf16 default), d = 64 511 at N = 4096 (1.11x).
using Fp8D64 = Fp8Config<64, 2, 3>;
using Fp8D128 = Fp8Config<128, 2, 2>;

template <class C>
Fp8TileInfo info_of(const char* what, int variant) {
  return Fp8TileInfo{C::BR, C::BC, C::THREADS, C::STAGES, C::SMEM, what, true, variant};
}

}  // namespace

Fp8TileInfo fp8_tile_info(int d) {
  if (d == 64) return info_of<Fp8D64>("e4m3 wgmma, TMA producer + 3 consumer warpgroups (Br 192), Bc 128, softmax under O += P~ V, persistent", kFp8DefaultVariantD64);
  if (d == 128) return info_of<Fp8D128>("e4m3 wgmma, TMA producer + 2 consumer warpgroups (Br 128), Bc 128, softmax under O += P~ V, persistent", kFp8DefaultVariantD128);
  return Fp8TileInfo{};
}

void fp8_launch(const Fp8Params& p) {
  if (p.base.d == 64) return launch_fp8<Fp8D64>(p);
  if (p.base.d == 128) return launch_fp8<Fp8D128>(p);
  throw std::runtime_error("fp8_launch: no FP8 kernel for d = " + std::to_string(p.base.d));
}

}  // namespace flashstep::gpu::tc
