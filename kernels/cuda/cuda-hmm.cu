/* cuda-hmm.cu -- the HMM ops of the CUDA backend (backend.h hmm_upload,
 * hmm_reweight, hmm_free, hmm_forward, hmm_viterbi, hmm_fb, hmm_fb_pairs,
 * hmm_estep_pairs): the graphs' upload and, per batch, the path that runs
 * it (semantics: kernels/backend.h; reference: kernels/cpu/cpu-hmm.c;
 * equations: doc/hmm.md; design and speeds: doc/kernels.md, "HMM kernels
 * (CUDA)").  The batched forward, Viterbi and Baum-Welch of Liu 2009
 * (cuHMM), one file per path, their shared types in cuda-hmm.h:
 *   cuda-hmm-batch.cu    the general path: one thread block per utterance
 *                        (a lane group for graphs of <= 16 states), all
 *                        utterances of a batch at once
 *   cuda-hmm-pairs.cu    hmm-train's E-step pairs from gamma or the Viterbi
 *                        path, made on the device
 *   cuda-hmm-timepar.cu  a few long utterances: chunks of frames in parallel
 *   cuda-hmm-dense.cu    one dense graph for the whole batch: a matrix
 *                        product per frame over all sequences
 *
 * Long utterances (1-8 of >= 1024 frames on graphs of <= 64 states): the
 * log-domain forward, the Viterbi and forward-backward take the
 * time-parallel path.
 *
 * Dense graphs (one graph for the whole batch, S >= 64, A >= S^2/4; no
 * alpha output): hmm_forward and hmm_viterbi take the dense batched path:
 * one GEMM (forward) or max-plus product
 * (Viterbi) per frame over all running sequences; rule and figures in
 * doc/kernels.md "Dense graphs" and bench/RESULTS.md B6-B9.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-hmm.h"

/* Frees a backend's HMM scratch (cuda.cu, when the backend is freed). */
extern "C" void gh_cuda_hmm_scratch_free(void *p) {
  HScratch *s = (HScratch *)p;
  if (!s) return;
  cudaFree(s->dLL); cudaFree(s->dState); cudaFree(s->dAlphaD); cudaFree(s->dBp); cudaFree(s->dPath);
  cudaFree(s->dLoglik); cudaFree(s->dUd); cudaFree(s->dRows); cudaFree(s->dAcc); cudaFree(s->dUStats);
  cudaFree(s->dUso); cudaFree(s->dSumIdx); cudaFree(s->dPCnt); cudaFree(s->dPairs); cudaFree(s->dScanTmp);
  cudaFree(s->dCol); cudaFree(s->dLLB); cudaFree(s->dPairsB);
  free(s);
}

static HScratch *scratch_of(gh_backend *b) {
  void **slot = gh_cuda_hmm_scratch_slot(b);
  if (!*slot) *slot = gh_calloc(1, sizeof(HScratch));
  return (HScratch *)*slot;
}

static double g_hmm_kernel_seconds = 0.0;

/* Seconds spent in the HMM kernels so far (device time by events, excluding
 * transfers), for the benchmark lines of test_hmm_cuda. */
extern "C" double gh_cuda_hmm_kernel_seconds(void) { return g_hmm_kernel_seconds; }

/* Waits for ev1 (recorded after the work enqueued since ev0) and adds the
 * time between them to g_hmm_kernel_seconds. */
void gh_cuda_hmm_kernel_time_add(cudaEvent_t ev0, cudaEvent_t ev1) {
  CK(cudaEventSynchronize(ev1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, ev0, ev1));
  g_hmm_kernel_seconds += ms * 1e-3;
}
/* ... after recording ev1 now. */
void gh_cuda_hmm_kernel_time_end(cudaEvent_t ev0, cudaEvent_t ev1) {
  CK(cudaEventRecord(ev1));
  gh_cuda_hmm_kernel_time_add(ev0, ev1);
}

