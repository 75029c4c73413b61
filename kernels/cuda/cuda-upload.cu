/* cuda-upload.cu -- model upload of the CUDA backend (backend.h
 * model_upload, model_free).  The likelihood layout of the fused kernels
 * (cuda-loglikes.cu; Vaněk et al. 2012a Sec. IV.C, 2012b): pdfs sorted by
 * (covariance type, number of Gaussians) into 64-pdf blocks, each
 * Gaussian's parameters as float4 records in the kernels' read order,
 * lane-interleaved; pdfs of many Gaussians split into segments laid out
 * like pdfs when that cuts the issued work (gh_cuda_plan_units).  The E-step
 * layout (per pdf, parameters transposed: lanes = Gaussians), the
 * numerical contract's per-pdf choice of form (doc/reliability.md) and the
 * GEMM forms (cuda-gemm.cu).  Layouts: doc/kernels.md.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-ctx.h"

/* qsort order of the layout: diag before full, G descending, then pdf and
 * first Gaussian ascending (deterministic). */
static int unit_cmp(const void *a, const void *b) {
  const Unit *x = (const Unit *)a, *y = (const Unit *)b;
  if (x->type != y->type) return x->type - y->type;
  if (x->G != y->G) return y->G - x->G;
  if (x->p != y->p) return x->p - y->p;
  return x->g0 - y->g0;
}

/* Issued work of a sorted layout in lane-Gaussians per frame: each warp of
 * 32 consecutive entries of one type (blocks of PB start at each type's
 * first entry) runs as long as its first (largest) entry, with all 32 lanes
 * occupied.  Used to decide whether splitting pays. */
static long long layout_cost(const Unit *u, int n) {
  long long cost = 0;
  for (int i = 0; i < n;) {
    int end = i;
    while (end < n && u[end].type == u[i].type) ++end;
    for (int w = i; w < end; w += 32) cost += 32LL * u[w].G;
    i = end;
  }
  return cost;
}

/* Segment size of the split layout for the pdfs of covariance type `type`
 * (0 diag, 1 full) of set s: GH_CUDA_SPLIT_K when set (fixed, 0 = never
 * split; for measurements), else SPLIT_K_FULL = 8 / SPLIT_K_DIAG = 16,
 * halved (down to 4) while the type's pdfs with more Gaussians than that
 * would give fewer than PB segments, so that at least one 64-lane block is
 * full (doc/kernels.md "Pdfs with many Gaussians": 1 x 512 full, D=40,
 * 65536 frames: 3.9 ms with 32 segments of 16, 2.0 ms with 64 of 8). */
#define SPLIT_K_FULL 8
#define SPLIT_K_DIAG 16
int gh_cuda_split_k(const gh_gmm_set *s, int type) {
  const long long k = gh_env_int("GH_CUDA_SPLIT_K", -1, 0, 1 << 30);
  if (k >= 0) return (int)k;
  int K = type ? SPLIT_K_FULL : SPLIT_K_DIAG;
  while (K > 4) {
    long long n = 0;
    for (int p = 0; p < s->num_pdfs; ++p)
      if ((int)s->pdfs[p].type == type && s->pdfs[p].num_gauss > K)
        n += (s->pdfs[p].num_gauss + K - 1) / K;
    if (n == 0 || n >= PB) break;
    K /= 2;
  }
  return K;
}

/* The sorted layout entries of set s (returned, gh_malloc'd, *n of them).
 * K[type] is the segment size of the pdfs of that covariance type (0 diag,
 * 1 full; 0 = never split, see gh_cuda_split_k).
 * Candidate 1: one entry per pdf.  Candidate 2 (when some pdf has more than
 * K of its type Gaussians): every such pdf cut into ceil(G/K) segments of
 * consecutive Gaussians with sizes floor/ceil of G/nseg (<= K), the others
 * whole.  Splitting is exact (weights are folded into the gconsts, so a
 * pdf's log-likelihood is the log-add of its segments') but costs a scratch
 * column per segment and the k_combine pass, so candidate 2 is taken only
 * when it cuts layout_cost by at least a quarter (a global UBM: 32x; 5000
 * pdfs x 256 diag: < 1%, not split).  Outputs for candidate 2: *V scratch
 * columns, *nsplit split pdfs, *split_pdf [nsplit] their ids, *split_off
 * [nsplit + 1] their first scratch columns (gh_malloc'd); for candidate 1
 * all zero / NULL. */
