// Probe: 8 warps each arm one mbarrier (count 8) with arrive.expect_tx and issue one bulk copy.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
__device__ __forceinline__ uint32_t sa(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__global__ void probe(const char* src, int mode, int* out) {
  extern __shared__ __align__(128) char sm[];
  uint64_t* bar = reinterpret_cast<uint64_t*>(sm + 8 * 2048);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(bar)), "r"(mode == 0 ? 8 : 1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (mode == 1) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(bar)), "r"(8 * 2048) : "memory");
  }
  __syncthreads();
  if (lane == 0) {
    if (mode == 0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(bar)), "r"(2048) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(sa(sm + warp * 2048)), "l"(src + warp * 2048), "r"(2048), "r"(sa(bar)) : "memory");
  }
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}" ::"r"(sa(bar)) : "memory");
  int s = 0;
  for (int i = threadIdx.x; i < 8 * 2048; i += blockDim.x) s += sm[i];
  atomicAdd(out, s);
}
int main(int argc, char** argv) {
  const int only = argc > 1 ? atoi(argv[1]) : -1;
  char* src; int* out; cudaMalloc(&src, 8 * 2048); cudaMalloc(&out, 4);
  cudaMemset(src, 1, 8 * 2048);
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 2048 + 64);
  for (int mode = 0; mode < 2; ++mode) {
    if (only >= 0 && mode != only) continue;
    cudaMemset(out, 0, 4);
    probe<<<4, 256, 8 * 2048 + 64>>>(src, mode, out);
    cudaError_t e = cudaDeviceSynchronize();
    int h = -1; cudaMemcpy(&h, out, 4, cudaMemcpyDeviceToHost);
    printf("mode %d (%s): %s, sum %d (want %d)\n", mode, mode == 0 ? "8 warps arrive.expect_tx, count 8" : "thread 0 arms, count 1",
           cudaGetErrorString(e), h, 4 * 8 * 2048);
    if (e != cudaSuccess) return 1;
  }
  return 0;
}
