/* hmm.cl -- OpenCL C 1.2 kernels of the HMM ops (host side: opencl-hmm.c):
 * forward (log domain and Rabiner-scaled), Viterbi and forward-backward over
 * a batch of utterances, each with its own compiled graph (backend.h).
 *
 * Mapping (Liu 2009, cuHMM, Sec. 3): one work-group per utterance; work-item
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

/* ---------------- time-parallel forward (log domain) and Viterbi of one long
 * utterance on a small graph (design and numerics: kernels/cuda/cuda-hmm.cu,
 * "time-parallel forward and Viterbi"; doc/kernels.md "Long utterances").
 * The frames 1 .. T-1 in K chunks of L; lA + aoff [S x S] the graph's log
 * arc matrix (log-sum of parallel arcs, or their max for Viterbi; -inf
 * without an arc), pdf / init / fin + sb the graph's state arrays, ll [T x
 * P] the utterance's loglikes.  Work-groups of 64 work-items (TP_MAX_S). */
#define TP_MAX_S 64

/* Chunk k = group: work-item r owns row r of LP_k (in LP itself, global):
 * LP_k[r][j] = log-probability of going from state r before the chunk to j
 * at its last frame, emitting the chunk's frames (a log-sum-exp over the S
 * intermediate states per frame, or a max when vit), minus off[k], the sum
 * of the frames' largest loglikes.  No barriers: rows are independent. */
__kernel void gh_tp_chunk(__global const double *lA0, long aoff, int S, __global const float *ll, int P,
                          __global const int *pdf0, int sb, long T, int L, int vit, __global double *LP,
                          __global double *off) {
  __global const double *lA = lA0 + aoff;
  __global const int *pdf = pdf0 + sb;
  const int k = get_group_id(0), r = get_local_id(0);
  const long t0 = 1 + (long)k * L, t1 = t0 + L < T ? t0 + L : T;
  __global double *pr = LP + ((long)k * S + r) * S;
  double nw[TP_MAX_S];
  if (r < S)
    for (int j = 0; j < S; ++j) pr[j] = j == r ? 0.0 : GH_NINF;
  double moff = 0.0;
  int alive = 1;
  for (long t = t0; t < t1; ++t) {
    __global const float *lt = ll + t * P;
    double m = GH_NINF;
    for (int j = 0; j < S; ++j) m = fmax(m, (double)lt[pdf[j]]);
    if (!(m > GH_NINF)) { moff = GH_NINF; alive = 0; break; } /* no state can emit: no path */
    moff += m;
    if (r >= S || !alive) continue;
    double vm = GH_NINF;
    for (int j = 0; j < S; ++j) {
      const double lj = (double)lt[pdf[j]];
      double mx = GH_NINF;
      for (int l = 0; l < S; ++l) mx = fmax(mx, pr[l] + lA[l * S + j]);
      double v = GH_NINF;
      if (mx > GH_NINF && lj > GH_NINF) {
        double sum = 1.0;
        if (!vit) {
          sum = 0.0;
          for (int l = 0; l < S; ++l) sum += exp(pr[l] + lA[l * S + j] - mx);
        }
        v = mx + log(sum) + (lj - m);
      }
      nw[j] = v;
      vm = fmax(vm, v);
    }
    for (int j = 0; j < S; ++j) pr[j] = nw[j];
    if (!(vm > GH_NINF)) alive = 0;
  }
  if (r < S && !alive)
    for (int j = 0; j < S; ++j) pr[j] = GH_NINF;
  if (r == 0) off[k] = moff;
}

/* One work-group: la = init + ll_0, per chunk la(j) <- logsumexp_i (la(i) +
 * LP_k[i][j]) + off_k (kept relative to its largest entry, which goes into
 * log P), *out = log P = ... + logsumexp_j (la(j) + fin_j), or -inf.
 * wantA: Ak [K + 1][S] = the absolute log alpha of frame k L (before chunk
 * k; Ak[K]: frame T - 1), written while log P is finite. */
