/* nccl.cu -- NCCL by dlopen for the deterministic device reduction of
 * drivers/train/comm.c (gh-nccl.h).  Only the few NCCL entry points used are
 * declared here (the ABI of nccl.h since NCCL 2.7: ncclUniqueId is 128
 * bytes, ncclFloat64 = 8, grouped point-to-point calls). */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern "C" {
#include "base/env.h"
#include "base/gh-base.h"
}
#include "gh-nccl.h"

typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[GH_NCCL_ID_BYTES]; } ncclUniqueId;
typedef int ncclResult_t; /* ncclSuccess = 0 */
enum { NCCL_FLOAT64 = 8 };

static struct {
  int tried, ok;
  char err[512];
  ncclResult_t (*get_id)(ncclUniqueId *);
  ncclResult_t (*init_rank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*destroy)(ncclComm_t);
  ncclResult_t (*abort_)(ncclComm_t);
  ncclResult_t (*send)(const void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*recv)(void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*allgather)(const void *, void *, size_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*group_start)(void);
  ncclResult_t (*group_end)(void);
  const char *(*error_string)(ncclResult_t);
} nc;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

static void *try_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }

/* libnccl.so.2: $GH_NCCL_LIB (file or directory), the loader's path, then
 * python's site-packages (pip's nvidia-nccl-cu1x wheels). */
static void *open_nccl(void) {
  const char *env = gh_env_str("GH_NCCL_LIB");
  void *h = NULL;
  if (env) {
    struct stat st;
    if (stat(env, &st) == 0 && S_ISDIR(st.st_mode)) {
      char p[4096];
      snprintf(p, sizeof p, "%s/libnccl.so.2", env);
      h = try_open(p);
    } else {
      h = try_open(env);
    }
    if (h) return h;
  }
  if ((h = try_open("libnccl.so.2")) || (h = try_open("libnccl.so"))) return h;
  const char *pats[] = {"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                        "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                        "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                        "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                        "/root/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                        "/usr/local/lib/python3*/dist-packages/torch/lib/libnccl.so.2"};
  for (size_t i = 0; i < sizeof pats / sizeof pats[0] && !h; ++i) {
    glob_t g;
    if (glob(pats[i], 0, NULL, &g) == 0)
      for (size_t k = 0; k < g.gl_pathc && !h; ++k) h = try_open(g.gl_pathv[k]);
    globfree(&g);
  }
  return h;
}

extern "C" int gh_nccl_load(void) {
  pthread_mutex_lock(&load_mu);
  if (!nc.tried) {
    nc.tried = 1;
    void *h = open_nccl();
    if (!h) {
      snprintf(nc.err, sizeof nc.err, "libnccl.so.2 not found (set GH_NCCL_LIB to the library or its directory)");
    } else {
#define SYM(f, name) (*(void **)&nc.f = dlsym(h, name))
      SYM(get_id, "ncclGetUniqueId");
      SYM(init_rank, "ncclCommInitRank");
      SYM(destroy, "ncclCommDestroy");
      SYM(abort_, "ncclCommAbort");
      SYM(send, "ncclSend");
      SYM(recv, "ncclRecv");
      SYM(allgather, "ncclAllGather");
      SYM(group_start, "ncclGroupStart");
      SYM(group_end, "ncclGroupEnd");
      SYM(error_string, "ncclGetErrorString");
#undef SYM
      nc.ok = nc.get_id && nc.init_rank && nc.destroy && nc.abort_ && nc.send && nc.recv && nc.allgather &&
              nc.group_start && nc.group_end && nc.error_string;
      if (!nc.ok) snprintf(nc.err, sizeof nc.err, "libnccl lacks ncclSend/ncclRecv (NCCL < 2.7?)");
    }
  }
  const int ok = nc.ok;
  if (!ok) gh_set_error("%s", nc.err);
  pthread_mutex_unlock(&load_mu);
  return ok ? 0 : -1;
}

typedef struct {
  ncclComm_t comm;
  int R, rank;
  cudaStream_t s;
  double *parts;  /* [R x L] this rank's slice from every rank, then [L] its sum */
  double *gath;   /* [R x L] the gathered slices */
  size_t cap;     /* L of the buffers */
  double *dd;     /* [(2R + 1) x L] gh_nccl_sum_dd: this rank's slice of every rank's hi, then lo, then its sum */
  double *gath_dd; /* [R x L] gh_nccl_sum_dd's gathered slices */
  size_t cap_dd;  /* L of dd and gath_dd */
} gh_nccl;

extern "C" int gh_nccl_get_id(void *id) {
  if (gh_nccl_load() != 0) return -1;
  ncclUniqueId u;
  ncclResult_t r = nc.get_id(&u);
  if (r != 0) { gh_set_error("ncclGetUniqueId: %s", nc.error_string(r)); return -1; }
  memcpy(id, &u, sizeof u);
  return 0;
}

extern "C" void *gh_nccl_init(int nranks, const void *id, int rank) {
  if (gh_nccl_load() != 0) return NULL;
  gh_nccl *g = (gh_nccl *)gh_calloc(1, sizeof *g);
  g->R = nranks;
  g->rank = rank;
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  ncclResult_t r = nc.init_rank(&g->comm, nranks, u, rank);
  if (r != 0) {
    gh_set_error("ncclCommInitRank (rank %d of %d): %s", rank, nranks, nc.error_string(r));
    free(g);
    return NULL;
  }
  if (cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking) != cudaSuccess) {
    gh_set_error("cudaStreamCreate: %s", cudaGetErrorString(cudaGetLastError()));
    nc.destroy(g->comm);
    free(g);
    return NULL;
  }
  return g;
}

