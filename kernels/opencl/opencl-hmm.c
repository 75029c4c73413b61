/* opencl-hmm.c -- host side of the OpenCL HMM ops (kernels in hmm.cl):
 * hmm_upload / hmm_free / hmm_forward / hmm_viterbi / hmm_fb with the
 * semantics of kernels/backend.h and the CPU reference (cpu/cpu-hmm.c).
 *
 * Graphs are concatenated into one set of device arrays at upload (plus the
 * outgoing-arc CSR for the backward pass).  A batch is run in chunks of
 * consecutive utterances (loglike rows + per-state outputs + scratch at most
 * CHUNK_BYTES, at least one utterance): one work-group per utterance, local
 * size the smallest power of two >= the chunk's largest graph, clamped to
 * [32, 256] and to the kernel's limit.  Forward-backward's statistics are
 * summed per utterance on the device and added per graph on the host in
 * utterance order (no atomics).
 */
#include "opencl.h"

#include "base/env.h"
#include "base/gh-base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)256 << 20)

typedef struct {
  int32_t S, A, P;
  int32_t sbase;   /* first state in the concatenated state arrays */
  int64_t tpoff;   /* time-parallel path: offset (doubles) of [log A | max log A] in tpA, or -1 */
} graph_info;

struct gh_dev_hmm {
  int32_t num_graphs;
  graph_info *info;      /* host [G] */
  int64_t *stats_off;    /* host [G + 1]: offsets of each graph's stats block */
  cl_mem gS, sb, io, ab, pdf, init, fin, in_off, src, logp, out_off, out_arc, dst;
  cl_mem sprev, snext; /* [sum S] the previous / next state of the graph with the same pdf, or -1 (gh_fb_pairs) */
  cl_mem tpA; /* per graph of <= TP_MAX_S states: log-sum and max of exp(logp) over the arcs i -> j, 2 S^2 doubles */
};

/* The time-parallel forward (log domain), Viterbi and forward-backward of
 * long utterances, as the CUDA backend's (kernels/cuda/cuda-hmm.cu; hmm.cl
 * gh_tp_*): 1 to
 * TP_MAX_UTTS utterances of >= TP_MIN_T frames on graphs of <= TP_MAX_S
 * states; $GH_OPENCL_HMM=timepar takes it for any length (tests),
 * "sequential" never. */
#define TP_MAX_S 64
#define TP_MIN_T 1024
#define TP_MAX_UTTS 8
#define TP_MAX_CHUNKS 1024
#define TP_MIN_L 64

