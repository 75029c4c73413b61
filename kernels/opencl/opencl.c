/* opencl.c -- the OpenCL backend: device selection, the program binary cache,
 * and the GMM ops (loglikes, E-step) of kernels/backend.h.  HMM ops:
 * opencl-hmm.c.  Kernels (OpenCL C 1.2, embedded as a string): gmm.cl,
 * hmm.cl.  Design: doc/kernels.md ("OpenCL").
 *
 * Scoring is GEMM-shaped (the expanded-feature form of gmm.cl): for a chunk
 * of frames, Phi = phi(X) [T x K] (gh_expand), S = Phi W' [T x Gtot] (CLBlast
 * SGEMM where the build has CLBlast, else our gh_sgemm_nt; one GEMM for the
 * diagonal and one for the full-covariance Gaussians, writing disjoint
 * column ranges of S), then a per-pdf log-sum-exp (gh_lse_narrow, or
 * gh_lse_wide when a pdf has more than 64 Gaussians).  The E-step computes
 * Gaussian posteriors per (frame, pdf) pair (gh_estep_post) and the
 * statistics sum gamma phi(x) in double (gh_estep_stats + gh_estep_reduce);
 * it needs cl_khr_fp64 and dies with a clear message on a device without it.
 */
#include "opencl.h"
#include "gemm-forms.h"

#include "base/env.h"
#include "base/gh-base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GH_HAVE_CLBLAST
#include <clblast_c.h>
#endif

/* ---------------- errors and small helpers ---------------- */

static const char *cl_err_name(cl_int e) {
  switch (e) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver / ICD registered)";
    default: return "OpenCL error";
  }
}

void gh_ocl_check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) gh_die("opencl: %s: %s (%d)", what, cl_err_name(err), (int)err);
}

cl_mem gh_ocl_buffer(ocl_ctx *c, size_t bytes, const void *host, const char *what) {
  cl_int err;
  /* Buffers are at least 8 bytes (OpenCL refuses size 0), but only the
   * caller's `bytes` are copied from host: the host array may be smaller
   * than the rounded-up buffer (found by make test-asan). */
  size_t alloc = bytes < 8 ? 8 : bytes;
  if (alloc > c->max_alloc)
    gh_die("opencl: %s: %zu bytes exceed the device's largest buffer (%llu bytes)", what, alloc,
           (unsigned long long)c->max_alloc);
  int copy = host && alloc == bytes;
  cl_mem m = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE | (copy ? CL_MEM_COPY_HOST_PTR : 0), alloc,
                            copy ? (void *)host : NULL, &err);
  gh_ocl_check(err, what);
  if (host && !copy) gh_ocl_write(c, m, 0, bytes, host);
  return m;
}

void gh_ocl_write(ocl_ctx *c, cl_mem m, size_t off, size_t bytes, const void *host) {
  if (bytes) gh_ocl_check(clEnqueueWriteBuffer(c->q, m, CL_TRUE, off, bytes, host, 0, NULL, NULL), "host -> device copy");
}

void gh_ocl_read(ocl_ctx *c, cl_mem m, size_t off, size_t bytes, void *host) {
  if (bytes) gh_ocl_check(clEnqueueReadBuffer(c->q, m, CL_TRUE, off, bytes, host, 0, NULL, NULL), "device -> host copy");
}

void gh_ocl_arg(cl_kernel k, cl_uint i, size_t size, const void *value) {
  cl_int err = clSetKernelArg(k, i, size, value);
  if (err != CL_SUCCESS) {
    char name[64] = "?";
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
    gh_die("opencl: kernel %s argument %u: %s (%d)", name, i, cl_err_name(err), (int)err);
  }
}

void gh_ocl_launch(ocl_ctx *c, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local,
                   const char *what) {
  size_t g[3];
  for (cl_uint i = 0; i < dims; ++i) {
    g[i] = global[i] ? global[i] : 1;
    if (local) g[i] = (g[i] + local[i] - 1) / local[i] * local[i];
  }
  gh_ocl_check(clEnqueueNDRangeKernel(c->q, k, dims, NULL, g, local, 0, NULL, NULL), what);
}

void gh_ocl_release(cl_mem m) {
  if (m) clReleaseMemObject(m);
}


/* ---------------- devices ---------------- */

/* All platforms; *n = 0 (and NULL) when no ICD / platform is installed. */
static cl_platform_id *platforms(cl_uint *n) {
  *n = 0;
  if (clGetPlatformIDs(0, NULL, n) != CL_SUCCESS || *n == 0) { *n = 0; return NULL; }
  cl_platform_id *p = gh_calloc(*n, sizeof *p);
  if (clGetPlatformIDs(*n, p, NULL) != CL_SUCCESS) { free(p); *n = 0; return NULL; }
  return p;
}

/* Devices of platform pl of the given type; *n = 0 if none. */
static cl_device_id *devices(cl_platform_id pl, cl_device_type type, cl_uint *n) {
  *n = 0;
  if (clGetDeviceIDs(pl, type, 0, NULL, n) != CL_SUCCESS || *n == 0) { *n = 0; return NULL; }
  cl_device_id *d = gh_calloc(*n, sizeof *d);
  if (clGetDeviceIDs(pl, type, *n, d, NULL) != CL_SUCCESS) { free(d); *n = 0; return NULL; }
  return d;
}

int gh_opencl_gpu_count(void) {
  cl_uint np, nd;
  int count = 0;
  cl_platform_id *pl = platforms(&np);
  for (cl_uint i = 0; i < np; ++i) {
    free(devices(pl[i], CL_DEVICE_TYPE_GPU, &nd));
    count += (int)nd;
  }
  free(pl);
  if (!np) gh_set_error("no OpenCL platform (no ICD registered in /etc/OpenCL/vendors)");
  return count;
}

static void str_info(cl_device_id d, cl_device_info what, char *buf, size_t n) {
  buf[0] = 0;
  clGetDeviceInfo(d, what, n, buf, NULL);
  buf[n - 1] = 0;
}

/* ---------------- program binary cache ---------------- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; ++i) { h ^= s[i]; h *= 1099511628211ULL; }
  return h;
}

/* Cache folder: $XDG_CACHE_HOME/gmmhmm or ~/.cache/gmmhmm (created); NULL if
 * neither is set or GH_OPENCL_CACHE=0. */
static char *cache_dir(void) {
  static const char *const words[] = {"0", "1", NULL};
  if (gh_env_word("GH_OPENCL_CACHE", 1, words) == 0) return NULL;
  const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char buf[4096];
  if (x && *x) snprintf(buf, sizeof buf, "%s/gmmhmm", x);
  else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/gmmhmm", home);
  else return NULL;
  /* mkdir -p */
  for (char *s = buf + 1; *s; ++s)
    if (*s == '/') { *s = 0; mkdir(buf, 0755); *s = '/'; }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) return NULL;
  return gh_strdup(buf);
}

/* Cache file layout: "GHCLBIN1", key (u64), size (u64), fnv1a of the binary
 * (u64), binary.  A file that does not match in any field is ignored. */
static const char CACHE_MAGIC[8] = {'G', 'H', 'C', 'L', 'B', 'I', 'N', '1'};

static unsigned char *cache_load(const char *path, uint64_t key, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char magic[8];
  uint64_t hdr[3];
  unsigned char *bin = NULL;
  if (fread(magic, 1, 8, f) == 8 && !memcmp(magic, CACHE_MAGIC, 8) && fread(hdr, 8, 3, f) == 3 &&
      hdr[0] == key && hdr[1] > 0 && hdr[1] < (1ULL << 31)) {
    bin = gh_malloc(hdr[1]);
    if (fread(bin, 1, hdr[1], f) != hdr[1] || fnv1a(14695981039346656037ULL, bin, hdr[1]) != hdr[2]) {
      free(bin);
      bin = NULL;
    } else {
      *size = hdr[1];
    }
  }
  fclose(f);
  if (!bin) gh_vlog(1, "opencl: ignoring invalid program cache entry %s", path);
  return bin;
}

/* Writes the entry atomically (temp file in the same folder + rename); a
 * failure only costs the next run a compile. */
static void cache_store(const char *path, uint64_t key, const unsigned char *bin, size_t size) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "wb");
  if (!f) { close(fd); unlink(tmp); return; }
  uint64_t hdr[3] = {key, size, fnv1a(14695981039346656037ULL, bin, size)};
  int ok = fwrite(CACHE_MAGIC, 1, 8, f) == 8 && fwrite(hdr, 8, 3, f) == 3 && fwrite(bin, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

static void die_build_log(cl_program p, cl_device_id d, cl_int err) {
  char log[2048] = "";
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
  log[sizeof log - 1] = 0;
  for (char *s = log; *s; ++s) if (*s == '\n') *s = ' ';
  gh_die("opencl: building the kernels failed (%s): %.600s", cl_err_name(err), log);
}

/* The program for c->device: from the cache when a valid entry exists
 * (keyed by platform, device, driver version, options and source hash),
 * else compiled from the embedded source and stored. */
static cl_program build_program(ocl_ctx *c, const char *opts) {
  char dev[256], drv[256], plat[256], ver[256];
  str_info(c->device, CL_DEVICE_NAME, dev, sizeof dev);
  str_info(c->device, CL_DRIVER_VERSION, drv, sizeof drv);
  str_info(c->device, CL_DEVICE_VERSION, ver, sizeof ver);
  plat[0] = 0;
  clGetPlatformInfo(c->platform, CL_PLATFORM_VERSION, sizeof plat, plat, NULL);
  plat[sizeof plat - 1] = 0;
  uint64_t key = 14695981039346656037ULL;
  const char *parts[] = {dev, drv, ver, plat, opts, gh_opencl_source};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) key = fnv1a(key, parts[i], strlen(parts[i]) + 1);
  char *dir = cache_dir(), path[4096] = "";
  if (dir) {
    char safe[64];
    size_t n = 0;
    for (const char *s = dev; *s && n < sizeof safe - 1; ++s)
      safe[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ? *s : '_';
    safe[n] = 0;
    snprintf(path, sizeof path, "%s/opencl-%s-%016llx.bin", dir, safe, (unsigned long long)key);
    free(dir);
  }
  cl_int err;
  double t0 = gh_seconds();
  size_t size = 0;
  unsigned char *bin = path[0] ? cache_load(path, key, &size) : NULL;
  if (bin) {
    const unsigned char *bins[1] = {bin};
    cl_int st;
    cl_program p = clCreateProgramWithBinary(c->ctx, 1, &c->device, &size, bins, &st, &err);
    free(bin);
    if (err == CL_SUCCESS && st == CL_SUCCESS && clBuildProgram(p, 1, &c->device, opts, NULL, NULL) == CL_SUCCESS) {
      gh_vlog(1, "opencl: kernels from the cache %s (%.3f s)", path, gh_seconds() - t0);
      return p;
    }
    if (err == CL_SUCCESS) clReleaseProgram(p);
    gh_vlog(1, "opencl: cache entry %s rejected by the driver; recompiling", path);
  }
  const char *src = gh_opencl_source;
  cl_program p = clCreateProgramWithSource(c->ctx, 1, &src, NULL, &err);
  gh_ocl_check(err, "create program");
  err = clBuildProgram(p, 1, &c->device, opts, NULL, NULL);
  if (err != CL_SUCCESS) die_build_log(p, c->device, err);
  gh_vlog(1, "opencl: kernels compiled in %.3f s", gh_seconds() - t0);
  if (path[0] && clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) == CL_SUCCESS && size) {
    bin = gh_malloc(size);
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
      cache_store(path, key, bin, size);
      gh_vlog(1, "opencl: kernels cached in %s", path);
    }
    free(bin);
  }
  return p;
}

