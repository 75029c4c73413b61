/* cpu-hmm.c -- the plain-C reference of the HMM kernels in backend.h:
 * forward (log domain or Rabiner-scaled), Viterbi and forward-backward over a
 * batch of utterances, each with its own compiled graph.
 *
 * One loop nest per formula, in double (loglikes and parameters are float as
 * stored): utterance by utterance, frame by frame, state by state, a
 * log-sum-exp (forward, backward) or a max (Viterbi) over a state's incoming
 * (forward) or outgoing (backward) arcs.  Equations (Rabiner 1989, with
 * explicit initial and final log-probs; doc/hmm.md):
 *   alpha_0(j) = init_j + b_j(o_0)
 *   alpha_t(j) = log sum_{i->j} exp(alpha_{t-1}(i) + a_ij) + b_j(o_t)   (eq. 20)
 *   log P(O)   = log sum_j exp(alpha_{T-1}(j) + final_j)                 (eq. 21)
 *   beta_{T-1}(i) = final_i
 *   beta_t(i)  = log sum_{i->j} exp(a_ij + b_j(o_{t+1}) + beta_{t+1}(j)) (eq. 25)
 *   gamma_t(j) = exp(alpha_t(j) + beta_t(j) - log P(O))                 (eq. 27)
 *   xi_t(i->j) = exp(alpha_t(i) + a_ij + b_j(o_{t+1}) + beta_{t+1}(j) - log P(O)) (eq. 37)
 * where b_j(o_t) = loglikes[t][pdf_j].  Double log values keep about 1e-10
 * absolute precision even at |log P| ~ 1e6 (10,000+ frames), so no
 * per-frame renormalisation is needed here; the scaled variant (eqs. 91-92)
 * normalises alpha to sum 1 every frame and adds the logs of the scales.
 *
 * Dense graphs (at least DENSE_ARCS arcs per state: ergodic HMMs of a few
 * states) take the same log-sum-exps with the exponentials factored out of
 * the arcs: with m = max_i alpha_{t-1}(i),
 *   alpha_t(j) = m + log sum_{i->j} exp(alpha_{t-1}(i) - m) p_ij + b_j(o_t),
 * p_ij = exp(a_ij) computed once per graph, so a frame costs S exp + S log
 * instead of one exp per arc (the same for beta with the max over
 * b_j(o_{t+1}) + beta_{t+1}(j), and xi_t(i->j) = exp(alpha_t(i) + M - log P)
 * p_ij exp(w_j - M), w_j = b_j(o_{t+1}) + beta_{t+1}(j), M = max_j w_j).
 * A sum below DENSE_TINY (where underflowed terms could matter: a state
 * reachable only from states hundreds of nats behind the best), an arc of
 * p_ij below 1e-300, or a factor exp(alpha_t(i) + M - log P) beyond e^700
 * takes the per-arc form above, so the results differ from it by rounding
 * only (about 1e-15 relative).  GaussianHMM(8) of bench/RESULTS.md Y3:
 * forward-backward 0.066 -> 0.039 s per iteration (45,001 frames, 2 threads).
 */
#include "backend.h"
#include "base/gh-base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  gh_hmm_graph g;      /* deep copy; arrays below own the memory */
  int32_t *pdf, *in_off, *arc_src, *arc_dst;
  float *init, *final, *arc_logp;
  int32_t *out_off;    /* [S + 1] CSR of outgoing arcs (by source) */
  int32_t *out_arc;    /* [A] arc indices, grouped by source */
  double *arc_p;       /* [A] exp(arc_logp) for the scaled forward and the dense form */
  int dense;           /* A >= DENSE_ARCS S: the factored log-sum-exps (header) */
} cpu_graph;

enum { DENSE_ARCS = 4 };
#define DENSE_TINY 1e-280

struct gh_dev_hmm {
  int32_t num_graphs;
  cpu_graph *graphs;
};

static void *dup_mem(const void *p, size_t n) {
  void *q = gh_malloc(n ? n : 1);
  if (n) memcpy(q, p, n);
  return q;
}

