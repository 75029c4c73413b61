/* build-tree.c -- Kaldi's decision-tree building and phone clustering
 * (see build-tree.h; Kaldi tree/build-tree.cc, tree/build-tree-utils.cc). */
#include "tree/build-tree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "tree/cluster.h"

/* A list of statistics (Kaldi BuildTreeStatsType: pointers shared, not
 * owned). */
typedef struct {
  int32_t n, cap;
  const gh_tree_stat **s;
} slist;

static void sl_push(slist *l, const gh_tree_stat *t) {
  if (l->n == l->cap) l->s = gh_realloc(l->s, (size_t)(l->cap = l->cap ? 2 * l->cap : 16) * sizeof(*l->s));
  l->s[l->n++] = t;
}

static void sl_free_vec(slist *v, int32_t n) {
  for (int32_t i = 0; i < n; ++i) free(v[i].s);
  free(v);
}

static int ev_lookup(const gh_tree_stat *t, int32_t key, int32_t *val) {
  for (int32_t i = 0; i < t->len; ++i)
    if (t->ev[i].key == key) {
      *val = t->ev[i].value;
      return 1;
    }
  return 0;
}

static const char *ev_str(const gh_tree_stat *t) {
  static char buf[256];
  size_t o = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < t->len && o < sizeof buf - 24; ++i)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d:%d", i ? " " : "", t->ev[i].key, t->ev[i].value);
  return buf;
}

static int32_t map_stat(const gh_event_map *m, const gh_tree_stat *t) {
  int32_t ans;
  if (!gh_event_map_map(m, t->ev, t->len, &ans) || ans < 0)
    gh_die("SplitStatsByMap: could not map event vector %s; check that --context-width and --central-position "
           "match the statistics, and that phones that are context-independent during statistics accumulation do "
           "not share roots with other phones",
           ev_str(t));
  return ans;
}

/* Kaldi SplitStatsByMap: out[answer] lists, *nout = 1 + the largest answer. */
static slist *split_by_map(const slist *in, const gh_event_map *m, int32_t *nout) {
  int32_t size = 0;
  int32_t *ans = gh_malloc((size_t)(in->n > 0 ? in->n : 1) * sizeof(int32_t));
  for (int32_t i = 0; i < in->n; ++i) {
    ans[i] = map_stat(m, in->s[i]);
    if (ans[i] + 1 > size) size = ans[i] + 1;
  }
  slist *out = gh_calloc((size_t)(size > 0 ? size : 1), sizeof(slist));
  for (int32_t i = 0; i < in->n; ++i) sl_push(&out[ans[i]], in->s[i]);
  free(ans);
  *nout = size;
  return out;
}

/* Kaldi SplitStatsByKey. */
static slist *split_by_key(const slist *in, int32_t key, int32_t *nout) {
  int32_t size = 0, v = 0;
  for (int32_t i = 0; i < in->n; ++i) {
    if (!ev_lookup(in->s[i], key, &v)) gh_die("SplitStats: key %d is not present in event vector %s", key, ev_str(in->s[i]));
    if (v < 0) gh_die("SplitStats: negative value %d of key %d in event vector %s", v, key, ev_str(in->s[i]));
    if (v + 1 > size) size = v + 1;
  }
  slist *out = gh_calloc((size_t)(size > 0 ? size : 1), sizeof(slist));
  for (int32_t i = 0; i < in->n; ++i) {
    ev_lookup(in->s[i], key, &v);
    sl_push(&out[v], in->s[i]);
  }
  *nout = size;
  return out;
}

/* Kaldi SumStats: NULL if no statistics. */
static gh_gclust *sum_stats(const slist *l) {
  gh_gclust *ans = NULL;
  for (int32_t i = 0; i < l->n; ++i) {
    const gh_gclust *c = l->s[i]->stats;
    if (!c) continue;
    if (!ans) ans = gh_gclust_copy(c);
    else gh_gclust_add(ans, c);
  }
  return ans;
}

static gh_gclust **sum_stats_vec(const slist *v, int32_t n) {
  gh_gclust **out = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(gh_gclust *));
  for (int32_t i = 0; i < n; ++i) out[i] = sum_stats(&v[i]);
  return out;
}

static void free_clust_vec(gh_gclust **v, int32_t n) {
  for (int32_t i = 0; i < n; ++i) gh_gclust_free(v[i]);
  free(v);
}

/* Kaldi SumNormalizer (float, in order). */
static float sum_normalizer(const slist *l) {
  float ans = 0.0f;
  for (int32_t i = 0; i < l->n; ++i)
    if (l->s[i]->stats) ans += (float)l->s[i]->stats->count;
  return ans;
}

static void all_stats(const gh_tree_stats *st, slist *l) {
  memset(l, 0, sizeof(*l));
  for (int32_t i = 0; i < st->num; ++i) sl_push(l, &st->items[i]);
}

/* Kaldi EventMap::Copy(new_leaves): constant answers a with a non-NULL
 * mapping[a] are replaced by copies of it. */
static gh_event_map *copy_mapped(const gh_event_map *m, gh_event_map *const *mapping, int32_t nmap) {
  if (!m) return NULL;
  switch (m->kind) {
    case GH_EM_CONST:
      if (m->answer >= 0 && m->answer < nmap && mapping[m->answer]) return gh_event_map_copy(mapping[m->answer]);
      return gh_event_map_const(m->answer);
    case GH_EM_TABLE: {
      gh_event_map *t = gh_event_map_table(m->key, m->table_size, NULL);
      for (int32_t i = 0; i < m->table_size; ++i) t->table[i] = copy_mapped(m->table[i], mapping, nmap);
      return t;
    }
    default:
      return gh_event_map_split(m->key, m->num_yes, m->yes_set, copy_mapped(m->yes, mapping, nmap),
                                copy_mapped(m->no, mapping, nmap));
  }
}