gh_dev_hmm *gh_ocl_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t ng) {
  ocl_ctx *c = b->ctx;
  gh_dev_hmm *h = gh_calloc(1, sizeof *h);
  h->num_graphs = ng;
  h->info = gh_calloc(ng + 1, sizeof *h->info);
  h->stats_off = gh_calloc(ng + 1, sizeof(int64_t));
  int64_t TS = 0, TA = 0;
  int64_t tpn = 0;
  for (int32_t g = 0; g < ng; ++g) {
    const int32_t S = graphs[g]->num_states;
    h->info[g] = (graph_info){S, graphs[g]->num_arcs, graphs[g]->num_pdfs, (int32_t)TS, -1};
    if (S >= 1 && S <= TP_MAX_S) { h->info[g].tpoff = tpn; tpn += 2 * (int64_t)S * S; }
    h->stats_off[g + 1] = h->stats_off[g] + gh_hmm_graph_stats_size(graphs[g]);
    TS += graphs[g]->num_states;
    TA += graphs[g]->num_arcs;
  }
  if (TS + ng >= INT32_MAX || TA >= INT32_MAX) gh_die("hmm upload: graphs too large for the OpenCL backend");
  int32_t *gS = gh_malloc((ng + 1) * sizeof(int32_t)), *sb = gh_malloc((ng + 1) * sizeof(int32_t));
  int32_t *io = gh_malloc((ng + 1) * sizeof(int32_t)), *ab = gh_malloc((ng + 1) * sizeof(int32_t));
  int32_t *pdf = gh_malloc((TS + 1) * sizeof(int32_t));
  float *init = gh_malloc((TS + 1) * sizeof(float)), *fin = gh_malloc((TS + 1) * sizeof(float));
  int32_t *in_off = gh_malloc((TS + ng + 1) * sizeof(int32_t)), *out_off = gh_malloc((TS + ng + 1) * sizeof(int32_t));
  int32_t *src = gh_malloc((TA + 1) * sizeof(int32_t)), *dst = gh_malloc((TA + 1) * sizeof(int32_t));
  int32_t *out_arc = gh_malloc((TA + 1) * sizeof(int32_t));
  float *logp = gh_malloc((TA + 1) * sizeof(float));
  int32_t *sprev = gh_malloc((TS + 1) * sizeof(int32_t)), *snext = gh_malloc((TS + 1) * sizeof(int32_t));
  int32_t s0 = 0, a0 = 0;
  for (int32_t g = 0; g < ng; ++g) {
    const gh_hmm_graph *G = graphs[g];
    const int32_t S = G->num_states, A = G->num_arcs;
    gS[g] = S; sb[g] = s0; io[g] = s0 + g; ab[g] = a0;
    memcpy(pdf + s0, G->pdf, S * sizeof(int32_t));
    memcpy(init + s0, G->init, S * sizeof(float));
    memcpy(fin + s0, G->final, S * sizeof(float));
    memcpy(in_off + io[g], G->in_off, (S + 1) * sizeof(int32_t));
    memcpy(src + a0, G->arc_src, A * sizeof(int32_t));
    memcpy(dst + a0, G->arc_dst, A * sizeof(int32_t));
    memcpy(logp + a0, G->arc_logp, A * sizeof(float));
    for (int32_t j = 0; j < S; ++j) { /* same-pdf chains (gh_fb_pairs) */
      sprev[s0 + j] = snext[s0 + j] = -1;
      if (G->pdf[j] < 0 || G->pdf[j] >= G->num_pdfs)
        gh_die("hmm upload: graph %d state %d has pdf %d (graph has %d pdfs)", g, j, G->pdf[j], G->num_pdfs);
    }
    {
      int32_t *last = gh_malloc(sizeof(int32_t) * (size_t)(G->num_pdfs > 0 ? G->num_pdfs : 1));
      for (int32_t j = 0; j < S; ++j) last[G->pdf[j]] = -1;
      for (int32_t j = 0; j < S; ++j) {
        const int32_t p = last[G->pdf[j]];
        sprev[s0 + j] = p;
        if (p >= 0) snext[s0 + p] = j;
        last[G->pdf[j]] = j;
      }
      free(last);
    }
    /* outgoing CSR: arcs grouped by source, in arc order within a source */
    int32_t *oo = out_off + io[g];
    memset(oo, 0, (S + 1) * sizeof(int32_t));
    for (int32_t a = 0; a < A; ++a) {
      if (G->arc_src[a] < 0 || G->arc_src[a] >= S || G->arc_dst[a] < 0 || G->arc_dst[a] >= S)
        gh_die("hmm upload: graph %d arc %d (%d -> %d) out of range (%d states)", g, a, G->arc_src[a],
               G->arc_dst[a], S);
      oo[G->arc_src[a] + 1]++;
    }
    for (int32_t i = 0; i < S; ++i) oo[i + 1] += oo[i];
    int32_t *fill = gh_malloc((S + 1) * sizeof(int32_t));
    memcpy(fill, oo, (S + 1) * sizeof(int32_t));
    for (int32_t a = 0; a < A; ++a) out_arc[a0 + fill[G->arc_src[a]]++] = a;
    free(fill);
    s0 += S; a0 += A;
  }
  /* the time-parallel path's dense log arc matrices (log-sum of parallel arcs, and their max) */
  double *tpA = gh_malloc((tpn + 1) * sizeof(double));
  for (int32_t g = 0; g < ng; ++g) {
    if (h->info[g].tpoff < 0) continue;
    const gh_hmm_graph *G = graphs[g];
    const int32_t S = G->num_states;
    double *ls = tpA + h->info[g].tpoff, *mx = ls + (int64_t)S * S;
    for (int64_t e = 0; e < (int64_t)S * S; ++e) { ls[e] = 0.0; mx[e] = -INFINITY; }
    for (int32_t a = 0; a < G->num_arcs; ++a) {
      const int64_t e = (int64_t)G->arc_src[a] * S + G->arc_dst[a];
      ls[e] += exp((double)G->arc_logp[a]);
      if ((double)G->arc_logp[a] > mx[e]) mx[e] = G->arc_logp[a];
    }
    for (int64_t e = 0; e < (int64_t)S * S; ++e) ls[e] = ls[e] > 0 ? log(ls[e]) : -INFINITY;
  }
  h->tpA = gh_ocl_buffer(c, (tpn + 1) * sizeof(double), tpA, "hmm upload");
  free(tpA);
  h->gS = gh_ocl_buffer(c, ng * sizeof(int32_t), gS, "hmm upload");
  h->sb = gh_ocl_buffer(c, ng * sizeof(int32_t), sb, "hmm upload");
  h->io = gh_ocl_buffer(c, ng * sizeof(int32_t), io, "hmm upload");
  h->ab = gh_ocl_buffer(c, ng * sizeof(int32_t), ab, "hmm upload");
  h->pdf = gh_ocl_buffer(c, TS * sizeof(int32_t), pdf, "hmm upload");
  h->init = gh_ocl_buffer(c, TS * sizeof(float), init, "hmm upload");
  h->fin = gh_ocl_buffer(c, TS * sizeof(float), fin, "hmm upload");
  h->in_off = gh_ocl_buffer(c, (TS + ng) * sizeof(int32_t), in_off, "hmm upload");
  h->out_off = gh_ocl_buffer(c, (TS + ng) * sizeof(int32_t), out_off, "hmm upload");
  h->src = gh_ocl_buffer(c, TA * sizeof(int32_t), src, "hmm upload");
  h->dst = gh_ocl_buffer(c, TA * sizeof(int32_t), dst, "hmm upload");
  h->out_arc = gh_ocl_buffer(c, TA * sizeof(int32_t), out_arc, "hmm upload");
  h->logp = gh_ocl_buffer(c, TA * sizeof(float), logp, "hmm upload");
  h->sprev = gh_ocl_buffer(c, (TS + 1) * sizeof(int32_t), sprev, "hmm upload");
  h->snext = gh_ocl_buffer(c, (TS + 1) * sizeof(int32_t), snext, "hmm upload");
  free(sprev); free(snext);
  free(gS); free(sb); free(io); free(ab); free(pdf); free(init); free(fin); free(in_off); free(out_off);
  free(src); free(dst); free(out_arc); free(logp);
  return h;
}

