/* cluster.c -- Kaldi's clustering algorithms (see cluster.h; Kaldi
 * tree/cluster-utils.cc). */
#include "tree/cluster.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

float gh_sum_objf(gh_gclust *const *v, int32_t n) {
  float ans = 0.0f;
  for (int32_t i = 0; i < n; ++i)
    if (v[i]) {
      float o = gh_gclust_objf(v[i]);
      if (isnan(o)) gh_warn("SumClusterableObjf, NaN objf");
      else ans += o;
    }
  return ans;
}

float gh_sum_count(gh_gclust *const *v, int32_t n) {
  float ans = 0.0f;
  for (int32_t i = 0; i < n; ++i)
    if (v[i]) ans += (float)v[i]->count;
  return ans;
}

gh_gclust *gh_sum_clusterable(gh_gclust *const *v, int32_t n) {
  gh_gclust *ans = NULL;
  for (int32_t i = 0; i < n; ++i)
    if (v[i]) {
      if (!ans) ans = gh_gclust_copy(v[i]);
      else gh_gclust_add(ans, v[i]);
    }
  return ans;
}

void gh_add_to_clusters(gh_gclust *const *stats, int32_t n, const int32_t *assignments, gh_gclust **clusters) {
  for (int32_t i = 0; i < n; ++i)
    if (stats[i]) {
      gh_gclust **c = &clusters[assignments[i]];
      if (!*c) *c = gh_gclust_copy(stats[i]);
      else gh_gclust_add(*c, stats[i]);
    }
}

void gh_add_to_clusters_optimized(gh_gclust *const *stats, int32_t n, const int32_t *assignments,
                                  const gh_gclust *total, gh_gclust **clusters) {
  if (n == 0) return;
  int32_t num_clust = 0;
  for (int32_t i = 0; i < n; ++i)
    if (assignments[i] + 1 > num_clust) num_clust = assignments[i] + 1;
  int32_t stack[64], *cnt = num_clust <= 64 ? stack : gh_malloc((size_t)num_clust * sizeof(int32_t));
  memset(cnt, 0, (size_t)num_clust * sizeof(int32_t));
  int32_t tot = 0;
  for (int32_t i = 0; i < n; ++i)
    if (stats[i]) {
      tot++;
      cnt[assignments[i]]++;
    }
  if (tot > 0) {
    int32_t sub = -1;
    for (int32_t c = 0; c < num_clust; ++c)
      if (cnt[c] > tot - cnt[c]) {
        sub = c;
        if (!clusters[c]) clusters[c] = gh_gclust_copy(total);
        else gh_gclust_add(clusters[c], total);
        break;
      }
    for (int32_t i = 0; i < n; ++i)
      if (stats[i]) {
        int32_t a = assignments[i];
        if (a != sub) {
          if (!clusters[a]) clusters[a] = gh_gclust_copy(stats[i]);
          else gh_gclust_add(clusters[a], stats[i]);
        }
        if (sub != -1 && a != sub) gh_gclust_sub(clusters[sub], stats[i]);
      }
  }
  if (cnt != stack) free(cnt);
}

/* ---- libstdc++'s binary heap (std::priority_queue): the same algorithm, so
 * elements that compare equal pop in the same order as in Kaldi. ---- */
