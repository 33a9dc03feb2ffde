// Launchers of gpu/decode.cu (flash-decoding's split-KV and combine kernels). Plain types only,
// as kernels.h: the host code (decode_backend.cpp) sees no device code.
#pragma once
#include "gpu/kernels.h"

#include <cstdint>

namespace flashstep::gpu {

// Tensors (heads, N, d) row-major in the storage type; lse (heads, Nq) float32; the partials
// (S, heads, Nq, d) and (S, heads, Nq) float32.
struct DecodeParams {
  const void *Q = nullptr, *K = nullptr, *V = nullptr;
  void* O = nullptr;
  float* lse = nullptr;
  float *O_part = nullptr, *lse_part = nullptr;  // null: S = 1, the split kernel writes O, lse
  int64_t heads = 1;
  int nq = 0, nk = 0, d = 0;
  int Bc = 0, Tc = 0, S = 1;  // split s covers core/decode.h's split_range(Tc, S, s) of Bc keys
  float scale = 1.0f;
  Storage dtype = Storage::fp32;
  Extras x;
};

bool decode_supports_d(int d);                  // d in {16, 32, 64, 128, 256}
// FD L2-L14: one launch over (head, row group, split); partials, or O and lse when S = 1.
void decode_split_launch(const DecodeParams& p);
// FD L16-L20: one launch over (head, row); the combine smem holds S floats.
void decode_combine_launch(const DecodeParams& p);

}  // namespace flashstep::gpu
