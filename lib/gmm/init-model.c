/* init-model.c -- models from trees and their statistics; Kaldi-exact
 * mixing up.  See init-model.h. */
#include "gmm/init-model.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "gmm/kaldi-gconst.h"

void gh_gmm_from_gclust(gh_gmm *g, const gh_gclust *c, float var_floor, const char *what) {
  int32_t D = c->dim;
  float count = (float)c->count;
  if (!(count > 0.0f)) gh_die("%s: statistics with count %g: cannot make a Gaussian", what, (double)count);
  gh_gmm_init(g, GH_COV_DIAG, 1, D);
  float scale = (float)(1.0 / (double)count);
  for (int32_t d = 0; d < D; ++d) {
    float x = (float)c->x[d] * scale, x2 = (float)c->x2[d] * scale;
    x2 += -1.0f * x * x;
    if (x2 < var_floor) x2 = var_floor;
    float iv = 1.0f / x2;
    g->inv_vars[d] = iv;
    g->means_invvars[d] = x * iv;
  }
  g->weights[0] = 1.0f;
  gh_gmm_kaldi_gconsts(g, what);
}

/* The pdf of every statistic; dies naming the first event the tree cannot map. */
static int32_t *map_stats(const gh_tree_stats *st, const gh_ctx_dep *ctx, const char *stats_name) {
  int32_t *pdf = gh_malloc(sizeof(int32_t) * (size_t)(st->num > 0 ? st->num : 1));
  for (int32_t i = 0; i < st->num; ++i) {
    for (int32_t k = 0; k < st->items[i].len; ++k) {
      int32_t key = st->items[i].ev[k].key;
      if (key != GH_KEY_PDF_CLASS && (key < 0 || key >= ctx->N))
        gh_die("%s: statistic %d has context position %d, but the tree has context width %d (statistics of "
               "another --context-width?)",
               stats_name, i, key, ctx->N);
    }
    if (!gh_event_map_map(ctx->to_pdf, st->items[i].ev, st->items[i].len, &pdf[i])) {
      char buf[256] = "";
      size_t n = 0;
      for (int32_t k = 0; k < st->items[i].len && n + 24 < sizeof buf; ++k)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s(%d,%d)", k ? " " : "", st->items[i].ev[k].key,
                              st->items[i].ev[k].value);
      gh_die("%s: the tree gives no pdf for the event %s of statistic %d (statistics of another tree's context "
             "width or of another lang?)",
             stats_name, buf, i);
    }
  }
  return pdf;
}

/* Kaldi GetPhonesForPdfs for one pdf, as a string. */
static void phones_of_pdf(const gh_transition_model *tm, int32_t pdf, char *buf, size_t len) {
  size_t n = 0;
  int32_t last = -1;
  buf[0] = 0;
  for (int32_t i = 0; i < tm->num_tuples && n + 16 < len; ++i) {
    const gh_trans_tuple *t = &tm->tuples[i];
    if ((t->forward_pdf == pdf || t->self_loop_pdf == pdf) && t->phone != last)
      n += (size_t)snprintf(buf + n, len - n, "%d ", last = t->phone);
  }
}

