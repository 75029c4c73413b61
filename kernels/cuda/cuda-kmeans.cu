/* cuda-kmeans.cu -- the k-means distance ops on the GPU (backend.h
 * kmeans_*; drivers/gmm/gmm-init.c's k-means++ seeding and Lloyd assignment).
 *
 * The frames stay on the device (transposed, Zt [D x N], so that a warp's
 * loads of one coordinate are coalesced) with the per-frame state d2 / asg.
 * k_kmeans_nearest: one thread per frame; the centres go through shared
 * memory in tiles of KM_KT (every thread of a warp reads the same centre
 * coordinate: a broadcast), KM_KT running sums per thread in registers.
 * Each sum runs over d = 0..D-1 in order with __dsub_rn / __dmul_rn /
 * __dadd_rn (no contraction into fused multiply-adds), so every distance
 * has the bits of the CPU implementation (kernels/cpu/kmeans.c) and of the
 * plain loop gmm-init ran before, and so has every choice made from them.
 * Centres are compared in increasing index with a strict <: the first
 * minimum wins, as on the host.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-gemm.h"
#include "cuda-model.h"

#define KM_KT 16      /* centres per tile (register sums per thread) */
#define KM_THREADS 128

struct gh_dev_kmeans {
  double *dZt;  /* [D x N] */
  double *dd2;  /* [N] */
  int *dasg;    /* [N] */
  double *dC;   /* [capC] centres of the current call */
  long long capC;
  long long N;
  int D;
};

__global__ void __launch_bounds__(KM_THREADS)
k_kmeans_nearest(const double *__restrict__ Zt, long long N, int D, const double *__restrict__ C, int k0, int nk,
                 int reset, int shared_c, double *__restrict__ d2, int *__restrict__ asg) {
  extern __shared__ double cs[]; /* [KM_KT x D] when shared_c */
  const long long i = (long long)blockIdx.x * KM_THREADS + threadIdx.x;
  const bool live = i < N;
  double bd = live ? d2[i] : 0.0;
  int best = live ? asg[i] : 0;
  for (int kb = 0; kb < nk; kb += KM_KT) {
    const int n = nk - kb < KM_KT ? nk - kb : KM_KT;
    const double *cb = C + (long long)kb * D;
    if (shared_c) {
      __syncthreads();
      for (int e = threadIdx.x; e < n * D; e += KM_THREADS) cs[e] = cb[e];
      __syncthreads();
      cb = cs;
    }
    if (live) {
      double s[KM_KT];
#pragma unroll
      for (int kk = 0; kk < KM_KT; ++kk) s[kk] = 0.0;
      for (int d = 0; d < D; ++d) {
        const double zd = Zt[(long long)d * N + i];
#pragma unroll
        for (int kk = 0; kk < KM_KT; ++kk)
          if (kk < n) {
            const double t = __dsub_rn(zd, cb[kk * D + d]);
            s[kk] = __dadd_rn(s[kk], __dmul_rn(t, t));
          }
      }
#pragma unroll
      for (int kk = 0; kk < KM_KT; ++kk)
        if (kk < n && ((reset && kb + kk == 0) || s[kk] < bd)) {
          bd = s[kk];
          best = k0 + kb + kk;
        }
    }
  }
  if (live) {
    d2[i] = bd;
    asg[i] = best;
  }
}

gh_dev_kmeans *cuda_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D) {
  (void)b;
  if (N < 0 || D < 1) gh_die("kmeans_upload: bad shape %lld x %d", (long long)N, D);
  gh_dev_kmeans *z = (gh_dev_kmeans *)gh_calloc(1, sizeof *z);
  z->N = N;
  z->D = D;
  const size_t n1 = (size_t)(N > 0 ? N : 1);
  double *Zt = (double *)gh_malloc(sizeof(double) * n1 * D);
  for (int64_t i = 0; i < N; ++i)
    for (int32_t d = 0; d < D; ++d) Zt[(size_t)d * N + i] = Z[(size_t)i * D + d];
  CK(cudaMalloc((void **)&z->dZt, sizeof(double) * n1 * D));
  CK(cudaMalloc((void **)&z->dd2, sizeof(double) * n1));
  CK(cudaMalloc((void **)&z->dasg, sizeof(int) * n1));
  CK(cudaMemcpy(z->dZt, Zt, sizeof(double) * (size_t)N * D, cudaMemcpyHostToDevice));
  CK(cudaMemset(z->dd2, 0, sizeof(double) * n1));
  CK(cudaMemset(z->dasg, 0, sizeof(int) * n1));
  free(Zt);
  return z;
}

void cuda_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset) {
  (void)b;
  if (nk < 1) gh_die("kmeans_nearest: no centres");
  const long long need = (long long)nk * z->D;
  if (need > z->capC) {
    cudaFree(z->dC);
    z->capC = need > 2 * z->capC ? need : 2 * z->capC;
    CK(cudaMalloc((void **)&z->dC, sizeof(double) * z->capC));
  }
  CK(cudaMemcpy(z->dC, C, sizeof(double) * need, cudaMemcpyHostToDevice));
  if (z->N == 0) return;
  const size_t shm = (size_t)KM_KT * z->D * sizeof(double);
  const int shared_c = shm <= 48 * 1024;
  const unsigned grid = (unsigned)((z->N + KM_THREADS - 1) / KM_THREADS);
  k_kmeans_nearest<<<grid, KM_THREADS, shared_c ? shm : 0>>>(z->dZt, z->N, z->D, z->dC, k0, nk, reset, shared_c,
                                                              z->dd2, z->dasg);
  CK_LAUNCH("k-means distances");
}

void cuda_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg) {
  (void)b;
  if (z->N == 0) return;
  if (d2) CK(cudaMemcpy(d2, z->dd2, sizeof(double) * z->N, cudaMemcpyDeviceToHost));
  if (asg) CK(cudaMemcpy(asg, z->dasg, sizeof(int) * z->N, cudaMemcpyDeviceToHost));
}

void cuda_kmeans_free(gh_backend *b, gh_dev_kmeans *z) {
  (void)b;
  if (!z) return;
  cudaFree(z->dZt); cudaFree(z->dd2); cudaFree(z->dasg); cudaFree(z->dC);
  free(z);
}