/* ---------------- backend ---------------- */

static cl_kernel kernel(ocl_ctx *c, const char *name) {
  cl_int err;
  cl_kernel k = clCreateKernel(c->prog, name, &err);
  if (err != CL_SUCCESS) gh_die("opencl: kernel %s: %s (%d)", name, cl_err_name(err), (int)err);
  return k;
}

static void ocl_free(gh_backend *b) {
  ocl_ctx *c = b->ctx;
  cl_kernel ks[] = {c->k_expand, c->k_gemm, c->k_lse_narrow, c->k_lse_wide, c->k_post, c->k_stats,
                    c->k_reduce, c->k_fwd_log, c->k_fwd_scaled, c->k_viterbi, c->k_fb, c->k_fb_pairs, c->k_vit_pairs,
                    c->k_expand_pairs, c->k_softmax, c->k_stats_tn, c->k_gemm128, c->k_mstep_diag, c->k_mstep_full, c->k_mstep_occ, c->k_acc_commit, c->k_kmeans, c->k_mstep_relfloor,
                    c->k_tp_chunk, c->k_tp_combine, c->k_tp_vchain, c->k_tp_vpass, c->k_tp_vtrace, c->k_tp_vpath,
                    c->k_tp_bchain, c->k_tp_fbpass, c->k_tp_fbsum, c->k_pairs_count, c->k_pairs_scan,
                    c->k_pairs_scatter, c->k_align, c->k_white};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i) if (ks[i]) clReleaseKernel(ks[i]);
  if (c->prog) clReleaseProgram(c->prog);
  if (c->q) clReleaseCommandQueue(c->q);
  if (c->ctx) clReleaseContext(c->ctx);
  if (c->host) gh_backend_free(c->host);
  free(c);
  free(b);
}

/* ---------------- GMM model ---------------- */


/* Element map of phi (gmm.cl): emap[e] = (a, b), phi_e = x_a x_b, x_{-1} = 1. */
static cl_int2 *make_emap(int32_t D, int full, int32_t *K) {
  *K = gh_gemm_depth(D, full);
  cl_int2 *m = gh_malloc(*K * sizeof *m);
  m[0].s[0] = m[0].s[1] = -1;
  for (int32_t i = 0; i < D; ++i) { m[1 + i].s[0] = i; m[1 + i].s[1] = -1; }
  if (full) {
    for (int32_t i = 0; i < D; ++i)
      for (int32_t j = 0; j <= i; ++j) { m[1 + D + i * (i + 1) / 2 + j].s[0] = i; m[1 + D + i * (i + 1) / 2 + j].s[1] = j; }
  } else {
    for (int32_t i = 0; i < D; ++i) { m[1 + D + i].s[0] = i; m[1 + D + i].s[1] = i; }
  }
  return m;
}

/* Grows scratch buffer *m to at least bytes. */
static void ensure(ocl_ctx *c, cl_mem *m, size_t *cap, size_t bytes, const char *what) {
  if (*m && *cap >= bytes) return;
  gh_ocl_release(*m);
  *m = gh_ocl_buffer(c, bytes, NULL, what);
  *cap = bytes;
}

/* The host backend that evaluates models the fp32 kernels cannot (created
 * on first use). */
static gh_backend *host_backend(ocl_ctx *c) {
  if (!c->host) c->host = gh_backend_blas_new();
  return c->host;
}

/* The whitened form for a model handed to the host (doc/reliability.md, "The
 * whitened form"): when the device has fp64, D <= 128 (gmm.cl
 * GH_WHITE_MAX_D), every pdf is full and every Gaussian's gh_white_error
 * is within gh_white_max_error(), its means, norms and float Cholesky
 * factors go to the device and loglikes scores there (m->white); the
 * E-step and M-step stay on the host model.  Not on a CPU device
 * (CL_DEVICE_TYPE_CPU: PoCL's kernel scored the Arabic 64-full model at
 * 1.3-1.5e4 frames/s, the host cpu backend at 7-9e4, bench/RESULTS.md W5).
 * GH_OPENCL_WHITE=0|1 turns it off / on whatever the device. */
static void white_upload(ocl_ctx *c, ocl_model *m, const gh_gmm_set *s) {
  const int32_t D = s->dim, P = s->num_pdfs;
  static const char *const words[] = {"0", "1", NULL};
  int want = gh_env_word("GH_OPENCL_WHITE", -1, words);
  if (want < 0) {
    cl_device_type dtype = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof dtype, &dtype, NULL);
    want = !(dtype & CL_DEVICE_TYPE_CPU);
  }
  if (!want || !c->fp64 || !c->k_white || D > 128 || D < 1 || P < 1) return;
  int64_t Gt = 0;
  for (int32_t p = 0; p < P; ++p) {
    if (s->pdfs[p].type != GH_COV_FULL) return;
    Gt += s->pdfs[p].num_gauss;
  }
  if (Gt < 1 || Gt > INT32_MAX / 2) return;
  /* the factors (Gt D^2 floats: model B's 80,000 x 36^2 are 415 MB) in one buffer of at most half
   * the device's largest allocation; a larger model stays on the host as before */
  if ((double)Gt * D * D * sizeof(float) > (double)c->max_alloc / 2) return;
  const double wmax = gh_white_max_error();
  double *mu = gh_malloc(sizeof(double) * (size_t)Gt * D), *norm = gh_malloc(sizeof(double) * (size_t)Gt);
  float *L = gh_malloc(sizeof(float) * (size_t)Gt * D * D);
  double *work = gh_malloc(sizeof(double) * (size_t)gh_gauss_work_size(D));
  int32_t *goff = gh_calloc(P + 1, sizeof(int32_t));
  m->gcnt = gh_calloc(P + 1, sizeof(int32_t));
  int ok = 1;
  double worst = 0.0;
  for (int32_t p = 0, w = 0; p < P && ok; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    goff[p] = w;
    m->gcnt[p] = g->num_gauss;
    if (g->num_gauss > m->wmaxG) m->wmaxG = g->num_gauss;
    for (int32_t k = 0; k < g->num_gauss; ++k, ++w) {
      gh_gauss_info info;
      gh_gauss_exact(g, k, mu + (size_t)w * D, &info, work);
      norm[w] = info.norm;
      const double e = gh_white_error(g, k, &info, work);
      if (!(e <= wmax)) { ok = 0; break; }
      if (e > worst) worst = e;
      gh_white_factor(D, work, L + (size_t)w * D * D);
    }
  }
  if (ok) {
    m->wmu = gh_ocl_buffer(c, sizeof(double) * (size_t)Gt * D, mu, "model upload");
    m->wnorm = gh_ocl_buffer(c, sizeof(double) * (size_t)Gt, norm, "model upload");
    m->wL = gh_ocl_buffer(c, sizeof(float) * (size_t)Gt * D * D, L, "model upload");
    m->goff = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), goff, "model upload");
    m->gcnt_d = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), m->gcnt, "model upload");
    m->wG = (int32_t)Gt;
    m->white = 1;
    gh_log("opencl: scoring on the device in the whitened form instead (its estimate: up to %.3g nats); the "
           "E-step on the host", worst);
  }
  free(mu); free(norm); free(L); free(work); free(goff);
}

/* loglikes of a whitened model (white_upload): gh_white_ll per chunk of
 * frames, then the pdfs' log-sum-exps (gh_lse_narrow / gh_lse_wide). */
static void white_loglikes(gh_backend *b, ocl_model *m, const float *X, int32_t T, float *out) {
  ocl_ctx *c = b->ctx;
  const int32_t D = m->D, P = m->P, Gt = m->wG;
  if (T <= 0) return;
  int64_t Tc = c->chunk / (Gt > P ? Gt : P);
  if (Tc < 1) Tc = 1;
  if (Tc > T) Tc = T;
  ensure(c, &m->X, &m->X_cap, Tc * D * sizeof(float), "frames");
  ensure(c, &m->S, &m->S_cap, Tc * Gt * sizeof(float), "Gaussian loglikes");
  ensure(c, &m->out, &m->out_cap, Tc * P * sizeof(float), "loglikes");
  const int wide = m->wmaxG > 64;
  for (int64_t t0 = 0; t0 < T; t0 += Tc) {
    int n = (int)(T - t0 < Tc ? T - t0 : Tc);
    gh_ocl_write(c, m->X, 0, (size_t)n * D * sizeof(float), X + t0 * D);
    double k0 = gh_seconds();
    cl_kernel kw = c->k_white;
    ARG(kw, 0, n); ARG(kw, 1, D); ARG(kw, 2, Gt); ARG(kw, 3, m->X); ARG(kw, 4, m->wmu); ARG(kw, 5, m->wnorm);
    ARG(kw, 6, m->wL); ARG(kw, 7, m->S);
    size_t gw[2] = {(size_t)Gt, (size_t)n}, lw[2] = {16, 1};
    gh_ocl_launch(c, kw, 2, gw, lw, "whitened loglikes");
    cl_kernel k = wide ? c->k_lse_wide : c->k_lse_narrow;
    ARG(k, 0, n); ARG(k, 1, P); ARG(k, 2, Gt); ARG(k, 3, m->S); ARG(k, 4, m->goff); ARG(k, 5, m->gcnt_d);
    ARG(k, 6, m->out);
    if (wide) {
      size_t gl[1] = {(size_t)n * P * 64}, lo[1] = {64};
      gh_ocl_launch(c, k, 1, gl, lo, "log-sum-exp");
    } else {
      size_t gl[2] = {(size_t)P, (size_t)n}, lo[2] = {64, 1};
      gh_ocl_launch(c, k, 2, gl, lo, "log-sum-exp");
    }
    gh_ocl_check(clFinish(c->q), "loglikes");
    b->kernel_seconds += gh_seconds() - k0;
    gh_ocl_read(c, m->out, 0, (size_t)n * P * sizeof(float), out + t0 * P);
  }
}