gh_dev_hmm *gh_cpu_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs) {
  gh_dev_hmm *h = gh_calloc(1, sizeof *h);
  h->num_graphs = num_graphs;
  h->graphs = gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(cpu_graph));
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    cpu_graph *c = &h->graphs[k];
    int32_t S = s->num_states, A = s->num_arcs;
    c->pdf = dup_mem(s->pdf, S * sizeof(int32_t));
    c->init = dup_mem(s->init, S * sizeof(float));
    c->final = dup_mem(s->final, S * sizeof(float));
    c->in_off = dup_mem(s->in_off, (S + 1) * sizeof(int32_t));
    c->arc_src = dup_mem(s->arc_src, A * sizeof(int32_t));
    c->arc_dst = dup_mem(s->arc_dst, A * sizeof(int32_t));
    c->arc_logp = dup_mem(s->arc_logp, A * sizeof(float));
    c->out_off = gh_calloc(S + 1, sizeof(int32_t));
    c->out_arc = gh_malloc((A ? A : 1) * sizeof(int32_t));
    c->arc_p = gh_malloc((A ? A : 1) * sizeof(double));
    for (int32_t a = 0; a < A; ++a) {
      c->out_off[s->arc_src[a] + 1]++;
      c->arc_p[a] = exp((double)s->arc_logp[a]);
    }
    for (int32_t i = 0; i < S; ++i) c->out_off[i + 1] += c->out_off[i];
    int32_t *fill = gh_malloc((S + 1) * sizeof(int32_t));
    memcpy(fill, c->out_off, (S + 1) * sizeof(int32_t));
    for (int32_t a = 0; a < A; ++a) c->out_arc[fill[s->arc_src[a]]++] = a;
    free(fill);
    c->dense = (int64_t)A >= (int64_t)DENSE_ARCS * S && S > 0;
    c->g = *s;
    c->g.pdf = c->pdf; c->g.init = c->init; c->g.final = c->final; c->g.in_off = c->in_off;
    c->g.arc_src = c->arc_src; c->g.arc_dst = c->arc_dst; c->g.arc_logp = c->arc_logp;
  }
  return h;
}

void gh_cpu_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  for (int32_t k = 0; k < h->num_graphs; ++k) {
    cpu_graph *c = &h->graphs[k];
    free(c->pdf); free(c->init); free(c->final); free(c->in_off); free(c->arc_src);
    free(c->arc_dst); free(c->arc_logp); free(c->out_off); free(c->out_arc); free(c->arc_p);
  }
  free(h->graphs);
  free(h);
}

/* log(exp(a) + exp(b)) without overflow; -inf + -inf = -inf. */
static inline double log_add(double a, double b) {
  if (a < b) { double t = a; a = b; b = t; }
  if (b == -INFINITY) return a;
  return a + log1p(exp(b - a));
}

static const cpu_graph *utt_graph(gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t u) {
  int32_t g = bt->graph ? bt->graph[u] : 0;
  if (g < 0 || g >= h->num_graphs)
    gh_die("HMM batch: utterance %d refers to graph %d of %d", u, g, h->num_graphs);
  const cpu_graph *c = &h->graphs[g];
  if (c->g.num_pdfs > bt->num_pdfs)
    gh_die("HMM batch: graph %d uses %d pdfs, loglikes have %d columns", g, c->g.num_pdfs, bt->num_pdfs);
  return c;
}

/* Log-domain forward of one utterance; alpha (double [T x S]) optional;
 * ex: [S] scratch for the dense form. */
static double forward_log(const cpu_graph *c, const float *ll, int32_t P, int64_t T, double *alpha,
                          double *prev, double *cur, double *ex) {
  int32_t S = c->g.num_states;
  if (T == 0) return -INFINITY;
  for (int32_t j = 0; j < S; ++j) prev[j] = (double)c->init[j] + ll[c->pdf[j]];
  if (alpha) memcpy(alpha, prev, S * sizeof(double));
  for (int64_t t = 1; t < T; ++t) {
    const float *lt = ll + t * P;
    double mp = -INFINITY;
    if (c->dense) {
      for (int32_t i = 0; i < S; ++i)
        if (prev[i] > mp) mp = prev[i];
      if (mp > -INFINITY)
        for (int32_t i = 0; i < S; ++i) ex[i] = exp(prev[i] - mp);
    }
    for (int32_t j = 0; j < S; ++j) {
      if (mp > -INFINITY) { /* dense form */
        double s = 0.0;
        for (int32_t a = c->in_off[j]; a < c->in_off[j + 1]; ++a) s += ex[c->arc_src[a]] * c->arc_p[a];
        if (s >= DENSE_TINY) {
          cur[j] = mp + log(s) + lt[c->pdf[j]];
          continue;
        }
      }
      double m = -INFINITY;
      for (int32_t a = c->in_off[j]; a < c->in_off[j + 1]; ++a) {
        double v = prev[c->arc_src[a]] + c->arc_logp[a];
        if (v > m) m = v;
      }
      double sum = 0.0;
      if (m > -INFINITY)
        for (int32_t a = c->in_off[j]; a < c->in_off[j + 1]; ++a)
          sum += exp(prev[c->arc_src[a]] + c->arc_logp[a] - m);
      cur[j] = m > -INFINITY ? m + log(sum) + lt[c->pdf[j]] : -INFINITY;
    }
    memcpy(prev, cur, S * sizeof(double));
    if (alpha) memcpy(alpha + t * S, prev, S * sizeof(double));
  }
  double tot = -INFINITY;
  for (int32_t j = 0; j < S; ++j) tot = log_add(tot, prev[j] + c->final[j]);
  return tot;
}