/* The same with an integer mapping (-1: unchanged). */
static gh_event_map *copy_mapped_int(const gh_event_map *m, const int32_t *mapping, int32_t nmap) {
  gh_event_map **mp = gh_calloc((size_t)(nmap > 0 ? nmap : 1), sizeof(gh_event_map *));
  for (int32_t i = 0; i < nmap; ++i)
    if (mapping[i] >= 0) mp[i] = gh_event_map_const(mapping[i]);
  gh_event_map *ans = copy_mapped(m, mp, nmap);
  for (int32_t i = 0; i < nmap; ++i) gh_event_map_free(mp[i]);
  free(mp);
  return ans;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* Kaldi RenumberEventMap: leaves renumbered 0.. in increasing order. */
static gh_event_map *renumber_map(const gh_event_map *m, int32_t *num_leaves) {
  int32_t *ans = NULL, n = 0, cap = 0;
  gh_event_map_multimap(m, NULL, 0, &ans, &n, &cap);
  if (n == 0) {
    *num_leaves = 0;
    free(ans);
    return gh_event_map_copy(m);
  }
  qsort(ans, (size_t)n, sizeof(int32_t), cmp_i32);
  int32_t u = 0;
  for (int32_t i = 0; i < n; ++i)
    if (i == 0 || ans[i] != ans[i - 1]) ans[u++] = ans[i];
  int32_t maxp1 = ans[u - 1] + 1;
  int32_t *mapping = gh_malloc((size_t)maxp1 * sizeof(int32_t));
  for (int32_t i = 0; i < maxp1; ++i) mapping[i] = -1;
  for (int32_t i = 0; i < u; ++i) mapping[ans[i]] = i;
  gh_event_map *r = copy_mapped_int(m, mapping, maxp1);
  free(mapping);
  free(ans);
  *num_leaves = u;
  return r;
}

/* Kaldi's initial map (build-tree-utils.cc) over sets[lo, hi) (roots), key P. */
static gh_event_map *roots_map(int32_t P, const gh_roots *r, int32_t lo, int32_t hi, const int32_t *ncls,
                              int32_t *num_leaves) {
  int32_t nsets = hi - lo, max_size = 0, max_phone = 0;
  for (int32_t i = lo; i < hi; ++i) {
    const gh_intlist *s = &r->sets.lists[i];
    if (s->len > max_size) max_size = s->len;
    if (s->v[s->len - 1] > max_phone) max_phone = s->v[s->len - 1];
  }
  if (nsets == 1) {
    if (r->shared[lo]) return gh_event_map_const((*num_leaves)++);
    const gh_intlist *s = &r->sets.lists[lo];
    int32_t max_len = 0;
    for (int32_t j = 0; j < s->len; ++j) {
      int32_t len = ncls[s->v[j]];
      if (j > 0 && len != max_len)
        gh_warn("Mismatching lengths within a phone set: %d vs. %d [unusual, but not necessarily fatal].", len,
                max_len);
      if (len > max_len) max_len = len;
    }
    gh_event_map *m = gh_event_map_table(GH_KEY_PDF_CLASS, max_len, NULL);
    for (int32_t p = 0; p < max_len; ++p) m->table[p] = gh_event_map_const((*num_leaves)++);
    return m;
  }
  if (max_size == 1 && nsets <= 2 * max_phone) {
    gh_event_map *m = gh_event_map_table(P, max_phone + 1, NULL);
    for (int32_t i = lo; i < hi; ++i) m->table[r->sets.lists[i].v[0]] = roots_map(P, r, i, i + 1, ncls, num_leaves);
    return m;
  }
  int32_t half = lo + nsets / 2;
  gh_event_map *a = roots_map(P, r, lo, half, ncls, num_leaves);
  gh_event_map *b = roots_map(P, r, half, hi, ncls, num_leaves);
  int32_t n = 0;
  for (int32_t i = lo; i < half; ++i) n += r->sets.lists[i].len;
  int32_t *yes = gh_malloc((size_t)n * sizeof(int32_t));
  n = 0;
  for (int32_t i = lo; i < half; ++i)
    for (int32_t j = 0; j < r->sets.lists[i].len; ++j) yes[n++] = r->sets.lists[i].v[j];
  qsort(yes, (size_t)n, sizeof(int32_t), cmp_i32);
  gh_event_map *m = gh_event_map_split(P, n, yes, a, b);
  free(yes);
  return m;
}

/* ---- finding splits ---- */

/* Kaldi ComputeInitialSplit: the best question of this key; returns its gain
 * (>= 0) and its index in *best_q (-1 if none helps). */
static float initial_split(gh_gclust *const *summed, int32_t nvals, const gh_key_questions *kq, int32_t *best_q) {
  *best_q = -1;
  gh_gclust *total = gh_sum_clusterable(summed, nvals);
  if (!total) return 0.0f;
  float unsplit = gh_gclust_objf(total);
  float best = 0.0f;
  int32_t *asg = gh_malloc((size_t)nvals * sizeof(int32_t));
  for (int32_t i = 0; i < kq->q.n; ++i) {
    const gh_intlist *yes = &kq->q.lists[i];
    memset(asg, 0, (size_t)nvals * sizeof(int32_t));
    for (int32_t k = 0; k < yes->len; ++k)
      if (yes->v[k] >= 0 && yes->v[k] < nvals) asg[yes->v[k]] = 1;
    gh_gclust *cl[2] = {NULL, NULL};
    gh_add_to_clusters_optimized(summed, nvals, asg, total, cl);
    float this_objf = gh_sum_objf(cl, 2);
    if (this_objf < unsplit - 0.001f * fabsf(unsplit))
      gh_warn("Objective function got worse when building tree: %g < %g", (double)this_objf, (double)unsplit);
    float change = this_objf - unsplit;
    if (change > best) {
      best = change;
      *best_q = i;
    }
    gh_gclust_free(cl[0]);
    gh_gclust_free(cl[1]);
  }
  free(asg);
  gh_gclust_free(total);
  return best;
}

/* Kaldi FindBestSplitForKey: returns the gain; *yes (malloc'd) / *nyes the
 * yes-set (empty when the key cannot split these statistics). */
static float best_split_for_key(const slist *st, const gh_key_questions *kq, int32_t **yes, int32_t *nyes) {
  *yes = NULL;
  *nyes = 0;
  if (st->n <= 1) return 0.0f;
  int32_t v;
  for (int32_t i = 0; i < st->n; ++i)
    if (!ev_lookup(st->s[i], kq->key, &v)) return 0.0f;
  int32_t nvals;
  slist *sp = split_by_key(st, kq->key, &nvals);
  gh_gclust **summed = sum_stats_vec(sp, nvals);
  sl_free_vec(sp, nvals);
  int32_t bq;
  float impr = initial_split(summed, nvals, kq, &bq);
  if (bq >= 0) {
    *nyes = kq->q.lists[bq].len;
    *yes = gh_malloc((size_t)(*nyes > 0 ? *nyes : 1) * sizeof(int32_t));
    memcpy(*yes, kq->q.lists[bq].v, (size_t)*nyes * sizeof(int32_t));
  }
  if (kq->refine_iters > 0 && nvals > 0) { /* Kaldi: refine the question like 2-class k-means */
    int32_t *asg = gh_calloc((size_t)nvals, sizeof(int32_t));
    for (int32_t k = 0; k < *nyes; ++k)
      if ((*yes)[k] >= 0 && (*yes)[k] < nvals) asg[(*yes)[k]] = 1;
    gh_gclust *cl[2] = {NULL, NULL};
    gh_add_to_clusters(summed, nvals, asg, cl);
    int32_t dim = -1;
    for (int32_t i = 0; i < nvals && dim < 0; ++i)
      if (summed[i]) dim = summed[i]->dim;
    double floor = 0;
    for (int32_t i = 0; i < nvals; ++i)
      if (summed[i]) floor = summed[i]->var_floor;
    for (int32_t i = 0; i < nvals; ++i)
      if (!summed[i]) summed[i] = gh_gclust_new(dim, floor);
    for (int k = 0; k < 2; ++k)
      if (!cl[k]) cl[k] = gh_gclust_new(dim, floor);
    impr += gh_refine_clusters(summed, nvals, cl, 2, asg, kq->refine_iters, kq->refine_top_n);
    free(*yes);
    *yes = gh_malloc((size_t)nvals * sizeof(int32_t));
    *nyes = 0;
    for (int32_t i = 0; i < nvals; ++i)
      if (asg[i] == 1) (*yes)[(*nyes)++] = i;
    gh_gclust_free(cl[0]);
    gh_gclust_free(cl[1]);
    free(asg);
  }
  free_clust_vec(summed, nvals);
  return impr;
}

/* Kaldi DecisionTreeSplitter. */
typedef struct splitter {
  const gh_questions *q;
  float best;
  struct splitter *yes, *no;
  int32_t leaf;
  slist stats;
  int32_t key;
  int32_t *yes_set, nyes;
} splitter;

static void sp_find_best(splitter *s) {
  if (s->q->num_keys == 0)
    gh_warn("DecisionTreeSplitter::FindBestSplit(), no keys available to split on (maybe no key covered all of "
            "your events, or there was a problem with your questions configuration?)");
  s->best = 0.0f;
  for (int32_t k = 0; k < s->q->num_keys; ++k) {
    int32_t *yes, nyes;
    float impr = best_split_for_key(&s->stats, &s->q->keys[k], &yes, &nyes);
    if (impr > s->best) {
      s->best = impr;
      free(s->yes_set);
      s->yes_set = yes;
      s->nyes = nyes;
      s->key = s->q->keys[k].key;
    } else {
      free(yes);
    }
  }
}

static splitter *sp_new(int32_t leaf, slist stats, const gh_questions *q) {
  splitter *s = gh_calloc(1, sizeof(splitter));
  s->q = q;
  s->leaf = leaf;
  s->stats = stats;
  sp_find_best(s);
  return s;
}

static void sp_free(splitter *s) {
  if (!s) return;
  sp_free(s->yes);
  sp_free(s->no);
  free(s->stats.s);
  free(s->yes_set);
  free(s);
}

static int in_sorted(const int32_t *v, int32_t n, int32_t x) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t m = lo + (hi - lo) / 2;
    if (v[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo < n && v[lo] == x;
}

static void sp_split(splitter *s, int32_t *next_leaf) {
  if (!s->yes) {
    int32_t yes_leaf = s->leaf, no_leaf = (*next_leaf)++;
    s->leaf = -1;
    slist ys = {0}, ns = {0};
    for (int32_t i = 0; i < s->stats.n; ++i) {
      int32_t v;
      if (!ev_lookup(s->stats.s[i], s->key, &v)) gh_die("DoSplitInternal: key %d has no value", s->key);
      sl_push(in_sorted(s->yes_set, s->nyes, v) ? &ys : &ns, s->stats.s[i]);
    }
    s->yes = sp_new(yes_leaf, ys, s->q);
    s->no = sp_new(no_leaf, ns, s->q);
    free(s->stats.s);
    memset(&s->stats, 0, sizeof(s->stats));
  } else {
    sp_split(s->yes->best >= s->no->best ? s->yes : s->no, next_leaf);
  }
  s->best = s->yes->best > s->no->best ? s->yes->best : s->no->best;
}

static gh_event_map *sp_map(const splitter *s) {
  if (!s->yes) return gh_event_map_const(s->leaf);
  return gh_event_map_split(s->key, s->nyes, s->yes_set, sp_map(s->yes), sp_map(s->no));
}

/* Kaldi SplitDecisionTree. */
static gh_event_map *split_decision_tree(const gh_event_map *input, const slist *stats, const gh_questions *q,
                                         float thresh, int32_t max_leaves, int32_t *num_leaves, float *impr_out,
                                         float *smallest_out) {
  float like_impr = 0.0f, smallest = 1.0e+20f;
  int32_t nb;
  slist *sp = split_by_map(stats, input, &nb);
  if (nb == 0) gh_die("SplitDecisionTree: no statistics");
  splitter **b = gh_malloc((size_t)nb * sizeof(splitter *));
  for (int32_t i = 0; i < nb; ++i) b[i] = sp_new(i, sp[i], q);
  free(sp); /* the lists now belong to the splitters */
  int32_t count = 0;
  for (;;) {
    /* the top of Kaldi's priority_queue<pair<float, size_t>>: the largest
     * gain, then the largest index */
    int32_t top = 0;
    for (int32_t i = 1; i < nb; ++i)
      if (b[i]->best >= b[top]->best) top = i;
    float g = b[top]->best;
    if (!(g > thresh && (max_leaves <= 0 || *num_leaves < max_leaves))) break;
    if (g < smallest) smallest = g;
    like_impr += g;
    sp_split(b[top], num_leaves);
    count++;
  }
  gh_log("DoDecisionTreeSplit: split %d times, #leaves now %d", count, *num_leaves);
  gh_event_map **sub = gh_malloc((size_t)nb * sizeof(gh_event_map *));
  for (int32_t i = 0; i < nb; ++i) sub[i] = sp_map(b[i]);
  gh_event_map *ans = copy_mapped(input, sub, nb);
  for (int32_t i = 0; i < nb; ++i) {
    gh_event_map_free(sub[i]);
    sp_free(b[i]);
  }
  free(sub);
  free(b);
  *impr_out = like_impr;
  *smallest_out = smallest;
  return ans;
}

/* ---- clustering the leaves ---- */

typedef struct {
  int32_t n;
  int32_t *m; /* -1: unmapped */
} imap;

static void imap_set(imap *mp, int32_t index, int32_t to) {
  if (index >= mp->n) {
    mp->m = gh_realloc(mp->m, (size_t)(index + 1) * sizeof(int32_t));
    for (int32_t i = mp->n; i <= index; ++i) mp->m[i] = -1;
    mp->n = index + 1;
  }
  if (mp->m[index] != -1) gh_die("internal: clustering maps leaf %d twice", index);
  mp->m[index] = to;
}

/* Kaldi ClusterEventMapGetMapping: returns the number of leaves merged. */
static int32_t cluster_get_mapping(const gh_event_map *e, const slist *stats, float thresh, imap *mapping) {
  int32_t nb;
  slist *sp = split_by_map(stats, e, &nb);
  gh_gclust **summed = sum_stats_vec(sp, nb);
  sl_free_vec(sp, nb);
  int32_t *idx = gh_malloc((size_t)(nb > 0 ? nb : 1) * sizeof(int32_t)), nc = 0;
  gh_gclust **contig = gh_malloc((size_t)(nb > 0 ? nb : 1) * sizeof(gh_gclust *));
  for (int32_t i = 0; i < nb; ++i)
    if (summed[i]) {
      idx[nc] = i;
      contig[nc++] = summed[i];
    }
  int32_t combined = 0;
  if (nc == 0) {
    gh_warn("ClusterBottomUp: nothing to cluster.");
  } else {
    int32_t *asg = gh_malloc((size_t)nc * sizeof(int32_t));
    float change = gh_cluster_bottom_up(contig, nc, thresh, 0, asg);
    int32_t nclust = 0;
    for (int32_t i = 0; i < nc; ++i)
      if (asg[i] + 1 > nclust) nclust = asg[i] + 1;
    combined = nc - nclust;
    gh_vlog(2, "ClusterBottomUp combined %d leaves and gave a likelihood change of %g", combined, (double)change);
    for (int32_t i = 0; i < nc; ++i) imap_set(mapping, idx[i], idx[asg[i]]);
    free(asg);
  }
  free_clust_vec(summed, nb);
  free(contig);
  free(idx);
  return combined;
}

/* Kaldi ClusterEventMapRestrictedByMap. */
static gh_event_map *cluster_restricted(const gh_event_map *e, const slist *stats, float thresh,
                                        const gh_event_map *restrict_map, int32_t *num_removed) {
  imap mp = {0, NULL};
  int32_t nb;
  slist *sp = split_by_map(stats, restrict_map, &nb);
  *num_removed = 0;
  for (int32_t i = 0; i < nb; ++i)
    if (sp[i].n > 0) *num_removed += cluster_get_mapping(e, &sp[i], thresh, &mp);
  sl_free_vec(sp, nb);
  gh_event_map *ans = copy_mapped_int(e, mp.m, mp.n);
  free(mp.m);
  return ans;
}

/* Kaldi ClusterEventMapToNClustersRestrictedByMap. */
static gh_event_map *cluster_to_n_restricted(const gh_event_map *e, const slist *stats, int32_t num_required,
                                             const gh_event_map *restrict_map, int32_t *num_removed) {
  int32_t nb;
  slist *sp = split_by_map(stats, restrict_map, &nb);
  *num_removed = 0;
  if (num_required < nb) {
    gh_warn("num-clusters-required is less than size of map. Not doing anything.");
    sl_free_vec(sp, nb);
    return gh_event_map_copy(e);
  }
  int32_t **idx = gh_calloc((size_t)nb, sizeof(int32_t *));
  gh_gclust ***contig = gh_calloc((size_t)nb, sizeof(gh_gclust **));
  int32_t *ncontig = gh_calloc((size_t)nb, sizeof(int32_t));
  int32_t required_nonempty = num_required, in_map = 0, nonempty = 0, max_index = 0;
  for (int32_t i = 0; i < nb; ++i) {
    if (sp[i].n > 0) {
      in_map++;
      int32_t ni;
      slist *spi = split_by_map(&sp[i], e, &ni);
      gh_gclust **summed = sum_stats_vec(spi, ni);
      sl_free_vec(spi, ni);
      idx[i] = gh_malloc((size_t)(ni > 0 ? ni : 1) * sizeof(int32_t));
      contig[i] = gh_malloc((size_t)(ni > 0 ? ni : 1) * sizeof(gh_gclust *));
      for (int32_t j = 0; j < ni; ++j)
        if (summed[j]) {
          nonempty++;
          idx[i][ncontig[i]] = j;
          contig[i][ncontig[i]++] = summed[j];
          if (j > max_index) max_index = j;
        }
      free(summed);
    } else {
      required_nonempty--;
    }
  }
  gh_vlog(1, "Number of non-empty clusters in map = %d", in_map);
  gh_vlog(1, "Number of non-empty clusters = %d", nonempty);
  gh_event_map *ans;
  if (required_nonempty > nonempty) {
    gh_warn("Cannot get required num-clusters %d as number of non-empty clusters required is larger than  number of "
            "non-empty clusters: %d > %d",
            num_required, required_nonempty, nonempty);
    ans = gh_event_map_copy(e);
  } else {
    int32_t **asg = gh_malloc((size_t)nb * sizeof(int32_t *));
    for (int32_t i = 0; i < nb; ++i) asg[i] = gh_malloc((size_t)(ncontig[i] > 0 ? ncontig[i] : 1) * sizeof(int32_t));
    float change = gh_cluster_bottom_up_comp((gh_gclust *const *const *)contig, ncontig, nb, INFINITY,
                                             required_nonempty, asg);
    int32_t combined = 0;
    for (int32_t i = 0; i < nb; ++i) {
      if (ncontig[i] == 0) continue;
      int32_t nci = 0;
      for (int32_t j = 0; j < ncontig[i]; ++j)
        if (asg[i][j] + 1 > nci) nci = asg[i][j] + 1;
      combined += ncontig[i] - nci;
    }
    gh_vlog(2, "ClusterBottomUpCompartmentalized combined %d leaves and gave a likelihood change of %g", combined,
            (double)change);
    int32_t *mp = gh_malloc((size_t)(max_index + 1) * sizeof(int32_t));
    for (int32_t i = 0; i <= max_index; ++i) mp[i] = -1;
    for (int32_t i = 0; i < nb; ++i)
      for (int32_t j = 0; j < ncontig[i]; ++j) mp[idx[i][j]] = idx[i][asg[i][j]];
    *num_removed = combined;
    ans = copy_mapped_int(e, mp, max_index + 1);
    free(mp);
    for (int32_t i = 0; i < nb; ++i) free(asg[i]);
    free(asg);
  }
  for (int32_t i = 0; i < nb; ++i) {
    for (int32_t j = 0; j < ncontig[i]; ++j) gh_gclust_free(contig[i][j]);
    free(contig[i]);
    free(idx[i]);
  }
  free(contig);
  free(idx);
  free(ncontig);
  sl_free_vec(sp, nb);
  return ans;
}

static float objf_given_map_list(const slist *st, const gh_event_map *m) {
  int32_t nb;
  slist *sp = split_by_map(st, m, &nb);
  gh_gclust **summed = sum_stats_vec(sp, nb);
  float ans = gh_sum_objf(summed, nb);
  free_clust_vec(summed, nb);
  sl_free_vec(sp, nb);
  return ans;
}

gh_gclust **gh_tree_stats_sum_by_map(const gh_tree_stats *stats, const gh_event_map *map, int32_t *n) {
  slist l;
  all_stats(stats, &l);
  slist *sp = split_by_map(&l, map, n);
  gh_gclust **sums = sum_stats_vec(sp, *n);
  sl_free_vec(sp, *n);
  free(l.s);
  return sums;
}

void gh_tree_stats_sums_free(gh_gclust **sums, int32_t n) { free_clust_vec(sums, n); }

float gh_objf_given_map(const gh_tree_stats *stats, const gh_event_map *map) {
  slist l;
  all_stats(stats, &l);
  float ans = objf_given_map_list(&l, map);
  free(l.s);
  return ans;
}

gh_event_map *gh_build_tree(const gh_questions *q, const gh_roots *roots, const int32_t *phone2num_pdf_classes,
                            int32_t num_phone_slots, const gh_tree_stats *stats, const gh_build_tree_opts *o,
                            gh_build_tree_info *info, const char *what) {
  memset(info, 0, sizeof(*info));
  if (!(o->thresh > 0 || o->max_leaves > 0)) gh_die("%s: need --thresh > 0 or --max-leaves > 0", what);
  if (stats->num == 0) gh_die("%s: no tree statistics", what);
  /* inputs of the initial map: phones in the topology, in one root each */
  char *seen = gh_calloc((size_t)(num_phone_slots > 0 ? num_phone_slots : 1), 1);
  for (int32_t i = 0; i < roots->sets.n; ++i)
    for (int32_t j = 0; j < roots->sets.lists[i].len; ++j) {
      int32_t p = roots->sets.lists[i].v[j];
      if (p >= num_phone_slots || phone2num_pdf_classes[p] <= 0)
        gh_die("%s: phone %d of the roots file (line %d) is not in the topology", what, p, i + 1);
      if (seen[p]) gh_die("%s: phone %d is in more than one line of the roots file", what, p);
      seen[p] = 1;
    }
  free(seen);
  int32_t num_leaves = 0;
  gh_event_map *initial = roots_map(o->P, roots, 0, roots->sets.n, phone2num_pdf_classes, &num_leaves);
  info->root_leaves = num_leaves;
  gh_log("BuildTree: before building trees, map has %d leaves.", num_leaves);
  if (o->max_leaves > 0 && o->max_leaves < num_leaves)
    gh_die("%s: --max-leaves=%d is below the number of leaves of the roots (%d): the tree cannot have fewer leaves "
           "than the roots file asks for",
           what, o->max_leaves, num_leaves);

  /* stats of phones in "not-split" roots are not split */
  int32_t nns = 0;
  for (int32_t i = 0; i < roots->sets.n; ++i)
    if (!roots->split[i]) nns += roots->sets.lists[i].len;
  int32_t *nonsplit = gh_malloc((size_t)(nns > 0 ? nns : 1) * sizeof(int32_t));
  nns = 0;
  for (int32_t i = 0; i < roots->sets.n; ++i)
    if (!roots->split[i])
      for (int32_t j = 0; j < roots->sets.lists[i].len; ++j) nonsplit[nns++] = roots->sets.lists[i].v[j];
  qsort(nonsplit, (size_t)nns, sizeof(int32_t), cmp_i32);
  slist all, filt = {0};
  all_stats(stats, &all);
  for (int32_t i = 0; i < all.n; ++i) {
    int32_t v;
    if (!ev_lookup(all.s[i], o->P, &v))
      gh_die("%s: key %d (the central phone) is not present in event vector %s; check --central-position", what, o->P,
             ev_str(all.s[i]));
    if (!in_sorted(nonsplit, nns, v)) sl_push(&filt, all.s[i]);
  }
  free(nonsplit);

  float impr, smallest;
  gh_event_map *split = split_decision_tree(initial, &filt, q, o->thresh, o->max_leaves, &num_leaves, &impr, &smallest);
  info->split_leaves = num_leaves;
  float cluster_thresh = o->cluster_thresh;
  if (cluster_thresh < 0.0f) {
    gh_log("Setting clustering threshold to smallest split %g", (double)smallest);
    cluster_thresh = smallest;
  }
  float normalizer = sum_normalizer(&all), normalizer_filt = sum_normalizer(&filt);
  info->impr = impr;
  info->normalizer = normalizer;
  info->normalizer_split = normalizer_filt;
  gh_vlog(1, "After decision tree split, num-leaves = %d, like-impr = %g per frame over %g frames.", num_leaves,
          (double)(impr / normalizer), (double)normalizer);
  gh_vlog(1, "Including just phones that were split, improvement is %g per frame over %g frames.",
          (double)(impr / normalizer_filt), (double)normalizer_filt);

  gh_event_map *ans;
  if (cluster_thresh != 0.0f) {
    float before = objf_given_map_list(&all, split);
    int32_t num_removed = 0, num_out = 0;
    gh_event_map *clustered = cluster_restricted(split, &all, cluster_thresh, initial, &num_removed);
    gh_log("BuildTree: removed %d leaves.", num_removed);
    if (o->round_num_leaves) {
      int32_t required = ((num_leaves - num_removed) / 8) * 8, removed_round = 0;
      gh_event_map *rounded = cluster_to_n_restricted(clustered, &all, required, initial, &removed_round);
      if (removed_round > 0)
        gh_log("BuildTree: Rounded num leaves to multiple of 8 by removing %d leaves.", removed_round);
      if (num_leaves - num_removed - removed_round != required)
        gh_warn("Did not get expected number of leaves: %d - %d - %d != %d", num_leaves, num_removed, removed_round,
                required);
      ans = renumber_map(rounded, &num_out);
      if (num_out != required) gh_warn("num-leaves-out != num-leaves-required: %d != %d", num_out, required);
      gh_event_map_free(rounded);
    } else {
      ans = renumber_map(clustered, &num_out);
    }
    float after = objf_given_map_list(&all, ans);
    info->objf_change_cluster = after - before;
    gh_vlog(1, "Objf change due to clustering %g per frame.", (double)((after - before) / normalizer));
    gh_vlog(1, "Normalizing over only split phones, this is: %g per frame.",
            (double)((after - before) / normalizer_filt));
    gh_vlog(1, "Num-leaves is now %d", num_out);
    info->num_leaves = num_out;
    gh_event_map_free(clustered);
    gh_event_map_free(split);
  } else if (o->round_num_leaves) {
    float before = objf_given_map_list(&all, split);
    int32_t required = (num_leaves / 8) * 8, removed_round = 0, num_out = 0;
    gh_event_map *rounded = cluster_to_n_restricted(split, &all, required, initial, &removed_round);
    if (removed_round > 0)
      gh_log("BuildTree: Rounded num leaves to multiple of 8 by removing %d leaves.", removed_round);
    ans = renumber_map(rounded, &num_out);
    float after = objf_given_map_list(&all, ans);
    info->objf_change_cluster = after - before;
    gh_vlog(1, "Objf change due to clustering %g per frame.", (double)((after - before) / normalizer));
    gh_vlog(1, "Normalizing over only split phones, this is: %g per frame.",
            (double)((after - before) / normalizer_filt));
    gh_vlog(1, "Num-leaves is now %d", num_out);
    info->num_leaves = num_out;
    gh_event_map_free(rounded);
    gh_event_map_free(split);
  } else {
    ans = split;
    info->num_leaves = num_leaves;
  }
  if (gh_verbose >= 1) { /* Kaldi: warn about low counts */
    int32_t nb;
    slist *sp = split_by_map(&all, ans, &nb);
    for (int32_t i = 0; i < nb; ++i) {
      float c = sum_normalizer(&sp[i]);
      if (c < 100.0f) gh_vlog(1, "For pdf-id %d, low count %g", i, (double)c);
    }
    sl_free_vec(sp, nb);
  }
  gh_event_map_free(initial);
  free(all.s);
  free(filt.s);
  return ans;
}

/* ---- phone clustering (cluster-phones) ---- */

/* Sums the statistics of pdf-classes in cls[] per phone set; warns as Kaldi
 * does.  Returns [sets->n] sums (never NULL). */
static gh_gclust **sums_per_set(const gh_tree_stats *stats, const gh_intlists *sets, const int32_t *cls,
                                int32_t ncls, int32_t P, int32_t **phones_out, int32_t *nphones_out) {
  int32_t np = 0;
  for (int32_t i = 0; i < sets->n; ++i) {
    if (sets->lists[i].len == 0) gh_die("Empty phone set in the phone sets (line %d)", i + 1);
    np += sets->lists[i].len;
  }
  int32_t *phones = gh_malloc((size_t)np * sizeof(int32_t));
  np = 0;
  for (int32_t i = 0; i < sets->n; ++i)
    for (int32_t j = 0; j < sets->lists[i].len; ++j) phones[np++] = sets->lists[i].v[j];
  qsort(phones, (size_t)np, sizeof(int32_t), cmp_i32);
  for (int32_t i = 1; i < np; ++i)
    if (phones[i] == phones[i - 1]) gh_die("Phone %d is present in more than one phone set.", phones[i]);
  int32_t *c = gh_malloc((size_t)ncls * sizeof(int32_t));
  memcpy(c, cls, (size_t)ncls * sizeof(int32_t));
  qsort(c, (size_t)ncls, sizeof(int32_t), cmp_i32);
  slist all, kept = {0};
  all_stats(stats, &all);
  for (int32_t i = 0; i < all.n; ++i) {
    int32_t v;
    if (!ev_lookup(all.s[i], GH_KEY_PDF_CLASS, &v))
      gh_die("SplitStats: key -1 is not present in event vector %s", ev_str(all.s[i]));
    if (in_sorted(c, ncls, v)) sl_push(&kept, all.s[i]);
  }
  if ((int64_t)kept.n * 10 < all.n)
    gh_warn("After filtering the tree statistics to retain only stats where pdf-class is in the given set, most of "
            "your stats disappeared: the size changed from %d to %d.  You might be using a nonstandard topology but "
            "forgot to modify the --pdf-class-list option (it defaults to { 1 } which is the central state in a "
            "3-state left-to-right topology).",
            all.n, kept.n);
  int32_t nv;
  slist *sp = split_by_key(&kept, P, &nv);
  gh_gclust **summed = sum_stats_vec(sp, nv);
  sl_free_vec(sp, nv);
  int32_t max_phone = phones[np - 1];
  if (nv < max_phone + 1) {
    summed = gh_realloc(summed, (size_t)(max_phone + 1) * sizeof(gh_gclust *));
    for (int32_t i = nv; i <= max_phone; ++i) summed[i] = NULL;
    nv = max_phone + 1;
  }
  for (int32_t i = 0; i < nv; ++i)
    if (summed[i] && !in_sorted(phones, np, i))
      gh_warn("Phone %d is present in stats but is not in phone list [make sure you intended this].", i);
  int32_t dim = stats->dim > 0 ? stats->dim : 0;
  double floor = 0.0;
  for (int32_t i = 0; i < nv; ++i)
    if (summed[i]) {
      dim = summed[i]->dim;
      floor = summed[i]->var_floor;
      break;
    }
  for (int32_t i = 0; i < nv; ++i)
    if (!summed[i]) summed[i] = gh_gclust_new(dim, floor);
  gh_gclust **per_set = gh_malloc((size_t)sets->n * sizeof(gh_gclust *));
  for (int32_t i = 0; i < sets->n; ++i) {
    const gh_intlist *s = &sets->lists[i];
    int32_t *sorted = gh_malloc((size_t)s->len * sizeof(int32_t));
    memcpy(sorted, s->v, (size_t)s->len * sizeof(int32_t));
    qsort(sorted, (size_t)s->len, sizeof(int32_t), cmp_i32);
    per_set[i] = gh_gclust_copy(summed[sorted[0]]);
    for (int32_t j = 1; j < s->len; ++j) gh_gclust_add(per_set[i], summed[sorted[j]]);
    if (per_set[i]->count == 0.0) {
      char buf[1024];
      size_t o = 0;
      for (int32_t j = 0; j < s->len && o < sizeof buf - 16; ++j)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%d ", sorted[j]);
      gh_warn("AutomaticallyObtainQuestions: no stats available for phone set: %s", buf);
    }
    free(sorted);
  }
  free_clust_vec(summed, nv);
  free(c);
  free(all.s);
  free(kept.s);
  *phones_out = phones;
  *nphones_out = np;
  return per_set;
}

static int list_equal(const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
  return na == nb && (na == 0 || !memcmp(a, b, (size_t)na * sizeof(int32_t)));
}

void gh_obtain_questions(const gh_tree_stats *stats, const gh_intlists *phone_sets, const int32_t *pdf_classes,
                         int32_t num_pdf_classes, int32_t P, gh_intlists *questions_out) {
  memset(questions_out, 0, sizeof(*questions_out));
  int32_t *phones, np;
  gh_gclust **per_set = sums_per_set(stats, phone_sets, pdf_classes, num_pdf_classes, P, &phones, &np);
  int32_t nsets = phone_sets->n, num_no_data = 0;
  for (int32_t i = 0; i < nsets; ++i)
    if (per_set[i]->count == 0.0) num_no_data++;
  if (num_no_data + 1 >= nsets)
    gh_warn("All or all but one of your classes of phones had no data.  Note that we only consider data where "
            "pdf-class is in the given set; see --pdf-class-list.");
  gh_kmeans_opts ko;
  gh_kmeans_opts_default(&ko);
  ko.num_tries = 10; /* Kaldi: slow-but-accurate, there are few phones */
  int32_t *asg = gh_malloc((size_t)nsets * sizeof(int32_t)), *ca = NULL, nnodes = 0, nleaves = 0;
  gh_tree_cluster(per_set, nsets, nsets, &ko, asg, &ca, &nnodes, &nleaves);
  /* Kaldi ObtainSetsOfPhones */
  gh_intlists raw = {0, NULL};
  for (int32_t j = 0; j < nnodes; ++j) gh_intlists_push(&raw, NULL, 0);
  int32_t *cap = gh_calloc((size_t)nnodes, sizeof(int32_t));
#define RAW_APPEND(j, x)                                                                            \
  do {                                                                                              \
    gh_intlist *l_ = &raw.lists[j];                                                                 \
    if (l_->len == cap[j]) l_->v = gh_realloc(l_->v, (size_t)(cap[j] = cap[j] ? 2 * cap[j] : 8) * sizeof(int32_t)); \
    l_->v[l_->len++] = (x);                                                                         \
  } while (0)
  for (int32_t i = 0; i < nsets; ++i)
    for (int32_t k = 0; k < phone_sets->lists[i].len; ++k) RAW_APPEND(asg[i], phone_sets->lists[i].v[k]);
  for (int32_t j = 0; j < nnodes; ++j) {
    int32_t parent = ca[j];
    qsort(raw.lists[j].v, (size_t)raw.lists[j].len, sizeof(int32_t), cmp_i32);
    if (parent < nnodes - 1)
      for (int32_t k = 0; k < raw.lists[j].len; ++k) RAW_APPEND(parent, raw.lists[j].v[k]);
  }
#undef RAW_APPEND
  /* reversed (the root's set first), then the input sets; duplicates and
   * empty sets dropped, first occurrence kept */
  gh_intlists all = {0, NULL};
  for (int32_t j = nnodes - 1; j >= 0; --j) gh_intlists_push(&all, raw.lists[j].v, raw.lists[j].len);
  for (int32_t i = 0; i < nsets; ++i) {
    /* Kaldi sorts each input set first */
    int32_t *s = gh_malloc((size_t)phone_sets->lists[i].len * sizeof(int32_t));
    memcpy(s, phone_sets->lists[i].v, (size_t)phone_sets->lists[i].len * sizeof(int32_t));
    qsort(s, (size_t)phone_sets->lists[i].len, sizeof(int32_t), cmp_i32);
    gh_intlists_push(&all, s, phone_sets->lists[i].len);
    free(s);
  }
  for (int32_t i = 0; i < all.n; ++i) {
    int dup = 0;
    for (int32_t k = 0; k < i && !dup; ++k)
      dup = list_equal(all.lists[k].v, all.lists[k].len, all.lists[i].v, all.lists[i].len);
    if (!dup && all.lists[i].len > 0) gh_intlists_push(questions_out, all.lists[i].v, all.lists[i].len);
  }
  gh_intlists_free(&all);
  gh_intlists_free(&raw);
  free(cap);
  free(ca);
  free(asg);
  free_clust_vec(per_set, nsets);
  free(phones);
}

void gh_kmeans_cluster_phones(const gh_tree_stats *stats, const gh_intlists *phone_sets, const int32_t *pdf_classes,
                              int32_t num_pdf_classes, int32_t P, int32_t num_classes, gh_intlists *sets_out) {
  memset(sets_out, 0, sizeof(*sets_out));
  int32_t *phones, np, nsets = phone_sets->n;
  gh_gclust **per_set = sums_per_set(stats, phone_sets, pdf_classes, num_pdf_classes, P, &phones, &np);
  gh_kmeans_opts ko;
  gh_kmeans_opts_default(&ko);
  int32_t *asg = gh_malloc((size_t)nsets * sizeof(int32_t));
  float impr = gh_cluster_kmeans(per_set, nsets, num_classes, NULL, asg, &ko);
  float count = gh_sum_count(per_set, nsets);
  gh_log("ClusterKMeans: objf change from clustering [versus single set] is %g over %g frames.",
         (double)(impr / count), (double)count);
  for (int32_t c = 0; c < num_classes; ++c) {
    int32_t n = 0;
    for (int32_t i = 0; i < nsets; ++i)
      if (asg[i] == c) n += phone_sets->lists[i].len;
    int32_t *v = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    n = 0;
    for (int32_t i = 0; i < nsets; ++i)
      if (asg[i] == c)
        for (int32_t k = 0; k < phone_sets->lists[i].len; ++k) v[n++] = phone_sets->lists[i].v[k];
    qsort(v, (size_t)n, sizeof(int32_t), cmp_i32);
    gh_intlists_push(sets_out, v, n);
    free(v);
  }
  free(asg);
  free_clust_vec(per_set, nsets);
  free(phones);
}