Unit *gh_cuda_plan_units(const gh_gmm_set *s, const int K[2], int *n, int *V, int *nsplit, int **split_pdf,
                         int **split_off) {
  const int P = s->num_pdfs;
  Unit *whole = (Unit *)gh_malloc((P ? P : 1) * sizeof(Unit));
  long long nseg_total = 0;
  int nbig = 0;
  for (int p = 0; p < P; ++p) {
    const int G = s->pdfs[p].num_gauss, k = K[(int)s->pdfs[p].type];
    whole[p] = Unit{(int)s->pdfs[p].type, G, p, 0, p};
    if (k > 0 && G > k) { nseg_total += (G + k - 1) / k; ++nbig; } else nseg_total += 1;
  }
  qsort(whole, P, sizeof(Unit), unit_cmp);
  *n = P; *V = 0; *nsplit = 0; *split_pdf = NULL; *split_off = NULL;
  if (nbig == 0) return whole;
  if (nseg_total > (1LL << 30)) gh_die("model upload: %lld Gaussian segments, too many", nseg_total);
  Unit *seg = (Unit *)gh_malloc(nseg_total * sizeof(Unit));
  int *spdf = (int *)gh_malloc(nbig * sizeof(int)), *soff = (int *)gh_malloc((nbig + 1) * sizeof(int));
  int ns = 0, nj = 0, v = 0;
  for (int p = 0; p < P; ++p) {
    const int G = s->pdfs[p].num_gauss, type = (int)s->pdfs[p].type, k = K[type];
    if (k <= 0 || G <= k) { seg[ns++] = Unit{type, G, p, 0, p}; continue; }
    const int nseg = (G + k - 1) / k;
    spdf[nj] = p; soff[nj++] = v;
    for (int q = 0; q < nseg; ++q) {
      const int g0 = (int)((long long)q * G / nseg), g1 = (int)((long long)(q + 1) * G / nseg);
      seg[ns++] = Unit{type, g1 - g0, p, g0, -(v + q) - 1};
    }
    v += nseg;
  }
  soff[nj] = v;
  qsort(seg, ns, sizeof(Unit), unit_cmp);
  if (4 * layout_cost(seg, ns) <= 3 * layout_cost(whole, P)) {
    free(whole);
    *n = ns; *V = v; *nsplit = nj; *split_pdf = spdf; *split_off = soff;
    return seg;
  }
  free(seg); free(spdf); free(soff);
  return whole;
}

/* Upload: builds the likelihood layout (entries -- pdfs, or Gaussian
 * segments of split pdfs, see gh_cuda_plan_units -- sorted by (type, G) into 64-entry
 * blocks, per Gaussian slot a record of float4 in read order,
 * lane-interleaved) and the E-step layout (per pdf, parameters transposed
 * so lanes = Gaussians read consecutive floats; never split).  Dies on a
 * dimension mismatch, D > 768 or a CUDA error. */

