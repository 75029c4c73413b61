/* align.cl -- align_batch for the opencl backend (backend.h gh_ops_align;
 * host side: opencl-align.c; the reference: kernels/cpu/align.c, whose
 * operations this follows one for one, so the costs and paths are its
 * bits).  One work-group per utterance: a frame's states are shared among
 * the work-items, barriers between the emitting step, each synchronous
 * epsilon round and the checkpoint copies; work-item 0 picks the best
 * final state and walks the back-pointers, the group recomputing a segment
 * from its checkpoint whenever the walk leaves the one it holds. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define AL_WG 64

typedef struct {
  int S, K, neps, ld;
  float as;
  __global const int *src, *colx, *ioff, *imid, *in;
  __global const float *w, *ll;
} al_utt;

static void al_closure(const al_utt *u, __global double *cur, __global double *nxt, __global int *bprow,
                       __local int *flag) {
#pragma OPENCL FP_CONTRACT OFF
  if (u->neps == 0) return;
  const int lid = get_local_id(0);
  for (int round = 0; round < u->S; ++round) {
    if (lid == 0) *flag = 0;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int s = lid; s < u->S; s += AL_WG) {
      double best = cur[s];
      int arg = -1;
      for (int k = u->imid[s]; k < u->ioff[s + 1]; ++k) {
        const int a = u->in[k];
        const double c = cur[u->src[a]];
        if (c == INFINITY) continue;
        const double v = c + (double)u->w[a];
        if (v < best) best = v, arg = a;
      }
      nxt[s] = best;
      if (arg >= 0) bprow[s] = arg, *flag = 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int s = lid; s < u->S; s += AL_WG) cur[s] = nxt[s];
    const int f = *flag;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (!f) break;
  }
}

/* column t + 1's emitting step from cur into nxt (the caller swaps) */
static void al_emit(const al_utt *u, int t, __global const double *cur, __global double *nxt, __global int *bprow) {
#pragma OPENCL FP_CONTRACT OFF
  __global const float *ll = u->ll + (long)t * u->ld;
  for (int s = get_local_id(0); s < u->S; s += AL_WG) {
    double best = INFINITY;
    int arg = -1;
    for (int k = u->ioff[s]; k < u->imid[s]; ++k) {
      const int a = u->in[k];
      const double c = cur[u->src[a]];
      if (c == INFINITY) continue;
      const float ac = -(u->as * ll[u->colx[a]]);
      const double v = ((double)u->w[a] + c) + (double)ac;
      if (v < best) best = v, arg = a;
    }
    nxt[s] = best;
    bprow[s] = arg;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(AL_WG, 1, 1))) void gh_align_batch(
    __global const int *Sv, __global const int *Tv, __global const int *Kv, __global const int *startv,
    __global const int *nepsv, __global const long *st_off, __global const long *arc_off,
    __global const long *ll_off, __global const long *ck_off, __global const long *bp_off,
    __global const long *path_off, __global const long *path_cap, __global const int *arc_src,
    __global const int *arc_col, __global const float *arc_w, __global const int *in_off,
    __global const int *in_mid, __global const int *in_arc, __global const float *finalv,
    __global const float *llv, int ld, float as, __global double *costs, __global double *ck_cost,
    __global int *ck_bp, __global int *bpv, __global int *path, __global long *path_len,
    __global double *best_cost) {
#pragma OPENCL FP_CONTRACT OFF
  const int uix = get_group_id(0), lid = get_local_id(0);
  __local int flag;
  __local int tr_s, tr_c, tr_seg, tr_done;
  __local long tr_n;
  al_utt u;
  u.S = Sv[uix];
  u.K = Kv[uix];
  u.neps = nepsv[uix];
  u.ld = ld;
  u.as = as;
  u.src = arc_src + arc_off[uix];
  u.colx = arc_col + arc_off[uix];
  u.w = arc_w + arc_off[uix];
  u.in = in_arc + arc_off[uix];
  u.ioff = in_off + st_off[uix] + uix;
  u.imid = in_mid + st_off[uix];
  u.ll = llv + ll_off[uix];
  const int S = u.S, K = u.K, T = Tv[uix], start = startv[uix];
  __global const float *fin = finalv + st_off[uix];
  __global double *cur = costs + 2 * st_off[uix], *nxt = cur + S, *tmp;
  __global double *ckc = ck_cost + ck_off[uix];
  __global int *ckb = ck_bp + ck_off[uix], *bp = bpv + bp_off[uix];
  for (int s = lid; s < S; s += AL_WG) cur[s] = s == start ? 0.0 : INFINITY, bp[s] = -1;
  barrier(CLK_GLOBAL_MEM_FENCE);
  al_closure(&u, cur, nxt, bp, &flag);
  for (int s = lid; s < S; s += AL_WG) ckc[s] = cur[s], ckb[s] = bp[s];
  for (int c = 1; c <= T; ++c) {
    __global int *row = bp + (long)(c % K) * S;
    al_emit(&u, c - 1, cur, nxt, row);
    tmp = cur, cur = nxt, nxt = tmp;
    al_closure(&u, cur, nxt, row, &flag);
    if (c % K == 0)
      for (int s = lid; s < S; s += AL_WG) ckc[(long)(c / K) * S + s] = cur[s], ckb[(long)(c / K) * S + s] = row[s];
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) {
    double best = INFINITY;
    int bs = -1;
    for (int s = 0; s < S; ++s) {
      if (cur[s] == INFINITY || fin[s] == INFINITY) continue;
      const double v = cur[s] + (double)fin[s];
      if (v < best) best = v, bs = s;
    }
    best_cost[uix] = best;
    tr_s = bs, tr_c = T, tr_seg = T / K, tr_n = 0, tr_done = bs < 0 ? 1 : 0;
    path_len[uix] = bs < 0 ? -1 : 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  __global int *pth = path + path_off[uix];
  const long cap = path_cap[uix];
  for (;;) {
    if (lid == 0 && !tr_done) {
      int s = tr_s, c = tr_c, seg = tr_seg;
      long n = tr_n;
      for (;;) {
        const int a = bp[(long)(c - seg * K) * S + s];
        if (a < 0) {
          tr_done = 1;
          path_len[uix] = (c != 0 || s != start) ? -2 : n;
          break;
        }
        if (n >= cap) {
          tr_done = 1;
          path_len[uix] = -3;
          break;
        }
        pth[n++] = a;
        s = u.src[a];
        if (u.colx[a] >= 0 && --c < seg * K) {
          --seg;
          break;
        }
      }
      tr_s = s, tr_c = c, tr_seg = seg, tr_n = n;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    const int done = tr_done, seg = tr_seg;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (done) break;
    /* segment seg again from its checkpoint */
    cur = costs + 2 * st_off[uix], nxt = cur + S;
    for (int s = lid; s < S; s += AL_WG) cur[s] = ckc[(long)seg * S + s], bp[s] = ckb[(long)seg * S + s];
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int r = 1; r < K; ++r) {
      al_emit(&u, seg * K + r - 1, cur, nxt, bp + (long)r * S);
      tmp = cur, cur = nxt, nxt = tmp;
      al_closure(&u, cur, nxt, bp + (long)r * S, &flag);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
#endif