__kernel void gh_tp_combine(__global const double *LP, __global const double *off, int K, int S,
                            __global const float *ll, __global const int *pdf0, __global const float *init0,
                            __global const float *fin0, int sb, __global double *out, __local double *red,
                            int wantA, __global double *Ak) {
  __local double la[TP_MAX_S];
  __global const int *pdf = pdf0 + sb;
  __global const float *init = init0 + sb, *fin = fin0 + sb;
  const int j = get_local_id(0), ok = j < S;
  const double x = ok ? (double)init[j] + (double)ll[pdf[j]] : GH_NINF;
  if (wantA && ok) Ak[j] = x;
  const double m = wg_max(x, red);
  if (!(m > GH_NINF)) {
    if (j == 0) *out = GH_NINF;
    return;
  }
  if (ok) la[j] = x - m;
  double lp = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 0; k < K; ++k) {
    __global const double *pk = LP + (long)k * S * S;
    double v = GH_NINF;
    if (ok) {
      double mx = GH_NINF;
      for (int i = 0; i < S; ++i) mx = fmax(mx, la[i] + pk[(long)i * S + j]);
      if (mx > GH_NINF) {
        double sum = 0.0;
        for (int i = 0; i < S; ++i) sum += exp(la[i] + pk[(long)i * S + j] - mx);
        v = mx + log(sum);
      }
    }
    const double vm = wg_max(v, red); /* its barriers end every work-item's reads of la */
    if (!(vm > GH_NINF) || !(off[k] > GH_NINF)) { lp = GH_NINF; break; }
    if (ok) la[j] = v - vm;
    lp += vm + off[k];
    if (wantA && ok) Ak[(long)(k + 1) * S + j] = v - vm + lp;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const double f = lp > GH_NINF && ok ? la[j] + (double)fin[j] : GH_NINF;
  const double fm = wg_max(f, red);
  const double fs = wg_sum(fm > GH_NINF && f > GH_NINF ? exp(f - fm) : 0.0, red);
  if (j == 0) *out = lp > GH_NINF && fm > GH_NINF ? lp + fm + log(fs) : GH_NINF;
}

/* One work-group: Dk[0] = init + ll_0, Dk[k + 1](j) = max_i (Dk[k](i) +
 * LP_k[i][j]) + off_k ([K + 1][S], absolute); res[0] = the best final
 * score, res[1] = its state (lowest on ties; -1 and -inf without a path). */