void gh_init_am_from_tree_stats(const gh_tree_stats *st, const gh_ctx_dep *ctx, const gh_transition_model *tm,
                                float var_floor, const char *stats_name, gh_gmm_set *set) {
  if (st->num == 0 || st->dim < 0) gh_die("%s: no statistics", stats_name);
  int32_t P = gh_ctx_dep_num_pdfs(ctx), D = st->dim;
  int32_t *pdf = map_stats(st, ctx, stats_name);
  gh_gclust **sum = gh_calloc((size_t)P, sizeof *sum);
  gh_gclust *avg = NULL;
  int *seen = gh_calloc((size_t)P, sizeof *seen);
  for (int32_t i = 0; i < st->num; ++i) {
    seen[pdf[i]] = 1;
    const gh_gclust *c = st->items[i].stats;
    if (!c) continue;
    if (!sum[pdf[i]]) sum[pdf[i]] = gh_gclust_copy(c);
    else gh_gclust_add(sum[pdf[i]], c);
  }
  /* Kaldi SumClusterable over the per-pdf sums, in pdf order */
  for (int32_t p = 0; p < P; ++p)
    if (sum[p]) {
      if (!avg) avg = gh_gclust_copy(sum[p]);
      else gh_gclust_add(avg, sum[p]);
    }
  if (!avg) gh_die("%s: no statistics", stats_name);
  char phones[4096];
  for (int32_t p = 0; p < P; ++p)
    if (!seen[p]) {
      phones_of_pdf(tm, p, phones, sizeof phones);
      gh_warn("Tree has pdf-id %d with no stats; corresponding phone list: %s", p, phones);
    }
  memset(set, 0, sizeof *set);
  set->dim = D, set->num_pdfs = P, set->form = GH_SET_AM;
  set->pdfs = gh_calloc((size_t)P, sizeof(gh_gmm));
  for (int32_t p = 0; p < P; ++p) {
    const gh_gclust *c = sum[p] ? sum[p] : avg;
    gh_gmm_from_gclust(&set->pdfs[p], c, var_floor, stats_name);
    float count = (float)c->count;
    if (count < 100) {
      phones_of_pdf(tm, p, phones, sizeof phones);
      gh_warn("Very small count for state %d: %g; corresponding phone list: %s", p, (double)count, phones);
    }
  }
  for (int32_t p = 0; p < P; ++p) gh_gclust_free(sum[p]);
  gh_gclust_free(avg);
  free(sum), free(seen), free(pdf);
}

