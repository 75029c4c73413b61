/* bench-score -- throughput of the fused GMM likelihood kernel (gmm-score).
 *
 * Random model of --pdfs x --gauss Gaussians of dimension --dim (full or
 * diagonal covariance), --frames random frames, --iters timed calls of
 * backend->loglikes after one warm-up call.  Prints frames/s, 1/RTF (at 100
 * frames per second of speech) and GFLOP/s with Vaněk et al.'s flop count
 * (Vaněk et al. 2012a, Sec. V: 5 per off-diagonal, 4 per diagonal element, 9 per
 * addLog; diag: 4 per dimension + 9; gh_gauss_flops in backend.h), both
 * end to end (host->device copies, kernel, device->host copy) and for the
 * kernel alone (backend->kernel_seconds).
 *
 * Then, unless --estep=0, the E-step (accumulate) with every frame paired
 * with 4 random pdfs.
 *
 * Max error: |got - ref| / (1 + |ref|) against the CPU backend (float64
 * arithmetic on the same float32 parameters) over the first --check frames.
 *
 * Usage: bench-score [--device=auto|cpu|cuda] [--type=full|diag] [--pdfs=5000]
 *        [--gauss=16] [--dim=36] [--frames=4096] [--iters=5] [--estep=1]
 *        [--check=16] [--precision=auto|fp32|tf32x3|tf32] [--write-model=FILE]
 * --write-model: write the random model (gconsts recomputed from the
 * parameters) to FILE as a binary GMM set and exit (bench/io.sh scores
 * archives with it through gmm-score-gpu).
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "bench-args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
/* Uniform in [0, 1) (xorshift64, fixed seed). */
static float urand(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return (float)((rs >> 40) * (1.0 / 16777216.0));
}