void gh_ocl_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  cl_mem all[] = {h->gS, h->sb, h->io, h->ab, h->pdf, h->init, h->fin, h->in_off, h->src, h->logp,
                  h->out_off, h->out_arc, h->dst, h->tpA, h->sprev, h->snext};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) gh_ocl_release(all[i]);
  free(h->info);
  free(h->stats_off);
  free(h);
}

enum { OP_FWD, OP_FWD_SCALED, OP_VITERBI, OP_FB };

static int32_t utt_graph(const gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t u) {
  int32_t g = bt->graph ? bt->graph[u] : 0;
  if (g < 0 || g >= h->num_graphs)
    gh_die("HMM batch: utterance %d refers to graph %d of %d", u, g, h->num_graphs);
  if (h->info[g].P > bt->num_pdfs)
    gh_die("HMM batch: graph %d uses %d pdfs, loglikes have %d columns", g, h->info[g].P, bt->num_pdfs);
  return g;
}

/* hmm_fb_pairs' request (OP_FB): the pairs of gh_hmm_gamma_pairs appended to out. */
typedef struct {
  const int32_t *col_pdf; /* host, [ncol] or NULL */
  int32_t ncol;
  const int32_t *utt_col; /* host [B]: utterance u's map starts at col_pdf[utt_col[u]] (-1: none); NULL: all at 0 */
  int32_t frame_base;
  double min_post;
  gh_pair_buf *out;       /* host; NULL: the pairs stay on the device, appended to *dev (dev_n of them) */
  cl_mem *dev;
  int64_t *dev_n, *dev_cap;
  cl_mem dll;             /* the batch's loglikes on the device [frames x num_pdfs], or NULL (the host's) */
} pair_req;

/* The pairs of a chunk of n utterances (gamma fout, or op OP_VITERBI the
 * path; per-state offsets som, frame offsets fom: F frames from batch frame
 * f0; log P or score dres) appended to pq->out: gh_fb_pairs (gh_vit_pairs)
 * counts, the host's prefix sums, gh_fb_pairs (gh_vit_pairs) writes. */
static void chunk_pairs(ocl_ctx *c, gh_dev_hmm *h, const pair_req *pq, int op, int32_t u0, cl_mem ugm, cl_mem fom, cl_mem som,
                        cl_mem dres, cl_mem fout, int32_t n, int64_t F, int64_t f0, size_t L) {
  if (F == 0) return;
  cl_kernel k = op == OP_VITERBI ? c->k_vit_pairs : c->k_fb_pairs;
  const int use_col = pq->col_pdf != NULL, per_utt = pq->utt_col != NULL;
  cl_mem col = gh_ocl_buffer(c, (use_col ? (size_t)pq->ncol : 1) * sizeof(int32_t), (void *)pq->col_pdf, "HMM pairs");
  cl_mem ucol = gh_ocl_buffer(c, (per_utt ? (size_t)n : 1) * sizeof(int32_t), per_utt ? (void *)(pq->utt_col + u0) : NULL,
                              "HMM pairs");
  cl_mem cnt = gh_ocl_buffer(c, (size_t)F * sizeof(cl_long), NULL, "HMM pairs");
  cl_mem off = gh_ocl_buffer(c, (size_t)F * sizeof(cl_long), NULL, "HMM pairs");
  const cl_long fbase = (cl_long)pq->frame_base + f0;
  const double mp = pq->min_post;
  ARG(k, 0, h->gS); ARG(k, 1, h->sb); ARG(k, 2, h->pdf); ARG(k, 3, h->sprev); ARG(k, 4, h->snext);
  ARG(k, 5, ugm); ARG(k, 6, fom); ARG(k, 7, som); ARG(k, 8, dres); ARG(k, 9, fout); ARG(k, 10, use_col);
  ARG(k, 11, col); ARG(k, 12, fbase); ARG(k, 13, mp); ARG(k, 15, cnt); ARG(k, 16, off);
  ARG(k, 18, per_utt); ARG(k, 19, ucol);
  size_t gl[1] = {(size_t)n * L}, lo[1] = {L};
  for (int write = 0; write < 2; ++write) {
    ARG(k, 14, write);
    cl_mem outm = NULL;
    int64_t total = 0;
    if (write) {
      cl_long *h_off = gh_malloc((size_t)F * sizeof(cl_long));
      gh_ocl_read(c, cnt, 0, (size_t)F * sizeof(cl_long), h_off);
      /* the prefix sums (after the earlier chunks' pairs when they stay on the device) */
      const int64_t first = pq->out ? 0 : *pq->dev_n;
      for (int64_t f = 0; f < F; ++f) { const cl_long v = h_off[f]; h_off[f] = first + total; total += v; }
      gh_ocl_write(c, off, 0, (size_t)F * sizeof(cl_long), h_off);
      free(h_off);
      if (total == 0 && op != OP_VITERBI) break; /* (Viterbi's write pass also sets failed scores to -inf) */
      if (!pq->out && *pq->dev_n + total > *pq->dev_cap) { /* the device list grows, its pairs kept */
        const int64_t want = *pq->dev_n + total + (*pq->dev_n + total) / 4 + 1024;
        cl_mem nb = gh_ocl_buffer(c, (size_t)want * sizeof(gh_frame_pdf), NULL, "HMM pairs");
        if (*pq->dev_n)
          gh_ocl_check(clEnqueueCopyBuffer(c->q, *pq->dev, nb, 0, 0, (size_t)*pq->dev_n * sizeof(gh_frame_pdf), 0, NULL, NULL),
                       "HMM pairs");
        gh_ocl_release(*pq->dev);
        *pq->dev = nb;
        *pq->dev_cap = want;
      }
      if (!pq->out && total > 0) {
        outm = *pq->dev;
      } else {
        outm = gh_ocl_buffer(c, (size_t)(total ? total : 1) * sizeof(gh_frame_pdf), NULL, "HMM pairs");
      }
    }
    gh_ocl_arg(k, 17, sizeof(cl_mem), write ? &outm : &cnt); /* (unused when counting) */
    gh_ocl_launch(c, k, 1, gl, lo, write ? "HMM pairs" : "HMM pair counts");
    if (write && total == 0) {
      gh_ocl_release(outm);
    } else if (write && !pq->out) {
      *pq->dev_n += total;
    } else if (write) {
      gh_pair_buf_reserve(pq->out, total);
      gh_ocl_read(c, outm, 0, (size_t)total * sizeof(gh_frame_pdf), pq->out->v + pq->out->n);
      pq->out->n += total;
      gh_ocl_release(outm);
    }
  }
  gh_ocl_release(col); gh_ocl_release(ucol); gh_ocl_release(cnt); gh_ocl_release(off);
}

