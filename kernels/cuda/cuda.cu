/* cuda.cu -- the CUDA backend (built only when nvcc exists; GH_HAVE_CUDA):
 * its context (cuda_ctx, cuda-ctx.h), made on the current device after
 * the compute-capability check; the staging of small tables; page-locked
 * host memory; and the ops table (backend.h gh_backend_ops).
 *
 * The ops, one file per part (layouts and blocking: doc/kernels.md):
 *   cuda-upload.cu    model upload: the likelihood layout of the fused
 *                     kernels (split pdfs included), the E-step layout, the
 *                     numerical contract's choice of forms
 *   cuda-loglikes.cu  the fused likelihood kernels (Vaněk et al. 2012a,
 *                     2012b) and every loglikes op
 *   cuda-estep.cu     the fused E-step (Araújo et al. 2014, Cook et al. 2011)
 *                     and the accumulators
 *   cuda-data.cu      E-step data resident on the device: upload, the pairs'
 *                     sort by pdf, eviction and reload
 *   cuda-gemm.cu      the GEMM forms (cuBLAS, tensor-core kernels)
 *   cuda-hmm.cu       the HMM ops (Liu 2009), with cuda-hmm-*.cu
 *   cuda-mstep.cu, cuda-kmeans.cu, shrink.cu, gselect.cu, device.cu.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 * Device buffers are grow-only scratch owned by the backend.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-ctx.h"

/* Copies bytes (a table of tasks or segments) from host src to device dst
 * in the default stream's order without waiting for the work queued before
 * it, as a pageable cudaMemcpy does: through the next of c's page-locked
 * staging buffers, after waiting for that buffer's previous copy (normally
 * done long ago).  src may be reused or freed on return. */
void gh_cuda_upload_small(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
  if (!bytes) return;
  const int k = c->upSmallNext;
  c->upSmallNext = (k + 1) % UP_SLOTS;
  if (c->upSmallBusy[k]) CK(cudaEventSynchronize(c->evUpSmall[k]));
  c->upSmallBusy[k] = 0;
  if (c->capUpSmall[k] < bytes) {
    if (c->hUpSmall[k]) CK(cudaFreeHost(c->hUpSmall[k]));
    else CK(cudaEventCreateWithFlags(&c->evUpSmall[k], cudaEventDisableTiming));
    c->hUpSmall[k] = NULL;
    c->capUpSmall[k] = bytes + bytes / 2 + 4096;
    CK(cudaMallocHost(&c->hUpSmall[k], c->capUpSmall[k]));
  }
  memcpy(c->hUpSmall[k], src, bytes);
  CK(cudaMemcpyAsync(dst, c->hUpSmall[k], bytes, cudaMemcpyHostToDevice, 0));
  CK(cudaEventRecord(c->evUpSmall[k], 0));
  c->upSmallBusy[k] = 1;
}

extern "C" void gh_cuda_hmm_scratch_free(void *p); /* cuda-hmm.cu */