/* Copy n elements of size sz to a new device allocation (kept in h->dmem[slot]). */
static void *to_dev(gh_dev_hmm *h, int slot, const void *src, size_t n, size_t sz) {
  void *p = NULL;
  CK(cudaMalloc(&p, (n ? n : 1) * sz));
  if (n) CK(cudaMemcpy(p, src, n * sz, cudaMemcpyHostToDevice));
  h->dmem[slot] = p;
  return p;
}

/* hmm_upload: concatenates the graphs' arrays (states, arcs in graph order,
 * incoming and outgoing CSR offsets, outgoing arcs grouped by source) and
 * copies them to the device once.  Errors: gh_die on a malformed graph
 * (offsets not a CSR of its arcs) or a CUDA failure. */
/* A dense graph's matrices (allocated by the caller): A[i][j] = sum of
 * exp(logp) over the arcs i -> j in double (dA64) and float (dA32), and the
 * largest logp (dLogA, -inf without an arc). */
static void dense_fill(gh_dev_hmm *h, int32_t k, const gh_hmm_graph *s) {
  const long long S = s->num_states;
  double *a64 = (double *)gh_calloc(S * S, sizeof(double));
  float *a32 = (float *)gh_malloc(S * S * sizeof(float)), *la = (float *)gh_malloc(S * S * sizeof(float));
  for (long long e = 0; e < S * S; ++e) la[e] = -INFINITY;
  for (int a = 0; a < s->num_arcs; ++a) {
    const long long e = (long long)s->arc_src[a] * S + s->arc_dst[a];
    a64[e] += exp((double)s->arc_logp[a]);
    if (s->arc_logp[a] > la[e]) la[e] = s->arc_logp[a];
  }
  for (long long e = 0; e < S * S; ++e) a32[e] = (float)a64[e];
  CK(cudaMemcpy(h->dA64[k], a64, S * S * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(h->dA32[k], a32, S * S * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(h->dLogA[k], la, S * S * sizeof(float), cudaMemcpyHostToDevice));
  free(a64); free(a32); free(la);
}

extern "C" gh_dev_hmm *gh_cuda_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs,
                                          int32_t num_graphs) {
  gh_dev_hmm *h = (gh_dev_hmm *)gh_calloc(1, sizeof *h);
  h->num_graphs = num_graphs;
  h->s = scratch_of(b);
  h->hG = (HGraph *)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(HGraph));
  long long nS = 0, nA = 0, nO = 0, nH = 0, stats = 0;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    if (s->num_states < 1 || s->num_arcs < 0 || s->in_off[0] != 0 || s->in_off[s->num_states] != s->num_arcs)
      gh_die("hmm_upload: graph %d: %d states, %d arcs, in_off[0] = %d, in_off[S] = %d (not a CSR of its arcs)",
             k, s->num_states, s->num_arcs, s->num_states > 0 ? s->in_off[0] : -1,
             s->num_states > 0 ? s->in_off[s->num_states] : -1);
    HGraph *G = &h->hG[k];
    G->S = s->num_states; G->A = s->num_arcs; G->num_pdfs = s->num_pdfs;
    G->sbase = (int)nS; G->abase = (int)nA; G->obase = (int)nO; G->stats_off = stats;
    G->hbase = (int)nH;
    nS += s->num_states; nA += s->num_arcs; nO += s->num_states + 1; nH += 2 * s->num_states;
    stats += gh_hmm_graph_stats_size(s);
  }
  if (nA + nO > INT32_MAX) gh_die("hmm_upload: %lld arcs in all: too many for the CUDA backend", nA);
  h->stats_size = stats;
  int *pdf = (int *)gh_malloc((nS + 1) * sizeof(int));
  float *init = (float *)gh_malloc((nS + 1) * sizeof(float)), *fin = (float *)gh_malloc((nS + 1) * sizeof(float));
  int *in_off = (int *)gh_malloc((nO + 1) * sizeof(int)), *out_off = (int *)gh_malloc((nO + 1) * sizeof(int));
  int *src = (int *)gh_malloc((nA + 1) * sizeof(int)), *odst = (int *)gh_malloc((nA + 1) * sizeof(int));
  int *oarc = (int *)gh_malloc((nA + 1) * sizeof(int));
  float *lp = (float *)gh_malloc((nA + 1) * sizeof(float)), *olp = (float *)gh_malloc((nA + 1) * sizeof(float));
  double *ap = (double *)gh_malloc((nA + 1) * sizeof(double));
  int *heavy = (int *)gh_malloc((nH + 1) * sizeof(int));
  int *sprev = (int *)gh_malloc((nS + 1) * sizeof(int)), *snext = (int *)gh_malloc((nS + 1) * sizeof(int));
  int maxp = 1;
  for (int32_t k = 0; k < num_graphs; ++k)
    if (graphs[k]->num_pdfs > maxp) maxp = graphs[k]->num_pdfs;
  int *last = (int *)gh_malloc((size_t)maxp * sizeof(int));
  for (int p = 0; p < maxp; ++p) last[p] = -1;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const HGraph *G = &h->hG[k];
    const int S = G->S, A = G->A;
    for (int j = 0; j < S; ++j) {
      if (s->pdf[j] < 0 || s->pdf[j] >= s->num_pdfs)
        gh_die("hmm_upload: graph %d: state %d has pdf %d (graph has %d pdfs)", k, j, s->pdf[j], s->num_pdfs);
      pdf[G->sbase + j] = s->pdf[j];
      init[G->sbase + j] = s->init[j];
      fin[G->sbase + j] = s->final[j];
      const int pj = last[s->pdf[j]];
      sprev[G->sbase + j] = pj;
      snext[G->sbase + j] = -1;
      if (pj >= 0) snext[G->sbase + pj] = j;
      last[s->pdf[j]] = j;
    }
    for (int j = 0; j < S; ++j) last[s->pdf[j]] = -1;
    int *io = in_off + G->obase, *oo = out_off + G->obase;
    for (int j = 0; j <= S; ++j) { io[j] = s->in_off[j]; oo[j] = 0; }
    for (int j = 0; j < S; ++j)
      for (int a = s->in_off[j]; a < s->in_off[j + 1]; ++a)
        if (a < 0 || a >= A || s->arc_dst[a] != j || s->arc_src[a] < 0 || s->arc_src[a] >= S)
          gh_die("hmm_upload: graph %d: arc %d (%d -> %d) does not match in_off for state %d", k, a,
                 a >= 0 && a < A ? s->arc_src[a] : -1, a >= 0 && a < A ? s->arc_dst[a] : -1, j);
    for (int a = 0; a < A; ++a) {
      src[G->abase + a] = s->arc_src[a];
      lp[G->abase + a] = s->arc_logp[a];
      ap[G->abase + a] = exp((double)s->arc_logp[a]);
      oo[s->arc_src[a] + 1]++;
    }
    for (int i = 0; i < S; ++i) oo[i + 1] += oo[i];
    int *fill = (int *)gh_malloc((S + 1) * sizeof(int));
    memcpy(fill, oo, (S + 1) * sizeof(int));
    for (int a = 0; a < A; ++a) {
      const int q = G->abase + fill[s->arc_src[a]]++;
      odst[q] = s->arc_dst[a];
      oarc[q] = a;
      olp[q] = s->arc_logp[a];
    }
    free(fill);
    HGraph *Gw = &h->hG[k];
    Gw->nhi = Gw->nho = 0;
    for (int j = 0; j < S; ++j)
      if (io[j + 1] - io[j] > HEAVY) heavy[G->hbase + Gw->nhi++] = j;
    for (int i = 0; i < S; ++i)
      if (oo[i + 1] - oo[i] > HEAVY) heavy[G->hbase + Gw->nhi + Gw->nho++] = i;
  }
  HArrays *d = &h->d;
  d->G = (const HGraph *)to_dev(h, 0, h->hG, num_graphs, sizeof(HGraph));
  d->heavy = (const int *)to_dev(h, 12, heavy, nH, sizeof(int));
  d->pdf = (const int *)to_dev(h, 1, pdf, nS, sizeof(int));
  d->init = (const float *)to_dev(h, 2, init, nS, sizeof(float));
  d->fin = (const float *)to_dev(h, 3, fin, nS, sizeof(float));
  d->in_off = (const int *)to_dev(h, 4, in_off, nO, sizeof(int));
  d->arc_src = (const int *)to_dev(h, 5, src, nA, sizeof(int));
  d->arc_logp = (const float *)to_dev(h, 6, lp, nA, sizeof(float));
  d->arc_p = (const double *)to_dev(h, 7, ap, nA, sizeof(double));
  d->out_off = (const int *)to_dev(h, 8, out_off, nO, sizeof(int));
  d->out_dst = (const int *)to_dev(h, 9, odst, nA, sizeof(int));
  d->out_arc = (const int *)to_dev(h, 10, oarc, nA, sizeof(int));
  d->out_logp = (const float *)to_dev(h, 11, olp, nA, sizeof(float));
  d->same_prev = (const int *)to_dev(h, 13, sprev, nS, sizeof(int));
  d->same_next = (const int *)to_dev(h, 14, snext, nS, sizeof(int));
  free(sprev); free(snext); free(last);
  free(pdf); free(init); free(fin); free(in_off); free(out_off); free(src); free(odst);
  free(lp); free(olp); free(ap); free(heavy);
  h->hOarc = oarc;
  h->dA64 = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  h->dA32 = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dLogA = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dA3 = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dAtp = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  h->dAtpV = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  static const char *const words[] = {"sparse", "dense", "timepar", NULL}; /* GH_CUDA_HMM */
  const int env = gh_env_word("GH_CUDA_HMM", -1, words);
  const int force = env == 1, never = env == 0;
  for (int32_t k = 0; k < num_graphs && !never; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const long long S = s->num_states;
    if (S > DENSE_MAX_S || !(force || (S >= DENSE_MIN_S && 4LL * s->num_arcs >= S * S))) continue;
    CK(cudaMalloc((void **)&h->dA64[k], S * S * sizeof(double)));
    CK(cudaMalloc((void **)&h->dA32[k], S * S * sizeof(float)));
    CK(cudaMalloc((void **)&h->dLogA[k], S * S * sizeof(float)));
    dense_fill(h, k, s);
  }
  return h;
}