#define DEFINE_HEAP(NAME, T, COMP)                                                           \
  typedef struct { T *a; size_t n, cap; } NAME;                                              \
  static void NAME##_up(T *a, size_t hole, size_t top, T v) {                                \
    size_t parent = (hole - 1) / 2;                                                          \
    while (hole > top && COMP(&a[parent], &v)) {                                             \
      a[hole] = a[parent];                                                                   \
      hole = parent;                                                                         \
      parent = (hole - 1) / 2;                                                               \
    }                                                                                        \
    a[hole] = v;                                                                             \
  }                                                                                          \
  static void NAME##_push(NAME *h, T v) {                                                    \
    if (h->n == h->cap) h->a = gh_realloc(h->a, (h->cap = h->cap ? 2 * h->cap : 256) * sizeof(T)); \
    h->a[h->n++] = v;                                                                        \
    NAME##_up(h->a, h->n - 1, 0, v);                                                         \
  }                                                                                          \
  static void NAME##_pop(NAME *h) {                                                          \
    if (h->n > 1) {                                                                          \
      T *a = h->a;                                                                           \
      size_t len = h->n - 1, hole = 0, child = 0;                                            \
      T v = a[len];                                                                          \
      a[len] = a[0];                                                                         \
      while (len > 0 && child < (len - 1) / 2) {                                             \
        child = 2 * (child + 1);                                                             \
        if (COMP(&a[child], &a[child - 1])) child--;                                         \
        a[hole] = a[child];                                                                  \
        hole = child;                                                                        \
      }                                                                                      \
      if ((len & 1) == 0 && len >= 2 && child == (len - 2) / 2) {                            \
        child = 2 * (child + 1);                                                             \
        a[hole] = a[child - 1];                                                              \
        hole = child - 1;                                                                    \
      }                                                                                      \
      NAME##_up(a, hole, 0, v);                                                              \
    }                                                                                        \
    h->n--;                                                                                  \
  }

/* Kaldi's BottomUpClusterer queue: pair<float, pair<uint16, uint16>> with
 * std::greater (the smallest distance, then i, then j, first). */
typedef struct { float dist; uint16_t i, j; } bu_elem;
static int bu_greater(const bu_elem *a, const bu_elem *b) {
  if (a->dist != b->dist) return a->dist > b->dist;
  if (a->i != b->i) return a->i > b->i;
  return a->j > b->j;
}
DEFINE_HEAP(bu_heap, bu_elem, bu_greater)

/* Kaldi's CompBotClustElem queue: std::greater on the distance only. */
typedef struct { float dist; int32_t comp, p1, p2; } cb_elem;
static int cb_greater(const cb_elem *a, const cb_elem *b) { return a->dist > b->dist; }
DEFINE_HEAP(cb_heap, cb_elem, cb_greater)

/* Renumbers one set of clusters (Kaldi Renumber): surviving clusters in index
 * order; assignment chains followed. */
static void renumber(gh_gclust **clusters, int32_t *assign, int32_t n, int32_t *out) {
  int32_t *map = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t)), c = 0;
  for (int32_t i = 0; i < n; ++i) map[i] = clusters[i] ? c++ : -1;
  for (int32_t i = 0; i < n; ++i) {
    int32_t ii = i;
    while (assign[ii] != ii) ii = assign[ii];
    out[i] = map[ii];
  }
  free(map);
}

