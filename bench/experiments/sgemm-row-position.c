/* sgemm-row-position.c -- does the BLAS's SGEMM give a row's results the
 * same bits wherever the row sits in the matrix?  C = A B^T with A [256 x K]
 * holding one random row 256 times and B [N x K] random: counts the rows of
 * C that differ from row 0, and compares row 0 of an A that holds the row
 * only at row 0 (rows 1.. zero).  kernels/cpu/cpu-blas.c's scoring relies on
 * the first; OpenBLAS 0.3.21's AVX2 kernels (Haswell, Zen) break it
 * (bench/RESULTS.md D39: 126 of 255 rows differ at N = 16, K =
 * 27 on an AMD EPYC; OPENBLAS_CORETYPE=Sandybridge: none).
 * Build: cc -O2 bench/experiments/sgemm-row-position.c -o build/sgemm-row-position -lblas
 * Usage: build/sgemm-row-position N K   (e.g. 16 27: 16 diagonal Gaussians, D = 13) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: sgemm-row-position N K\n"); return 2; }
  const int M = 256, N = atoi(argv[1]), K = atoi(argv[2]);
  if (N <= 0 || K <= 0) { fprintf(stderr, "sgemm-row-position: N and K must be positive\n"); return 2; }
  float *A = calloc((size_t)M * K, 4), *B = malloc((size_t)N * K * 4), *C = malloc((size_t)M * N * 4);
  float *C1 = malloc((size_t)M * N * 4), *row = malloc((size_t)K * 4);
  srand(1);
  for (int i = 0; i < N * K; ++i) B[i] = rand() / (float)RAND_MAX - 0.5f;
  for (int i = 0; i < K; ++i) row[i] = (rand() / (float)RAND_MAX - 0.5f) * 10;
  for (int r = 0; r < M; ++r) memcpy(A + (size_t)r * K, row, (size_t)K * 4);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
  int ndiff = 0, first = -1;
  for (int r = 1; r < M; ++r)
    if (memcmp(C + (size_t)r * N, C, (size_t)N * 4)) { ++ndiff; if (first < 0) first = r; }
  memset(A, 0, (size_t)M * K * 4);
  memcpy(A, row, (size_t)K * 4);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, B, K, 0.0f, C1, N);
  printf("N=%d K=%d: %d of %d copies of one row differ from row 0 (first: row %d); row 0 alone %s\n", N, K, ndiff,
         M - 1, first, memcmp(C1, C, (size_t)N * 4) ? "differs" : "is the same");
  return 0;
}