static gh_dev_model *ocl_model_upload(gh_backend *b, const gh_gmm_set *s) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = gh_calloc(1, sizeof *m);
  const int32_t D = s->dim, P = s->num_pdfs;
  m->D = D; m->P = P;
  /* Numerical contract: uncentred rows when they are accurate enough (the
   * device M-step needs them), else centred at the model centre (rounded to
   * float: the kernels subtract it in float, exactly for frames near it),
   * else the whole model on the host cpu backend. */
  m->c = gh_calloc(D > 0 ? D : 1, sizeof(double));
  if (gh_gemm_set_row_error(s, NULL) > GH_GEMM_MAX_ROW_ERROR) {
    gh_gemm_model_centre(s, m->c);
    for (int32_t i = 0; i < D; ++i) m->c[i] = (float)m->c[i];
    m->centred = 1;
    m->orig = gh_calloc(1, sizeof *m->orig);
    gh_gmm_set_copy(m->orig, s);
    const double err = gh_gemm_set_row_error(s, m->c);
    if (err > GH_GEMM_MAX_ROW_ERROR) {
      gh_log("opencl: the model's fp32 GEMM form could err by %.3g nats (Gaussians far from the model "
             "centre in their own standard deviations, extreme variances or correlations); it is "
             "evaluated on the host in double instead (doc/reliability.md)", err);
      gh_backend *h = host_backend(c);
      m->host_m = h->ops->gmm->model_upload(h, s);
      white_upload(c, m, s);
      return (gh_dev_model *)m;
    }
  }
  {
    float *cf = gh_malloc(sizeof(float) * (D > 0 ? D : 1));
    for (int32_t i = 0; i < D; ++i) cf[i] = (float)m->c[i];
    m->ctr = gh_ocl_buffer(c, (size_t)(D > 0 ? D : 1) * sizeof(float), cf, "model upload");
    free(cf);
  }
  m->gcnt = gh_calloc(P + 1, sizeof(int32_t));
  m->ptype = gh_calloc(P + 1, sizeof(int32_t));
  m->wrow = gh_calloc(P + 1, sizeof(int32_t));
  int32_t *goff = gh_calloc(P + 1, sizeof(int32_t));
  for (int32_t p = 0; p < P; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    if (g->dim != D) gh_die("model upload: pdf %d has dimension %d, the set has %d", p, g->dim, D);
    m->gcnt[p] = g->num_gauss;
    m->ptype[p] = g->type == GH_COV_FULL;
    if (m->ptype[p]) { m->wrow[p] = m->Gf; m->Gf += g->num_gauss; }
    else { m->wrow[p] = m->Gd; m->Gd += g->num_gauss; }
    if (g->num_gauss > m->maxG) m->maxG = g->num_gauss;
  }
  for (int32_t p = 0; p < P; ++p) goff[p] = m->ptype[p] ? m->Gd + m->wrow[p] : m->wrow[p];
  cl_int2 *ed = make_emap(D, 0, &m->Kd), *ef = make_emap(D, 1, &m->Kf);
  float *Wd = gh_calloc((size_t)m->Gd * m->Kd + 1, sizeof(float));
  float *Wf = gh_calloc((size_t)m->Gf * m->Kf + 1, sizeof(float));
  int32_t *gpd = gh_calloc(m->Gd + 1, sizeof(int32_t)), *gld = gh_calloc(m->Gd + 1, sizeof(int32_t));
  int32_t *gpf = gh_calloc(m->Gf + 1, sizeof(int32_t)), *glf = gh_calloc(m->Gf + 1, sizeof(int32_t));
  for (int32_t p = 0; p < P; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    for (int32_t k = 0; k < g->num_gauss; ++k) {
      int32_t row = m->wrow[p] + k;
      /* parameter rows [ll(c), b - P c, q] (gemm-forms.h) */
      if (g->type == GH_COV_DIAG) {
        gh_gemm_param_row(g, k, m->centred ? m->c : NULL, Wd + (size_t)row * m->Kd);
        gpd[row] = p; gld[row] = k;
      } else {
        gh_gemm_param_row(g, k, m->centred ? m->c : NULL, Wf + (size_t)row * m->Kf);
        gpf[row] = p; glf[row] = k;
      }
    }
  }
  m->Wd = gh_ocl_buffer(c, (size_t)m->Gd * m->Kd * sizeof(float), Wd, "model upload");
  m->Wf = gh_ocl_buffer(c, (size_t)m->Gf * m->Kf * sizeof(float), Wf, "model upload");
  m->goff = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), goff, "model upload");
  m->gcnt_d = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), m->gcnt, "model upload");
  m->ptype_d = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), m->ptype, "model upload");
  m->wrow_d = gh_ocl_buffer(c, (P + 1) * sizeof(int32_t), m->wrow, "model upload");
  m->gpdf_d = gh_ocl_buffer(c, (m->Gd + 1) * sizeof(int32_t), gpd, "model upload");
  m->gl_d = gh_ocl_buffer(c, (m->Gd + 1) * sizeof(int32_t), gld, "model upload");
  m->gpdf_f = gh_ocl_buffer(c, (m->Gf + 1) * sizeof(int32_t), gpf, "model upload");
  m->gl_f = gh_ocl_buffer(c, (m->Gf + 1) * sizeof(int32_t), glf, "model upload");
  m->emap_d = gh_ocl_buffer(c, m->Kd * sizeof(cl_int2), ed, "model upload");
  m->emap_f = gh_ocl_buffer(c, m->Kf * sizeof(cl_int2), ef, "model upload");
  if (c->fp64) {
    m->acc_d = gh_ocl_buffer(c, (size_t)m->Gd * m->Kd * sizeof(double), NULL, "accumulators");
    m->acc_f = gh_ocl_buffer(c, (size_t)m->Gf * m->Kf * sizeof(double), NULL, "accumulators");
  }
  { /* weights per row, for the device M-step (opencl-mstep.c) */
    float *wd = gh_calloc(m->Gd + 1, sizeof(float)), *wf = gh_calloc(m->Gf + 1, sizeof(float));
    for (int32_t p = 0; p < P; ++p)
      for (int32_t k = 0; k < s->pdfs[p].num_gauss; ++k) (m->ptype[p] ? wf : wd)[m->wrow[p] + k] = s->pdfs[p].weights[k];
    m->wts_d = gh_ocl_buffer(c, (m->Gd + 1) * sizeof(float), wd, "model upload");
    m->wts_f = gh_ocl_buffer(c, (m->Gf + 1) * sizeof(float), wf, "model upload");
    free(wd); free(wf);
  }
  free(Wd); free(Wf); free(gpd); free(gld); free(gpf); free(glf); free(ed); free(ef); free(goff);
  return (gh_dev_model *)m;
}

static void ocl_model_free(gh_backend *b, gh_dev_model *dm) {
  ocl_model *m = (ocl_model *)dm;
  if (!m) return;
  cl_mem all[] = {m->Wd, m->Wf, m->goff, m->gcnt_d, m->ptype_d, m->wrow_d, m->gpdf_d, m->gl_d,
                  m->gpdf_f, m->gl_f, m->emap_d, m->emap_f, m->acc_d, m->acc_f, m->X, m->phi_d,
                  m->phi_f, m->S, m->out, m->pair_off, m->gbase, m->gamma, m->tot, m->partial,
                  m->wts_d, m->wts_f, m->Wd_new, m->Wf_new, m->wn_d, m->wn_f, m->occ_sum, m->obj, m->flg,
                  m->master, m->ctr, m->wmu, m->wnorm, m->wL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) gh_ocl_release(all[i]);
  if (m->host_m) { gh_backend *h = ((ocl_ctx *)b->ctx)->host; h->ops->gmm->model_free(h, m->host_m); }
  free(m->gcnt); free(m->ptype); free(m->wrow); free(m->c);
  if (m->orig) { gh_gmm_set_free(m->orig); free(m->orig); }
  free(m);
}

/* C[coff + m ldc + n] = sum_k A[m lda + k] B[boff + n ldb + k] (m < M, n < N). */
static void gemm_nt(ocl_ctx *c, int M, int N, int K, cl_mem A, int lda, cl_mem B, size_t boff, int ldb,
                    cl_mem C, int ldc, int coff) {
  if (M <= 0 || N <= 0) return;
#ifdef GH_HAVE_CLBLAST
  if (c->use_clblast) {
    CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, M, N, K,
                                        1.0f, A, 0, lda, B, boff, ldb, 0.0f, C, coff, ldc, &c->q, NULL);
    if (st == CLBlastSuccess) return;
    gh_warn("opencl: CLBlast SGEMM failed (status %d); using the built-in GEMM kernel from now on", (int)st);
    c->use_clblast = 0;
  }
#endif
  /* 128 x 128 tiles when both sides fill them (GH_OPENCL_SGEMM=64|128 forces one) */
  const int big = c->sgemm_tile ? c->sgemm_tile == 128 : (M >= 256 && N >= 256);
  cl_kernel k = big ? c->k_gemm128 : c->k_gemm;
  const size_t ts = big ? 128 : 64;
  cl_long bo = (cl_long)boff;
  ARG(k, 0, M); ARG(k, 1, N); ARG(k, 2, K); ARG(k, 3, A); ARG(k, 4, lda); ARG(k, 5, B); ARG(k, 6, bo);
  ARG(k, 7, ldb); ARG(k, 8, C); ARG(k, 9, ldc); ARG(k, 10, coff);
  size_t gl[2] = {(N + ts - 1) / ts * 16, (M + ts - 1) / ts * 16}, lo[2] = {16, 16};
  gh_ocl_launch(c, k, 2, gl, lo, "gemm");
}

static void expand(ocl_ctx *c, int T, int D, int K, cl_mem X, cl_mem emap, cl_mem phi, cl_mem ctr) {
  cl_kernel k = c->k_expand;
  ARG(k, 0, T); ARG(k, 1, D); ARG(k, 2, K); ARG(k, 3, X); ARG(k, 4, emap); ARG(k, 5, phi); ARG(k, 6, ctr);
  size_t gl[2] = {(size_t)K, (size_t)T}, lo[2] = {64, 1};
  gh_ocl_launch(c, k, 2, gl, lo, "expand features");
}

/* loglikes of T frames into out (row t at out + t ldo): from the host X,
 * or (dX != NULL) from rows row0 .. of the device frames dX [. x D] (a
 * device copy into the chunk buffer: the same kernels on the same bytes). */
/* loglikes of rows row0 .. row0 + T - 1 of X (host) or dX (device frames)
 * into out (host, stride ldo) or, when out is NULL, into the device matrix
 * dout from its row drow0 on (stride ldo). */