gh_dev_model *gh_cuda_model_upload(gh_backend *b, const gh_gmm_set *s) {
  const double t_up = gh_seconds();
  cuda_model *m = (cuda_model *)gh_calloc(1, sizeof *m);
  const int D = s->dim, P = s->num_pdfs;
  m->D = D; m->P = P; m->Dp = round4(D); m->nb = m->Dp / 4;
  const int nb = m->nb;
  if (D <= 0) gh_die("model upload: dimension %d", D);
  if (16 * nb * 16 > 48 * 1024) gh_die("model upload: dimension %d too large for the CUDA backend (max 768)", D);
  for (int p = 0; p < P; ++p)
    if (s->pdfs[p].dim != D) gh_die("model upload: pdf %d has dimension %d, the set has %d", p, s->pdfs[p].dim, D);
  /* Numerical contract (doc/reliability.md): per pdf, the estimated error
   * of each form (gemm-forms.h gh_gemm_set_errors) at the model's centre
   * c0.  The fused kernels evaluate the uncentred fp32 form gconst + x.b -
   * 0.5 x'Px: a pdf whose estimate there is above the contract's budget
   * (GH_GEMM_MAX_ROW_ERROR, 5e-4 nats) never takes them (nofused: the GEMM
   * forms, whatever GH_CUDA_SCORE / GH_CUDA_ESTEP say).  The GEMM forms are
   * centred, their a0 = norm - 0.5 (c - mu)'P(c - mu) from the exact form in
   * double (gg_model_new's form; never the float gconst); a pdf
   * whose centred fp32 estimate is above the budget is evaluated in double
   * (exact: DGEMM, at GH_PREC_AUTO; an explicit --precision is obeyed), as
   * the cpu backend does.  The whole model goes to the host cpu backend
   * when even the double form could err (Gaussians ~1e8 of their own sigmas
   * from the centre: the host's reference form), or when a nofused pdf
   * would have to take the fused kernels (no cuBLAS; mixed diagonal and
   * full pdfs, which the GEMM scoring does not serve). */
  const int have_gemm = gg_available();
  double *centre0 = (double *)gh_calloc(D, sizeof(double));
  gh_gemm_model_centre(s, centre0);
  long long gtot = 0;
  int homog = 1;
  for (int p = 0; p < P; ++p) {
    gtot += s->pdfs[p].num_gauss;
    if (s->pdfs[p].type != s->pdfs[0].type) homog = 0;
  }
  double *e_unc = (double *)gh_malloc(sizeof(double) * (P ? P : 1) * 3), *e_cen = e_unc + P, *e_dbl = e_cen + P;
  double *form = (double *)gh_malloc(sizeof(double) * (gtot ? gtot : 1) * (D + 1));
  gh_gemm_set_errors(s, centre0, e_unc, e_cen, e_dbl, form);
  const double t_err = gh_seconds() - t_up;
  const double budget = GH_GEMM_MAX_ROW_ERROR;
  unsigned char *exact = (unsigned char *)gh_calloc(P ? P : 1, 1);
  m->nofused = (unsigned char *)gh_calloc(P ? P : 1, 1);
  double worst_unc = 0, worst_cen = 0, worst_dbl = 0;
  int nexact = 0;
  for (int p = 0; p < P; ++p) {
    m->nofused[p] = !(e_unc[p] <= budget);
    exact[p] = !(e_cen[p] <= budget);
    m->any_nofused |= m->nofused[p];
    nexact += exact[p];
    if (!(e_unc[p] <= worst_unc)) worst_unc = e_unc[p];
    if (!(e_cen[p] <= worst_cen)) worst_cen = e_cen[p];
    if (!(e_dbl[p] <= worst_dbl)) worst_dbl = e_dbl[p];
  }
  if (!(worst_dbl <= budget) || (m->any_nofused && (!have_gemm || !homog))) {
    cuda_ctx *c = (cuda_ctx *)b->ctx;
    if (!(worst_dbl <= budget))
      gh_log("cuda: even the double GEMM form of the model could err by %.3g nats (Gaussians far from the data's centre "
             "in their own standard deviations); it is evaluated on the host in its reference form instead "
             "(doc/reliability.md)", worst_dbl);
    else
      gh_log("cuda: the model's fp32 form could err by %.3g nats (features with a large offset, extreme variances or "
             "Gaussians far apart in their own standard deviations) and %s; it is evaluated on the host in double "
             "instead (doc/reliability.md)", worst_unc,
             have_gemm ? "its pdfs mix diagonal and full covariances (no GEMM scoring)" : "cuBLAS is not available");
    if (!c->host) c->host = gh_backend_blas_new();
    m->host_m = c->host->ops->gmm->model_upload(c->host, s);
    m->orig = (gh_gmm_set *)gh_calloc(1, sizeof *m->orig);
    gh_gmm_set_copy(m->orig, s);
    free(centre0); free(form); free(exact); free(e_unc);
    return (gh_dev_model *)m;
  }
  if (nexact && b->precision == GH_PREC_AUTO)
    gh_vlog(1, "cuda: %d of %d pdfs evaluated in double (their fp32 GEMM form could err by up to %.3g nats)", nexact,
            P, worst_cen);

  /* Layout entries: whole pdfs, or Gaussian segments of the pdfs with more
   * than K Gaussians when gh_cuda_plan_units decides to split (doc/kernels.md
   * "Pdfs with many Gaussians"); sorted diag before full, then by G
   * descending, then by (pdf, first Gaussian). */
  int nunits = 0;
  int *split_pdf = NULL, *split_off = NULL;
  const int K[2] = {gh_cuda_split_k(s, 0), gh_cuda_split_k(s, 1)};
  Unit *units = gh_cuda_plan_units(s, K, &nunits, &m->V, &m->nsplit, &split_pdf, &split_off);
  int *perm = (int *)gh_malloc((nunits ? nunits : 1) * sizeof(int));
  int *ng = (int *)gh_malloc((nunits ? nunits : 1) * sizeof(int));
  for (int i = 0; i < nunits; ++i) { perm[i] = units[i].dst; ng[i] = units[i].G; }

  /* Blocks: runs of <= PB sorted entries of one type. */
  int nblk = 0;
  BlockDesc *blk = (BlockDesc *)gh_malloc((nunits / PB + 3) * sizeof(BlockDesc));
  long long poff = 0, goff = 0;
  const long long Rdiag = 2LL * nb, Rfull = nb + 4LL * nb * (nb + 1) / 2;
  for (int type = 0; type < 2; ++type) {
    int start = 0;
    while (start < nunits && units[start].type != type) ++start;
    int end = start;
    while (end < nunits && units[end].type == type) ++end;
    int nblocks_type = 0;
    for (int i = start; i < end; i += PB) {
      BlockDesc d;
      d.first = i;
      d.count = end - i < PB ? end - i : PB;
      d.poff = poff;
      d.goff = goff;
      int gmax = ng[i];  /* sorted descending */
      poff += (long long)gmax * (type ? Rfull : Rdiag) * PB;
      goff += (long long)gmax * PB;
      blk[nblk++] = d;
      ++nblocks_type;
    }
    if (type == 0) m->ndiag_blocks = nblocks_type; else m->nfull_blocks = nblocks_type;
    if (type == 0 && nblocks_type == 1 && end - start <= 32)
      m->narrow_w = end - start <= 8 ? 8 : end - start <= 16 ? 16 : 32;
  }
  float *hp = (float *)gh_calloc(poff * 4 + 4, sizeof(float));
  float *hg = (float *)gh_calloc(goff + 1, sizeof(float));
  m->hLanePoff = (long long *)gh_malloc(sizeof(long long) * 2 * (P ? P : 1));
  m->hLaneGoff = m->hLanePoff + (P ? P : 1);
  for (int p = 0; p < P; ++p) m->hLanePoff[p] = m->hLaneGoff[p] = -1;
  for (int bi = 0; bi < nblk; ++bi) {
    const BlockDesc *d = &blk[bi];
    for (int lane = 0; lane < d->count; ++lane) {
      const Unit *un = &units[d->first + lane];
      if (un->dst >= 0) { /* a whole pdf */
        m->hLanePoff[un->dst] = d->poff + lane;
        m->hLaneGoff[un->dst] = d->goff + lane;
      }
      const gh_gmm *gm = &s->pdfs[un->p];
      const int full = gm->type == GH_COV_FULL;
      const long long R = full ? Rfull : Rdiag;
      for (int g = 0; g < un->G; ++g) {
        const int gg = un->g0 + g; /* Gaussian of the pdf in slot g of this entry */
        hg[d->goff + (long long)g * PB + lane] = gm->gconsts[gg];
        const float *bv = gm->means_invvars + (size_t)gg * D;
        /* float4 number r of this Gaussian's record -> hp index */
#define SLOT(r, comp) hp[((d->poff + ((long long)g * R + (r)) * PB + lane) * 4) + (comp)]
        if (!full) {
          const float *iv = gm->inv_vars + (size_t)gg * D;
          for (int i = 0; i < D; ++i) {
            SLOT(2 * (i / 4), i % 4) = bv[i];
            SLOT(2 * (i / 4) + 1, i % 4) = -0.5f * iv[i];
          }
        } else {
          const float *Pm = gm->inv_vars + (size_t)gg * gh_packed_size(D);
          long long r = 0;
          for (int I = 0; I < nb; ++I) {
            for (int c = 0; c < 4; ++c)
              if (4 * I + c < D) SLOT(r, c) = bv[4 * I + c];
            ++r;
            for (int J = 0; J <= I; ++J) {
              for (int rr = 0; rr < 4; ++rr)
                for (int cc = 0; cc < 4; ++cc) {
                  int i = 4 * I + rr, j = 4 * J + cc;
                  if (i < D && j < D && j <= i)
                    SLOT(r + rr, cc) = i == j ? -0.5f * Pm[gh_packed_index(i, i)] : -Pm[gh_packed_index(i, j)];
                }
              r += 4;
            }
          }
        }
#undef SLOT
      }
    }
  }
  m->dBlocks = (decltype(m->dBlocks))gh_cuda_pool_alloc((nblk ? nblk : 1) * sizeof(BlockDesc));
  CK(cudaMemcpy(m->dBlocks, blk, nblk * sizeof(BlockDesc), cudaMemcpyHostToDevice));
  m->dPerm = (decltype(m->dPerm))gh_cuda_pool_alloc((nunits ? nunits : 1) * sizeof(int));
  CK(cudaMemcpy(m->dPerm, perm, nunits * sizeof(int), cudaMemcpyHostToDevice));
  m->dNg = (decltype(m->dNg))gh_cuda_pool_alloc((nunits ? nunits : 1) * sizeof(int));
  CK(cudaMemcpy(m->dNg, ng, nunits * sizeof(int), cudaMemcpyHostToDevice));
  m->dParams = (decltype(m->dParams))gh_cuda_pool_alloc((poff + 1) * sizeof(float4));
  CK(cudaMemcpy(m->dParams, hp, poff * sizeof(float4), cudaMemcpyHostToDevice));
  m->dGconst = (decltype(m->dGconst))gh_cuda_pool_alloc((goff + 1) * sizeof(float));
  CK(cudaMemcpy(m->dGconst, hg, goff * sizeof(float), cudaMemcpyHostToDevice));
  if (m->nsplit) {
    m->dSplitPdf = (decltype(m->dSplitPdf))gh_cuda_pool_alloc(m->nsplit * sizeof(int));
    CK(cudaMemcpy(m->dSplitPdf, split_pdf, m->nsplit * sizeof(int), cudaMemcpyHostToDevice));
    m->dSplitOff = (decltype(m->dSplitOff))gh_cuda_pool_alloc((m->nsplit + 1) * sizeof(int));
    CK(cudaMemcpy(m->dSplitOff, split_off, (m->nsplit + 1) * sizeof(int), cudaMemcpyHostToDevice));
  }
  if (gh_env_set("GH_CUDA_SPLIT_VERBOSE"))
    fprintf(stderr, "cuda model upload: %d pdfs -> %d layout entries (%d pdfs split into %d segments; "
            "K diag %d, full %d)\n", P, nunits, m->nsplit, m->V, K[0], K[1]);
  free(hp); free(hg); free(blk); free(perm); free(ng); free(units); free(split_pdf); free(split_off);

  /* E-step layout and accumulators. */
  m->hEpdf = (EPdf *)gh_malloc((P ? P : 1) * sizeof(EPdf));
  long long eoff = 0, accoff = 0;
  m->maxG = 0;
  for (int p = 0; p < P; ++p) {
    const gh_gmm *gm = &s->pdfs[p];
    const long long S = gm->type == GH_COV_FULL ? gh_packed_size(D) : D;
    EPdf e;
    e.eoff = eoff; e.accoff = accoff; e.G = gm->num_gauss; e.full = gm->type == GH_COV_FULL;
    m->hEpdf[p] = e;
    eoff += (1 + D + S) * gm->num_gauss;
    accoff += (1 + D + S) * gm->num_gauss;
    if (gm->num_gauss > m->maxG) m->maxG = gm->num_gauss;
  }
  float *he = (float *)gh_malloc((eoff + 1) * sizeof(float));
  for (int p = 0; p < P; ++p) {
    const gh_gmm *gm = &s->pdfs[p];
    const int G = gm->num_gauss;
    float *ep = he + m->hEpdf[p].eoff;
    for (int g = 0; g < G; ++g) {
      ep[g] = gm->gconsts[g];
      for (int i = 0; i < D; ++i) ep[(size_t)(1 + i) * G + g] = gm->means_invvars[(size_t)g * D + i];
      float *cp = ep + (size_t)(1 + D) * G;
      if (gm->type == GH_COV_FULL) {
        const float *Pm = gm->inv_vars + (size_t)g * gh_packed_size(D);
        for (int i = 0; i < D; ++i)
          for (int j = 0; j <= i; ++j) {
            long long q = gh_packed_index(i, j);
            cp[(size_t)q * G + g] = i == j ? -0.5f * Pm[q] : -Pm[q];
          }
      } else {
        for (int i = 0; i < D; ++i) cp[(size_t)i * G + g] = -0.5f * gm->inv_vars[(size_t)g * D + i];
      }
    }
  }
  m->dEparams = (decltype(m->dEparams))gh_cuda_pool_alloc((eoff + 1) * sizeof(float));
  CK(cudaMemcpy(m->dEparams, he, eoff * sizeof(float), cudaMemcpyHostToDevice));
  free(he);
  m->esize = eoff;
  /* Gaussians in pdf order, for the device M-step (cuda-mstep.cu) */
  m->hGfirst = (long long *)gh_malloc((P + 1) * sizeof(long long));
  m->hGfirst[0] = 0;
  for (int p = 0; p < P; ++p) m->hGfirst[p + 1] = m->hGfirst[p] + s->pdfs[p].num_gauss;
  m->Gt = m->hGfirst[P];
  {
    int *gp = (int *)gh_malloc((m->Gt + 1) * sizeof(int));
    float *w = (float *)gh_malloc((m->Gt + 1) * sizeof(float));
    for (int p = 0; p < P; ++p)
      for (int g = 0; g < s->pdfs[p].num_gauss; ++g) {
        gp[m->hGfirst[p] + g] = p;
        w[m->hGfirst[p] + g] = s->pdfs[p].weights[g];
      }
    m->dGfirst = (decltype(m->dGfirst))gh_cuda_pool_alloc((P + 1) * sizeof(long long));
    CK(cudaMemcpy(m->dGfirst, m->hGfirst, (P + 1) * sizeof(long long), cudaMemcpyHostToDevice));
    m->dGpdf = (decltype(m->dGpdf))gh_cuda_pool_alloc((m->Gt + 1) * sizeof(int));
    CK(cudaMemcpy(m->dGpdf, gp, m->Gt * sizeof(int), cudaMemcpyHostToDevice));
    m->dWeights = (decltype(m->dWeights))gh_cuda_pool_alloc((m->Gt + 1) * sizeof(float));
    CK(cudaMemcpy(m->dWeights, w, m->Gt * sizeof(float), cudaMemcpyHostToDevice));
    free(gp);
    free(w);
  }
  m->dEpdf = (decltype(m->dEpdf))gh_cuda_pool_alloc((P ? P : 1) * sizeof(EPdf));
  CK(cudaMemcpy(m->dEpdf, m->hEpdf, P * sizeof(EPdf), cudaMemcpyHostToDevice));
  m->acc_size = accoff;
  m->dAcc = (decltype(m->dAcc))gh_cuda_pool_alloc((accoff + 1) * sizeof(double));
  CK(cudaMemset(m->dAcc, 0, (accoff + 1) * sizeof(double)));
  m->precision = b->precision;
  const double t_gg = gh_seconds();
  if (have_gemm) {
    m->gg = gg_model_new(s, centre0, form, e_cen);
    if (m->any_nofused || nexact) gh_cuda_white_upload(m, s, exact); /* the batched path's factors (cuda-white.cu) */
    gh_cuda_score_variant((cuda_ctx *)b->ctx, m); /* the cuBLAS handle now when scoring will use it, not
                                             inside the first loglikes call */
  }
  gh_vlog(2, "cuda: model upload %.4f s (error estimates %.4f s, GEMM forms %.4f s)", gh_seconds() - t_up, t_err,
          gh_seconds() - t_gg);
  free(centre0); free(form); free(exact); free(e_unc);
  return (gh_dev_model *)m;
}

