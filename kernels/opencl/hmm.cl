/* hmm.cl -- OpenCL C 1.2 kernels of the HMM ops (host side: opencl-hmm.c):
 * forward (log domain and Rabiner-scaled), Viterbi and forward-backward over
 * a batch of utterances, each with its own compiled graph (backend.h).
 *
 * Mapping (cuHMM, seed 004, Sec. 3): one work-group per utterance; work-item
 * l owns states l, l + L, l + 2L, ... (L = local size, a power of two); the
 * work-group walks its own frames with one barrier per frame, so every state
 * of every utterance advances one time step in parallel.  Rows (alpha,
 * delta, beta) are double in global memory (two per utterance), as are all
 * sums: the arithmetic is the CPU reference's (kernels/cpu/cpu-hmm.c), in the
 * same order per state, so Viterbi scores and paths are identical to it.
 * Needs cl_khr_fp64 (without it the host leaves the HMM ops to the CPU).
 *
 * Graph g (all graphs concatenated): states sb[g] .. sb[g] + S - 1 (pdf,
 * init, final), CSR offsets io[g] .. io[g] + S of incoming (in_off) and
 * outgoing (out_off) arcs, arcs ab[g] .. (arc_src, arc_logp by destination;
 * out_arc: local arc indices grouped by source), all indices graph-local.
 * Utterance u of the chunk: graph ug[u], frames fo[u] .. fo[u+1]-1 of ll
 * [frames x P], per-state output offset so[u] (T_u S_u elements), row
 * offset ro[u] (2 S_u doubles).
 */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define GH_NINF (-(double)INFINITY)

#define GRAPH_ARGS                                                                         \
  __global const int *gS, __global const int *sb, __global const int *io,                  \
      __global const int *ab, __global const int *spdf, __global const float *sinit,       \
      __global const float *sfinal, __global const int *in_off, __global const int *arc_src, \
      __global const float *arc_logp, __global const int *out_off, __global const int *out_arc, \
      __global const int *arc_dst
#define UTT_ARGS                                                                            \
  __global const int *ug, __global const long *fo, __global const long *so,                \
      __global const long *ro, __global const float *ll, int P

/* Work-group max / sum / argmax of one double per work-item (L a power of
 * two; every work-item must call). */