static void loglikes_rows(gh_backend *b, ocl_model *m, const float *X, cl_mem dX, int32_t row0, int32_t T, float *out,
                          int32_t ldo, cl_mem dout, int64_t drow0) {
  ocl_ctx *c = b->ctx;
  const int32_t D = m->D, P = m->P, Gt = m->Gd + m->Gf;
  if (T <= 0 || P <= 0) return;
  /* frames per chunk: S, Phi and out at most c->chunk floats each */
  int64_t per = Gt > P ? Gt : P;
  if (m->Gd && m->Kd > per) per = m->Kd;
  if (m->Gf && m->Kf > per) per = m->Kf;
  int64_t Tc = c->chunk / (per > 0 ? per : 1);
  if (Tc < 1) Tc = 1;
  if (Tc > T) Tc = T;
  ensure(c, &m->X, &m->X_cap, Tc * D * sizeof(float), "frames");
  if (m->Gd) ensure(c, &m->phi_d, &m->phid_cap, Tc * m->Kd * sizeof(float), "expanded features");
  if (m->Gf) ensure(c, &m->phi_f, &m->phif_cap, Tc * m->Kf * sizeof(float), "expanded features");
  ensure(c, &m->S, &m->S_cap, Tc * (Gt > 0 ? Gt : 1) * sizeof(float), "Gaussian loglikes");
  ensure(c, &m->out, &m->out_cap, Tc * P * sizeof(float), "loglikes");
  const int wide = m->maxG > 64;
  for (int64_t t0 = 0; t0 < T; t0 += Tc) {
    int n = (int)(T - t0 < Tc ? T - t0 : Tc);
    if (dX)
      gh_ocl_check(clEnqueueCopyBuffer(c->q, dX, m->X, (size_t)(row0 + t0) * D * sizeof(float), 0,
                                       (size_t)n * D * sizeof(float), 0, NULL, NULL), "loglikes: frames");
    else
      gh_ocl_write(c, m->X, 0, (size_t)n * D * sizeof(float), X + t0 * D);
    double k0 = gh_seconds();
    if (m->Gd) {
      expand(c, n, D, m->Kd, m->X, m->emap_d, m->phi_d, m->ctr);
      gemm_nt(c, n, m->Gd, m->Kd, m->phi_d, m->Kd, m->Wd, 0, m->Kd, m->S, Gt, 0);
    }
    if (m->Gf) {
      expand(c, n, D, m->Kf, m->X, m->emap_f, m->phi_f, m->ctr);
      gemm_nt(c, n, m->Gf, m->Kf, m->phi_f, m->Kf, m->Wf, 0, m->Kf, m->S, Gt, m->Gd);
    }
    cl_kernel k = wide ? c->k_lse_wide : c->k_lse_narrow;
    ARG(k, 0, n); ARG(k, 1, P); ARG(k, 2, Gt); ARG(k, 3, m->S); ARG(k, 4, m->goff); ARG(k, 5, m->gcnt_d);
    ARG(k, 6, m->out);
    if (wide) {
      size_t gl[1] = {(size_t)n * P * 64}, lo[1] = {64};
      gh_ocl_launch(c, k, 1, gl, lo, "log-sum-exp");
    } else {
      size_t gl[2] = {(size_t)P, (size_t)n}, lo[2] = {64, 1};
      gh_ocl_launch(c, k, 2, gl, lo, "log-sum-exp");
    }
    gh_ocl_check(clFinish(c->q), "loglikes");
    b->kernel_seconds += gh_seconds() - k0;
    if (!out) { /* rows of P floats to the device matrix */
      const size_t zero[3] = {0, 0, 0}, dst[3] = {0, (size_t)(drow0 + t0), 0},
                   region[3] = {(size_t)P * sizeof(float), (size_t)n, 1};
      gh_ocl_check(clEnqueueCopyBufferRect(c->q, m->out, dout, zero, dst, region, (size_t)P * sizeof(float), 0,
                                           (size_t)ldo * sizeof(float), 0, 0, NULL, NULL),
                   "loglikes: copy");
    } else if (ldo == P) {
      gh_ocl_read(c, m->out, 0, (size_t)n * P * sizeof(float), out + t0 * P);
    } else { /* rows of P floats to a host stride of ldo */
      const size_t zero[3] = {0, 0, 0}, region[3] = {(size_t)P * sizeof(float), (size_t)n, 1};
      gh_ocl_check(clEnqueueReadBufferRect(c->q, m->out, CL_TRUE, zero, zero, region, (size_t)P * sizeof(float), 0,
                                           (size_t)ldo * sizeof(float), 0, out + t0 * ldo, 0, NULL, NULL),
                   "loglikes: read");
    }
  }
}

static void ocl_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  if (m->white) {
    white_loglikes(b, m, X, T, out);
    b->path_pairs[GH_PATH_WHITE] += (int64_t)T * m->P;
    return;
  }
  if (m->host_m) {
    double k0 = gh_seconds();
    c->host->ops->gmm->loglikes(c->host, m->host_m, X, T, out);
    b->kernel_seconds += gh_seconds() - k0;
    b->path_pairs[GH_PATH_HOST] += (int64_t)T * m->P;
    return;
  }
  loglikes_rows(b, m, X, NULL, 0, T, out, m->P, NULL, 0);
  b->path_pairs[GH_PATH_FP32] += (int64_t)T * m->P;
}

/* ---------------- E-step ---------------- */

/* A pdf with at least BIG_G Gaussians and BIG_PAIRS pairs in one
 * accumulate() takes the GEMM path (estep_big); the others the per-pair
 * kernels (gh_estep_post, gh_estep_stats). */
enum { BIG_G = 64, BIG_PAIRS = 2048 };

/* Resident E-step data: frames and the pairs sorted by pdf on the device;
 * per-pdf pair counts on the host. */
typedef struct {
  int32_t T, D, max_pdf;
  int64_t npairs;
  int64_t *count;    /* [max_pdf + 1] pairs per pdf */
  cl_mem X, frame, pdf, weight;
  /* host copies of the four buffers while evicted (data_evict), else NULL */
  float *hX, *hW;
  int32_t *hF, *hP;
  int evicted;
  const float *hXin; /* the caller's host arrays (valid until data_free, backend.h) */
  const gh_frame_pdf *hpairs; /* the caller's; NULL after gh_ocl_data_set_pairs_dev */
  gh_frame_pdf *own_pairs;    /* host copy of device-set pairs, made when a host-evaluated model needs them */
  gh_dev_data *host_d; /* on the host backend, for models evaluated there (lazily) */
} ocl_data;

/* d's pairs (checked) sorted by pdf (gh_pairs_sort_by_pdf) into new device
 * buffers frame, pdf, weight and the per-pdf counts; a host copy kept for
 * data_evict (hX set) follows them. */
static void ocl_data_pairs(ocl_ctx *c, ocl_data *d, const gh_frame_pdf *pairs, int64_t npairs) {
  if (npairs >= INT32_MAX) gh_die("data upload: %lld pairs; the OpenCL E-step takes at most 2^31 - 1 per call", (long long)npairs);
  d->npairs = npairs;
  d->hpairs = pairs;
  int32_t *fr = gh_malloc((npairs + 1) * sizeof(int32_t)), *pd = gh_malloc((npairs + 1) * sizeof(int32_t));
  float *w = gh_malloc((npairs + 1) * sizeof(float));
  int64_t *off = gh_pairs_sort_by_pdf(pairs, npairs, d->T, &d->max_pdf, fr, w);
  free(d->count);
  d->count = gh_calloc(d->max_pdf + 2, sizeof(int64_t));
  for (int32_t p = 0; p <= d->max_pdf; ++p) {
    d->count[p] = off[p + 1] - off[p];
    for (int64_t q = off[p]; q < off[p + 1]; ++q) pd[q] = p;
  }
  free(off);
  d->frame = gh_ocl_buffer(c, npairs * sizeof(int32_t), npairs ? fr : NULL, "E-step pairs");
  d->pdf = gh_ocl_buffer(c, npairs * sizeof(int32_t), npairs ? pd : NULL, "E-step pairs");
  d->weight = gh_ocl_buffer(c, npairs * sizeof(float), npairs ? w : NULL, "E-step pairs");
  if (d->hX) { /* data_evict's copy: the new pairs */
    free(d->hF); free(d->hP); free(d->hW);
    d->hF = fr; d->hP = pd; d->hW = w;
  } else {
    free(fr); free(pd); free(w);
  }
}

static gh_dev_data *ocl_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D,
                                    const gh_frame_pdf *pairs, int64_t npairs) {
  ocl_ctx *c = b->ctx;
  ocl_data *d = gh_calloc(1, sizeof *d);
  d->T = T; d->D = D;
  d->hXin = X;
  gh_pairs_check(pairs, npairs, T); /* before the frames go up */
  d->X = gh_ocl_buffer(c, (size_t)T * D * sizeof(float), T ? X : NULL, "E-step frames");
  ocl_data_pairs(c, d, pairs, npairs);
  return (gh_dev_data *)d;
}

/* backend.h data_set_pairs: the frames stay, the pairs are replaced (and the
 * host backend's copy, for models evaluated there, dropped: made again from
 * the new pairs). */
/* backend.h loglikes_data: the rows of d's device frames, no upload. */
static void ocl_loglikes_data(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T, float *out,
                              int32_t ldo) {
  ocl_model *m = (ocl_model *)dm;
  ocl_data *d = (ocl_data *)dd;
  if (row0 < 0 || T < 0 || (int64_t)row0 + T > d->T)
    gh_die("loglikes_data: rows %d .. %lld of a data block of %d frames", row0, (long long)row0 + T - 1, d->T);
  if (ldo < m->P) gh_die("loglikes_data: output stride %d below the model's %d pdfs", ldo, m->P);
  if (m->host_m) {
    gh_backend_loglikes_rows(b, dm, NULL, d->hXin, d->D, row0, T, out, m->P, ldo);
    return;
  }
  if (d->D != m->D) gh_die("loglikes_data: data dimension %d, model dimension %d", d->D, m->D);
  if (d->evicted) gh_die("loglikes_data: the data block was evicted (data_reload first)");
  if (T <= 0 || m->P <= 0) return;
  loglikes_rows(b, m, NULL, d->X, row0, T, out, ldo, NULL, 0);
}

/* Before new pairs on d (data_set_pairs, gh_ocl_data_set_pairs_dev): d
 * resident, no E-step still reading the old pairs; the old pair buffers,
 * the host backend's copy (models evaluated there) and the host copy of
 * device-set pairs dropped. */
static void data_pairs_begin(ocl_ctx *c, ocl_data *d, const char *what) {
  if (d->evicted) gh_die("%s: the data block was evicted (data_reload first)", what);
  gh_ocl_check(clFinish(c->q), what);
  gh_ocl_release(d->frame); gh_ocl_release(d->pdf); gh_ocl_release(d->weight);
  d->frame = d->pdf = d->weight = NULL;
  if (d->host_d) { c->host->ops->gmm->data_free(c->host, d->host_d); d->host_d = NULL; }
  free(d->own_pairs);
  d->own_pairs = NULL;
}

