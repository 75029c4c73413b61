/* contract-errors.c -- how many pdfs of a model the numerical contract
 * (doc/reliability.md; kernels/gemm-forms.h gh_gemm_set_errors) keeps out
 * of the fused fp32 kernels: per pdf the largest estimated fp32 error of its
 * Gaussians' log-likelihoods, uncentred (the fused kernels' form: "nofused"
 * above GH_GEMM_MAX_ROW_ERROR, 5e-4 nats), centred at the model's centre
 * (the GEMM forms: "exact", evaluated in double, above it) and centred at
 * each pdf's own centre (what a per-pdf centring would give).  Prints one
 * line per form: pdfs over the budget, median and worst estimate.
 * Build (repository root, after make):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -Ikernels bench/experiments/contract-errors.c \
 *      build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a -fopenmp $(make -s print-ldlibs) -o build/contract-errors
 * Usage: build/contract-errors <model>   (bench/RESULTS.md M2:
 * a 250-pdf x 16 full model from gmm-init on bench/gen-feats.c data) */
#include <stdio.h>
#include <stdlib.h>

#include "base/gh-base.h"
#include "gemm-forms.h"
#include "gmm/gmm.h"

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *form, double *e, int P) {
  int over = 0;
  for (int p = 0; p < P; ++p) over += !(e[p] <= GH_GEMM_MAX_ROW_ERROR);
  qsort(e, (size_t)P, sizeof(double), cmp_d);
  printf("%-28s %d of %d pdfs over %.1e nats (median %.3g, worst %.3g)\n", form, over, P, GH_GEMM_MAX_ROW_ERROR,
         e[P / 2], e[P - 1]);
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: contract-errors <model>\n"); return 2; }
  gh_gmm_set s;
  gh_gmm_set_read(argv[1], &s);
  const int P = s.num_pdfs, D = s.dim;
  if (P <= 0) gh_die("%s: no pdfs", argv[1]);
  double *c = gh_calloc((size_t)D, sizeof(double)), *eu = gh_malloc(sizeof(double) * 3 * (size_t)P);
  double *ec = eu + P, *eo = ec + P;
  gh_gemm_model_centre(&s, c);
  gh_gemm_set_errors(&s, c, eu, ec, NULL, NULL);
  for (int p = 0; p < P; ++p) { /* each pdf centred at its own centre: a one-pdf set's */
    gh_gmm_set one = s;
    one.num_pdfs = 1;
    one.pdfs = &s.pdfs[p];
    gh_gemm_model_centre(&one, c);
    gh_gemm_set_errors(&one, c, NULL, &eo[p], NULL, NULL);
  }
  printf("%s: %d pdfs, dimension %d\n", argv[1], P, D);
  report("uncentred (fused kernels)", eu, P);
  report("at the model's centre", ec, P);
  report("at each pdf's own centre", eo, P);
  return 0;
}
