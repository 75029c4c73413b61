/* kmeans-cpu.c -- times the k-means distance op of the CPU implementation
 * (kernels/cpu/kmeans.c, backend.h kmeans_*) against the plain loop that
 * drivers/gmm/gmm-init.c ran before it (sum_d (z_d - c_d)^2 per frame and
 * centre), and checks that both give the same bits: Lloyd's assignment
 * step (all K centres) and k-means++'s update (one centre per call).
 * Built and run by bench/experiments/kmeans-cpu.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry/registry.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
  const long M = argc > 1 ? atol(argv[1]) : 30000;
  const int K = argc > 2 ? atoi(argv[2]) : 2048, D = argc > 3 ? atoi(argv[3]) : 40;
  const int reps = argc > 4 ? atoi(argv[4]) : 1;
  double *Z = malloc(sizeof(double) * M * D), *C = malloc(sizeof(double) * K * D);
  unsigned long long s = 88172645463325252ULL;
  for (long i = 0; i < M * D; ++i) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; Z[i] = (double)(s >> 11) / 9007199254740992.0; }
  for (int k = 0; k < K; ++k) memcpy(C + (long)k * D, Z + (long)(k * 7 % M) * D, sizeof(double) * D);
  double *d2a = malloc(sizeof(double) * M), *d2b = malloc(sizeof(double) * M);
  int *aa = malloc(sizeof(int) * M), *ab = malloc(sizeof(int) * M);
  /* plain loop (the previous gmm-init.c) */
  double t0 = now();
  for (int r = 0; r < reps; ++r)
    for (long i = 0; i < M; ++i) {
      int best = 0;
      double bd = 0;
      for (int k = 0; k < K; ++k) {
        double e = 0;
        for (int d = 0; d < D; ++d) { double t = Z[i * D + d] - C[(long)k * D + d]; e += t * t; }
        if (k == 0 || e < bd) { bd = e; best = k; }
      }
      d2a[i] = bd; aa[i] = best;
    }
  double t_plain = (now() - t0) / reps;
  gh_dev_kmeans *z = gh_backend_kmeans_upload(NULL, Z, M, D);
  t0 = now();
  for (int r = 0; r < reps; ++r) gh_backend_kmeans_nearest(NULL, z, C, 0, K, 1);
  double t_op = (now() - t0) / reps;
  gh_backend_kmeans_fetch(NULL, z, d2b, ab);
  int same = !memcmp(d2a, d2b, sizeof(double) * M) && !memcmp(aa, ab, sizeof(int) * M);
  printf("assignment M=%ld K=%d D=%d: plain loop %.4f s, kmeans op %.4f s (%.2fx), same bits: %s\n", M, K, D, t_plain,
         t_op, t_plain / t_op, same ? "yes" : "NO");
  /* k-means++ update: one centre per call, K calls */
  t0 = now();
  for (long i = 0; i < M; ++i) { d2a[i] = 1e300; aa[i] = -1; }
  for (int k = 0; k < K; ++k)
    for (long i = 0; i < M; ++i) {
      double e = 0;
      for (int d = 0; d < D; ++d) { double t = Z[i * D + d] - C[(long)k * D + d]; e += t * t; }
      if (k == 0 || e < d2a[i]) { d2a[i] = e; aa[i] = k; }
    }
  t_plain = now() - t0;
  t0 = now();
  for (int k = 0; k < K; ++k) {
    gh_backend_kmeans_nearest(NULL, z, C + (long)k * D, k, 1, k == 0);
    gh_backend_kmeans_fetch(NULL, z, d2b, NULL);
  }
  t_op = now() - t0;
  gh_backend_kmeans_fetch(NULL, z, d2b, ab);
  same = !memcmp(d2a, d2b, sizeof(double) * M) && !memcmp(aa, ab, sizeof(int) * M);
  printf("seeding updates M=%ld K=%d D=%d: plain loop %.4f s, kmeans op + fetch %.4f s (%.2fx), same bits: %s\n", M, K,
         D, t_plain, t_op, t_plain / t_op, same ? "yes" : "NO");
  gh_backend_kmeans_free(NULL, z);
  return 0;
}