static void ocl_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs) {
  ocl_ctx *c = b->ctx;
  ocl_data *d = (ocl_data *)dd;
  data_pairs_begin(c, d, "data_set_pairs");
  ocl_data_pairs(c, d, pairs, npairs);
}

/* loglikes_data into a device matrix (hmm_estep_pairs, opencl-hmm.c): rows
 * row0 .. row0 + T - 1 of d to dout from row drow0 on, stride ldo; the
 * bits of loglikes_data. */
void gh_ocl_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T, cl_mem dout,
                              int64_t drow0, int32_t ldo) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  ocl_data *d = (ocl_data *)dd;
  if (row0 < 0 || T < 0 || (int64_t)row0 + T > d->T)
    gh_die("loglikes_data: rows %d .. %lld of a data block of %d frames", row0, (long long)row0 + T - 1, d->T);
  if (ldo < m->P) gh_die("loglikes_data: output stride %d below the model's %d pdfs", ldo, m->P);
  if (T <= 0 || m->P <= 0) return;
  if (m->host_m) {
    float *h = gh_malloc(sizeof(float) * ((size_t)T * m->P + 1));
    gh_backend_loglikes_rows(b, dm, NULL, d->hXin, d->D, row0, T, h, m->P, m->P);
    const size_t zero[3] = {0, 0, 0}, dst[3] = {0, (size_t)drow0, 0}, region[3] = {(size_t)m->P * sizeof(float), (size_t)T, 1};
    gh_ocl_check(clEnqueueWriteBufferRect(c->q, dout, CL_TRUE, dst, zero, region, (size_t)ldo * sizeof(float), 0,
                                          (size_t)m->P * sizeof(float), 0, h, 0, NULL, NULL),
                 "loglikes: write");
    free(h);
    return;
  }
  if (d->D != m->D) gh_die("loglikes_data: data dimension %d, model dimension %d", d->D, m->D);
  if (d->evicted) gh_die("loglikes_data: the data block was evicted (data_reload first)");
  loglikes_rows(b, m, NULL, d->X, row0, T, NULL, ldo, dout, drow0);
}

/* New pairs for d from the device (hmm_estep_pairs): pairs [n] (device, as
 * gh_frame_pdf), each with 0 <= frame < d's rows and 0 <= pdf < bound (dies
 * naming the first that is not), become d's E-step pairs as
 * data_set_pairs makes them from host pairs -- sorted by pdf, stable (a
 * counting sort over chunks: hmm.cl gh_pairs_count, gh_pairs_scan,
 * gh_pairs_scatter), so the same buffers bit for bit.  Only the per-pdf
 * totals and the chunks' weight sums come back; *wsum = those summed in
 * chunk order.  Dies as data_set_pairs on an evicted d. */
void gh_ocl_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, cl_mem pairs, int64_t n, int32_t bound, double *wsum) {
  ocl_ctx *c = b->ctx;
  ocl_data *d = (ocl_data *)dd;
  if (n < 0 || n >= INT32_MAX) gh_die("data_set_pairs (device): %lld pairs in one block (at most %d)", (long long)n, INT32_MAX - 1);
  data_pairs_begin(c, d, "data_set_pairs (device)");
  d->hpairs = NULL;
  d->npairs = n;
  *wsum = 0.0;
  d->frame = gh_ocl_buffer(c, (size_t)(n ? n : 1) * sizeof(int32_t), NULL, "E-step pairs");
  d->pdf = gh_ocl_buffer(c, (size_t)(n ? n : 1) * sizeof(int32_t), NULL, "E-step pairs");
  d->weight = gh_ocl_buffer(c, (size_t)(n ? n : 1) * sizeof(float), NULL, "E-step pairs");
  int32_t P = 0;
  int64_t *tot = NULL;
  if (n > 0) {
    /* chunks of ch pairs, the count matrix at most 16 M ints (a stable sort's
     * result does not depend on ch) */
    int64_t ch = 256;
    while ((n + ch - 1) / ch * (int64_t)bound > ((int64_t)16 << 20)) ch *= 2;
    const int32_t nch = (int32_t)((n + ch - 1) / ch);
    cl_mem cnt = gh_ocl_buffer(c, (size_t)nch * bound * sizeof(int32_t), NULL, "pair sort");
    cl_mem wpart = gh_ocl_buffer(c, (size_t)nch * sizeof(double), NULL, "pair sort");
    cl_mem bad = gh_ocl_buffer(c, sizeof(int32_t), NULL, "pair sort");
    cl_mem dtot = gh_ocl_buffer(c, (size_t)bound * sizeof(cl_long), NULL, "pair sort");
    const int32_t zero = 0, big = INT32_MAX;
    gh_ocl_check(clEnqueueFillBuffer(c->q, cnt, &zero, sizeof zero, 0, (size_t)nch * bound * sizeof(int32_t), 0, NULL, NULL),
                 "pair sort");
    gh_ocl_write(c, bad, 0, sizeof big, &big);
    const cl_long nl = n, chl = ch;
    cl_kernel k = c->k_pairs_count;
    ARG(k, 0, pairs); ARG(k, 1, nl); ARG(k, 2, chl); ARG(k, 3, nch); ARG(k, 4, d->T); ARG(k, 5, bound);
    ARG(k, 6, cnt); ARG(k, 7, wpart); ARG(k, 8, bad);
    size_t gl[1] = {((size_t)nch + 63) / 64 * 64}, lo[1] = {64};
    gh_ocl_launch(c, k, 1, gl, lo, "pair counts");
    int32_t hb = big;
    gh_ocl_read(c, bad, 0, sizeof hb, &hb);
    if (hb != big) {
      int32_t pr[3];
      gh_ocl_read(c, pairs, (size_t)(hb - 1) * 3 * sizeof(int32_t), sizeof pr, pr);
      gh_die("data_set_pairs (device): pair %d (frame %d, pdf %d) outside %d frames and %d pdfs", hb - 1, pr[0], pr[1],
             d->T, bound);
    }
    k = c->k_pairs_scan;
    ARG(k, 0, cnt); ARG(k, 1, nch); ARG(k, 2, bound); ARG(k, 3, dtot);
    size_t gp[1] = {((size_t)bound + 63) / 64 * 64};
    gh_ocl_launch(c, k, 1, gp, lo, "pair scan");
    tot = gh_malloc(sizeof(int64_t) * (size_t)bound);
    gh_ocl_read(c, dtot, 0, (size_t)bound * sizeof(cl_long), tot);
    double *wp = gh_malloc(sizeof(double) * (size_t)nch);
    gh_ocl_read(c, wpart, 0, (size_t)nch * sizeof(double), wp);
    double w = 0.0;
    for (int32_t q = 0; q < nch; ++q) w += wp[q];
    free(wp);
    *wsum = w;
    for (int32_t p = 0; p < bound; ++p) if (tot[p]) P = p + 1;
    cl_long *base = gh_malloc(sizeof(cl_long) * (size_t)bound);
    int64_t run = 0;
    for (int32_t p = 0; p < bound; ++p) { base[p] = run; run += tot[p]; }
    cl_mem dbase = gh_ocl_buffer(c, (size_t)bound * sizeof(cl_long), base, "pair sort");
    free(base);
    k = c->k_pairs_scatter;
    ARG(k, 0, pairs); ARG(k, 1, nl); ARG(k, 2, chl); ARG(k, 3, nch); ARG(k, 4, cnt); ARG(k, 5, dbase);
    ARG(k, 6, d->frame); ARG(k, 7, d->pdf); ARG(k, 8, d->weight);
    gh_ocl_launch(c, k, 1, gl, lo, "pair scatter");
    cl_mem all[] = {cnt, wpart, bad, dtot, dbase};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) gh_ocl_release(all[i]);
  }
  d->max_pdf = P - 1;
  free(d->count);
  d->count = gh_calloc((size_t)P + 1, sizeof(int64_t));
  for (int32_t p = 0; p < P; ++p) d->count[p] = tot[p];
  free(tot);
  if (d->hX) { /* data_evict's copy: the new pairs */
    free(d->hF); free(d->hP); free(d->hW);
    d->hF = gh_malloc((size_t)(n + 1) * sizeof(int32_t));
    d->hP = gh_malloc((size_t)(n + 1) * sizeof(int32_t));
    d->hW = gh_malloc((size_t)(n + 1) * sizeof(float));
    gh_ocl_read(c, d->frame, 0, (size_t)n * sizeof(int32_t), d->hF);
    gh_ocl_read(c, d->pdf, 0, (size_t)n * sizeof(int32_t), d->hP);
    gh_ocl_read(c, d->weight, 0, (size_t)n * sizeof(float), d->hW);
  }
}

static void ocl_data_free(gh_backend *b, gh_dev_data *dd) {
  ocl_data *d = (ocl_data *)dd;
  if (!d) return;
  if (!d->evicted) {
    gh_ocl_release(d->X); gh_ocl_release(d->frame); gh_ocl_release(d->pdf); gh_ocl_release(d->weight);
  }
  free(d->hX); free(d->hW); free(d->hF); free(d->hP);
  if (d->host_d) { gh_backend *h = ((ocl_ctx *)b->ctx)->host; h->ops->gmm->data_free(h, d->host_d); }
  free(d->count);
  free(d->own_pairs);
  free(d);
}

/* backend.h data_bytes / data_evict / data_reload (synchronous copies here) */
static int64_t ocl_data_bytes(gh_backend *b, gh_dev_data *dd) {
  ocl_data *d = (ocl_data *)dd;
  return (int64_t)d->T * d->D * (int64_t)sizeof(float) + d->npairs * (int64_t)(2 * sizeof(int32_t) + sizeof(float));
}

static void ocl_data_evict(gh_backend *b, gh_dev_data *dd) {
  ocl_ctx *c = b->ctx;
  ocl_data *d = (ocl_data *)dd;
  if (d->evicted) return;
  const size_t nx = (size_t)d->T * d->D, np = (size_t)d->npairs;
  if (!d->hX) { /* the uploaded bytes, read back once */
    d->hX = gh_malloc((nx + 1) * sizeof(float));
    d->hW = gh_malloc((np + 1) * sizeof(float));
    d->hF = gh_malloc((np + 1) * sizeof(int32_t));
    d->hP = gh_malloc((np + 1) * sizeof(int32_t));
    gh_ocl_read(c, d->X, 0, nx * sizeof(float), d->hX);
    gh_ocl_read(c, d->frame, 0, np * sizeof(int32_t), d->hF);
    gh_ocl_read(c, d->pdf, 0, np * sizeof(int32_t), d->hP);
    gh_ocl_read(c, d->weight, 0, np * sizeof(float), d->hW);
  }
  gh_ocl_release(d->X); gh_ocl_release(d->frame); gh_ocl_release(d->pdf); gh_ocl_release(d->weight);
  d->X = d->frame = d->pdf = d->weight = NULL;
  d->evicted = 1;
}

