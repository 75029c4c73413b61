/* cuda-startup.cu -- what one CUDA process pays before its first kernel
 * (bench/RESULTS.md D22): the driver's first call, the context, the
 * cuBLAS library load and handle, and a 64 MB page-locked allocation, in
 * the order the tools meet them.  Every process of a Kaldi-style pipeline
 * pays these once.
 * Build and run on the GPU machine:
 *   nvcc -o /tmp/cuda-startup bench/cuda-startup.cu -ldl && /tmp/cuda-startup */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
  double t0 = now();
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) { fprintf(stderr, "no CUDA device\n"); return 1; }
  double t1 = now();
  cudaFree(0); /* creates the primary context */
  double t2 = now();
  void *h = dlopen("libcublas.so.13", RTLD_NOW);
  if (!h) h = dlopen("libcublas.so.12", RTLD_NOW);
  if (!h) h = dlopen("libcublas.so", RTLD_NOW);
  double t3 = now();
  typedef int (*create_fn)(void **);
  create_fn create = h ? (create_fn)dlsym(h, "cublasCreate_v2") : NULL;
  void *handle = NULL;
  if (create) create(&handle);
  double t4 = now();
  void *p = NULL;
  cudaMallocHost(&p, 64 << 20);
  double t5 = now();
  printf("cuda startup: first call (cudaGetDeviceCount) %.1f ms, context %.1f ms, dlopen cuBLAS %.1f ms, "
         "cublasCreate %.1f ms, cudaMallocHost 64 MB %.1f ms\n",
         (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3, (t5 - t4) * 1e3);
  cudaFreeHost(p);
  return 0;
}