float gh_cluster_bottom_up(gh_gclust *const *points, int32_t n, float thresh, int32_t min_clust,
                           int32_t *assignments) {
  if (n >= 65535) gh_die("bottom-up clustering: %d points (at most 65534)", n);
  gh_gclust **cl = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(gh_gclust *));
  int32_t *asg = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
  float *dist = gh_malloc((size_t)(n > 1 ? (int64_t)n * (n - 1) / 2 : 1) * sizeof(float));
  for (int32_t i = 0; i < n; ++i) {
    cl[i] = gh_gclust_copy(points[i]);
    asg[i] = i;
  }
  bu_heap q = {0};
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = 0; j < i; ++j) {
      float d = gh_gclust_distance(cl[i], cl[j]);
      dist[(int64_t)i * (i - 1) / 2 + j] = d;
      if (d <= thresh) bu_heap_push(&q, (bu_elem){d, (uint16_t)i, (uint16_t)j});
    }
  float ans = 0.0f;
  int32_t ncl = n;
  while (ncl > min_clust && q.n > 0) {
    bu_elem e = q.a[0];
    bu_heap_pop(&q);
    int32_t i = e.i, j = e.j;
    if (!cl[i] || !cl[j]) continue;
    float cached = dist[(int64_t)i * (i - 1) / 2 + j];
    if (!(fabsf(cached - e.dist) <= 1.0e-05f * fabsf(e.dist))) continue;
    /* merge j into i */
    gh_gclust_add(cl[i], cl[j]);
    gh_gclust_free(cl[j]);
    cl[j] = NULL;
    asg[j] = i;
    ans -= dist[(int64_t)i * (i - 1) / 2 + j];
    ncl--;
    for (int32_t k = 0; k < n; ++k) {
      if (k == i || !cl[k]) continue;
      int32_t a = k < i ? i : k, b = k < i ? k : i;
      float d = gh_gclust_distance(cl[a], cl[b]);
      dist[(int64_t)a * (a - 1) / 2 + b] = d;
      if (d < thresh) bu_heap_push(&q, (bu_elem){d, (uint16_t)a, (uint16_t)b});
      if (q.n >= (size_t)n * (size_t)n) { /* Kaldi ReconstructQueue */
        q.n = 0;
        for (int32_t x = 0; x < n; ++x) {
          if (!cl[x]) continue;
          for (int32_t y = 0; y < x; ++y) {
            if (!cl[y]) continue;
            float dd = dist[(int64_t)x * (x - 1) / 2 + y];
            if (dd <= thresh) bu_heap_push(&q, (bu_elem){dd, (uint16_t)x, (uint16_t)y});
          }
        }
      }
    }
  }
  renumber(cl, asg, n, assignments);
  for (int32_t i = 0; i < n; ++i) gh_gclust_free(cl[i]);
  free(cl);
  free(asg);
  free(dist);
  free(q.a);
  return ans;
}

float gh_cluster_bottom_up_comp(gh_gclust *const *const *points, const int32_t *npoints, int32_t ncomp, float thresh,
                                int32_t min_clust, int32_t **assignments) {
  gh_gclust ***cl = gh_malloc((size_t)(ncomp > 0 ? ncomp : 1) * sizeof(gh_gclust **));
  int32_t **asg = gh_malloc((size_t)(ncomp > 0 ? ncomp : 1) * sizeof(int32_t *));
  float **dist = gh_malloc((size_t)(ncomp > 0 ? ncomp : 1) * sizeof(float *));
  int32_t ncl = 0;
  for (int32_t c = 0; c < ncomp; ++c) {
    int32_t n = npoints[c];
    if (n >= 65535) gh_die("bottom-up clustering: %d points in one compartment (at most 65534)", n);
    ncl += n;
    cl[c] = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(gh_gclust *));
    asg[c] = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    for (int32_t i = 0; i < n; ++i) {
      cl[c][i] = gh_gclust_copy(points[c][i]);
      asg[c][i] = i;
    }
  }
  cb_heap q = {0};
#define SET_DIST(c, i, j)                                                         \
  do {                                                                            \
    float d_ = gh_gclust_distance(cl[c][i], cl[c][j]);                            \
    dist[c][(int64_t)(i) * ((i) - 1) / 2 + (j)] = d_;                             \
    if (d_ < thresh) cb_heap_push(&q, (cb_elem){d_, (c), (i), (j)});               \
  } while (0)
  for (int32_t c = 0; c < ncomp; ++c) {
    int32_t n = npoints[c];
    dist[c] = gh_malloc((size_t)(n > 1 ? (int64_t)n * (n - 1) / 2 : 1) * sizeof(float));
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < i; ++j) SET_DIST(c, i, j);
  }
  float total = 0.0f;
  while (ncl > min_clust && q.n > 0) {
    cb_elem e = q.a[0];
    cb_heap_pop(&q);
    int32_t c = e.comp, i = e.p1, j = e.p2;
    if (!cl[c][i] || !cl[c][j]) continue;
    float cached = dist[c][(int64_t)i * (i - 1) / 2 + j];
    if (!(fabsf(cached - e.dist) <= 1.0e-05f * fabsf(e.dist))) continue;
    gh_gclust_add(cl[c][i], cl[c][j]);
    gh_gclust_free(cl[c][j]);
    cl[c][j] = NULL;
    asg[c][j] = i;
    float change = -dist[c][(int64_t)i * (i - 1) / 2 + j];
    ncl--;
    for (int32_t k = 0; k < npoints[c]; ++k) {
      if (k == i || !cl[c][k]) continue;
      if (k < i) SET_DIST(c, i, k);
      else SET_DIST(c, k, i);
    }
    if (q.n >= (size_t)ncl * (size_t)ncl) { /* Kaldi ReconstructQueue */
      q.n = 0;
      for (int32_t cc = 0; cc < ncomp; ++cc)
        for (int32_t x = 0; x < npoints[cc]; ++x) {
          if (!cl[cc][x]) continue;
          for (int32_t y = 0; y < x; ++y)
            if (cl[cc][y]) SET_DIST(cc, x, y);
        }
    }
    total += change;
  }