/* hmm_reweight (backend.h): the log-probability arrays (init, final, arcs
 * in graph order, their exps, arcs in outgoing order) written again in
 * place, the dense matrices of dense graphs recomputed, and the lazily
 * made 3xTF32 and time-parallel matrices dropped (made again at their next
 * use). */
extern "C" void gh_cuda_hmm_reweight(gh_backend *b, gh_dev_hmm *h, const gh_hmm_graph *const *graphs,
                                     int32_t num_graphs) {
  if (num_graphs != h->num_graphs)
    gh_die("hmm_reweight: %d graphs, but %d were uploaded", num_graphs, h->num_graphs);
  long long nS = 0, nA = 0;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const HGraph *G = &h->hG[k];
    if (graphs[k]->num_states != G->S || graphs[k]->num_arcs != G->A || graphs[k]->num_pdfs != G->num_pdfs)
      gh_die("hmm_reweight: graph %d has %d states, %d arcs and %d pdfs; the uploaded one %d, %d and %d", k,
             graphs[k]->num_states, graphs[k]->num_arcs, graphs[k]->num_pdfs, G->S, G->A, G->num_pdfs);
    nS += G->S;
    nA += G->A;
  }
  float *init = (float *)gh_malloc((nS + 1) * sizeof(float)), *fin = (float *)gh_malloc((nS + 1) * sizeof(float));
  float *lp = (float *)gh_malloc((nA + 1) * sizeof(float)), *olp = (float *)gh_malloc((nA + 1) * sizeof(float));
  double *ap = (double *)gh_malloc((nA + 1) * sizeof(double));
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const HGraph *G = &h->hG[k];
    memcpy(init + G->sbase, s->init, G->S * sizeof(float));
    memcpy(fin + G->sbase, s->final, G->S * sizeof(float));
    for (int a = 0; a < G->A; ++a) {
      lp[G->abase + a] = s->arc_logp[a];
      ap[G->abase + a] = exp((double)s->arc_logp[a]);
      olp[G->abase + a] = s->arc_logp[h->hOarc[G->abase + a]];
    }
  }
  CK(cudaMemcpy((void *)h->d.init, init, nS * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy((void *)h->d.fin, fin, nS * sizeof(float), cudaMemcpyHostToDevice));
  if (nA) {
    CK(cudaMemcpy((void *)h->d.arc_logp, lp, nA * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy((void *)h->d.arc_p, ap, nA * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy((void *)h->d.out_logp, olp, nA * sizeof(float), cudaMemcpyHostToDevice));
  }
  free(init); free(fin); free(lp); free(olp); free(ap);
  for (int32_t k = 0; k < num_graphs; ++k) {
    if (h->dA64[k]) dense_fill(h, k, graphs[k]);
    cudaFree(h->dA3[k]); cudaFree(h->dAtp[k]); cudaFree(h->dAtpV[k]);
    h->dA3[k] = NULL; h->dAtp[k] = NULL; h->dAtpV[k] = NULL;
  }
}

/* hmm_free: releases the graphs and the scratch of the calls. */
extern "C" void gh_cuda_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  for (int k = 0; k < 15; ++k) cudaFree(h->dmem[k]);
  cudaFree(h->dStats); /* (the scratch is the backend's) */
  for (int32_t k = 0; k < h->num_graphs; ++k) {
    cudaFree(h->dA64[k]); cudaFree(h->dA32[k]); cudaFree(h->dLogA[k]); cudaFree(h->dA3[k]);
    cudaFree(h->dAtp[k]); cudaFree(h->dAtpV[k]);
  }
  free(h->dA64); free(h->dA32); free(h->dLogA); free(h->dA3); free(h->dAtp); free(h->dAtpV);
  gh_cuda_hmm_plan_free(h->plan);
  free(h->hOarc);
  free(h->hG);
  free(h);
}

/* The dense scaled forward's arithmetic for S states at the backend's
 * --precision prec: FP32, TF32X3 or TF32 as asked; AUTO: TF32X3 from
 * HMM_SPLIT_MIN_S states, else FP32.  Measured on an H200 (bench/RESULTS.md
 * D18; 256 sequences x 100 frames, time / max |log P - ref| /
 * |log P| against the CPU double reference): S = 4096 fp32 19.6 ms 5.9e-9,
 * tf32x3 11.4 ms 4.1e-5, tf32 6.0 ms 5.2e-5; S = 2048 6.44 / 5.27 ms;
 * S = 1024 2.80 / 2.51 ms (3.6e-8 in test_hmm_cuda); S = 512 (512
 * sequences) 2.31 / 2.05 ms, 7.4e-9 / 4.6e-6.  The tensor cores' own
 * accumulation (truncating, over the whole depth 3S) rather than the
 * operand split bounds tf32x3's error: about 2e-5 of log c_t per frame
 * at S = 4096, i.e. ~2e-5 nats a frame, inside the GMM paths' budget of
 * 1e-4 (1 + |ll|) per frame (doc/kernels.md); below 1024 states the gain
 * is ~10% and fp32 keeps its 1e-8.  The log-domain forward is always fp64. */
#define HMM_SPLIT_MIN_S 1024
static int hmm_precision(int prec, int S) {
  if (prec != GH_PREC_AUTO) return prec;
  return S >= HMM_SPLIT_MIN_S ? GH_PREC_TF32X3 : GH_PREC_FP32;
}

/* -inf from the dense path may be underflow (every state
 * > ~700 nats (double) / ~87 nats (float) below the frame's best, or a
 * final weight that small) rather than "no path": such utterances of the
 * batch are redone, one by one, by the sparse kernels (log domain, double
 * rows).  op: OP_FWD or OP_SCALED. */
static void redo_neg_inf(gh_dev_hmm *h, const gh_hmm_batch *batch, int op, double *loglik) {
  for (int32_t u = 0; u < batch->num_utts; ++u) {
    const int64_t T = batch->frame_off[u + 1] - batch->frame_off[u];
    if (T == 0 || loglik[u] > -INFINITY) continue;
    const int32_t gi = batch->graph ? batch->graph[u] : 0;
    int64_t off1[2] = {0, T};
    gh_hmm_batch b1 = {1, batch->num_pdfs, batch->loglikes + batch->frame_off[u] * batch->num_pdfs, off1, &gi};
    gh_cuda_hmm_run(h, &b1, op, loglik + u, NULL, NULL, NULL);
  }
}

/* hmm_forward (backend.h): log domain (k_hmm_forward<0>) or GH_HMM_SCALED
 * (k_hmm_scaled); loglik [B] natural log; alpha NULL or [sum T S] float.
 * A few long utterances on small graphs take the time-parallel path (log
 * domain only),
 * batches on one dense graph the dense path, the rest the sparse kernels. */
extern "C" void gh_cuda_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                                    double *loglik, float *alpha) {
  const int op = (flags & GH_HMM_SCALED) ? OP_SCALED : OP_FWD;
  if (gh_cuda_hmm_tp_batch(h, batch, op, alpha)) { /* exact in the log domain: -inf is "no path" */
    gh_cuda_hmm_tp_run(h, batch, OP_FWD, loglik, NULL, NULL, NULL);
    return;
  }
  const int g = gh_cuda_hmm_dense_graph(h, batch, op, alpha);
  if (g < 0) {
    gh_cuda_hmm_run(h, batch, op, loglik, alpha, NULL, NULL);
    return;
  }
  gh_cuda_hmm_dense_run(h, g, batch, op, hmm_precision(b->precision, h->hG[g].S), loglik, NULL);
  redo_neg_inf(h, batch, op, loglik);
}

