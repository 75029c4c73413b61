/* align-plan.h -- the host side every backend's align_batch shares
 * (backend.h gh_ops_align): a batch's graphs checked and flattened into the
 * arrays the kernels read, with each utterance's checkpoint interval.  The
 * algorithm itself is written once per backend (kernels/cpu/align.c is the
 * reference; kernels/cuda/cuda-align.cu and kernels/opencl/align.cl follow
 * it operation for operation). */
#ifndef GH_ALIGN_PLAN_H
#define GH_ALIGN_PLAN_H
#include <stdint.h>

#include "backend.h"

/* Per utterance u (local indices: states 0 .. S[u]-1, arcs 0 .. A[u]-1):
 *   arcs: arc_src, arc_col (col[ilabel], -1 for an epsilon arc), arc_w at
 *         arc_off[u] + a;
 *   states: final at st_off[u] + s; in_off at st_off[u] + u + s (S[u] + 1
 *         entries): the arcs into s are in_arc[arc_off[u] + in_off[s] ..
 *         in_off[s+1]), in increasing arc index, the emitting ones first
 *         (up to in_mid[st_off[u] + s]), then the epsilon ones;
 *   frames: T[u]; loglikes of frame t at ll_off[u] + t ld (flat order of the
 *         batch, for backends that copy them into one buffer);
 *   checkpoints: K[u] columns per segment (K[u] = T[u] + 1: one segment,
 *         no recomputation), nck[u] = T[u] / K[u] + 1 checkpoints, each S[u]
 *         costs (double) and S[u] back-pointers at ck_off[u] * S-units
 *         (ck_off counts states: checkpoint j of u starts at ck_off[u] + j S[u]);
 *   back-pointers of one segment: K[u] S[u] int32 at bp_off[u];
 *   path: at most path_cap[u] arcs at path_off[u] (T emitting arcs and up
 *         to min(epsilon arcs, S) epsilon arcs per column). */
typedef struct {
  int32_t B, ld;
  float acoustic_scale;
  int32_t *S, *A, *T, *K, *nck, *start, *neps; /* [B] */
  int64_t *st_off, *arc_off, *ll_off, *ck_off, *bp_off, *path_off, *path_cap; /* [B + 1] (path_cap [B]) */
  int32_t *arc_src, *arc_col;
  float *arc_w;
  int32_t *in_off, *in_mid, *in_arc;
  float *final;
} gh_align_plan;

/* Checks and flattens b (dies naming utterance u on a graph with no start
 * state, an arc to a state that does not exist, an ilabel outside [0,
 * num_labels], a column outside [0, ld), or 2^31 arcs or states).  Free
 * with gh_align_plan_free. */
void gh_align_plan_make(gh_align_plan *p, const gh_align_batch *b);
void gh_align_plan_free(gh_align_plan *p);

/* The checkpoint interval of an utterance of T frames and S states: K > 0
 * given: min(K, T + 1); else T + 1 when (T + 1) S back-pointers fit budget
 * bytes (budget 0: always), else ceil(sqrt(3 (T + 1))), the K that
 * minimizes (T / K) 12 S + K 4 S bytes (checkpoints of a double cost and an
 * int32 back-pointer per state, one segment of back-pointers). */
int32_t gh_align_ckpt_interval(int32_t T, int32_t S, int32_t K, int64_t budget);

#endif