/* Rabiner-scaled forward (eqs. 91-92): alpha_hat_t sums to 1; emissions are
 * exp(ll - m_t) with m_t the largest loglike among states that can be
 * occupied at t, so exp never overflows; log P = sum_t (m_t + log c_t) +
 * log sum_j alpha_hat_{T-1}(j) exp(final_j). */
static double forward_scaled(const cpu_graph *c, const float *ll, int32_t P, int64_t T, double *alpha,
                             double *prev, double *cur) {
  int32_t S = c->g.num_states;
  if (T == 0) return -INFINITY;
  double logscale = 0.0;
  for (int64_t t = 0; t < T; ++t) {
    const float *lt = ll + t * P;
    for (int32_t j = 0; j < S; ++j) {  /* predicted occupancy */
      if (t == 0) {
        cur[j] = exp((double)c->init[j]);
      } else {
        double s = 0.0;
        for (int32_t a = c->in_off[j]; a < c->in_off[j + 1]; ++a) s += prev[c->arc_src[a]] * c->arc_p[a];
        cur[j] = s;
      }
    }
    double m = -INFINITY;
    for (int32_t j = 0; j < S; ++j)
      if (cur[j] > 0 && lt[c->pdf[j]] > m) m = lt[c->pdf[j]];
    if (m == -INFINITY) return -INFINITY;
    double ct = 0.0;
    for (int32_t j = 0; j < S; ++j) {
      cur[j] = cur[j] > 0 ? cur[j] * exp(lt[c->pdf[j]] - m) : 0.0;
      ct += cur[j];
    }
    if (!(ct > 0)) return -INFINITY;
    logscale += m + log(ct);
    for (int32_t j = 0; j < S; ++j) prev[j] = cur[j] / ct;
    if (alpha)
      for (int32_t j = 0; j < S; ++j) alpha[t * S + j] = prev[j] > 0 ? log(prev[j]) + logscale : -INFINITY;
  }
  double fin = 0.0;
  for (int32_t j = 0; j < S; ++j) fin += prev[j] * exp((double)c->final[j]);
  return fin > 0 ? logscale + log(fin) : -INFINITY;
}

static int32_t max_states(gh_dev_hmm *h) {
  int32_t m = 1;
  for (int32_t k = 0; k < h->num_graphs; ++k)
    if (h->graphs[k].g.num_states > m) m = h->graphs[k].g.num_states;
  return m;
}

/* The batch's graphs checked (utt_graph dies naming the first bad
 * utterance, before any thread starts) and its per-state offsets: soff[u]
 * = sum_{v<u} T_v S_g(v), u = 0..B (malloc'd). */
static int64_t *batch_state_off(gh_dev_hmm *h, const gh_hmm_batch *bt) {
  int64_t *soff = gh_malloc(sizeof(int64_t) * ((size_t)bt->num_utts + 1));
  soff[0] = 0;
  for (int32_t u = 0; u < bt->num_utts; ++u)
    soff[u + 1] = soff[u] + (bt->frame_off[u + 1] - bt->frame_off[u]) * utt_graph(h, bt, u)->g.num_states;
  return soff;
}

/* A thread's scratch: five rows of Smax doubles and a grow-only T x S block. */
typedef struct {
  double *prev, *cur, *bnext, *bcur, *ex, *big;
  int64_t big_cap;
} scratch;