void gh_init_am_from_old(const gh_tree_stats *st, const gh_ctx_dep *ctx, const gh_ctx_dep *old_ctx,
                         const gh_gmm_set *old_set, float var_floor, const char *stats_name, gh_gmm_set *set) {
  if (st->num == 0 || st->dim < 0) gh_die("%s: no statistics", stats_name);
  int32_t N = ctx->N, Pc = ctx->P, oN = old_ctx->N, oP = old_ctx->P;
  if (oN > N || oP > Pc || oN - oP - 1 > N - Pc - 1)
    gh_die("the old tree has a wider context (width %d, central position %d) than the new one (%d, %d): cannot "
           "initialize from the old model",
           oN, oP, N, Pc);
  if (old_set->dim != st->dim)
    gh_die("%s has statistics of dimension %d but the old model has dimension %d", stats_name, st->dim,
           old_set->dim);
  int32_t P = gh_ctx_dep_num_pdfs(ctx), shift = oP - Pc;
  int32_t *pdf = map_stats(st, ctx, stats_name);
  gh_gclust *all = NULL;
  for (int32_t i = 0; i < st->num; ++i)
    if (st->items[i].stats) {
      if (!all) all = gh_gclust_copy(st->items[i].stats);
      else gh_gclust_add(all, st->items[i].stats);
    }
  if (!all) gh_die("%s: no statistics", stats_name);
  gh_gmm avg = {0};
  gh_gmm_from_gclust(&avg, all, var_floor, stats_name);
  gh_gclust_free(all);
  /* Kaldi's warnings, in its order: leaves without statistics, then a last leaf without them */
  uint8_t *seen = gh_calloc((size_t)(P > 0 ? P : 1), 1);
  int32_t max_seen = -1;
  for (int32_t i = 0; i < st->num; ++i) {
    seen[pdf[i]] = 1;
    if (pdf[i] > max_seen) max_seen = pdf[i];
  }
  for (int32_t p = 0; p <= max_seen; ++p)
    if (!seen[p]) gh_warn("Leaf %d of new tree has no stats.", p);
  if (max_seen + 1 != P) gh_warn("Tree may have final leaf with no stats.");
  free(seen);
  int32_t oldP_num = old_set->num_pdfs;
  float *cnt = gh_calloc((size_t)oldP_num, sizeof *cnt);
  uint8_t *has = gh_calloc((size_t)oldP_num, 1);
  gh_event_pair *ev = gh_malloc(sizeof *ev * (size_t)(N + 8));
  memset(set, 0, sizeof *set);
  set->dim = st->dim, set->num_pdfs = P, set->form = GH_SET_AM;
  set->pdfs = gh_calloc((size_t)P, sizeof(gh_gmm));
  for (int32_t p = 0; p < P; ++p) {
    memset(cnt, 0, sizeof *cnt * (size_t)oldP_num);
    memset(has, 0, (size_t)oldP_num);
    for (int32_t i = 0; i < st->num; ++i) {
      if (pdf[i] != p) continue;
      const gh_tree_stat *it = &st->items[i];
      if (it->len > N + 8) gh_die("%s: statistic %d has an event of %d keys", stats_name, i, it->len);
      int32_t n = 0;
      for (int32_t k = 0; k < it->len; ++k) {
        int32_t key = it->ev[k].key;
        if (key >= 0 && key < N) {
          key += shift;
          if (key >= 0 && key < oN) ev[n++] = (gh_event_pair){key, it->ev[k].value};
        } else {
          ev[n++] = it->ev[k];
        }
      }
      int32_t op;
      if (!gh_event_map_map(old_ctx->to_pdf, ev, n, &op) || op < 0 || op >= oldP_num)
        gh_die("%s: the old tree gives no pdf of the old model for statistic %d", stats_name, i);
      float c = it->stats ? (float)it->stats->count : 0.0f;
      if (!has[op]) cnt[op] = c, has[op] = 1;
      else cnt[op] += c;
    }
    float max_count = 0;
    int32_t best = -1;
    for (int32_t o = 0; o < oldP_num; ++o)
      if (has[o] && cnt[o] > max_count) max_count = cnt[o], best = o;
    if (best < 0) {
      gh_warn("Leaf %d of new tree being initialized with globally averaged stats.", p);
      gh_gmm_copy(&set->pdfs[p], &avg);
    } else {
      gh_gmm_copy(&set->pdfs[p], &old_set->pdfs[best]);
    }
  }
  gh_gmm_free(&avg);
  free(cnt), free(has), free(ev), free(pdf);
}

void gh_tree_stats_pdf_occs(const gh_tree_stats *st, const gh_ctx_dep *ctx, const char *stats_name, float *occs) {
  int32_t P = gh_ctx_dep_num_pdfs(ctx);
  int32_t *pdf = map_stats(st, ctx, stats_name);
  for (int32_t p = 0; p < P; ++p) occs[p] = 0.0f;
  for (int32_t i = 0; i < st->num; ++i)
    if (st->items[i].stats) occs[pdf[i]] += (float)st->items[i].stats->count;
  free(pdf);
}

/* ---- Kaldi's mixing up ---- */

/* Kaldi RandUniform / RandGauss on the C library's rand(). */
static float kaldi_rand_uniform(void) { return (float)((rand() + 1.0) / (RAND_MAX + 2.0)); }
static float kaldi_rand_gauss(void) {
  float a = sqrtf(-2 * logf(kaldi_rand_uniform()));
  float b = cosf((float)(2 * M_PI * kaldi_rand_uniform()));
  return a * b;
}

