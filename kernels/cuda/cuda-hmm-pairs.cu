/* cuda-hmm-pairs.cu -- the E-step pairs of hmm-bw and hmm-train made on the
 * device (backend.h hmm_fb_pairs, hmm_estep_pairs): per chunk of the
 * general path (cuda-hmm-batch.cu), the (frame, pdf, weight) pairs of the
 * utterances' gamma (k_fb_pairs, the host's gh_hmm_gamma_pairs operation
 * for operation) or Viterbi paths (k_vit_pairs), counted, prefix-summed
 * (cub) and written, appended to the host's buffer or kept on the device.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-hmm.h"

/* hmm-bw's pdf posteriors (backend.h gh_hmm_gamma_pairs, whose loops this
 * follows operation for operation) of a chunk's utterances from their
 * gamma (k_hmm_backward's, device), one block per utterance, a thread per
 * frame.  A state with gamma > 0 (NaN included, as the host's test) starts
 * its pdf's sum unless an earlier state of the same pdf (same_prev chain)
 * has gamma > 0; the sum then adds the later ones (same_next chain) in
 * double, in state order.  WRITE = 0: cnt[frame] = the frame's pairs;
 * WRITE = 1: the pairs at out + off[frame] (the exclusive prefix sums of
 * cnt over the chunk's frames, so utterances and frames in order), frame
 * fbase + the chunk frame, pdf col_pdf[ud.pad + column] (or the column
 * when col_pdf is NULL or ud.pad < 0: the utterance's map, gh_cuda_hmm_run). */
template <int WRITE>
__global__ void k_fb_pairs(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ gamma,
                           const double *__restrict__ loglik, const int *__restrict__ col_pdf, long long fbase,
                           double min_post, long long *cnt, const long long *__restrict__ off,
                           gh_frame_pdf *out) {
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S;
  const int *pdf = g.pdf + G.sbase, *prv = g.same_prev + G.sbase, *nxt = g.same_next + G.sbase;
  const bool ok = loglik[d.u] > -INFINITY;
  for (int t = threadIdx.x; t < d.T; t += blockDim.x) {
    const float *gr = gamma + d.state0 + (long long)t * S;
    long long n = 0, q = WRITE ? off[d.frame0 + t] : 0;
    for (int j = 0; ok && j < S; ++j) {
      const float v = gr[j];
      if (v <= 0.f) continue;
      bool first = true;
      for (int k = prv[j]; k >= 0; k = prv[k])
        if (!(gr[k] <= 0.f)) { first = false; break; }
      if (!first) continue;
      double sum = 0.0;
      sum += v;
      for (int k = nxt[j]; k >= 0; k = nxt[k]) {
        const float x = gr[k];
        if (!(x <= 0.f)) sum += x;
      }
      if (sum >= min_post && sum > 0) {
        const float w = (float)sum;
        if (w != 0.0f) {
          if (WRITE) {
            gh_frame_pdf pr;
            pr.frame = (int32_t)(fbase + d.frame0 + t);
            pr.pdf = col_pdf && d.pad >= 0 ? col_pdf[d.pad + pdf[j]] : pdf[j];
            pr.weight = w;
            out[q++] = pr;
          } else {
            ++n;
          }
        }
      }
    }
    if (!WRITE) cnt[d.frame0 + t] = n;
  }
}

/* Viterbi training's pairs (backend.h hmm_estep_pairs, op
 * GH_HMM_ESTEP_VITERBI; the host's rule in gh_backend_hmm_estep_pairs) of a
 * chunk's utterances from their device path (k_hmm_viterbi's), one block per
 * utterance, a thread per frame: one pair (frame, pdf of the path's state,
 * 1) per frame of an utterance with a complete path (score > -inf and a
 * state at its first frame); an utterance without one gets score -inf and
 * no pairs.  WRITE, cnt, off, col_pdf, out: as k_fb_pairs. */
template <int WRITE>
__global__ void k_vit_pairs(HArrays g, const UDesc *__restrict__ ud, const int *__restrict__ path, double *score,
                            const int *__restrict__ col_pdf, long long fbase, long long *cnt,
                            const long long *__restrict__ off, gh_frame_pdf *out) {
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int *pdf = g.pdf + G.sbase, *pu = path + d.frame0;
  const bool ok = d.T > 0 && score[d.u] > -INFINITY && pu[0] >= 0;
  if (WRITE && !ok && d.T > 0 && threadIdx.x == 0) score[d.u] = -INFINITY;
  for (int t = threadIdx.x; t < d.T; t += blockDim.x) {
    if (!WRITE) {
      cnt[d.frame0 + t] = ok ? 1 : 0;
    } else if (ok) {
      gh_frame_pdf pr;
      pr.frame = (int32_t)(fbase + d.frame0 + t);
      const int j = pu[t];
      pr.pdf = col_pdf && d.pad >= 0 ? col_pdf[d.pad + pdf[j]] : pdf[j];
      pr.weight = 1.0f;
      out[off[d.frame0 + t]] = pr;
    }
  }
}

