/* cuda-data.cu -- E-step data resident on the device (backend.h
 * data_upload, data_set_pairs, data_free, data_bytes / data_evict /
 * data_reload): the frames padded to the device pitch, the (frame, pdf,
 * weight) pairs sorted by pdf -- on the host, or on the device with cub's
 * radix sort for pairs made there (gh_cuda_data_set_pairs_dev, hmm-train's
 * E-step) -- and the page-locked copies that eviction keeps.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-ctx.h"

static void cuda_data_sort(cuda_ctx *c, cuda_data *d, const gh_frame_pdf *pairs, int64_t npairs);

gh_dev_data *gh_cuda_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D,
                                 const gh_frame_pdf *pairs, int64_t npairs) {
  cuda_data *d = (cuda_data *)gh_calloc(1, sizeof *d);
  d->T = T; d->D = D; d->Dp = round4(D); d->pairs = pairs; d->npairs = npairs;
  d->hXin = X;
  if (D <= 0 || T < 0) gh_die("data upload: %d frames of dimension %d", T, D);
  d->max_pdf = gh_pairs_check(pairs, npairs, T);
  /* frames, padded, through two page-locked staging buffers of 16 MB: one
   * is filled while the other's copy runs.  (One staging buffer of the whole
   * data page-locked 1.28 GB for 8M frames at D=40; page-locking costs ~1 s
   * per 3 GB: bench/RESULTS.md D14.) */
  const size_t Dp = (size_t)d->Dp, total = (size_t)T * Dp;
  cudaError_t e = cudaMalloc((void **)&d->dX, (total ? total : 1) * sizeof(float));
  if (e != cudaSuccess)
    gh_die("data upload: cannot hold %d frames of dimension %d on the GPU (%s); split the data", T, D,
           cudaGetErrorString(e));
  if (T > 0) {
    const size_t rows = ((size_t)4 << 20) / Dp > 0 ? ((size_t)4 << 20) / Dp : 1; /* frames per buffer */
    cuda_ctx *cx = (cuda_ctx *)b->ctx;
    if (cx->stage_floats < rows * Dp) { /* allocated once per backend, reused by later uploads */
      for (int j = 0; j < 2; ++j)
        if (cx->hStage[j]) { CK(cudaFreeHost(cx->hStage[j])); CK(cudaEventDestroy(cx->evStage[j])); }
      for (int j = 0; j < 2; ++j) {
        CK(cudaMallocHost((void **)&cx->hStage[j], rows * Dp * sizeof(float)));
        CK(cudaEventCreateWithFlags(&cx->evStage[j], cudaEventDisableTiming));
      }
      cx->stage_floats = rows * Dp;
    }
    float *h[2] = {cx->hStage[0], cx->hStage[1]};
    cudaEvent_t *done = cx->evStage;
    int k = 0;
    for (size_t t0 = 0; t0 < (size_t)T; t0 += rows, k ^= 1) {
      const size_t n = (size_t)T - t0 < rows ? (size_t)T - t0 : rows;
      if (t0 >= 2 * rows) CK(cudaEventSynchronize(done[k])); /* buffer k's last copy is done */
      gh_pack_rows(h[k], Dp, X + t0 * D, (size_t)D, n);
      CK(cudaMemcpyAsync(d->dX + t0 * Dp, h[k], n * Dp * sizeof(float), cudaMemcpyHostToDevice, 0));
      CK(cudaEventRecord(done[k], 0));
    }
    CK(cudaStreamSynchronize(0));
  }
  d->centre = (double *)gh_calloc(D, sizeof(double));
  cuda_data_sort((cuda_ctx *)b->ctx, d, pairs, npairs);
  return (gh_dev_data *)d;
}

/* d's pairs sorted by pdf on the device (dFrames, dW; host offsets poff)
 * and a fresh expanded-feature cache (the cache holds each pdf's frames).
 * The pairs are checked and sorted on the host in parallel (gh_pairs_sort_by_pdf, which sets
 * d->max_pdf) into the page-locked staging. */
