/* cuda-pool.cu -- the cache of device allocations for model buffers
 * (cuda-pool.h). */
#include <pthread.h>
#include <string.h>
extern "C" {
#include "base/gh-base.h"
#include "cuda-check.h"
#include "cuda-pool.h"
}

#define POOL_BYTES ((size_t)256 << 20)
#define POOL_BLOCKS 1024

struct PoolBlk {
  void *p;
  size_t n;
};
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static PoolBlk *g_live, *g_kept;        /* handed out; kept (oldest first) */
static size_t g_nlive, g_caplive, g_nkept, g_capkept, g_kept_bytes;

static void blk_push(PoolBlk **a, size_t *n, size_t *cap, PoolBlk b) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    *a = (PoolBlk *)gh_realloc(*a, *cap * sizeof(PoolBlk));
  }
  (*a)[(*n)++] = b;
}

void *gh_cuda_pool_alloc(size_t bytes) {
  bytes = (bytes + 255) & ~(size_t)255;
  if (!bytes) bytes = 256;
  pthread_mutex_lock(&g_mu);
  size_t best = g_nkept;
  for (size_t i = 0; i < g_nkept; ++i)
    if (g_kept[i].n >= bytes && g_kept[i].n <= 2 * bytes && (best == g_nkept || g_kept[i].n < g_kept[best].n)) best = i;
  PoolBlk b = {NULL, bytes};
  if (best < g_nkept) {
    b = g_kept[best];
    memmove(g_kept + best, g_kept + best + 1, (g_nkept - best - 1) * sizeof(PoolBlk));
    --g_nkept;
    g_kept_bytes -= b.n;
  } else {
    CK(cudaMalloc(&b.p, bytes));
  }
  blk_push(&g_live, &g_nlive, &g_caplive, b);
  pthread_mutex_unlock(&g_mu);
  return b.p;
}

void gh_cuda_pool_free(void *p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  size_t i = g_nlive;
  while (i > 0 && g_live[i - 1].p != p) --i; /* the newest first */
  if (i == 0) {
    pthread_mutex_unlock(&g_mu);
    cudaFree(p);
    return;
  }
  const PoolBlk b = g_live[i - 1];
  g_live[i - 1] = g_live[--g_nlive];
  blk_push(&g_kept, &g_nkept, &g_capkept, b);
  g_kept_bytes += b.n;
  size_t drop = 0;
  while (drop < g_nkept && (g_kept_bytes > POOL_BYTES || g_nkept - drop > POOL_BLOCKS)) {
    cudaFree(g_kept[drop].p);
    g_kept_bytes -= g_kept[drop].n;
    ++drop;
  }
  if (drop) {
    memmove(g_kept, g_kept + drop, (g_nkept - drop) * sizeof(PoolBlk));
    g_nkept -= drop;
  }
  pthread_mutex_unlock(&g_mu);
}

void gh_cuda_pool_trim(void) {
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nkept; ++i) cudaFree(g_kept[i].p);
  g_nkept = 0;
  g_kept_bytes = 0;
  pthread_mutex_unlock(&g_mu);
}
