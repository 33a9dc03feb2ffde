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
  // Split s covers core/schedules/decode/decode.h's split_range(Tc, S, s) of Bc keys.
  int Bc = 0, Tc = 0, S = 1;
  float scale = 1.0f;
  Storage dtype = Storage::fp32;
  Extras x;
  // A paged KV cache (core/paged_kv.h): K and V are pools of physical pages of page_size rows
  // (d wide), and key n of head h is row block_table[h pages + n / page_size] page_size +
  // n mod page_size of the pool. Null: K, V are (heads, Nk, d).
  const int32_t* block_table = nullptr;
  int page_size = 0, pages = 0;  // P and logical pages per head, ceil(Nk / P)
  // Paged, variants 6-10: how the page pieces' copies are issued (gpu/decode_kernel.cuh's
  // piece_entry): 0 by warp 0, each table entry read at the copy's issue; 1 read a stage ahead;
  // 2 also the split's table prefetched into the L2 as the block starts; 3 also each stage issued
  // by another warp in turn. The same copies, values and bits whichever; decode_split_launch sets
  // it (FLASHSTEP_DECODE_TABLE_AHEAD, default 3).
  int table_ahead = 3;
  int variant = 0;               // the split kernel's variant (gpu/decode.cu); 0 = the default
  // An FP8 KV cache (--dtype fp8, docs/fp8.md): Q, K, V hold e4m3 codes (one byte per element)
  // and O is of `dtype` (bf16). Scales, float32: q_scale per (head, row); k_scale, v_scale per
  // (head, block of scale_rows keys), scale_blocks = ceil(Nk / scale_rows) of them per head.
  bool fp8 = false;
  const float *q_scale = nullptr, *k_scale = nullptr, *v_scale = nullptr;
  int scale_rows = 0, scale_blocks = 0;
};

bool decode_supports_d(int d);                  // d in {16, 32, 64, 128, 256}
// The split kernel's variants (gpu/decode.cu's header): 4-9 for d = 64, 128 in 16-bit storage
// (6-9: the bulk copy engine), 3 for every d and storage type. A default build holds 5 and 9
// there and 3 elsewhere. The host resolves 0 to the default for the shape (decode_backend.cpp's
// decode_default) before a launch: DecodeParams::variant is never 0 at the launcher.
bool decode_variant_supported(int variant, int d, Storage dtype);  // built in this build
// The FP8 KV-cache kernels (DecodeParams::fp8): d = 64, 128; variants 9 and 10, paged or not.
bool decode_fp8_supported(int variant, int d);
// Whether an FP8 variant has a one-row kernel in this build: 10 always, 9 in a ladder build (a
// default build runs one row in variant 9's four-row kernel: the same bits).
bool decode_fp8_one_row_kernel(int variant);
// e4m3 codes of n float32 values on the device (cvt.rn.satfinite: to nearest even, +-448 past
// the range), as core/fp8.h's e4m3_code.
void to_e4m3(const float* src, uint8_t* dst, int64_t n);
bool decode_variant_is_ladder(int variant);  // 4, 6, 7, 8 (and 3 at d = 64, 128 in 16 bits): -DFLASHSTEP_LADDER=ON only
// FD L2-L14: one launch over (head, row group, split); partials, or O and lse when S = 1.
void decode_split_launch(const DecodeParams& p);
// FD L16-L20: one launch over (head, row); the combine smem holds S floats.
void decode_combine_launch(const DecodeParams& p);
// The read roof (gpu/read_streams.cu's first stream shape): one launch of a kernel that only
// streams the first bytes of src (whole 16 KiB chunks, as many per block) into shared memory by
// bulk copies, as variant 6 streams K and V, with every SM full; returns the bytes it reads.
// sink: one word, written only on an unlikely value.
int64_t read_roof_launch(const void* src, int64_t bytes, uint32_t* sink, int sm_count);

// The read streams (gpu/read_streams.cu): read_stream_count() stream shapes (bulk copies or
// register loads, their sizes and order), each reading the first bytes of src once on every SM.
struct ReadStreamInfo {
  const char* name;
  int threads, blocks_per_sm;     // blocks per SM wanted (fewer if they do not fit)
  int in_flight_kib_per_block;    // bytes in flight per block, KiB
};
struct ReadStreamRun {
  int64_t bytes = 0;     // bytes read (src's first bytes, rounded down to whole rounds of the grid)
  int blocks_per_sm = 0; // blocks per SM launched
};
int read_stream_count();
ReadStreamInfo read_stream_info(int i);
ReadStreamRun read_stream_launch(int i, const void* src, int64_t bytes, uint32_t* sink, int sm_count);

}  // namespace flashstep::gpu
