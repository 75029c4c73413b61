/* order.c -- prints the element orders lib/tree/cluster.c's copies of
 * libstdc++'s algorithms give (std::nth_element on pair<float, int>, the
 * std::priority_queue of compartmentalized clustering, equal keys
 * included); order.cc prints what libstdc++ itself gives on the same
 * input, and test/bats/tree.bats compares the two.  Built by the test:
 * the file includes cluster.c to reach its static functions. */
#include "tree/cluster.c"
#include <stdio.h>

int main(void) {
  unsigned s = 12345;
  for (int trial = 0; trial < 20000; ++trial) {
    int n = 1 + trial % 40, k = trial % n;
    dist_clust v[64];
    for (int i = 0; i < n; ++i) {
      s = s * 1103515245u + 12345u;
      v[i].d = (float)((s >> 16) % 7);
      v[i].c = i;
    }
    for (int i = 0; i < n; ++i) {
      s = s * 1103515245u + 12345u;
      int j = (int)((s >> 16) % (unsigned)n), t = v[i].c;
      v[i].c = v[j].c;
      v[j].c = t;
    }
    dc_nth_element(v, v + k, v + n);
    for (int i = 0; i < n; ++i) printf("%g:%d ", (double)v[i].d, v[i].c);
    printf("\n");
  }
  cb_heap q = {0};
  int id = 0;
  for (int step = 0; step < 200000; ++step) {
    s = s * 1103515245u + 12345u;
    if (q.n == 0 || (s >> 16) % 3 != 0) {
      s = s * 1103515245u + 12345u;
      cb_heap_push(&q, (cb_elem){(float)((s >> 16) % 5), 0, id++, 0});
    } else {
      printf("%g:%d\n", (double)q.a[0].dist, q.a[0].p1);
      cb_heap_pop(&q);
    }
  }
  free(q.a);
  return 0;
}
