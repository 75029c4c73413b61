/* gselect.cl -- the OpenCL acc_gselect op's kernels (host:
 * opencl-gselect.c; the same steps as kernels/cuda/gselect.cu, reference
 * kernels/cpu/gselect.c): per-entry log-likelihoods, per-frame
 * normalisation, per-work-item statistics from the host plan, reduction of
 * each Gaussian's items in item order.  Double precision (cl_khr_fp64). */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define GS_MAXD 256
#define GS_TILE 32

/* Work item k takes the k-th entry in the plan's order (grouped by Gaussian):
 * ll = norm - 0.5 (x - mu)' P (x - mu) in double (kernels/cpu/gselect.c). */
__kernel void gh_gs_ll(int n, int D, int full, __global const float *X, __global const int *ent,
                       __global const int *efr_sorted, __global const int *sel, __global const double *norm,
                       __global const double *mu, __global const float *iv, __global double *ll) {
  const int k = get_global_id(0);
  if (k >= n) return;
  const int e = ent[k], g = sel[e];
  __global const float *x = X + (long)efr_sorted[k] * D;
  const double nm = norm[g];
  if (nm == -INFINITY) { ll[e] = nm; return; } /* dead Gaussian (gh_gselect_params) */
  __global const double *m = mu + (long)g * D;
  double q = 0.0;
  if (!full) {
    __global const float *p = iv + (long)g * D;
    for (int i = 0; i < D; ++i) {
      const double d = (double)x[i] - m[i];
      q += (double)p[i] * d * d;
    }
  } else {
    __global const float *P = iv + (long)g * D * (D + 1) / 2;
    for (int i = 0; i < D; ++i) {
      __global const float *row = P + (long)i * (i + 1) / 2;
      const double di = (double)x[i] - m[i];
      double t = 0.5 * (double)row[i] * di;
      for (int j = 0; j < i; ++j) t += (double)row[j] * ((double)x[j] - m[j]);
      q += 2.0 * di * t;
    }
  }
  ll[e] = nm - 0.5 * q;
}

__kernel void gh_gs_norm(int T, __global const int *off, __global const double *ll, __global float *post,
                         __global double *fll) {
  const int t = get_global_id(0);
  if (t >= T) return;
  const int j0 = off[t], j1 = off[t + 1];
  double mx = -INFINITY;
  for (int j = j0; j < j1; ++j) mx = fmax(mx, ll[j]);
  double lse = mx;
  if (isfinite(mx)) {
    double s = 0.0;
    for (int j = j0; j < j1; ++j) s += exp(ll[j] - mx);
    lse = mx + log(s);
  }
  fll[t] = lse;
  for (int j = j0; j < j1; ++j) post[j] = isfinite(lse) ? (float)exp(ll[j] - lse) : 0.0f;
}

/* One work-group per work item of the host plan; local size = LS. */
__kernel void gh_gs_stats(int D, int K, int use_w, __global const int *item_start, __global const int *item_count,
                          __global const int *ent, __global const int *efr_sorted, __global const float *X,
                          __global const float *post, __global const float *w, __global const short *ei,
                          __global const short *ej, __global double *part, __local float *xs, __local double *gs) {
  const int it = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  const int start = item_start[it], count = item_count[it];
  for (int e0 = 0; e0 < K; e0 += ls) {
    const int e = e0 + lid;
    const int i = e < K ? ei[e] : -1, j = e < K ? ej[e] : -1;
    double acc = 0.0;
    for (int r0 = 0; r0 < count; r0 += GS_TILE) {
      const int nt = min(GS_TILE, count - r0);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int idx = lid; idx < nt * D; idx += ls) {
        const int r = idx / D, d = idx - r * D;
        xs[r * D + d] = X[(long)efr_sorted[start + r0 + r] * D + d];
      }
      for (int r = lid; r < nt; r += ls) {
        const int k = start + r0 + r;
        gs[r] = (double)post[ent[k]] * (use_w ? (double)w[efr_sorted[k]] : 1.0);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (e < K) {
        if (i < 0) {
          for (int r = 0; r < nt; ++r) acc += gs[r];
        } else if (j < 0) {
          for (int r = 0; r < nt; ++r) acc += gs[r] * xs[r * D + i];
        } else {
          for (int r = 0; r < nt; ++r) acc += gs[r] * ((double)xs[r * D + i] * xs[r * D + j]);
        }
      }
    }
    if (e < K) part[(long)it * K + e] = acc;
  }
}

__kernel void gh_gs_reduce(int G, int K, __global const int *gitem, __global const double *part,
                           __global double *acc) {
  const long q = get_global_id(0);
  if (q >= (long)G * K) return;
  const int g = (int)(q / K), e = (int)(q - (long)g * K);
  double s = 0.0;
  for (int it = gitem[g]; it < gitem[g + 1]; ++it) s += part[(long)it * K + e];
  acc[q] += s;
}
#endif