/* See the top of the file; exit status 0, dies on bad input or backend errors. */
int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *device = sarg(argc, argv, "--device", "auto");
  const int full = strcmp(sarg(argc, argv, "--type", "full"), "diag") != 0;
  const int P = (int)arg(argc, argv, "--pdfs", 5000), G = (int)arg(argc, argv, "--gauss", 16);
  const int D = (int)arg(argc, argv, "--dim", 36), T = (int)arg(argc, argv, "--frames", 4096);
  const int iters = (int)arg(argc, argv, "--iters", 5);
  const int estep = (int)arg(argc, argv, "--estep", 1);
  const int check = (int)arg(argc, argv, "--check", 16);
  int prec = 0;
  if (gh_precision_parse(sarg(argc, argv, "--precision", "auto"), &prec)) gh_die("bad --precision");

  /* Random but well-formed model: inverse covariance = diagonally dominant
   * symmetric matrix, means_invvars and gconsts of realistic size. */
  gh_gmm_set s;
  memset(&s, 0, sizeof s);
  s.dim = D; s.num_pdfs = P; s.form = GH_SET_AM;
  s.pdfs = gh_calloc(P, sizeof(gh_gmm));
  for (int p = 0; p < P; ++p) {
    gh_gmm *g = &s.pdfs[p];
    gh_gmm_init(g, full ? GH_COV_FULL : GH_COV_DIAG, G, D);
    for (int k = 0; k < G; ++k) {
      g->weights[k] = 1.0f / G;
      g->gconsts[k] = -30.0f - 10.0f * urand();
      for (int i = 0; i < D; ++i) g->means_invvars[(size_t)k * D + i] = urand() - 0.5f;
      if (full) {
        float *Pm = g->inv_vars + (size_t)k * gh_packed_size(D);
        for (int i = 0; i < D; ++i)
          for (int j = 0; j <= i; ++j) Pm[gh_packed_index(i, j)] = i == j ? 1.0f + urand() : 0.02f * (urand() - 0.5f);
      } else {
        for (int i = 0; i < D; ++i) g->inv_vars[(size_t)k * D + i] = 0.5f + urand();
      }
    }
  }
  const char *write_model = sarg(argc, argv, "--write-model", NULL);
  if (write_model) {
    for (int p = 0; p < P; ++p)
      if (gh_gmm_compute_gconsts(&s.pdfs[p])) gh_die("random model: pdf %d is not positive definite", p);
    gh_gmm_set_write(write_model, 1, &s);
    gh_gmm_set_free(&s);
    return 0;
  }
  float *X = gh_malloc(sizeof(float) * (size_t)T * D);
  for (size_t i = 0; i < (size_t)T * D; ++i) X[i] = 2.0f * (urand() - 0.5f);
  float *out = gh_malloc(sizeof(float) * (size_t)T * P);

  gh_backend *b = gh_backend_create(device);
  b->precision = prec;
  double t0 = gh_seconds();
  gh_dev_model *m = b->ops->gmm->model_upload(b, &s);
  double t_up = gh_seconds() - t0;
  b->ops->gmm->loglikes(b, m, X, T, out); /* warm-up */
  double k0 = b->kernel_seconds;
  t0 = gh_seconds();
  for (int it = 0; it < iters; ++it) b->ops->gmm->loglikes(b, m, X, T, out);
  double wall = (gh_seconds() - t0) / iters, kern = (b->kernel_seconds - k0) / iters;
  double checksum = 0;
  for (size_t i = 0; i < (size_t)T * P; ++i) checksum += out[i];
  /* max error vs the CPU backend (float64 arithmetic) on the first frames */
  double maxerr = 0;
  const int nchk = check < T ? check : T;
  if (nchk > 0) {
    gh_backend *cpu = gh_backend_create("cpu-ref");
    float *ref = gh_malloc(sizeof(float) * (size_t)nchk * P);
    gh_dev_model *mc = cpu->ops->gmm->model_upload(cpu, &s);
    cpu->ops->gmm->loglikes(cpu, mc, X, nchk, ref);
    cpu->ops->gmm->model_free(cpu, mc);
    for (size_t i = 0; i < (size_t)nchk * P; ++i) {
      double e = fabs((double)out[i] - ref[i]) / (1 + fabs(ref[i]));
      if (!(e <= maxerr)) maxerr = e;
    }
    free(ref);
    gh_backend_free(cpu);
  }
  double flops = (double)T * P * G * gh_gauss_flops(full ? GH_COV_FULL : GH_COV_DIAG, D);
  printf("bench-score %s: %s, %d pdfs x %d Gaussians, D=%d, %d frames per call, %d calls\n",
         b->device_name, full ? "full" : "diag", P, G, D, T, iters);
  printf("  model upload       %.3f s\n", t_up);
  printf("  end to end         %.2f ms/call  %.0f frames/s  1/RTF %.0f  %.1f GFLOP/s\n", wall * 1e3,
         T / wall, T / wall / 100, flops / wall * 1e-9);
  printf("  kernel only        %.2f ms/call  %.0f frames/s  1/RTF %.0f  %.1f GFLOP/s\n", kern * 1e3,
         T / kern, T / kern / 100, flops / kern * 1e-9);
  printf("  (checksum %.6g)  max err vs float64 (first %d frames) %.3g\n", checksum / ((double)T * P), nchk,
         maxerr);
  /* one summary line for bench/table.py */
  const char *var = getenv("GH_CUDA_SCORE");
  printf("score %s P=%d G=%d D=%d T=%d %s precision=%s variant=%s: kernel %.3f ms %.4g frames/s %.1f GFLOP/s; end to end %.3f ms %.4g frames/s; "
         "max err %.3g\n", full ? "full" : "diag", P, G, D, T, b->ops->name, sarg(argc, argv, "--precision", "auto"),
         var && *var ? var : "auto", kern * 1e3, T / kern, flops / kern * 1e-9, wall * 1e3,
         T / wall, maxerr);
  /* E-step: every frame paired with 4 random pdfs (weights 0.25). */
  if (!estep) goto done;
  int64_t np = (int64_t)T * 4;
  gh_frame_pdf *pairs = gh_malloc(sizeof(gh_frame_pdf) * np);
  for (int64_t k = 0; k < np; ++k) {
    pairs[k].frame = (int32_t)(k / 4);
    pairs[k].pdf = (int32_t)(urand() * P) % P;
    pairs[k].weight = 0.25f;
  }
  b->ops->gmm->acc_zero(b, m);
  gh_dev_data *dd = b->ops->gmm->data_upload(b, X, T, D, pairs, np);
  b->ops->gmm->accumulate(b, m, dd); /* warm-up */
  t0 = gh_seconds();
  double tot = 0;
  for (int it = 0; it < iters; ++it) tot += b->ops->gmm->accumulate(b, m, dd);
  double we = (gh_seconds() - t0) / iters;
  b->ops->gmm->data_free(b, dd);
  printf("  E-step accumulate  %.2f ms/call  %.0f pairs/s  (%lld pairs, loglike/pair %.4g)\n", we * 1e3,
         np / we, (long long)np, tot / iters / np);
  free(pairs);
done:
  b->ops->gmm->model_free(b, m);
  gh_backend_free(b);
  gh_gmm_set_free(&s);
  free(X); free(out);
  return 0;
}