/* Room for n pairs in d's dFrames and dW (kept when they fit: set_pairs
 * reuses them; contents not kept otherwise). */
static void data_pairs_room(cuda_data *d, size_t n) {
  if (d->capPairs >= n && d->dFrames) return;
  cudaFree(d->dFrames); cudaFree(d->dW);
  d->capPairs = n + n / 8 + 1;
  CK(cudaMalloc((void **)&d->dFrames, d->capPairs * sizeof(int32_t)));
  CK(cudaMalloc((void **)&d->dW, d->capPairs * sizeof(float)));
}

static void cuda_data_sort(cuda_ctx *c, cuda_data *d, const gh_frame_pdf *pairs, int64_t npairs) {
  d->pairs = pairs;
  d->npairs = npairs;
  const size_t n = (size_t)npairs;
  if (c->capSort < n) { /* page-locked, kept for the next block (a trainer sorts one after another) */
    if (c->hSortF) { CK(cudaFreeHost(c->hSortF)); CK(cudaFreeHost(c->hSortW)); }
    c->capSort = n + n / 4 + 1024;
    CK(cudaMallocHost((void **)&c->hSortF, c->capSort * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&c->hSortW, c->capSort * sizeof(float)));
  }
  int32_t *hf = c->hSortF;
  float *hw = c->hSortW;
  d->poff = gh_pairs_sort_by_pdf(pairs, npairs, d->T, &d->max_pdf, hf, hw); /* checked, sorted, in parallel */
  data_pairs_room(d, n);
  CK(cudaMemcpy(d->dFrames, hf, n * sizeof(int32_t), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d->dW, hw, n * sizeof(float), cudaMemcpyHostToDevice));
  d->xc = gg_xcache_new(d->max_pdf + 1);
}

/* Before new pairs on d (data_set_pairs, gh_cuda_data_set_pairs_dev): d
 * resident, its reloads done, no E-step still reading the old pairs; the
 * offsets, the expanded-feature cache and the host backend's copy (hb: the
 * ctx's host backend, or NULL when there is none) dropped. */
static void data_pairs_begin(gh_backend *hb, cuda_data *d, const char *what) {
  if (d->evicted) gh_die("%s: the data block was evicted (data_reload first)", what);
  if (d->host_d) { /* the host backend's copy (models evaluated there) had the old pairs */
    if (hb) hb->ops->gmm->data_free(hb, d->host_d);
    d->host_d = NULL;
  }
  if (d->pending) { CK(cudaEventSynchronize(d->ready)); d->pending = 0; }
  CK(cudaDeviceSynchronize());
  gg_xcache_free(d->xc);
  d->xc = NULL;
  free(d->poff);
  d->poff = NULL;
  free(d->own_pairs);
  d->own_pairs = NULL;
}