/* The chunk's pairs (k_fb_pairs or, op OP_VIT, k_vit_pairs: count, prefix
 * sums, write) appended to pq->out; src: the chunk's gamma (float) or path
 * (int), on the device; dUd its utterance descriptors and col the column
 * maps (NULL: none) on the device; F the chunk's frames, f0 its first
 * frame in the batch. */
void gh_cuda_hmm_chunk_pairs(gh_dev_hmm *h, const UDesc *dUd, const int *col, const PairReq *pq, int op,
                             const void *src, int32_t nu, int nt, int64_t F, int64_t f0) {
  if (F == 0) return;
  const long long fbase = (long long)pq->frame_base + f0;
  /* cnt [F + 1] (cnt[F] = 0) and its exclusive prefix sums off [F + 1]:
   * off[F] is the count, one read-back */
  hgrow_dev((void **)&h->s->dPCnt, &h->s->capPCnt, 2 * (size_t)F + 3, sizeof(long long));
  long long *cnt = h->s->dPCnt, *off = h->s->dPCnt + F + 1;
  CK(cudaMemsetAsync(cnt + F, 0, sizeof(long long)));
  const float *gamma = (const float *)src;
  const int *path = (const int *)src;
  const int vit = op == OP_VIT;
  if (vit) k_vit_pairs<0><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, cnt, NULL, NULL);
  else k_fb_pairs<0><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, cnt, NULL, NULL);
  CK(cudaGetLastError());
  size_t tb = 0;
  CK(cub::DeviceScan::ExclusiveSum(NULL, tb, cnt, off, (int64_t)F + 1));
  hgrow_dev(&h->s->dScanTmp, &h->s->capScanTmp, tb + 1, 1);
  CK(cub::DeviceScan::ExclusiveSum(h->s->dScanTmp, tb, cnt, off, (int64_t)F + 1));
  long long n = 0;
  CK(cudaMemcpy(&n, off + F, sizeof(long long), cudaMemcpyDeviceToHost));
  if (n == 0) {
    if (vit) { /* still: the scores of utterances without a complete path to -inf */
      k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, NULL);
      CK(cudaGetLastError());
    }
    return;
  }
  hgrow_dev((void **)&h->s->dPairs, &h->s->capPairs, (size_t)n, sizeof(gh_frame_pdf));
  if (!pq->out) { /* kept on the device: after the earlier chunks' pairs */
    HScratch *s = h->s;
    if (s->capPairsB < (size_t)(s->nPairsB + n)) {
      const size_t want = (size_t)(s->nPairsB + n) + (size_t)(s->nPairsB + n) / 4 + 1024;
      gh_frame_pdf *nb = NULL;
      CK(cudaMalloc((void **)&nb, want * sizeof(gh_frame_pdf)));
      if (s->nPairsB) CK(cudaMemcpy(nb, s->dPairsB, (size_t)s->nPairsB * sizeof(gh_frame_pdf), cudaMemcpyDeviceToDevice));
      cudaFree(s->dPairsB);
      s->dPairsB = nb;
      s->capPairsB = want;
    }
    if (vit) k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, s->dPairsB + s->nPairsB);
    else k_fb_pairs<1><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, NULL, off,
                                   s->dPairsB + s->nPairsB);
    CK(cudaGetLastError()); /* (gh_cuda_hmm_run's read-back synchronises) */
    s->nPairsB += n;
    return;
  }
  if (vit) k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, h->s->dPairs);
  else k_fb_pairs<1><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, NULL, off, h->s->dPairs);
  CK_LAUNCH(vit ? "Viterbi pairs" : "forward-backward pairs");
  gh_pair_buf_reserve(pq->out, n);
  CK(cudaMemcpy(pq->out->v + pq->out->n, h->s->dPairs, (size_t)n * sizeof(gh_frame_pdf), cudaMemcpyDeviceToHost));
  pq->out->n += n;
}