/* Runs op over the batch, chunk by chunk.  out_f: alpha (forward) or gamma
 * (fb), float per state, or NULL; out_d: loglik / score [B]; path: Viterbi;
 * stats: fb (added to); pq: fb's pairs (gh_ocl_hmm_fb_pairs) or NULL. */
static void hmm_run(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *out_d,
                    float *out_f, int32_t *path, double *stats, const pair_req *pq) {
  ocl_ctx *c = b->ctx;
  const int32_t B = bt->num_utts, P = bt->num_pdfs;
  if (B <= 0) return;
  int32_t *ug = gh_malloc(B * sizeof(int32_t));
  for (int32_t u = 0; u < B; ++u) ug[u] = utt_graph(h, bt, u);
  cl_kernel k = op == OP_FWD ? c->k_fwd_log : op == OP_FWD_SCALED ? c->k_fwd_scaled : op == OP_VITERBI ? c->k_viterbi : c->k_fb;
  size_t kmax = c->max_wg;
  clGetKernelWorkGroupInfo(k, c->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
  cl_long *fo = gh_malloc((B + 1) * sizeof(cl_long)), *so = gh_malloc((B + 1) * sizeof(cl_long));
  cl_long *ro = gh_malloc((B + 1) * sizeof(cl_long)), *sto = gh_malloc((B + 1) * sizeof(cl_long));
  int32_t u0 = 0;
  int64_t state_base = 0; /* per-state output offset of utterance u0 */
  while (u0 < B) {
    /* chunk [u0, u1): bytes per utterance = loglike rows + per-state output
     * (float) + scratch (double alpha for fb, int back-pointers for Viterbi) */
    size_t bytes = 0;
    int32_t u1 = u0, Smax = 1;
    while (u1 < B) {
      int64_t T = bt->frame_off[u1 + 1] - bt->frame_off[u1], S = h->info[ug[u1]].S;
      size_t need = (size_t)T * P * 4 + (size_t)T * S * (op == OP_FB ? 12 : 4) + (size_t)S * 16 +
                    (size_t)(2 * S + h->info[ug[u1]].A) * 8 + 64;
      if (u1 > u0 && bytes + need > CHUNK_BYTES) break;
      bytes += need;
      if (S > Smax) Smax = (int32_t)S;
      ++u1;
    }
    const int32_t n = u1 - u0;
    fo[0] = so[0] = ro[0] = sto[0] = 0;
    for (int32_t i = 0; i < n; ++i) {
      int32_t u = u0 + i;
      const graph_info *gi = &h->info[ug[u]];
      int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
      fo[i + 1] = fo[i] + T;
      so[i + 1] = so[i] + T * gi->S;
      ro[i + 1] = ro[i] + 2 * (int64_t)gi->S;
      sto[i + 1] = sto[i] + 2 * (int64_t)gi->S + gi->A;
    }
    const int64_t F = fo[n], NS = so[n];
    cl_mem ll;
    if (pq && pq->dll && bt->frame_off[u0] == 0) { /* the device loglikes themselves (released below: retained) */
      ll = pq->dll;
      gh_ocl_check(clRetainMemObject(ll), "HMM loglikes");
    } else if (pq && pq->dll) { /* the chunk's rows of the device loglikes */
      ll = gh_ocl_buffer(c, (size_t)F * P * sizeof(float), NULL, "HMM loglikes");
      if (F > 0)
        gh_ocl_check(clEnqueueCopyBuffer(c->q, pq->dll, ll, (size_t)bt->frame_off[u0] * P * sizeof(float), 0,
                                         (size_t)F * P * sizeof(float), 0, NULL, NULL),
                     "HMM loglikes");
    } else {
      ll = gh_ocl_buffer(c, (size_t)F * P * sizeof(float), NULL, "HMM loglikes");
      gh_ocl_write(c, ll, 0, (size_t)F * P * sizeof(float), bt->loglikes + bt->frame_off[u0] * P);
    }
    cl_mem ugm = gh_ocl_buffer(c, n * sizeof(int32_t), ug + u0, "HMM batch");
    cl_mem fom = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), fo, "HMM batch");
    cl_mem som = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), so, "HMM batch");
    cl_mem rom = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), ro, "HMM batch");
    cl_mem rows = gh_ocl_buffer(c, ro[n] * sizeof(double), NULL, "HMM rows");
    cl_mem dres = gh_ocl_buffer(c, n * sizeof(double), NULL, "HMM results");
    cl_mem fout = gh_ocl_buffer(c, (out_f || pq || op == OP_VITERBI ? NS : 1) * sizeof(float), NULL, "HMM outputs");
    cl_mem extra = NULL, stom = NULL, ust = NULL;
    cl_mem graph_args[13] = {h->gS, h->sb, h->io, h->ab, h->pdf, h->init, h->fin, h->in_off, h->src,
                             h->logp, h->out_off, h->out_arc, h->dst};
    for (int i = 0; i < 13; ++i) gh_ocl_arg(k, i, sizeof(cl_mem), &graph_args[i]);
    gh_ocl_arg(k, 13, sizeof(cl_mem), &ugm);
    gh_ocl_arg(k, 14, sizeof(cl_mem), &fom);
    gh_ocl_arg(k, 15, sizeof(cl_mem), &som);
    gh_ocl_arg(k, 16, sizeof(cl_mem), &rom);
    gh_ocl_arg(k, 17, sizeof(cl_mem), &ll);
    gh_ocl_arg(k, 18, sizeof(int32_t), &P);
    gh_ocl_arg(k, 19, sizeof(cl_mem), &rows);
    size_t L = 32;
    while (L < (size_t)Smax && L < 256) L *= 2;
    while (L > kmax && L > 1) L /= 2;
    int want = out_f != NULL || pq != NULL;
    if (op == OP_FWD || op == OP_FWD_SCALED) {
      gh_ocl_arg(k, 20, sizeof(cl_mem), &dres);
      gh_ocl_arg(k, 21, sizeof(int), &want);
      gh_ocl_arg(k, 22, sizeof(cl_mem), &fout);
      gh_ocl_arg(k, 23, L * sizeof(double), NULL);
    } else if (op == OP_VITERBI) {
      extra = gh_ocl_buffer(c, F * sizeof(int32_t), NULL, "Viterbi path");
      gh_ocl_arg(k, 20, sizeof(cl_mem), &dres);
      gh_ocl_arg(k, 21, sizeof(cl_mem), &fout); /* back-pointers (int, same size as float) */
      gh_ocl_arg(k, 22, sizeof(cl_mem), &extra);
      gh_ocl_arg(k, 23, L * sizeof(double), NULL);
      gh_ocl_arg(k, 24, L * sizeof(int32_t), NULL);
    } else {
      extra = gh_ocl_buffer(c, NS * sizeof(double), NULL, "forward-backward alpha");
      stom = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), sto, "HMM batch");
      ust = gh_ocl_buffer(c, sto[n] * sizeof(double), NULL, "HMM statistics");
      const double zero = 0.0;
      if (sto[n]) gh_ocl_check(clEnqueueFillBuffer(c->q, ust, &zero, sizeof zero, 0, sto[n] * sizeof(double), 0, NULL, NULL), "zero HMM statistics");
      gh_ocl_arg(k, 20, sizeof(cl_mem), &extra);
      gh_ocl_arg(k, 21, sizeof(cl_mem), &dres);
      gh_ocl_arg(k, 22, sizeof(int), &want);
      gh_ocl_arg(k, 23, sizeof(cl_mem), &fout);
      gh_ocl_arg(k, 24, sizeof(cl_mem), &stom);
      gh_ocl_arg(k, 25, sizeof(cl_mem), &ust);
      gh_ocl_arg(k, 26, L * sizeof(double), NULL);
    }
    size_t gl[1] = {(size_t)n * L}, lo[1] = {L};
    gh_ocl_launch(c, k, 1, gl, lo, "HMM kernel");
    if (pq) chunk_pairs(c, h, pq, op, u0, ugm, fom, som, dres, op == OP_VITERBI ? extra : fout, n, F, bt->frame_off[u0], L);
    gh_ocl_read(c, dres, 0, n * sizeof(double), out_d + u0);
    if (out_f) gh_ocl_read(c, fout, 0, NS * sizeof(float), out_f + state_base);
    if (op == OP_VITERBI && path) gh_ocl_read(c, extra, 0, F * sizeof(int32_t), path + bt->frame_off[u0]);
    if (op == OP_FB && stats) {
      double *us = gh_malloc((sto[n] + 1) * sizeof(double));
      gh_ocl_read(c, ust, 0, sto[n] * sizeof(double), us);
      for (int32_t i = 0; i < n; ++i) {
        if (!(out_d[u0 + i] > -INFINITY)) continue;
        double *st = stats + h->stats_off[ug[u0 + i]];
        for (int64_t e = sto[i]; e < sto[i + 1]; ++e) st[e - sto[i]] += us[e];
      }
      free(us);
    }
    cl_mem all[] = {ll, ugm, fom, som, rom, rows, dres, fout, extra, stom, ust};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) gh_ocl_release(all[i]);
    state_base += NS;
    u0 = u1;
  }
  free(ug); free(fo); free(so); free(ro); free(sto);
}