static void cuda_free_backend(gh_backend *b) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cudaFree(c->dX); cudaFreeHost(c->hX); cudaFree(c->dScratch);
  cudaFree(c->dGamma); cudaFree(c->dTasks); cudaFree(c->dTotal); cudaFree(c->dPart);
  cudaFree(c->dPstat); cudaFree(c->dRt); cudaFree(c->dLL);
  for (int k = 0; k < 2; ++k) { cudaFree(c->dSortK[k]); cudaFree(c->dSortI[k]); }
  cudaFree(c->dSortTmp); cudaFree(c->dSortWd); cudaFree(c->dSortOff);
  cudaFree(c->dNarrowSegs); cudaFree(c->dSubsetOut);
  gg_ctx_free(c->gg);
  if (c->host) gh_backend_free(c->host);
  if (c->up) {
    cudaStreamSynchronize(c->up); cudaStreamSynchronize(c->dn);
    for (int k = 0; k < 2; ++k) {
      cudaFree(c->dXo[k]); cudaFree(c->dOo[k]);
      cudaEventDestroy(c->evUp[k]); cudaEventDestroy(c->evFree[k]);
      cudaEventDestroy(c->evDone[k]); cudaEventDestroy(c->evOut[k]); cudaEventDestroy(c->call[k].done);
    }
    for (int k = 0; k < NEV; ++k) {
      cudaEventDestroy(c->evT0[k]); cudaEventDestroy(c->evT1[k]); cudaEventDestroy(c->evU0[k]); cudaEventDestroy(c->evU1[k]);
    }
    cudaStreamDestroy(c->up); cudaStreamDestroy(c->dn);
    if (c->tl) { fclose(c->tl); cudaEventDestroy(c->evBase); }
  }
  free(c->hTasks); free(c->hRt);
  for (int k = 0; k < 2; ++k)
    if (c->hStage[k]) { cudaFreeHost(c->hStage[k]); cudaEventDestroy(c->evStage[k]); }
  if (c->hSortF) { cudaFreeHost(c->hSortF); cudaFreeHost(c->hSortW); }
  for (int k = 0; k < UP_SLOTS; ++k)
    if (c->hUpSmall[k]) { cudaEventSynchronize(c->evUpSmall[k]); cudaFreeHost(c->hUpSmall[k]); cudaEventDestroy(c->evUpSmall[k]); }
  gh_cuda_hmm_scratch_free(c->hmm_scratch);
  gh_cuda_pool_trim();
  free(c);
  free(b);
}

/* HMM kernels: kernels/cuda/cuda-hmm.cu */
extern "C" {
gh_dev_hmm *gh_cuda_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_cuda_hmm_free(gh_backend *b, gh_dev_hmm *h);
void gh_cuda_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                         double *loglik, float *alpha);
void gh_cuda_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                         double *score);
void gh_cuda_hmm_reweight(gh_backend *b, gh_dev_hmm *h, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_cuda_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                          const int32_t *col_pdf, int32_t frame_base, double min_post, double *loglik,
                          double *stats, gh_pair_buf *out);
int64_t gh_cuda_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                const gh_hmm_graph *const *graphs, gh_dev_data *d, const gh_score_seg *segs,
                                int32_t nseg, int op, double min_post, double *loglik, double *stats, double *wsum,
                                double sec[2]);
void gh_cuda_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                    float *gamma, double *stats);
}
/* Shrinkage statistics: kernels/cuda/shrink.cu */
extern "C" double gh_cuda_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T,
                                      const int32_t *sel_off, const int32_t *sel, const float *w, gh_gmm_accs *accs,
                                      float *post, double *frame_ll); /* kernels/cuda/gselect.cu */
extern "C" void gh_cuda_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                                   const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs);

/* backend.h host_alloc: page-locked memory (the copies of loglikes then run
 * at full PCIe speed without a staging copy); malloc when the driver refuses
 * (too much locked memory), which host_free tells apart by the pointer's
 * attributes. */
static void *cuda_host_alloc(gh_backend *b, size_t bytes) {
  void *p = NULL;
  if (cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess) return p;
  cudaGetLastError();
  return gh_malloc(bytes);
}

static void cuda_host_free(gh_backend *b, void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost) {
    CK(cudaFreeHost(p));
  } else {
    cudaGetLastError();
    free(p);
  }
}

