/* shrink.c (CPU) -- reference kernel of the acc_shrink op (backend.h):
 * shrinkage statistics (lib/gmm/shrink.h) in one plain loop nest, double
 * throughout.  Per pair (x, pdf, w): Gaussian log-likelihoods in double
 * (gh_gmm_loglike_ref, Kaldi's natural form), gamma_g = w exp(ll_g - lse);
 * then with z = x - c_g:
 *   st[0] += gamma^2; s1_i += gamma z_i; s2_ij += gamma z_i z_j (i >= j);
 *   s3_ij += gamma z_i^2 z_j (all i, j); s4_ij += gamma z_i^2 z_j^2 (i >= j).
 * The CUDA kernel (kernels/cuda/shrink.cu) is tested against this. */
#include <math.h>
#include <stdlib.h>

#include "backend.h"
#include "base/gh-base.h"
#include "gmm/shrink.h"

void gh_cpu_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                       const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs) {
  const int32_t D = model->dim;
  const int64_t P = gh_packed_size(D), K = gh_shrink_stats_size(D);
  if (accs->num_pdfs != model->num_pdfs)
    gh_die("shrinkage statistics: accumulators have %d pdfs, the model %d", accs->num_pdfs, model->num_pdfs);
  int32_t maxg = 1;
  for (int32_t p = 0; p < model->num_pdfs; ++p)
    if (model->pdfs[p].num_gauss > maxg) maxg = model->pdfs[p].num_gauss;
  double *ll = gh_malloc(sizeof(double) * maxg), *z = gh_malloc(sizeof(double) * (D > 0 ? D : 1));
  for (int64_t k = 0; k < npairs; ++k) {
    const gh_frame_pdf *pr = &pairs[k];
    if (pr->frame < 0 || pr->frame >= T || pr->pdf < 0 || pr->pdf >= model->num_pdfs)
      gh_die("shrinkage statistics: pair %lld (frame %d, pdf %d) out of range (%d frames, %d pdfs)",
             (long long)k, pr->frame, pr->pdf, T, model->num_pdfs);
    const gh_gmm *gmm = &model->pdfs[pr->pdf];
    gh_gmm_accs *a = &accs->pdfs[pr->pdf];
    if (gmm->type != GH_COV_FULL || !a->shrink || a->num_gauss != gmm->num_gauss || a->dim != D)
      gh_die("shrinkage statistics: pdf %d is not a full-covariance pdf with shrinkage accumulators of its shape",
             pr->pdf);
    const float *x = X + (int64_t)pr->frame * D;
    double lse = gh_gmm_loglike_ref(gmm, x, ll);
    if (!isfinite(lse)) continue;
    for (int32_t g = 0; g < gmm->num_gauss; ++g) {
      double gamma = pr->weight * exp(ll[g] - lse);
      if (gamma == 0.0) continue;
      const double *c = a->shrink_centre + (int64_t)g * D;
      double *st = a->shrink + (int64_t)g * K;
      double *s1 = st + 1, *s2 = s1 + D, *s3 = s2 + P, *s4 = s3 + (int64_t)D * D;
      for (int32_t i = 0; i < D; ++i) z[i] = (double)x[i] - c[i];
      st[0] += gamma * gamma;
      for (int32_t i = 0; i < D; ++i) {
        double gz = gamma * z[i], gzz = gz * z[i];
        s1[i] += gz;
        for (int32_t j = 0; j <= i; ++j) {
          s2[gh_packed_index(i, j)] += gz * z[j];
          s4[gh_packed_index(i, j)] += gzz * z[j] * z[j];
        }
        for (int32_t j = 0; j < D; ++j) s3[(int64_t)i * D + j] += gzz * z[j];
      }
    }
  }
  free(ll);
  free(z);
}