static void ocl_data_reload(gh_backend *b, gh_dev_data *dd) {
  ocl_ctx *c = b->ctx;
  ocl_data *d = (ocl_data *)dd;
  if (!d->evicted) return;
  const size_t nx = (size_t)d->T * d->D, np = (size_t)d->npairs;
  d->X = gh_ocl_buffer(c, nx * sizeof(float), nx ? d->hX : NULL, "E-step frames");
  d->frame = gh_ocl_buffer(c, np * sizeof(int32_t), np ? d->hF : NULL, "E-step pairs");
  d->pdf = gh_ocl_buffer(c, np * sizeof(int32_t), np ? d->hP : NULL, "E-step pairs");
  d->weight = gh_ocl_buffer(c, np * sizeof(float), np ? d->hW : NULL, "E-step pairs");
  d->evicted = 0;
}

/* d's pairs on the host (a model evaluated on the host backend needs them)
 * when they were set on the device: read back, in pdf order (each pdf's
 * pairs in their order, so the host backend's stable sort gives the same
 * E-step). */
static const gh_frame_pdf *data_host_pairs(ocl_ctx *c, ocl_data *d) {
  if (d->hpairs || d->npairs == 0) return d->hpairs;
  if (!d->own_pairs) {
    const size_t n = (size_t)d->npairs;
    int32_t *f = gh_malloc(n * sizeof(int32_t)), *p = gh_malloc(n * sizeof(int32_t));
    float *w = gh_malloc(n * sizeof(float));
    gh_ocl_read(c, d->frame, 0, n * sizeof(int32_t), f);
    gh_ocl_read(c, d->pdf, 0, n * sizeof(int32_t), p);
    gh_ocl_read(c, d->weight, 0, n * sizeof(float), w);
    d->own_pairs = gh_malloc(n * sizeof(gh_frame_pdf));
    for (size_t k = 0; k < n; ++k) d->own_pairs[k] = (gh_frame_pdf){f[k], p[k], w[k]};
    free(f); free(p); free(w);
  }
  return d->own_pairs;
}

static void need_fp64(gh_backend *b, const char *what) {
  if (!((ocl_ctx *)b->ctx)->fp64)
    gh_die("%s: the OpenCL device %s has no double precision (cl_khr_fp64), which the E-step "
           "statistics need; use --device=cpu or a device with fp64", what, b->device_name);
}

static void ocl_acc_zero(gh_backend *b, gh_dev_model *dm) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  if (m->host_m) { c->host->ops->gmm->acc_zero(c->host, m->host_m); return; }
  need_fp64(b, "acc_zero");
  const double zero = 0.0;
  if (m->Gd) gh_ocl_check(clEnqueueFillBuffer(c->q, m->acc_d, &zero, sizeof zero, 0, (size_t)m->Gd * m->Kd * sizeof(double), 0, NULL, NULL), "zero accumulators");
  if (m->Gf) gh_ocl_check(clEnqueueFillBuffer(c->q, m->acc_f, &zero, sizeof zero, 0, (size_t)m->Gf * m->Kf * sizeof(double), 0, NULL, NULL), "zero accumulators");
}

/* Statistics of one covariance type over one chunk (gh_estep_stats +
 * gh_estep_reduce); maxn = most pairs of one pdf of the type in the chunk. */
static void estep_stats(ocl_ctx *c, ocl_model *m, ocl_data *d, int full, int kbase, int64_t maxn) {
  const int Gn = full ? m->Gf : m->Gd, K = full ? m->Kf : m->Kd, D = m->D;
  if (Gn == 0 || maxn == 0) return;
  /* segments: enough work-items (~256 k) without segments shorter than 64
   * pairs, and the partial sums at most 32 M doubles */
  int64_t items = (int64_t)Gn * K, nseg = (262144 + items - 1) / items;
  if (nseg > maxn / 64) nseg = maxn / 64;
  if (nseg > ((int64_t)32 << 20) / items) nseg = ((int64_t)32 << 20) / items;
  if (nseg < 1) nseg = 1;
  int ns = (int)nseg;
  ensure(c, &m->partial, &m->part_cap, nseg * items * sizeof(double), "E-step partial sums");
  cl_kernel k = c->k_stats;
  cl_mem gpdf = full ? m->gpdf_f : m->gpdf_d, gl = full ? m->gl_f : m->gl_d, em = full ? m->emap_f : m->emap_d;
  cl_mem acc = full ? m->acc_f : m->acc_d;
  ARG(k, 0, Gn); ARG(k, 1, K); ARG(k, 2, ns); ARG(k, 3, D); ARG(k, 4, d->X); ARG(k, 5, d->frame);
  ARG(k, 6, kbase); ARG(k, 7, gpdf); ARG(k, 8, gl); ARG(k, 9, m->gcnt_d); ARG(k, 10, m->pair_off);
  ARG(k, 11, m->gbase); ARG(k, 12, em); ARG(k, 13, m->gamma); ARG(k, 14, m->partial); ARG(k, 15, m->ctr);
  size_t glb[3] = {(size_t)K, (size_t)Gn, (size_t)ns}, lo[3] = {64, 1, 1};
  gh_ocl_launch(c, k, 3, glb, lo, "E-step statistics");
  cl_long n = items, aoff = 0;
  k = c->k_reduce;
  ARG(k, 0, n); ARG(k, 1, ns); ARG(k, 2, m->partial); ARG(k, 3, acc); ARG(k, 4, aoff);
  size_t g1[1] = {(size_t)items}, l1[1] = {64};
  gh_ocl_launch(c, k, 1, g1, l1, "E-step reduce");
}

/* E-step of big pdf p (sorted pairs first .. first + n - 1) on the GEMM path
 * (gmm.cl): blocks of pairs, Phi gathered, ll = Phi W_p' by SGEMM,
 * posteriors in place, Gamma' Phi in double into p's accumulator rows.
 * Returns sum w lse over the pairs. */
static double estep_big(ocl_ctx *c, ocl_model *m, ocl_data *d, int32_t p, int64_t first, int64_t n) {
  const int full = m->ptype[p], G = m->gcnt[p], K = full ? m->Kf : m->Kd, D = m->D;
  cl_mem W = full ? m->Wf : m->Wd, em = full ? m->emap_f : m->emap_d, acc = full ? m->acc_f : m->acc_d;
  int64_t nb = c->chunk / (K > G ? K : G);
  if (nb < 1) nb = 1;
  if (nb > n) nb = n;
  ensure(c, &m->phi_f, &m->phif_cap, nb * K * sizeof(float), "E-step features");
  ensure(c, &m->gamma, &m->gamma_cap, nb * G * sizeof(float), "E-step posteriors");
  ensure(c, &m->tot, &m->tot_cap, nb * sizeof(double), "E-step totals");
  const int tg = ((G + 63) / 64) * ((K + 63) / 64);
  double *tot = gh_malloc(nb * sizeof(double)), total = 0.0;
  for (int64_t s0 = 0; s0 < n; s0 += nb) {
    int rows = (int)(n - s0 < nb ? n - s0 : nb), kbase = (int)(first + s0);
    cl_kernel k = c->k_expand_pairs;
    ARG(k, 0, rows); ARG(k, 1, D); ARG(k, 2, K); ARG(k, 3, kbase); ARG(k, 4, d->X); ARG(k, 5, d->frame);
    ARG(k, 6, em); ARG(k, 7, m->phi_f); ARG(k, 8, m->ctr);
    size_t g2[2] = {(size_t)K, (size_t)rows}, l2[2] = {64, 1};
    gh_ocl_launch(c, k, 2, g2, l2, "E-step expand");
    gemm_nt(c, rows, G, K, m->phi_f, K, W, (size_t)m->wrow[p] * K, K, m->gamma, G, 0);
    k = c->k_softmax;
    ARG(k, 0, rows); ARG(k, 1, G); ARG(k, 2, kbase); ARG(k, 3, d->weight); ARG(k, 4, m->gamma); ARG(k, 5, m->tot);
    size_t g1[1] = {(size_t)rows * 64}, l1[1] = {64};
    gh_ocl_launch(c, k, 1, g1, l1, "E-step posteriors");
    /* segments over the pairs: >= ~1024 work-groups, >= 256 pairs each */
    int64_t ns = (1024 + tg - 1) / tg;
    if (ns > rows / 256) ns = rows / 256;
    if (ns > ((int64_t)32 << 20) / ((int64_t)G * K)) ns = ((int64_t)32 << 20) / ((int64_t)G * K);
    if (ns < 1) ns = 1;
    int nseg = (int)ns;
    ensure(c, &m->partial, &m->part_cap, ns * G * K * sizeof(double), "E-step partial sums");
    k = c->k_stats_tn;
    ARG(k, 0, rows); ARG(k, 1, G); ARG(k, 2, K); ARG(k, 3, nseg); ARG(k, 4, m->gamma); ARG(k, 5, m->phi_f);
    ARG(k, 6, m->partial);
    size_t g3[3] = {(size_t)((K + 63) / 64) * 16, (size_t)((G + 63) / 64) * 16, (size_t)nseg}, l3[3] = {16, 16, 1};
    gh_ocl_launch(c, k, 3, g3, l3, "E-step statistics (GEMM)");
    cl_long items = (cl_long)G * K, aoff = (cl_long)m->wrow[p] * K;
    k = c->k_reduce;
    ARG(k, 0, items); ARG(k, 1, nseg); ARG(k, 2, m->partial); ARG(k, 3, acc); ARG(k, 4, aoff);
    size_t g4[1] = {(size_t)items}, l4[1] = {64};
    gh_ocl_launch(c, k, 1, g4, l4, "E-step reduce");
    gh_ocl_read(c, m->tot, 0, rows * sizeof(double), tot);
    for (int i = 0; i < rows; ++i) total += tot[i];
  }
  free(tot);
  return total;
}