/* The sub-tables (C++: designated initializers in the struct's order). */
static const gh_ops_gmm cuda_gmm = {
    .free = cuda_free_backend,
    .model_upload = gh_cuda_model_upload,
    .model_free = gh_cuda_model_free,
    .loglikes = gh_cuda_loglikes,
    .acc_zero = gh_cuda_acc_zero,
    .data_upload = gh_cuda_data_upload,
    .data_free = gh_cuda_data_free,
    .accumulate = gh_cuda_accumulate,
    .acc_fetch = gh_cuda_acc_fetch,
};
static const gh_ops_pairs cuda_pairs = {.data_set_pairs = gh_cuda_data_set_pairs};
static const gh_ops_resident cuda_resident = {
    .data_bytes = gh_cuda_data_bytes,
    .data_evict = gh_cuda_data_evict,
    .data_reload = gh_cuda_data_reload,
    .loglikes_data = gh_cuda_loglikes_data,
};
static const gh_ops_mstep cuda_mstep_ops = {
    .mstep = cuda_mstep, /* kernels/cuda/cuda-mstep.cu */
    .model_fetch = cuda_model_fetch,
};
static const gh_ops_hash cuda_hash = {.model_hash = cuda_model_hash};
static const gh_ops_hmm cuda_hmm = {
    .hmm_upload = gh_cuda_hmm_upload,
    .hmm_free = gh_cuda_hmm_free,
    .hmm_forward = gh_cuda_hmm_forward,
    .hmm_viterbi = gh_cuda_hmm_viterbi,
    .hmm_fb = gh_cuda_hmm_fb,
};
static const gh_ops_hmm_dev cuda_hmm_dev = {
    .hmm_fb_pairs = gh_cuda_hmm_fb_pairs,
    .hmm_estep_pairs = gh_cuda_hmm_estep_pairs,
};
static const gh_ops_hmm_reweight cuda_hmm_reweight = {.hmm_reweight = gh_cuda_hmm_reweight};
static const gh_ops_shrink cuda_shrink = {.acc_shrink = gh_cuda_acc_shrink}; /* kernels/cuda/shrink.cu */
static const gh_ops_host_mem cuda_host_mem = {.host_alloc = cuda_host_alloc, .host_free = cuda_host_free};
static const gh_ops_pipeline cuda_pipeline = {
    .loglikes_begin = gh_cuda_loglikes_begin,
    .loglikes_end = gh_cuda_loglikes_end,
};
static const gh_ops_dist cuda_dist = {
    .acc_raw_size = gh_cuda_acc_raw_size,
    .acc_raw_get = gh_cuda_acc_raw_get,
    .acc_raw_set = gh_cuda_acc_raw_set,
    .acc_commit = gh_cuda_acc_commit,
    .acc_master_get = gh_cuda_acc_master_get,
};
static const gh_ops_nccl cuda_nccl = {
    .acc_raw_device = gh_cuda_acc_raw_device,
    .acc_master_device = gh_cuda_acc_master_device,
};
static const gh_ops_gselect cuda_gselect = {.acc_gselect = gh_cuda_acc_gselect}; /* kernels/cuda/gselect.cu */
static const gh_ops_kmeans cuda_kmeans = {                                       /* kernels/cuda/cuda-kmeans.cu */
    .kmeans_upload = cuda_kmeans_upload,
    .kmeans_nearest = cuda_kmeans_nearest,
    .kmeans_fetch = cuda_kmeans_fetch,
    .kmeans_free = cuda_kmeans_free,
};
static const gh_ops_subset cuda_subset = {
    .loglikes_subset_ok = gh_cuda_loglikes_subset_ok,
    .loglikes_subset = gh_cuda_loglikes_subset,
};
static const gh_ops_align cuda_align = {.align_batch = gh_cuda_align_batch}; /* kernels/cuda/cuda-align.cu */
static const gh_backend_ops cuda_ops = {
    .name = "cuda",
    .gmm = &cuda_gmm,
    .pairs = &cuda_pairs,
    .resident = &cuda_resident,
    .mstep = &cuda_mstep_ops,
    .hash = &cuda_hash,
    .hmm = &cuda_hmm,
    .hmm_dev = &cuda_hmm_dev,
    .hmm_reweight = &cuda_hmm_reweight,
    .shrink = &cuda_shrink,
    .host_mem = &cuda_host_mem,
    .pipeline = &cuda_pipeline,
    .dist = &cuda_dist,
    .nccl = &cuda_nccl,
    .gselect = &cuda_gselect,
    .kmeans = &cuda_kmeans,
    .subset = &cuda_subset,
    .align = &cuda_align,
};

/* The slot of the backend's HMM scratch (kernels/cuda/cuda-hmm.cu). */
extern "C" void **gh_cuda_hmm_scratch_slot(gh_backend *b) { return &((cuda_ctx *)b->ctx)->hmm_scratch; }

extern "C" const char *gh_cuda_error_text(int err);

extern "C" int gh_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    gh_set_error("%s", gh_cuda_error_text(e)); /* kernels/cuda/device.cu */
    cudaGetLastError();
    return 0;
  }
  if (n == 0) gh_set_error("no CUDA device found");
  return n;
}

