/* cuda-align.cu -- align_batch on the GPU (backend.h gh_ops_align).  One
 * thread block per utterance (the hmm kernels' batching, applied to
 * per-utterance graphs): each frame's states are shared among the
 * threads, __syncthreads between the emitting step, each synchronous
 * epsilon round (__syncthreads_or: did any state change) and the
 * checkpoint copies; thread 0 picks the best final state and walks the
 * back-pointers, the block recomputing a segment from its checkpoint when
 * the walk leaves the one it holds.  The operations are those of the CPU
 * reference (kernels/cpu/align.c) in the same order, with every double
 * addition and the float product rounded as written (__dadd_rn,
 * __fmul_rn), so the costs and paths are its bits.  The batch's plan
 * (kernels/align-plan.h) and log-likelihoods go to the device in one copy
 * per array; the paths come back. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "align-plan.h"
#include "backend.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-gemm.h"
#include "cuda-model.h"

#define AL_THREADS 256

struct AlUtt {
  int S, K, neps, ld;
  float as;
  const int *src, *colx, *ioff, *imid, *in;
  const float *w, *ll;
};

__device__ static void al_closure(const AlUtt &u, double *cur, double *nxt, int *bprow) {
  if (u.neps == 0) return;
  for (int round = 0; round < u.S; ++round) {
    int changed = 0;
    for (int s = threadIdx.x; s < u.S; s += blockDim.x) {
      double best = cur[s];
      int arg = -1;
      for (int k = u.imid[s]; k < u.ioff[s + 1]; ++k) {
        const int a = u.in[k];
        const double c = cur[u.src[a]];
        if (c == INFINITY) continue;
        const double v = __dadd_rn(c, (double)u.w[a]);
        if (v < best) best = v, arg = a;
      }
      nxt[s] = best;
      if (arg >= 0) bprow[s] = arg, changed = 1;
    }
    changed = __syncthreads_or(changed);
    for (int s = threadIdx.x; s < u.S; s += blockDim.x) cur[s] = nxt[s];
    __syncthreads();
    if (!changed) break;
  }
}

__device__ static void al_emit(const AlUtt &u, int t, const double *cur, double *nxt, int *bprow) {
  const float *ll = u.ll + (long long)t * u.ld;
  for (int s = threadIdx.x; s < u.S; s += blockDim.x) {
    double best = INFINITY;
    int arg = -1;
    for (int k = u.ioff[s]; k < u.imid[s]; ++k) {
      const int a = u.in[k];
      const double c = cur[u.src[a]];
      if (c == INFINITY) continue;
      const float ac = -__fmul_rn(u.as, ll[u.colx[a]]);
      const double v = __dadd_rn(__dadd_rn((double)u.w[a], c), (double)ac);
      if (v < best) best = v, arg = a;
    }
    nxt[s] = best;
    bprow[s] = arg;
  }
  __syncthreads();
}

struct AlArgs {
  const int *S, *T, *K, *start, *neps;
  const long long *st_off, *arc_off, *ll_off, *ck_off, *bp_off, *path_off, *path_cap;
  const int *arc_src, *arc_col;
  const float *arc_w;
  const int *in_off, *in_mid, *in_arc;
  const float *fin, *ll;
  int ld;
  float as;
  double *costs, *ck_cost;
  int *ck_bp, *bp, *path;
  long long *path_len;
  double *best_cost;
};

__global__ void __launch_bounds__(AL_THREADS) k_align_batch(AlArgs A) {
  const int uix = blockIdx.x, lid = threadIdx.x;
  __shared__ int tr_s, tr_c, tr_seg, tr_done;
  __shared__ long long tr_n;
  AlUtt u;
  u.S = A.S[uix];
  u.K = A.K[uix];
  u.neps = A.neps[uix];
  u.ld = A.ld;
  u.as = A.as;
  u.src = A.arc_src + A.arc_off[uix];
  u.colx = A.arc_col + A.arc_off[uix];
  u.w = A.arc_w + A.arc_off[uix];
  u.in = A.in_arc + A.arc_off[uix];
  u.ioff = A.in_off + A.st_off[uix] + uix;
  u.imid = A.in_mid + A.st_off[uix];
  u.ll = A.ll + A.ll_off[uix];
  const int S = u.S, K = u.K, T = A.T[uix], start = A.start[uix];
  const float *fin = A.fin + A.st_off[uix];
  double *cur = A.costs + 2 * A.st_off[uix], *nxt = cur + S, *tmp;
  double *ckc = A.ck_cost + A.ck_off[uix];
  int *ckb = A.ck_bp + A.ck_off[uix], *bp = A.bp + A.bp_off[uix];
  for (int s = lid; s < S; s += blockDim.x) cur[s] = s == start ? 0.0 : INFINITY, bp[s] = -1;
  __syncthreads();
  al_closure(u, cur, nxt, bp);
  for (int s = lid; s < S; s += blockDim.x) ckc[s] = cur[s], ckb[s] = bp[s];
  for (int c = 1; c <= T; ++c) {
    int *row = bp + (long long)(c % K) * S;
    al_emit(u, c - 1, cur, nxt, row);
    tmp = cur, cur = nxt, nxt = tmp;
    al_closure(u, cur, nxt, row);
    if (c % K == 0)
      for (int s = lid; s < S; s += blockDim.x)
        ckc[(long long)(c / K) * S + s] = cur[s], ckb[(long long)(c / K) * S + s] = row[s];
  }
  __syncthreads();
  if (lid == 0) {
    double best = INFINITY;
    int bs = -1;
    for (int s = 0; s < S; ++s) {
      if (cur[s] == INFINITY || fin[s] == INFINITY) continue;
      const double v = __dadd_rn(cur[s], (double)fin[s]);
      if (v < best) best = v, bs = s;
    }
    A.best_cost[uix] = best;
    tr_s = bs, tr_c = T, tr_seg = T / K, tr_n = 0, tr_done = bs < 0;
    A.path_len[uix] = bs < 0 ? -1 : 0;
  }
  __syncthreads();
  int *pth = A.path + A.path_off[uix];
  const long long cap = A.path_cap[uix];
  for (;;) {
    if (lid == 0 && !tr_done) {
      int s = tr_s, c = tr_c, seg = tr_seg;
      long long n = tr_n;
      for (;;) {
        const int a = bp[(long long)(c - seg * K) * S + s];
        if (a < 0) {
          tr_done = 1;
          A.path_len[uix] = (c != 0 || s != start) ? -2 : n;
          break;
        }
        if (n >= cap) {
          tr_done = 1;
          A.path_len[uix] = -3;
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
    __syncthreads();
    const int done = tr_done, seg = tr_seg;
    __syncthreads();
    if (done) break;
    cur = A.costs + 2 * A.st_off[uix], nxt = cur + S;
    for (int s = lid; s < S; s += blockDim.x) cur[s] = ckc[(long long)seg * S + s], bp[s] = ckb[(long long)seg * S + s];
    __syncthreads();
    for (int r = 1; r < K; ++r) {
      al_emit(u, seg * K + r - 1, cur, nxt, bp + (long long)r * S);
      tmp = cur, cur = nxt, nxt = tmp;
      al_closure(u, cur, nxt, bp + (long long)r * S);
    }
    __syncthreads();
  }
}

template <typename X> static X *dcopy(const X *h, size_t n, void **keep, int *nk) {
  X *d = NULL;
  CK(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(X)));
  if (h && n) CK(cudaMemcpy(d, h, n * sizeof(X), cudaMemcpyHostToDevice));
  keep[(*nk)++] = d;
  return d;
}

void gh_cuda_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out) {
  gh_cuda_thread_attach(b);
  gh_align_plan p;
  gh_align_plan_make(&p, batch);
  const int32_t B = p.B;
  if (B == 0) {
    gh_align_plan_free(&p);
    return;
  }
  const size_t nb = (size_t)B, na = (size_t)p.arc_off[B], ns = (size_t)p.st_off[B];
  const size_t nck = (size_t)p.ck_off[B], nbp = (size_t)p.bp_off[B], npath = (size_t)p.path_off[B];
  const size_t nll = (size_t)p.ll_off[B];
  const size_t bytes = nll * 4 + na * 20 + ns * 28 + nck * 12 + nbp * 4 + npath * 4 + nb * 128;
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if (bytes > free_b)
    gh_die("align_batch: the batch needs %zu MB on %s, %zu MB are free; use a smaller --batch-size or "
           "--max-bp-memory", bytes >> 20, b->device_name, free_b >> 20);
  void *keep[32];
  int nk = 0;
  AlArgs A;
  A.S = dcopy(p.S, nb, keep, &nk);
  A.T = dcopy(p.T, nb, keep, &nk);
  A.K = dcopy(p.K, nb, keep, &nk);
  A.start = dcopy(p.start, nb, keep, &nk);
  A.neps = dcopy(p.neps, nb, keep, &nk);
  A.st_off = dcopy((const long long *)p.st_off, nb, keep, &nk);
  A.arc_off = dcopy((const long long *)p.arc_off, nb, keep, &nk);
  A.ll_off = dcopy((const long long *)p.ll_off, nb, keep, &nk);
  A.ck_off = dcopy((const long long *)p.ck_off, nb, keep, &nk);
  A.bp_off = dcopy((const long long *)p.bp_off, nb, keep, &nk);
  A.path_off = dcopy((const long long *)p.path_off, nb, keep, &nk);
  A.path_cap = dcopy((const long long *)p.path_cap, nb, keep, &nk);
  A.arc_src = dcopy(p.arc_src, na, keep, &nk);
  A.arc_col = dcopy(p.arc_col, na, keep, &nk);
  A.arc_w = dcopy(p.arc_w, na, keep, &nk);
  A.in_off = dcopy(p.in_off, ns + nb, keep, &nk);
  A.in_mid = dcopy(p.in_mid, ns, keep, &nk);
  A.in_arc = dcopy(p.in_arc, na, keep, &nk);
  A.fin = dcopy(p.final, ns, keep, &nk);
  float *dll = dcopy((const float *)NULL, nll, keep, &nk);
  for (int32_t u = 0; u < B; ++u)
    if (p.ll_off[u + 1] > p.ll_off[u])
      CK(cudaMemcpy(dll + p.ll_off[u], batch->loglikes[u], (size_t)(p.ll_off[u + 1] - p.ll_off[u]) * sizeof(float),
                    cudaMemcpyHostToDevice));
  A.ll = dll;
  A.ld = p.ld;
  A.as = p.acoustic_scale;
  A.costs = dcopy((const double *)NULL, 2 * ns, keep, &nk);
  A.ck_cost = dcopy((const double *)NULL, nck, keep, &nk);
  A.ck_bp = dcopy((const int *)NULL, nck, keep, &nk);
  A.bp = dcopy((const int *)NULL, nbp, keep, &nk);
  A.path = dcopy((const int *)NULL, npath, keep, &nk);
  A.path_len = dcopy((const long long *)NULL, nb, keep, &nk);
  A.best_cost = dcopy((const double *)NULL, nb, keep, &nk);
  k_align_batch<<<B, AL_THREADS>>>(A);
  CK_LAUNCH("k_align_batch");
  long long *len = (long long *)gh_malloc(nb * sizeof(long long));
  double *cost = (double *)gh_malloc(nb * sizeof(double));
  int32_t *path = (int32_t *)gh_malloc((npath ? npath : 1) * sizeof(int32_t));
  CK(cudaMemcpy(len, A.path_len, nb * sizeof(long long), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(cost, A.best_cost, nb * sizeof(double), cudaMemcpyDeviceToHost));
  if (npath) CK(cudaMemcpy(path, A.path, npath * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (int i = 0; i < nk; ++i) CK(cudaFree(keep[i]));
  for (int32_t u = 0; u < B; ++u) {
    gh_align_out *o = &out[u];
    o->arcs = NULL;
    o->num_arcs = 0;
    o->reached = len[u] >= 0;
    o->cost = o->reached ? cost[u] : INFINITY;
    if (len[u] < -1)
      gh_die("align_batch: internal: the CUDA trace of utterance %d failed (%lld)", u, (long long)len[u]);
    if (!o->reached) continue;
    const long long n = len[u];
    o->num_arcs = (int32_t)n;
    o->arcs = (int32_t *)gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (long long j = 0; j < n; ++j) o->arcs[j] = path[p.path_off[u] + n - 1 - j];
  }
  free(len);
  free(cost);
  free(path);
  gh_align_plan_free(&p);
}
