/* bench-comm -- the cost of one reduction of the accumulators over R ranks
 * (MPI host path and NCCL path, for 1.8 MB and 225 MB accumulators;
 * bench/RESULTS.md C1, C2), as gmm-train pays it:
 *   host: acc_raw_get (device -> host, CUDA) + gh_comm_sum_f64 + acc_raw_set,
 *         or gh_comm_sum_f64 alone on backends without raw accumulators;
 *   nccl: gh_comm_sum_f64_device on the accumulators in device memory.
 * Shapes: "ubm" 256 full Gaussians at D = 40 (220,416 doubles, 1.76 MB) and
 * "am" 5000 pdfs x 16 full Gaussians at D = 36 (56.2 M doubles: 450 MB in
 * double, 225 MB in float).  Median of --iters calls, after one
 * warm-up.  Run under mpirun -np R (bench/train.sh does).
 * Usage: mpirun -np 2 bench-comm [--device=cuda] [--comm=auto] [--iters=10] [--shapes=ubm,am]
 * Prints rows "comm R=2 <path> <shape> bytes=B median_s=S GB/s=G". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "gmm/gmm.h"
#include "train/comm.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* P pdfs of G full Gaussians, dimension D, unit covariances, zero means */
static void make_model(gh_gmm_set *s, int32_t P, int32_t G, int32_t D) {
  memset(s, 0, sizeof *s);
  s->dim = D;
  s->num_pdfs = P;
  s->form = GH_SET_AM;
  s->pdfs = gh_calloc((size_t)P, sizeof(gh_gmm));
  for (int32_t p = 0; p < P; ++p) {
    gh_gmm *g = &s->pdfs[p];
    gh_gmm_init(g, GH_COV_FULL, G, D);
    const int64_t S = gh_gmm_cov_size(g);
    for (int32_t k = 0; k < G; ++k) {
      g->weights[k] = 1.0f / G;
      float *iv = g->inv_vars + (size_t)k * S;
      for (int32_t i = 0, q = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j, ++q) iv[q] = i == j ? 1.0f : 0.0f;
    }
    gh_gmm_compute_gconsts(g);
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *device = "cpu", *kind = "auto", *shapes = "ubm,am";
  int iters = 10;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--device=", 9)) device = argv[i] + 9;
    else if (!strncmp(argv[i], "--comm=", 7)) kind = argv[i] + 7;
    else if (!strncmp(argv[i], "--iters=", 8)) iters = atoi(argv[i] + 8);
    else if (!strncmp(argv[i], "--shapes=", 9)) shapes = argv[i] + 9;
    else gh_die("unknown argument %s", argv[i]);
  }
  if (iters < 1) iters = 1;
  gh_comm *c = gh_comm_init(&argc, &argv, !strcmp(kind, "nccl") ? "mpi" : kind);
  const int R = gh_comm_size(c), me = gh_comm_rank(c);
  if (me > 0) gh_verbose = -1;
  char dev[64];
  snprintf(dev, sizeof dev, "%s", device);
  if (!strcmp(device, "cuda") && gh_comm_local_size(c) > 1) {
    const int ng = gh_cuda_device_count();
    if (ng > 0) snprintf(dev, sizeof dev, "cuda:%d", gh_comm_local_rank(c) % ng);
  }
  gh_backend *b = gh_backend_create(dev);
  int nccl = 0;
  if (R > 1 && strcmp(kind, "mpi") && !strcmp(b->ops->name, "cuda")) {
    gh_cuda_thread_attach(b);
    nccl = gh_comm_nccl_start(c) == 0;
    if (!nccl && me == 0) printf("# NCCL not used: %s\n", gh_last_error());
  }
  double *t = gh_malloc(sizeof(double) * (size_t)iters);
  for (int k = 0; k < 2; ++k) {
    const char *name = k == 0 ? "ubm" : "am";
    if (!strstr(shapes, name)) continue;
    gh_gmm_set s;
    if (k == 0) make_model(&s, 1, 256, 40);
    else make_model(&s, 5000, 16, 36);
    gh_dev_model *m = b->ops->gmm->model_upload(b, &s);
    b->ops->gmm->acc_zero(b, m);
    const int raw = gh_backend_supports(b, GH_CAP_DIST);
    size_t n = 0;
    if (raw) n = (size_t)b->ops->dist->acc_raw_size(b, m);
    else
      for (int32_t p = 0; p < s.num_pdfs; ++p)
        n += (size_t)s.pdfs[p].num_gauss * (size_t)(1 + s.dim + gh_gmm_cov_size(&s.pdfs[p]));
    double *h = gh_calloc(n + 2, sizeof(double));
    for (int path = 0; path < 2; ++path) {
      if (path == 1 && !nccl) continue;
      for (int it = -1; it < iters; ++it) {
        gh_comm_barrier(c);
        const double t0 = gh_seconds();
        if (path == 0) {
          if (raw) b->ops->dist->acc_raw_get(b, m, h);
          gh_comm_sum_f64(c, h, n + 2);
          if (raw) b->ops->dist->acc_raw_set(b, m, h);
        } else {
          gh_comm_sum_f64_device(c, b->ops->nccl->acc_raw_device(b, m), n);
        }
        if (it >= 0) t[it] = gh_seconds() - t0;
      }
      qsort(t, (size_t)iters, sizeof(double), cmp_d);
      const double med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
      if (me == 0)
        printf("comm R=%d %s %s bytes=%.3g median_s=%.5f GB/s=%.2f%s\n", R, path ? "nccl" : "mpi-host", name,
               8.0 * (double)n, med, 8.0 * (double)n / med / 1e9,
               path == 0 && raw ? " (with the device<->host copies)" : "");
      fflush(stdout);
    }
    free(h);
    b->ops->gmm->model_free(b, m);
    gh_gmm_set_free(&s);
  }
  free(t);
  gh_backend_free(b);
  gh_comm_finalize(c);
  return 0;
}
