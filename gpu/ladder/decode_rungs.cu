// Flash-decoding's ladder variants 4, 6, 7 and 8, and 3 at the defaults' shapes (their
// description: gpu/decode.cu's header; the defaults 5, 9 and 3 elsewhere are built there). Built
// only with -DFLASHSTEP_LADDER=ON; 16-bit storage at d = 64 and 128, like the defaults 5 and 9.
// With them the FP8 cache's variant 9 for one query row (its one-row kernel: variant 10 is the
// default there, and a default build runs variant 9's one row in its four-row kernel), and the FP8
// cache's variants 11 and 12 (variant 10 with V of a paged stage by cp.async).
#include "gpu/decode_kernel.cuh"

namespace flashstep::gpu {

namespace {

template <typename T, int G>
bool launch_ladder(const DecodeParams& p, int v) {
  switch (v) {
    case 3: return launch_variant<T, G, 3>(p), true;  // the default build's kernel of other shapes
    case 4: return launch_variant<T, G, 4>(p), true;
    case 6: return launch_variant<T, G, 6>(p), true;
    case 7: return launch_variant<T, G, 7>(p), true;
    case 8: return launch_variant<T, G, 8>(p), true;
    default: return false;
  }
}

}  // namespace

// False when variant v has no ladder kernel for this d and storage type.
bool decode_ladder_launch(const DecodeParams& p, int v) {
  if (p.fp8) {  // p.dtype is O's type (bf16) here
    if (v == 11 || v == 12) {
      if (p.d == 64) return (v == 11 ? launch_variant<__nv_fp8_e4m3, 8, 11>(p) : launch_variant<__nv_fp8_e4m3, 8, 12>(p)), true;
      if (p.d == 128) return (v == 11 ? launch_variant<__nv_fp8_e4m3, 16, 11>(p) : launch_variant<__nv_fp8_e4m3, 16, 12>(p)), true;
      return false;
    }
    if (v != 9 || p.nq != 1) return false;
    if (p.d == 64) return launch_split_kernel<__nv_fp8_e4m3, 8, 1, 9>(p), true;
    if (p.d == 128) return launch_split_kernel<__nv_fp8_e4m3, 16, 1, 9>(p), true;
    return false;
  }
  if (p.dtype == Storage::fp32) return false;
  bool done = false;
  with_storage(p.dtype, [&](auto st) {
    using T = decltype(st);
    if constexpr (sizeof(T) == 2) {
      if (p.d == 64) done = launch_ladder<T, 8>(p, v);
      if (p.d == 128) done = launch_ladder<T, 16>(p, v);
    }
  });
  return done;
}

}  // namespace flashstep::gpu