static long long g_tp_utts = 0;
/* Utterances done by the time-parallel path so far (tests). */
long long gh_ocl_hmm_timepar_utts(void) { return g_tp_utts; }

/* Whether the batch takes the time-parallel path (the rule above). */
static int tp_batch(const gh_dev_hmm *h, const gh_hmm_batch *bt) {
  static const char *const words[] = {"sequential", "timepar", NULL};
  const int e = gh_env_word("GH_OPENCL_HMM", -1, words);
  const int force = e == 1;
  if (e == 0 || bt->num_utts <= 0 || bt->num_utts > TP_MAX_UTTS) return 0;
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const int32_t g = bt->graph ? bt->graph[u] : 0;
    if (g < 0 || g >= h->num_graphs) return 0; /* hmm_run dies with the message */
    const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
    if (h->info[g].tpoff < 0 || h->info[g].P > bt->num_pdfs || T < 1 || T > INT32_MAX) return 0;
    if (T < (force ? 1 : TP_MIN_T)) return 0;
  }
  return 1;
}

/* Arguments 0-8 shared by gh_tp_chunk and gh_tp_vpass: the arc matrix at
 * aoff in tpA, S, the loglikes, P, the graph's pdfs at sb, T, L. */
static void tp_args_chunk(cl_kernel k, gh_dev_hmm *h, cl_long aoff, int32_t S, cl_mem ll, int32_t P, int32_t sb,
                          cl_long T, int32_t L) {
  ARG(k, 0, h->tpA); ARG(k, 1, aoff); ARG(k, 2, S); ARG(k, 3, ll); ARG(k, 4, P);
  ARG(k, 5, h->pdf); ARG(k, 6, sb); ARG(k, 7, T); ARG(k, 8, L);
}
/* Arguments 0-8 shared by gh_tp_combine and gh_tp_vchain: the chunk
 * matrices and offsets, K, S, the loglikes, the state arrays at sb. */
