/* align.c -- the CPU reference of align_batch (backend.h gh_ops_align):
 * exact Viterbi over each utterance's graph with checkpointed
 * back-pointers, OpenMP over the utterances.  The device backends
 * (kernels/cuda/cuda-align.cu, kernels/opencl/align.cl) do the same
 * operations in the same order on one thread block / work-group per
 * utterance, so the costs and paths are the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align-plan.h"
#include "backend.h"
#include "base/gh-base.h"

typedef struct {
  int32_t S, T, K, nck, start, neps, ld;
  float as;
  const int32_t *src, *colx, *ioff, *imid, *in;
  const float *w, *final, *ll;
  double *cur, *nxt, *ck_cost;
  int32_t *ck_bp, *bp;
} utt;

/* The epsilon closure of column cur in synchronous rounds (backend.h). */
static void closure(utt *u, int32_t *bprow) {
  if (u->neps == 0) return;
  for (int32_t round = 0; round < u->S; ++round) {
    int changed = 0;
    for (int32_t s = 0; s < u->S; ++s) {
      double best = u->cur[s];
      int32_t arg = -1;
      for (int32_t k = u->imid[s]; k < u->ioff[s + 1]; ++k) {
        const int32_t a = u->in[k];
        const double c = u->cur[u->src[a]];
        if (c == INFINITY) continue;
        const double v = c + (double)u->w[a];
        if (v < best) best = v, arg = a;
      }
      u->nxt[s] = best;
      if (arg >= 0) bprow[s] = arg, changed = 1;
    }
    memcpy(u->cur, u->nxt, (size_t)u->S * sizeof(double));
    if (!changed) break;
  }
}

/* Frame t: column t + 1's emitting step into cur (via nxt), back-pointers in bprow. */
static void emit(utt *u, int32_t t, int32_t *bprow) {
  const float *ll = u->ll + (size_t)t * u->ld;
  for (int32_t s = 0; s < u->S; ++s) {
    double best = INFINITY;
    int32_t arg = -1;
    for (int32_t k = u->ioff[s]; k < u->imid[s]; ++k) {
      const int32_t a = u->in[k];
      const double c = u->cur[u->src[a]];
      if (c == INFINITY) continue;
      const float ac = -(u->as * ll[u->colx[a]]);
      const double v = ((double)u->w[a] + c) + (double)ac;
      if (v < best) best = v, arg = a;
    }
    u->nxt[s] = best;
    bprow[s] = arg;
  }
  double *t2 = u->cur;
  u->cur = u->nxt;
  u->nxt = t2;
}

static void align_one(utt *u, int64_t path_cap, int32_t *path, gh_align_out *out) {
  const int32_t S = u->S, K = u->K, T = u->T;
  /* forward, keeping column c's costs and back-pointers every K columns */
  for (int32_t s = 0; s < S; ++s) u->cur[s] = INFINITY, u->bp[s] = -1;
  u->cur[u->start] = 0.0;
  closure(u, u->bp);
  memcpy(u->ck_cost, u->cur, (size_t)S * sizeof(double));
  memcpy(u->ck_bp, u->bp, (size_t)S * sizeof(int32_t));
  for (int32_t c = 1; c <= T; ++c) {
    int32_t *row = u->bp + (size_t)(c % K) * S;
    emit(u, c - 1, row);
    closure(u, row);
    if (c % K == 0) {
      memcpy(u->ck_cost + (size_t)(c / K) * S, u->cur, (size_t)S * sizeof(double));
      memcpy(u->ck_bp + (size_t)(c / K) * S, row, (size_t)S * sizeof(int32_t));
    }
  }
  double best = INFINITY;
  int32_t bs = -1;
  for (int32_t s = 0; s < S; ++s) {
    if (u->cur[s] == INFINITY || u->final[s] == INFINITY) continue;
    const double v = u->cur[s] + (double)u->final[s];
    if (v < best) best = v, bs = s;
  }
  out->cost = INFINITY;
  out->reached = 0;
  out->num_arcs = 0;
  out->arcs = NULL;
  if (bs < 0) return;
  /* trace back, recomputing each earlier segment from its checkpoint */
  int32_t seg = T / K, s = bs, c = T;
  int64_t n = 0;
  for (;;) {
    const int32_t a = u->bp[(size_t)(c - seg * K) * S + s];
    if (a < 0) {
      if (c != 0 || s != u->start) gh_die("align_batch: internal: broken back-pointer at frame %d", c);
      break;
    }
    if (n >= path_cap) gh_die("align_batch: internal: path longer than %lld arcs", (long long)path_cap);
    path[n++] = a;
    s = u->src[a];
    if (u->colx[a] >= 0 && --c < seg * K) {
      --seg;
      memcpy(u->cur, u->ck_cost + (size_t)seg * S, (size_t)S * sizeof(double));
      memcpy(u->bp, u->ck_bp + (size_t)seg * S, (size_t)S * sizeof(int32_t));
      for (int32_t r = 1; r < K; ++r) {
        emit(u, seg * K + r - 1, u->bp + (size_t)r * S);
        closure(u, u->bp + (size_t)r * S);
      }
    }
  }
  out->cost = best;
  out->reached = 1;
  out->num_arcs = (int32_t)n;
  out->arcs = gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i) out->arcs[i] = path[n - 1 - i];
}

void gh_cpu_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out) {
  (void)b;
  gh_align_plan p;
  gh_align_plan_make(&p, batch);
#pragma omp parallel for schedule(dynamic, 1)
  for (int32_t i = 0; i < p.B; ++i) {
    const int32_t S = p.S[i];
    utt u = {.S = S, .T = p.T[i], .K = p.K[i], .nck = p.nck[i], .start = p.start[i], .neps = p.neps[i],
             .ld = p.ld, .as = p.acoustic_scale};
    u.src = p.arc_src + p.arc_off[i];
    u.colx = p.arc_col + p.arc_off[i];
    u.w = p.arc_w + p.arc_off[i];
    u.in = p.in_arc + p.arc_off[i];
    u.ioff = p.in_off + p.st_off[i] + i;
    u.imid = p.in_mid + p.st_off[i];
    u.final = p.final + p.st_off[i];
    u.ll = batch->loglikes[i];
    u.cur = gh_malloc(2 * (size_t)S * sizeof(double));
    u.nxt = u.cur + S;
    double *cur0 = u.cur;
    u.ck_cost = gh_malloc((size_t)u.nck * S * sizeof(double));
    u.ck_bp = gh_malloc((size_t)u.nck * S * sizeof(int32_t));
    u.bp = gh_malloc((size_t)u.K * S * sizeof(int32_t));
    int32_t *path = gh_malloc((size_t)(p.path_cap[i] ? p.path_cap[i] : 1) * sizeof(int32_t));
    align_one(&u, p.path_cap[i], path, &out[i]);
    free(path);
    free(u.bp);
    free(u.ck_bp);
    free(u.ck_cost);
    free(cur0);
  }
  gh_align_plan_free(&p);
}