void gh_cuda_model_free(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (!m) return;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->gmm->model_free(h, m->host_m); }
  if (m->orig) { gh_gmm_set_free(m->orig); free(m->orig); }
  free(m->nofused);
  /* the device done with the model's buffers before the pool hands them
   * out again (one synchronisation; each cudaFree was one; errors ignored,
   * as cudaFree's) */
  cudaDeviceSynchronize();
  void *pooled[] = {m->dBlocks, m->dPerm, m->dNg, m->dParams, m->dGconst, m->dEpdf, m->dEparams, m->dAcc,
                    m->dSplitPdf, m->dSplitOff, m->dGfirst, m->dGpdf, m->dWeights};
  for (size_t k = 0; k < sizeof pooled / sizeof pooled[0]; ++k) gh_cuda_pool_free(pooled[k]);
  cudaFree(m->dMaster);
  gh_cuda_white_free(m);
  free(m->hGfirst);
  free(m->hLanePoff);
  for (int k = 0; k < m->nviews; ++k) {
    gh_cuda_pool_free(m->views[k].dParams);
    gh_cuda_pool_free(m->views[k].dGconst);
    gh_cuda_pool_free(m->views[k].dMeta);
    free(m->views[k].pdfs);
  }
  free(m->views);
  cuda_mstep_free(m);
  gg_model_free(m->gg);
  free(m->hEpdf);
  free(m);
}