static void tp_args_chain(cl_kernel k, gh_dev_hmm *h, cl_mem LP, cl_mem off, int32_t K, int32_t S, cl_mem ll,
                          int32_t sb) {
  ARG(k, 0, LP); ARG(k, 1, off); ARG(k, 2, K); ARG(k, 3, S); ARG(k, 4, ll);
  ARG(k, 5, h->pdf); ARG(k, 6, h->init); ARG(k, 7, h->fin); ARG(k, 8, sb);
}

/* The time-parallel forward (op OP_FWD: vals = log P), Viterbi (OP_VITERBI:
 * vals = score, path [frames], -1 throughout without a path) or
 * forward-backward (OP_FB: vals = log P, gamma NULL or [sum T S], stats
 * NULL or ADDED to, as hmm_fb) of every utterance of bt, one after the
 * other. */
static void tp_run(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, int32_t *path,
                   float *gamma, double *stats) {
  const int vit = op == OP_VITERBI, fb = op == OP_FB;
  int64_t soff = 0; /* the utterance's first gamma element */
  ocl_ctx *c = b->ctx;
  const int32_t P = bt->num_pdfs;
  const size_t W = TP_MAX_S; /* work-group size of every tp kernel */
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const int32_t g = bt->graph ? bt->graph[u] : 0;
    const graph_info *gi = &h->info[g];
    const int32_t S = gi->S;
    const cl_long T = bt->frame_off[u + 1] - bt->frame_off[u];
    cl_long L = (T - 1 + TP_MAX_CHUNKS - 1) / TP_MAX_CHUNKS;
    if (L < TP_MIN_L) L = TP_MIN_L;
    const int32_t K = (int32_t)((T - 1 + L - 1) / L), Li = (int32_t)L;
    const cl_long aoff = gi->tpoff + (vit ? (cl_long)S * S : 0);
    const int32_t sb = gi->sbase;
    cl_mem ll = gh_ocl_buffer(c, (size_t)T * P * sizeof(float), NULL, "HMM loglikes");
    gh_ocl_write(c, ll, 0, (size_t)T * P * sizeof(float), bt->loglikes + bt->frame_off[u] * P);
    cl_mem LP = gh_ocl_buffer(c, ((size_t)K * S * S + 1) * sizeof(double), NULL, "time-parallel HMM");
    cl_mem off = gh_ocl_buffer(c, ((size_t)K + 1) * sizeof(double), NULL, "time-parallel HMM");
    cl_mem res = gh_ocl_buffer(c, 2 * sizeof(double), NULL, "time-parallel HMM");
    cl_mem Dk = NULL, bp = NULL, jump = NULL, ends = NULL, dpath = NULL;
    if (K > 0) {
      cl_kernel k = c->k_tp_chunk;
      tp_args_chunk(k, h, aoff, S, ll, P, sb, T, Li);
      ARG(k, 9, vit); ARG(k, 10, LP); ARG(k, 11, off);
      size_t gl[1] = {(size_t)K * W}, lo[1] = {W};
      gh_ocl_launch(c, k, 1, gl, lo, "time-parallel HMM chunks");
    }
    size_t g1[1] = {W}, l1[1] = {W};
    cl_mem Ak = NULL, Bk = NULL, al = NULL, xiK = NULL, st = NULL, gm = NULL;
    const int32_t A = gi->A, wantA = fb, wantg = gamma != NULL;
    if (fb) {
      Ak = gh_ocl_buffer(c, ((size_t)K + 1) * S * sizeof(double), NULL, "time-parallel forward-backward");
      Bk = gh_ocl_buffer(c, ((size_t)K + 1) * S * sizeof(double), NULL, "time-parallel forward-backward");
      al = gh_ocl_buffer(c, (size_t)T * S * sizeof(double), NULL, "time-parallel forward-backward");
      xiK = gh_ocl_buffer(c, ((size_t)K * A + 1) * sizeof(double), NULL, "time-parallel forward-backward");
      st = gh_ocl_buffer(c, (2 * (size_t)S + A) * sizeof(double), NULL, "time-parallel forward-backward");
      gm = gh_ocl_buffer(c, ((size_t)T * S + 1) * sizeof(float), NULL, "time-parallel forward-backward");
    }
    if (!vit) {
      cl_kernel k = c->k_tp_combine;
      tp_args_chain(k, h, LP, off, K, S, ll, sb);
      ARG(k, 9, res);
      gh_ocl_arg(k, 10, W * sizeof(double), NULL);
      ARG(k, 11, wantA); ARG(k, 12, Ak);
      gh_ocl_launch(c, k, 1, g1, l1, "time-parallel forward");
      if (fb) {
        k = c->k_tp_bchain;
        ARG(k, 0, LP); ARG(k, 1, off); ARG(k, 2, K); ARG(k, 3, S); ARG(k, 4, h->fin); ARG(k, 5, sb); ARG(k, 6, Bk);
        gh_ocl_launch(c, k, 1, g1, l1, "time-parallel forward-backward: betas");
        if (K > 0) {
          k = c->k_tp_fbpass;
          cl_mem graph_args[13] = {h->gS, h->sb, h->io, h->ab, h->pdf, h->init, h->fin, h->in_off, h->src,
                                   h->logp, h->out_off, h->out_arc, h->dst};
          for (int i = 0; i < 13; ++i) ARG(k, i, graph_args[i]);
          ARG(k, 13, g); ARG(k, 14, ll); ARG(k, 15, P); ARG(k, 16, T); ARG(k, 17, Li); ARG(k, 18, Ak);
          ARG(k, 19, Bk); ARG(k, 20, res); ARG(k, 21, al); ARG(k, 22, wantg); ARG(k, 23, gm); ARG(k, 24, xiK);
          size_t gl[1] = {(size_t)K * W}, lo[1] = {W};
          gh_ocl_launch(c, k, 1, gl, lo, "time-parallel forward-backward chunks");
        }
        k = c->k_tp_fbsum;
        ARG(k, 0, xiK); ARG(k, 1, K); ARG(k, 2, S); ARG(k, 3, A); ARG(k, 4, Ak); ARG(k, 5, Bk);
        ARG(k, 6, h->fin); ARG(k, 7, sb); ARG(k, 8, res); ARG(k, 9, wantg); ARG(k, 10, gm); ARG(k, 11, st);
        size_t g256[1] = {256}, l256[1] = {256};
        gh_ocl_launch(c, k, 1, g256, l256, "time-parallel forward-backward: sums");
      }
    } else {
      Dk = gh_ocl_buffer(c, ((size_t)K + 1) * S * sizeof(double), NULL, "time-parallel Viterbi");
      bp = gh_ocl_buffer(c, (size_t)T * S + 1, NULL, "time-parallel Viterbi");
      jump = gh_ocl_buffer(c, (size_t)K * S + 1, NULL, "time-parallel Viterbi");
      ends = gh_ocl_buffer(c, ((size_t)K + 1) * sizeof(int32_t), NULL, "time-parallel Viterbi");
      dpath = gh_ocl_buffer(c, (size_t)T * sizeof(int32_t), NULL, "time-parallel Viterbi");
      cl_kernel k = c->k_tp_vchain;
      tp_args_chain(k, h, LP, off, K, S, ll, sb);
      ARG(k, 9, Dk); ARG(k, 10, res);
      gh_ocl_launch(c, k, 1, g1, l1, "time-parallel Viterbi chain");
      if (K > 0) {
        k = c->k_tp_vpass;
        tp_args_chunk(k, h, aoff, S, ll, P, sb, T, Li);
        ARG(k, 9, Dk); ARG(k, 10, bp); ARG(k, 11, jump);
        size_t gl[1] = {(size_t)K * W}, lo[1] = {W};
        gh_ocl_launch(c, k, 1, gl, lo, "time-parallel Viterbi chunks");
        k = c->k_tp_vtrace;
        ARG(k, 0, jump); ARG(k, 1, K); ARG(k, 2, S); ARG(k, 3, res); ARG(k, 4, ends);
        size_t one[1] = {1};
        gh_ocl_launch(c, k, 1, one, one, "time-parallel Viterbi trace");
      }
      k = c->k_tp_vpath;
      ARG(k, 0, bp); ARG(k, 1, K); ARG(k, 2, S); ARG(k, 3, T); ARG(k, 4, Li); ARG(k, 5, ends); ARG(k, 6, res);
      ARG(k, 7, dpath);
      size_t np[1] = {K > 0 ? (size_t)K : 1};
      gh_ocl_launch(c, k, 1, np, NULL, "time-parallel Viterbi path");
      gh_ocl_read(c, dpath, 0, (size_t)T * sizeof(int32_t), path + bt->frame_off[u]);
    }
    double r2[2];
    gh_ocl_read(c, res, 0, 2 * sizeof(double), r2);
    vals[u] = r2[0];
    if (fb && gamma) {
      if (vals[u] > -INFINITY) gh_ocl_read(c, gm, 0, (size_t)T * S * sizeof(float), gamma + soff);
      else memset(gamma + soff, 0, (size_t)T * S * sizeof(float));
    }
    if (fb && stats && vals[u] > -INFINITY) {
      double *hs = gh_malloc((2 * (size_t)S + A) * sizeof(double));
      gh_ocl_read(c, st, 0, (2 * (size_t)S + A) * sizeof(double), hs);
      for (int32_t e = 0; e < 2 * S + A; ++e) stats[h->stats_off[g] + e] += hs[e];
      free(hs);
    }
    soff += (int64_t)T * S;
    ++g_tp_utts;
    cl_mem all[] = {ll, LP, off, res, Dk, bp, jump, ends, dpath, Ak, Bk, al, xiK, st, gm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) gh_ocl_release(all[i]);
  }
}