#undef SET_DIST
  for (int32_t c = 0; c < ncomp; ++c) {
    renumber(cl[c], asg[c], npoints[c], assignments[c]);
    for (int32_t i = 0; i < npoints[c]; ++i) gh_gclust_free(cl[c][i]);
    free(cl[c]);
    free(asg[c]);
    free(dist[c]);
  }
  free(cl);
  free(asg);
  free(dist);
  free(q.a);
  return total;
}

/* ---- RefineClusters (Kaldi RefineClusterer) ---- */
typedef struct { int32_t clust, time; float objf; } point_info;
typedef struct { float d; int32_t c; } dist_clust;

/* std::pair<float, int32>'s operator< */
static int dc_less(const dist_clust *a, const dist_clust *b) {
  return a->d < b->d || (!(b->d < a->d) && a->c < b->c);
}
static void dc_swap(dist_clust *a, dist_clust *b) {
  dist_clust t = *a;
  *a = *b;
  *b = t;
}

/* libstdc++'s std::nth_element (introselect: median-of-3 pivots, heap
 * select past the depth limit, insertion sort below 4 elements), so that
 * the candidates RefineClusters keeps, and their order, are Kaldi's. */
static void dc_adjust_heap(dist_clust *a, ptrdiff_t hole, ptrdiff_t len, dist_clust v) {
  ptrdiff_t top = hole, child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (dc_less(&a[child], &a[child - 1])) child--;
    a[hole] = a[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    a[hole] = a[child - 1];
    hole = child - 1;
  }
  ptrdiff_t parent = (hole - 1) / 2;
  while (hole > top && dc_less(&a[parent], &v)) {
    a[hole] = a[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  a[hole] = v;
}

static void dc_heap_select(dist_clust *first, dist_clust *middle, dist_clust *last) {
  ptrdiff_t len = middle - first;
  if (len >= 2)
    for (ptrdiff_t parent = (len - 2) / 2;; parent--) {
      dc_adjust_heap(first, parent, len, first[parent]);
      if (parent == 0) break;
    }
  for (dist_clust *i = middle; i < last; ++i)
    if (dc_less(i, first)) {
      dist_clust v = *i;
      *i = *first;
      dc_adjust_heap(first, 0, len, v);
    }
}

static void dc_insertion_sort(dist_clust *first, dist_clust *last) {
  if (first == last) return;
  for (dist_clust *i = first + 1; i != last; ++i) {
    dist_clust v = *i;
    if (dc_less(&v, first)) {
      memmove(first + 1, first, (size_t)(i - first) * sizeof(dist_clust));
      *first = v;
    } else {
      dist_clust *l = i, *next = i - 1;
      while (dc_less(&v, next)) {
        *l = *next;
        l = next;
        --next;
      }
      *l = v;
    }
  }
}

static void dc_nth_element(dist_clust *first, dist_clust *nth, dist_clust *last) {
  if (first == last || nth == last) return;
  int depth = 0;
  for (ptrdiff_t n = last - first; n > 1; n >>= 1) depth++;
  depth *= 2; /* 2 * floor(log2(n)) */
  while (last - first > 3) {
    if (depth == 0) {
      dc_heap_select(first, nth + 1, last);
      dc_swap(first, nth);
      return;
    }
    --depth;
    /* __unguarded_partition_pivot: median of (first+1, mid, last-1) to first */
    dist_clust *a = first + 1, *b = first + (last - first) / 2, *c = last - 1;
    if (dc_less(a, b)) {
      if (dc_less(b, c)) dc_swap(first, b);
      else if (dc_less(a, c)) dc_swap(first, c);
      else dc_swap(first, a);
    } else if (dc_less(a, c)) {
      dc_swap(first, a);
    } else if (dc_less(b, c)) {
      dc_swap(first, c);
    } else {
      dc_swap(first, b);
    }
    dist_clust *lo = first + 1, *hi = last;
    for (;;) {
      while (dc_less(lo, first)) ++lo;
      --hi;
      while (dc_less(first, hi)) --hi;
      if (!(lo < hi)) break;
      dc_swap(lo, hi);
      ++lo;
    }
    if (lo <= nth) first = lo;
    else last = lo;
  }
  dc_insertion_sort(first, last);
}

float gh_refine_clusters(gh_gclust *const *points, int32_t n, gh_gclust **clusters, int32_t nclust,
                         int32_t *assignments, int32_t num_iters, int32_t top_n) {
  if (num_iters <= 0) return 0.0f;
  if (top_n > nclust) top_n = nclust;
  if (top_n <= 1) return 0.0f;
  point_info *info = gh_malloc((size_t)n * (size_t)top_n * sizeof(point_info));
  int32_t *my_index = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
  int32_t *clust_time = gh_calloc((size_t)nclust, sizeof(int32_t));
  float *clust_objf = gh_malloc((size_t)nclust * sizeof(float));
  for (int32_t c = 0; c < nclust; ++c) clust_objf[c] = gh_gclust_objf(clusters[c]);
  dist_clust *dv = gh_malloc((size_t)nclust * sizeof(dist_clust));
  int32_t t = 0;
  float ans = 0.0f;
  for (int32_t p = 0; p < n; ++p) { /* InitPoint */
    int32_t mine = assignments[p], nd = 0;
    for (int32_t c = 0; c < nclust; ++c) {
      if (c == mine) continue;
      float other = clust_objf[c], plus = gh_gclust_objf_plus(clusters[c], points[p]);
      dv[nd].d = other - plus;
      dv[nd].c = c;
      nd++;
    }
    if (top_n - 2 >= 0) dc_nth_element(dv, dv + (top_n - 2), dv + nd);
    for (int32_t k = 0; k < top_n - 1; ++k) {
      point_info *pi = &info[(int64_t)p * top_n + k];
      int32_t c = dv[k].c;
      pi->clust = c;
      pi->objf = -(dv[k].d - clust_objf[c]);
      pi->time = 0;
    }
    point_info *own = &info[(int64_t)p * top_n + top_n - 1];
    own->clust = mine;
    own->time = 0;
    own->objf = gh_gclust_objf_minus(clusters[mine], points[p]);
    my_index[p] = top_n - 1;
  }
  for (int32_t iter = 0; iter < num_iters; ++iter) {
    int32_t cur_t = t;
    for (int32_t p = 0; p < n; ++p) {
      if (t + 1 == 0) {
        gh_warn("RefineClusters: stopping iterating at int32 moves");
        goto done;
      }
      /* ProcessPoint */
      int32_t self = my_index[p];
      /* UpdateInfo of the own cluster first, then of the others in order */
      point_info *si = &info[(int64_t)p * top_n + self];
      if (si->time < clust_time[si->clust]) {
        gh_gclust *tmp = gh_gclust_copy(clusters[si->clust]);
        gh_gclust_sub(tmp, points[p]);
        si->time = t;
        si->objf = gh_gclust_objf(tmp);
        gh_gclust_free(tmp);
      }
      int32_t self_clust = si->clust;
      float own_objf = clust_objf[self_clust], own_minus = si->objf;
      for (int32_t k = 0; k < top_n; ++k) {
        if (k == self) continue;
        point_info *oi = &info[(int64_t)p * top_n + k];
        if (oi->time < clust_time[oi->clust]) {
          gh_gclust *tmp = gh_gclust_copy(clusters[oi->clust]);
          gh_gclust_add(tmp, points[p]);
          oi->time = t;
          oi->objf = gh_gclust_objf(tmp);
          gh_gclust_free(tmp);
        }
        float other_objf = clust_objf[oi->clust], other_plus = oi->objf;
        float impr = other_plus + own_minus - other_objf - own_objf;
        if (impr > 0) { /* MovePoint */
          ans += impr;
          t++;
          my_index[p] = k;
          int32_t oc = self_clust, nc = oi->clust;
          assignments[p] = nc;
          gh_gclust_sub(clusters[oc], points[p]);
          gh_gclust_add(clusters[nc], points[p]);
          clust_objf[oc] = gh_gclust_objf(clusters[oc]);
          clust_time[oc] = t;
          clust_objf[nc] = gh_gclust_objf(clusters[nc]);
          clust_time[nc] = t;
          break;
        }
      }
    }
    if (t == cur_t) break;
  }
done:
  free(info);
  free(my_index);
  free(clust_time);
  free(clust_objf);
  free(dv);
  return ans;
}

void gh_kmeans_opts_default(gh_kmeans_opts *o) {
  o->refine_iters = 100;
  o->refine_top_n = 5;
  o->num_iters = 20;
  o->num_tries = 2;
}

static int32_t gcd32(int32_t m, int32_t n) {
  while (n) {
    int32_t r = m % n;
    m = n;
    n = r;
  }
  return m < 0 ? -m : m;
}

/* Kaldi ClusterKMeansOnce; clusters[num_clust] receive new sums. */
static float kmeans_once(gh_gclust *const *points, int32_t n, int32_t num_clust, gh_gclust **clusters,
                         int32_t *assignments, const gh_kmeans_opts *o) {
  for (int32_t c = 0; c < num_clust; ++c) clusters[c] = NULL;
  int32_t skip;
  if (n == 1) {
    skip = 1;
  } else {
    skip = 1 + (rand() % (n - 1));
    while (gcd32(skip, n) != 1) {
      if (skip == n - 1) skip = 0;
      skip++;
    }
  }
  for (int32_t i = 0, j = 0, count = 0; count != n; i = (i + skip) % n, j = (j + 1) % num_clust, count++) {
    if (!clusters[j]) clusters[j] = gh_gclust_copy(points[i]);
    else gh_gclust_add(clusters[j], points[i]);
    assignments[i] = j;
  }
  float ans;
  {
    gh_gclust *all = gh_sum_clusterable(clusters, num_clust);
    float all_objf = gh_gclust_objf(all);
    ans = gh_sum_objf(clusters, num_clust) - all_objf;
    if (ans < -0.01f && ans < -0.01 * fabs(all_objf))
      gh_warn("ClusterKMeans: objective function after random assignment to clusters is worse than in single "
              "cluster: %g changed by %g", (double)all_objf, (double)ans);
    gh_gclust_free(all);
  }
  for (int32_t it = 0; it < o->num_iters; ++it) {
    float impr = gh_refine_clusters(points, n, clusters, num_clust, assignments, o->refine_iters, o->refine_top_n);
    ans += impr;
    if (impr == 0) break;
  }
  return ans;
}

float gh_cluster_kmeans(gh_gclust *const *points, int32_t n, int32_t num_clust, gh_gclust **clusters_out,
                        int32_t *assignments, const gh_kmeans_opts *o) {
  if (n == 0) return 0.0f;
  if (num_clust < 1 || num_clust > n) gh_die("k-means: %d clusters of %d points", num_clust, n);
  gh_gclust **tmp = gh_malloc((size_t)num_clust * sizeof(gh_gclust *));
  int32_t *atmp = gh_malloc((size_t)n * sizeof(int32_t));
  float best = 0.0f;
  int have = 0;
  for (int32_t tr = 0; tr < (o->num_tries > 1 ? o->num_tries : 1); ++tr) {
    float a = kmeans_once(points, n, num_clust, tmp, atmp, o);
    if (tr == 0 || a > best) {
      best = a;
      if (clusters_out) {
        if (have)
          for (int32_t c = 0; c < num_clust; ++c) gh_gclust_free(clusters_out[c]);
        memcpy(clusters_out, tmp, (size_t)num_clust * sizeof(gh_gclust *));
        memset(tmp, 0, (size_t)num_clust * sizeof(gh_gclust *));
      }
      memcpy(assignments, atmp, (size_t)n * sizeof(int32_t));
      have = 1;
    }
    for (int32_t c = 0; c < num_clust; ++c) gh_gclust_free(tmp[c]);
  }
  free(tmp);
  free(atmp);
  return best;
}

/* ---- TreeCluster (Kaldi TreeClusterer, branch factor 2, threshold 0) ---- */
typedef struct tc_node {
  int is_leaf;
  int32_t index, seq;
  struct tc_node *parent;
  int32_t np;            /* leaf: points */
  int32_t *pidx;         /* leaf: point indices */
  float best_split;
  gh_gclust *kc[2];      /* leaf: the k-means split's clusters */
  int32_t *kasg;         /* leaf: its assignments [np] */
  gh_gclust *total;
} tc_node;

typedef struct { float impr; tc_node *node; } tc_elem;
static int tc_less(const tc_elem *a, const tc_elem *b) {
  /* Kaldi: pair<float, Node*>; the pointer order is replaced by creation order */
  if (a->impr != b->impr) return a->impr < b->impr;
  return a->node->seq < b->node->seq;
}
DEFINE_HEAP(tc_heap, tc_elem, tc_less)

typedef struct {
  gh_gclust *const *points;
  const gh_kmeans_opts *o;
  tc_node **leaves, **inner;
  int32_t nleaves, ninner, cap_leaves, cap_inner, seq;
  tc_heap q;
} tc_state;

static void tc_find_best_split(tc_state *s, tc_node *node) {
  if (node->np == 0) gh_warn("tree clustering: leaf with no data");
  if (node->np <= 1) {
    node->best_split = 0;
    return;
  }
  gh_gclust **pts = gh_malloc((size_t)node->np * sizeof(gh_gclust *));
  for (int32_t i = 0; i < node->np; ++i) pts[i] = s->points[node->pidx[i]];
  node->kasg = gh_malloc((size_t)node->np * sizeof(int32_t));
  float impr = gh_cluster_kmeans(pts, node->np, 2, node->kc, node->kasg, s->o);
  free(pts);
  node->best_split = impr;
  if (impr > 0.0f) tc_heap_push(&s->q, (tc_elem){impr, node});
}

static tc_node *tc_new(tc_state *s) {
  tc_node *n = gh_calloc(1, sizeof(tc_node));
  n->seq = s->seq++;
  n->is_leaf = 1;
  return n;
}

static void tc_do_split(tc_state *s, tc_node *node) {
  tc_node *ch[2];
  for (int k = 0; k < 2; ++k) {
    tc_node *c = tc_new(s);
    ch[k] = c;
    c->parent = node;
    c->total = node->kc[k];
    c->pidx = gh_malloc((size_t)node->np * sizeof(int32_t));
    if (k == 0) {
      c->index = node->index;
      s->leaves[c->index] = c;
    } else {
      if (s->nleaves == s->cap_leaves)
        s->leaves = gh_realloc(s->leaves, (size_t)(s->cap_leaves *= 2) * sizeof(tc_node *));
      c->index = s->nleaves;
      s->leaves[s->nleaves++] = c;
    }
  }
  for (int32_t i = 0; i < node->np; ++i) {
    tc_node *c = ch[node->kasg[i]];
    c->pidx[c->np++] = node->pidx[i];
  }
  free(node->pidx);
  free(node->kasg);
  node->pidx = NULL;
  node->kasg = NULL;
  node->np = 0;
  node->kc[0] = node->kc[1] = NULL;
  node->is_leaf = 0;
  if (s->ninner == s->cap_inner) s->inner = gh_realloc(s->inner, (size_t)(s->cap_inner *= 2) * sizeof(tc_node *));
  node->index = s->ninner;
  s->inner[s->ninner++] = node;
  tc_find_best_split(s, ch[0]);
  tc_find_best_split(s, ch[1]);
}

float gh_tree_cluster(gh_gclust *const *points, int32_t n, int32_t max_clust, const gh_kmeans_opts *o,
                      int32_t *assignments, int32_t **clust_assignments, int32_t *num_nodes, int32_t *num_leaves) {
  *clust_assignments = NULL;
  *num_nodes = *num_leaves = 0;
  if (n == 0) return 0.0f;
  tc_state s = {0};
  s.points = points;
  s.o = o;
  s.cap_leaves = s.cap_inner = 16;
  s.leaves = gh_malloc(16 * sizeof(tc_node *));
  s.inner = gh_malloc(16 * sizeof(tc_node *));
  tc_node *top = tc_new(&s);
  top->index = 0;
  s.leaves[s.nleaves++] = top;
  top->total = gh_sum_clusterable(points, n);
  top->np = n;
  top->pidx = gh_malloc((size_t)n * sizeof(int32_t));
  for (int32_t i = 0; i < n; ++i) top->pidx[i] = i;
  tc_find_best_split(&s, top);
  float ans = 0.0f;
  while (s.nleaves < max_clust && s.q.n > 0) {
    tc_elem e = s.q.a[0];
    tc_heap_pop(&s.q);
    ans += e.impr;
    tc_do_split(&s, e.node);
  }
  /* outputs */
  *num_leaves = s.nleaves;
  *num_nodes = s.nleaves + s.ninner;
  for (int32_t i = 0; i < n; ++i) assignments[i] = -1;
  for (int32_t l = 0; l < s.nleaves; ++l)
    for (int32_t i = 0; i < s.leaves[l]->np; ++i) assignments[s.leaves[l]->pidx[i]] = l;
  int32_t *ca = gh_malloc((size_t)*num_nodes * sizeof(int32_t));
#define NONLEAF_OUT(idx) (s.nleaves + s.ninner - 1 - (idx))
  for (int32_t l = 0; l < s.nleaves; ++l) {
    tc_node *p = s.leaves[l]->parent;
    ca[l] = !p ? 0 : p->is_leaf ? p->index : NONLEAF_OUT(p->index);
  }
  for (int32_t k = 0; k < s.ninner; ++k) {
    int32_t idx = NONLEAF_OUT(k);
    tc_node *p = s.inner[k]->parent;
    ca[idx] = !p ? idx : NONLEAF_OUT(p->index);
  }
#undef NONLEAF_OUT
  *clust_assignments = ca;
  for (int32_t l = 0; l < s.nleaves; ++l) {
    tc_node *x = s.leaves[l];
    gh_gclust_free(x->total);
    gh_gclust_free(x->kc[0]);
    gh_gclust_free(x->kc[1]);
    free(x->pidx);
    free(x->kasg);
    free(x);
  }
  for (int32_t k = 0; k < s.ninner; ++k) {
    gh_gclust_free(s.inner[k]->total);
    free(s.inner[k]);
  }
  free(s.leaves);
  free(s.inner);
  free(s.q.a);
  return ans;
}