/* hmm_viterbi (backend.h): path [frames] state indices, score [B] natural log. */
extern "C" void gh_cuda_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                                    double *score) {
  if (gh_cuda_hmm_tp_batch(h, batch, OP_VIT, NULL)) {
    gh_cuda_hmm_tp_run(h, batch, OP_VIT, score, path, NULL, NULL);
    return;
  }
  const int g = gh_cuda_hmm_dense_graph(h, batch, OP_VIT, NULL);
  if (g >= 0) gh_cuda_hmm_dense_run(h, g, batch, OP_VIT, 0, score, path);
  else gh_cuda_hmm_run(h, batch, OP_VIT, score, NULL, path, NULL);
}

/* hmm_fb (backend.h): loglik [B]; gamma NULL or [sum T S] float; stats NULL
 * or host doubles (per graph 2 S + A), added to. */
extern "C" void gh_cuda_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                               float *gamma, double *stats) {
  if (gh_cuda_hmm_tp_batch(h, batch, OP_FB, NULL)) {
    gh_cuda_hmm_tp_run(h, batch, OP_FB, loglik, NULL, gamma, stats);
    return;
  }
  gh_cuda_hmm_run(h, batch, OP_FB, loglik, gamma, NULL, stats);
}

/* hmm_fb_pairs (backend.h): hmm_fb with gamma kept on the device and turned
 * into pdf posteriors there (k_fb_pairs); the time-parallel path (a few
 * long utterances) fetches gamma and runs the host rule. */
