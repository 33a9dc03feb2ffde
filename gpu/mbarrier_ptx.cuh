// mbarriers and the bulk copy engine (PTX ISA 8.0, sm_90), shared by the kernels that stream
// tiles into shared memory without the load/store units: gpu/fa3_forward.cu (TMA tensor copies)
// and gpu/decode.cu (variant 6: plain bulk copies of contiguous bytes).
//
// The protocol: a "full" barrier per buffer is armed by one thread with the bytes it expects
// (arrive.expect_tx); the copies count their bytes off it as they land (complete_tx), and the
// phase completes when both the arrival and the bytes are in. Waiters spin on the phase's parity.
#pragma once
#include <cstdint>

namespace flashstep::gpu::tc {

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Makes the initialised barriers visible to the copy engine (the async proxy); a block-wide
// barrier after it makes them visible to the other threads.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also raises the expected transaction count by `bytes`.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival on `bar` when every cp.async this thread issued before it has landed. .noinc: the
// arrival counts against the count the barrier was initialised with (one per arriving thread).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// `bytes` contiguous bytes global -> shared by the bulk copy engine (no tensor map): src, dst
// and bytes multiples of 16. The bytes count towards `bar`'s expected transaction.
__device__ __forceinline__ void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// An L2 cache policy that marks every line it touches evict_first (createpolicy's 64-bit handle,
// for the .L2::cache_hint forms).
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// bulk_copy_g2s under an L2 cache policy (.L2::cache_hint).
__device__ __forceinline__ void bulk_copy_g2s_hint(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                                   uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}

}  // namespace flashstep::gpu::tc