/* After new pairs on d: the page-locked copy of data_evict follows them. */
static void data_pairs_end(cuda_data *d) {
  if (d->hX) {
    cudaFreeHost(d->hF); cudaFreeHost(d->hW);
    const size_t np = (size_t)d->npairs;
    CK(cudaMallocHost((void **)&d->hF, (np ? np : 1) * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&d->hW, (np ? np : 1) * sizeof(float)));
    CK(cudaMemcpy(d->hF, d->dFrames, np * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hW, d->dW, np * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

/* backend.h data_set_pairs: the frames and the GEMM centre stay; the
 * pairs, their offsets and the expanded-feature cache are replaced. */
void gh_cuda_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs) {
  cuda_data *d = (cuda_data *)dd;
  data_pairs_begin(((cuda_ctx *)b->ctx)->host, d, "data_set_pairs");
  cuda_data_sort((cuda_ctx *)b->ctx, d, pairs, npairs); /* checks the pairs, sets max_pdf */
  data_pairs_end(d);
}

/* gh_cuda_data_set_pairs_dev's kernels.  k_pairs_keys: key[k] = the pdf of
 * pair k, idx[k] = k; *bad = 1 + the smallest index of a pair outside
 * 0 <= frame < T, 0 <= pdf < bound (atomicMin over 1 + k; left at
 * 0xffffffff: none).
 * k_pairs_gather: sorted pair k's frame and weight, the weight in double.
 * k_pairs_off: off[p] = the first sorted position whose key >= p,
 * p = 0 .. P1 - 1 (binary search). */
__global__ void k_pairs_keys(const gh_frame_pdf *__restrict__ pairs, long long n, int T, int bound,
                             int *__restrict__ key, int *__restrict__ idx, unsigned *bad) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const gh_frame_pdf p = pairs[k];
  if (p.frame < 0 || p.frame >= T || p.pdf < 0 || p.pdf >= bound) atomicMin(bad, (unsigned)k + 1u);
  key[k] = p.pdf;
  idx[k] = (int)k;
}
__global__ void k_pairs_gather(const gh_frame_pdf *__restrict__ pairs, const int *__restrict__ idx, long long n,
                               int32_t *__restrict__ F, float *__restrict__ W, double *__restrict__ Wd) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const gh_frame_pdf p = pairs[idx[k]];
  F[k] = p.frame;
  W[k] = p.weight;
  Wd[k] = (double)p.weight;
}
__global__ void k_pairs_off(const int *__restrict__ key, long long n, int P1, long long *__restrict__ off) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P1) return;
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (key[mid] < p) lo = mid + 1; else hi = mid;
  }
  off[p] = lo;
}

/* New pairs for d from the device (hmm_estep_pairs, kernels/cuda/cuda-hmm.cu):
 * dPairs [n] (device, any order), each with 0 <= frame < d's rows and
 * 0 <= pdf < bound (dies naming the first that is not), become d's E-step
 * pairs as data_set_pairs makes them from host pairs -- sorted by pdf,
 * stable (cub's LSD radix sort on the pdf with the pair's index as value),
 * so the same dFrames, dW and offsets bit for bit -- without leaving the
 * device but the P + 1 offsets.  *wsum = the sum of the weights in double,
 * in a fixed order (gg_sum_into over pdf-sorted pairs).  Dies as
 * data_set_pairs on an evicted d.  One synchronisation: the check of the
 * pairs, the last pdf, the sum and the offsets of all pdfs < bound come
 * back in one read (the sort and the offsets are memory-safe whatever the
 * keys; a bad pair dies after it). */