extern "C" void gh_cuda_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                     const gh_hmm_graph *const *graphs, const int32_t *col_pdf, int32_t frame_base,
                                     double min_post, double *loglik, double *stats, gh_pair_buf *out) {
  if (gh_cuda_hmm_tp_batch(h, batch, OP_FB, NULL)) {
    int64_t *soff = (int64_t *)gh_malloc(sizeof(int64_t) * ((size_t)batch->num_utts + 1));
    gh_hmm_batch_state_off(batch, graphs, soff);
    float *gamma = (float *)gh_malloc(sizeof(float) * (size_t)(soff[batch->num_utts] + 1));
    gh_cuda_hmm_tp_run(h, batch, OP_FB, loglik, NULL, gamma, stats);
    gh_hmm_gamma_pairs(batch, graphs, gamma, loglik, col_pdf, frame_base, min_post, out);
    free(gamma);
    free(soff);
    return;
  }
  const PairReq pq = {col_pdf, batch->num_pdfs, NULL, frame_base, min_post, out, NULL};
  gh_cuda_hmm_run(h, batch, OP_FB, loglik, NULL, NULL, stats, &pq);
}

extern "C" void gh_cuda_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                                          float *out, int32_t ldo);
extern "C" void gh_cuda_loglikes_segs_dev(gh_backend *b, const gh_score_seg *segs, int32_t nseg, gh_dev_data *dd,
                                          float *out, int32_t ldo); /* cuda.cu */
