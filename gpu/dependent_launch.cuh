// Programmatic dependent launch (sm_90) and the per-head counters that let a dependent kernel start
// on part of its prerequisite's output before the whole grid has finished.
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start once every
// block of the kernel before it in the stream has executed griddepcontrol.launch_dependents (or
// exited): its blocks then take the SMs that the prerequisite's last blocks leave idle. Nothing
// orders memory between the two then, so a dependent block either waits for the whole grid
// (griddepcontrol.wait: the decode's combine), or waits for the part it reads: the backward's dQ
// conversion waits, head by head, until every block of the main kernel that adds into that head's
// dQ has counted itself done (count_block_done, wait_blocks_done). Older GPUs run the two launches
// in stream order and these instructions are left out.
#pragma once
#include <cstdint>

namespace flashstep::gpu {

// Every block of this grid has started (or called this): the dependent kernel may launch.
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits until the prerequisite grid has finished and its memory operations are visible.
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Called by the thread that issued a block's bulk reductions into global memory, after
// cp.async.bulk.wait_group 0 (they have completed): those writes, made by the async proxy, are
// ordered before the counter's release-add, which a waiting block acquires.
__device__ __forceinline__ void count_block_done(unsigned* counter) {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.global;" ::: "memory");
#endif
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
}

// One thread spins until counters[first .. last] all reach `expected`; the caller's block barrier
// after it makes what those blocks wrote visible to the block's other threads, which must then read
// it coherently (ld.global.cg, not the read-only path).
__device__ __forceinline__ void wait_blocks_done(const unsigned* counters, int64_t first, int64_t last,
                                                 unsigned expected) {
  for (int64_t h = first; h <= last; ++h) {
    unsigned seen;
    for (;;) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counters + h) : "memory");
      if (seen >= expected) break;
#if __CUDA_ARCH__ >= 700
      __nanosleep(200);
#endif
    }
  }
}

}  // namespace flashstep::gpu
