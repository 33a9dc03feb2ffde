// The read roof: the rate at which the device reads, the ceiling of a decode kernel (a copy
// also writes, so its rate is not that ceiling). It is version 6's stream (gpu/bulk_stream.cuh:
// 16 KiB bulk copies, 6 stages, two blocks per SM, interleaved), timed by bench-gpu --decode.
// The other ways of streaming the same bytes that the lab measured against it (register loads,
// other chunk sizes, contiguous order, evict_first; docs/decode.md, "Read streams") are the
// kernel ladder's (gpu/ladder/read_streams.cu): `bench-gpu --decode --read-streams` times them
// all in a ladder build.
#include "gpu/bulk_stream.cuh"

namespace flashstep::gpu {

#if defined(FLASHSTEP_LADDER)
int ladder_read_stream_count();               // gpu/ladder/read_streams.cu
const StreamShape& ladder_read_stream(int i);
#endif

namespace {
constexpr int KiB = 1024;
const StreamShape kReadRoof = {"bulk 16K x6 (the read roof)", 128, 2, 80, launch_bulk<16 * KiB, 6, false, false>};

const StreamShape& shape(int i) {
#if defined(FLASHSTEP_LADDER)
  if (i > 0) return ladder_read_stream(i - 1);
#endif
  return kReadRoof;
}
}  // namespace

int read_stream_count() {
#if defined(FLASHSTEP_LADDER)
  return 1 + ladder_read_stream_count();
#else
  return 1;
#endif
}

ReadStreamInfo read_stream_info(int i) {
  const StreamShape& s = shape(i);
  return ReadStreamInfo{s.name, s.threads, s.blocks_per_sm, s.in_flight_kib_per_block};
}

ReadStreamRun read_stream_launch(int i, const void* src, int64_t bytes, uint32_t* sink, int sm_count) {
  const StreamShape& s = shape(i);
  return s.launch(src, bytes, sink, sm_count, s.blocks_per_sm);
}

int64_t read_roof_launch(const void* src, int64_t bytes, uint32_t* sink, int sm_count) {
  return read_stream_launch(0, src, bytes, sink, sm_count).bytes;
}

}  // namespace flashstep::gpu