extern "C" void gh_cuda_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *dPairs, int64_t n,
                                           int32_t bound, double *wsum) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_data *d = (cuda_data *)dd;
  data_pairs_begin(c->host, d, "data_set_pairs (device)");
  if (n < 0 || n >= INT32_MAX) gh_die("data_set_pairs (device): %lld pairs in one block (at most %d)", (long long)n, INT32_MAX - 1);
  d->pairs = NULL;
  d->npairs = n;
  *wsum = 0.0;
  const size_t un = (size_t)n;
  data_pairs_room(d, un);
  if (n == 0) {
    d->max_pdf = -1;
    d->poff = (int64_t *)gh_calloc(1, sizeof(int64_t));
  } else {
    if (c->capSortKI < un) {
      for (int k = 0; k < 2; ++k) { cudaFree(c->dSortK[k]); cudaFree(c->dSortI[k]); }
      c->capSortKI = un + un / 4 + 1024;
      for (int k = 0; k < 2; ++k) {
        CK(cudaMalloc((void **)&c->dSortK[k], c->capSortKI * sizeof(int)));
        CK(cudaMalloc((void **)&c->dSortI[k], c->capSortKI * sizeof(int)));
      }
    }
    dgrow((void **)&c->dSortWd, &c->capSortWd, un, sizeof(double), 0);
    /* the offsets of pdfs 0 .. bound [P1b], then a mailbox mb: [0] the first
     * bad pair + 1 (unsigned, 0xffffffff: none), [1] the last sorted pdf
     * (int), [2] the sum of the weights (double) */
    const size_t P1b = (size_t)bound + 1;
    dgrow((void **)&c->dSortOff, &c->capSortOff, P1b + 3, sizeof(long long), 0);
    long long *doff = c->dSortOff, *mb = c->dSortOff + P1b;
    CK(cudaMemsetAsync(mb, 0xff, sizeof(long long)));
    CK(cudaMemsetAsync(mb + 2, 0, sizeof(long long)));
    const int nb = (int)((n + 255) / 256);
    k_pairs_keys<<<nb, 256>>>(dPairs, (long long)n, d->T, bound, c->dSortK[0], c->dSortI[0], (unsigned *)mb);
    CK(cudaGetLastError());
    int end_bit = 1;
    while (end_bit < 31 && (1LL << end_bit) < (long long)bound) ++end_bit;
    size_t tb = 0;
    CK(cub::DeviceRadixSort::SortPairs(NULL, tb, c->dSortK[0], c->dSortK[1], c->dSortI[0], c->dSortI[1], (int)n, 0,
                                       end_bit));
    dgrow(&c->dSortTmp, &c->capSortTmp, tb + 1, 1, 0);
    CK(cub::DeviceRadixSort::SortPairs(c->dSortTmp, tb, c->dSortK[0], c->dSortK[1], c->dSortI[0], c->dSortI[1], (int)n,
                                       0, end_bit));
    k_pairs_gather<<<nb, 256>>>(dPairs, c->dSortI[1], (long long)n, d->dFrames, d->dW, c->dSortWd);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(mb + 1, c->dSortK[1] + (n - 1), sizeof(int), cudaMemcpyDeviceToDevice));
    k_pairs_off<<<(int)((P1b + 255) / 256), 256>>>(c->dSortK[1], (long long)n, (int)P1b, doff);
    CK(cudaGetLastError());
    gg_sum_into(c->dSortWd, n, (double *)(mb + 2));
    long long *h = (long long *)gh_malloc((P1b + 3) * sizeof(long long));
    CK(cudaMemcpy(h, doff, (P1b + 3) * sizeof(long long), cudaMemcpyDeviceToHost));
    unsigned bad;
    memcpy(&bad, &h[P1b], sizeof bad);
    if (bad != 0xffffffffu) {
      gh_frame_pdf p;
      CK(cudaMemcpy(&p, dPairs + (bad - 1), sizeof p, cudaMemcpyDeviceToHost));
      gh_die("data_set_pairs (device): pair %u (frame %d, pdf %d) outside %d frames and %d pdfs", bad - 1, p.frame,
             p.pdf, d->T, bound);
    }
    int last;
    memcpy(&last, &h[P1b + 1], sizeof last);
    memcpy(wsum, &h[P1b + 2], sizeof *wsum);
    d->max_pdf = last; /* < bound: every pair was checked */
    const size_t P1 = (size_t)last + 2;
    d->poff = (int64_t *)gh_malloc(P1 * sizeof(int64_t));
    memcpy(d->poff, h, P1 * sizeof(int64_t));
    free(h);
  }
  d->xc = gg_xcache_new(d->max_pdf + 1);
  data_pairs_end(d);
}

/* d's pairs on the host (a model evaluated on the host backend needs them)
 * when they were set on the device: rebuilt from dFrames, dW and the
 * offsets, in pdf order (each pdf's pairs in their order, so the host
 * backend's stable sort gives the same E-step). */
