/* test_comm.c -- drivers/train/comm.h.  As a plain process: every collective is
 * the identity.  Under `mpirun -np R` (test/bats/train-mpi.bats): the
 * deterministic sum equals ((b_0 + b_1) + ...) + b_{R-1} computed here in
 * rank order from every rank's buffer (regenerated locally from the seeds),
 * bit for bit, on every rank; gh_comm_sum_dd: 24 blocks with nearly
 * cancelling values, cut into R contiguous groups (one per rank), give
 * the bits of one process summing all blocks in double-double (the
 * grouping does not show, whatever R); broadcast, all-gather and the host
 * table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "train/comm.h"
#include "base/dd.h"

/* rank r's buffer: values of mixed sign and magnitude (so the order of
 * the additions matters) */
static void fill(double *b, size_t n, int r) {
  uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(r + 1);
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    const double u = (double)(s >> 11) / 9007199254740992.0;
    b[i] = (u - 0.5) * (i % 3 == 0 ? 1e8 : i % 3 == 1 ? 1.0 : 1e-6);
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_comm *c = gh_comm_init(&argc, &argv, "auto");
  const int R = gh_comm_size(c), me = gh_comm_rank(c);
  printf("# kind %s, rank %d of %d, local %d of %d, host %s\n", gh_comm_kind(c), me, R, gh_comm_local_rank(c),
         gh_comm_local_size(c), gh_comm_host(c, me));
  const size_t sizes[] = {0, 1, 2, 5, 1000, 100003};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    const size_t n = sizes[k];
    double *b = malloc(sizeof(double) * (n ? n : 1)), *want = malloc(sizeof(double) * (n ? n : 1)),
           *tmp = malloc(sizeof(double) * (n ? n : 1));
    fill(b, n, me);
    fill(want, n, 0);
    for (int r = 1; r < R; ++r) {
      fill(tmp, n, r);
      for (size_t i = 0; i < n; ++i) want[i] += tmp[i];
    }
    gh_comm_sum_f64(c, b, n);
    GH_TEST_OK(n == 0 || !memcmp(b, want, sizeof(double) * n), "rank %d: sum of %zu doubles over %d ranks in rank order, bitwise",
               me, n, R);
    /* every rank holds the same bytes */
    const uint64_t h = gh_hash64(b, sizeof(double) * n, GH_HASH64_INIT);
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)R);
    gh_comm_allgather(c, &h, sizeof h, all);
    int same = 1;
    for (int r = 0; r < R; ++r) same &= all[r] == h;
    GH_TEST_OK(same, "rank %d: all ranks hold the same %zu sums", me, n);
    free(all); free(b); free(want); free(tmp);
  }
  /* double-double: 24 blocks of n values, block k's values from seed k;
   * rank r holds blocks [24 r / R, 24 (r+1) / R) */
  {
    const size_t n = 10007;
    const int nb = 24;
    double *x = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n), *want = malloc(sizeof(double) * n);
    gh_dd_acc mine, one;
    gh_dd_acc_init(&mine, n);
    gh_dd_acc_init(&one, n);
    for (int k = 0; k < nb; ++k) {
      fill(x, n, k);
      /* odd blocks nearly cancel the even ones: sum |x| >> |sum x| */
      if (k % 2) {
        double *y = malloc(sizeof(double) * n);
        fill(y, n, k - 1);
        for (size_t i = 0; i < n; ++i) x[i] = -y[i] + x[i] * 1e-9;
        free(y);
      }
      gh_dd_acc_add(&one, x);
      if (k >= nb * me / R && k < nb * (me + 1) / R) gh_dd_acc_add(&mine, x);
    }
    gh_dd_acc_reduce(&one, NULL, want);
    gh_dd_acc_reduce(&mine, c, out);
    GH_TEST_OK(!memcmp(out, want, sizeof(double) * n),
               "rank %d: double-double sum of %d blocks over %d ranks = one process's, bitwise", me, nb, R);
    const uint64_t h = gh_hash64(out, sizeof(double) * n, GH_HASH64_INIT);
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)R);
    gh_comm_allgather(c, &h, sizeof h, all);
    int same = 1;
    for (int r = 0; r < R; ++r) same &= all[r] == h;
    GH_TEST_OK(same, "rank %d: all ranks hold the same double-double sums", me);
    /* in place (out = hi), and n = 0 */
    memcpy(out, mine.hi, sizeof(double) * n);
    gh_comm_sum_dd(c, out, mine.lo, n, out);
    GH_TEST_OK(!memcmp(out, want, sizeof(double) * n), "rank %d: gh_comm_sum_dd in place", me);
    gh_comm_sum_dd(c, NULL, NULL, 0, NULL);
    GH_TEST_OK(1, "rank %d: gh_comm_sum_dd of 0 values", me);
    free(all);
    gh_dd_acc_free(&mine);
    gh_dd_acc_free(&one);
    free(x); free(out); free(want);
  }
  int v = me == 0 ? 4242 : -1;
  gh_comm_bcast(c, &v, sizeof v, 0);
  GH_TEST_OK(v == 4242, "rank %d: broadcast from rank 0", me);
  int *ranks = malloc(sizeof(int) * (size_t)R);
  gh_comm_allgather(c, &me, sizeof me, ranks);
  int ordered = 1;
  for (int r = 0; r < R; ++r) ordered &= ranks[r] == r;
  GH_TEST_OK(ordered, "rank %d: all-gather in rank order", me);
  free(ranks);
  int hosts = 1;
  for (int r = 0; r < R; ++r) hosts &= strlen(gh_comm_host(c, r)) > 0;
  GH_TEST_OK(hosts, "rank %d: every rank's host is known", me);
  const char same_bytes[] = "build 1";
  gh_comm_check_same(c, same_bytes, sizeof same_bytes, "build id"); /* returns when equal */
  GH_TEST_OK(1, "rank %d: equal bytes pass gh_comm_check_same", me);
  gh_comm_barrier(c);
  gh_comm_finalize(c);
  return gh_test_done();
}
