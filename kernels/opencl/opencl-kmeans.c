/* opencl-kmeans.c -- the k-means distance ops for the opencl backend
 * (backend.h kmeans_*; kernel: kmeans.cl gh_kmeans_nearest).  The frames
 * are kept transposed (Zt [D x N]: a work-group's loads of one coordinate
 * are contiguous) with the per-frame state d2 / asg. */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "opencl.h"

#define KM_KT 16 /* kmeans.cl */
#define KM_WG 64

struct gh_dev_kmeans {
  cl_mem Zt, d2, asg, C;
  size_t capC; /* doubles */
  int64_t N;
  int32_t D;
};

gh_dev_kmeans *gh_ocl_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D) {
  ocl_ctx *c = b->ctx;
  if (N < 0 || D < 1) gh_die("kmeans_upload: bad shape %lld x %d", (long long)N, D);
  if (N > 0x7fffffff) gh_die("kmeans_upload: %lld frames is more than the OpenCL kernel indexes", (long long)N);
  gh_dev_kmeans *z = gh_calloc(1, sizeof *z);
  z->N = N;
  z->D = D;
  const size_t n1 = (size_t)(N > 0 ? N : 1);
  double *Zt = gh_malloc(sizeof(double) * n1 * D);
  for (int64_t i = 0; i < N; ++i)
    for (int32_t d = 0; d < D; ++d) Zt[(size_t)d * N + i] = Z[(size_t)i * D + d];
  z->Zt = gh_ocl_buffer(c, sizeof(double) * n1 * D, Zt, "k-means frames");
  free(Zt);
  double *zero = gh_calloc(n1, sizeof(double));
  z->d2 = gh_ocl_buffer(c, sizeof(double) * n1, zero, "k-means distances");
  z->asg = gh_ocl_buffer(c, sizeof(int32_t) * n1, zero, "k-means assignment");
  free(zero);
  return z;
}

void gh_ocl_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset) {
  ocl_ctx *c = b->ctx;
  if (nk < 1) gh_die("kmeans_nearest: no centres");
  const size_t need = (size_t)nk * z->D;
  if (need > z->capC) {
    if (z->C) gh_ocl_release(z->C);
    z->capC = need > 2 * z->capC ? need : 2 * z->capC;
    z->C = gh_ocl_buffer(c, sizeof(double) * z->capC, NULL, "k-means centres");
  }
  gh_ocl_write(c, z->C, 0, sizeof(double) * need, C);
  if (z->N == 0) return;
  cl_ulong local_mem = 0;
  clGetDeviceInfo(c->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL);
  const size_t shm = (size_t)KM_KT * z->D * sizeof(double);
  const cl_int shared_c = shm + 1024 <= local_mem;
  const cl_long N = z->N;
  const cl_int D = z->D, ck0 = k0, cnk = nk, creset = reset != 0;
  cl_kernel k = c->k_kmeans;
  cl_uint i = 0;
  gh_ocl_arg(k, i++, sizeof(cl_mem), &z->Zt);
  gh_ocl_arg(k, i++, sizeof N, &N);
  gh_ocl_arg(k, i++, sizeof D, &D);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &z->C);
  gh_ocl_arg(k, i++, sizeof ck0, &ck0);
  gh_ocl_arg(k, i++, sizeof cnk, &cnk);
  gh_ocl_arg(k, i++, sizeof creset, &creset);
  gh_ocl_arg(k, i++, sizeof shared_c, &shared_c);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &z->d2);
  gh_ocl_arg(k, i++, sizeof(cl_mem), &z->asg);
  gh_ocl_arg(k, i++, shared_c ? shm : sizeof(double), NULL);
  size_t gl = (size_t)z->N, lo = KM_WG;
  gh_ocl_launch(c, k, 1, &gl, &lo, "k-means distances");
}

void gh_ocl_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg) {
  ocl_ctx *c = b->ctx;
  if (z->N == 0) return;
  if (d2) gh_ocl_read(c, z->d2, 0, sizeof(double) * (size_t)z->N, d2);
  if (asg) gh_ocl_read(c, z->asg, 0, sizeof(int32_t) * (size_t)z->N, asg);
}

void gh_ocl_kmeans_free(gh_backend *b, gh_dev_kmeans *z) {
  (void)b;
  if (!z) return;
  gh_ocl_release(z->Zt);
  gh_ocl_release(z->d2);
  gh_ocl_release(z->asg);
  if (z->C) gh_ocl_release(z->C);
  free(z);
}