void gh_ocl_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int flags, double *loglik,
                        float *alpha) {
  if (!alpha && !(flags & GH_HMM_SCALED) && tp_batch(h, bt)) {
    tp_run(b, h, bt, OP_FWD, loglik, NULL, NULL, NULL);
    return;
  }
  hmm_run(b, h, bt, (flags & GH_HMM_SCALED) ? OP_FWD_SCALED : OP_FWD, loglik, alpha, NULL, NULL, NULL);
}

void gh_ocl_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t *path, double *score) {
  if (tp_batch(h, bt)) {
    tp_run(b, h, bt, OP_VITERBI, score, path, NULL, NULL);
    return;
  }
  hmm_run(b, h, bt, OP_VITERBI, score, NULL, path, NULL, NULL);
}

void gh_ocl_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, double *loglik, float *gamma,
                   double *stats) {
  if (tp_batch(h, bt)) {
    tp_run(b, h, bt, OP_FB, loglik, NULL, gamma, stats);
    return;
  }
  hmm_run(b, h, bt, OP_FB, loglik, gamma, NULL, stats, NULL);
}

/* hmm_fb_pairs (backend.h): gh_hmm_fb with gamma kept on the device and
 * turned into pdf posteriors there (gh_fb_pairs); the time-parallel path
 * (a few long utterances) fetches gamma and runs the host rule. */