__kernel void gh_tp_vchain(__global const double *LP, __global const double *off, int K, int S,
                           __global const float *ll, __global const int *pdf0, __global const float *init0,
                           __global const float *fin0, int sb, __global double *Dk, __global double *res) {
  __local double d[TP_MAX_S];
  __global const int *pdf = pdf0 + sb;
  __global const float *init = init0 + sb, *fin = fin0 + sb;
  const int j = get_local_id(0), ok = j < S;
  double x = ok ? (double)init[j] + (double)ll[pdf[j]] : GH_NINF;
  if (ok) { d[j] = x; Dk[j] = x; }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 0; k < K; ++k) {
    __global const double *pk = LP + (long)k * S * S;
    if (ok) {
      double m = GH_NINF;
      for (int i = 0; i < S; ++i) m = fmax(m, d[i] + pk[(long)i * S + j]);
      x = m > GH_NINF && off[k] > GH_NINF ? m + off[k] : GH_NINF;
      Dk[(long)(k + 1) * S + j] = x;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (ok) d[j] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (ok) d[j] = x + (double)fin[j];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (j == 0) {
    double bv = GH_NINF;
    int bi = -1;
    for (int i = 0; i < S; ++i)
      if (d[i] > bv) { bv = d[i]; bi = i; }
    res[0] = bi >= 0 ? bv : GH_NINF;
    res[1] = bi;
  }
}

/* Pass B, chunk k = group (work-item j = state j): from Dk[k], delta_t(j) =
 * max_i (delta_{t-1}(i) + lA[i][j]) + ll_t(pdf j) over the chunk's frames
 * with the reference's strict > over increasing i; bp [T][S] (uchar, 255:
 * none); jump[k][j] = the state before the chunk that j at its last frame
 * traces back to. */
__kernel void gh_tp_vpass(__global const double *lA0, long aoff, int S, __global const float *ll, int P,
                          __global const int *pdf0, int sb, long T, int L, __global const double *Dk,
                          __global uchar *bp, __global uchar *jump) {
  __local double buf[2 * TP_MAX_S];
  __global const double *lA = lA0 + aoff;
  __global const int *pdf = pdf0 + sb;
  const int k = get_group_id(0), j = get_local_id(0), ok = j < S;
  __local double *prev = buf, *cur = buf + TP_MAX_S;
  if (ok) prev[j] = Dk[(long)k * S + j];
  barrier(CLK_LOCAL_MEM_FENCE);
  const long t0 = 1 + (long)k * L, t1 = t0 + L < T ? t0 + L : T;
  for (long t = t0; t < t1; ++t) {
    if (ok) {
      double m = GH_NINF;
      int arg = -1;
      for (int i = 0; i < S; ++i) {
        const double v = prev[i] + lA[i * S + j];
        if (v > m) { m = v; arg = i; }
      }
      cur[j] = m > GH_NINF ? m + (double)ll[t * P + pdf[j]] : GH_NINF;
      bp[t * S + j] = m > GH_NINF ? (uchar)arg : (uchar)255;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    __local double *tmp = prev; prev = cur; cur = tmp;
  }
  if (ok) {
    int q = j;
    for (long t = t1 - 1; t >= t0 && q != 255; --t) q = bp[t * S + q];
    jump[(long)k * S + j] = (uchar)q;
  }
}

/* One work-item: the state at the last frame of every chunk (ends [K], -1:
 * no path), from res[1] back through the jump maps; then, the path (one
 * work-item per chunk in gh_tp_vpath). */
__kernel void gh_tp_vtrace(__global const uchar *jump, int K, int S, __global const double *res,
                           __global int *ends) {
  int q = (int)res[1];
  for (int k = K - 1; k >= 0; --k) {
    ends[k] = q;
    if (q >= 0) q = jump[(long)k * S + q];
    if (q == 255) q = -1;
  }
}

__kernel void gh_tp_vpath(__global const uchar *bp, int K, int S, long T, int L, __global const int *ends,
                          __global const double *res, __global int *path) {
  const int k = get_global_id(0);
  if (K == 0) {
    if (k == 0) path[0] = (int)res[1];
    return;
  }
  if (k >= K) return;
  const long t0 = 1 + (long)k * L, t1 = t0 + L < T ? t0 + L : T;
  int q = ends[k];
  for (long t = t1 - 1; t >= t0; --t) {
    path[t] = q;
    if (q >= 0) { q = bp[t * S + q]; if (q == 255) q = -1; }
  }
  if (k == 0) path[0] = q;
}

/* Time-parallel forward-backward (after gh_tp_chunk and gh_tp_combine with
 * Ak).  One work-group: Bk [K + 1][S], Bk[K] = final (frame T - 1), Bk[k](i)
 * = logsumexp_j (LP_k[i][j] + Bk[k + 1](j)) + off_k, the absolute log beta
 * of frame k L. */
__kernel void gh_tp_bchain(__global const double *LP, __global const double *off, int K, int S,
                           __global const float *fin0, int sb, __global double *Bk) {
  __local double b[TP_MAX_S];
  __global const float *fin = fin0 + sb;
  const int i = get_local_id(0), ok = i < S;
  if (ok) { b[i] = (double)fin[i]; Bk[(long)K * S + i] = b[i]; }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = K - 1; k >= 0; --k) {
    double v = GH_NINF;
    if (ok && off[k] > GH_NINF) {
      __global const double *pk = LP + ((long)k * S + i) * S;
      double m = GH_NINF;
      for (int j = 0; j < S; ++j) m = fmax(m, pk[j] + b[j]);
      if (m > GH_NINF) {
        double sum = 0.0;
        for (int j = 0; j < S; ++j) sum += exp(pk[j] + b[j] - m);
        v = m + log(sum) + off[k];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (ok) { b[i] = v; Bk[(long)k * S + i] = v; }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* Chunk k = group (work-item j = state j): the forward over the chunk's
 * frames from Ak[k] (the reference's in_lse), log alpha into al [T][S];
 * then the backward from Bk[k + 1] with the reference's formulas (hmm_fb
 * above): gamma [T][S] (if want_gamma), and each arc's expected count over
 * the chunk's frames into xiK[k][a] (work-item i owns the arcs out of i).
 * Nothing when log P (*logP) is -inf. */
__kernel void gh_tp_fbpass(GRAPH_ARGS, int g, __global const float *ll, int P, long T, int L,
                           __global const double *Ak, __global const double *Bk, __global const double *logP,
                           __global double *al, int want_gamma, __global float *gm, __global double *xiK) {
  __local double buf[2 * TP_MAX_S];
  const int k = get_group_id(0), j = get_local_id(0), S = gS[g], A = in_off[io[g] + S], ok = j < S;
  const double LL = *logP;
  if (!(LL > GH_NINF)) return;
  __global const int *pdf = spdf + sb[g], *inoff = in_off + io[g], *src = arc_src + ab[g];
  __global const int *ooff = out_off + io[g], *oarc = out_arc + ab[g], *dst = arc_dst + ab[g];
  __global const float *lp = arc_logp + ab[g];
  __global double *xi = xiK + (long)k * A;
  const long t0 = 1 + (long)k * L, t1 = t0 + L < T ? t0 + L : T;
  for (int a = j; a < A; a += TP_MAX_S) xi[a] = 0.0;
  for (long t = t0; t < t1; ++t) { /* forward */
    __global const double *prev = t > t0 ? al + (t - 1) * S : Ak + (long)k * S;
    if (ok) {
      const double v = in_lse(j, inoff, src, lp, prev);
      al[t * S + j] = v > GH_NINF ? v + ll[t * P + pdf[j]] : GH_NINF;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  __local double *bnext = buf, *bcur = buf + TP_MAX_S;
  if (ok) bnext[j] = Bk[(long)(k + 1) * S + j];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long t = t1 - 1; t >= t0; --t) {
    if (ok && want_gamma) gm[t * S + j] = (float)exp(al[t * S + j] + bnext[j] - LL);
    __global const float *lt = ll + t * P;
    __global const double *ap = t > t0 ? al + (t - 1) * S : Ak + (long)k * S;
    if (ok) {
      const int i = j;
      double mx = GH_NINF;
      for (int q = ooff[i]; q < ooff[i + 1]; ++q) {
        const int a = oarc[q], d = dst[a];
        const double w = (double)lp[a] + lt[pdf[d]] + bnext[d];
        const double v = ap[i] + w - LL;
        if (v > GH_NINF) xi[a] += exp(v);
        mx = fmax(mx, w);
      }
      double sum = 0.0;
      if (mx > GH_NINF)
        for (int q = ooff[i]; q < ooff[i + 1]; ++q) {
          const int a = oarc[q], d = dst[a];
          sum += exp((double)lp[a] + lt[pdf[d]] + bnext[d] - mx);
        }
      bcur[i] = mx > GH_NINF ? mx + log(sum) : GH_NINF;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __local double *tmp = bnext; bnext = bcur; bcur = tmp;
  }
}

/* One work-group: the utterance's stats block st [2 S + A] = [gamma_0 |
 * the chunks' arc counts summed in chunk order | exits exp(alpha_{T-1}(j)
 * + final_j - log P)] and gamma of frame 0 (zeros when log P is -inf). */
__kernel void gh_tp_fbsum(__global const double *xiK, int K, int S, int A, __global const double *Ak,
                          __global const double *Bk, __global const float *fin0, int sb,
                          __global const double *logP, int want_gamma, __global float *gm, __global double *st) {
  __global const float *fin = fin0 + sb;
  const double LL = *logP;
  for (int e = get_local_id(0); e < 2 * S + A; e += get_local_size(0)) {
    double v = 0.0;
    if (LL > GH_NINF) {
      if (e < S) {
        v = exp(Ak[e] + Bk[e] - LL);
      } else if (e < S + A) {
        for (int k = 0; k < K; ++k) v += xiK[(long)k * A + (e - S)];
      } else {
        const int j = e - S - A;
        v = exp(Ak[(long)K * S + j] + (double)fin[j] - LL);
      }
    }
    st[e] = v;
    if (want_gamma && e < S) gm[e] = LL > GH_NINF ? (float)v : 0.0f;
  }
}
/* hmm-bw's pdf posteriors (backend.h gh_hmm_gamma_pairs, whose loops this
 * follows operation for operation; CUDA's k_fb_pairs) of a chunk's
 * utterances from their gamma (gh_hmm_fb's), one work-group per utterance,
 * a work-item per frame.  A state with gamma > 0 (NaN included, as the
 * host's test) starts its pdf's sum unless an earlier state of the same pdf
 * (sprev chain) has gamma > 0; the sum adds the later ones (snext chain) in
 * double, in state order.  write = 0: cnt[fo[u] + t] = the frame's pairs;
 * write = 1: the pairs (frame, pdf, weight bits) at out + 3 off[...]
 * (exclusive prefix sums of cnt over the chunk's frames), frame fbase +
 * fo[u] + t, pdf col[column] (or the column when use_col = 0). */
__kernel void gh_fb_pairs(__global const int *gS, __global const int *sb, __global const int *spdf,
                          __global const int *sprev, __global const int *snext, __global const int *ug,
                          __global const long *fo, __global const long *so, __global const double *loglik,
                          __global const float *gamma, int use_col, __global const int *col, long fbase,
                          double min_post, int write, __global long *cnt, __global const long *off,
                          __global int *out, int per_utt, __global const int *ucol) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], S = gS[g], s0 = sb[g];
  const int cbase = per_utt ? ucol[u] : 0; /* the utterance's map in col (< 0: none) */
  const long T = fo[u + 1] - fo[u];
  const int ok = loglik[u] > GH_NINF;
  for (long t = l; t < T; t += L) {
    __global const float *gr = gamma + so[u] + t * S;
    long n = 0, q = write ? off[fo[u] + t] : 0;
    for (int j = 0; ok && j < S; ++j) {
      const float v = gr[j];
      if (v <= 0.0f) continue;
      int first = 1;
      for (int k = sprev[s0 + j]; k >= 0; k = sprev[s0 + k])
        if (!(gr[k] <= 0.0f)) { first = 0; break; }
      if (!first) continue;
      double sum = 0.0;
      sum += v;
      for (int k = snext[s0 + j]; k >= 0; k = snext[s0 + k]) {
        const float x = gr[k];
        if (!(x <= 0.0f)) sum += x;
      }
      if (sum >= min_post && sum > 0) {
        const float w = (float)sum;
        if (w != 0.0f) {
          if (write) {
            out[3 * q] = (int)(fbase + fo[u] + t);
            out[3 * q + 1] = use_col && cbase >= 0 ? col[cbase + spdf[s0 + j]] : spdf[s0 + j];
            out[3 * q + 2] = as_int(w);
            ++q;
          } else {
            ++n;
          }
        }
      }
    }
    if (!write) cnt[fo[u] + t] = n;
  }
}

/* Viterbi training's pairs (opencl-hmm.c gh_ocl_hmm_estep_pairs, op
 * GH_HMM_ESTEP_VITERBI; the host's rule in gh_backend_hmm_estep_pairs, CUDA's
 * k_vit_pairs) of a chunk's utterances from their path (gh_hmm_viterbi's),
 * one work-group per utterance, a work-item per frame: one pair (frame, pdf
 * of the path's state, weight 1) per frame of an utterance with a complete
 * path (score > -inf and a state at its first frame); an utterance without
 * one gets score -inf (write = 1) and no pairs.  The arguments are
 * gh_fb_pairs's (sprev, snext, so and min_post unused), so that the host
 * sets both alike. */
__kernel void gh_vit_pairs(__global const int *gS, __global const int *sb, __global const int *spdf,
                           __global const int *sprev, __global const int *snext, __global const int *ug,
                           __global const long *fo, __global const long *so, __global double *score,
                           __global const int *path, int use_col, __global const int *col, long fbase,
                           double min_post, int write, __global long *cnt, __global const long *off,
                           __global int *out, int per_utt, __global const int *ucol) {
  const int u = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
  const int g = ug[u], s0 = sb[g];
  const int cbase = per_utt ? ucol[u] : 0;
  const long T = fo[u + 1] - fo[u];
  __global const int *pu = path + fo[u];
  const int ok = T > 0 && score[u] > GH_NINF && pu[0] >= 0;
  barrier(CLK_GLOBAL_MEM_FENCE); /* every work-item has read the score */
  if (write && !ok && T > 0 && l == 0) score[u] = GH_NINF;
  for (long t = l; t < T; t += L) {
    if (!write) {
      cnt[fo[u] + t] = ok ? 1 : 0;
    } else if (ok) {
      const long q = off[fo[u] + t];
      const int j = pu[t];
      out[3 * q] = (int)(fbase + fo[u] + t);
      out[3 * q + 1] = use_col && cbase >= 0 ? col[cbase + spdf[s0 + j]] : spdf[s0 + j];
      out[3 * q + 2] = as_int(1.0f);
    }
  }
}

/* The E-step data's pairs sorted by pdf on the device (opencl.c
 * gh_ocl_data_set_pairs_dev): a stable counting sort over chunks of ch
 * pairs, one work-item per chunk.  Pairs in: [frame, pdf, weight bits] x n.
 * gh_pairs_count: cnt[p nch + c] = chunk c's pairs of pdf p (cnt zeroed),
 * wpart[c] = the chunk's weights summed in order (double), *bad = the
 * smallest 1 + index of a pair outside 0 <= frame < T, 0 <= pdf < bound.
 * gh_pairs_scan (one work-item per pdf): cnt[p nch + c] = the pairs of pdf
 * p in chunks before c, tot[p] = all of them.  gh_pairs_scatter: each
 * chunk's pairs, in order, to base[p] + its running position. */
__kernel void gh_pairs_count(__global const int *in, long n, long ch, int nch, int T, int bound,
                             __global int *cnt, __global double *wpart, __global int *bad) {
  const int c = get_global_id(0);
  if (c >= nch) return;
  const long k0 = (long)c * ch, k1 = k0 + ch < n ? k0 + ch : n;
  double w = 0.0;
  for (long k = k0; k < k1; ++k) {
    const int f = in[3 * k], p = in[3 * k + 1];
    if (f < 0 || f >= T || p < 0 || p >= bound) { atomic_min(bad, (int)k + 1); continue; }
    cnt[(long)p * nch + c] += 1;
    w += (double)as_float(in[3 * k + 2]);
  }
  wpart[c] = w;
}
__kernel void gh_pairs_scan(__global int *cnt, int nch, int P, __global long *tot) {
  const int p = get_global_id(0);
  if (p >= P) return;
  long run = 0;
  for (int c = 0; c < nch; ++c) {
    const int v = cnt[(long)p * nch + c];
    cnt[(long)p * nch + c] = (int)run;
    run += v;
  }
  tot[p] = run;
}
__kernel void gh_pairs_scatter(__global const int *in, long n, long ch, int nch, __global int *cnt,
                               __global const long *base, __global int *frame, __global int *pdf,
                               __global float *weight) {
  const int c = get_global_id(0);
  if (c >= nch) return;
  const long k0 = (long)c * ch, k1 = k0 + ch < n ? k0 + ch : n;
  for (long k = k0; k < k1; ++k) {
    const int p = in[3 * k + 1];
    const long q = base[p] + cnt[(long)p * nch + c]++;
    frame[q] = in[3 * k];
    pdf[q] = p;
    weight[q] = as_float(in[3 * k + 2]);
  }
}

#endif