extern "C" void gh_cuda_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *dPairs, int64_t n,
                                           int32_t bound, double *wsum); /* cuda.cu */

/* hmm_estep_pairs (backend.h): the segments scored from d's resident
 * frames into the scratch's block loglikes (gh_cuda_loglikes_data_dev: the
 * bits loglikes_data gives the host), gh_cuda_hmm_run's forward-backward reading
 * them there, k_fb_pairs mapping each utterance's columns with its
 * segment's map and leaving the pairs on the device, and
 * gh_cuda_data_set_pairs_dev sorting them into d.  op
 * GH_HMM_ESTEP_VITERBI: k_hmm_viterbi's path stays on the device and
 * k_vit_pairs makes the pairs from it.  Returns -1 (nothing done) for a
 * batch that takes the time-parallel path (a few long utterances) or, for
 * Viterbi, the dense path (one dense graph): the caller runs the host path. */
extern "C" int64_t gh_cuda_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                           const gh_hmm_graph *const *graphs, gh_dev_data *d, const gh_score_seg *segs,
                                           int32_t nseg, int op, double min_post, double *loglik, double *stats,
                                           double *wsum, double sec[2]) {
  const int vop = op == GH_HMM_ESTEP_VITERBI ? OP_VIT : OP_FB;
  if (gh_cuda_hmm_tp_batch(h, batch, vop, NULL)) return -1;
  if (vop == OP_VIT && gh_cuda_hmm_dense_graph(h, batch, OP_VIT, NULL) >= 0) return -1; /* hmm_viterbi's dense path */
  const int32_t B = batch->num_utts, ld = batch->num_pdfs;
  const int64_t rows = batch->frame_off[B];
  HScratch *s = h->s;
  double t0 = gh_seconds();
  hgrow_dev((void **)&s->dLLB, &s->capLLB, (size_t)rows * ld + 1, sizeof(float));
  /* the scoring's time by events, read after the block's last
   * synchronisation: the host goes on to the column maps meanwhile */
  cudaEvent_t ev[2];
  CK(cudaEventCreate(&ev[0]));
  CK(cudaEventCreate(&ev[1]));
  CK(cudaEventRecord(ev[0]));
  gh_cuda_loglikes_segs_dev(b, segs, nseg, d, s->dLLB, ld); /* one launch for the score groups where it can */
  CK(cudaEventRecord(ev[1]));
  int32_t ncol = 0, bound = 1;
  int32_t *ucol = (int32_t *)gh_malloc(sizeof(int32_t) * (size_t)(B + 1));
  int32_t *cols = gh_score_seg_maps(batch, graphs, h->num_graphs, segs, nseg, &ncol, ucol, &bound);
  const PairReq pq = {ncol ? cols : NULL, ncol, ucol, 0, min_post, NULL, s->dLLB};
  s->nPairsB = 0;
  gh_cuda_hmm_run(h, batch, vop, loglik, NULL, NULL, vop == OP_FB ? stats : NULL, &pq);
  const int64_t n = s->nPairsB;
  gh_cuda_data_set_pairs_dev(b, d, s->dPairsB, n, bound, wsum);
  float ms = 0.f;
  CK(cudaEventSynchronize(ev[1]));
  CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  CK(cudaEventDestroy(ev[0]));
  CK(cudaEventDestroy(ev[1]));
  const double all = gh_seconds() - t0, sc = ms * 1e-3 < all ? ms * 1e-3 : all;
  sec[0] += sc;
  sec[1] += all - sc;
  free(cols); free(ucol);
  return n;
}