static double ocl_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  ocl_data *d = (ocl_data *)dd;
  if (m->host_m) {
    if (!d->host_d) d->host_d = c->host->ops->gmm->data_upload(c->host, d->hXin, d->T, d->D, data_host_pairs(c, d), d->npairs);
    b->path_pairs[GH_PATH_HOST] += d->npairs;
    return c->host->ops->gmm->accumulate(c->host, m->host_m, d->host_d);
  }
  b->path_pairs[GH_PATH_FP32] += d->npairs;
  need_fp64(b, "accumulate");
  if (d->evicted) gh_die("accumulate: the data block was evicted (data_reload first)");
  if (d->D != m->D) gh_die("accumulate: data dimension %d, model dimension %d", d->D, m->D);
  if (d->max_pdf >= m->P)
    gh_die("accumulate: the data has pdf id %d, the model only %d pdfs", d->max_pdf, m->P);
  const int32_t P = m->P;
  const int64_t GB = c->chunk; /* posteriors per chunk */
  int64_t *cc = gh_calloc(P + 1, sizeof(int64_t));
  int32_t *po = gh_malloc((P + 1) * sizeof(int32_t));
  cl_long *gb = gh_malloc((P + 1) * sizeof(cl_long));
  double *tot = NULL, total = 0.0;
  ensure(c, &m->pair_off, &m->po_cap, (P + 1) * sizeof(int32_t), "E-step offsets");
  ensure(c, &m->gbase, &m->gb_cap, (P + 1) * sizeof(cl_long), "E-step offsets");
  /* big pdfs (GEMM path, estep_big): many Gaussians and many pairs */
  char *big = gh_calloc(P + 1, 1);
  for (int32_t q = 0; q <= d->max_pdf; ++q) big[q] = m->gcnt[q] >= BIG_G && d->count[q] >= BIG_PAIRS;
  int64_t k = 0, rem = d->max_pdf >= 0 ? d->count[0] : 0;
  int32_t p = 0;
  while (k < d->npairs) {
    /* the next chunk: sorted pairs [ks, k), cc[q] of pdf q */
    memset(cc, 0, (P + 1) * sizeof(int64_t));
    int64_t ks = k, used = 0;
    while (k < d->npairs) {
      while (rem == 0) rem = d->count[++p];
      int64_t G = big[p] ? 0 : m->gcnt[p], fit = G ? (GB - used) / G : rem;
      if (fit <= 0) { if (k > ks) break; fit = 1; }
      int64_t take = rem < fit ? rem : fit;
      cc[p] += take; used += take * G; k += take; rem -= take;
      if (rem > 0) break;
    }
    int64_t maxn[2] = {0, 0};
    po[0] = 0;
    for (int32_t q = 0; q < P; ++q) {
      po[q + 1] = po[q] + (int32_t)cc[q];
      gb[q] = q ? gb[q - 1] + (big[q - 1] ? 0 : cc[q - 1] * m->gcnt[q - 1]) : 0;
      if (!big[q] && cc[q] > maxn[m->ptype[q]]) maxn[m->ptype[q]] = cc[q];
    }
    for (int32_t q = 0; q < P; ++q) if (big[q]) gb[q] = -1;
    int n = (int)(k - ks), kbase = (int)ks;
    gh_ocl_write(c, m->pair_off, 0, (P + 1) * sizeof(int32_t), po);
    gh_ocl_write(c, m->gbase, 0, P * sizeof(cl_long), gb);
    ensure(c, &m->gamma, &m->gamma_cap, (used + 1) * sizeof(float), "E-step posteriors");
    ensure(c, &m->tot, &m->tot_cap, n * sizeof(double), "E-step totals");
    cl_kernel kp = c->k_post;
    ARG(kp, 0, n); ARG(kp, 1, m->D); ARG(kp, 2, kbase); ARG(kp, 3, d->X); ARG(kp, 4, d->frame);
    ARG(kp, 5, d->pdf); ARG(kp, 6, d->weight); ARG(kp, 7, m->ptype_d); ARG(kp, 8, m->wrow_d);
    ARG(kp, 9, m->gcnt_d); ARG(kp, 10, m->pair_off); ARG(kp, 11, m->gbase); ARG(kp, 12, m->Wd);
    ARG(kp, 13, m->Wf); ARG(kp, 14, m->gamma); ARG(kp, 15, m->tot); ARG(kp, 16, m->ctr);
    size_t gl[1] = {(size_t)n}, lo[1] = {64};
    gh_ocl_launch(c, kp, 1, gl, lo, "E-step posteriors");
    estep_stats(c, m, d, 0, kbase, maxn[0]);
    estep_stats(c, m, d, 1, kbase, maxn[1]);
    tot = gh_realloc(tot, n * sizeof(double));
    gh_ocl_read(c, m->tot, 0, n * sizeof(double), tot);
    for (int i = 0; i < n; ++i) total += tot[i];
  }
  int64_t first = 0;
  for (int32_t q = 0; q <= d->max_pdf; first += d->count[q], ++q)
    if (big[q]) total += estep_big(c, m, d, q, first, d->count[q]);
  free(cc); free(po); free(gb); free(tot); free(big);
  return total;
}

static void ocl_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  if (m->host_m) { c->host->ops->gmm->acc_fetch(c->host, m->host_m, accs); return; }
  need_fp64(b, "acc_fetch");
  if (accs->num_pdfs != m->P)
    gh_die("acc_fetch: accumulators have %d pdfs, the model %d", accs->num_pdfs, m->P);
  const int32_t D = m->D;
  double *ad = gh_malloc(((size_t)m->Gd * m->Kd + 1) * sizeof(double));
  double *af = gh_malloc(((size_t)m->Gf * m->Kf + 1) * sizeof(double));
  gh_ocl_read(c, m->acc_d, 0, (size_t)m->Gd * m->Kd * sizeof(double), ad);
  gh_ocl_read(c, m->acc_f, 0, (size_t)m->Gf * m->Kf * sizeof(double), af);
  for (int32_t p = 0; p < m->P; ++p) {
    gh_gmm_accs *a = &accs->pdfs[p];
    const int full = m->ptype[p];
    if (a->num_gauss != m->gcnt[p] || a->dim != D || a->type != (full ? GH_COV_FULL : GH_COV_DIAG))
      gh_die("acc_fetch: pdf %d: accumulators (%d Gaussians, dim %d) do not match the model "
             "(%d Gaussians, dim %d)", p, a->num_gauss, a->dim, m->gcnt[p], D);
    const int32_t K = full ? m->Kf : m->Kd, S = full ? (int32_t)gh_packed_size(D) : D;
    for (int32_t g = 0; g < m->gcnt[p]; ++g) {
      const double *r = (full ? af : ad) + (size_t)(m->wrow[p] + g) * K;
      gh_gemm_stats_uncentre(D, full, m->c, r, &a->occupancy[g], a->mean_accs + (size_t)g * D,
                             a->var_accs + (size_t)g * S);
    }
  }
  free(ad); free(af);
}

/* backend.h acc_raw_*: the diagonal block acc_d [Gd x Kd] then the full
 * block acc_f [Gf x Kf], as the device holds them (the distributed
 * trainers' host reduction; the M-step then stays on the device). */
static int64_t ocl_acc_raw_size(gh_backend *b, gh_dev_model *dm) {
  ocl_model *m = (ocl_model *)dm;
  return (int64_t)m->Gd * m->Kd + (int64_t)m->Gf * m->Kf;
}
static void ocl_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  const size_t nd = (size_t)m->Gd * m->Kd, nf = (size_t)m->Gf * m->Kf;
  if (nd) gh_ocl_read(c, m->acc_d, 0, nd * sizeof(double), host);
  if (nf) gh_ocl_read(c, m->acc_f, 0, nf * sizeof(double), host + nd);
}
static void ocl_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  const size_t nd = (size_t)m->Gd * m->Kd, nf = (size_t)m->Gf * m->Kf;
  if (nd) gh_ocl_write(c, m->acc_d, 0, nd * sizeof(double), host);
  if (nf) gh_ocl_write(c, m->acc_f, 0, nf * sizeof(double), host + nd);
}

/* backend.h acc_commit: dd.cl over acc_d, then acc_f (the raw layout's
 * two parts; the master follows the same layout). */
static void ensure_master(ocl_ctx *c, ocl_model *m) {
  if (m->master) return;
  const size_t n = (size_t)m->Gd * m->Kd + (size_t)m->Gf * m->Kf;
  m->master = gh_ocl_buffer(c, (2 * n + 1) * sizeof(double), NULL, "double-double accumulators");
  const double zero = 0.0;
  gh_ocl_check(clEnqueueFillBuffer(c->q, m->master, &zero, sizeof zero, 0, (2 * n + 1) * sizeof(double), 0, NULL, NULL),
               "zero double-double accumulators");
}
static void ocl_acc_commit(gh_backend *b, gh_dev_model *dm, int flags) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  need_fp64(b, "acc_commit");
  ensure_master(c, m);
  const cl_long nd = (cl_long)m->Gd * m->Kd, nf = (cl_long)m->Gf * m->Kf, n = nd + nf;
  const cl_int fl = flags;
  for (int part = 0; part < 2; ++part) {
    const cl_long cnt = part ? nf : nd, off_hi = part ? nd : 0, off_lo = n + off_hi;
    if (!cnt || !flags) continue;
    cl_kernel k = c->k_acc_commit;
    cl_mem acc = part ? m->acc_f : m->acc_d;
    gh_ocl_arg(k, 0, sizeof(cl_mem), &acc);
    gh_ocl_arg(k, 1, sizeof(cl_mem), &m->master);
    gh_ocl_arg(k, 2, sizeof(cl_long), &off_hi);
    gh_ocl_arg(k, 3, sizeof(cl_long), &off_lo);
    gh_ocl_arg(k, 4, sizeof(cl_long), &cnt);
    gh_ocl_arg(k, 5, sizeof(cl_int), &fl);
    const size_t global = (size_t)cnt, local = 256;
    gh_ocl_launch(c, k, 1, &global, &local, "acc_commit");
  }
}
static void ocl_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo) {
  ocl_ctx *c = b->ctx;
  ocl_model *m = (ocl_model *)dm;
  ensure_master(c, m);
  const size_t n = (size_t)m->Gd * m->Kd + (size_t)m->Gf * m->Kf;
  if (!n) return;
  gh_ocl_read(c, m->master, 0, n * sizeof(double), hi);
  gh_ocl_read(c, m->master, n * sizeof(double), n * sizeof(double), lo);
}