/* Kaldi DiagGmm::Split in float. */
static void split_diag_kaldi(gh_gmm *g, int32_t target, float perturb_factor) {
  int32_t G = g->num_gauss, D = g->dim;
  if (target < G || G == 0) gh_die("cannot split a GMM from %d to %d Gaussians", G, target);
  if (target == G) return;
  gh_gmm n = {0};
  gh_gmm_init(&n, GH_COV_DIAG, target, D);
  memcpy(n.weights, g->weights, sizeof(float) * (size_t)G);
  memcpy(n.means_invvars, g->means_invvars, sizeof(float) * (size_t)G * D);
  memcpy(n.inv_vars, g->inv_vars, sizeof(float) * (size_t)G * D);
  float *rv = gh_malloc(sizeof(float) * (size_t)D);
  for (int32_t cur = G; cur < target; ++cur) {
    float mw = n.weights[0];
    int32_t mx = 0;
    for (int32_t i = 1; i < cur; ++i)
      if (n.weights[i] > mw) mw = n.weights[i], mx = i;
    n.weights[mx] /= 2;
    n.weights[cur] = n.weights[mx];
    for (int32_t d = 0; d < D; ++d) rv[d] = kaldi_rand_gauss() * sqrtf(n.inv_vars[(int64_t)mx * D + d]);
    memcpy(n.inv_vars + (int64_t)cur * D, n.inv_vars + (int64_t)mx * D, sizeof(float) * (size_t)D);
    float *mnew = n.means_invvars + (int64_t)cur * D, *mold = n.means_invvars + (int64_t)mx * D;
    memcpy(mnew, mold, sizeof(float) * (size_t)D);
    /* Kaldi's AddVec is BLAS saxpy; the fixture's Kaldi build (OpenBLAS,
     * x86-64 with FMA) fuses the multiply-add over the first D & ~15
     * dimensions (its SIMD kernel) and rounds twice in the scalar tail: the
     * split models are byte-identical only with the same split. */
    int32_t nf = D & ~15;
    for (int32_t d = 0; d < nf; ++d) mnew[d] = fmaf(perturb_factor, rv[d], mnew[d]);
    for (int32_t d = nf; d < D; ++d) mnew[d] += perturb_factor * rv[d];
    for (int32_t d = 0; d < nf; ++d) mold[d] = fmaf(-perturb_factor, rv[d], mold[d]);
    for (int32_t d = nf; d < D; ++d) mold[d] += -perturb_factor * rv[d];
  }
  free(rv);
  gh_gmm_kaldi_gconsts(&n, "split");
  gh_gmm_free(g);
  *g = n;
}

/* Kaldi's CountStats in a std::priority_queue (libstdc++'s binary heap, so
 * that ties come out in Kaldi's order). */
