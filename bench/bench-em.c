/* bench-em -- time of one EM iteration of a global GMM, as gmm-est-gpu runs
 * it (drivers/train/dist-em.h gh_dist_em, one rank, the frames one resident block; the E-step and
 * the M-step on the device where the backend has one (CUDA), else on the
 * host, lib/gmm/gmm-est.c; GH_MSTEP=host forces the host), on the
 * data of the PyTorch peer (bench/gemm_em_peer.py): N frames of dimension D,
 * x = randn + 2 * (one of 64 random centres); M Gaussians initialised at M
 * random frames with unit covariance and equal weights.  2 warm-up
 * iterations, then --iters timed ones (wall time per iteration, the
 * per-iteration time that gmm-est-gpu logs).  Also the error of one E-step
 * against the CPU backend (float64 arithmetic) on the first --check frames:
 * max |got - ref| / max(1, max |ref|) per statistic array, and the relative
 * error of the total log-likelihood.
 *
 * GFLOP/s: the GEMM count of the expanded-feature forms, 4 N M E (two
 * GEMMs of 2 N M E flops; E = 1 + D + D(D+1)/2 full, 1 + 2D diag), which is
 * what the PyTorch peer executes; 3xTF32 executes three times that on the
 * tensor cores.
 *
 * Usage: bench-em [--device=cuda] [--type=full|diag] [--frames=150000]
 *        [--dim=19] [--gauss=16] [--iters=3] [--check=16384] [--precision=auto]
 * Prints one line: "em <type> N D M: <ms>/iter <frames/s> <GFLOP/s> err ...".
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "bench-args.h"
#include "train/comm.h"
#include "train/dist-em.h"
#include "train/gmm-data.h"
#include "train/shard.h"
#include "gmm/gmm-est.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Max over the set of |a - r| / max(1, max |r|), per statistic array. */
static double accs_err(const gh_accs_set *a, const gh_accs_set *r) {
  double worst = 0;
  for (int p = 0; p < r->num_pdfs; ++p) {
    const gh_gmm_accs *x = &a->pdfs[p], *y = &r->pdfs[p];
    int64_t G = y->num_gauss, D = y->dim, S = y->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    struct { const double *g, *r; int64_t n; } arr[3] = {
        {x->occupancy, y->occupancy, G}, {x->mean_accs, y->mean_accs, G * D}, {x->var_accs, y->var_accs, G * S}};
    for (int k = 0; k < 3; ++k) {
      double sc = 1;
      for (int64_t i = 0; i < arr[k].n; ++i) if (fabs(arr[k].r[i]) > sc) sc = fabs(arr[k].r[i]);
      for (int64_t i = 0; i < arr[k].n; ++i) {
        double e = fabs(arr[k].g[i] - arr[k].r[i]) / sc;
        if (!(e <= worst)) worst = e;
      }
    }
  }
  return worst;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *device = sarg(argc, argv, "--device", "cuda");
  const int full = strcmp(sarg(argc, argv, "--type", "full"), "diag") != 0;
  const int N = (int)arg(argc, argv, "--frames", 150000), D = (int)arg(argc, argv, "--dim", 19);
  const int M = (int)arg(argc, argv, "--gauss", 16), iters = (int)arg(argc, argv, "--iters", 3);
  const int check = (int)arg(argc, argv, "--check", 16384);
  int prec = 0;
  if (gh_precision_parse(sarg(argc, argv, "--precision", "auto"), &prec)) gh_die("bad --precision");
  gh_rng rng;
  gh_rng_seed(&rng, 1);
  /* data */
  gh_data d;
  memset(&d, 0, sizeof d);
  d.dim = D; d.num_frames = N; d.num_pairs = N; d.num_utts = 1; d.max_pdf = 0; d.total_weight = N;
  d.feats = gh_malloc(sizeof(float) * (size_t)N * D);
  d.pairs = gh_malloc(sizeof(gh_frame_pdf) * (size_t)N);
  double *cent = gh_malloc(sizeof(double) * 64 * D);
  for (int i = 0; i < 64 * D; ++i) cent[i] = 2.0 * gh_rng_gauss(&rng);
  for (int t = 0; t < N; ++t) {
    const double *c = cent + (size_t)(gh_rng_u64(&rng) % 64) * D;
    for (int i = 0; i < D; ++i) d.feats[(size_t)t * D + i] = (float)(gh_rng_gauss(&rng) + c[i]);
    d.pairs[t].frame = t; d.pairs[t].pdf = 0; d.pairs[t].weight = 1.0f;
  }
  /* model */
  gh_gmm_set s;
  memset(&s, 0, sizeof s);
  s.dim = D; s.num_pdfs = 1; s.form = GH_SET_GLOBAL;
  s.pdfs = gh_calloc(1, sizeof(gh_gmm));
  gh_gmm_init(&s.pdfs[0], full ? GH_COV_FULL : GH_COV_DIAG, M, D);
  {
    const int64_t S = full ? (int64_t)D * (D + 1) / 2 : D;
    double *w = gh_malloc(sizeof(double) * M), *mu = gh_malloc(sizeof(double) * M * D);
    double *cv = gh_calloc((size_t)M * S, sizeof(double));
    for (int g = 0; g < M; ++g) {
      w[g] = 1.0 / M;
      const float *x = d.feats + (size_t)(gh_rng_u64(&rng) % N) * D;
      for (int i = 0; i < D; ++i) {
        mu[(size_t)g * D + i] = x[i];
        if (full) cv[(size_t)g * S + (int64_t)i * (i + 1) / 2 + i] = 1.0;
        else cv[(size_t)g * S + i] = 1.0;
      }
    }
    if (gh_gmm_set_moments(&s.pdfs[0], w, mu, cv)) gh_die("initial model: %s", gh_last_error());
    free(w); free(mu); free(cv);
  }
  gh_backend *b = gh_backend_create(device);
  b->precision = prec;
  if (!getenv("GH_BLAS_THREADS")) gh_host_blas_serial(); /* as gmm-est-gpu */
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  /* Keep all M Gaussians, as the PyTorch peer does: Kaldi's default removes
   * low-occupancy ones, which at few frames per Gaussian shrank the model
   * (and the work) after the warm-up iterations. */
  eo.remove_low_count_gaussians = 0;
  /* error of one E-step vs the CPU backend on the first `check` frames */
  double err = 0, terr = 0;
  if (check > 0) {
    gh_data sub = d;
    sub.num_frames = sub.num_pairs = check < N ? check : N;
    sub.total_weight = sub.num_frames;
    gh_backend *cpu = gh_backend_create("cpu-ref");
    gh_accs_set a, r;
    gh_data_estep(b, &s, &sub, &a, NULL);
    gh_data_estep(cpu, &s, &sub, &r, NULL);
    err = accs_err(&a, &r);
    terr = fabs(a.total_loglike - r.total_loglike) / (1 + fabs(r.total_loglike));
    gh_accs_free(&a); gh_accs_free(&r);
    gh_backend_free(cpu);
  }
  /* M-step error: one device M-step (where the backend has one) against
   * the host M-step (lib/gmm/gmm-est.c, double) from the same accumulators, max
   * |got - ref| / (1 + |ref|) over every float parameter. */
  double merr = -1;
  gh_comm *comm = gh_comm_single();
  gh_shard_data sd;
  gh_shard_data_from_data(&sd, &d, "bench");
  if (check > 0 && gh_backend_supports(b, GH_CAP_MSTEP)) {
    gh_gmm_set dev, host;
    memset(&dev, 0, sizeof dev); memset(&host, 0, sizeof host);
    gh_gmm_set_copy(&dev, &s); gh_gmm_set_copy(&host, &s);
    gh_dist_em e1, e2;
    gh_est_stats st;
    gh_dist_em_init(&e1, comm, b, &dev, &sd, 0);
    gh_dist_em_estep(&e1, NULL);
    gh_dist_em_mstep(&e1, &eo, NULL, &st);
    gh_dist_em_sync(&e1);
    gh_dist_em_init(&e2, comm, b, &host, &sd, 0);
    e2.device_mstep = 0;
    gh_dist_em_estep(&e2, NULL);
    gh_dist_em_mstep(&e2, &eo, NULL, &st);
    merr = e1.mstep_on_device ? gh_gmm_set_max_diff(&dev, &host) : -1;
    gh_dist_em_free(&e1); gh_dist_em_free(&e2);
    gh_gmm_set_free(&dev); gh_gmm_set_free(&host);
  }
  gh_dist_em em;
  gh_dist_em_init(&em, comm, b, &s, &sd, 0);
  double tsum = 0, avg = 0, esum = 0;
  for (int it = 0; it < 2 + iters; ++it) {
    double t0 = gh_seconds();
    avg = gh_dist_em_estep(&em, NULL);
    gh_est_stats st;
    memset(&st, 0, sizeof st);
    gh_dist_em_mstep(&em, &eo, NULL, &st);
    if (it >= 2) { tsum += gh_seconds() - t0; esum += em.estep_seconds + em.reduce_seconds; }
  }
  gh_dist_em_sync(&em);
  const double t = tsum / iters;
  const double E = full ? 1 + D + D * (D + 1) / 2.0 : 1 + 2.0 * D;
  const char *var = getenv("GH_CUDA_ESTEP"), *mv = getenv("GH_MSTEP");
  char vs[64];
  snprintf(vs, sizeof vs, "%s%s", var && *var ? var : "auto", mv && !strcmp(mv, "host") ? ",host-mstep" : "");
  char es[32] = "-", ts[32] = "-", ms[32] = "-"; /* "-": not checked (--check=0, or no device M-step) */
  if (check > 0) { snprintf(es, sizeof es, "%.2g", err); snprintf(ts, sizeof ts, "%.2g", terr); }
  if (merr >= 0) snprintf(ms, sizeof ms, "%.2g", merr);
  printf("em %s N=%d D=%d M=%d %s precision=%s variant=%s: %.3f ms/iter (E-step %.3f, M-step %.3f)  %.3g frames/s  "
         "%.1f GFLOP/s (GEMM count)  stats err %s  total err %s  M-step %s err %s  avg loglike %.4f  Gaussians after %d\n",
         full ? "full" : "diag", N, D, M, b->device_name, sarg(argc, argv, "--precision", "auto"),
         vs, t * 1e3, esum / iters * 1e3, (t - esum / iters) * 1e3,
         N / t, 4.0 * N * M * E / t * 1e-9, es, ts, em.mstep_on_device ? "device" : "host", ms, avg,
         s.pdfs[0].num_gauss);
  gh_dist_em_free(&em);
  gh_backend_free(b);
  gh_gmm_set_free(&s);
  gh_shard_data_free(&sd);
  gh_comm_finalize(comm);
  free(cent);
  return 0;
}