static void scratch_init(scratch *w, int32_t Smax) {
  memset(w, 0, sizeof *w);
  w->prev = gh_malloc(Smax * sizeof(double)); w->cur = gh_malloc(Smax * sizeof(double));
  w->bnext = gh_malloc(Smax * sizeof(double)); w->bcur = gh_malloc(Smax * sizeof(double));
  w->ex = gh_malloc(Smax * sizeof(double));
}
static double *scratch_big(scratch *w, int64_t n) {
  if (n > w->big_cap) { w->big_cap = n; w->big = gh_realloc(w->big, (size_t)n * sizeof(double)); }
  return w->big;
}
static void scratch_free(scratch *w) {
  free(w->prev); free(w->cur); free(w->bnext); free(w->bcur); free(w->ex); free(w->big);
}

/* The utterances of a batch are independent: under the BLAS backend
 * (--device=cpu, and any backend whose HMM ops fall back to these) every op
 * runs them in parallel (OpenMP, dynamic schedule), each writing only its
 * own outputs, so the results do not depend on the number of threads;
 * forward-backward's statistics of utterances that share a graph are summed
 * in utterance order afterwards (gh_cpu_hmm_fb).  The reference itself
 * (--device=cpu-ref, or no backend) runs them one after another: the same
 * results, on one thread (test/tsan.sh runs the tools' own threads on it,
 * without OpenMP, whose runtime ThreadSanitizer cannot see). */
static int hmm_threads(const gh_backend *b) {
  if (!b || !b->ops || !strcmp(b->ops->name, "cpu-ref")) return 1;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void gh_cpu_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int flags,
                        double *loglik, float *alpha) {
  const int32_t Smax = max_states(h);
  const int nth = hmm_threads(b);
  int64_t *soff = batch_state_off(h, bt);
#pragma omp parallel num_threads(nth)
  {
    scratch w;
    scratch_init(&w, Smax);
#pragma omp for schedule(dynamic, 4)
    for (int32_t u = 0; u < bt->num_utts; ++u) {
      const cpu_graph *c = &h->graphs[bt->graph ? bt->graph[u] : 0];
      const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u], n = T * c->g.num_states;
      const float *ll = bt->loglikes + bt->frame_off[u] * bt->num_pdfs;
      double *a = alpha ? scratch_big(&w, n) : NULL;
      loglik[u] = (flags & GH_HMM_SCALED) ? forward_scaled(c, ll, bt->num_pdfs, T, a, w.prev, w.cur)
                                          : forward_log(c, ll, bt->num_pdfs, T, a, w.prev, w.cur, w.ex);
      if (alpha) {
        if (loglik[u] == -INFINITY && (flags & GH_HMM_SCALED))
          for (int64_t i = 0; i < n; ++i) a[i] = -INFINITY;  /* scaled: dead before the end */
        for (int64_t i = 0; i < n; ++i) alpha[soff[u] + i] = (float)a[i];
      }
    }
    scratch_free(&w);
  }
  free(soff);
}

/* Viterbi of one utterance (path pu [T], back-pointers bp [T x S]); returns
 * the score, -inf (path all -1) without a complete path. */
static double viterbi_one(const cpu_graph *c, const float *ll, int32_t P, int64_t T, int32_t *pu, int32_t *bp,
                          double *prev, double *cur) {
  const int32_t S = c->g.num_states;
  if (T == 0) return -INFINITY;
  for (int32_t j = 0; j < S; ++j) { prev[j] = (double)c->init[j] + ll[c->pdf[j]]; bp[j] = -1; }
  for (int64_t t = 1; t < T; ++t) {
    const float *lt = ll + t * P;
    for (int32_t j = 0; j < S; ++j) {
      double m = -INFINITY;
      int32_t arg = -1;
      for (int32_t a = c->in_off[j]; a < c->in_off[j + 1]; ++a) {
        double v = prev[c->arc_src[a]] + c->arc_logp[a];
        if (v > m || (v == m && arg >= 0 && c->arc_src[a] < arg)) { m = v; arg = c->arc_src[a]; }
      }
      cur[j] = m > -INFINITY ? m + lt[c->pdf[j]] : -INFINITY;
      bp[t * S + j] = m > -INFINITY ? arg : -1;
    }
    memcpy(prev, cur, S * sizeof(double));
  }
  double best = -INFINITY;
  int32_t arg = -1;
  for (int32_t j = 0; j < S; ++j) {
    double v = prev[j] + c->final[j];
    if (v > best) { best = v; arg = j; }
  }
  if (arg < 0) {
    for (int64_t t = 0; t < T; ++t) pu[t] = -1;
    return -INFINITY;
  }
  for (int64_t t = T - 1; t >= 0; --t) {
    pu[t] = arg;
    arg = bp[t * S + arg];
  }
  return best;
}