/* out[i] = ((p[0][i] + p[1][i]) + ...) + p[R-1][i], i < len, in rank order
 * (part r at p + r L). */
__global__ void k_sum_parts(const double *__restrict__ p, int R, size_t L, size_t len, double *__restrict__ out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len; i += (size_t)gridDim.x * blockDim.x) {
    double s = p[i];
    for (int r = 1; r < R; ++r) s += p[(size_t)r * L + i];
    out[i] = s;
  }
}

static void nccl_check(ncclResult_t r, const char *what) {
  if (r != 0) gh_die("NCCL %s: %s", what, nc.error_string(r));
}
static void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) gh_die("NCCL reduction, %s: %s", what, cudaGetErrorString(e));
}

static size_t slice_at(size_t n, int r, int R) { return (size_t)((unsigned __int128)n * (unsigned)r / (unsigned)R); }

extern "C" void gh_nccl_sum_f64(void *comm, double *dbuf, size_t n) {
  gh_nccl *g = (gh_nccl *)comm;
  const int R = g->R, me = g->rank;
  if (R == 1 || n == 0) return;
  size_t L = 0; /* the longest slice */
  for (int r = 0; r < R; ++r) {
    const size_t len = slice_at(n, r + 1, R) - slice_at(n, r, R);
    if (len > L) L = len;
  }
  if (L > g->cap) {
    cudaFree(g->parts);
    cudaFree(g->gath);
    g->parts = g->gath = NULL;
    cuda_check(cudaMalloc((void **)&g->parts, sizeof(double) * (size_t)(R + 1) * L), "scratch");
    cuda_check(cudaMalloc((void **)&g->gath, sizeof(double) * (size_t)R * L), "scratch");
    g->cap = L;
  }
  /* the caller's buffer was written on the legacy default stream */
  cuda_check(cudaDeviceSynchronize(), "before the reduction");
  const size_t lo = slice_at(n, me, R), len = slice_at(n, me + 1, R) - lo;
  nccl_check(nc.group_start(), "ncclGroupStart");
  for (int r = 0; r < R; ++r) {
    const size_t rlo = slice_at(n, r, R), rlen = slice_at(n, r + 1, R) - rlo;
    if (rlen) nccl_check(nc.send(dbuf + rlo, rlen, NCCL_FLOAT64, r, g->comm, g->s), "ncclSend");
    if (len) nccl_check(nc.recv(g->parts + (size_t)r * L, len, NCCL_FLOAT64, r, g->comm, g->s), "ncclRecv");
  }
  nccl_check(nc.group_end(), "ncclGroupEnd");
  double *mine = g->parts + (size_t)R * L; /* padded to L with zeros */
  cuda_check(cudaMemsetAsync(mine, 0, sizeof(double) * L, g->s), "memset");
  if (len) {
    const unsigned blocks = (unsigned)((len + 255) / 256 < 4096 ? (len + 255) / 256 : 4096);
    k_sum_parts<<<blocks, 256, 0, g->s>>>(g->parts, R, L, len, mine);
    cuda_check(cudaGetLastError(), "sum kernel");
  }
  nccl_check(nc.allgather(mine, g->gath, L, NCCL_FLOAT64, g->comm, g->s), "ncclAllGather");
  for (int r = 0; r < R; ++r) {
    const size_t rlo = slice_at(n, r, R), rlen = slice_at(n, r + 1, R) - rlo;
    if (rlen)
      cuda_check(cudaMemcpyAsync(dbuf + rlo, g->gath + (size_t)r * L, sizeof(double) * rlen,
                                 cudaMemcpyDeviceToDevice, g->s), "copy back");
  }
  cuda_check(cudaStreamSynchronize(g->s), "the reduction");
}

/* lib/base/dd.h on the device: TwoSum and the accurate pair addition
 * (no multiplications, so nothing for the compiler to contract). */
__device__ __forceinline__ void d_two_sum(double a, double b, double &s, double &e) {
  const double t = a + b, bb = t - a;
  e = (a - (t - bb)) + (b - bb);
  s = t;
}

/* out[i] = round(sum over r in rank order of (hi_r[i], lo_r[i])) in
 * double-double (gh_dd_add_dd), i < len; part r of hi at h + r L, of lo at
 * l + r L. */
