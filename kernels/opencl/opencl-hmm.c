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

#include "gh-base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)256 << 20)

typedef struct {
  int32_t S, A, P;
} graph_info;

struct gh_dev_hmm {
  int32_t num_graphs;
  graph_info *info;      /* host [G] */
  int64_t *stats_off;    /* host [G + 1]: offsets of each graph's stats block */
  cl_mem gS, sb, io, ab, pdf, init, fin, in_off, src, logp, out_off, out_arc, dst;
};

gh_dev_hmm *gh_ocl_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t ng) {
  ocl_ctx *c = b->ctx;
  gh_dev_hmm *h = gh_calloc(1, sizeof *h);
  h->num_graphs = ng;
  h->info = gh_calloc(ng + 1, sizeof *h->info);
  h->stats_off = gh_calloc(ng + 1, sizeof(int64_t));
  int64_t TS = 0, TA = 0;
  for (int32_t g = 0; g < ng; ++g) {
    h->info[g] = (graph_info){graphs[g]->num_states, graphs[g]->num_arcs, graphs[g]->num_pdfs};
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
  free(gS); free(sb); free(io); free(ab); free(pdf); free(init); free(fin); free(in_off); free(out_off);
  free(src); free(dst); free(out_arc); free(logp);
  return h;
}

void gh_ocl_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  cl_mem all[] = {h->gS, h->sb, h->io, h->ab, h->pdf, h->init, h->fin, h->in_off, h->src, h->logp,
                  h->out_off, h->out_arc, h->dst};
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

/* Runs op over the batch, chunk by chunk.  out_f: alpha (forward) or gamma
 * (fb), float per state, or NULL; out_d: loglik / score [B]; path: Viterbi;
 * stats: fb (added to). */
static void hmm_run(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *out_d,
                    float *out_f, int32_t *path, double *stats) {
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
    cl_mem ll = gh_ocl_buffer(c, (size_t)F * P * sizeof(float), NULL, "HMM loglikes");
    gh_ocl_write(c, ll, 0, (size_t)F * P * sizeof(float), bt->loglikes + bt->frame_off[u0] * P);
    cl_mem ugm = gh_ocl_buffer(c, n * sizeof(int32_t), ug + u0, "HMM batch");
    cl_mem fom = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), fo, "HMM batch");
    cl_mem som = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), so, "HMM batch");
    cl_mem rom = gh_ocl_buffer(c, (n + 1) * sizeof(cl_long), ro, "HMM batch");
    cl_mem rows = gh_ocl_buffer(c, ro[n] * sizeof(double), NULL, "HMM rows");
    cl_mem dres = gh_ocl_buffer(c, n * sizeof(double), NULL, "HMM results");
    cl_mem fout = gh_ocl_buffer(c, (out_f || op == OP_VITERBI ? NS : 1) * sizeof(float), NULL, "HMM outputs");
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
    int want = out_f != NULL;
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
    gh_ocl_read(c, dres, 0, n * sizeof(double), out_d + u0);
    if (out_f) gh_ocl_read(c, fout, 0, NS * sizeof(float), out_f + state_base);
    if (op == OP_VITERBI) gh_ocl_read(c, extra, 0, F * sizeof(int32_t), path + bt->frame_off[u0]);
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

void gh_ocl_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int flags, double *loglik,
                        float *alpha) {
  hmm_run(b, h, bt, (flags & GH_HMM_SCALED) ? OP_FWD_SCALED : OP_FWD, loglik, alpha, NULL, NULL);
}

void gh_ocl_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t *path, double *score) {
  hmm_run(b, h, bt, OP_VITERBI, score, NULL, path, NULL);
}

void gh_ocl_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, double *loglik, float *gamma,
                   double *stats) {
  hmm_run(b, h, bt, OP_FB, loglik, gamma, NULL, stats);
}
