// order.cc -- libstdc++'s std::nth_element and std::priority_queue on the
// input order.c uses (see there): the reference for lib/tree/cluster.c.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <utility>
#include <vector>

struct E {
  float dist;
  int comp, p1, p2;
};
static bool operator>(const E &a, const E &b) { return a.dist > b.dist; }

int main() {
  unsigned s = 12345;
  for (int trial = 0; trial < 20000; ++trial) {
    int n = 1 + trial % 40, k = trial % n;
    std::vector<std::pair<float, int> > v(n);
    for (int i = 0; i < n; ++i) {
      s = s * 1103515245u + 12345u;
      v[i].first = (float)((s >> 16) % 7);
      v[i].second = i;
    }
    for (int i = 0; i < n; ++i) {
      s = s * 1103515245u + 12345u;
      int j = (int)((s >> 16) % (unsigned)n);
      std::swap(v[i].second, v[j].second);
    }
    std::nth_element(v.begin(), v.begin() + k, v.end());
    for (int i = 0; i < n; ++i) printf("%g:%d ", (double)v[i].first, v[i].second);
    printf("\n");
  }
  std::priority_queue<E, std::vector<E>, std::greater<E> > q;
  int id = 0;
  for (int step = 0; step < 200000; ++step) {
    s = s * 1103515245u + 12345u;
    if (q.empty() || (s >> 16) % 3 != 0) {
      s = s * 1103515245u + 12345u;
      E e = {(float)((s >> 16) % 5), 0, id++, 0};
      q.push(e);
    } else {
      printf("%g:%d\n", (double)q.top().dist, q.top().p1);
      q.pop();
    }
  }
  return 0;
}