__global__ void k_sum_parts_dd(const double *__restrict__ h, const double *__restrict__ l, int R, size_t L,
                               size_t len, double *__restrict__ out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len; i += (size_t)gridDim.x * blockDim.x) {
    double hi = h[i], lo = l[i];
    for (int r = 1; r < R; ++r) {
      double s1, s2, t1, t2;
      d_two_sum(hi, h[(size_t)r * L + i], s1, s2);
      d_two_sum(lo, l[(size_t)r * L + i], t1, t2);
      s2 += t1;
      d_two_sum(s1, s2, s1, s2);
      s2 += t2;
      d_two_sum(s1, s2, hi, lo);
    }
    out[i] = hi + lo;
  }
}

/* hi + lo rounded, for R = 1 */
__global__ void k_round_dd(const double *__restrict__ h, const double *__restrict__ l, size_t n,
                           double *__restrict__ out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = h[i] + l[i];
}

extern "C" void gh_nccl_sum_dd(void *comm, const double *dhi, const double *dlo, double *dout, size_t n) {
  gh_nccl *g = (gh_nccl *)comm;
  const int R = g->R, me = g->rank;
  if (n == 0) return;
  cuda_check(cudaDeviceSynchronize(), "before the reduction");
  if (R == 1) {
    const unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    k_round_dd<<<blocks, 256, 0, g->s>>>(dhi, dlo, n, dout);
    cuda_check(cudaGetLastError(), "round kernel");
    cuda_check(cudaStreamSynchronize(g->s), "the reduction");
    return;
  }
  size_t L = 0; /* the longest slice */
  for (int r = 0; r < R; ++r) {
    const size_t len = slice_at(n, r + 1, R) - slice_at(n, r, R);
    if (len > L) L = len;
  }
  if (L > g->cap_dd) {
    cudaFree(g->dd);
    cudaFree(g->gath_dd);
    g->dd = g->gath_dd = NULL;
    cuda_check(cudaMalloc((void **)&g->dd, sizeof(double) * (2 * (size_t)R + 1) * L), "scratch");
    cuda_check(cudaMalloc((void **)&g->gath_dd, sizeof(double) * (size_t)R * L), "scratch");
    g->cap_dd = L;
  }
  const size_t lo = slice_at(n, me, R), len = slice_at(n, me + 1, R) - lo;
  double *ph = g->dd, *pl = g->dd + (size_t)R * L;
  nccl_check(nc.group_start(), "ncclGroupStart");
  for (int r = 0; r < R; ++r) {
    const size_t rlo = slice_at(n, r, R), rlen = slice_at(n, r + 1, R) - rlo;
    if (rlen) {
      nccl_check(nc.send(dhi + rlo, rlen, NCCL_FLOAT64, r, g->comm, g->s), "ncclSend");
      nccl_check(nc.send(dlo + rlo, rlen, NCCL_FLOAT64, r, g->comm, g->s), "ncclSend");
    }
    if (len) {
      nccl_check(nc.recv(ph + (size_t)r * L, len, NCCL_FLOAT64, r, g->comm, g->s), "ncclRecv");
      nccl_check(nc.recv(pl + (size_t)r * L, len, NCCL_FLOAT64, r, g->comm, g->s), "ncclRecv");
    }
  }
  nccl_check(nc.group_end(), "ncclGroupEnd");
  double *mine = g->dd + 2 * (size_t)R * L; /* padded to L with zeros */
  cuda_check(cudaMemsetAsync(mine, 0, sizeof(double) * L, g->s), "memset");
  if (len) {
    const unsigned blocks = (unsigned)((len + 255) / 256 < 4096 ? (len + 255) / 256 : 4096);
    k_sum_parts_dd<<<blocks, 256, 0, g->s>>>(ph, pl, R, L, len, mine);
    cuda_check(cudaGetLastError(), "sum kernel");
  }
  nccl_check(nc.allgather(mine, g->gath_dd, L, NCCL_FLOAT64, g->comm, g->s), "ncclAllGather");
  for (int r = 0; r < R; ++r) {
    const size_t rlo = slice_at(n, r, R), rlen = slice_at(n, r + 1, R) - rlo;
    if (rlen)
      cuda_check(cudaMemcpyAsync(dout + rlo, g->gath_dd + (size_t)r * L, sizeof(double) * rlen,
                                 cudaMemcpyDeviceToDevice, g->s), "copy back");
  }
  cuda_check(cudaStreamSynchronize(g->s), "the reduction");
}

extern "C" void gh_nccl_abort(void *comm) {
  gh_nccl *g = (gh_nccl *)comm;
  if (g && g->comm && nc.abort_) nc.abort_(g->comm);
}

extern "C" void gh_nccl_free(void *comm) {
  gh_nccl *g = (gh_nccl *)comm;
  if (!g) return;
  if (g->comm) nc.destroy(g->comm);
  cudaFree(g->parts);
  cudaFree(g->gath);
  cudaFree(g->dd);
  cudaFree(g->gath_dd);
  if (g->s) cudaStreamDestroy(g->s);
  free(g);
}