typedef struct {
  int32_t pdf, n;
  float occ;
} count_stats;
static int cs_less(const count_stats *a, const count_stats *b) {
  return a->occ / (a->n + 1.0e-10) < b->occ / (b->n + 1.0e-10);
}
static void heap_push_hole(count_stats *h, int32_t hole, int32_t top, count_stats v) {
  int32_t parent = (hole - 1) / 2;
  while (hole > top && cs_less(&h[parent], &v)) {
    h[hole] = h[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  h[hole] = v;
}
static void heap_push(count_stats *h, int32_t *len, count_stats v) {
  h[*len] = v;
  heap_push_hole(h, *len, 0, v);
  (*len)++;
}
static count_stats heap_pop(count_stats *h, int32_t *len) {
  count_stats top = h[0];
  int32_t n = *len - 1;
  if (n > 0) {
    count_stats v = h[n];
    h[n] = h[0];
    int32_t hole = 0, child = 0;
    while (child < (n - 1) / 2) {
      child = 2 * (child + 1);
      if (cs_less(&h[child], &h[child - 1])) child--;
      h[hole] = h[child];
      hole = child;
    }
    if ((n & 1) == 0 && child == (n - 2) / 2) {
      child = 2 * (child + 1);
      h[hole] = h[child - 1];
      hole = child - 1;
    }
    heap_push_hole(h, hole, 0, v);
  }
  *len = n;
  return top;
}

/* Kaldi GetSplitTargets (gmm/model-common.cc): targets[num_pdfs]. */
static void split_targets(const float *occs, int32_t P, int32_t target, float power, float min_count,
                          int32_t *targets) {
  int32_t len = 0;
  count_stats *h = gh_malloc(sizeof *h * (size_t)(P > 0 ? P : 1));
  for (int32_t p = 0; p < P; ++p) heap_push(h, &len, (count_stats){p, 1, powf(occs[p], power)});
  for (int32_t num = P; num < target;) {
    if (h[0].occ == 0) {
      gh_warn("Could not split up to %d due to min-count = %g (or no counts at all)", target, (double)min_count);
      break;
    }
    count_stats c = heap_pop(h, &len);
    float orig = occs[c.pdf];
    if ((c.n + 1) * min_count >= orig) c.occ = 0;
    else c.n++, num++;
    heap_push(h, &len, c);
  }
  while (len > 0) {
    count_stats c = heap_pop(h, &len);
    targets[c.pdf] = c.n;
  }
  free(h);
}

static void check_diag(const gh_gmm_set *s, const char *what) {
  for (int32_t p = 0; p < s->num_pdfs; ++p)
    if (s->pdfs[p].type != GH_COV_DIAG)
      gh_die("pdf %d has full covariances: only diagonal models can be %s", p, what);
}

int64_t gh_gmm_set_split_by_count_kaldi(gh_gmm_set *s, const float *occs, int32_t target, float perturb_factor,
                                        float power, float min_count) {
  int32_t P = s->num_pdfs;
  check_diag(s, "mixed up");
  int32_t *targets = gh_malloc(sizeof(int32_t) * (size_t)(P > 0 ? P : 1));
  split_targets(occs, P, target, power, min_count, targets);
  int64_t total = 0;
  for (int32_t p = 0; p < P; ++p) {
    if (s->pdfs[p].num_gauss < targets[p]) split_diag_kaldi(&s->pdfs[p], targets[p], perturb_factor);
    total += s->pdfs[p].num_gauss;
  }
  free(targets);
  return total;
}

/* ---- Kaldi's merging (DiagGmm::Merge) ---- */

/* y += a * x as BLAS saxpy in the fixture's Kaldi build (OpenBLAS on x86-64:
 * fused multiply-add over the first n & ~15 elements, two roundings in the
 * tail; see split_diag_kaldi). */
static void kaldi_saxpy(int32_t n, float a, const float *x, float *y) {
  int32_t nf = n & ~15;
  for (int32_t d = 0; d < nf; ++d) y[d] = fmaf(a, x[d], y[d]);
  for (int32_t d = nf; d < n; ++d) y[d] += a * x[d];
}

static void kaldi_sscal(int32_t n, float a, float *y) {
  for (int32_t d = 0; d < n; ++d) y[d] *= a;
}

/* Kaldi VectorBase::AddVec2: y += alpha * x * x, in float. */
static void kaldi_addvec2(int32_t n, float alpha, const float *x, float *y) {
  for (int32_t d = 0; d < n; ++d) y[d] += alpha * x[d] * x[d];
}

/* 0.5 log det of the inverse covariance: Kaldi's float sum of double terms. */
static float half_logdet_inv(const float *inv_var, int32_t D) {
  float ld = 0.0f;
  for (int32_t d = 0; d < D; ++d) ld = (float)(ld + 0.5 * (double)logf(inv_var[d]));
  return ld;
}

/* Kaldi DiagGmm::merged_components_logdet: 0.5 log det of the inverse
 * covariance of the merge of Gaussians 1 and 2 (weights w1, w2; means f1,
 * f2; second moments s1, s2).  tm, tv: scratch [D]. */
static float merged_logdet(float w1, float w2, const float *f1, const float *f2, const float *s1, const float *s2,
                           int32_t D, float *tm, float *tv) {
  float w_sum = w1 + w2, r = w2 / w1, sc = w1 / w_sum;
  memcpy(tm, f1, sizeof(float) * (size_t)D);
  kaldi_saxpy(D, r, f2, tm);
  kaldi_sscal(D, sc, tm);
  memcpy(tv, s1, sizeof(float) * (size_t)D);
  kaldi_saxpy(D, r, s2, tv);
  kaldi_sscal(D, sc, tv);
  kaldi_addvec2(D, -1.0f, tm, tv);
  float ld = 0.0f;
  for (int32_t d = 0; d < D; ++d) ld = (float)(ld - 0.5 * (double)logf(tv[d]));
  return ld;
}

/* Kaldi DiagGmm::Merge(target) in float. */
static void merge_diag_kaldi(gh_gmm *g, int32_t target, const char *what) {
  int32_t G = g->num_gauss, D = g->dim;
  if (target <= 0 || G < target)
    gh_die("%s: invalid target number of Gaussians (=%d), #Gauss = %d", what, target, G);
  if (G == target) return;
  size_t GD = (size_t)G * (size_t)D;
  float *means = gh_malloc(sizeof(float) * GD), *vars = gh_malloc(sizeof(float) * GD);
  /* moments: var = 1 / inv_var, mean = means_invvars * var, second moment var + mean^2 */
  for (size_t k = 0; k < GD; ++k) {
    vars[k] = 1.0f / g->inv_vars[k];
    means[k] = g->means_invvars[k] * vars[k];
  }
  for (int32_t i = 0; i < G; ++i) kaldi_addvec2(D, 1.0f, means + (size_t)i * D, vars + (size_t)i * D);
  if (target == 1) {
    /* one Gaussian: the weighted global moments */
    float w0 = 0.0f, *m0 = gh_calloc((size_t)D, sizeof(float)), *v0 = gh_calloc((size_t)D, sizeof(float));
    for (int32_t i = 0; i < G; ++i) {
      w0 += g->weights[i];
      kaldi_saxpy(D, g->weights[i], means + (size_t)i * D, m0);
      kaldi_saxpy(D, g->weights[i], vars + (size_t)i * D, v0);
    }
    float diff = fabsf(w0 - 1.0f);
    if (!(w0 == 1.0f || (diff <= 1e-6f * (fabsf(w0) + 1.0f)))) {
      /* Kaldi's rescaling multiplies by the sum (it does not divide): kept as Kaldi's */
      gh_warn("Weights sum to %g: rescaling.", (double)w0);
      kaldi_sscal(D, w0, m0);
      kaldi_sscal(D, w0, v0);
      w0 = 1.0f;
    }
    kaldi_addvec2(D, -1.0f, m0, v0);
    gh_gmm n = {0};
    gh_gmm_init(&n, GH_COV_DIAG, 1, D);
    n.weights[0] = w0;
    for (int32_t d = 0; d < D; ++d) {
      n.inv_vars[d] = 1.0f / v0[d];
      n.means_invvars[d] = m0[d] * n.inv_vars[d];
    }
    gh_gmm_kaldi_gconsts(&n, what);
    gh_gmm_free(g);
    *g = n;
    free(m0), free(v0), free(means), free(vars);
    return;
  }
  float *logdet = gh_malloc(sizeof(float) * (size_t)G), *tm = gh_malloc(sizeof(float) * (size_t)D),
        *tv = gh_malloc(sizeof(float) * (size_t)D);
  float *delta = gh_malloc(sizeof(float) * (size_t)G * (size_t)G); /* symmetric, as Kaldi's SpMatrix */
  unsigned char *gone = gh_calloc((size_t)G, 1);
  for (int32_t i = 0; i < G; ++i) logdet[i] = half_logdet_inv(g->inv_vars + (size_t)i * D, D);
  for (int32_t i = 0; i < G; ++i)
    for (int32_t j = 0; j < i; ++j) {
      float w1 = g->weights[i], w2 = g->weights[j], w_sum = w1 + w2;
      float ml = merged_logdet(w1, w2, means + (size_t)i * D, means + (size_t)j * D, vars + (size_t)i * D,
                               vars + (size_t)j * D, D, tm, tv);
      delta[(size_t)i * G + j] = delta[(size_t)j * G + i] = w_sum * ml - w1 * logdet[i] - w2 * logdet[j];
    }
  for (int32_t removed = 0; removed < G - target; ++removed) {
    /* the pair of the smallest loss of likelihood (largest delta), first found kept */
    float best = -FLT_MAX;
    int32_t bi = -1, bj = -1;
    for (int32_t i = 0; i < G; ++i) {
      if (gone[i]) continue;
      for (int32_t j = 0; j < i; ++j)
        if (!gone[j] && delta[(size_t)i * G + j] > best) best = delta[(size_t)i * G + j], bi = i, bj = j;
    }
    if (bi < 0)
      gh_die("%s: no pair of Gaussians to merge (the likelihood changes are not numbers: a degenerate variance?)",
             what);
    float w1 = g->weights[bi], w2 = g->weights[bj], w_sum = w1 + w2;
    float *mi = means + (size_t)bi * D, *vi = vars + (size_t)bi * D;
    kaldi_saxpy(D, w2 / w1, means + (size_t)bj * D, mi);
    kaldi_sscal(D, w1 / w_sum, mi);
    kaldi_saxpy(D, w2 / w1, vars + (size_t)bj * D, vi);
    kaldi_sscal(D, w1 / w_sum, vi);
    g->weights[bi] = w_sum;
    float *iv = g->inv_vars + (size_t)bi * D, *miv = g->means_invvars + (size_t)bi * D;
    memcpy(iv, vi, sizeof(float) * (size_t)D);
    kaldi_addvec2(D, -1.0f, mi, iv);
    for (int32_t d = 0; d < D; ++d) iv[d] = 1.0f / iv[d];
    for (int32_t d = 0; d < D; ++d) miv[d] = mi[d] * iv[d];
    logdet[bi] = half_logdet_inv(iv, D);
    gone[bj] = 1;
    for (int32_t j = 0; j < G; ++j) {
      if (j == bi || gone[j]) continue;
      float a1 = g->weights[bi], a2 = g->weights[j], a_sum = a1 + a2;
      float ml = merged_logdet(a1, a2, mi, means + (size_t)j * D, vi, vars + (size_t)j * D, D, tm, tv);
      delta[(size_t)bi * G + j] = delta[(size_t)j * G + bi] = a_sum * ml - a1 * logdet[bi] - a2 * logdet[j];
    }
  }
  /* keep the remaining Gaussians in their order */
  gh_gmm n = {0};
  gh_gmm_init(&n, GH_COV_DIAG, target, D);
  for (int32_t i = 0, m = 0; i < G; ++i) {
    if (gone[i]) continue;
    n.weights[m] = g->weights[i];
    memcpy(n.means_invvars + (size_t)m * D, g->means_invvars + (size_t)i * D, sizeof(float) * (size_t)D);
    memcpy(n.inv_vars + (size_t)m * D, g->inv_vars + (size_t)i * D, sizeof(float) * (size_t)D);
    m++;
  }
  gh_gmm_kaldi_gconsts(&n, what);
  gh_gmm_free(g);
  *g = n;
  free(logdet), free(tm), free(tv), free(delta), free(gone), free(means), free(vars);
}

int64_t gh_gmm_set_merge_by_count_kaldi(gh_gmm_set *s, const float *occs, int32_t target, float power,
                                        float min_count) {
  int32_t P = s->num_pdfs;
  check_diag(s, "merged");
  int32_t *targets = gh_malloc(sizeof(int32_t) * (size_t)(P > 0 ? P : 1));
  split_targets(occs, P, target, power, min_count, targets);
  int64_t total = 0;
  char what[64];
  for (int32_t p = 0; p < P; ++p) {
    if (targets[p] == 0) targets[p] = 1;
    snprintf(what, sizeof what, "pdf %d", p);
    if (s->pdfs[p].num_gauss > targets[p]) merge_diag_kaldi(&s->pdfs[p], targets[p], what);
    total += s->pdfs[p].num_gauss;
  }
  free(targets);
  return total;
}