void gh_ocl_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, const gh_hmm_graph *const *graphs,
                         const int32_t *col_pdf, int32_t frame_base, double min_post, double *loglik, double *stats,
                         gh_pair_buf *out) {
  if (tp_batch(h, bt)) {
    int64_t *soff = gh_malloc(sizeof(int64_t) * ((size_t)bt->num_utts + 1));
    gh_hmm_batch_state_off(bt, graphs, soff);
    float *gamma = gh_malloc(sizeof(float) * (size_t)(soff[bt->num_utts] + 1));
    tp_run(b, h, bt, OP_FB, loglik, NULL, gamma, stats);
    gh_hmm_gamma_pairs(bt, graphs, gamma, loglik, col_pdf, frame_base, min_post, out);
    free(gamma);
    free(soff);
    return;
  }
  if ((int64_t)frame_base + bt->frame_off[bt->num_utts] - 1 > INT32_MAX)
    gh_die("HMM pairs: frame %lld beyond int32", (long long)frame_base + bt->frame_off[bt->num_utts] - 1);
  const pair_req pq = {col_pdf, bt->num_pdfs, NULL, frame_base, min_post, out, NULL, NULL, NULL, NULL};
  hmm_run(b, h, bt, OP_FB, loglik, NULL, NULL, stats, &pq);
}

/* hmm_estep_pairs (backend.h): the segments scored from d's frames into a
 * device matrix (gh_ocl_loglikes_data_dev: loglikes_data's bits), hmm_run
 * reading it there, gh_fb_pairs mapping each utterance's columns with its
 * segment's map and appending the pairs to a device list, and
 * gh_ocl_data_set_pairs_dev sorting them into d.  op GH_HMM_ESTEP_VITERBI:
 * gh_hmm_viterbi's path stays on the device and gh_vit_pairs makes the
 * pairs from it.  Returns -1 (nothing done) for a batch of the
 * time-parallel path: the caller's host path. */
int64_t gh_ocl_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, const gh_hmm_graph *const *graphs,
                               gh_dev_data *d, const gh_score_seg *segs, int32_t nseg, int op, double min_post,
                               double *loglik, double *stats, double *wsum, double sec[2]) {
  if (tp_batch(h, bt)) return -1;
  ocl_ctx *c = b->ctx;
  const int32_t B = bt->num_utts, ld = bt->num_pdfs;
  const int64_t rows = bt->frame_off[B];
  double t0 = gh_seconds();
  cl_mem dll = gh_ocl_buffer(c, ((size_t)rows * ld + 1) * sizeof(float), NULL, "HMM loglikes");
  for (int32_t k = 0; k < nseg; ++k)
    if (segs[k].rows > 0) gh_ocl_loglikes_data_dev(b, segs[k].m, d, segs[k].row0, segs[k].rows, dll, segs[k].row0, ld);
  gh_ocl_check(clFinish(c->q), "HMM loglikes");
  double t1 = gh_seconds();
  sec[0] += t1 - t0;
  int32_t ncol = 0, bound = 1;
  int32_t *ucol = gh_malloc(sizeof(int32_t) * (size_t)(B + 1));
  int32_t *cols = gh_score_seg_maps(bt, graphs, h->num_graphs, segs, nseg, &ncol, ucol, &bound);
  cl_mem dp = NULL;
  int64_t np = 0, cap = 0;
  const pair_req pq = {ncol ? cols : NULL, ncol, ucol, 0, min_post, NULL, &dp, &np, &cap, dll};
  if (op == GH_HMM_ESTEP_VITERBI) hmm_run(b, h, bt, OP_VITERBI, loglik, NULL, NULL, NULL, &pq);
  else hmm_run(b, h, bt, OP_FB, loglik, NULL, NULL, stats, &pq);
  gh_ocl_data_set_pairs_dev(b, d, dp, np, bound, wsum);
  gh_ocl_release(dp);
  gh_ocl_release(dll);
  sec[1] += gh_seconds() - t1;
  free(cols); free(ucol);
  return np;
}
