#include <cstdio>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(384, 1) k(int* smid, long long* t0, long long* t1) {
  extern __shared__ char s[];
  unsigned id; asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  long long a = clock64(); if (threadIdx.x == 0) { smid[blockIdx.x] = id; }
  long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  while (clock64() - a < 2000000) { s[threadIdx.x] = 1; }
  long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  if (threadIdx.x == 0) { t0[blockIdx.x] = g0; t1[blockIdx.x] = g1; }
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int smem : {89 * 1024, 225 * 1024 + 300}) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    for (int cl : {1, 2}) {
      cudaLaunchAttribute attr[1]; attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = cl; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
      cudaLaunchConfig_t cfg{}; cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem; cfg.attrs = attr; cfg.numAttrs = 1;
      cfg.gridDim = dim3(2 * sms);
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      int G = cl == 1 ? sms : 2 * n;
      cfg.gridDim = dim3(G);
      int* sm; long long *a, *b; cudaMallocManaged(&sm, 4 * 1024); cudaMallocManaged(&a, 8 * 1024); cudaMallocManaged(&b, 8 * 1024);
      cudaError_t e2 = cudaLaunchKernelEx(&cfg, k, sm, a, b); cudaError_t e3 = cudaDeviceSynchronize();
      long long mn = a[0], mx = a[0]; int distinct = 0; bool seen[256] = {};
      for (int i = 0; i < G; ++i) { mn = a[i] < mn ? a[i] : mn; mx = a[i] > mx ? a[i] : mx; if (!seen[sm[i]]) { seen[sm[i]] = true; ++distinct; } }
      printf("smem %d cluster %d: maxActiveClusters %d (%s) grid %d launch %s sync %s: distinct SMs %d, start spread %.1f us\n", smem, cl, n,
             cudaGetErrorString(e), G, cudaGetErrorString(e2), cudaGetErrorString(e3), distinct, (mx - mn) / 1000.0);
    }
  }
}