const gh_frame_pdf *gh_cuda_data_host_pairs(cuda_data *d) {
  if (d->pairs || d->npairs == 0) return d->pairs;
  if (!d->own_pairs) {
    const size_t n = (size_t)d->npairs;
    int32_t *f = (int32_t *)gh_malloc(n * sizeof(int32_t));
    float *w = (float *)gh_malloc(n * sizeof(float));
    CK(cudaMemcpy(f, d->dFrames, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(w, d->dW, n * sizeof(float), cudaMemcpyDeviceToHost));
    d->own_pairs = (gh_frame_pdf *)gh_malloc(n * sizeof(gh_frame_pdf));
    for (int32_t p = 0; p <= d->max_pdf; ++p)
      for (int64_t k = d->poff[p]; k < d->poff[p + 1]; ++k) d->own_pairs[k] = (gh_frame_pdf){f[k], p, w[k]};
    free(f);
    free(w);
  }
  return d->own_pairs;
}

void gh_cuda_data_free(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (!d) return;
  if (d->pending) cudaEventSynchronize(d->ready);
  cudaFree(d->dX); cudaFree(d->dFrames); cudaFree(d->dW);
  gg_xcache_free(d->xc);
  if (d->hX) { cudaFreeHost(d->hX); cudaFreeHost(d->hF); cudaFreeHost(d->hW); }
  if (d->cs) { cudaEventDestroy(d->ready); cudaStreamDestroy(d->cs); }
  if (d->host_d) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->gmm->data_free(h, d->host_d); }
  free(d->poff); free(d->centre); free(d->own_pairs);
  free(d);
}

/* backend.h data_bytes / data_evict / data_reload.  The centre (set by the
 * first accumulate) and the host-side pair offsets stay; the expanded
 * features' cache is dropped (recomputed from the same frames and centre,
 * so the statistics are the same bytes). */
int64_t gh_cuda_data_bytes(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  const int64_t np = (int64_t)d->capPairs > d->npairs ? (int64_t)d->capPairs : d->npairs;
  return (int64_t)d->T * d->Dp * (int64_t)sizeof(float) + np * (int64_t)(sizeof(int32_t) + sizeof(float));
}

void gh_cuda_data_evict(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (d->evicted) return;
  if (d->pending) { CK(cudaEventSynchronize(d->ready)); d->pending = 0; }
  const size_t nx = (size_t)d->T * d->Dp, np = (size_t)d->npairs;
  if (!d->hX) { /* read back once into page-locked memory: later reloads are DMA from it */
    CK(cudaMallocHost((void **)&d->hX, (nx ? nx : 1) * sizeof(float)));
    CK(cudaMallocHost((void **)&d->hF, (np ? np : 1) * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&d->hW, (np ? np : 1) * sizeof(float)));
    CK(cudaMemcpy(d->hX, d->dX, nx * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hF, d->dFrames, np * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hW, d->dW, np * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaStreamCreateWithFlags(&d->cs, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming));
  }
  CK(cudaFree(d->dX)); CK(cudaFree(d->dFrames)); CK(cudaFree(d->dW));
  d->dX = NULL; d->dFrames = NULL; d->dW = NULL;
  d->capPairs = 0;
  gg_xcache_free(d->xc);
  d->xc = NULL;
  d->evicted = 1;
}

void gh_cuda_data_reload(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (!d->evicted) return;
  const size_t nx = (size_t)d->T * d->Dp, np = (size_t)d->npairs;
  cudaError_t e = cudaMalloc((void **)&d->dX, (nx ? nx : 1) * sizeof(float));
  if (e != cudaSuccess)
    gh_die("data reload: cannot hold %d frames of dimension %d on the GPU (%s); lower --max-device-memory", d->T,
           d->D, cudaGetErrorString(e));
  CK(cudaMalloc((void **)&d->dFrames, (np ? np : 1) * sizeof(int32_t)));
  CK(cudaMalloc((void **)&d->dW, (np ? np : 1) * sizeof(float)));
  d->capPairs = np ? np : 1;
  CK(cudaMemcpyAsync(d->dX, d->hX, nx * sizeof(float), cudaMemcpyHostToDevice, d->cs));
  CK(cudaMemcpyAsync(d->dFrames, d->hF, np * sizeof(int32_t), cudaMemcpyHostToDevice, d->cs));
  CK(cudaMemcpyAsync(d->dW, d->hW, np * sizeof(float), cudaMemcpyHostToDevice, d->cs));
  CK(cudaEventRecord(d->ready, d->cs));
  d->xc = gg_xcache_new(d->max_pdf + 1);
  d->evicted = 0;
  d->pending = 1;
}
