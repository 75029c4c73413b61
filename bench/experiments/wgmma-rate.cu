/* wgmma-rate.cu -- throughput of wgmma m64nNk8 TF32 on one H100/H200 from
 * shared memory operands in the no-swizzle (interleave) layout against the
 * 128-byte swizzle, and with A from registers; no global traffic.  Values
 * are zeros (only the rate is measured).  Build after `make`:
 *   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Ikernels/cuda bench/experiments/wgmma-rate.cu -o build/wgmma-rate
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "wgmma-ops.h"

static __device__ __forceinline__ uint64_t desc(const float *p, int lbo, int sbo, int sw) {
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
         ((uint64_t)sw << 62);
}

/* MODE 0: no swizzle (core matrices, LBO 128, SBO 32 K); 1: 128B swizzle
 * (SBO 1024); 2: A from registers, B no swizzle */
template <int N, int MODE>
__global__ void __launch_bounds__(256, 1) k_rate(int reps, float *out) {
  extern __shared__ __align__(1024) float sm[];
  float *A = sm + (threadIdx.x >> 7) * 64 * 32, *B = sm + 2 * 64 * 32;
  for (int i = threadIdx.x; i < 2 * 64 * 32 + N * 32; i += 256) sm[i] = 0.f;
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  float d[N / 2];
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  uint32_t a[4] = {0, 0, 0, 0};
  for (int r = 0; r < reps; ++r) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint64_t da, db;
      if (MODE == 1) { da = desc(A + 8 * k, 16, 1024, 1); db = desc(B + 8 * k, 16, 1024, 1); }
      else { da = desc(A + 64 * k, 128, 32 * 32, 0); db = desc(B + 64 * k, 128, 32 * 32, 0); }
      if constexpr (MODE == 2) wg_mma<N>::rs(d, a, db);
      else wg_mma<N>::ss(d, da, db, 1);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float s = 0.f;
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s != 0.f) out[0] = s;
}

template <int N, int MODE> static void run(int sms, const char *name) {
  float *out;
  cudaMalloc(&out, 4);
  const int smem = (2 * 64 * 32 + N * 32) * 4 + 1024;
  cudaFuncSetAttribute(k_rate<N, MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const int reps = 20000;
  k_rate<N, MODE><<<sms, 256, smem>>>(10, out);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  k_rate<N, MODE><<<sms, 256, smem>>>(reps, out);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  const double flop = 2.0 * 64 * N * 8 * 4 * (double)reps * 2 * sms;
  printf("wgmma m64n%dk8 tf32 %-22s %8.1f TFLOP/s (%s)\n", N, name, flop / ms / 1e9, cudaGetErrorString(cudaGetLastError()));
  cudaFree(out);
}

int main(void) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  run<32, 0>(sms, "smem, no swizzle");
  run<32, 1>(sms, "smem, 128B swizzle");
  run<32, 2>(sms, "A in registers");
  run<64, 0>(sms, "smem, no swizzle");
  run<64, 1>(sms, "smem, 128B swizzle");
  run<64, 2>(sms, "A in registers");
  run<88, 2>(sms, "A in registers");
  run<128, 2>(sms, "A in registers");
  return 0;
}