void gh_cpu_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t *path,
                        double *score) {
  const int32_t Smax = max_states(h);
  const int nth = hmm_threads(b);
  free(batch_state_off(h, bt)); /* the checks */
#pragma omp parallel num_threads(nth)
  {
    scratch w;
    scratch_init(&w, Smax);
    int32_t *bp = NULL;
    int64_t bcap = 0;
#pragma omp for schedule(dynamic, 4)
    for (int32_t u = 0; u < bt->num_utts; ++u) {
      const cpu_graph *c = &h->graphs[bt->graph ? bt->graph[u] : 0];
      const int32_t S = c->g.num_states, P = bt->num_pdfs;
      const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
      if (T * S > bcap) { bcap = T * S; bp = gh_realloc(bp, bcap * sizeof(int32_t)); }
      score[u] = viterbi_one(c, bt->loglikes + bt->frame_off[u] * P, P, T, path + bt->frame_off[u], bp, w.prev,
                             w.cur);
    }
    free(bp);
    scratch_free(&w);
  }
}

/* Forward-backward of one utterance: returns log P; gu (T x S float gamma)
 * and st (its own stats block, 2 S + A doubles, zeroed by the caller) may
 * be NULL.  Without a path (log P = -inf) gamma is 0 and st untouched. */
static double fb_one(const cpu_graph *c, const float *ll, int32_t P, int64_t T, float *gu, double *st,
                     scratch *w) {
  const int32_t S = c->g.num_states, A = c->g.num_arcs;
  const int64_t n = T * S;
  double *alpha = scratch_big(w, n);
  double *bnext = w->bnext, *bcur = w->bcur;
  const double L = forward_log(c, ll, P, T, alpha, w->prev, w->cur, w->ex);
  /* the dense form's rows (after the forward): f_j = exp(w_j - M), g_i =
   * exp(alpha_{t-1}(i) + M - log P) */
  double *f = w->prev, *g = w->ex;
  const int dense = c->dense && isfinite(L);
  if (L == -INFINITY) {
    if (gu) memset(gu, 0, n * sizeof(float));
    return L;
  }
  /* t = T-1: beta = final; exits. */
  for (int32_t j = 0; j < S; ++j) bnext[j] = c->final[j];
  for (int64_t t = T - 1; t >= 0; --t) {
    const double *at = alpha + t * S;
    for (int32_t j = 0; j < S; ++j) {
      double g = exp(at[j] + bnext[j] - L);
      if (gu) gu[t * S + j] = (float)g;
      if (st && t == 0) st[j] += g;
      if (st && t == T - 1) st[S + A + j] += exp(at[j] + c->final[j] - L);
    }
    if (t == 0) break;
    /* arcs t-1 -> t: xi, and beta_{t-1} */
    const float *lt = ll + t * P;
    const double *ap = alpha + (t - 1) * S;
    double M = -INFINITY;
    if (dense) {
      for (int32_t j = 0; j < S; ++j) {
        const double v = lt[c->pdf[j]] + bnext[j];
        if (v > M) M = v;
      }
      if (M == -INFINITY) { /* no state live at t: beta_{t-1} = -inf, no arcs */
        for (int32_t i = 0; i < S; ++i) bcur[i] = -INFINITY;
        double *tmp = bnext; bnext = bcur; bcur = tmp;
        continue;
      }
      for (int32_t j = 0; j < S; ++j) f[j] = exp(lt[c->pdf[j]] + bnext[j] - M);
    }
    if (st && dense) {
      for (int32_t i = 0; i < S; ++i) {
        const double v = ap[i] + M - L;
        g[i] = v <= 700.0 ? exp(v) : -1.0; /* -1: the per-arc form (overflow) */
      }
      for (int32_t a = 0; a < A; ++a) {
        const int32_t i = c->arc_src[a], j = c->arc_dst[a];
        double x;
        if (g[i] >= 0.0 && c->arc_p[a] >= 1e-300) {
          x = g[i] * c->arc_p[a] * f[j];
        } else {
          const double v = ap[i] + (double)c->arc_logp[a] + lt[c->pdf[j]] + bnext[j] - L;
          x = v > -INFINITY ? exp(v) : 0.0;
        }
        if (x > 0.0) st[S + a] += x;
      }
    } else if (st)
      for (int32_t a = 0; a < A; ++a) {
        int32_t i = c->arc_src[a], j = c->arc_dst[a];
        double v = ap[i] + (double)c->arc_logp[a] + lt[c->pdf[j]] + bnext[j] - L;
        if (v > -INFINITY) st[S + a] += exp(v);
      }
    for (int32_t i = 0; i < S; ++i) {
      if (dense) {
        double s = 0.0;
        for (int32_t k = c->out_off[i]; k < c->out_off[i + 1]; ++k) {
          const int32_t a = c->out_arc[k];
          s += c->arc_p[a] * f[c->arc_dst[a]];
        }
        if (s >= DENSE_TINY) {
          bcur[i] = M + log(s);
          continue;
        }
      }
      double m = -INFINITY;
      for (int32_t k = c->out_off[i]; k < c->out_off[i + 1]; ++k) {
        int32_t a = c->out_arc[k], j = c->arc_dst[a];
        double v = (double)c->arc_logp[a] + lt[c->pdf[j]] + bnext[j];
        if (v > m) m = v;
      }
      double sum = 0.0;
      if (m > -INFINITY)
        for (int32_t k = c->out_off[i]; k < c->out_off[i + 1]; ++k) {
          int32_t a = c->out_arc[k], j = c->arc_dst[a];
          sum += exp((double)c->arc_logp[a] + lt[c->pdf[j]] + bnext[j] - m);
        }
      bcur[i] = m > -INFINITY ? m + log(sum) : -INFINITY;
    }
    double *tmp = bnext; bnext = bcur; bcur = tmp;
  }
  return L;
}

