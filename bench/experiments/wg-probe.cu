/* wg-probe.cu -- checks the warpgroup kernels (kernels/cuda/cuda-wg.cu) on
 * small random operands against a double reference, printing the first
 * mismatches (for layout faults).  Build on an H100 / H200 after `make`:
 *   nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -Ilib -Ikernels -Ikernels/cuda \
 *     bench/experiments/wg-probe.cu build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a -o build/wg-probe -lz -lgomp
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "cuda-wg.h"

static double urand(void) { return (rand() + 0.5) / ((double)RAND_MAX + 1.0); }
static float *up(const float *h, size_t n) { float *d; cudaMalloc(&d, n * 4 + 16); cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice); return d; }

int main(int argc, char **argv) {
  const int Ep = argc > 1 ? atoi(argv[1]) : 16, G = argc > 2 ? atoi(argv[2]) : 128, n = argc > 3 ? atoi(argv[3]) : 64;
  if (gw_mode() == 0) { printf("wg-probe: warpgroup kernels not available\n"); return 0; }
  float *X = (float *)calloc((size_t)n * Ep, 4), *A = (float *)calloc((size_t)G * Ep, 4);
  for (int r = 0; r < n; ++r) for (int e = 0; e < Ep; ++e) X[r * Ep + e] = e == 0 ? 1.f : (float)(urand() * 2 - 1);
  for (int g = 0; g < G; ++g) for (int e = 0; e < Ep; ++e) A[g * Ep + e] = (float)(urand() * 2 - 1);
  /* reference L, lse, stats */
  double *L = (double *)malloc(sizeof(double) * n * G), *lse = (double *)malloc(sizeof(double) * n);
  for (int r = 0; r < n; ++r) {
    double mx = -1e300;
    for (int g = 0; g < G; ++g) { double v = 0; for (int e = 0; e < Ep; ++e) v += (double)X[r * Ep + e] * A[g * Ep + e]; L[r * G + g] = v; if (v > mx) mx = v; }
    double s = 0; for (int g = 0; g < G; ++g) s += exp(L[r * G + g] - mx);
    lse[r] = mx + log(s);
  }
  float *AB = (float *)malloc((size_t)G * Ep * 4), *AS = (float *)malloc((size_t)G * Ep * 4);
  for (size_t i = 0; i < (size_t)G * Ep; ++i) {
    uint32_t u; memcpy(&u, &A[i], 4); u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&AB[i], &u, 4); AS[i] = A[i] - AB[i];
  }
  float *dX = up(X, (size_t)n * Ep), *dAB = up(AB, (size_t)G * Ep), *dAS = up(AS, (size_t)G * Ep);
  float *dout; cudaMalloc(&dout, n * 4);
  const int Gp = (G + 7) & ~7;
  float *dll; cudaMalloc(&dll, (size_t)n * Gp * 4);
  gw_lse(dX, Ep, n, dAB, dAS, NULL, 1, G, dout, 1, NULL, NULL, dll, Gp);
  float *out = (float *)malloc(n * 4), *ll = (float *)malloc((size_t)n * Gp * 4);
  cudaMemcpy(out, dout, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(ll, dll, (size_t)n * Gp * 4, cudaMemcpyDeviceToHost);
  double ell = 0;
  for (int r = 0; r < n; ++r)
    for (int g = 0; g < Gp; ++g) {
      double mag = 0; /* the error of fp32 accumulation scales with sum |x a| */
      if (g < G) for (int e = 0; e < Ep; ++e) mag += fabs((double)X[r * Ep + e] * A[g * Ep + e]);
      const double ref = g < G ? L[r * G + g] : 0.0, e = fabs(ll[(size_t)r * Gp + g] - ref) / (1 + mag);
      if (e > ell) ell = e;
    }
  printf("wg-probe Ep=%d G=%d n=%d: log-likelihoods max err %.3g %s\n", Ep, G, n, ell, ell < 1e-5 ? "OK" : "FAIL");
  double el = 0; int shown = 0;
  for (int r = 0; r < n; ++r) {
    const double e = fabs(out[r] - lse[r]) / (1 + fabs(lse[r]));
    if (e > el) el = e;
    if (e > 1e-5 && shown++ < 8) printf("lse row %d: %.6f ref %.6f\n", r, out[r], lse[r]);
  }
  printf("wg-probe Ep=%d G=%d n=%d: lse max err %.3g %s\n", Ep, G, n, el, el < 1e-5 ? "OK" : "FAIL");
  /* stats with the reference lse (float) */
  float *fl = (float *)malloc(n * 4); for (int r = 0; r < n; ++r) fl[r] = (float)lse[r];
  float *dl = up(fl, n);
  const int rows = ((n + 31) / 32) * 32;
  float *dS; cudaMalloc(&dS, (size_t)G * Ep * 4);
  gw_post_stats(dX, Ep, n, dll, Gp, G, dl, NULL, rows, 1, dS);
  cudaError_t ce = cudaDeviceSynchronize();
  if (ce != cudaSuccess) { printf("CUDA error %s\n", cudaGetErrorString(ce)); return 1; }
  float *S = (float *)malloc((size_t)G * Ep * 4);
  cudaMemcpy(S, dS, (size_t)G * Ep * 4, cudaMemcpyDeviceToHost);
  double es = 0; shown = 0;
  for (int g = 0; g < G; ++g)
    for (int e = 0; e < Ep; ++e) {
      double ref = 0, mag = 0;
      for (int r = 0; r < n; ++r) { const double R = exp(L[r * G + g] - fl[r]); ref += R * X[r * Ep + e]; mag += fabs(R * X[r * Ep + e]); }
      const double er = fabs(S[g * Ep + e] - ref) / (1e-3 + mag);
      if (er > es) es = er;
      if (er > 1e-4 && shown++ < 12) printf("S[%d][%d] = %.6g ref %.6g\n", g, e, S[g * Ep + e], ref);
    }
  printf("wg-probe Ep=%d G=%d n=%d: stats max err %.3g %s\n", Ep, G, n, es, es < 1e-4 ? "OK" : "FAIL");
  return 0;
}