static const gh_ops_gmm ocl_gmm = {
    .free = ocl_free,
    .model_upload = ocl_model_upload,
    .model_free = ocl_model_free,
    .loglikes = ocl_loglikes,
    .acc_zero = ocl_acc_zero,
    .data_upload = ocl_data_upload,
    .data_free = ocl_data_free,
    .accumulate = ocl_accumulate,
    .acc_fetch = ocl_acc_fetch,
};
static const gh_ops_pairs ocl_pairs = {.data_set_pairs = ocl_data_set_pairs};
static const gh_ops_resident ocl_resident = {
    .data_bytes = ocl_data_bytes,
    .data_evict = ocl_data_evict,
    .data_reload = ocl_data_reload,
    .loglikes_data = ocl_loglikes_data,
};
static const gh_ops_mstep ocl_mstep = {
    .mstep = gh_ocl_mstep, /* opencl-mstep.c */
    .model_fetch = gh_ocl_model_fetch,
};
/* HMM kernels: opencl-hmm.c */
static const gh_ops_hmm ocl_hmm = {
    .hmm_upload = gh_ocl_hmm_upload,
    .hmm_free = gh_ocl_hmm_free,
    .hmm_forward = gh_ocl_hmm_forward,
    .hmm_viterbi = gh_ocl_hmm_viterbi,
    .hmm_fb = gh_ocl_hmm_fb,
};
static const gh_ops_hmm_dev ocl_hmm_dev = {
    .hmm_fb_pairs = gh_ocl_hmm_fb_pairs,
    .hmm_estep_pairs = gh_ocl_hmm_estep_pairs,
};
static const gh_ops_dist ocl_dist = {
    .acc_raw_size = ocl_acc_raw_size,
    .acc_raw_get = ocl_acc_raw_get,
    .acc_raw_set = ocl_acc_raw_set,
    .acc_commit = ocl_acc_commit, /* dd.cl */
    .acc_master_get = ocl_acc_master_get,
};
static const gh_ops_gselect ocl_gselect = {.acc_gselect = gh_ocl_acc_gselect}; /* opencl-gselect.c */
/* k-means distances: opencl-kmeans.c */
static const gh_ops_kmeans ocl_kmeans = {
    .kmeans_upload = gh_ocl_kmeans_upload,
    .kmeans_nearest = gh_ocl_kmeans_nearest,
    .kmeans_fetch = gh_ocl_kmeans_fetch,
    .kmeans_free = gh_ocl_kmeans_free,
};
static const gh_ops_align ocl_align = {.align_batch = gh_ocl_align_batch}; /* opencl-align.c */
/* Without a device hash, HMM graph reweighting, shrinkage statistics, host
 * buffers, pipelined loglikes, NCCL or subset scoring: the registry's
 * wrappers run the CPU reference or the host path for those. */
static const gh_backend_ops ocl_ops = {
    .name = "opencl",
    .gmm = &ocl_gmm,
    .pairs = &ocl_pairs,
    .resident = &ocl_resident,
    .mstep = &ocl_mstep,
    .hmm = &ocl_hmm,
    .hmm_dev = &ocl_hmm_dev,
    .dist = &ocl_dist,
    .gselect = &ocl_gselect,
    .kmeans = &ocl_kmeans,
    .align = &ocl_align,
};

/* Without cl_khr_fp64: loglikes on the device, HMM ops on the CPU reference
 * (gh_backend_hmm_ops falls back where the sub-table is absent), E-step ops
 * die with a clear message (need_fp64). */
static const gh_backend_ops ocl_ops_nofp64 = {
    .name = "opencl",
    .gmm = &ocl_gmm,
};

/* Picks (platform, device) from spec: "P:D" (indices as clinfo -l lists
 * them), or NULL/"" = GH_OPENCL_DEVICE if set, else the first GPU of any
 * platform, else the first device of any type.  gpu_only: only GPUs (for
 * --device=auto).  Returns 0, or -1 with gh_set_error. */
static int pick_device(const char *spec, int gpu_only, cl_platform_id *pl_out, cl_device_id *dev_out) {
  cl_uint np, nd;
  cl_platform_id *pl = platforms(&np);
  if (!np) { gh_set_error("no OpenCL platform found (no ICD registered in /etc/OpenCL/vendors, or libOpenCL cannot load it)"); return -1; }
  if ((!spec || !*spec) && !gpu_only) spec = gh_env_str("GH_OPENCL_DEVICE");
  int rc = -1;
  if (spec && *spec) {
    char *end;
    long P = strtol(spec, &end, 10), D = -1;
    if (end != spec && *end == ':') D = strtol(end + 1, &end, 10);
    if (D < 0 || *end) {
      gh_set_error("bad OpenCL device '%s' (expected P:D, platform and device index)", spec);
    } else if (P >= (long)np) {
      gh_set_error("OpenCL platform %ld does not exist (%u platforms)", P, np);
    } else {
      cl_device_id *dv = devices(pl[P], CL_DEVICE_TYPE_ALL, &nd);
      if (D >= (long)nd) gh_set_error("OpenCL platform %ld has no device %ld (%u devices)", P, D, nd);
      else { *pl_out = pl[P]; *dev_out = dv[D]; rc = 0; }
      free(dv);
    }
    free(pl);
    return rc;
  }
  for (int pass = 0; pass < (gpu_only ? 1 : 2) && rc; ++pass)
    for (cl_uint i = 0; i < np && rc; ++i) {
      cl_device_id *dv = devices(pl[i], pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, &nd);
      if (nd) { *pl_out = pl[i]; *dev_out = dv[0]; rc = 0; }
      free(dv);
    }
  if (rc) gh_set_error(gpu_only ? "no OpenCL GPU device" : "no OpenCL device on any platform");
  free(pl);
  return rc;
}

gh_backend *gh_backend_opencl_new(const char *spec, int gpu_only) {
  ocl_ctx *c = gh_calloc(1, sizeof *c);
  if (pick_device(spec, gpu_only, &c->platform, &c->device)) { free(c); return NULL; }
  cl_int err;
  c->ctx = clCreateContext(NULL, 1, &c->device, NULL, NULL, &err);
  if (err != CL_SUCCESS) { gh_set_error("clCreateContext: %s (%d)", cl_err_name(err), (int)err); free(c); return NULL; }
  c->q = clCreateCommandQueue(c->ctx, c->device, 0, &err);
  if (err != CL_SUCCESS) {
    gh_set_error("clCreateCommandQueue: %s (%d)", cl_err_name(err), (int)err);
    clReleaseContext(c->ctx); free(c); return NULL;
  }
  char ext[8192], pname[128], dname[128];
  str_info(c->device, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
  str_info(c->device, CL_DEVICE_NAME, dname, sizeof dname);
  pname[0] = 0;
  clGetPlatformInfo(c->platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
  pname[sizeof pname - 1] = 0;
  c->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
  clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg, NULL);
  clGetDeviceInfo(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof c->max_alloc, &c->max_alloc, NULL);
  if (c->max_wg < 256) {
    gh_set_error("OpenCL device %s allows only %zu work-items per work-group (the kernels need 256)", dname, c->max_wg);
    clReleaseCommandQueue(c->q); clReleaseContext(c->ctx); free(c); return NULL;
  }
  c->prog = build_program(c, "-cl-std=CL1.2");
  c->k_expand = kernel(c, "gh_expand");
  c->k_gemm = kernel(c, "gh_sgemm_nt");
  c->k_gemm128 = kernel(c, "gh_sgemm_nt128");
  /* chunk buffers: a quarter of the largest allocation, at most 1 GiB, at
   * least 16 MiB; GH_OPENCL_CHUNK_MB sets it (tests: small chunks) */
  const int64_t cmb = gh_env_int("GH_OPENCL_CHUNK_MB", 0, 1, 1 << 20);
  int64_t cbytes = cmb ? cmb << 20 : (int64_t)(c->max_alloc / 4);
  if (!cmb) {
    if (cbytes > ((int64_t)1 << 30)) cbytes = (int64_t)1 << 30;
    if (cbytes < ((int64_t)16 << 20)) cbytes = (int64_t)16 << 20;
  }
  c->chunk = cbytes / 4;
  static const char *const tiles[] = {"64", "128", NULL};
  const int tile = gh_env_word("GH_OPENCL_SGEMM", -1, tiles);
  c->sgemm_tile = tile < 0 ? 0 : tile ? 128 : 64;
  c->k_lse_narrow = kernel(c, "gh_lse_narrow");
  c->k_lse_wide = kernel(c, "gh_lse_wide");
  if (c->fp64) {
    c->k_white = kernel(c, "gh_white_ll");
    c->k_post = kernel(c, "gh_estep_post");
    c->k_stats = kernel(c, "gh_estep_stats");
    c->k_reduce = kernel(c, "gh_estep_reduce");
    c->k_expand_pairs = kernel(c, "gh_expand_pairs");
    c->k_softmax = kernel(c, "gh_softmax_rows");
    c->k_stats_tn = kernel(c, "gh_stats_tn");
    c->k_mstep_diag = kernel(c, "gh_mstep_diag");
    c->k_mstep_full = kernel(c, "gh_mstep_full");
    c->k_mstep_occ = kernel(c, "gh_mstep_occ");
    c->k_kmeans = kernel(c, "gh_kmeans_nearest");
    c->k_align = kernel(c, "gh_align_batch");
    c->k_mstep_relfloor = kernel(c, "gh_mstep_relfloor");
    c->k_acc_commit = kernel(c, "gh_acc_commit");
    c->k_fwd_log = kernel(c, "gh_hmm_forward_log");
    c->k_fwd_scaled = kernel(c, "gh_hmm_forward_scaled");
    c->k_viterbi = kernel(c, "gh_hmm_viterbi");
    c->k_fb = kernel(c, "gh_hmm_fb");
    c->k_fb_pairs = kernel(c, "gh_fb_pairs");
    c->k_vit_pairs = kernel(c, "gh_vit_pairs");
    c->k_pairs_count = kernel(c, "gh_pairs_count");
    c->k_pairs_scan = kernel(c, "gh_pairs_scan");
    c->k_pairs_scatter = kernel(c, "gh_pairs_scatter");
    c->k_tp_chunk = kernel(c, "gh_tp_chunk");
    c->k_tp_combine = kernel(c, "gh_tp_combine");
    c->k_tp_vchain = kernel(c, "gh_tp_vchain");
    c->k_tp_vpass = kernel(c, "gh_tp_vpass");
    c->k_tp_vtrace = kernel(c, "gh_tp_vtrace");
    c->k_tp_vpath = kernel(c, "gh_tp_vpath");
    c->k_tp_bchain = kernel(c, "gh_tp_bchain");
    c->k_tp_fbpass = kernel(c, "gh_tp_fbpass");
    c->k_tp_fbsum = kernel(c, "gh_tp_fbsum");
  }
#ifdef GH_HAVE_CLBLAST
  static const char *const gemms[] = {"clblast", "own", NULL};
  c->use_clblast = gh_env_word("GH_OPENCL_GEMM", 0, gemms) == 0;
#endif
  gh_backend *b = gh_calloc(1, sizeof *b);
  b->ops = c->fp64 ? &ocl_ops : &ocl_ops_nofp64;
  b->ctx = c;
  snprintf(b->device_name, sizeof b->device_name, "opencl (%.40s: %.60s)", pname, dname);
  gh_vlog(1, "opencl: %s, fp64 %s, GEMM %s", b->device_name, c->fp64 ? "yes" : "no (E-step refused, HMM on the CPU)",
          c->use_clblast ? "CLBlast" : "built-in gh_sgemm_nt");
  return b;
}