/* Utterances per wave of forward-backward: their own stats blocks at most
 * this many doubles (at least one utterance). */
#define FB_WAVE_STATS ((int64_t)4 << 20)

void gh_cpu_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, double *loglik,
                   float *gamma, double *stats) {
  const int32_t Smax = max_states(h), B = bt->num_utts;
  const int nth = hmm_threads(b);
  int64_t *soff = batch_state_off(h, bt);
  int64_t *stats_off = gh_malloc((h->num_graphs + 1) * sizeof(int64_t));
  stats_off[0] = 0;
  for (int32_t k = 0; k < h->num_graphs; ++k)
    stats_off[k + 1] = stats_off[k] + gh_hmm_graph_stats_size(&h->graphs[k].g);
  /* waves of utterances: each computes into its own stats block in
   * parallel, then the blocks are added into their graphs' in utterance
   * order (the same sums whatever the number of threads) */
  int64_t *uso = gh_malloc(sizeof(int64_t) * ((size_t)B + 1));
  double *ust = NULL;
  int64_t ust_cap = 0;
  for (int32_t u0 = 0; u0 < B;) {
    int32_t u1 = u0;
    uso[0] = 0;
    while (u1 < B) {
      const int64_t sz = stats ? gh_hmm_graph_stats_size(&h->graphs[bt->graph ? bt->graph[u1] : 0].g) : 0;
      if (u1 > u0 && uso[u1 - u0] + sz > FB_WAVE_STATS) break;
      uso[u1 - u0 + 1] = uso[u1 - u0] + sz;
      ++u1;
    }
    if (stats) {
      if (uso[u1 - u0] > ust_cap) { ust_cap = uso[u1 - u0]; ust = gh_realloc(ust, (size_t)ust_cap * sizeof(double)); }
      memset(ust, 0, (size_t)uso[u1 - u0] * sizeof(double));
    }
#pragma omp parallel num_threads(nth)
    {
      scratch w;
      scratch_init(&w, Smax);
#pragma omp for schedule(dynamic, 1)
      for (int32_t u = u0; u < u1; ++u) {
        const cpu_graph *c = &h->graphs[bt->graph ? bt->graph[u] : 0];
        const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
        loglik[u] = fb_one(c, bt->loglikes + bt->frame_off[u] * bt->num_pdfs, bt->num_pdfs, T,
                           gamma ? gamma + soff[u] : NULL, stats ? ust + uso[u - u0] : NULL, &w);
      }
      scratch_free(&w);
    }
    if (stats)
      for (int32_t u = u0; u < u1; ++u) {
        if (loglik[u] == -INFINITY) continue;
        double *st = stats + stats_off[bt->graph ? bt->graph[u] : 0];
        const double *su = ust + uso[u - u0];
        for (int64_t e = 0; e < uso[u - u0 + 1] - uso[u - u0]; ++e) st[e] += su[e];
      }
    u0 = u1;
  }
  free(ust); free(uso); free(soff); free(stats_off);
}