static double wg_max(double v, __local double *red) {
  const int l = get_local_id(0), L = get_local_size(0);
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = L / 2; h > 0; h >>= 1) {
    if (l < h) red[l] = fmax(red[l], red[l + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  v = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
}
static double wg_sum(double v, __local double *red) {
  const int l = get_local_id(0), L = get_local_size(0);
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = L / 2; h > 0; h >>= 1) {
    if (l < h) red[l] += red[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  v = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
}
/* (value, index) with the largest value, lowest index on ties; index -1
 * (no candidate) loses to any index. */
static int wg_argmax(double v, int i, __local double *red, __local int *redi) {
  const int l = get_local_id(0), L = get_local_size(0);
  red[l] = v;
  redi[l] = i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = L / 2; h > 0; h >>= 1) {
    if (l < h) {
      double w = red[l + h];
      int j = redi[l + h];
      if (j >= 0 && (redi[l] < 0 || w > red[l] || (w == red[l] && j < redi[l]))) { red[l] = w; redi[l] = j; }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  i = redi[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return i;
}

/* log sum_{a in in(j)} exp(prev[src a] + logp a) (the reference's max, then
 * sum of exp(v - max)); -inf if no arc is alive. */
static double in_lse(int j, __global const int *inoff, __global const int *src,
                     __global const float *lp, __global const double *prev) {
  double m = GH_NINF;
  for (int a = inoff[j]; a < inoff[j + 1]; ++a) m = fmax(m, prev[src[a]] + lp[a]);
  if (m == GH_NINF) return m;
  double sum = 0.0;
  for (int a = inoff[j]; a < inoff[j + 1]; ++a) sum += exp(prev[src[a]] + lp[a] - m);
  return m + log(sum);
}

/* Forward, log domain (Rabiner eqs. 19-21): loglik[u] = log P(O_u);
 * alpha (if want_alpha) float [so[u] + t S + j] = log alpha_t(j). */
__kernel void gh_hmm_forward_log(GRAPH_ARGS, UTT_ARGS, __global double *rows, __global double *loglik,
                                 int want_alpha, __global float *alpha, __local double *red) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], S = gS[g];
  const long T = fo[u + 1] - fo[u];
  if (T == 0) { if (l == 0) loglik[u] = GH_NINF; return; }
  __global const int *pdf = spdf + sb[g], *inoff = in_off + io[g], *src = arc_src + ab[g];
  __global const float *init = sinit + sb[g], *fin = sfinal + sb[g], *lp = arc_logp + ab[g];
  __global const float *lu = ll + fo[u] * P;
  __global double *prev = rows + ro[u], *cur = prev + S;
  __global float *al = alpha + so[u];
  for (int j = l; j < S; j += L) {
    prev[j] = (double)init[j] + lu[pdf[j]];
    if (want_alpha) al[j] = (float)prev[j];
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long t = 1; t < T; ++t) {
    __global const float *lt = lu + t * P;
    for (int j = l; j < S; j += L) {
      double v = in_lse(j, inoff, src, lp, prev);
      cur[j] = v > GH_NINF ? v + lt[pdf[j]] : GH_NINF;
      if (want_alpha) al[t * S + j] = (float)cur[j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global double *tmp = prev; prev = cur; cur = tmp;
  }
  double m = GH_NINF;
  for (int j = l; j < S; j += L) m = fmax(m, prev[j] + fin[j]);
  m = wg_max(m, red);
  double sum = 0.0;
  if (m > GH_NINF)
    for (int j = l; j < S; j += L) sum += exp(prev[j] + fin[j] - m);
  sum = wg_sum(sum, red);
  if (l == 0) loglik[u] = m > GH_NINF ? m + log(sum) : GH_NINF;
}

/* Forward, Rabiner-scaled (eqs. 91-92), as forward_scaled in cpu-hmm.c:
 * alpha_hat sums to 1 every frame; emissions exp(ll - m_t) with m_t the
 * largest loglike among states that can be occupied at t; an utterance that
 * dies (no occupiable state with a finite loglike) or cannot exit gets
 * loglik -inf and, if wanted, alpha all -inf. */
__kernel void gh_hmm_forward_scaled(GRAPH_ARGS, UTT_ARGS, __global double *rows, __global double *loglik,
                                    int want_alpha, __global float *alpha, __local double *red) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], S = gS[g];
  const long T = fo[u + 1] - fo[u];
  if (T == 0) { if (l == 0) loglik[u] = GH_NINF; return; }
  __global const int *pdf = spdf + sb[g], *inoff = in_off + io[g], *src = arc_src + ab[g];
  __global const float *init = sinit + sb[g], *fin = sfinal + sb[g], *lp = arc_logp + ab[g];
  __global const float *lu = ll + fo[u] * P;
  __global double *prev = rows + ro[u], *cur = prev + S;
  __global float *al = alpha + so[u];
  double logscale = 0.0;
  int dead = 0;
  for (long t = 0; t < T; ++t) {
    __global const float *lt = lu + t * P;
    double m = GH_NINF;
    for (int j = l; j < S; j += L) {
      double pr;
      if (t == 0) {
        pr = exp((double)init[j]);
      } else {
        pr = 0.0;
        for (int a = inoff[j]; a < inoff[j + 1]; ++a) pr += prev[src[a]] * exp((double)lp[a]);
      }
      cur[j] = pr;
      if (pr > 0 && lt[pdf[j]] > m) m = lt[pdf[j]];
    }
    m = wg_max(m, red);
    if (m == GH_NINF) { dead = 1; break; }
    double ct = 0.0;
    for (int j = l; j < S; j += L) {
      cur[j] = cur[j] > 0 ? cur[j] * exp(lt[pdf[j]] - m) : 0.0;
      ct += cur[j];
    }
    ct = wg_sum(ct, red);
    if (!(ct > 0)) { dead = 1; break; }
    logscale += m + log(ct);
    for (int j = l; j < S; j += L) {
      double a = cur[j] / ct;
      prev[j] = a;
      if (want_alpha) al[t * S + j] = a > 0 ? (float)(log(a) + logscale) : -INFINITY;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  double fsum = 0.0;
  if (!dead) {
    for (int j = l; j < S; j += L) fsum += prev[j] * exp((double)fin[j]);
    fsum = wg_sum(fsum, red);
  }
  if (!(fsum > 0)) { /* dead, or no exit: -inf, and (as the reference) alpha all -inf */
    if (want_alpha)
      for (long i = l; i < T * S; i += L) al[i] = -INFINITY;
    if (l == 0) loglik[u] = GH_NINF;
    return;
  }
  if (l == 0) loglik[u] = logscale + log(fsum);
}

/* Viterbi: delta rows in double, back-pointers bp int [so[u] + t S + j]
 * (the source state; lowest source on ties, as the reference), best final
 * state (lowest index on ties), backtrace by work-item 0 into path[fo[u] +
 * t] (graph-local states; all -1 and score -inf without a complete path). */
__kernel void gh_hmm_viterbi(GRAPH_ARGS, UTT_ARGS, __global double *rows, __global double *score,
                             __global int *bp, __global int *path, __local double *red,
                             __local int *redi) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], S = gS[g];
  const long T = fo[u + 1] - fo[u];
  if (T == 0) { if (l == 0) score[u] = GH_NINF; return; }
  __global const int *pdf = spdf + sb[g], *inoff = in_off + io[g], *src = arc_src + ab[g];
  __global const float *init = sinit + sb[g], *fin = sfinal + sb[g], *lp = arc_logp + ab[g];
  __global const float *lu = ll + fo[u] * P;
  __global double *prev = rows + ro[u], *cur = prev + S;
  __global int *b = bp + so[u];
  __global int *pu = path + fo[u];
  for (int j = l; j < S; j += L) { prev[j] = (double)init[j] + lu[pdf[j]]; b[j] = -1; }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long t = 1; t < T; ++t) {
    __global const float *lt = lu + t * P;
    for (int j = l; j < S; j += L) {
      double m = GH_NINF;
      int arg = -1;
      for (int a = inoff[j]; a < inoff[j + 1]; ++a) {
        double v = prev[src[a]] + lp[a];
        if (v > m || (v == m && arg >= 0 && src[a] < arg)) { m = v; arg = src[a]; }
      }
      cur[j] = m > GH_NINF ? m + lt[pdf[j]] : GH_NINF;
      b[t * S + j] = m > GH_NINF ? arg : -1;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global double *tmp = prev; prev = cur; cur = tmp;
  }
  double best = GH_NINF;
  int arg = -1;
  for (int j = l; j < S; j += L) {
    double v = prev[j] + fin[j];
    if (v > best) { best = v; arg = j; }
  }
  arg = wg_argmax(best, arg, red, redi);
  if (l != 0) return;
  if (arg < 0) {
    score[u] = GH_NINF;
    for (long t = 0; t < T; ++t) pu[t] = -1;
    return;
  }
  score[u] = prev[arg] + fin[arg];
  for (long t = T - 1; t >= 0; --t) {
    pu[t] = arg;
    arg = b[t * S + arg];
  }
}

/* Forward-backward (Rabiner eqs. 25, 27, 37): alpha double [so[u] + t S +
 * j] (scratch), loglik[u]; gamma (if want_gamma) float, gamma_t(j) =
 * exp(alpha + beta - log P); ust (per-utterance stats, 2 S + A doubles at
 * sto[u], zeroed by the host): entries gamma_0(j), arc counts sum_t xi_t(a)
 * (graph's arc order), exits alpha_{T-1}(j) + final_j.  The work-item that
 * owns state i also owns i's outgoing arcs (beta_t(i) and their xi sums),
 * so no two work-items add to one value. */
__kernel void gh_hmm_fb(GRAPH_ARGS, UTT_ARGS, __global double *rows, __global double *alpha_d,
                        __global double *loglik, int want_gamma, __global float *gamma,
                        __global const long *sto, __global double *ust, __local double *red) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], S = gS[g], A = in_off[io[g] + S];
  const long T = fo[u + 1] - fo[u];
  if (T == 0) { if (l == 0) loglik[u] = GH_NINF; return; }
  __global const int *pdf = spdf + sb[g], *inoff = in_off + io[g], *src = arc_src + ab[g];
  __global const int *ooff = out_off + io[g], *oarc = out_arc + ab[g], *dst = arc_dst + ab[g];
  __global const float *init = sinit + sb[g], *fin = sfinal + sb[g], *lp = arc_logp + ab[g];
  __global const float *lu = ll + fo[u] * P;
  __global double *al = alpha_d + so[u];
  __global float *gm = gamma + so[u];
  __global double *st = ust + sto[u];
  for (int j = l; j < S; j += L) al[j] = (double)init[j] + lu[pdf[j]];
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long t = 1; t < T; ++t) {
    __global const float *lt = lu + t * P;
    __global const double *prev = al + (t - 1) * S;
    for (int j = l; j < S; j += L) {
      double v = in_lse(j, inoff, src, lp, prev);
      al[t * S + j] = v > GH_NINF ? v + lt[pdf[j]] : GH_NINF;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  __global const double *aT = al + (T - 1) * S;
  double m = GH_NINF;
  for (int j = l; j < S; j += L) m = fmax(m, aT[j] + fin[j]);
  m = wg_max(m, red);
  double sum = 0.0;
  if (m > GH_NINF)
    for (int j = l; j < S; j += L) sum += exp(aT[j] + fin[j] - m);
  sum = wg_sum(sum, red);
  const double LP = m > GH_NINF ? m + log(sum) : GH_NINF;
  if (l == 0) loglik[u] = LP;
  if (LP == GH_NINF) {
    if (want_gamma)
      for (long i = l; i < T * S; i += L) gm[i] = 0.0f;
    return;
  }
  __global double *bnext = rows + ro[u], *bcur = bnext + S;
  for (int j = l; j < S; j += L) bnext[j] = fin[j];
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long t = T - 1; t >= 0; --t) {
    __global const double *at = al + t * S;
    for (int j = l; j < S; j += L) {
      double gv = exp(at[j] + bnext[j] - LP);
      if (want_gamma) gm[t * S + j] = (float)gv;
      if (t == 0) st[j] += gv;
      if (t == T - 1) st[S + A + j] += exp(at[j] + fin[j] - LP);
    }
    if (t == 0) break;
    __global const float *lt = lu + t * P;
    __global const double *ap = al + (t - 1) * S;
    for (int i = l; i < S; i += L) {
      double mx = GH_NINF;
      for (int k = ooff[i]; k < ooff[i + 1]; ++k) {
        int a = oarc[k], j = dst[a];
        double w = (double)lp[a] + lt[pdf[j]] + bnext[j];
        double v = ap[i] + w - LP;
        if (v > GH_NINF) st[S + a] += exp(v);
        mx = fmax(mx, w);
      }
      double s = 0.0;
      if (mx > GH_NINF)
        for (int k = ooff[i]; k < ooff[i + 1]; ++k) {
          int a = oarc[k], j = dst[a];
          s += exp((double)lp[a] + lt[pdf[j]] + bnext[j] - mx);
        }
      bcur[i] = mx > GH_NINF ? mx + log(s) : GH_NINF;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global double *tmp = bnext; bnext = bcur; bcur = tmp;
  }
}
#endif
