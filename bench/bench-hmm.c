/* bench-hmm -- throughput of the HMM forward (log domain and scaled) and
 * Viterbi kernels on a dense ergodic HMM, at the PyTorch peer's shapes
 * (bench/peers/hmm_peer.py: S states x M sequences x T frames).
 *
 * Graph: S states, all S^2 arcs, each row of A a softmax of standard normal
 * values (as the peer), uniform initial probabilities, final log-prob 0,
 * state j emits pdf j (S pdfs).  Loglikes: standard normal values (the
 * peer's logB), M sequences of T frames each (--ragged=1: lengths T, T-1,
 * ... down to T/2, cyclically).  One warm-up call, then --iters timed calls;
 * time = median of the HMM kernel time (gh_cuda_hmm_kernel_seconds: device
 * time by events, excluding the loglike upload and result download, as the
 * peer's data is already on the GPU).  Prints frames/s (M T / time) and
 * GFLOP/s with the peer's count 2 S^2 M T per forward (a max-plus product
 * counted the same for Viterbi).
 *
 * Max error vs the CPU reference (kernels/cpu/cpu-hmm.c, double) on the
 * first --check sequences: forward |log P - ref| / max(1, |ref|) (and
 * |log P - ref| / T, nats per frame, with that sequence's log P) against the
 * reference's scaled forward (double; the log-domain reference costs one
 * exp per arc), Viterbi the same on the score plus the number of path
 * states that differ.
 *
 * $GH_CUDA_HMM=sparse forces the per-utterance sparse kernels (variant
 * printed as "sparse"; else "auto", the dense path at these shapes).
 * --precision sets the backend's precision (the scaled forward's products
 * on the dense path: auto, fp32, tf32x3, tf32); --ops picks the operations
 * (any of log, scaled, viterbi, fb, comma-separated; fb = forward-backward
 * with gamma and the stats, not in the default list, checked on log P).
 *
 * Usage: bench-hmm [--device=cuda] [--states=512] [--seqs=512] [--frames=100]
 *        [--iters=5] [--check=4] [--ragged=0] [--precision=auto]
 *        [--ops=log,scaled,viterbi,fb]
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "bench-args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GH_HAVE_CUDA
double gh_cuda_hmm_kernel_seconds(void); /* kernels/cuda/cuda-hmm.cu */
#else
static double gh_cuda_hmm_kernel_seconds(void) { return 0.0; }
#endif

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
/* Uniform in (0, 1) (xorshift64, fixed seed). */
static double urand(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return ((rs >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
/* Standard normal (Box-Muller). */
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *device = sarg(argc, argv, "--device", "cuda");
  const int S = (int)arg(argc, argv, "--states", 512), M = (int)arg(argc, argv, "--seqs", 512);
  const int T = (int)arg(argc, argv, "--frames", 100), iters = (int)arg(argc, argv, "--iters", 5);
  const int check = (int)arg(argc, argv, "--check", 4), ragged = (int)arg(argc, argv, "--ragged", 0);
  const char *env = getenv("GH_CUDA_HMM");
  const char *variant = env && !strcmp(env, "sparse") ? "sparse" : "auto";
  const char *precision = sarg(argc, argv, "--precision", "auto"), *ops = sarg(argc, argv, "--ops", "log,scaled,viterbi");
  int prec = 0;
  if (gh_precision_parse(precision, &prec)) gh_die("bad --precision '%s'", precision);
  if (S < 1 || M < 1 || T < 1 || iters < 1) gh_die("bad shape");
  /* graph */
  int32_t *pdf = gh_malloc(S * sizeof(int32_t)), *in_off = gh_malloc((S + 1) * sizeof(int32_t));
  float *init = gh_malloc(S * sizeof(float)), *fin = gh_malloc(S * sizeof(float));
  const int64_t A = (int64_t)S * S;
  int32_t *src = gh_malloc(A * sizeof(int32_t)), *dst = gh_malloc(A * sizeof(int32_t));
  float *lp = gh_malloc(A * sizeof(float));
  double *row = gh_malloc(S * sizeof(double));
  for (int i = 0; i < S; ++i) {
    double z = 0;
    for (int j = 0; j < S; ++j) z += row[j] = exp(nrand());
    for (int j = 0; j < S; ++j) { /* arc i -> j stored at j * S + i (CSR by destination) */
      src[(int64_t)j * S + i] = i; dst[(int64_t)j * S + i] = j; lp[(int64_t)j * S + i] = (float)log(row[j] / z);
    }
  }
  for (int j = 0; j < S; ++j) { pdf[j] = j; init[j] = (float)-log((double)S); fin[j] = 0.f; in_off[j] = j * S; }
  in_off[S] = S * S;
  gh_hmm_graph g = {S, (int32_t)A, S, pdf, init, fin, in_off, src, dst, lp};
  const gh_hmm_graph *gp = &g;
  int64_t *off = gh_malloc((M + 1) * sizeof(int64_t));
  off[0] = 0;
  for (int u = 0; u < M; ++u) off[u + 1] = off[u] + (ragged ? T - u % (T / 2 + 1) : T);
  const int64_t F = off[M];
  float *ll = gh_malloc(F * S * sizeof(float));
  for (int64_t e = 0; e < F * S; ++e) ll[e] = (float)nrand();
  gh_hmm_batch bt = {M, S, ll, off, NULL};
  gh_backend *b = gh_backend_create(device);
  b->precision = prec;
  const gh_ops_hmm *o = gh_backend_hmm_ops(b);
  gh_dev_hmm *d = o->hmm_upload(b, &gp, 1);
  /* reference on the first `check` sequences */
  const int K = check < M ? check : M;
  gh_hmm_batch bk = {K, S, ll, off, NULL};
  const gh_ops_hmm *ro = &gh_cpu_ref_hmm;
  gh_dev_hmm *dr = ro->hmm_upload(NULL, &gp, 1);
  double *Lref = gh_malloc((K + 1) * sizeof(double)), *Vref = gh_malloc((K + 1) * sizeof(double));
  int32_t *pref = gh_malloc((off[K] + 1) * sizeof(int32_t));
  if (K > 0) {
    ro->hmm_forward(NULL, dr, &bk, GH_HMM_SCALED, Lref, NULL);
    ro->hmm_viterbi(NULL, dr, &bk, pref, Vref);
  }
  ro->hmm_free(NULL, dr);
  double *L = gh_malloc(M * sizeof(double)), *ts = gh_malloc(iters * sizeof(double)), *tw = gh_malloc(iters * sizeof(double));
  int32_t *path = gh_malloc((F + 1) * sizeof(int32_t));
  const char *names[4] = {"forward-log", "forward-scaled", "viterbi", "fb"}, *opn[4] = {"log", "scaled", "viterbi", "fb"};
  float *gamma = strstr(ops, "fb") ? gh_malloc(F * S * sizeof(float)) : NULL;
  double *stats = strstr(ops, "fb") ? gh_malloc(gh_hmm_graph_stats_size(gp) * sizeof(double)) : NULL;
  for (int op = 0; op < 4; ++op) {
    if (!strstr(ops, opn[op])) continue;
    for (int it = -1; it < iters; ++it) {
      double k0 = gh_cuda_hmm_kernel_seconds(), w0 = now();
      if (op < 2) o->hmm_forward(b, d, &bt, op == 1 ? GH_HMM_SCALED : 0, L, NULL);
      else if (op == 2) o->hmm_viterbi(b, d, &bt, path, L);
      else {
        memset(stats, 0, gh_hmm_graph_stats_size(gp) * sizeof(double));
        o->hmm_fb(b, d, &bt, L, gamma, stats);
      }
      if (it >= 0) { ts[it] = gh_cuda_hmm_kernel_seconds() - k0; tw[it] = now() - w0; }
    }
    qsort(ts, iters, sizeof(double), cmpd);
    qsort(tw, iters, sizeof(double), cmpd);
    const double t = ts[iters / 2] > 0 ? ts[iters / 2] : tw[iters / 2], w = tw[iters / 2];
    double err = 0, aerr = 0, lref = 0;
    int64_t pdiff = 0;
    for (int u = 0; u < K; ++u) {
      const double ref = op == 2 ? Vref[u] : Lref[u];
      const double e = fabs(L[u] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
      const double ea = fabs(L[u] - ref) / (double)(off[u + 1] - off[u]);
      if (!(e <= err)) err = e;
      if (!(ea <= aerr)) { aerr = ea; lref = ref; }
      if (op == 2)
        for (int64_t f = off[u]; f < off[u + 1]; ++f) pdiff += path[f] != pref[f];
    }
    printf("hmm %s S=%d M=%d T=%d %s precision=%s variant=%s: kernel %.3f ms %.4g frames/s %.1f GFLOP/s; end to end %.3f ms; "
           "max rel err %.3g (%d seqs vs CPU double)",
           names[op], S, M, T, b->ops->name, op == 1 ? precision : op == 3 ? "default" : "fp64", variant, t * 1e3, F / t, 2.0 * S * S * (double)F / t / 1e9, w * 1e3,
           err, K);
    if (op == 2) printf("; %lld path states differ", (long long)pdiff);
    printf("; max abs err %.3g nats per frame (log P %.6g)\n", aerr, lref);
    fflush(stdout);
  }
  o->hmm_free(b, d);
  gh_backend_free(b);
  free(pdf); free(in_off); free(init); free(fin); free(src); free(dst); free(lp); free(row); free(off); free(ll);
  free(Lref); free(Vref); free(pref); free(L); free(ts); free(tw); free(path); free(gamma); free(stats);
  return 0;
}