extern "C" void gh_cuda_thread_attach(gh_backend *b) {
  if (!b || b->ops != &cuda_ops) return;
  CK(cudaSetDevice(((cuda_ctx *)b->ctx)->device));
}

/* The architectures this build has code for, as the Makefile's -gencode
 * list gives them ("sm_90a compute_90": SASS for sm_90a, PTX for
 * compute_90). */
#ifndef GH_CUDA_ARCHS
#error "GH_CUDA_ARCHS: the Makefile passes the -gencode list's code= values (e.g. \"sm_90a compute_90\")"
#endif

/* The build's architectures (GH_CUDA_ARCHS, e.g. "sm_90a compute_90"). */
extern "C" const char *gh_cuda_build_archs(void) { return GH_CUDA_ARCHS; }

/* The current device's compute capability: 0, or -1 with gh_last_error()
 * set when CUDA cannot say. */
extern "C" int gh_cuda_device_capability(int *major, int *minor) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) {
    gh_set_error("%s", cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
  }
  return 0;
}

/* 1 when the architectures archs (GH_CUDA_ARCHS's form: sm_XY[a|f] and
 * compute_XY[a|f], space-separated) hold code that a device of compute
 * capability major.minor runs, else 0: SASS sm_XY on X.y for y >= Y
 * (sm_XYa: on X.Y only; sm_XYf: X.y, y >= Y), PTX compute_XY, which the
 * driver compiles, on every capability >= X.Y (compute_XYa: X.Y only;
 * compute_XYf: X.y, y >= Y).  Other words are ignored. */
extern "C" int gh_cuda_archs_run_on(const char *archs, int major, int minor) {
  const int cc = 10 * major + minor;
  for (const char *p = archs; *p;) {
    while (*p == ' ') ++p;
    const int sass = !strncmp(p, "sm_", 3), ptx = !strncmp(p, "compute_", 8);
    if (sass || ptx) {
      char *end;
      const long v = strtol(p + (sass ? 3 : 8), &end, 10);
      const char suf = *end;
      if (v > 0 && (suf == 'a' ? v == cc
                                : suf == 'f' || sass ? v / 10 == major && v % 10 <= minor
                                                     : v <= cc))
        return 1;
    }
    while (*p && *p != ' ') ++p;
  }
  return 0;
}

/* The CUDA backend on the current device (cudaGetDevice, so
 * CUDA_VISIBLE_DEVICES chooses); NULL with gh_last_error() set if no
 * device can be used, among them a device whose compute capability this
 * build has no code for (GH_CUDA_ARCHS: "CUDA device 0 (NAME) has compute
 * capability 8.0; this build has code for sm_90a compute_90 only"):
 * --device=cuda dies with that line, --device=auto warns and takes the
 * next choice (backend.c). */
extern "C" gh_backend *gh_backend_cuda_new(void) {
  if (gh_cuda_device_count() <= 0) return NULL;
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  cudaDeviceProp prop;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
  if (e == cudaSuccess && !gh_cuda_archs_run_on(GH_CUDA_ARCHS, prop.major, prop.minor)) {
    gh_set_error("CUDA device %d (%s) has compute capability %d.%d; this build has code for %s only (the "
                 "Makefile's -gencode list)", dev, prop.name, prop.major, prop.minor, GH_CUDA_ARCHS);
    return NULL;
  }
  if (e == cudaSuccess) {
    gg_preload(); /* cuBLAS's dlopen beside the context's creation */
    e = cudaFree(0); /* create the context now */
  }
  if (e != cudaSuccess) {
    gh_set_error("%s", cudaGetErrorString(e));
    cudaGetLastError();
    return NULL;
  }
  gh_backend *b = (gh_backend *)gh_calloc(1, sizeof *b);
  cuda_ctx *c = (cuda_ctx *)gh_calloc(1, sizeof *c);
  c->device = dev;
  CK(cudaMalloc((void **)&c->dTotal, sizeof(double)));
  c->stats_smem_max = gh_cuda_estep_smem_limit(prop.sharedMemPerBlockOptin);
  b->ops = &cuda_ops;
  b->ctx = c;
  snprintf(b->device_name, sizeof b->device_name, "cuda (%.100s)", prop.name);
  return b;
}
